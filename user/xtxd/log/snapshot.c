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
#include <bpf/bpf.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include <xtx/maps.h>
#include "ctl_out.h"
#include "store/dump.h"
#include "log.h"
#include "logfile.h"
#include "snapshot.h"
#include "store/overflow.h"
#include "userlog.h"

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

static int take(const struct xtx_target *t, struct xtxd_ovf *store, struct xtxd_out *out,
		bool ok)
{
	struct xtx_log_epoch ep = {};
	struct xtx_snap_pos *pos = NULL;
	struct xtx_logseg *segs = NULL;
	struct snap_writer w = {};
	struct xtx_snap_hdr h = {};
	char tmp[64], name[64], line[256];
	const char *why = "";
	size_t nsegs = 0, i, ll;
	uint32_t ncpu = 0, c, removed = 0, user_from = 0;
	int dirfd = -1, cur_fd = -1, fd = -1, err = 0;
	bool done = false, covered = true;
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
	if (!pos) {
		xtxd_out_printf(out, "ERR snapshot: %s\n", strerror(ENOMEM));
		goto out;
	}
	for (c = 0; c < ncpu; c++) {
		const struct xtx_logseg *last = NULL;
		struct xtx_log_cursor cur;
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
		if (bpf_map_lookup_elem(cur_fd, &c, &cur)) {
			err = -errno;
			xtxd_out_printf(out, "ERR snapshot: reading CPU %u's log cursor: %s\n", c,
					strerror(-err));
			goto out;
		}
		pos[c].seq = cur.tail;
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
	h.count = w.count;
	h.crc = xtx_crc32c(0, &h, offsetof(struct xtx_snap_hdr, crc));
	h.crc = xtx_crc32c(h.crc, pos, sizeof(*pos) * ncpu);
	why = "writing";
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
	if (renameat(dirfd, tmp, dirfd, name) || fsync(dirfd)) {
		err = -errno;
		why = "renaming";
		goto fail;
	}
	remove_old_snapshots(dirfd, h.num);
	/* a copy under way may have a transaction of them asked about again (copy.h) */
	if (keep_logs && keep_logs()) {
		nsegs = 0;
		covered = false;
	}
	for (i = 0; i < nsegs; i++) {
		if (segs[i].cpu == XTXD_USERLOG_CPU ? segs[i].seg >= user_from :
		    segs[i].cpu >= ncpu || segs[i].seg >= pos[segs[i].cpu].seg_from)
			continue;
		/*
		 * Each log's last segment stays, covered or not: a writer opening
		 * a directory numbers its next segment after the last it finds,
		 * and with none it would start again at 0, below seg_from, where
		 * recovery skips what it logs (the list is sorted by CPU, then
		 * segment).
		 */
		if (i + 1 == nsegs || segs[i + 1].cpu != segs[i].cpu)
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
	pr_info("snapshot: %s: %llu keys, log positions %s, removed %u segments\n", name,
		(unsigned long long)w.count - 1, line, removed);
	xtxd_out_printf(out, "snapshot: %llu keys, log positions %s, removed %u segments\n",
			(unsigned long long)w.count - 1, line, removed);
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
	free(segs);
	free(pos);
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
