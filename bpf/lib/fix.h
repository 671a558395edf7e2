/* SPDX-License-Identifier: GPL-2.0-only */
/* TC egress bookkeeping: apply xtxd's fixes to the kernel buckets and complete dedupe records. */
#ifndef XTX_BPF_FIX_H
#define XTX_BPF_FIX_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/kv.h>
#include <xtx/maps.h>
#include "maps.h"
#include "stats.h"
#include "locks.h"

/*
 * Applies one fix to its bucket, but only while the bucket still holds the
 * lock token XDP took: if the round trip outlived the lease, another packet
 * owns the bucket now and this answer's bookkeeping must not touch it (the
 * overflow store has the data; a victim not marked clean is written back
 * again later, harmlessly).
 */
/*
 * Frees way w if it still holds the op's key, clean or as the copy xtxd
 * saved (a dirty slot of another version is a write the store has not
 * seen: kept).  The store holds the key's value now.
 */
static __always_inline void xtx_fix_evict(struct xtx_kv_bucket *b, const struct xtx_fix_entry *f,
					  const struct xtx_op *op)
{
	__u8 w = f->fill_way & (XTX_KV_WAYS - 1);

	if (b->key[w] != op->key || b->table[w] != op->table ||
	    !(b->flags[w] & (XTX_KVF_VALID | XTX_KVF_TOMB)))
		return;
	if ((b->flags[w] & XTX_KVF_DIRTY) && b->version[w] != f->victim_version)
		return;
	b->flags[w] = 0;
}

/*
 * An acquire answered anything but OK took nothing: its grant, taken in
 * XDP, goes.  A deferred COMMIT_PRIMARY's lock goes once xtxd has answered
 * it, unless RETRY (the resend needs it).  Only the request's first answer
 * releases (xtx_tc_egress): a second one, from a re-deferral that crossed
 * it, would free another hold of the same transaction in the slot.
 */
static __always_inline void xtx_fix_release(const struct xtx_op *op)
{
	xtx_lock_release(op->txn, xtx_hash(op->table, op->key), op->token,
			 op->opcode == XTX_OP_LOCK_SHARED);
}

static __always_inline void xtx_fix_apply(const struct xtx_fix_entry *f, const struct xtx_op *op,
					  bool first_answer)
{
	__u32 bidx = f->bucket;
	struct xtx_kv_bucket *b = bpf_map_lookup_elem(&xtx_kv, &bidx);
	__u8 w;

	if ((f->action & XTX_FIX_RELEASE) && first_answer &&
	    ((op->status != XTX_ST_OK &&
	      (op->opcode == XTX_OP_LOCK_SHARED || op->opcode == XTX_OP_LOCK_EXCL ||
	       op->opcode == XTX_OP_OCC_LOCK)) ||
	     (op->opcode == XTX_OP_COMMIT_PRIMARY && op->status != XTX_ST_RETRY)))
		xtx_fix_release(op);
	if (!b)
		return;
	if (b->lock != f->token) {
		/*
		 * Still let GETs find what the store now holds: an extra
		 * filter bit only costs a trip to xtxd, a missing one would
		 * answer NOT_FOUND for a key that exists.
		 */
		__sync_fetch_and_or(&b->bloom, f->bloom);
		/*
		 * An evicted key's kernel copy must not answer again: take the
		 * bucket for a moment if nobody holds it.  A holder that is
		 * busy with it may have changed it since: kept then, counted.
		 */
		if ((f->action & XTX_FIX_EVICT) &&
		    __sync_val_compare_and_swap(&b->lock, 0, XTX_KV_LOCK_FAST) == 0) {
			xtx_fix_evict(b, f, op);
			__sync_lock_test_and_set(&b->lock, 0);
		}
		xtx_count(XTX_CTR_KV_FIX_STALE);
		return;
	}
	if (f->action & XTX_FIX_VICTIM_SAVED) {
		w = f->victim_way & (XTX_KV_WAYS - 1);
		if (b->key[w] == f->victim_key && b->version[w] == f->victim_version &&
		    (b->flags[w] & (XTX_KVF_VALID | XTX_KVF_TOMB))) {
			if (b->flags[w] & XTX_KVF_TOMB) {
				/* the delete reached the store: the key leaves for good */
				b->flags[w] = 0;
				if (b->vfloor < f->victim_version)
					b->vfloor = f->victim_version;
			} else {
				b->flags[w] = (b->flags[w] & ~XTX_KVF_DIRTY) | XTX_KVF_IN_USER;
			}
		}
	}
	if ((f->action & XTX_FIX_RAISE_FLOOR) && b->vfloor < f->floor_to)
		b->vfloor = f->floor_to;
	if (f->action & XTX_FIX_EVICT)
		xtx_fix_evict(b, f, op);
	if (f->action & XTX_FIX_UNEVICT) {
		w = f->fill_way & (XTX_KV_WAYS - 1);
		if (b->key[w] == op->key && b->table[w] == op->table)
			b->flags[w] &= ~XTX_KVF_EVICTING;
	}
	/* the kernel caches values of the slot's size only */
	if ((f->action & XTX_FIX_FILL) && op->status == XTX_ST_OK &&
	    !(op->flags & (XTX_TXF_ABSENT | XTX_OPF_EXT)) && op->vlen <= XTX_VALUE_INLINE) {
		w = f->fill_way & (XTX_KV_WAYS - 1);
		/* never over a write the store has not confirmed */
		if (!(b->flags[w] & XTX_KVF_DIRTY)) {
			b->key[w] = op->key;
			b->table[w] = op->table;
			b->vlen[w] = op->vlen;
			b->version[w] = op->version;
			__builtin_memcpy(b->value[w], op->value, XTX_VALUE_INLINE);
			b->flags[w] = XTX_KVF_VALID | XTX_KVF_IN_USER;
		}
	}
	b->bloom = f->bloom;
	__sync_val_compare_and_swap(&b->lock, f->token, 0);
	xtx_count(XTX_CTR_KV_FIXES);
}

/* The deferred ops' answers join the request's dedupe record, which is then complete. */
static __always_inline struct xtx_dedupe_slot *xtx_fix_dedupe_slot(const struct xtx_hdr *h)
{
	__u32 key = h->client_id * XTX_DEDUPE_WINDOW + (__u32)(h->req_id & (XTX_DEDUPE_WINDOW - 1));
	struct xtx_dedupe_slot *slot = bpf_map_lookup_elem(&xtx_dedupe, &key);

	if (!slot || slot->word != xtx_dedupe_word(h->req_id, XTX_DEDUPE_BUSY))
		return NULL;
	return slot;
}

/* Whether the request's record already holds an answer (DONE): this one is a second. */
static __always_inline bool xtx_fix_answered(const struct xtx_hdr *h)
{
	__u32 key = h->client_id * XTX_DEDUPE_WINDOW + (__u32)(h->req_id & (XTX_DEDUPE_WINDOW - 1));
	struct xtx_dedupe_slot *slot = bpf_map_lookup_elem(&xtx_dedupe, &key);

	return slot && slot->word == xtx_dedupe_word(h->req_id, XTX_DEDUPE_DONE);
}

static __always_inline void xtx_fix_record(struct xtx_dedupe_slot *slot, __u8 idx,
					   const struct xtx_op *op)
{
	struct xtx_op_result *r;

	if (idx >= XTX_MAX_OPS)
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

#endif /* XTX_BPF_FIX_H */
