/* SPDX-License-Identifier: GPL-2.0-only */
/* xtxctl top: a live view of one server's rates and occupancy, refreshed in place. */
#ifndef XTXCTL_TOP_H
#define XTXCTL_TOP_H

#include <stdint.h>
#include "target.h"

/* Refreshes every interval_ms, count times (0: until interrupted); 0 or 1 after saying why. */
int xtxctl_top(const struct xtx_target *t, unsigned int interval_ms, unsigned int count);

#endif /* XTXCTL_TOP_H */
