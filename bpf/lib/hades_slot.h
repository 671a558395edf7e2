/* SPDX-License-Identifier: GPL-2.0-only */
/* HADES transaction slots: find, claim (CAS, bounded probing, lease reclaim), release. */
#ifndef XTX_BPF_HADES_SLOT_H
#define XTX_BPF_HADES_SLOT_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/hades.h>
#include "config.h"
#include "maps.h"
#include "stats.h"
#include "pktctx.h"
#include "hades_bf.h"

/* A transaction's slot as one op sees it: the tenure is (idx, ctl's generation). */
struct xtx_hades_ref {
	struct xtx_hades_slot *s;
	__u32 idx;
	__u32 status;		/* XTX_ST_OK when s is set, else the op's answer */
	__u64 ctl;
	__u32 outcome;		/* not found: how the txn ended here, XTX_HO_NONE if unknown */
};

static __always_inline __u32 xtx_hades_state(__u64 ctl)
{
	return ctl & XTX_HADES_CTL_STATE_MASK;
}

static __always_inline __u64 xtx_hades_gen(__u64 ctl)
{
	return ctl >> XTX_HADES_CTL_GEN_SHIFT;
}

static __always_inline struct xtx_hades_slot *xtx_hades_slot(__u32 idx)
{
	return bpf_map_lookup_elem(&xtx_hades, &idx);
}

static __always_inline __u32 xtx_hades_probe_idx(__u32 home, __u32 p)
{
	__u32 idx = home + p;

	return idx >= xtx_hades_slots ? idx - xtx_hades_slots : idx;
}

/*
 * Reads ctl for a slot owned by txn: owner, ctl, owner again, so the ctl
 * belongs to txn's tenure (a new tenant writes owner before ctl).
 */
static __always_inline bool xtx_hades_tenure(struct xtx_hades_slot *s, __u64 txn, __u64 *ctl)
{
	if (XTX_READ_ONCE64(s->owner) != txn)
		return false;
	*ctl = XTX_READ_ONCE64(s->ctl);
	return XTX_READ_ONCE64(s->owner) == txn;
}

/* Makes a slot txn's, with empty filters; the state goes ACTIVE last. */
static __always_inline void xtx_hades_init(struct xtx_hades_slot *s, __u32 idx, __u64 gen,
					   struct xtx_pkt_ctx *pc)
{
	xtx_hades_bf_clear(s);
	xtx_hades_exact_reset(idx);
	s->nstaged = 0;
	s->participants = 0;
	s->reg_pos = 0;
	s->flags = 0;
	s->touched_ns = xtx_now(pc);
	__sync_lock_test_and_set(&s->ctl, xtx_hades_ctl(gen + 1, XTX_HS_ACTIVE));
}

/*
 * Lease reclaim: an active or squashed slot its owner has not touched for
 * the lease is taken from it.  The CAS on ctl fails if the owner published
 * or released meanwhile; the old owner's later ops find no slot (SQUASHED).
 */
static __always_inline bool xtx_hades_reclaim(struct xtx_hades_slot *s, __u64 owner, __u64 txn,
					      struct xtx_pkt_ctx *pc)
{
	__u64 c = XTX_READ_ONCE64(s->ctl);
	__u32 st = xtx_hades_state(c);

	if (!xtx_hades_lease_ns || (st != XTX_HS_ACTIVE && st != XTX_HS_SQUASHED) ||
	    xtx_now(pc) - XTX_READ_ONCE64(s->touched_ns) <= xtx_hades_lease_ns ||
	    XTX_READ_ONCE64(s->owner) != owner)
		return false;
	if (__sync_val_compare_and_swap(&s->ctl, c, xtx_hades_ctl(xtx_hades_gen(c),
								 XTX_HS_FREE)) != c)
		return false;
	s->last_txn = owner;
	s->last_outcome = XTX_HO_RECLAIMED;
	if (__sync_val_compare_and_swap(&s->owner, owner, txn) != owner)
		return false;
	xtx_count(XTX_CTR_HADES_RECLAIM);
	return true;
}

/*
 * Finds txn's slot among its XTX_HADES_PROBES; with begin, claims the first
 * free (or lease-expired) one when it has none.  A transaction that ended
 * here (the last tenant of one of its slots) never gets a new slot.
 */
static __always_inline void xtx_hades_find(__u64 txn, bool begin, struct xtx_pkt_ctx *pc,
					   struct xtx_hades_ref *r)
{
	__u32 home = xtx_hades_home(txn, xtx_hades_slots), p, idx;
	struct xtx_hades_slot *s;
	__u64 o, c;

	r->s = NULL;
	r->outcome = XTX_HO_NONE;
	for (p = 0; p < XTX_HADES_PROBES; p++) {
		idx = xtx_hades_probe_idx(home, p);
		s = xtx_hades_slot(idx);
		if (!s)
			break;
		if (xtx_hades_tenure(s, txn, &c)) {
			if (xtx_hades_state(c) == XTX_HS_FREE)
				break;	/* being claimed or released on another CPU */
			r->s = s;
			r->idx = idx;
			r->ctl = c;
			r->status = XTX_ST_OK;
			return;
		}
		if (s->last_txn == txn)
			r->outcome = s->last_outcome;
	}
	if (p < XTX_HADES_PROBES) {
		r->status = XTX_ST_RETRY;
		return;
	}
	if (!begin || r->outcome != XTX_HO_NONE) {
		r->status = XTX_ST_SQUASHED;
		return;
	}
	for (p = 0; p < XTX_HADES_PROBES; p++) {
		idx = xtx_hades_probe_idx(home, p);
		s = xtx_hades_slot(idx);
		if (!s)
			break;
		o = XTX_READ_ONCE64(s->owner);
		if (o == 0) {
			o = __sync_val_compare_and_swap(&s->owner, 0, txn);
			if (o == txn) {
				/* another CPU claims it for txn right now */
				r->status = XTX_ST_RETRY;
				return;
			}
			if (o)
				continue;
		} else if (!xtx_hades_reclaim(s, o, txn, pc)) {
			continue;
		}
		c = XTX_READ_ONCE64(s->ctl);
		xtx_hades_init(s, idx, xtx_hades_gen(c), pc);
		r->s = s;
		r->idx = idx;
		r->ctl = xtx_hades_ctl(xtx_hades_gen(c) + 1, XTX_HS_ACTIVE);
		r->status = XTX_ST_OK;
		return;
	}
	xtx_count(XTX_CTR_HADES_FULL);
	r->status = XTX_ST_RETRY;
}

/* ---- the registry of committing slots ---- */

static __always_inline struct xtx_hades_registry *xtx_hades_registry(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xtx_hades_reg, &zero);
}

/* Takes a registry entry for slot idx: position + 1, or 0 when all are taken. */
static __always_inline __u32 xtx_hades_reg_take(__u32 idx)
{
	struct xtx_hades_registry *reg = xtx_hades_registry();
	__u32 i;

	if (!reg)
		return 0;
	for (i = 0; i < XTX_HADES_COMMITTING_MAX; i++) {
		if (reg->slot[i])
			continue;
		if (__sync_val_compare_and_swap(&reg->slot[i], 0, idx + 1) == 0)
			return i + 1;
	}
	return 0;
}

static __always_inline void xtx_hades_reg_drop(__u32 pos)
{
	struct xtx_hades_registry *reg = xtx_hades_registry();

	if (reg && pos && pos <= XTX_HADES_COMMITTING_MAX)
		__sync_lock_test_and_set(&reg->slot[(pos - 1) & (XTX_HADES_COMMITTING_MAX - 1)], 0);
}

/*
 * Ends txn's tenure: registry entry, record of how it ended, state FREE,
 * owner 0.  The CAS on ctl keeps a slot another CPU took over (lease
 * reclaim) untouched; a squash landing meanwhile is simply overwritten.
 */
static __always_inline void xtx_hades_release(struct xtx_hades_ref *r, __u32 outcome)
{
	struct xtx_hades_slot *s = r->s;
	__u64 c = r->ctl, gen = xtx_hades_gen(c), seen;
	int i;

	for (i = 0; i < 3; i++) {
		seen = __sync_val_compare_and_swap(&s->ctl, c, xtx_hades_ctl(gen, XTX_HS_FREE));
		if (seen == c)
			break;
		if (xtx_hades_gen(seen) != gen || xtx_hades_state(seen) == XTX_HS_FREE)
			return;
		c = seen;
	}
	if (i == 3)
		return;
	xtx_hades_reg_drop(s->reg_pos);
	s->reg_pos = 0;
	s->nstaged = 0;
	s->last_txn = s->owner;
	s->last_outcome = outcome;
	__sync_lock_test_and_set(&s->owner, 0);
}

_Static_assert((XTX_HADES_COMMITTING_MAX & (XTX_HADES_COMMITTING_MAX - 1)) == 0, "mask");

#endif /* XTX_BPF_HADES_SLOT_H */
