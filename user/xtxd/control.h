/* SPDX-License-Identifier: GPL-2.0-only */
/* The control channel: a unix socket where xtxctl asks xtxd for what only it knows. */
#ifndef XTXD_CONTROL_H
#define XTXD_CONTROL_H

#include "target.h"
#include "sizing.h"

/* Listens on XTX_RUN_DIR/<netns>-<iface>.sock; 0 or a negative errno after printing why. */
int xtxd_control_start(const struct xtx_target *t);
void xtxd_control_stop(void);
/* What `stats` reports of the sizes (--capacity); before start. */
void xtxd_control_set_sizing(const struct xtxd_sizing *z);

#endif /* XTXD_CONTROL_H */
