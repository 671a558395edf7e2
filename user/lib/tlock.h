/* SPDX-License-Identifier: GPL-2.0-only */
/* One xtxd per interface: an flock on the interface's pin directory, held while it serves. */
#ifndef XTX_TLOCK_H
#define XTX_TLOCK_H

#include <stdbool.h>
#include "target.h"

/*
 * Creates t's pin directory if needed and locks it (flock, exclusive, never
 * waiting), for as long as this process lives or until xtx_target_unlock.
 * The kernel drops the lock when its holder dies, so a crashed xtxd leaves
 * none behind.  0, or -EBUSY with *holder the pid that holds it (0 when
 * unknown), or another negative errno.
 */
int xtx_target_lock(const struct xtx_target *t, int *holder);
/* Removes t's (empty) pin directory while still holding it, then unlocks. */
void xtx_target_unlock(const struct xtx_target *t);
/* Whether this process holds t's lock. */
bool xtx_target_locked_here(const struct xtx_target *t);
/* The pid holding t's lock (from /proc/locks), 0 if none, or a negative errno. */
int xtx_target_lock_holder(const struct xtx_target *t);

#endif /* XTX_TLOCK_H */
