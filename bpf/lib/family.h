/* SPDX-License-Identifier: GPL-2.0-only */
/* One concurrency-control family per table at a time: locking (OCC, 2PL) or HADES. */
#ifndef XTX_BPF_FAMILY_H
#define XTX_BPF_FAMILY_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "config.h"
#include "maps.h"
#include "stats.h"
#include "pktctx.h"
#include "pins.h"
#include "hades_slot.h"

/*
 * HADES transactions neither take nor look at locks, and OCC/2PL ones
 * neither stage nor look at HADES filters: on the same keys each would
 * commit over the other's checks.  So a table serves one family at a
 * time: the first transactional op binds it, and the other family is
 * refused (XTX_ST_MIXED, nothing done) until the table has seen no op of
 * the bound one for twice the longer lease, by when every transaction of
 * that family has lost its locks and slots, and it holds nothing the
 * lease does not take back: no LOGGED lock (counted, pins.h) and no HADES
 * slot with staged writes on it (looked for when a switch is due).  Such
 * state counts as a use: the next look is another idle period away.  A
 * server whose locks never expire (lease 0) never switches.
 *
 * Only ops that start or extend a transaction's claim are admitted: a
 * commit, HADES validation or abort belongs to a transaction already
 * decided (or ending) under the family it was admitted by, and pinned
 * state keeps the table from switching under it, so refusing them could
 * only wedge a committed transaction.  Plain ops belong to neither.
 */

/* The word's low bits: the family; the rest: the last use, in ns. */
#define XTX_FAM_MASK		3ull
#define XTX_FAM_LOCKING		1
#define XTX_FAM_HADES		2
/* The last use is rewritten at most this often: the word stays shared, read-mostly. */
#define XTX_FAM_REFRESH_NS	(1000 * 1000)

/* An op's family, 0 for ops admitted by neither. */
static __always_inline __u32 xtx_op_family(__u8 opcode)
{
	switch (opcode) {
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
	case XTX_OP_OCC_VALIDATE:
	case XTX_OP_READ:
	case XTX_OP_LOG_APPEND:
		return XTX_FAM_LOCKING;
	case XTX_OP_HREAD:
	case XTX_OP_HWRITE:
	case XTX_OP_HINTEND:
		return XTX_FAM_HADES;
	default:
		return 0;
	}
}

/*
 * Whether HADES slot idx holds writes staged on table that no lease takes
 * back: committing ones always; active or squashed ones until their lease
 * ran out (a late intend-to-commit of another table could still commit
 * them), and then the slot is taken back here, as a claim would.
 * Global: verified once.
 */
__noinline int xtx_hades_slot_pins(__u32 idx, __u32 table, __u64 now)
{
	struct xtx_hades_slot *s = xtx_hades_slot(idx);
	__u64 c;
	__u32 n, j, st;
	bool on = false;

	if (!s)
		return 0;
	c = XTX_READ_ONCE64(s->ctl);
	st = xtx_hades_state(c);
	n = *(volatile __u32 *)&s->nstaged;
	if (st == XTX_HS_FREE || !n)
		return 0;
	for (j = 0; j < XTX_HADES_STAGE_MAX; j++)
		if (j < n && s->staged[j].table == table)
			on = true;
	if (!on)
		return 0;
	if (st == XTX_HS_COMMITTING || !xtx_hades_lease_ns ||
	    !xtx_lease_over(now, XTX_READ_ONCE64(s->touched_ns), xtx_hades_lease_ns))
		return 1;
	xtx_hades_release_at(s, idx, c, XTX_HO_RECLAIMED);
	xtx_count(XTX_CTR_HADES_RECLAIM);
	return 0;
}

struct xtx_fam_scan {
	struct xtx_hades_registry *reg;
	__u64 now;
	__u32 table;
	__u32 pinned;
};

static long xtx_fam_scan_word(__u32 w, void *arg)
{
	struct xtx_fam_scan *sc = arg;
	__u64 used;
	__u32 b;

	if (w >= XTX_HADES_SLOTS_MAX / 64)
		return 1;
	used = sc->reg->used[w];
	if (!used)
		return 0;
	/* the word stays as read: a mask cleared bit by bit would split every iteration's state */
	for (b = 0; b < 64; b++) {
		if (!((used >> b) & 1))
			continue;
		if (xtx_hades_slot_pins(w * 64 + b, sc->table, sc->now)) {
			sc->pinned = 1;
			return 1;
		}
	}
	return 0;
}

/* Whether table holds state of family fam that no lease takes back. */
static __always_inline bool xtx_family_pinned(__u32 table, __u32 fam, __u64 now)
{
	struct xtx_fam_scan sc = { .now = now, .table = table };

	if (fam == XTX_FAM_LOCKING)
		return xtx_pins_held(table);
	sc.reg = xtx_hades_registry();
	if (!sc.reg)
		return false;
	bpf_loop((xtx_hades_slots + 63) / 64, xtx_fam_scan_word, &sc, 0);
	return sc.pinned;
}

/* XTX_ST_OK when the op's table serves its family now (binding or switching it), else MIXED. */
static __noinline int xtx_family_admit(__u32 table, __u32 fam, __u64 now, __u64 lock_lease_ns)
{
	__u64 *w = bpf_map_lookup_elem(&xtx_table_family, &table), old, idle;
	__u32 bound;

	if (!w)
		return XTX_ST_BAD_ARG;
	old = *(volatile __u64 *)w;
	bound = old & XTX_FAM_MASK;
	if (bound == fam) {
		if (xtx_lease_over(now, old & ~XTX_FAM_MASK, XTX_FAM_REFRESH_NS))
			__sync_val_compare_and_swap(w, old, (now & ~XTX_FAM_MASK) | fam);
		return XTX_ST_OK;
	}
	if (bound) {
		idle = 2 * (lock_lease_ns > xtx_hades_lease_ns ? lock_lease_ns : xtx_hades_lease_ns);
		if (!lock_lease_ns || !xtx_lease_over(now, old & ~XTX_FAM_MASK, idle))
			return XTX_ST_MIXED;
		if (xtx_family_pinned(table, bound, now)) {
			xtx_count(XTX_CTR_FAM_PINNED);
			__sync_val_compare_and_swap(w, old, (now & ~XTX_FAM_MASK) | bound);
			return XTX_ST_MIXED;
		}
	}
	if (__sync_val_compare_and_swap(w, old, (now & ~XTX_FAM_MASK) | fam) == old)
		return XTX_ST_OK;
	/* another CPU bound it meanwhile: to this family or the other */
	old = *(volatile __u64 *)w;
	return (old & XTX_FAM_MASK) == fam ? XTX_ST_OK : XTX_ST_MIXED;
}

#endif /* XTX_BPF_FAMILY_H */
