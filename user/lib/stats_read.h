/* SPDX-License-Identifier: GPL-2.0-only */
/* Sums the per-CPU statistics map into one struct xtx_stats. */
#ifndef XTX_STATS_READ_H
#define XTX_STATS_READ_H

#include <xtx/maps.h>

/* Returns 0 or a negative errno. */
int xtx_stats_sum(int map_fd, struct xtx_stats *out);

#endif /* XTX_STATS_READ_H */
