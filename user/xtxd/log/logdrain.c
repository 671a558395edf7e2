// SPDX-License-Identifier: GPL-2.0-only
/* The log drain: copies each CPU's log entries head..tail to its segment files, then frees them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <xtx/maps.h>
#include <xtx/log.h>
#include "clock.h"
#include "log.h"
#include "logfile.h"
#include "logrec.h"
#include "logdrain.h"

#define DRAIN_BATCH		1024		/* entries shown to the observer and appended at once */
#define PERIOD_MIN_NS		(100ull * 1000)	/* between passes when syncing after each */
#define STATS_EVERY_NS		(1000ull * 1000 * 1000)

struct drain_cpu {
	struct xtx_logw w;
	uint64_t head;		/* what we last stored: everything before it is durable */
	uint64_t tail0;		/* tail when we started, for the appended count */
	uint64_t tail;		/* tail at the last pass */
	/*
	 * A big value's head and continuations may leave the ring in two
	 * batches (a batch's size, the ring's end).  The observer is shown
	 * whole writes only: the entries of one cut by a batch wait here,
	 * and head never passes its first entry, so a drain started again
	 * finds it whole in the ring.
	 */
	struct xtx_logrec_batcher shown;
};

static struct {
	bool running;
	pthread_t tid;
	int stop;		/* atomic */
	int failed;		/* a sync failed: head stays put (fail-stop) */
	int dirfd, lockfd;
	char dir[PATH_MAX];
	char stats_path[PATH_MAX];
	uint64_t sync_ns;
	const uint8_t *log;	/* read-only mapping of xtx_log */
	size_t log_size, stride;
	struct xtx_log_cursor *cur;	/* read-write mapping of xtx_log_cursor */
	size_t cur_size;
	uint32_t ncpu, ring;
	struct drain_cpu *cpus;
	struct xtxd_logdrain_stats st;	/* written by the thread, read with relaxed loads */
	xtxd_logdrain_observer observer;	/* set before start */
	uint64_t passes;		/* drain passes completed (atomic) */
	/* the watchdog: a drain that makes no progress for stall_ns fails */
	uint64_t stall_ns;
	uint64_t healthy_ns;		/* the last pass that wrote and synced all it had (atomic) */
	pthread_t wd_tid;
	bool wd_running;
	xtxd_logdrain_fail_fn on_fail;	/* set before start */
	int fail_told;			/* atomic: on_fail called */
} D = { .dirfd = -1, .lockfd = -1 };

/*
 * Where the drain thread sleeps between passes, and how a waiter (or stop)
 * wakes it early.  Outside D, which is wiped between runs.
 */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* on CLOCK_MONOTONIC, like xtx_now_ns() */
	bool kicked;
} W = { .mu = PTHREAD_MUTEX_INITIALIZER };
static pthread_once_t wait_once = PTHREAD_ONCE_INIT;

static void wait_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&W.cv, &a);
	pthread_condattr_destroy(&a);
}

/* Sleeps until deadline_ns (xtx_now_ns()) or a kick, whichever comes first. */
static void drain_wait(uint64_t deadline_ns)
{
	struct timespec ts = { .tv_sec = deadline_ns / 1000000000ull,
			       .tv_nsec = deadline_ns % 1000000000ull };

	pthread_mutex_lock(&W.mu);
	while (!W.kicked && !__atomic_load_n(&D.stop, __ATOMIC_ACQUIRE))
		if (pthread_cond_timedwait(&W.cv, &W.mu, &ts) == ETIMEDOUT)
			break;
	W.kicked = false;
	pthread_mutex_unlock(&W.mu);
}

/* Makes the drain start a pass now instead of at its next period. */
static void drain_kick(void)
{
	pthread_mutex_lock(&W.mu);
	W.kicked = true;
	pthread_cond_signal(&W.cv);
	pthread_mutex_unlock(&W.mu);
}

/*
 * Marks the drain failed (head never moves again) and tells on_fail, once.
 * From the drain's thread or the watchdog's.
 */
static void drain_fail(int err, const char *why)
{
	int zero = 0;

	__atomic_store_n(&D.failed, err, __ATOMIC_RELEASE);
	__atomic_store_n(&D.st.failed, 1, __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&D.fail_told, &zero, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	pr_warn("Error: log: %s: the log drain FAILED; %s\n", why,
		D.on_fail ? "this server stops (fail-stop)" : "nothing more leaves the ring");
	if (D.on_fail)
		D.on_fail(err, why);
}

#define ST_ADD(f, v)	__atomic_fetch_add(&D.st.f, (v), __ATOMIC_RELAXED)
#define ST_SET(f, v)	__atomic_store_n(&D.st.f, (v), __ATOMIC_RELAXED)

const uint64_t xtxd_sync_bucket_us[XTXD_SYNC_BUCKETS] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 100000, 1000000,
};

/* One sync round's time into the histogram (the metrics' xtx_log_sync_seconds). */
static void note_sync(uint64_t dt)
{
	unsigned int i;

	ST_ADD(sync_rounds, 1);
	ST_ADD(sync_sum_ns, dt);
	for (i = 0; i < XTXD_SYNC_BUCKETS; i++)
		if (dt <= xtxd_sync_bucket_us[i] * 1000)
			ST_ADD(sync_le[i], 1);
}

void xtxd_logdrain_get_stats(struct xtxd_logdrain_stats *s)
{
	uint64_t *dst = (uint64_t *)s, *src = (uint64_t *)&D.st;
	size_t i;

	for (i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/* Maps an mmap-able array map whole; values sit back to back, each rounded up to 8 bytes. */
static void *map_array(int fd, const char *name, int prot, size_t *size, size_t *stride,
		       uint32_t *entries)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "Error: log: inspecting %s: %s\n", name, strerror(errno));
		return NULL;
	}
	*stride = (info.value_size + 7) & ~7u;
	*entries = info.max_entries;
	*size = ((size_t)*stride * info.max_entries + page - 1) & ~(size_t)(page - 1);
	p = mmap(NULL, *size, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "Error: log: mapping %s: %s\n", name, strerror(errno));
		return NULL;
	}
	return p;
}

static int open_maps(const struct xtx_target *t, struct xtx_log_epoch *ep)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), zero = 0, cur_entries, log_entries;
	size_t cur_stride;
	struct xtx_info xi;
	int fd, err;

	fd = xtx_target_map_fd(t, XTX_MAP_INFO);
	if (fd < 0 || bpf_map_lookup_elem(fd, &zero, &xi)) {
		err = fd < 0 ? fd : -errno;
		fprintf(stderr, "Error: log: reading %s: %s\n", XTX_MAP_INFO, strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	close(fd);
	D.ring = xi.log_ring;

	fd = xtx_target_map_fd(t, XTX_MAP_LOG_CURSOR);
	if (fd < 0) {
		fprintf(stderr, "Error: log: opening %s: %s\n", XTX_MAP_LOG_CURSOR, strerror(-fd));
		return fd;
	}
	/* the cursor map's id names this ring incarnation in the segment headers */
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		err = -errno;
		fprintf(stderr, "Error: log: inspecting %s: %s\n", XTX_MAP_LOG_CURSOR,
			strerror(errno));
		close(fd);
		return err;
	}
	ep->map_id = info.id;
	/* read-write: head is ours to store */
	D.cur = map_array(fd, XTX_MAP_LOG_CURSOR, PROT_READ | PROT_WRITE, &D.cur_size,
			  &cur_stride, &cur_entries);
	close(fd);
	if (!D.cur)
		return -EIO;

	fd = xtx_target_map_fd(t, XTX_MAP_LOG);
	if (fd < 0) {
		fprintf(stderr, "Error: log: opening %s: %s\n", XTX_MAP_LOG, strerror(-fd));
		return fd;
	}
	D.log = map_array(fd, XTX_MAP_LOG, PROT_READ, &D.log_size, &D.stride, &log_entries);
	close(fd);
	if (!D.log)
		return -EIO;
	D.ncpu = cur_entries;
	if (cur_stride != sizeof(struct xtx_log_cursor) ||
	    D.stride != sizeof(struct xtx_log_entry) || !D.ring || (D.ring & (D.ring - 1)) ||
	    (uint64_t)D.ring * D.ncpu != log_entries) {
		fprintf(stderr, "Error: log: the pinned logs do not match this xtxd (%u entries "
			"for %u CPUs of %u, values of %zu and %zu bytes)\n", log_entries, D.ncpu,
			D.ring, D.stride, cur_stride);
		return -EINVAL;
	}
	return 0;
}

static int open_dir(const char *dir)
{
	char parent[PATH_MAX], *slash;
	int pfd;

	if (xtx_mkdirs(dir, 0700)) {
		fprintf(stderr, "Error: log: creating data directory %s: %s\n", dir,
			strerror(errno));
		return -errno;
	}
	/* a data directory made just now must not vanish with a power cut */
	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash) {
		*(slash == parent ? slash + 1 : slash) = '\0';
		pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd >= 0) {
			fsync(pfd);
			close(pfd);
		}
	}
	D.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (D.dirfd < 0) {
		fprintf(stderr, "Error: log: opening data directory %s: %s\n", dir,
			strerror(errno));
		return -errno;
	}
	/* two drains appending to the same segments would interleave garbage */
	D.lockfd = openat(D.dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (D.lockfd < 0 || flock(D.lockfd, LOCK_EX | LOCK_NB)) {
		int err = errno;

		fprintf(stderr, "Error: log: data directory %s: %s\n", dir,
			err == EWOULDBLOCK ? "another xtxd drains into it" : strerror(err));
		return -err;
	}
	return 0;
}

static void write_stats_file(void)
{
	struct xtxd_logdrain_stats s;
	char tmp[PATH_MAX + 8];
	FILE *f;

	xtxd_logdrain_get_stats(&s);
	snprintf(tmp, sizeof(tmp), "%s.tmp", D.stats_path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "data_dir %s\nappended %llu\ndrained %llu\nresumed %llu\nbytes %llu\n"
		"fsyncs %llu\nlag %llu\nmax_lag %llu\nsync_max_us %llu\nwrite_errors %llu\n"
		"ring %llu\ncpus %llu\nfailed %d\n", D.dir,
		(unsigned long long)s.appended, (unsigned long long)s.drained,
		(unsigned long long)s.resumed, (unsigned long long)s.bytes,
		(unsigned long long)s.fsyncs, (unsigned long long)s.lag,
		(unsigned long long)s.max_lag, (unsigned long long)(s.sync_max_ns / 1000),
		(unsigned long long)s.write_errors, (unsigned long long)s.ring,
		(unsigned long long)s.cpus, D.failed);
	if (fclose(f) || rename(tmp, D.stats_path))
		unlink(tmp);
}

static void show(const struct xtx_log_entry *e, size_t n, void *arg)
{
	(void)arg;
	if (D.observer)
		D.observer(e, n);
}

/* What head may pass: what is on disk, but never the start of a write not wholly seen. */
static uint64_t releasable(const struct drain_cpu *dc)
{
	return xtx_logrec_batch_safe(&dc->shown, dc->w.next_seq);
}

/*
 * Copies CPU c's entries next..tail out of the ring and appends them to
 * its segment.  The slots stay XDP's to fill again only once head passes
 * them, which happens after they are synced.  Returns entries written.
 */
static uint64_t drain_cpu(uint32_t c, bool *write_failed)
{
	struct drain_cpu *dc = &D.cpus[c];
	const uint8_t *base = D.log + (size_t)c * D.ring * D.stride;
	uint64_t tail, next, moved = 0, n, i;
	int err;

	/* acquire: pairs with XDP's xchg of tail, so the entries below are complete */
	tail = __atomic_load_n(&D.cur[c].tail, __ATOMIC_ACQUIRE);
	if (tail != dc->tail) {
		ST_ADD(appended, tail - dc->tail);
		dc->tail = tail;
	}
	next = dc->w.next_seq;
	if (tail < next || tail - dc->head > D.ring) {
		/* cannot happen unless someone else moves the cursors */
		if (!D.failed) {
			char why[160];

			snprintf(why, sizeof(why), "CPU %u: tail %llu, head %llu, written %llu: the "
				 "cursor moved under the drain", c, (unsigned long long)tail,
				 (unsigned long long)dc->head, (unsigned long long)next);
			drain_fail(-EIO, why);
		}
		return 0;
	}
	while (next < tail) {
		/*
		 * The slots head..tail-1 stay put until head passes them, and a
		 * slot is exactly a struct xtx_log_entry (checked at start): the
		 * run up to the ring's end is appended straight from the mapping.
		 */
		const struct xtx_log_entry *run;

		n = tail - next < DRAIN_BATCH ? tail - next : DRAIN_BATCH;
		if (n > D.ring - (next & (D.ring - 1)))
			n = D.ring - (next & (D.ring - 1));
		run = (const struct xtx_log_entry *)(base + (next & (D.ring - 1)) * D.stride);
		for (i = 0; i < n; i++) {
			if (run[i].seq != next + i) {
				if (!D.failed) {
					char why[120];

					snprintf(why, sizeof(why), "CPU %u: the slot of seq %llu "
						 "holds seq %llu", c, (unsigned long long)(next + i),
						 (unsigned long long)run[i].seq);
					drain_fail(-EIO, why);
				}
				return moved;
			}
		}
		/* the resolver learns each multi-replica write as it leaves the ring */
		xtx_logrec_batch(&dc->shown, run, n, show, NULL);
		err = xtx_logw_append(&dc->w, run, n);
		/* what did reach the file counts even when the rest failed */
		ST_ADD(bytes, (dc->w.next_seq - next) * sizeof(struct xtx_logfile_rec));
		moved += dc->w.next_seq - next;
		next = dc->w.next_seq;
		if (err) {
			/*
			 * ENOSPC and friends: head stays, the ring fills, XDP says
			 * LOG_FULL; retried until the watchdog calls it a stall
			 */
			if (!D.st.write_errors || xtx_log_level >= XTX_LOG_DEBUG)
				pr_warn("Error: log: writing CPU %u's segment: %s (retrying)\n", c,
					strerror(-err));
			ST_ADD(write_errors, 1);
			*write_failed = true;
			break;
		}
	}
	return moved;
}

/* Makes every segment written durable, then lets XDP reuse what is on disk. */
static void sync_and_release(void)
{
	uint64_t t0 = xtx_now_ns(), dt, drained = 0;
	uint32_t c;
	int err;

	for (c = 0; c < D.ncpu; c++) {
		struct drain_cpu *dc = &D.cpus[c];

		if (!dc->w.dirty)
			continue;
		err = xtx_logw_sync(&dc->w);
		if (err) {
			/*
			 * After a failed fdatasync the kernel may have dropped the
			 * dirty pages: nothing written since the last good sync can
			 * be trusted, so head must never pass it (fail-stop).
			 */
			char why[96];

			snprintf(why, sizeof(why), "syncing CPU %u's segment: %s", c,
				 strerror(-err));
			drain_fail(err, why);
			return;
		}
		ST_ADD(fsyncs, 1);
	}
	dt = xtx_now_ns() - t0;
	if (dt > D.st.sync_max_ns)
		ST_SET(sync_max_ns, dt);
	note_sync(dt);
	for (c = 0; c < D.ncpu; c++) {
		struct drain_cpu *dc = &D.cpus[c];
		uint64_t durable = releasable(dc);

		if (durable <= dc->head)
			continue;
		/* release: our reads of the slots happen before XDP may overwrite them */
		__atomic_store_n(&D.cur[c].head, durable, __ATOMIC_RELEASE);
		drained += durable - dc->head;
		dc->head = durable;
	}
	if (drained)
		ST_ADD(drained, drained);
}

/* Written and not yet synced, or synced (say by a rotation) and not yet released. */
static bool any_pending(void)
{
	uint32_t c;

	for (c = 0; c < D.ncpu; c++)
		if (D.cpus[c].w.dirty || releasable(&D.cpus[c]) != D.cpus[c].head)
			return true;
	return false;
}

static void note_lag(void)
{
	uint64_t lag = 0, fill;
	uint32_t c;

	for (c = 0; c < D.ncpu; c++) {
		fill = __atomic_load_n(&D.cur[c].tail, __ATOMIC_RELAXED) - D.cpus[c].head;
		lag += fill;
		if (fill > D.st.max_lag)
			ST_SET(max_lag, fill);
	}
	ST_SET(lag, lag);
}

/* One pass over every CPU; syncs when due.  Returns entries written. */
static uint64_t drain_pass(uint64_t *last_sync, bool force_sync)
{
	uint64_t moved = 0, now;
	bool write_failed = false;
	uint32_t c;

	if (D.failed)
		return 0;
	for (c = 0; c < D.ncpu; c++)
		moved += drain_cpu(c, &write_failed);
	__atomic_fetch_add(&D.passes, 1, __ATOMIC_RELEASE);
	note_lag();
	now = xtx_now_ns();
	/* group commit: one fdatasync per segment covers everything written since the last */
	if (!D.failed && any_pending() && (force_sync || now - *last_sync >= D.sync_ns)) {
		*last_sync = now;
		sync_and_release();
	}
	/* what it had is written, and synced or to be at its time: the disk answers */
	if (!D.failed && !write_failed)
		__atomic_store_n(&D.healthy_ns, xtx_now_ns(), __ATOMIC_RELEASE);
	return moved;
}

/* Entries in some ring that are not on disk yet. */
static bool ring_waits(void)
{
	uint32_t c;

	for (c = 0; c < D.ncpu; c++)
		if (__atomic_load_n(&D.cur[c].tail, __ATOMIC_ACQUIRE) !=
		    __atomic_load_n(&D.cur[c].head, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

/*
 * The watchdog: a write or fdatasync that does not return (a hung disk)
 * leaves the drain's thread stuck where nothing else notices, while XDP
 * acknowledges appends until the ring fills; writes that fail again and
 * again leave it full.  Either way the log takes nothing for stall_ns.
 */
static void *watchdog_main(void *arg)
{
	const struct timespec tick = { 0, 100 * 1000 * 1000 };
	uint64_t healthy, last = xtx_now_ns(), now;
	int64_t since;

	(void)arg;
	while (!__atomic_load_n(&D.stop, __ATOMIC_ACQUIRE)) {
		nanosleep(&tick, NULL);
		if (__atomic_load_n(&D.failed, __ATOMIC_ACQUIRE))
			break;
		/*
		 * Woken far later than asked: the whole process was stopped
		 * (SIGSTOP, a stall of the machine), the drain with it, not
		 * the disk alone: the drain gets a whole window from now
		 */
		now = xtx_now_ns();
		if (now - last > 10 * (uint64_t)tick.tv_nsec)
			__atomic_store_n(&D.healthy_ns, now, __ATOMIC_RELEASE);
		last = now;
		/* the stamp first: the drain may write a newer one after our clock read */
		healthy = __atomic_load_n(&D.healthy_ns, __ATOMIC_ACQUIRE);
		since = (int64_t)(xtx_now_ns() - healthy);
		if (since > (int64_t)D.stall_ns && ring_waits()) {
			char why[120];

			snprintf(why, sizeof(why), "no log write and sync has completed for %llu ms "
				 "(a hung or failing disk)", (unsigned long long)(since / 1000000));
			drain_fail(-ETIMEDOUT, why);
			break;
		}
	}
	return NULL;
}

/*
 * One pass per sync period: copy, write, fdatasync, release.  An entry is
 * released no later than it would be by passes made more often (head
 * moves only at a sync, and syncs are at most one per period), while the
 * thread wakes once per period instead of every 100 us; idle, it looks
 * once per period too, so an entry that arrives then waits at most one
 * period and is synced at once.  Waiters for a pass kick it awake.
 */
static void *drain_main(void *arg)
{
	uint64_t last_sync = 0, last_stats = 0, period, now, wake;
	struct timespec ts;

	(void)arg;
	period = D.sync_ns > PERIOD_MIN_NS ? D.sync_ns : PERIOD_MIN_NS;
	if (period > STATS_EVERY_NS)
		period = STATS_EVERY_NS;
	while (!__atomic_load_n(&D.stop, __ATOMIC_ACQUIRE)) {
		drain_pass(&last_sync, false);
		now = xtx_now_ns();
		if (now - last_stats >= STATS_EVERY_NS) {
			write_stats_file();
			last_stats = now;
		}
		/* right when the next sync is due, or a period from now when none is pending */
		wake = now + period;
		if (!D.failed && any_pending() && last_sync + D.sync_ns < wake)
			wake = last_sync + D.sync_ns;
		if (wake > now)
			drain_wait(wake);
	}
	/* stopping: take what is there, then once more for appends still in flight */
	while (drain_pass(&last_sync, true))
		;
	ts.tv_sec = 0;
	ts.tv_nsec = 2 * 1000 * 1000;
	nanosleep(&ts, NULL);
	while (drain_pass(&last_sync, true))
		;
	write_stats_file();
	return NULL;
}

static void cleanup(void)
{
	uint32_t c;

	if (D.cpus)
		for (c = 0; c < D.ncpu; c++)
			xtx_logw_close(&D.cpus[c].w);
	free(D.cpus);
	if (D.log)
		munmap((void *)D.log, D.log_size);
	if (D.cur)
		munmap(D.cur, D.cur_size);
	if (D.lockfd >= 0)
		close(D.lockfd);
	if (D.dirfd >= 0)
		close(D.dirfd);
	xtxd_logdrain_observer obs = D.observer;
	xtxd_logdrain_fail_fn on_fail = D.on_fail;

	memset(&D, 0, sizeof(D));
	D.dirfd = D.lockfd = -1;
	D.observer = obs;
	D.on_fail = on_fail;
}

/*
 * A previous xtxd wrote head..next_seq-1 and stopped: head is where a
 * write starts (it never released part of one), so walking the ring from
 * there finds whether the disk ends inside a write, whose entries (still in
 * the ring: head has not passed them) wait for the rest of it.
 */
static void resume_part(uint32_t c, struct drain_cpu *dc, uint64_t head)
{
	const uint8_t *base = D.log + (size_t)c * D.ring * D.stride;
	struct xtx_log_entry part[XTX_LOGREC_MAX_ENTRIES];
	uint64_t seq = head, end = dc->w.next_seq, k;
	const struct xtx_log_entry *e;
	uint32_t span;

	while (seq < end) {
		e = (const void *)(base + (seq & (D.ring - 1)) * D.stride);
		span = xtx_logrec_span(e);
		if (end - seq < span) {
			for (k = 0; seq + k < end; k++)
				memcpy(&part[k], base + ((seq + k) & (D.ring - 1)) * D.stride,
				       sizeof(part[k]));
			xtx_logrec_batcher_init(&dc->shown, end, part, (uint32_t)k);
			return;
		}
		seq += span;
	}
}

int xtxd_logdrain_start(const struct xtx_target *t, const struct xtxd_logdrain_opts *o)
{
	struct xtx_log_epoch ep = {};
	uint64_t seg_max = o->seg_max ? o->seg_max : XTX_LOGFILE_SEG_MAX, resumed = 0;
	uint32_t c;
	int err;

	if (D.running)
		return -EBUSY;
	pthread_once(&wait_once, wait_init);
	cleanup();
	D.sync_ns = o->sync_ns;
	D.stall_ns = o->stall_ns ? o->stall_ns : XTXD_LOG_STALL_DEFAULT_NS;
	if (D.stall_ns < XTXD_LOG_STALL_MIN_NS)
		D.stall_ns = XTXD_LOG_STALL_MIN_NS;
	/* an idle drain passes once per sync period (at most a second): a few of them */
	if (D.stall_ns < 3 * D.sync_ns)
		D.stall_ns = 3 * D.sync_ns;
	if (o->data_dir)
		snprintf(D.dir, sizeof(D.dir), "%s", o->data_dir);
	else
		xtx_logfile_default_dir(t, D.dir, sizeof(D.dir));
	xtx_logdrain_stats_path(t, D.stats_path, sizeof(D.stats_path));
	err = xtx_log_epoch_boot_id(ep.boot_id);
	if (err) {
		fprintf(stderr, "Error: log: reading the boot id: %s\n", strerror(-err));
		goto fail;
	}
	err = open_maps(t, &ep);
	if (err)
		goto fail;
	err = open_dir(D.dir);
	if (err)
		goto fail;
	D.cpus = calloc(D.ncpu, sizeof(*D.cpus));
	if (!D.cpus) {
		err = -ENOMEM;
		fprintf(stderr, "Error: log: %s\n", strerror(ENOMEM));
		goto fail;
	}
	/* writers not opened yet have no file: cleanup() must not close fd 0 for them */
	for (c = 0; c < D.ncpu; c++)
		D.cpus[c].w.fd = -1;
	for (c = 0; c < D.ncpu; c++) {
		struct drain_cpu *dc = &D.cpus[c];
		uint64_t head = __atomic_load_n(&D.cur[c].head, __ATOMIC_ACQUIRE);
		uint64_t tail = __atomic_load_n(&D.cur[c].tail, __ATOMIC_ACQUIRE);

		/*
		 * Adopted after a crash: head..tail is still in the ring; the
		 * writer skips the part the old xtxd already wrote (and syncs it).
		 */
		err = xtx_logw_open(&dc->w, D.dirfd, c, &ep, head, tail, seg_max);
		if (err)
			goto fail;
		dc->head = head;
		dc->tail0 = dc->tail = tail;
		xtx_logrec_batcher_init(&dc->shown, dc->w.next_seq, NULL, 0);
		if (dc->w.next_seq > head) {
			resumed += dc->w.next_seq - head;
			resume_part(c, dc, head);
			dc->head = releasable(dc);
			__atomic_store_n(&D.cur[c].head, dc->head, __ATOMIC_RELEASE);
		}
		if (tail != head)
			pr_info("log: CPU %u: %llu entries undrained (head %llu, tail %llu), %llu "
				"already on disk\n", c, (unsigned long long)(tail - head),
				(unsigned long long)head, (unsigned long long)tail,
				(unsigned long long)(dc->w.next_seq - head));
	}
	ST_SET(resumed, resumed);
	ST_SET(ring, D.ring);
	ST_SET(cpus, D.ncpu);
	err = -pthread_create(&D.tid, NULL, drain_main, NULL);
	if (err) {
		fprintf(stderr, "Error: log: starting the drain thread: %s\n", strerror(-err));
		goto fail;
	}
	pthread_setname_np(D.tid, "xtxd-logdrain");
	D.running = true;
	__atomic_store_n(&D.healthy_ns, xtx_now_ns(), __ATOMIC_RELEASE);
	err = -pthread_create(&D.wd_tid, NULL, watchdog_main, NULL);
	if (err) {
		fprintf(stderr, "Error: log: starting the drain's watchdog: %s\n", strerror(-err));
		xtxd_logdrain_stop();
		return err;
	}
	pthread_setname_np(D.wd_tid, "xtxd-logwatch");
	D.wd_running = true;
	pr_info("log: draining %u CPUs x %u entries to %s (sync every %llu us)\n", D.ncpu, D.ring,
		D.dir, (unsigned long long)(D.sync_ns / 1000));
	return 0;
fail:
	cleanup();
	return err;
}

uint64_t xtxd_logdrain_stop(void)
{
	struct xtxd_logdrain_stats s;
	uint64_t lost = 0;
	uint32_t c;

	if (!D.running)
		return 0;
	__atomic_store_n(&D.stop, 1, __ATOMIC_RELEASE);
	drain_kick();
	if (D.wd_running)
		pthread_join(D.wd_tid, NULL);
	D.wd_running = false;
	pthread_join(D.tid, NULL);
	for (c = 0; c < D.ncpu; c++)
		lost += D.cur[c].tail - D.cpus[c].head;
	xtxd_logdrain_get_stats(&s);
	pr_info("log: drained %llu entries (%llu bytes, %llu fsyncs, fill at most %llu of %u, "
		"longest sync %llu us)%s\n", (unsigned long long)s.drained,
		(unsigned long long)s.bytes, (unsigned long long)s.fsyncs,
		(unsigned long long)s.max_lag, D.ring, (unsigned long long)(s.sync_max_ns / 1000),
		D.failed ? "; the drain had FAILED" : "");
	if (lost)
		pr_warn("log: %llu entries left undrained in the ring\n", (unsigned long long)lost);
	unlink(D.stats_path);
	cleanup();
	return lost;
}

void xtxd_logdrain_set_on_fail(xtxd_logdrain_fail_fn fn)
{
	D.on_fail = fn;
}

int xtxd_logdrain_failed(void)
{
	return D.running ? __atomic_load_n(&D.failed, __ATOMIC_ACQUIRE) : 0;
}

void xtxd_logdrain_set_observer(xtxd_logdrain_observer fn)
{
	D.observer = fn;
}

int xtxd_logdrain_seen(uint64_t timeout_ns)
{
	const struct timespec pause = { 0, 200 * 1000 };
	uint64_t passes, deadline = xtx_now_ns() + timeout_ns;

	if (!D.running)
		return -ENODEV;
	/* a pass that starts after this point reads tails at least as new as ours */
	passes = __atomic_load_n(&D.passes, __ATOMIC_ACQUIRE);
	while (__atomic_load_n(&D.passes, __ATOMIC_ACQUIRE) < passes + 2) {
		if (D.failed)
			return D.failed;
		if (xtx_now_ns() > deadline)
			return -ETIMEDOUT;
		drain_kick();
		nanosleep(&pause, NULL);
	}
	return 0;
}

int xtxd_logdrain_arm_fence(bool on)
{
	uint32_t c;

	if (!D.running)
		return -ENODEV;
	for (c = 0; c < D.ncpu; c++)
		__atomic_store_n(&D.cur[c].fenced, on, __ATOMIC_RELEASE);
	return 0;
}

int xtxd_logdrain_flush(uint64_t timeout_ns)
{
	const struct timespec pause = { 0, 500 * 1000 };
	uint64_t *want, deadline = xtx_now_ns() + timeout_ns;
	uint32_t c;
	int err = 0;

	if (!D.running)
		return -ENODEV;
	want = calloc(D.ncpu, sizeof(*want));
	if (!want)
		return -ENOMEM;
	for (c = 0; c < D.ncpu; c++)
		want[c] = __atomic_load_n(&D.cur[c].tail, __ATOMIC_ACQUIRE);
	for (c = 0; c < D.ncpu && !err; c++) {
		while (__atomic_load_n(&D.cur[c].head, __ATOMIC_ACQUIRE) < want[c]) {
			if (D.failed) {
				err = D.failed;
				break;
			}
			if (xtx_now_ns() > deadline) {
				err = -ETIMEDOUT;
				break;
			}
			drain_kick();
			nanosleep(&pause, NULL);
		}
	}
	free(want);
	return err;
}
