/* SPDX-License-Identifier: GPL-2.0-only */
/* Recovery at start: the KV store rebuilt from the newest snapshot and the logs after it. */
#ifndef XTXD_RECOVER_H
#define XTXD_RECOVER_H

#include <stdbool.h>
#include "target.h"

struct xtxd_ovf;

/*
 * Makes the program drop every request (the fault injection knob at 100%)
 * until release, so no client is answered from a store that is still being
 * rebuilt.  Call it before the program is loaded: when nothing is pinned
 * yet it pins a runtime map with the hold set, which the load reuses, so
 * the program holds from the moment it is attached.  Release puts the old
 * setting back; abandon undoes the hold after a failed start (removing the
 * pin it made if the load never took it over).  0 or a negative errno
 * after printing why.
 */
int xtxd_recover_hold(const struct xtx_target *t);
void xtxd_recover_hold_abandon(const struct xtx_target *t);
void xtxd_recover_release(const struct xtx_target *t);
/*
 * For a fail-stop: opens the runtime map now (prepare), so that later
 * xtxd_hold_requests() can make XDP drop every request, the hold a start
 * sets, without allocating anything; the next xtxd takes it for its own
 * and lets requests in once it serves.  0 or a negative errno.
 */
int xtxd_hold_prepare(const struct xtx_target *t);
int xtxd_hold_requests(void);

/*
 * Rebuilds the store of freshly created maps from data directory dir:
 * the newest snapshot into the kernel buckets and the overflow store (as
 * bulk load places keys, at their recorded versions), then every log
 * record after the snapshot's positions that is decided (see recover.c:
 * one replica, or the decisions file, FaRM's rule), per key the highest version
 * winning (a delete removes the key and raises its bucket's floor).  A
 * torn last record of a CPU's log is cut off the file, never replayed;
 * damage anywhere else is an error: better not to start than to serve a
 * wrong store.  fresh: start empty instead, moving what dir holds aside to
 * dir/fresh-<time>/.  0 or a negative errno after printing why.  Call it
 * before the log drain starts; the caller need not be an RCU thread.
 */
int xtxd_recover(const struct xtx_target *t, struct xtxd_ovf *store, const char *dir, bool fresh);

/*
 * After SIGKILL the new xtxd adopts the pinned program and its kernel
 * buckets, but the overflow store died with the old process: rebuilds it
 * from the data directory (snapshot and logs, decided as above) with
 * every key the kernel cache does not hold (live or tombstone) whose
 * bucket filter says the store held it.  Call it with requests held and
 * after the log drain has written out what the ring still held
 * (xtxd_logdrain_flush).  0 or a negative errno after printing why.
 */
int xtxd_recover_adopted(const struct xtx_target *t, struct xtxd_ovf *store, const char *dir);

#endif /* XTXD_RECOVER_H */
