// SPDX-License-Identifier: GPL-2.0-only
/* Writes a snapshot of the KV store and removes the log segments it makes redundant. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include <xtx/maps.h>
#include "ctl_out.h"
#include "store/dump.h"
#include "log.h"
#include "logdrain.h"
#include "logfile.h"
#include "held.h"
#include "snapcarry.h"
#include "snapshot.h"
#include "store/overflow.h"
#include "userlog.h"

/* Every append before the positions reaches the disk before the carried records are sought. */
#define SNAP_FLUSH_TIMEOUT_NS	(30ull * 1000 * 1000 * 1000)

static char snap_dir[PATH_MAX];

static void (*after_snapshot)(void);
static bool (*keep_logs)(void);

/*
 * What the newest snapshot covers: per CPU the first segment it does not
 * (seg_from), and xtxd's own log's.  A covered segment that stays (each
 * log's last, see the removal below) counts as removed for whoever asks.
 */
static struct {
	pthread_mutex_t mu;
	uint32_t ncpu, user_from;
	uint32_t *seg_from;
} cov = { .mu = PTHREAD_MUTEX_INITIALIZER };

bool xtxd_snapshot_covers(uint32_t cpu, uint32_t seg)
{
	bool yes = false;

	pthread_mutex_lock(&cov.mu);
	if (cpu == XTXD_USERLOG_CPU)
		yes = seg < cov.user_from;
	else if (cpu < cov.ncpu)
		yes = seg < cov.seg_from[cpu];
	pthread_mutex_unlock(&cov.mu);
	return yes;
}

static void set_coverage(const struct xtx_snap_pos *pos, uint32_t ncpu, uint32_t user_from)
{
	uint32_t *from = calloc(ncpu ? ncpu : 1, sizeof(*from)), c;

	if (!from)
		return;		/* the old coverage stays: it asks for less */
	for (c = 0; c < ncpu; c++)
		from[c] = pos[c].seg_from;
	pthread_mutex_lock(&cov.mu);
	free(cov.seg_from);
	cov.seg_from = from;
	cov.ncpu = ncpu;
	cov.user_from = user_from;
	pthread_mutex_unlock(&cov.mu);
}

/*
 * The newest snapshot's positions and carried records: the next snapshot
 * starts its range where this one ended, and the resolver reads the
 * carried records as it reads the logs.  Read from the file the first
 * time, then replaced by each snapshot taken.
 */
static struct {
	pthread_mutex_t mu;
	bool loaded, have;
	struct xtx_snap_hdr h;
	struct xtx_snap_pos *pos;
	struct xtx_log_entry *e;	/* carried entries */
	size_t n;
	uint64_t *txns;			/* carried multi-replica transactions, sorted */
	size_t ntxns;
} cur = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void cur_clear(void)
{
	free(cur.pos);
	free(cur.e);
	free(cur.txns);
	cur.pos = NULL;
	cur.e = NULL;
	cur.txns = NULL;
	cur.n = cur.ntxns = 0;
	cur.have = false;
}

/* The multi-replica transactions of entries e[0..n), sorted, in *txns. */
static int carried_txns(const struct xtx_log_entry *e, size_t n, uint64_t **txns, size_t *nt)
{
	size_t i, k = 0;
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i += xtx_logrec_span(&e[i]))
		if (xtx_log_is_multi(&e[i]))
			v[k++] = e[i].txn;
	qsort(v, k, sizeof(*v), cmp_u64);
	*txns = v;
	*nt = k;
	return 0;
}

/*
 * Reads the header, positions and carried entries of snapshot name; 0 (the
 * entries in *e, *n: none before version 3) or a negative errno.
 */
static int read_head(int dirfd, const char *name, struct xtx_snap_hdr *h,
		     struct xtx_snap_pos **pos, struct xtx_log_entry **e, size_t *n)
{
	struct xtx_snap_carry tr;
	struct stat st;
	uint32_t crc;
	int fd, err = 0;

	*pos = NULL;
	*e = NULL;
	*n = 0;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || pread(fd, h, sizeof(*h), 0) != sizeof(*h) ||
	    memcmp(h->magic, XTX_SNAP_MAGIC, sizeof(h->magic)) || !h->ncpu || h->ncpu > 65536 ||
	    h->version > XTX_SNAP_VERSION) {
		err = -EBADMSG;
		goto out;
	}
	*pos = calloc(h->ncpu, sizeof(**pos));
	if (!*pos) {
		err = -ENOMEM;
		goto out;
	}
	if (pread(fd, *pos, h->ncpu * sizeof(**pos), sizeof(*h)) != (ssize_t)(h->ncpu * sizeof(**pos))) {
		err = -EBADMSG;
		goto out;
	}
	crc = xtx_crc32c(0, h, offsetof(struct xtx_snap_hdr, crc));
	if (xtx_crc32c(crc, *pos, sizeof(**pos) * h->ncpu) != h->crc) {
		err = -EBADMSG;
		goto out;
	}
	if (h->version < XTX_SNAP_VERSION)
		goto out;
	if (st.st_size < (off_t)sizeof(tr) ||
	    pread(fd, &tr, sizeof(tr), st.st_size - (off_t)sizeof(tr)) != sizeof(tr) ||
	    memcmp(tr.magic, XTX_SNAP_CARRY_MAGIC, sizeof(tr.magic)) ||
	    tr.n > (uint64_t)st.st_size / sizeof(**e) ||
	    tr.off + tr.n * sizeof(**e) + sizeof(tr) != (uint64_t)st.st_size) {
		err = -EBADMSG;
		goto out;
	}
	*e = malloc((tr.n ? tr.n : 1) * sizeof(**e));
	if (!*e) {
		err = -ENOMEM;
		goto out;
	}
	if (pread(fd, *e, tr.n * sizeof(**e), (off_t)tr.off) != (ssize_t)(tr.n * sizeof(**e))) {
		err = -EIO;
		goto out;
	}
	crc = xtx_crc32c(0, *e, tr.n * sizeof(**e));
	if (xtx_crc32c(crc, &tr, offsetof(struct xtx_snap_carry, crc)) != tr.crc) {
		err = -EBADMSG;
		goto out;
	}
	*n = tr.n;
out:
	close(fd);
	if (err) {
		free(*pos);
		free(*e);
		*pos = NULL;
		*e = NULL;
		*n = 0;
	}
	return err;
}

static uint32_t last_snapshot(int dirfd);

/* Under cur.mu: the newest snapshot of the data directory, read once. */
static int cur_load(void)
{
	char name[64];
	uint32_t num;
	int dirfd, err;

	if (cur.loaded)
		return 0;
	if (!snap_dir[0])
		return -ENOENT;
	dirfd = open(snap_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? (cur.loaded = true, 0) : -errno;
	num = last_snapshot(dirfd);
	err = 0;
	if (num) {
		snprintf(name, sizeof(name), "snapshot-%06u.xsnap", num);
		err = read_head(dirfd, name, &cur.h, &cur.pos, &cur.e, &cur.n);
		if (!err)
			err = carried_txns(cur.e, cur.n, &cur.txns, &cur.ntxns);
		if (err)
			cur_clear();
		else
			cur.have = true;
	}
	close(dirfd);
	if (!err)
		cur.loaded = true;
	return err;
}

int xtxd_snapshot_carried_each(int (*fn)(const struct xtx_log_write *w, void *arg), void *arg)
{
	struct xtx_logrec *rec = malloc(sizeof(*rec));
	size_t i;
	int err;

	if (!rec)
		return -ENOMEM;
	xtx_logrec_init(rec);
	pthread_mutex_lock(&cur.mu);
	err = cur_load();
	for (i = 0; !err && i < cur.n; i++)
		if (xtx_logrec_feed(rec, &cur.e[i]) == XTX_LOGREC_WRITE)
			err = fn(&rec->w, arg);
	pthread_mutex_unlock(&cur.mu);
	free(rec);
	return err;
}

bool xtxd_snapshot_carries(uint64_t txn)
{
	bool yes;

	pthread_mutex_lock(&cur.mu);
	/* unreadable: say yes, so nothing it may need is dropped */
	yes = cur_load() || (cur.ntxns &&
			     bsearch(&txn, cur.txns, cur.ntxns, sizeof(txn), cmp_u64) != NULL);
	pthread_mutex_unlock(&cur.mu);
	return yes;
}

void xtxd_snapshot_set_keep_logs(bool (*fn)(void))
{
	keep_logs = fn;
}

void xtxd_snapshot_set_after(void (*fn)(void))
{
	after_snapshot = fn;
}

void xtxd_snapshot_set_dir(const char *dir)
{
	snprintf(snap_dir, sizeof(snap_dir), "%s", dir);
}

int xtxd_snapshot_name_num(const char *name, uint32_t *num)
{
	unsigned int n;
	int end = 0;

	if (sscanf(name, "snapshot-%u.xsnap%n", &n, &end) != 1 || (size_t)end != strlen(name))
		return 0;
	*num = n;
	return 1;
}

struct snap_writer {
	FILE *f;
	uint64_t count;
	struct xtxd_carry *carry;	/* told every key written */
};

static int write_rec(const struct xtxd_ovf_item *it, void *arg)
{
	struct snap_writer *w = arg;
	uint8_t tail[XTX_VALUE_MAX];
	struct xtx_snap_rec r;
	size_t tn;

	memset(&r, 0, sizeof(r));
	r.key = it->key;
	r.version = it->version;
	r.table = it->table;
	r.vlen = it->vlen > XTX_VALUE_MAX ? XTX_VALUE_MAX : it->vlen;
	memcpy(r.value, it->value, r.vlen < XTX_VALUE_INLINE ? r.vlen : XTX_VALUE_INLINE);
	tn = xtx_snap_tail_size(r.vlen);
	memset(tail, 0, tn);
	if (tn)
		memcpy(tail, it->value + XTX_VALUE_INLINE, r.vlen - XTX_VALUE_INLINE);
	r.crc = xtx_crc32c(xtx_crc32c(0, &r, sizeof(r)), tail, tn);
	if (fwrite(&r, sizeof(r), 1, w->f) != 1 || (tn && fwrite(tail, tn, 1, w->f) != 1))
		return -EIO;
	w->count++;
	if (w->carry && it->table != XTX_SNAP_FLOOR_TABLE)
		xtxd_carry_dumped(w->carry, it->table, it->key, it->version);
	return 0;
}

/* The carried entries, then the trailer that finds them. */
static int write_carry(FILE *f, const struct xtxd_carry_out *co)
{
	struct xtx_snap_carry tr = { .n = co->n };
	long off = ftell(f);

	if (off < 0)
		return -errno;
	memcpy(tr.magic, XTX_SNAP_CARRY_MAGIC, sizeof(tr.magic));
	tr.off = (uint64_t)off;
	tr.crc = xtx_crc32c(0, co->e, co->n * sizeof(*co->e));
	tr.crc = xtx_crc32c(tr.crc, &tr, offsetof(struct xtx_snap_carry, crc));
	if ((co->n && fwrite(co->e, sizeof(*co->e), co->n, f) != co->n) ||
	    fwrite(&tr, sizeof(tr), 1, f) != 1)
		return -EIO;
	return 0;
}

/* The floor record (XTX_SNAP_FLOOR_TABLE): the highest floor of every bucket. */
static int write_floor(const struct xtx_target *t, struct xtxd_ovf *store, struct snap_writer *w)
{
	struct xtx_kv_bucket *kv;
	struct xtxd_ovf_item it = { .table = XTX_SNAP_FLOOR_TABLE };
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), i;
	size_t size;
	int fd = xtx_target_map_fd(t, XTX_MAP_KV), err;

	if (fd < 0)
		return fd;
	err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	close(fd);
	/* through the mapping: a lookup per bucket cost seconds at millions of buckets */
	if (!err)
		err = xtx_target_map_kv(t, info.max_entries, &kv, &size);
	if (err)
		return err;
	for (i = 0; i < info.max_entries; i++) {
		uint64_t f = __atomic_load_n(&kv[i].vfloor, __ATOMIC_RELAXED);

		if (f > it.version)
			it.version = f;
		if (store && xtxd_ovf_floor(store, i) > it.version)
			it.version = xtxd_ovf_floor(store, i);
	}
	munmap(kv, size);
	return write_rec(&it, w);
}

/* The ring incarnation and its CPU count, as the drain names them in segment headers. */
static int read_epoch(const struct xtx_target *t, struct xtx_log_epoch *ep, uint32_t *ncpu,
		      int *cur_fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd, err;

	err = xtx_log_epoch_boot_id(ep->boot_id);
	if (err)
		return err;
	fd = xtx_target_map_fd(t, XTX_MAP_LOG_CURSOR);
	if (fd < 0)
		return fd;
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		err = -errno;
		close(fd);
		return err;
	}
	ep->map_id = info.id;
	*ncpu = info.max_entries;
	*cur_fd = fd;
	return 0;
}

/* The highest snapshot number in dirfd, 0 when none. */
static uint32_t last_snapshot(int dirfd)
{
	uint32_t best = 0, n;
	struct dirent *de;
	DIR *d;

	d = xtx_opendir_at(dirfd);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (xtxd_snapshot_name_num(de->d_name, &n) && n > best)
			best = n;
	closedir(d);
	return best;
}

/* Removes the snapshots numbered below keep: their logs are going. */
static void remove_old_snapshots(int dirfd, uint32_t keep)
{
	struct dirent *de;
	uint32_t n;
	DIR *d;

	d = xtx_opendir_at(dirfd);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (xtxd_snapshot_name_num(de->d_name, &n) && n < keep)
			unlinkat(dirfd, de->d_name, 0);
	closedir(d);
}

static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether segs[i] is its CPU's last segment (the list is sorted by CPU, then number). */
static bool last_of_cpu(const struct xtx_logseg *segs, size_t nsegs, size_t i)
{
	return i + 1 == nsegs || segs[i + 1].cpu != segs[i].cpu;
}

/*
 * The segments a snapshot at pos (user_from for xtxd's own log) makes
 * redundant.  Each log's last segment stays, covered or not: a writer
 * opening a directory numbers its next segment after the last it finds,
 * and with none it would start again at 0, below seg_from, where recovery
 * skips what it logs.
 */
static bool removable(const struct xtx_logseg *segs, size_t nsegs, size_t i,
		      const struct xtx_snap_pos *pos, uint32_t ncpu, uint32_t user_from)
{
	const struct xtx_logseg *s = &segs[i];

	if (s->cpu == XTXD_USERLOG_CPU ? s->seg >= user_from :
	    s->cpu >= ncpu || s->seg >= pos[s->cpu].seg_from)
		return false;
	return !last_of_cpu(segs, nsegs, i);
}

/* Takes co's carried entries as the newest snapshot's, with h and pos. */
static void cur_set(const struct xtx_snap_hdr *h, const struct xtx_snap_pos *pos,
		    struct xtxd_carry_out *co)
{
	struct xtx_snap_pos *p = malloc(h->ncpu * sizeof(*p));

	pthread_mutex_lock(&cur.mu);
	cur_clear();
	if (p) {
		memcpy(p, pos, h->ncpu * sizeof(*p));
		cur.h = *h;
		cur.pos = p;
		cur.e = co->e;
		cur.n = co->n;
		cur.txns = co->txns;
		cur.ntxns = co->ntxns;
		co->e = NULL;
		co->txns = NULL;
		cur.have = cur.loaded = true;
	} else {
		cur.loaded = false;	/* read from the file when next needed */
	}
	pthread_mutex_unlock(&cur.mu);
}

static int take(const struct xtx_target *t, struct xtxd_ovf *store, struct xtxd_out *out,
		bool ok)
{
	struct xtx_log_epoch ep = {};
	struct xtx_snap_pos *pos = NULL;
	struct xtx_logseg *segs = NULL;
	struct snap_writer w = {};
	struct xtx_snap_hdr h = {};
	struct xtxd_carry_out co = {};
	struct xtxd_carry_scope sc = {};
	uint32_t *user_rm = NULL;
	struct xtx_snap_pos *prev_pos = NULL;
	struct xtx_log_entry *prev_e = NULL;
	size_t nprev_e = 0;
	char tmp[64], name[64], line[256];
	const char *why = "";
	size_t nsegs = 0, i, ll, nuser_rm = 0;
	uint32_t ncpu = 0, c, removed = 0, user_from = 0;
	int dirfd = -1, cur_fd = -1, fd = -1, err = 0;
	bool done = false, covered = true, keep;
	struct timespec ts;

	if (!snap_dir[0]) {
		xtxd_out_printf(out, "ERR snapshot: no data directory\n");
		return -ENOENT;
	}
	dirfd = open(snap_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		xtxd_out_printf(out, "ERR snapshot: opening %s: %s\n", snap_dir, strerror(errno));
		return -EIO;
	}
	err = read_epoch(t, &ep, &ncpu, &cur_fd);
	if (err) {
		xtxd_out_printf(out, "ERR snapshot: reading the log cursors: %s\n", strerror(-err));
		goto out;
	}
	/*
	 * The segments first, then the tails, then the store: a segment the
	 * drain creates after the listing is numbered above every listed one,
	 * and holds only records the position does not cover or filters by seq.
	 */
	/* xtxd's own log: what it holds before here is in the store dumped below */
	err = xtxd_userlog_rotate(&user_from);
	if (err) {
		xtxd_out_printf(out, "ERR snapshot: rotating xtxd's own log: %s\n", strerror(-err));
		goto out;
	}
	err = xtx_logfile_list(dirfd, &segs, &nsegs);
	if (err) {
		xtxd_out_printf(out, "ERR snapshot: listing %s: %s\n", snap_dir, strerror(-err));
		goto out;
	}
	pos = calloc(ncpu, sizeof(*pos));
	user_rm = calloc(nsegs ? nsegs : 1, sizeof(*user_rm));
	if (!pos || !user_rm) {
		err = -ENOMEM;
		xtxd_out_printf(out, "ERR snapshot: %s\n", strerror(ENOMEM));
		goto out;
	}
	for (c = 0; c < ncpu; c++) {
		const struct xtx_logseg *last = NULL;
		struct xtx_log_cursor cur_c;
		struct xtx_logr r;

		for (i = 0; i < nsegs; i++)
			if (segs[i].cpu == c)
				last = &segs[i];
		if (last) {
			pos[c].seg_from = last->seg + 1;
			/* this incarnation's open segment: the drain still appends to it */
			if (!xtx_logr_open(&r, dirfd, last->name)) {
				if (r.status == XTX_LOGR_OK && xtx_log_epoch_eq(&ep, &r.hdr))
					pos[c].seg_from = last->seg;
				xtx_logr_close(&r);
			}
		}
		if (bpf_map_lookup_elem(cur_fd, &c, &cur_c)) {
			err = -errno;
			xtxd_out_printf(out, "ERR snapshot: reading CPU %u's log cursor: %s\n", c,
					strerror(-err));
			goto out;
		}
		pos[c].seq = cur_c.tail;
	}
	/* a copy under way may have a transaction of them asked about again (copy.h) */
	keep = keep_logs && keep_logs();
	for (i = 0; !keep && i < nsegs; i++)
		if (segs[i].cpu == XTXD_USERLOG_CPU && removable(segs, nsegs, i, pos, ncpu, user_from))
			user_rm[nuser_rm++] = segs[i].seg;
	/* what the positions cover is on disk before it is read (the drain may lag) */
	err = xtxd_logdrain_flush(SNAP_FLUSH_TIMEOUT_NS);
	if (err && err != -ENODEV) {
		xtxd_out_printf(out, "ERR snapshot: writing the log out to its positions: %s\n",
				strerror(-err));
		goto out;
	}
	/*
	 * The range of records it newly covers starts where the newest
	 * snapshot's ended: its positions and carried records, copied, so the
	 * resolver is not held up while the logs are read
	 */
	pthread_mutex_lock(&cur.mu);
	err = cur_load();
	if (!err && cur.have) {
		prev_pos = malloc(cur.h.ncpu * sizeof(*prev_pos));
		prev_e = malloc((cur.n ? cur.n : 1) * sizeof(*prev_e));
		if (prev_pos && prev_e) {
			memcpy(prev_pos, cur.pos, cur.h.ncpu * sizeof(*prev_pos));
			memcpy(prev_e, cur.e, cur.n * sizeof(*prev_e));
			nprev_e = cur.n;
			sc.prev = prev_pos;
			sc.prev_ncpu = cur.h.ncpu;
			memcpy(sc.prev_ep.boot_id, cur.h.boot_id, sizeof(sc.prev_ep.boot_id));
			sc.prev_ep.map_id = cur.h.map_id;
		} else {
			err = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&cur.mu);
	if (!err) {
		sc.ncpu = ncpu;
		sc.pos = pos;
		sc.ep = ep;
		sc.user_removed = user_rm;
		sc.nuser_removed = nuser_rm;
		w.carry = xtxd_carry_begin(dirfd, &sc, prev_e, nprev_e, &err);
	}
	if (err) {
		xtxd_out_printf(out, "ERR snapshot: reading the logs it covers: %s\n",
				strerror(-err));
		goto out;
	}

	memcpy(h.magic, XTX_SNAP_MAGIC, sizeof(h.magic));
	h.version = XTX_SNAP_VERSION;
	h.ncpu = ncpu;
	memcpy(h.boot_id, ep.boot_id, sizeof(h.boot_id));
	h.map_id = ep.map_id;
	h.num = last_snapshot(dirfd) + 1;
	h.rec_size = sizeof(struct xtx_snap_rec);
	clock_gettime(CLOCK_REALTIME, &ts);
	h.created_ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	snprintf(name, sizeof(name), "snapshot-%06u.xsnap", h.num);
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !(w.f = fdopen(fd, "w"))) {
		err = -errno;
		xtxd_out_printf(out, "ERR snapshot: creating %s: %s\n", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	/* the header again once the count is known */
	if (fwrite(&h, sizeof(h), 1, w.f) != 1 || fwrite(pos, sizeof(*pos), ncpu, w.f) != ncpu) {
		err = -EIO;
		why = "writing";
		goto fail;
	}
	err = xtxd_dump_each(t, store, write_rec, &w, &why);
	if (!err)
		err = write_floor(t, store, &w);
	if (err) {
		if (err == -EIO)
			why = "writing";
		goto fail;
	}
	/* what the dump missed of the records the positions cover */
	err = xtxd_carry_end(w.carry, dirfd, &co);
	if (err) {
		why = "reading the logs it covers for";
		goto fail;
	}
	why = "writing";
	err = write_carry(w.f, &co);
	if (err)
		goto fail;
	h.count = w.count;
	h.crc = xtx_crc32c(0, &h, offsetof(struct xtx_snap_hdr, crc));
	h.crc = xtx_crc32c(h.crc, pos, sizeof(*pos) * ncpu);
	if (fflush(w.f) || fseek(w.f, 0, SEEK_SET) || fwrite(&h, sizeof(h), 1, w.f) != 1 ||
	    fflush(w.f)) {
		err = -(errno ?: EIO);
		goto fail;
	}
	/* durable before it replaces anything, and its name durable before logs go */
	why = "syncing";
	if (fsync(fileno(w.f))) {
		err = -errno;
		goto fail;
	}
	fclose(w.f);
	w.f = NULL;
	/*
	 * What peers may still ask about, durable before the snapshot counts:
	 * the next one starts its range after this one's, and removes the
	 * segments that held these, kept or not now
	 */
	if (xtxd_held_wanted() && (co.nheld || co.nvalid)) {
		err = xtxd_held_add(dirfd, h.num, co.held, co.nheld, co.valid, co.nvalid);
		if (err) {
			why = "writing what the logs it covers held for";
			goto fail;
		}
	}
	if (renameat(dirfd, tmp, dirfd, name) || fsync(dirfd)) {
		err = -errno;
		why = "renaming";
		goto fail;
	}
	cur_set(&h, pos, &co);
	remove_old_snapshots(dirfd, h.num);
	if (keep) {
		nsegs = 0;
		covered = false;
	}
	if (xtxd_held_wanted())
		xtxd_held_expire(dirfd);
	for (i = 0; i < nsegs; i++) {
		if (!removable(segs, nsegs, i, pos, ncpu, user_from))
			continue;
		if (unlinkat(dirfd, segs[i].name, 0))
			pr_warn("snapshot: removing %s: %s\n", segs[i].name, strerror(errno));
		else
			removed++;
	}
	if (removed)
		fsync(dirfd);
	ll = 0;
	line[0] = '\0';
	for (c = 0; c < ncpu && ll < sizeof(line) - 32; c++)
		ll += snprintf(line + ll, sizeof(line) - ll, "%scpu%u=%u:%llu", c ? " " : "", c,
			       pos[c].seg_from, (unsigned long long)pos[c].seq);
	/* the floor record is not a key */
	pr_info("snapshot: %s: %llu keys, log positions %s, removed %u segments, carried %llu "
		"writes (%llu of %zu transactions, %llu deletes), %zu held\n", name,
		(unsigned long long)w.count - 1, line, removed, (unsigned long long)co.writes,
		(unsigned long long)co.ntxns, co.ntxns + co.nheld, (unsigned long long)co.tombs,
		co.nheld);
	xtxd_out_printf(out, "snapshot: %llu keys, log positions %s, removed %u segments, "
			"carried %llu writes\n", (unsigned long long)w.count - 1, line, removed,
			(unsigned long long)co.writes);
	xtxd_out_printf(out, "file: %s/%s\n%s", snap_dir, name, ok ? "OK\n" : "");
	if (covered) {
		set_coverage(pos, ncpu, user_from);
		if (after_snapshot)
			after_snapshot();
	}
	done = true;
	goto out;
fail:
	xtxd_out_printf(out, "ERR snapshot: %s %s: %s\n", why, tmp, strerror(-err));
	if (w.f)
		fclose(w.f);
	unlinkat(dirfd, tmp, 0);
out:
	if (fd >= 0)
		close(fd);
	if (cur_fd >= 0)
		close(cur_fd);
	xtxd_carry_free(w.carry);
	xtxd_carry_out_free(&co);
	free(segs);
	free(pos);
	free(user_rm);
	free(prev_pos);
	free(prev_e);
	close(dirfd);
	return done ? 0 : err ? err : -EIO;
}

/* Snapshots taken (by hand, by --snapshot-every, by a copy) and failed, for the metrics. */
static uint64_t snaps_taken, snaps_failed;

static int counted(int err)
{
	__atomic_fetch_add(err ? &snaps_failed : &snaps_taken, 1, __ATOMIC_RELAXED);
	return err;
}

void xtxd_snapshot_counts(uint64_t *taken, uint64_t *failed)
{
	*taken = __atomic_load_n(&snaps_taken, __ATOMIC_RELAXED);
	*failed = __atomic_load_n(&snaps_failed, __ATOMIC_RELAXED);
}

void xtxd_snapshot_take(const struct xtx_target *t, struct xtxd_ovf *store, struct xtxd_out *out)
{
	/* two snapshots at once would race for the number and the deletions */
	pthread_mutex_lock(&snap_lock);
	counted(take(t, store, out, true));
	pthread_mutex_unlock(&snap_lock);
}

int xtxd_snapshot_save(const struct xtx_target *t, struct xtxd_ovf *store, struct xtxd_out *out)
{
	int err;

	pthread_mutex_lock(&snap_lock);
	err = counted(take(t, store, out, false));
	pthread_mutex_unlock(&snap_lock);
	return err;
}
