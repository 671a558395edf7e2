/* SPDX-License-Identifier: GPL-2.0-only */
/* The log drain: a thread that moves XDP's per-CPU log entries to disk and advances head. */
#ifndef XTXD_LOGDRAIN_H
#define XTXD_LOGDRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xtx/log.h>
#include "logfile.h"
#include "target.h"

#define XTXD_LOG_SYNC_DEFAULT_NS	XTX_LOGFILE_SYNC_DEFAULT_NS

#define XTXD_LOG_STALL_DEFAULT_NS	(10ull * 1000 * 1000 * 1000)
#define XTXD_LOG_STALL_MIN_NS		(1000ull * 1000 * 1000)

struct xtxd_logdrain_opts {
	const char *data_dir;	/* NULL: xtx_logfile_default_dir() */
	uint64_t sync_ns;	/* fdatasync at most this often (0: after every pass) */
	uint64_t seg_max;	/* rotate segments at this size (0: XTX_LOGFILE_SEG_MAX) */
	/*
	 * The drain fails when it has not written and synced what waits in
	 * the ring for this long (a hung disk, writes failing again and
	 * again); 0: XTXD_LOG_STALL_DEFAULT_NS.
	 */
	uint64_t stall_ns;
};

/* The upper bounds (us) of the sync-time histogram's buckets, +Inf apart. */
#define XTXD_SYNC_BUCKETS	10
extern const uint64_t xtxd_sync_bucket_us[XTXD_SYNC_BUCKETS];

struct xtxd_logdrain_stats {
	uint64_t appended;	/* entries XDP appended while we ran (tail moved) */
	uint64_t drained;	/* entries durable on disk and released (head moved) */
	uint64_t resumed;	/* entries a previous xtxd wrote but had not released */
	uint64_t bytes;		/* record bytes written */
	uint64_t fsyncs;	/* fdatasync calls on segments */
	uint64_t lag;		/* tail - head over all CPUs at the last pass */
	uint64_t max_lag;	/* the fullest any CPU's log was seen (LOG_FULL at the ring size) */
	uint64_t sync_max_ns;	/* the longest sync round */
	uint64_t write_errors;	/* failed writes, retried */
	uint64_t failed;	/* 1 once the drain failed (fail-stop) */
	uint64_t ring;		/* entries per CPU */
	uint64_t cpus;
	uint64_t sync_rounds;	/* sync rounds: an fdatasync of every segment written to */
	uint64_t sync_sum_ns;	/* their time, summed */
	/* rounds that took at most xtxd_sync_bucket_us[i] (cumulative, Prometheus's le) */
	uint64_t sync_le[XTXD_SYNC_BUCKETS];
};

/*
 * Maps the pinned logs of t, recovers the data directory (cutting torn
 * tails, resuming after what a previous xtxd already wrote) and starts
 * the thread.  0 or a negative errno after printing why.
 */
int xtxd_logdrain_start(const struct xtx_target *t, const struct xtxd_logdrain_opts *o);
/*
 * Drains what the logs hold, syncs, advances head and joins the thread;
 * safe when never started.  Call it once XDP appends nothing more (its
 * requests held, or detached) when the maps are going away, so the last
 * appends reach the disk too.  Returns the entries left in the rings, not
 * on disk: nonzero when the drain failed, and then the maps must stay.
 */
uint64_t xtxd_logdrain_stop(void);
/*
 * A failed drain is fail-stop: after a failed fdatasync nothing written
 * since the last good one can be trusted, and a drain that makes no
 * progress for stall_ns (a hung disk) will not make any soon, while XDP
 * goes on acknowledging appends into the ring.  fn is called once, on the
 * drain's thread or its watchdog's, the first time either happens; it
 * must make the server stop serving and end xtxd with the maps left as
 * they are (the ring holds every acknowledged entry not on disk).
 * Set before start.
 */
typedef void (*xtxd_logdrain_fail_fn)(int err, const char *why);
void xtxd_logdrain_set_on_fail(xtxd_logdrain_fail_fn fn);
/* The drain's failure (a negative errno), or 0. */
int xtxd_logdrain_failed(void);
/*
 * Called by the drain thread with each batch of entries it copies out of
 * the ring, before they are written; must not block.  Set before start.
 */
typedef void (*xtxd_logdrain_observer)(const struct xtx_log_entry *e, size_t n);
void xtxd_logdrain_set_observer(xtxd_logdrain_observer fn);
/*
 * Waits until every entry appended before the call has been copied out of
 * the ring (and shown to the observer), on disk or not: two full passes
 * that began after it.  0, -ETIMEDOUT, or the drain's failure.
 */
int xtxd_logdrain_seen(uint64_t timeout_ns);
/*
 * Sets (or clears) every CPU cursor's fenced flag, which makes LOG_APPEND
 * look up the fence map; 0 or -ENODEV when the drain is not running.
 */
int xtxd_logdrain_arm_fence(bool on);
/*
 * Waits until every entry appended before the call is on disk and
 * released (head passed it).  0, -ETIMEDOUT, or the drain's failure.
 */
int xtxd_logdrain_flush(uint64_t timeout_ns);
/* The counters so far (zeros when not running); safe from any thread. */
void xtxd_logdrain_get_stats(struct xtxd_logdrain_stats *s);

#endif /* XTXD_LOGDRAIN_H */
