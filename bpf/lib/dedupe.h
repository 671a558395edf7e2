/* SPDX-License-Identifier: GPL-2.0-only */
/* Retransmission safety: claim, replay and complete per-client request records. */
#ifndef XTX_BPF_DEDUPE_H
#define XTX_BPF_DEDUPE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "maps.h"
#include "pktctx.h"

/* The protocol and its invariants are described in include/xtx/maps.h. */
enum xtx_dedupe_verdict {
	XTX_DEDUPE_NEW,		/* slot claimed: execute, then xtx_dedupe_done() */
	XTX_DEDUPE_DUPLICATE,	/* already executed: replay */
	XTX_DEDUPE_IN_FLIGHT,	/* same request executing elsewhere: RETRY */
	XTX_DEDUPE_STALE,	/* older than the window: refuse */
	XTX_DEDUPE_REDEFER,	/* executing, but its rare-path round trip outlived the lease */
};

static __always_inline __u32 xtx_dedupe_key(__u32 client_id, __u64 req_id)
{
	return client_id * XTX_DEDUPE_WINDOW + (__u32)(req_id & (XTX_DEDUPE_WINDOW - 1));
}

static __always_inline int xtx_dedupe_claim(__u32 key, __u64 req_id, __u32 nops,
					    struct xtx_pkt_ctx *pc)
{
	struct xtx_dedupe_slot *slot = bpf_map_lookup_elem(&xtx_dedupe, &key);
	__u64 word, seen, state, claimed;
	__u32 i;

	if (!slot)
		return XTX_DEDUPE_STALE;
	word = slot->word;
	seen = word >> 2;
	state = word & XTX_DEDUPE_STATE_MASK;
	if (seen == req_id) {
		if (state == XTX_DEDUPE_DONE)
			return XTX_DEDUPE_DUPLICATE;
		if (state != XTX_DEDUPE_BUSY)
			return XTX_DEDUPE_IN_FLIGHT;
		/*
		 * BUSY: executing on another CPU, or deferred to xtxd and its
		 * answer lost.  Only the latter outlives the lease; one
		 * duplicate (the CAS winner) then takes the request over.
		 */
		claimed = slot->claimed_ns;
		if (pc->kv_lease_ns && xtx_lease_over(xtx_now(pc), claimed, pc->kv_lease_ns) &&
		    __sync_val_compare_and_swap(&slot->claimed_ns, claimed, xtx_now(pc)) == claimed)
			return XTX_DEDUPE_REDEFER;
		return XTX_DEDUPE_IN_FLIGHT;
	}
	if (seen > req_id)
		return XTX_DEDUPE_STALE;
	/*
	 * CLAIMING first, BUSY once the stamp and statuses are ours: a
	 * duplicate on another CPU must never act on the previous request's
	 * stamp (it would take the request over at once) or statuses.
	 */
	if (__sync_val_compare_and_swap(&slot->word, word,
					xtx_dedupe_word(req_id, XTX_DEDUPE_CLAIMING)) != word)
		return XTX_DEDUPE_IN_FLIGHT;
	slot->claimed_ns = xtx_now(pc);
	/* a one-op request dirties one result's line, not all sixteen */
	for (i = 0; i < XTX_MAX_OPS && i < nops; i++)
		slot->res[i].status = XTX_ST_NONE;
	slot->nops = nops;
	__sync_lock_test_and_set(&slot->word, xtx_dedupe_word(req_id, XTX_DEDUPE_BUSY));
	return XTX_DEDUPE_NEW;
}

/* Publish the recorded results: an atomic exchange orders the stores before it. */
static __always_inline void xtx_dedupe_done(__u32 key, __u64 req_id)
{
	struct xtx_dedupe_slot *slot = bpf_map_lookup_elem(&xtx_dedupe, &key);

	if (slot)
		__sync_lock_test_and_set(&slot->word, xtx_dedupe_word(req_id, XTX_DEDUPE_DONE));
}

static __always_inline void xtx_dedupe_record(__u32 key, __u32 idx, const struct xtx_op *op)
{
	struct xtx_dedupe_slot *slot = bpf_map_lookup_elem(&xtx_dedupe, &key);
	struct xtx_op_result *r;

	if (!slot || idx >= XTX_MAX_OPS)
		return;
	r = &slot->res[idx];
	r->status = op->status;
	r->flags = op->flags;
	r->version = op->version;
	r->token = op->token;
	/* TOO_BIG answers no version: keep the length it asked room for (xtx_dedupe_replay) */
	if (op->status == XTX_ST_TOO_BIG)
		r->version = ((const struct xtx_ext *)op->value)->len;
}

/*
 * A re-deferral that could not run now: the next duplicate tries again at
 * once instead of waiting out another lease.
 */
static __always_inline void xtx_dedupe_expire(__u32 key)
{
	struct xtx_dedupe_slot *slot = bpf_map_lookup_elem(&xtx_dedupe, &key);

	if (slot)
		slot->claimed_ns = 0;
}

/*
 * Returns the recorded status, or XTX_ST_NONE when there is no record (op
 * untouched).  XTX_ST_DEFERRED: the op went to xtxd and its answer never
 * came back; op gets the flags, version and token it went with, and must
 * go to xtxd again, which answers from its own record.  Otherwise op gets
 * the recorded answer.  The request's XTX_OPF_EXT stays as sent: a grant's
 * value is read again (exec.h), into the room the request left.  A TOO_BIG
 * answer keeps its length in the record's version (fix.h) and answers it
 * in ext.len again.
 */
static __always_inline __u8 xtx_dedupe_replay(__u32 key, __u32 idx, struct xtx_op *op)
{
	struct xtx_dedupe_slot *slot = bpf_map_lookup_elem(&xtx_dedupe, &key);
	struct xtx_op_result *r;
	struct xtx_ext *ext = (struct xtx_ext *)op->value;
	__u32 ext_bit = op->flags & XTX_OPF_EXT;
	__u8 st;

	/* past the claimed request's ops, res[] is an older request's */
	if (!slot || idx >= XTX_MAX_OPS || idx >= slot->nops)
		return XTX_ST_NONE;
	r = &slot->res[idx];
	st = r->status;
	if (st == XTX_ST_NONE)
		return st;
	op->flags = (r->flags & ~XTX_OPF_EXT) | ext_bit;
	op->version = r->version;
	op->token = r->token;
	if (st == XTX_ST_TOO_BIG) {
		if (!ext_bit) {
			ext->off = 0;
			ext->cap = 0;
			op->vlen = 0;
		}
		ext->len = (__u16)r->version;
		ext->pad = 0;
		op->flags |= XTX_OPF_EXT;
		op->version = 0;
	}
	return st;
}

#endif /* XTX_BPF_DEDUPE_H */
