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

static __always_inline struct xtx_hades_registry *xtx_hades_registry(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xtx_hades_reg, &zero);
}

/*
 * The occupancy bit goes up before the slot turns ACTIVE and down after it
 * turned FREE, before its owner lets go: a committer's scan, which starts
 * after its publishing CAS, sees every slot that was active before it.
 */
static __always_inline void xtx_hades_mark_used(__u32 idx, bool used)
{
	struct xtx_hades_registry *reg = xtx_hades_registry();
	__u32 w = idx / 64;

	if (!reg)
		return;
	w &= XTX_HADES_SLOTS_MAX / 64 - 1;
	if (used)
		__sync_fetch_and_or(&reg->used[w], 1ull << (idx & 63));
	else
		__sync_fetch_and_and(&reg->used[w], ~(1ull << (idx & 63)));
}

/* ---- the registry of committing slots ---- */

/* Takes a registry entry for slot idx: position + 1, or 0 when all are taken. */
__noinline __u32 xtx_hades_reg_take(__u32 idx)
{
	struct xtx_hades_registry *reg = xtx_hades_registry();
	__u32 i;

	if (!reg)
		return 0;
	for (i = 0; i < XTX_HADES_COMMITTING_MAX; i++) {
		if (reg->slot[i])
			continue;
		if (__sync_val_compare_and_swap(&reg->slot[i], 0, idx + 1) == 0) {
			__sync_fetch_and_or(&reg->mask, 1ull << i);
			return i + 1;
		}
	}
	return 0;
}

static __always_inline void xtx_hades_reg_drop(__u32 pos)
{
	struct xtx_hades_registry *reg = xtx_hades_registry();

	if (!reg || !pos || pos > XTX_HADES_COMMITTING_MAX)
		return;
	pos = (pos - 1) & (XTX_HADES_COMMITTING_MAX - 1);
	__sync_fetch_and_and(&reg->mask, ~(1ull << pos));
	__sync_lock_test_and_set(&reg->slot[pos], 0);
}

/*
 * Lease reclaim: an active or squashed slot its owner has not touched for
 * the lease is taken from it.  The CAS on ctl fails if the owner published
 * or released meanwhile; the old owner's later ops find no slot (SQUASHED).
 * A committing slot with nothing staged (a reader's final check) goes too:
 * its reads were all made before it committed, so dropping its partial
 * lock cannot let a conflict it would have had go unseen.  One with staged
 * writes never does: only its coordinator (or the participants) decide it.
 */
static __always_inline bool xtx_hades_reclaim(struct xtx_hades_slot *s, __u64 owner, __u64 txn,
					      struct xtx_pkt_ctx *pc)
{
	__u64 c = XTX_READ_ONCE64(s->ctl);
	__u32 st = xtx_hades_state(c);

	if (!xtx_hades_lease_ns || st == XTX_HS_FREE ||
	    (st == XTX_HS_COMMITTING && *(volatile __u32 *)&s->nstaged) ||
	    !xtx_lease_over(xtx_now(pc), XTX_READ_ONCE64(s->touched_ns), xtx_hades_lease_ns) ||
	    XTX_READ_ONCE64(s->owner) != owner)
		return false;
	if (__sync_val_compare_and_swap(&s->ctl, c, xtx_hades_ctl(xtx_hades_gen(c),
								 XTX_HS_FREE)) != c)
		return false;
	xtx_hades_reg_drop(s->reg_pos);
	s->reg_pos = 0;
	s->last_txn = owner;
	s->last_outcome = XTX_HO_RECLAIMED;
	if (__sync_val_compare_and_swap(&s->owner, owner, txn) != owner)
		return false;
	xtx_count(XTX_CTR_HADES_RECLAIM);
	return true;
}

/*
 * Takes slot idx for txn when it is free or its lease expired: 1 taken,
 * 0 not, -1 when txn is taking it on another CPU right now.
 */
__noinline int xtx_hades_claim(__u32 idx, __u64 txn)
{
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();
	struct xtx_hades_slot *s = xtx_hades_slot(idx);
	__u64 o;

	if (!s || !pc)
		return 0;
	o = XTX_READ_ONCE64(s->owner);
	if (o == txn)
		return -1;
	if (o == 0) {
		o = __sync_val_compare_and_swap(&s->owner, 0, txn);
		if (o == txn)
			return -1;
		if (o)
			return 0;
	} else if (!xtx_hades_reclaim(s, o, txn, pc)) {
		return 0;
	}
	xtx_hades_mark_used(idx, true);
	xtx_hades_init(s, idx, xtx_hades_gen(XTX_READ_ONCE64(s->ctl)), pc);
	return 1;
}

/* xtx_hades_lookup's refusal: a status, and how the transaction ended here if known. */
static __always_inline int xtx_hades_lookup_err(__u32 status, __u32 outcome)
{
	return -(int)(status | (outcome << 8));
}

/*
 * Finds txn's slot among its XTX_HADES_PROBES; with begin, claims the first
 * free (or lease-expired) one when it has none.  A transaction that ended
 * here (the last tenant of one of its slots) never gets a new slot.
 * Returns the slot index, or xtx_hades_lookup_err().  Global: verified once.
 */
__noinline int xtx_hades_lookup(__u64 txn, __u32 begin)
{
	__u32 home = xtx_hades_home(txn, xtx_hades_slots), p, idx, outcome = XTX_HO_NONE;
	struct xtx_hades_slot *s;
	__u64 c;
	int claimed;

	for (p = 0; p < XTX_HADES_PROBES; p++) {
		idx = xtx_hades_probe_idx(home, p);
		s = xtx_hades_slot(idx);
		if (!s)
			return xtx_hades_lookup_err(XTX_ST_RETRY, XTX_HO_NONE);
		if (xtx_hades_tenure(s, txn, &c)) {
			/* FREE: being claimed or released on another CPU */
			if (xtx_hades_state(c) == XTX_HS_FREE)
				return xtx_hades_lookup_err(XTX_ST_RETRY, XTX_HO_NONE);
			return idx;
		}
		if (s->last_txn == txn)
			outcome = s->last_outcome;
	}
	if (!begin || outcome != XTX_HO_NONE)
		return xtx_hades_lookup_err(XTX_ST_SQUASHED, outcome);
	for (p = 0; p < XTX_HADES_PROBES; p++) {
		claimed = xtx_hades_claim(xtx_hades_probe_idx(home, p), txn);
		if (claimed > 0)
			return xtx_hades_probe_idx(home, p);
		if (claimed < 0)
			return xtx_hades_lookup_err(XTX_ST_RETRY, XTX_HO_NONE);
	}
	xtx_count(XTX_CTR_HADES_FULL);
	return xtx_hades_lookup_err(XTX_ST_RETRY, XTX_HO_NONE);
}

/* txn's slot as this op sees it, in r: r->s set and status OK, or NULL and the answer. */
static __always_inline void xtx_hades_find(__u64 txn, bool begin, struct xtx_hades_ref *r)
{
	int v = xtx_hades_lookup(txn, begin);

	r->s = NULL;
	r->outcome = XTX_HO_NONE;
	r->status = XTX_ST_RETRY;
	if (v < 0) {
		r->status = (-v) & 0xff;
		r->outcome = (-v) >> 8;
		return;
	}
	r->idx = v;
	r->s = xtx_hades_slot(r->idx);
	if (!r->s || !xtx_hades_tenure(r->s, txn, &r->ctl) ||
	    xtx_hades_state(r->ctl) == XTX_HS_FREE) {
		r->s = NULL;
		return;
	}
	r->status = XTX_ST_OK;
}

/*
 * Ends the tenure ctl of slot idx: registry entry, record of how it ended,
 * state FREE, occupancy bit, owner 0.  The CAS on ctl keeps a slot another
 * CPU took over (lease reclaim) untouched; a squash landing meanwhile is
 * simply overwritten.
 */
static __always_inline void xtx_hades_release_at(struct xtx_hades_slot *s, __u32 idx, __u64 c,
						 __u32 outcome)
{
	__u64 gen = xtx_hades_gen(c), seen;
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
	xtx_hades_mark_used(idx, false);
	__sync_lock_test_and_set(&s->owner, 0);
}

static __always_inline void xtx_hades_release(struct xtx_hades_ref *r, __u32 outcome)
{
	xtx_hades_release_at(r->s, r->idx, r->ctl, outcome);
}

/*
 * Every write staged in s validated (and with installed, every install
 * answered: none XTX_HSF_INSTALLING)?
 */
static __always_inline bool xtx_hades_all_done(struct xtx_hades_slot *s, bool installed)
{
	__u32 j, n = s->nstaged;
	__u8 f;

	for (j = 0; j < XTX_HADES_STAGE_MAX; j++) {
		if (j >= n)
			break;
		f = *(volatile __u8 *)&s->staged[j].flags;
		if (!(f & XTX_HSF_DONE) || (installed && (f & XTX_HSF_INSTALLING)))
			return false;
	}
	return true;
}

/*
 * TC egress saw xtxd's answer to txn's HVALIDATE of (table, key): the
 * install is in, and once every write of the slot is and its last
 * HVALIDATE came, the transaction ends here.  Nothing when the slot is
 * gone (released, or decided by the resolver).  Global: verified once.
 */
__noinline int xtx_hades_installed(__u64 txn, __u32 table, __u64 key)
{
	struct xtx_hades_ref r;
	__u32 j, n;

	xtx_hades_find(txn, false, &r);
	if (!r.s || xtx_hades_state(r.ctl) != XTX_HS_COMMITTING)
		return 0;
	n = r.s->nstaged;
	for (j = 0; j < XTX_HADES_STAGE_MAX; j++) {
		if (j >= n)
			break;
		if (r.s->staged[j].key == key && r.s->staged[j].table == table)
			r.s->staged[j].flags &= ~XTX_HSF_INSTALLING;
	}
	if ((r.s->flags & XTX_HSLF_LAST) && xtx_hades_all_done(r.s, true)) {
		xtx_hades_release(&r, XTX_HO_VALIDATED);
		xtx_count(XTX_CTR_HADES_COMMIT);
	}
	return 0;
}

_Static_assert((XTX_HADES_COMMITTING_MAX & (XTX_HADES_COMMITTING_MAX - 1)) == 0, "mask");

#endif /* XTX_BPF_HADES_SLOT_H */
