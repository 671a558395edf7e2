/* SPDX-License-Identifier: GPL-2.0-only */
/* Every whole write of a data directory's log segments, in order, for the readers that look for some. */
#ifndef XTX_LOGWALK_H
#define XTX_LOGWALK_H

#include "logrec.h"

/*
 * Calls fn for each write of every segment in dirfd, each CPU's segments
 * in their order (a big write may go on in the CPU's next segment, never
 * in another CPU's).  Damage is skipped (recovery is the one to refuse
 * it), and a torn end stops a segment's walk: the drain may be appending
 * there.  A nonzero return of fn ends the walk with it; else 0 or a
 * negative errno.
 */
int xtx_logwalk(int dirfd, int (*fn)(const struct xtx_log_write *w, void *arg), void *arg);

#endif /* XTX_LOGWALK_H */
