// SPDX-License-Identifier: GPL-2.0-only
/* Per-thread log rings (the per-CPU logs of bpf/lib/log.h) and their drain thread. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/random.h>
#include <xtx/log.h>
#include "clock.h"
#include "log.h"
#include "logfile.h"
#include "target.h"
#include "txlog.h"

/* between passes when dropping, or when syncing after every pass */
#define PERIOD_MIN_NS	(200 * 1000)

struct udpd_txlog {
	struct xtx_log_entry *ring;
	uint32_t size;
	uint64_t tail;		/* next append: written by the serving thread (release) */
	uint64_t head;		/* first undrained: written by the drain thread (release) */
	uint64_t full;
} __attribute__((aligned(64)));

struct udpd_txlog_drain {
	struct udpd_txlog **rings;
	unsigned int n;
	const char *dir;	/* NULL: entries are dropped once drained */
	int dirfd, lockfd;
	uint64_t sync_ns;
	struct xtx_logw *w;	/* one writer per ring: its segments are log-cpu<ring>-* */
	uint64_t last_sync;
	int failed;		/* a sync failed: heads stay put from then on (fail-stop) */
	uint64_t write_errors;
	pthread_t thread;
	int stop;		/* atomic */
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* CLOCK_MONOTONIC: wakes the thread early to stop */
};

struct udpd_txlog *udpd_txlog_new(uint32_t size)
{
	struct udpd_txlog *l;

	if (posix_memalign((void **)&l, 64, sizeof(*l)))
		return NULL;
	memset(l, 0, sizeof(*l));
	l->size = size;
	l->ring = calloc(size, sizeof(*l->ring));
	if (!l->ring) {
		free(l);
		return NULL;
	}
	return l;
}

void udpd_txlog_free(struct udpd_txlog *l)
{
	if (!l)
		return;
	free(l->ring);
	free(l);
}

/* Entries a write of vlen bytes takes: the entry and its continuations. */
static uint32_t entries_for(uint16_t vlen)
{
	return 1 + xtx_log_cont_count(vlen);
}

bool udpd_txlog_has_room(struct udpd_txlog *l, uint16_t vlen)
{
	/* the head only moves forward: a stale read only says full early */
	if (l->tail + entries_for(vlen) - __atomic_load_n(&l->head, __ATOMIC_ACQUIRE) <= l->size)
		return true;
	l->full++;
	return false;
}

/* The continuations of a long value, after its head entry at seq. */
static void append_conts(struct udpd_txlog *l, uint64_t seq, const uint8_t *value, uint16_t len)
{
	uint32_t i, n = xtx_log_cont_count(len), chunk;
	struct xtx_log_cont c;

	for (i = 0; i < n; i++) {
		chunk = len - i * XTX_LOG_CONT_BYTES;
		if (chunk > XTX_LOG_CONT_BYTES)
			chunk = XTX_LOG_CONT_BYTES;
		memset(&c, 0, sizeof(c));
		c.seq = seq + 1 + i;
		memcpy(c.bytes, value + i * XTX_LOG_CONT_BYTES, chunk);
		memcpy(&l->ring[c.seq & (l->size - 1)], &c, sizeof(c));
	}
}

uint8_t udpd_txlog_append(struct udpd_txlog *l, struct xtx_op *op, uint32_t client_id,
			  const struct udpd_val *v)
{
	uint64_t tail = l->tail, packed = op->token;
	const uint8_t *value = udpd_val_bytes(v, op);
	struct xtx_log_ext ext = { .len = v->len, .txn = op->txn };
	bool big = v->len > XTX_VALUE_INLINE;
	struct xtx_log_entry *e;

	if (!udpd_txlog_has_room(l, v->len))
		return XTX_ST_LOG_FULL;
	e = &l->ring[tail & (l->size - 1)];
	e->seq = tail;
	e->txn = op->txn;
	e->key = op->key;
	e->version = op->version;
	e->client_id = client_id;
	e->table = op->table;
	e->vlen = big ? 0 : v->len;
	e->flags = ((op->flags & XTX_OPF_DELETE) ? XTX_LOGF_DELETE : 0) |
		   ((op->flags & XTX_OPF_LOG_LAST) ? XTX_LOGF_LAST : 0) |
		   ((op->flags & XTX_OPF_LOG_META) ? XTX_LOGF_META : 0) |
		   (big ? XTX_LOGF_EXT : 0);
	e->nreplicas = xtx_log_replicas_unpack(packed, e->replicas);
	e->nwrites = (op->flags & XTX_OPF_LOG_LAST) ?
		     (op->flags & XTX_OPF_LOG_COUNT_MASK) >> XTX_OPF_LOG_COUNT_SHIFT : 0;
	memset(e->value, 0, sizeof(e->value));
	if (big) {
		memcpy(e->value, &ext, sizeof(ext));
		append_conts(l, tail, value, v->len);
	} else {
		memcpy(e->value, op->value, XTX_VALUE_INLINE);
	}
	/* publish: the entries' stores are ordered before the tail that exposes them */
	__atomic_store_n(&l->tail, tail + entries_for(v->len), __ATOMIC_RELEASE);
	op->version = tail;
	return XTX_ST_OK;
}

/*
 * Writes ring l's entries past what its segment holds; they stay in the
 * ring (head does not move) until a sync makes them durable.
 */
static void write_ring(struct udpd_txlog_drain *d, unsigned int i)
{
	struct udpd_txlog *l = d->rings[i];
	struct xtx_logw *w = &d->w[i];
	uint64_t tail = __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE), next = w->next_seq, n;
	int err;

	while (next < tail) {
		/* up to the ring's end: the slots are contiguous there */
		n = l->size - (next & (l->size - 1));
		if (n > tail - next)
			n = tail - next;
		err = xtx_logw_append(w, &l->ring[next & (l->size - 1)], n);
		if (err) {
			/* ENOSPC and friends: entries stay, appends answer LOG_FULL, retried */
			if (!d->write_errors++ || xtx_log_level >= XTX_LOG_DEBUG)
				pr_warn("Error: log: writing thread %u's segment: %s (retrying)\n",
					i, strerror(-err));
			return;
		}
		next = w->next_seq;
	}
}

/* Syncs every written segment, then frees the synced entries for the workers. */
static void sync_and_release(struct udpd_txlog_drain *d)
{
	unsigned int i;
	int err;

	for (i = 0; i < d->n; i++) {
		err = xtx_logw_sync(&d->w[i]);
		if (err) {
			/* the kernel may have dropped the dirty pages: never release past them */
			pr_warn("Error: log: syncing thread %u's segment: %s; the log stops "
				"draining\n", i, strerror(-err));
			d->failed = err;
			return;
		}
	}
	for (i = 0; i < d->n; i++)
		__atomic_store_n(&d->rings[i]->head, d->w[i].next_seq, __ATOMIC_RELEASE);
}

static bool any_pending(struct udpd_txlog_drain *d)
{
	unsigned int i;

	for (i = 0; i < d->n; i++)
		if (d->w[i].next_seq != d->rings[i]->head)
			return true;
	return false;
}

/* One pass: write what the rings hold, and sync and release when due (or forced). */
static void drain_pass(struct udpd_txlog_drain *d, bool force)
{
	unsigned int i;
	uint64_t now;

	if (!d->dir) {
		for (i = 0; i < d->n; i++)
			__atomic_store_n(&d->rings[i]->head,
					 __atomic_load_n(&d->rings[i]->tail, __ATOMIC_ACQUIRE),
					 __ATOMIC_RELEASE);
		return;
	}
	if (d->failed)
		return;
	for (i = 0; i < d->n; i++)
		write_ring(d, i);
	now = xtx_now_ns();
	/* group commit: one fdatasync per segment covers everything written since the last */
	if (any_pending(d) && (force || now - d->last_sync >= d->sync_ns)) {
		d->last_sync = now;
		sync_and_release(d);
	}
}

/* Sleeps until deadline_ns (xtx_now_ns()) or until told to stop. */
static void drain_wait(struct udpd_txlog_drain *d, uint64_t deadline_ns)
{
	struct timespec ts = { .tv_sec = deadline_ns / 1000000000ull,
			       .tv_nsec = deadline_ns % 1000000000ull };

	pthread_mutex_lock(&d->mu);
	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE))
		if (pthread_cond_timedwait(&d->cv, &d->mu, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&d->mu);
}

/*
 * As xtxd's drain: one pass per sync period, so each wake writes and
 * syncs once; an entry waits at most a period, busy or idle.
 */
static void *drain_thread(void *arg)
{
	struct udpd_txlog_drain *d = arg;
	uint64_t period = d->sync_ns > PERIOD_MIN_NS ? d->sync_ns : PERIOD_MIN_NS, now, wake;

	pthread_setname_np(pthread_self(), "udpd-logdrain");
	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		drain_pass(d, false);
		now = xtx_now_ns();
		wake = now + period;
		if (d->dir && !d->failed && any_pending(d) && d->last_sync + d->sync_ns < wake)
			wake = d->last_sync + d->sync_ns;
		if (wake > now)
			drain_wait(d, wake);
	}
	/* the workers have stopped: what they appended is all there is */
	drain_pass(d, true);
	return NULL;
}

/* Creates and locks the data directory: two servers appending to one segment would mix. */
static int open_dir(struct udpd_txlog_drain *d)
{
	int err = xtx_mkdirs(d->dir, 0700);

	if (err) {
		fprintf(stderr, "Error: --data-dir %s: %s\n", d->dir, strerror(-err));
		return err;
	}
	d->dirfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->dirfd < 0) {
		err = -errno;
		fprintf(stderr, "Error: --data-dir %s: %s\n", d->dir, strerror(errno));
		return err;
	}
	d->lockfd = openat(d->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (d->lockfd < 0 || flock(d->lockfd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		fprintf(stderr, "Error: --data-dir %s: %s\n", d->dir,
			errno == EWOULDBLOCK ? "another server logs into it" : strerror(errno));
		return err;
	}
	return 0;
}

static void drain_free(struct udpd_txlog_drain *d)
{
	unsigned int i;

	for (i = 0; d->w && i < d->n; i++)
		xtx_logw_close(&d->w[i]);
	free(d->w);
	if (d->lockfd >= 0)
		close(d->lockfd);
	if (d->dirfd >= 0)
		close(d->dirfd);
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

struct udpd_txlog_drain *udpd_txlog_drain_start(struct udpd_txlog **rings, unsigned int n,
						const char *dir, uint64_t sync_ns)
{
	struct udpd_txlog_drain *d = calloc(1, sizeof(*d));
	struct xtx_log_epoch ep = {};
	pthread_condattr_t ca;
	unsigned int i;
	int err;

	if (!d)
		return NULL;
	d->rings = rings;
	d->n = n;
	d->dir = dir;
	d->sync_ns = sync_ns;
	d->dirfd = d->lockfd = -1;
	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (dir) {
		if (open_dir(d))
			goto fail;
		/*
		 * The rings start at seq 0 in every run: a new incarnation, so each
		 * run's segments begin afresh after the last run's (never resumed).
		 */
		err = xtx_log_epoch_boot_id(ep.boot_id);
		if (err) {
			fprintf(stderr, "Error: log: reading the boot id: %s\n", strerror(-err));
			goto fail;
		}
		if (getrandom(&ep.map_id, sizeof(ep.map_id), 0) != sizeof(ep.map_id))
			ep.map_id = getpid() ^ (uint32_t)xtx_now_ns();
		d->w = calloc(n, sizeof(*d->w));
		if (!d->w)
			goto fail;
		for (i = 0; i < n; i++) {
			err = xtx_logw_open(&d->w[i], d->dirfd, i, &ep, 0, 0, XTX_LOGFILE_SEG_MAX);
			if (err) {
				d->n = i;
				goto fail;
			}
		}
	}
	err = pthread_create(&d->thread, NULL, drain_thread, d);
	if (err) {
		fprintf(stderr, "Error: starting the log drain: %s\n", strerror(err));
		goto fail;
	}
	if (dir)
		pr_info("log: %u thread(s) drained to %s (sync every %llu us)\n", n, dir,
			(unsigned long long)(sync_ns / 1000));
	return d;
fail:
	drain_free(d);
	return NULL;
}

void udpd_txlog_drain_stop(struct udpd_txlog_drain *d)
{
	uint64_t lost = 0;
	unsigned int i;

	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->thread, NULL);
	for (i = 0; i < d->n; i++)
		lost += d->rings[i]->tail - d->rings[i]->head;
	if (lost)
		pr_warn("log: %llu entries never reached the disk\n", (unsigned long long)lost);
	drain_free(d);
}
