/* SPDX-License-Identifier: GPL-2.0-only */
/* Every live key of the KV store: the kernel cache and the overflow store, merged. */
#ifndef XTXD_DUMP_H
#define XTXD_DUMP_H

#include <stdbool.h>
#include "ctl_out.h"
#include "overflow.h"
#include "target.h"

/*
 * Writes one line per live key, sorted by (table, key), of one table
 * (table >= 0) or all (-1):
 *   text:  table=T key=K version=V vlen=N value=HEX
 *   json:  {"table":T,"key":K,"version":V,"vlen":N,"value":"HEX","where":"kernel"}
 * A kernel slot that is VALID wins over the store's copy when DIRTY or not
 * older; a kernel tombstone hides the store's copy.  Both sides keep
 * changing while they are read, so the result is a best-effort snapshot.
 * Everything is read before the first line is written: on error nothing
 * was written, and it returns a negative errno with *why naming the step.
 * The caller is a registered RCU thread.
 */
int xtxd_dump(const struct xtx_target *t, struct xtxd_ovf *s, int table, bool json,
	      struct xtxd_out *out, const char **why);

/*
 * The same merge, every live key of every table handed to fn in (table,
 * key) order (value zero past vlen); stops at fn's first nonzero return
 * and returns it.  The caller is a registered RCU thread.
 */
int xtxd_dump_each(const struct xtx_target *t, struct xtxd_ovf *s,
		   int (*fn)(const struct xtxd_ovf_item *it, void *arg), void *arg,
		   const char **why);

#endif /* XTXD_DUMP_H */
