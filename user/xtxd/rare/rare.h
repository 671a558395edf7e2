/* SPDX-License-Identifier: GPL-2.0-only */
/* The rare path: threads that complete the ops XDP deferred, against the overflow store. */
#ifndef XTXD_RARE_H
#define XTXD_RARE_H

#include <stdint.h>
#include "rare_exec.h"
#include "target.h"

#define XTXD_OVERFLOW_MAX_DEFAULT	(4u << 20)
#define XTXD_OVERFLOW_MAX_LIMIT		(1ull << 32)
#define XTXD_RARE_THREADS_MAX		64

struct xtxd_rare_opts {
	uint16_t port;		/* the xtx UDP port: packets XDP passed arrive there */
	uint32_t threads;
	uint64_t overflow_max;	/* keys the overflow store may hold */
	int cpus_set;		/* unused for now: threads inherit xtxd's --cpus */
	/* durable before the reply: struct xtxd_exec's log_writes */
	int (*log_writes)(struct xtx_log_entry *e, size_t n);
};

/* Opens the sockets and starts the threads; 0 or a negative errno after printing why. */
int xtxd_rare_start(const struct xtx_target *t, const struct xtxd_rare_opts *o);
/* Stops and joins the threads, closes the sockets, frees the store; safe when never started. */
void xtxd_rare_stop(void);

/*
 * For the control channel, between start and stop (NULL otherwise): the
 * overflow store and the counters.  Only xtxd_rare_stop frees them, and
 * xtxd stops the control channel first.
 */
struct xtxd_ovf *xtxd_rare_store(void);
/*
 * The big writes an earlier xtxd took and never answered are gone with it:
 * their buckets' big_token (include/xtx/kv.h) would keep XDP from the value
 * store this one rebuilt from its recovered store.  Only while requests are
 * held (log/recover.h), when no op holds a bucket.
 */
void xtxd_rare_forget_big_writes(void);
const struct xtxd_rare_stats *xtxd_rare_stats(void);

#endif /* XTXD_RARE_H */
