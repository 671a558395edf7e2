/* SPDX-License-Identifier: GPL-2.0-only */
/* Counts of LOGGED lock holds per table: state no lease takes back pins a table's family. */
#ifndef XTX_BPF_PINS_H
#define XTX_BPF_PINS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/maps.h>
#include "config.h"
#include "maps.h"

/*
 * Adds delta to this CPU's count of every table in mask (bit t: table t).
 * Called after the slot's spin word is let go: a pin is counted a moment
 * after the slot shows it, and uncounted a moment after it went, both
 * while the table's family cannot switch (family.h says why).  Atomic
 * although the row is this CPU's: a test run of the program may share a
 * CPU with another.  Global: its loop is verified once, not per caller.
 */
__noinline int xtx_pins_add(__u32 mask, __s64 delta)
{
	__u32 row = bpf_get_smp_processor_id() & (XTX_PIN_CPUS_MAX - 1), t, idx;
	__s64 *n;

	/* the mask stays as given: one cleared bit by bit would split every iteration's state */
	for (t = 0; t < XTX_MAX_TABLES; t++) {
		if (!((mask >> t) & 1))
			continue;
		idx = row * XTX_MAX_TABLES + t;
		n = bpf_map_lookup_elem(&xtx_fam_pins, &idx);
		if (n)
			__sync_fetch_and_add(n, delta);
	}
	return 0;
}

/*
 * Whether table has LOGGED holds: the sum of its column, every CPU's row
 * and user space's.  Read only when the table's family is about to
 * switch, after it saw no op of its family for twice the lease: no new
 * pin of it can appear meanwhile, so a stale read of a row can only be
 * one from before a decrement, and the sum errs on the side of "pinned".
 * Global: its loop is verified once.
 */
__noinline int xtx_pins_held(__u32 table)
{
	__u32 c, idx, rows = xtx_nr_cpus < XTX_PIN_CPUS_MAX ? xtx_nr_cpus : XTX_PIN_CPUS_MAX;
	__s64 sum = 0, *n;

	table &= XTX_MAX_TABLES - 1;
	for (c = 0; c < XTX_PIN_CPUS_MAX; c++) {
		if (c >= rows)
			break;
		idx = c * XTX_MAX_TABLES + table;
		n = bpf_map_lookup_elem(&xtx_fam_pins, &idx);
		if (n)
			sum += *(volatile __s64 *)n;
	}
	idx = XTX_PIN_USER_ROW * XTX_MAX_TABLES + table;
	n = bpf_map_lookup_elem(&xtx_fam_pins, &idx);
	if (n)
		sum += *(volatile __s64 *)n;
	return sum > 0;
}

#endif /* XTX_BPF_PINS_H */
