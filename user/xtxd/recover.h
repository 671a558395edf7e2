/* SPDX-License-Identifier: GPL-2.0-only */
/* Recovery at start: the KV store rebuilt from the newest snapshot and the logs after it. */
#ifndef XTXD_RECOVER_H
#define XTXD_RECOVER_H

#include <stdbool.h>
#include "target.h"

struct xtxd_ovf;

/*
 * Makes the freshly loaded program drop every request (the fault
 * injection knob at 100%) until release, so no client is answered from a
 * store that is still being rebuilt; release puts the old setting back.
 * 0 or a negative errno after printing why.
 */
int xtxd_recover_hold(const struct xtx_target *t);
void xtxd_recover_release(const struct xtx_target *t);

/*
 * Rebuilds the store of freshly created maps from data directory dir:
 * the newest snapshot into the kernel buckets and the overflow store (as
 * bulk load places keys, at their recorded versions), then every log
 * record after the snapshot's positions, per key the highest version
 * winning (a delete removes the key and raises its bucket's floor).  A
 * torn last record of a CPU's log is cut off the file, never replayed;
 * damage anywhere else is an error: better not to start than to serve a
 * wrong store.  fresh: start empty instead, moving what dir holds aside to
 * dir/fresh-<time>/.  0 or a negative errno after printing why.  Call it
 * before the log drain starts; the caller need not be an RCU thread.
 */
int xtxd_recover(const struct xtx_target *t, struct xtxd_ovf *store, const char *dir, bool fresh);

#endif /* XTXD_RECOVER_H */
