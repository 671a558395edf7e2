/* SPDX-License-Identifier: GPL-2.0-only */
/* One concurrency-control family per table at a time: locking (OCC, 2PL) or HADES. */
#ifndef XTX_BPF_FAMILY_H
#define XTX_BPF_FAMILY_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "config.h"
#include "maps.h"

/*
 * HADES transactions neither take nor look at locks, and OCC/2PL ones
 * neither stage nor look at HADES filters: on the same keys each would
 * commit over the other's checks.  So a table serves one family at a
 * time: the first transactional op binds it, and the other family is
 * refused (XTX_ST_MIXED, nothing done) until the table has seen no op of
 * the bound one for twice the longer lease, by when every transaction of
 * that family has lost its locks and slots.  A server whose locks never
 * expire (lease 0) never switches.  Plain ops belong to neither.
 */

/* The word's low bits: the family; the rest: the last use, in ns. */
#define XTX_FAM_MASK		3ull
#define XTX_FAM_LOCKING		1
#define XTX_FAM_HADES		2
/* The last use is rewritten at most this often: the word stays shared, read-mostly. */
#define XTX_FAM_REFRESH_NS	(1000 * 1000)

/* An op's family, 0 for ops of neither (plain ops, releases, aborts). */
static __always_inline __u32 xtx_op_family(__u8 opcode)
{
	switch (opcode) {
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
	case XTX_OP_OCC_VALIDATE:
	case XTX_OP_READ ... XTX_OP_LOG_APPEND:
		return XTX_FAM_LOCKING;
	case XTX_OP_HREAD ... XTX_OP_HVALIDATE:
		return XTX_FAM_HADES;
	default:
		return 0;
	}
}

/* XTX_ST_OK when the op's table serves its family now (binding or switching it), else MIXED. */
static __noinline int xtx_family_admit(__u32 table, __u32 fam, __u64 now, __u64 lock_lease_ns)
{
	__u64 *w = bpf_map_lookup_elem(&xtx_table_family, &table), old, idle;

	if (!w)
		return XTX_ST_BAD_ARG;
	old = *(volatile __u64 *)w;
	if ((old & XTX_FAM_MASK) == fam) {
		if (now - (old & ~XTX_FAM_MASK) > XTX_FAM_REFRESH_NS)
			__sync_val_compare_and_swap(w, old, (now & ~XTX_FAM_MASK) | fam);
		return XTX_ST_OK;
	}
	if (old & XTX_FAM_MASK) {
		idle = 2 * (lock_lease_ns > xtx_hades_lease_ns ? lock_lease_ns : xtx_hades_lease_ns);
		if (!lock_lease_ns || now - (old & ~XTX_FAM_MASK) < idle)
			return XTX_ST_MIXED;
	}
	if (__sync_val_compare_and_swap(w, old, (now & ~XTX_FAM_MASK) | fam) == old)
		return XTX_ST_OK;
	/* another CPU bound it meanwhile: to this family or the other */
	old = *(volatile __u64 *)w;
	return (old & XTX_FAM_MASK) == fam ? XTX_ST_OK : XTX_ST_MIXED;
}

#endif /* XTX_BPF_FAMILY_H */
