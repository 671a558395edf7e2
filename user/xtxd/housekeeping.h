/* SPDX-License-Identifier: GPL-2.0-only */
/* xtxd's timed housekeeping: a snapshot every --snapshot-every, so logs stop growing. */
#ifndef XTXD_HOUSEKEEPING_H
#define XTXD_HOUSEKEEPING_H

#include <stdint.h>
#include "target.h"

struct xtxd_ovf;

/* Starts the thread when every_ns is nonzero; 0 or a negative errno after saying why. */
int xtxd_housekeeping_start(const struct xtx_target *t, struct xtxd_ovf *store, uint64_t every_ns);
/* Joins the thread; safe when never started. */
void xtxd_housekeeping_stop(void);
/* Snapshots the timer took so far. */
uint64_t xtxd_housekeeping_snapshots(void);

#endif /* XTXD_HOUSEKEEPING_H */
