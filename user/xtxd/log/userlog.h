/* SPDX-License-Identifier: GPL-2.0-only */
/* xtxd's own log: the writes xtxd applies itself, durable before anyone hears of them. */
#ifndef XTXD_USERLOG_H
#define XTXD_USERLOG_H

#include <stddef.h>
#include <stdint.h>
#include <xtx/log.h>

/*
 * XDP logs what it writes in its per-CPU rings; some writes never pass
 * there: plain INSERT/UPDATE/DELETE the rare path runs against the
 * overflow store, and HADES writes xtxd's resolver installs.  They go to
 * segments of this pseudo-CPU in the same data directory and format,
 * marked decided, so recovery replays them with the rest (the highest
 * version of a key wins) and a SIGKILL loses none that was acknowledged.
 */
#define XTXD_USERLOG_CPU	65535u

/* Opens the log in dir (created by the drain); 0 or a negative errno after printing why. */
int xtxd_userlog_open(const char *dir);
/* Whether it is open: without it (unit tests, no data directory) nothing is logged. */
int xtxd_userlog_enabled(void);
/*
 * The log will be opened: until it is, appends answer -EAGAIN and apply
 * nothing.  xtxd starts threads that write (the resolver) before the drain
 * and this log open; a write applied unlogged in between would be lost by
 * a SIGKILL.
 */
void xtxd_userlog_expect(void);
/*
 * Appends e[0..n) as decided single writes (seq, flags, replicas filled in
 * here) and makes them durable before returning.  A value over
 * XTX_VALUE_INLINE is its head entry followed by its continuations, as
 * xtx_logrec_encode() makes them (their seqs are filled in too).
 * Thread-safe.  0, 0 when not open, or a negative errno: then nothing may
 * be acknowledged (-EINVAL: the last write's continuations are missing).
 */
int xtxd_userlog_append(struct xtx_log_entry *e, size_t n);
/*
 * The same, then apply(arg) while no snapshot can rotate the log: a write
 * logged before the rotation is in the store the snapshot dumps.  Returns
 * the append's error (apply not called), else apply's result.
 */
int xtxd_userlog_append_then(struct xtx_log_entry *e, size_t n, int (*apply)(void *arg),
			     void *arg);
/*
 * For a snapshot about to be taken: closes the current segment and
 * returns in *covered the first segment number the snapshot does not
 * cover (every write below it is in the store the snapshot dumps).
 * 0 when not open (*covered 0), or a negative errno.
 */
int xtxd_userlog_rotate(uint32_t *covered);
void xtxd_userlog_close(void);

#endif /* XTXD_USERLOG_H */
