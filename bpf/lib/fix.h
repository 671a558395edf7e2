/* SPDX-License-Identifier: GPL-2.0-only */
/* TC egress bookkeeping: apply xtxd's fixes to the kernel buckets and complete dedupe records. */
#ifndef XTX_BPF_FIX_H
#define XTX_BPF_FIX_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/kv.h>
#include <xtx/maps.h>
#include "maps.h"
#include "stats.h"

/*
 * Applies one fix to its bucket, but only while the bucket still holds the
 * lock token XDP took: if the round trip outlived the lease, another packet
 * owns the bucket now and this answer's bookkeeping must not touch it (the
 * overflow store has the data; a victim not marked clean is written back
 * again later, harmlessly).
 */
static __always_inline void xtx_fix_apply(const struct xtx_fix_entry *f, const struct xtx_op *op)
{
	__u32 bidx = f->bucket;
	struct xtx_kv_bucket *b = bpf_map_lookup_elem(&xtx_kv, &bidx);
	__u8 w;

	if (!b)
		return;
	if (b->lock != f->token) {
		/*
		 * Still let GETs find what the store now holds: an extra
		 * filter bit only costs a trip to xtxd, a missing one would
		 * answer NOT_FOUND for a key that exists.
		 */
		__sync_fetch_and_or(&b->bloom, f->bloom);
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
	if ((f->action & XTX_FIX_FILL) && op->status == XTX_ST_OK && !(op->flags & XTX_TXF_ABSENT)) {
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
}

#endif /* XTX_BPF_FIX_H */
