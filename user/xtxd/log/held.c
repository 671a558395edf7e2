// SPDX-License-Identifier: GPL-2.0-only
/* The held files of removed log segments, and the index the resolver answers from (held.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "durable.h"
#include "log.h"
#include "logfile.h"
#include "clock.h"
#include "held.h"

/* One file's lists. */
struct held_set {
	uint32_t snap;
	uint64_t created_ns;
	uint64_t *held, *valid;
	size_t nheld, nvalid;
};

static struct {
	pthread_mutex_t mu;
	uint64_t keep_ns;
	struct held_set *s;
	size_t n, cap;
} H = { .mu = PTHREAD_MUTEX_INITIALIZER };

void xtxd_held_set_keep(uint64_t keep_ns)
{
	__atomic_store_n(&H.keep_ns, keep_ns, __ATOMIC_RELEASE);
}

bool xtxd_held_wanted(void)
{
	return __atomic_load_n(&H.keep_ns, __ATOMIC_ACQUIRE) != 0;
}

static int held_name_num(const char *name, uint32_t *num)
{
	unsigned int n;
	int end = 0;

	if (sscanf(name, "held-%u.xheld%n", &n, &end) != 1 || (size_t)end != strlen(name))
		return 0;
	*num = n;
	return 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool has(const uint64_t *v, size_t n, uint64_t id)
{
	return n && bsearch(&id, v, n, sizeof(id), cmp_u64) != NULL;
}

static void set_free(struct held_set *s)
{
	free(s->held);
	free(s->valid);
	memset(s, 0, sizeof(*s));
}

/* Under H.mu: takes s over. */
static int index_add(struct held_set *s)
{
	if (H.n == H.cap) {
		size_t cap = H.cap ? H.cap * 2 : 16;
		struct held_set *v = realloc(H.s, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		H.s = v;
		H.cap = cap;
	}
	H.s[H.n++] = *s;
	return 0;
}

static uint64_t *copy_sorted(const uint64_t *v, size_t n)
{
	uint64_t *c = malloc((n ? n : 1) * sizeof(*c));

	if (!c)
		return NULL;
	if (n) {
		memcpy(c, v, n * sizeof(*c));
		qsort(c, n, sizeof(*c), cmp_u64);
	}
	return c;
}

int xtxd_held_add(int dirfd, uint32_t snap, const uint64_t *held, size_t nheld,
		  const uint64_t *valid, size_t nvalid)
{
	struct xtxd_held_hdr h = {};
	struct held_set s = { .snap = snap };
	struct iovec iov[3];
	char name[64];
	int err;

	s.held = copy_sorted(held, nheld);
	s.valid = copy_sorted(valid, nvalid);
	if (!s.held || !s.valid) {
		set_free(&s);
		return -ENOMEM;
	}
	s.nheld = nheld;
	s.nvalid = nvalid;
	s.created_ns = xtx_wall_ns();
	memcpy(h.magic, XTXD_HELD_MAGIC, sizeof(h.magic));
	h.version = XTXD_HELD_VERSION;
	h.snap = snap;
	h.created_ns = s.created_ns;
	h.nheld = nheld;
	h.nvalid = nvalid;
	h.crc = xtx_crc32c(0, &h, offsetof(struct xtxd_held_hdr, crc));
	h.crc = xtx_crc32c(h.crc, s.held, nheld * sizeof(uint64_t));
	h.crc = xtx_crc32c(h.crc, s.valid, nvalid * sizeof(uint64_t));
	iov[0] = (struct iovec){ &h, sizeof(h) };
	iov[1] = (struct iovec){ s.held, nheld * sizeof(uint64_t) };
	iov[2] = (struct iovec){ s.valid, nvalid * sizeof(uint64_t) };
	snprintf(name, sizeof(name), "held-%06u.xheld", snap);
	/* durable, name and all, before the segments it stands for go */
	err = xtx_replace_file(dirfd, name, iov, 3);
	if (err) {
		set_free(&s);
		return err;
	}
	pthread_mutex_lock(&H.mu);
	err = index_add(&s);
	pthread_mutex_unlock(&H.mu);
	if (err)
		set_free(&s);
	return err;
}

/* Reads one file whole; 0, or -EBADMSG for a damaged one, or another negative errno. */
static int read_file(int dirfd, const char *name, struct held_set *s)
{
	struct xtxd_held_hdr h;
	struct stat st;
	uint32_t crc;
	size_t want;
	int fd, err = 0;

	memset(s, 0, sizeof(*s));
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || pread(fd, &h, sizeof(h), 0) != sizeof(h) ||
	    memcmp(h.magic, XTXD_HELD_MAGIC, sizeof(h.magic)) || h.version != XTXD_HELD_VERSION ||
	    h.nheld > (uint64_t)st.st_size / 8 || h.nvalid > (uint64_t)st.st_size / 8 ||
	    (uint64_t)st.st_size != sizeof(h) + (h.nheld + h.nvalid) * 8) {
		err = -EBADMSG;
		goto out;
	}
	s->snap = h.snap;
	s->created_ns = h.created_ns;
	s->nheld = h.nheld;
	s->nvalid = h.nvalid;
	s->held = malloc((s->nheld ? s->nheld : 1) * 8);
	s->valid = malloc((s->nvalid ? s->nvalid : 1) * 8);
	if (!s->held || !s->valid) {
		err = -ENOMEM;
		goto out;
	}
	want = s->nheld * 8;
	if (pread(fd, s->held, want, sizeof(h)) != (ssize_t)want ||
	    pread(fd, s->valid, s->nvalid * 8, (off_t)(sizeof(h) + want)) !=
		    (ssize_t)(s->nvalid * 8)) {
		err = -EIO;
		goto out;
	}
	crc = xtx_crc32c(0, &h, offsetof(struct xtxd_held_hdr, crc));
	crc = xtx_crc32c(crc, s->held, s->nheld * 8);
	crc = xtx_crc32c(crc, s->valid, s->nvalid * 8);
	if (crc != h.crc)
		err = -EBADMSG;
out:
	close(fd);
	if (err)
		set_free(s);
	return err;
}

void xtxd_held_expire(int dirfd)
{
	uint64_t keep = __atomic_load_n(&H.keep_ns, __ATOMIC_ACQUIRE), now = xtx_wall_ns();
	struct dirent *de;
	size_t i, k;
	uint32_t num;
	DIR *d;

	pthread_mutex_lock(&H.mu);
	for (i = k = 0; i < H.n; i++) {
		if (!keep || (int64_t)(now - H.s[i].created_ns) > (int64_t)keep)
			set_free(&H.s[i]);
		else
			H.s[k++] = H.s[i];
	}
	H.n = k;
	pthread_mutex_unlock(&H.mu);
	d = dirfd >= 0 ? xtx_opendir_at(dirfd) : NULL;
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct held_set s;
		bool old;

		if (!held_name_num(de->d_name, &num))
			continue;
		old = true;
		pthread_mutex_lock(&H.mu);
		for (i = 0; i < H.n; i++)
			if (H.s[i].snap == num)
				old = false;	/* still indexed: young enough */
		pthread_mutex_unlock(&H.mu);
		if (!old)
			continue;
		/* not in the index: read the header to know its age (a restart, or none kept) */
		if (keep && !read_file(dirfd, de->d_name, &s)) {
			old = (int64_t)(now - s.created_ns) > (int64_t)keep;
			set_free(&s);
		}
		if (old)
			unlinkat(dirfd, de->d_name, 0);
	}
	closedir(d);
}

int xtxd_held_load(int dirfd)
{
	uint64_t keep = __atomic_load_n(&H.keep_ns, __ATOMIC_ACQUIRE), now = xtx_wall_ns();
	struct dirent *de;
	uint32_t num;
	DIR *d;
	int err = 0;

	xtxd_held_reset();
	if (!keep)
		return 0;
	d = xtx_opendir_at(dirfd);
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		struct held_set s;
		int e;

		if (!held_name_num(de->d_name, &num))
			continue;
		e = read_file(dirfd, de->d_name, &s);
		if (e == -EBADMSG) {
			pr_warn("held: %s is damaged: removed (a peer asking about what it named "
				"gets the answer of a pruned log)\n", de->d_name);
			unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		if (e) {
			err = e;
			break;
		}
		if ((int64_t)(now - s.created_ns) > (int64_t)keep) {
			set_free(&s);
			unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		pthread_mutex_lock(&H.mu);
		err = index_add(&s);
		pthread_mutex_unlock(&H.mu);
		if (err)
			set_free(&s);
	}
	closedir(d);
	return err;
}

static bool lookup(uint64_t txn, bool valid)
{
	bool found = false;
	size_t i;

	pthread_mutex_lock(&H.mu);
	for (i = 0; i < H.n && !found; i++)
		found = valid ? has(H.s[i].valid, H.s[i].nvalid, txn) :
				has(H.s[i].held, H.s[i].nheld, txn);
	pthread_mutex_unlock(&H.mu);
	return found;
}

bool xtxd_held_has(uint64_t txn)
{
	return lookup(txn, false);
}

bool xtxd_held_validated(uint64_t txn)
{
	return lookup(txn, true);
}

size_t xtxd_held_count(void)
{
	size_t i, n = 0;

	pthread_mutex_lock(&H.mu);
	for (i = 0; i < H.n; i++)
		n += H.s[i].nheld + H.s[i].nvalid;
	pthread_mutex_unlock(&H.mu);
	return n;
}

void xtxd_held_reset(void)
{
	size_t i;

	pthread_mutex_lock(&H.mu);
	for (i = 0; i < H.n; i++)
		set_free(&H.s[i]);
	free(H.s);
	H.s = NULL;
	H.n = H.cap = 0;
	pthread_mutex_unlock(&H.mu);
}
