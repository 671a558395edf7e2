/* SPDX-License-Identifier: GPL-2.0-only */
/* The KV cache's frequent paths (DINT §3.2, Figure 4) and the hand-off of rare ones to xtxd. */
#ifndef XTX_BPF_KV_H
#define XTX_BPF_KV_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/kv.h>
#include <xtx/hash.h>
#include "config.h"
#include "maps.h"
#include "stats.h"
#include "pktctx.h"
#include "dedupe.h"
#include "parse.h"

/* Slot states and the version rules are described in include/xtx/kv.h. */

#define XTX_KV_DEFER	0xff	/* internal: the op needs the overflow store */
#define XTX_KV_LIVE	(XTX_KVF_VALID | XTX_KVF_TOMB)

static __always_inline bool xtx_kv_bloom_maybe(const struct xtx_kv_bucket *b, __u64 h)
{
	return xtx_kv_no_bloom || ((b->bloom >> xtx_bloom_bit_of(h)) & 1);
}

static __always_inline bool xtx_kv_is_write(__u8 opcode)
{
	return opcode == XTX_OP_INSERT || opcode == XTX_OP_UPDATE || opcode == XTX_OP_DELETE;
}

/*
 * A write whose value is in the packet's value area (over XTX_VALUE_INLINE):
 * the kernel never holds such a value, so only xtxd's store can take it.
 */
static __always_inline bool xtx_kv_is_big_write(const struct xtx_op *op)
{
	__u8 opcode = op->opcode;

	return (op->flags & XTX_OPF_EXT) &&
	       (opcode == XTX_OP_INSERT || opcode == XTX_OP_UPDATE ||
		opcode == XTX_OP_COMMIT_BACKUP || opcode == XTX_OP_COMMIT_PRIMARY);
}

/*
 * Write-through (the ablation): a write goes to the store first, so the
 * kernel only ever holds clean copies.  A key cached here is refreshed in
 * its own way by TC (DELETE drops it now: the bucket stays locked until the
 * store has deleted it too).
 */
static __always_inline __u8 xtx_kv_write_through_op(struct xtx_kv_bucket *b, int w,
						    struct xtx_op *op)
{
	if (w >= 0) {
		w &= XTX_KV_WAYS - 1;
		if (op->opcode == XTX_OP_INSERT && (b->flags[w] & XTX_KVF_VALID))
			return XTX_ST_EXISTS;
		if (op->opcode == XTX_OP_DELETE)
			b->flags[w] = 0;
	}
	return XTX_KV_DEFER;
}

/*
 * The way holding (table, key), live or tombstone, or -1.  Not inlined for
 * the same reason as xtx_kv_way_where: the op's code after it is checked
 * once for "found" and once for "absent", not once per way.
 */
__noinline int xtx_kv_find(const struct xtx_kv_bucket *b, __u32 table, __u64 key)
{
	int w;

	if (!b)
		return -1;
	for (w = 0; w < XTX_KV_WAYS; w++)
		if (b->key[w] == key && (b->flags[w] & XTX_KV_LIVE) && b->table[w] == table)
			return w;
	return -1;
}

/*
 * First way whose flags satisfy (flags & mask) == want, or XTX_KV_NO_WAY.
 * A function of its own, called only when a key is placed: inlined, each
 * of its nine answers is a state the verifier walks the rest of the op
 * with, and a deferral picks two of them.
 */
__noinline int xtx_kv_way_where(const struct xtx_kv_bucket *b, __u32 mask, __u32 want)
{
	int w;

	if (!b)
		return XTX_KV_NO_WAY;
	for (w = 0; w < XTX_KV_WAYS; w++)
		if ((b->flags[w] & mask) == want)
			return w;
	return XTX_KV_NO_WAY;
}

#define xtx_kv_free_way(b)	xtx_kv_way_where(b, XTX_KV_LIVE, 0)
#define xtx_kv_clean_way(b)	xtx_kv_way_where(b, XTX_KVF_VALID | XTX_KVF_DIRTY, XTX_KVF_VALID)
#define xtx_kv_dirty_way(b)	xtx_kv_way_where(b, XTX_KVF_DIRTY, XTX_KVF_DIRTY)

/*
 * The bucket lock.  A frequent-path holder writes XTX_KV_LOCK_FAST and
 * lets go before the program ends; a rare-path holder's token is its
 * acquisition time, and only such a lock can outlive its lease.
 * Returns false when the bucket is busy: the op answers RETRY.
 */
static __always_inline bool xtx_kv_trylock(struct xtx_kv_bucket *b, struct xtx_pkt_ctx *pc)
{
	__u64 old = b->lock;

	if (!old)
		return __sync_val_compare_and_swap(&b->lock, 0, XTX_KV_LOCK_FAST) == 0;
	if (old == XTX_KV_LOCK_FAST || !pc->kv_lease_ns ||
	    !xtx_lease_over(xtx_now(pc), old & ~1ull, pc->kv_lease_ns))
		return false;
	/* its round trip was lost: take the bucket over */
	if (__sync_val_compare_and_swap(&b->lock, old, XTX_KV_LOCK_FAST) != old)
		return false;
	xtx_count(XTX_CTR_KV_TAKEOVER);
	return true;
}

static __always_inline void xtx_kv_unlock(struct xtx_kv_bucket *b)
{
	__sync_lock_test_and_set(&b->lock, 0);
}

static __always_inline void xtx_kv_copy_value(__u8 *dst, const __u8 *src)
{
	__builtin_memcpy(dst, src, XTX_VALUE_INLINE);
}

/*
 * GET and READ.  A key found absent answers NOT_FOUND with a version all
 * the same: its tombstone's, or the bucket's floor, at or above the key's
 * last version; validating an absent read compares it (xtx_kv_validate),
 * and a history records it as the state the read saw.
 */
static __always_inline __u8 xtx_kv_get(struct xtx_kv_bucket *b, int w, struct xtx_op *op, __u64 h)
{
	if (w >= 0) {
		w &= XTX_KV_WAYS - 1;
		if (b->flags[w] & XTX_KVF_TOMB) {
			op->version = b->version[w];
			return XTX_ST_NOT_FOUND;
		}
		xtx_kv_copy_value(op->value, b->value[w]);
		op->vlen = b->vlen[w];
		op->version = b->version[w];
		return XTX_ST_OK;
	}
	if (!xtx_kv_bloom_maybe(b, h)) {
		xtx_count(XTX_CTR_KV_BLOOM_MISS);
		op->version = b->vfloor;
		return XTX_ST_NOT_FOUND;
	}
	return XTX_KV_DEFER;
}

/*
 * A new value for the key way w already holds: the key and table stay, so
 * the keys' line is not dirtied for the other CPUs that search it.
 */
static __always_inline void xtx_kv_replace(struct xtx_kv_bucket *b, __u8 w, const struct xtx_op *op,
					   __u64 version, __u8 flags)
{
	w &= XTX_KV_WAYS - 1;
	b->vlen[w] = op->vlen;
	b->version[w] = version;
	b->flags[w] = flags;
	xtx_kv_copy_value(b->value[w], op->value);
}

/* The op's key into way w, free or clean. */
static __always_inline void xtx_kv_install(struct xtx_kv_bucket *b, __u8 w, const struct xtx_op *op,
					   __u64 version, __u8 flags)
{
	b->key[w & (XTX_KV_WAYS - 1)] = op->key;
	b->table[w & (XTX_KV_WAYS - 1)] = op->table;
	xtx_kv_replace(b, w, op, version, flags);
}

static __always_inline __u8 xtx_kv_insert(struct xtx_kv_bucket *b, int w, struct xtx_op *op,
					  __u64 h)
{
	__u8 way;

	if (w >= 0) {
		w &= XTX_KV_WAYS - 1;
		if (b->flags[w] & XTX_KVF_VALID)
			return XTX_ST_EXISTS;
		/* re-insert over its own tombstone: the version goes on */
		op->version = b->version[w] + 1;
		xtx_kv_replace(b, w, op, op->version,
			       XTX_KVF_VALID | XTX_KVF_DIRTY | (b->flags[w] & XTX_KVF_IN_USER));
		return XTX_ST_OK;
	}
	/* the overflow store may hold it (or its history): only xtxd can tell */
	if (xtx_kv_bloom_maybe(b, h))
		return XTX_KV_DEFER;
	way = xtx_kv_free_way(b);
	if (way == XTX_KV_NO_WAY)
		way = xtx_kv_clean_way(b);	/* evicting a clean key loses nothing */
	if (way == XTX_KV_NO_WAY)
		return XTX_KV_DEFER;		/* all dirty: one must be written back */
	op->version = b->vfloor + 1;
	xtx_kv_install(b, way, op, op->version, XTX_KVF_VALID | XTX_KVF_DIRTY);
	return XTX_ST_OK;
}

static __always_inline __u8 xtx_kv_update(struct xtx_kv_bucket *b, int w, struct xtx_op *op,
					  __u64 h)
{
	if (w >= 0) {
		w &= XTX_KV_WAYS - 1;
		if (b->flags[w] & XTX_KVF_TOMB)
			return XTX_ST_NOT_FOUND;
		op->version = b->version[w] + 1;
		xtx_kv_replace(b, w, op, op->version, b->flags[w] | XTX_KVF_DIRTY);
		return XTX_ST_OK;
	}
	return xtx_kv_bloom_maybe(b, h) ? XTX_KV_DEFER : XTX_ST_NOT_FOUND;
}

static __always_inline __u8 xtx_kv_delete(struct xtx_kv_bucket *b, int w, struct xtx_op *op,
					  __u64 h)
{
	if (w >= 0) {
		w &= XTX_KV_WAYS - 1;
		if (b->flags[w] & XTX_KVF_TOMB)
			return XTX_ST_NOT_FOUND;
		op->version = b->version[w] + 1;
		b->version[w] = op->version;
		b->vlen[w] = 0;
		if (b->flags[w] & XTX_KVF_IN_USER) {
			/* the overflow store must hear of it before the slot goes */
			b->flags[w] = XTX_KVF_TOMB | XTX_KVF_DIRTY | XTX_KVF_IN_USER;
		} else {
			b->flags[w] = 0;
			if (b->vfloor < op->version)
				b->vfloor = op->version;
		}
		return XTX_ST_OK;
	}
	return xtx_kv_bloom_maybe(b, h) ? XTX_KV_DEFER : XTX_ST_NOT_FOUND;
}

/*
 * The KV half of a lock op (FaSST/Xenic fused read+lock): the value of a
 * key the transaction now holds.  An absent key is granted too, with
 * XTX_TXF_ABSENT and the version its creating commit must expect.
 */
static __always_inline __u8 xtx_kv_read_locked(struct xtx_kv_bucket *b, int w, struct xtx_op *op,
					       __u64 h)
{
	if (w >= 0) {
		w &= XTX_KV_WAYS - 1;
		if (b->flags[w] & XTX_KVF_VALID) {
			xtx_kv_copy_value(op->value, b->value[w]);
			op->vlen = b->vlen[w];
			op->version = b->version[w];
			return XTX_ST_OK;
		}
		op->version = b->version[w];	/* a tombstone's history */
	} else if (xtx_kv_bloom_maybe(b, h)) {
		return XTX_KV_DEFER;
	} else {
		op->version = b->vfloor;
	}
	op->vlen = 0;
	op->flags |= XTX_TXF_ABSENT;
	return XTX_ST_OK;
}

/* OCC validation's second half: is the version still the one read? */
static __always_inline __u8 xtx_kv_validate(struct xtx_kv_bucket *b, int w, struct xtx_op *op,
					    __u64 h)
{
	__u64 expected = op->version, cur;

	if (w >= 0)
		cur = b->version[w & (XTX_KV_WAYS - 1)];
	else if (xtx_kv_bloom_maybe(b, h))
		return XTX_KV_DEFER;
	else
		cur = b->vfloor;
	op->version = cur;
	return cur == expected ? XTX_ST_OK : XTX_ST_CHANGED;
}

/* Deletes way w (live) at version v: a tombstone if the store holds the key. */
static __always_inline void xtx_kv_delete_at(struct xtx_kv_bucket *b, int w, __u64 v)
{
	w &= XTX_KV_WAYS - 1;
	b->version[w] = v;
	b->vlen[w] = 0;
	if (b->flags[w] & XTX_KVF_IN_USER) {
		b->flags[w] = XTX_KVF_TOMB | XTX_KVF_DIRTY | XTX_KVF_IN_USER;
	} else {
		b->flags[w] = 0;
		if (b->vfloor < v)
			b->vfloor = v;
	}
}

/*
 * COMMIT_BACKUP and COMMIT_PRIMARY: install (or delete) at a version the
 * coordinator fixed, so every replica ends with the same one.  Both are
 * idempotent: a version already there answers ALREADY_APPLIED, which is
 * what makes a retransmitted commit harmless even without its record.
 */
static __always_inline __u8 xtx_kv_commit(struct xtx_kv_bucket *b, int w, struct xtx_op *op,
					  __u64 h, bool primary)
{
	bool del = op->flags & XTX_OPF_DELETE;
	__u64 v;
	__u8 way;

	if (w >= 0) {
		__u64 cur = b->version[w & (XTX_KV_WAYS - 1)];

		if (primary) {
			if (cur == op->version + 1)
				return XTX_ST_ALREADY_APPLIED;
			if (cur != op->version)
				return XTX_ST_CHANGED;
			v = op->version + 1;
		} else {
			if (cur >= op->version)
				return XTX_ST_ALREADY_APPLIED;
			v = op->version;
		}
		if (del) {
			if (b->flags[w & (XTX_KV_WAYS - 1)] & XTX_KVF_TOMB)
				b->version[w & (XTX_KV_WAYS - 1)] = v;
			else
				xtx_kv_delete_at(b, w, v);
		} else {
			xtx_kv_replace(b, w, op, v, XTX_KVF_VALID | XTX_KVF_DIRTY |
			       (b->flags[w & (XTX_KV_WAYS - 1)] & XTX_KVF_IN_USER));
		}
		op->version = v;
		return XTX_ST_OK;
	}
	if (xtx_kv_bloom_maybe(b, h))
		return XTX_KV_DEFER;
	/*
	 * Absent for sure.  The version the coordinator brings is above the
	 * key's history (it read it under its lock); the floor may have risen
	 * since for other keys of the bucket, which does not concern this one.
	 */
	v = primary ? op->version + 1 : op->version;
	if (del) {
		if (b->vfloor < v)
			b->vfloor = v;
		op->version = v;
		return XTX_ST_OK;
	}
	way = xtx_kv_free_way(b);
	if (way == XTX_KV_NO_WAY)
		way = xtx_kv_clean_way(b);
	if (way == XTX_KV_NO_WAY)
		return XTX_KV_DEFER;
	xtx_kv_install(b, way, op, v, XTX_KVF_VALID | XTX_KVF_DIRTY);
	op->version = v;
	return XTX_ST_OK;
}

/*
 * Prepares the hand-off of an op to xtxd: which way TC egress fills with
 * the answer, and which dirty slot rides along to be written back (needed
 * when every way is dirty; otherwise DINT's lazy write-back).  The victim
 * stays in the bucket, dirty, until TC egress learns it was saved: a lost
 * packet never loses a write.
 */
static __always_inline void xtx_kv_plan_defer(struct xtx_kv_bucket *b, bool needs_fill,
					      struct xtx_defer_entry *e)
{
	__u8 fill = XTX_KV_NO_WAY, dirty = xtx_kv_dirty_way(b);

	if (needs_fill) {
		fill = xtx_kv_free_way(b);
		if (fill == XTX_KV_NO_WAY)
			fill = xtx_kv_clean_way(b);
		if (fill == XTX_KV_NO_WAY)
			fill = dirty;
	}
	e->fill_way = fill;
	e->victim_way = dirty;
	e->flags = 0;
	if (dirty != XTX_KV_NO_WAY) {
		__u8 v = dirty & (XTX_KV_WAYS - 1);

		e->flags |= XTX_DEFER_HAS_VICTIM;
		e->victim.key = b->key[v];
		e->victim.version = b->version[v];
		e->victim.table = b->table[v];
		e->victim.flags = b->flags[v];
		e->victim.vlen = b->vlen[v];
		xtx_kv_copy_value(e->victim.value, b->value[v]);
		xtx_count(XTX_CTR_KV_VICTIMS);
		/*
		 * From now on the store may hold the key, whether or not TC
		 * ever confirms it: a delete must then leave a tombstone, or
		 * the store's copy would outlive it.
		 */
		b->flags[v] |= XTX_KVF_IN_USER;
	}
}

/* Whether way w (found, or -1) is leaving for the store: only xtxd answers for its key. */
static __always_inline bool xtx_kv_evicting(const struct xtx_kv_bucket *b, int w)
{
	return w >= 0 && (b->flags[w & (XTX_KV_WAYS - 1)] & XTX_KVF_EVICTING);
}

/*
 * Prepares the hand-off of a big write to a key cached in way w (live or
 * tombstone), or of any op on a way already EVICTING: the store takes the
 * key and TC frees the way afterwards (XTX_FIX_EVICT).  A clean copy the
 * store holds goes now.  A dirty way rides along as the victim, so xtxd
 * saves it first and runs the op on the key's latest state, and is marked
 * EVICTING: the bucket lock is taken over after the lease, and an op that
 * then answered from this copy or wrote it would not see the write in
 * flight, or be lost under it.  Nothing is filled.
 * Global, so the op's paths after it are walked once, not per way state.
 */
__noinline int xtx_kv_plan_evict(struct xtx_kv_bucket *b, int w, struct xtx_defer_entry *e)
{
	__u8 v = w & (XTX_KV_WAYS - 1);

	if (!b || !e)
		return 0;
	e->fill_way = v;
	e->victim_way = XTX_KV_NO_WAY;
	e->flags = XTX_DEFER_EVICT;
	if ((b->flags[v] & (XTX_KVF_DIRTY | XTX_KVF_IN_USER)) == XTX_KVF_IN_USER) {
		b->flags[v] = 0;
		return 0;
	}
	b->flags[v] |= XTX_KVF_EVICTING;
	e->flags |= XTX_DEFER_HAS_VICTIM;
	e->victim_way = v;
	e->victim.key = b->key[v];
	e->victim.version = b->version[v];
	e->victim.table = b->table[v];
	e->victim.flags = b->flags[v];
	e->victim.vlen = b->vlen[v];
	xtx_kv_copy_value(e->victim.value, b->value[v]);
	xtx_count(XTX_CTR_KV_VICTIMS);
	b->flags[v] |= XTX_KVF_IN_USER;
	return 0;
}

/* Ops a copy in the value store answers as xtxd would (xtx_kv_big_read). */
static __always_inline bool xtx_kv_big_readable(__u8 opcode)
{
	switch (opcode) {
	case XTX_OP_GET:
	case XTX_OP_READ:
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
	case XTX_OP_OCC_VALIDATE:
		return true;
	default:
		return false;
	}
}

/*
 * Answers op idx, a read of a key the kernel cache lacks, from the value
 * store (include/xtx/kv.h), holding the key's bucket: the value into the
 * op's room in the area, as xtxd's answer_value() does, or for
 * OCC_VALIDATE the version.  XTX_KV_DEFER when the store has no copy, the
 * room is short (xtxd answers TOO_BIG and, for a grant, releases it), or
 * the element was reused while we copied it.  Global: verified once.
 */
__noinline int xtx_kv_big_read(struct xdp_md *ctx, __u32 idx)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_bigval_key k = {};
	const struct xtx_bigval *v;
	struct xtx_ext *x;
	__u64 version, expected;
	__u32 len, cap, off;

	if (!op)
		return XTX_KV_DEFER;
	k.key = op->key;
	k.table = op->table;
	v = bpf_map_lookup_elem(&xtx_bigval, &k);
	if (!v)
		return XTX_KV_DEFER;
	version = *(volatile __u64 *)&v->version;
	len = *(volatile __u16 *)&v->len;
	/* what the recheck compares is read before what it vouches for */
	xtx_load_fence();
	if (op->opcode == XTX_OP_OCC_VALIDATE) {
		if (v->key != k.key || v->table != k.table)
			return XTX_KV_DEFER;
		expected = op->version;
		op->version = version;
		return version == expected ? XTX_ST_OK : XTX_ST_CHANGED;
	}
	if (!(op->flags & XTX_OPF_EXT))
		return XTX_KV_DEFER;
	x = (struct xtx_ext *)op->value;
	cap = x->cap;
	off = x->off;
	if (len <= XTX_VALUE_INLINE || len > cap || off > XTX_MAX_REQUEST)
		return XTX_KV_DEFER;
	/* two checks the compiler must not fuse into one range the verifier cannot follow */
	if (cap > XTX_VALUE_MAX)
		return XTX_KV_DEFER;
	asm volatile("" : "+r"(cap));
	if (cap <= XTX_VALUE_INLINE)
		return XTX_KV_DEFER;
	/* cap bytes: the value, then the element's zeroes over the rest of the room */
	if (bpf_xdp_store_bytes(ctx, XTX_HDR_OFF + off, (void *)v->data, cap))
		return XTX_KV_DEFER;
	/*
	 * The recheck's loads must not pass the copy's: a fully ordered
	 * atomic (on this CPU's own line, so no other reader pays) keeps them
	 * apart on every architecture, not only on x86's ordered loads.
	 */
	xtx_load_fence();
	if (*(volatile __u64 *)&v->key != k.key || *(volatile __u32 *)&v->table != k.table ||
	    *(volatile __u64 *)&v->version != version)
		return XTX_KV_DEFER;
	op = xtx_op_at(ctx, idx);
	if (!op)
		return XTX_KV_DEFER;
	x = (struct xtx_ext *)op->value;
	x->len = len;
	x->pad = 0;
	op->vlen = 0;
	op->version = version;
	return XTX_ST_OK;
}

/*
 * Runs one KV op: in the kernel when it can, else hands it to xtxd with
 * its bucket locked (XTX_ST_DEFERRED).  force_defer: a retransmission whose
 * first execution may have reached xtxd; only xtxd's record can answer it.
 */
static __always_inline __u8 xtx_op_kv(struct xdp_md *ctx, struct xtx_op *op, __u32 idx,
				      struct xtx_pkt_ctx *pc, bool force_defer)
{
	__u64 h = xtx_op_hash(pc, idx);
	__u32 bidx = xtx_bucket_of(h, xtx_kv_buckets), i, nd = pc->ndeferred;
	struct xtx_defer_entry *e;
	struct xtx_kv_bucket *b;
	__u8 st;
	int w;

	/*
	 * One deferred op per bucket and packet: TC egress releases a bucket
	 * once.  An op that may have run in xtxd must never answer RETRY ("did
	 * not run"): a re-deferral that cannot go now retries the request whole.
	 */
	for (i = 0; i < XTX_MAX_DEFERRED; i++) {
		if (i < nd && pc->deferred[i].bucket == bidx) {
			if (force_defer)
				pc->redefer_busy = 1;
			return XTX_ST_RETRY;
		}
	}
	b = bpf_map_lookup_elem(&xtx_kv, &bidx);
	if (!b)
		return XTX_ST_BAD_ARG;
	if (!xtx_kv_trylock(b, pc)) {
		xtx_count(XTX_CTR_KV_BUSY);
		if (force_defer)
			pc->redefer_busy = 1;
		return XTX_ST_RETRY;
	}
	/*
	 * A re-deferral races with its first copy's answer, which TC records
	 * before it lets the bucket go: holding the bucket now, a record that
	 * appeared meanwhile is the answer.
	 */
	if (force_defer) {
		st = xtx_dedupe_replay(pc->rec_key, idx, op);
		if (st != XTX_ST_NONE && st != XTX_ST_DEFERRED) {
			xtx_kv_unlock(b);
			return st;
		}
	}
	w = xtx_kv_find(b, op->table, op->key);
	/*
	 * A retransmission whose first copy went to xtxd goes there again,
	 * whatever the kernel holds now: only xtxd knows whether it ran (its
	 * record), and a key found here may be a copy filled after it ran, on
	 * which running it again would apply it twice.  A cached copy goes
	 * along as for a big write (xtx_kv_plan_evict): xtxd keeps whichever
	 * is newer, and the kernel forgets the key until asked again.
	 */
	/* recomputed where needed, not carried: a flag kept in a register splits every path */
	if (force_defer || xtx_kv_is_big_write(op) || xtx_kv_evicting(b, w))
		st = XTX_KV_DEFER;
	else if (xtx_kv_write_through && !force_defer && xtx_kv_is_write(op->opcode))
		st = xtx_kv_write_through_op(b, w, op);
	else switch (force_defer ? XTX_OP_NOP : op->opcode) {
	case XTX_OP_GET:
	case XTX_OP_READ:
		st = xtx_kv_get(b, w, op, h);
		break;
	case XTX_OP_INSERT:
		st = xtx_kv_insert(b, w, op, h);
		break;
	case XTX_OP_UPDATE:
		st = xtx_kv_update(b, w, op, h);
		break;
	case XTX_OP_DELETE:
		st = xtx_kv_delete(b, w, op, h);
		break;
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
		st = xtx_kv_read_locked(b, w, op, h);
		break;
	case XTX_OP_OCC_VALIDATE:
		st = xtx_kv_validate(b, w, op, h);
		break;
	case XTX_OP_COMMIT_BACKUP:
	case XTX_OP_COMMIT_PRIMARY:
		st = xtx_kv_commit(b, w, op, h, op->opcode == XTX_OP_COMMIT_PRIMARY);
		break;
	default:
		st = XTX_KV_DEFER;
		break;
	}
	/* a big value the kernel cache never holds: its copy answers a read in one pass */
	if (st == XTX_KV_DEFER && w < 0 && !force_defer && xtx_kv_big_readable(op->opcode)) {
		st = xtx_kv_big_read(ctx, idx);
		if (st != XTX_KV_DEFER) {
			xtx_kv_unlock(b);
			xtx_count(XTX_CTR_KV_BIG_SERVED);
			return st;
		}
	}
	/*
	 * While a request is re-deferred, only its forced ops may go to xtxd:
	 * another op taking a bucket first would make a forced op of the
	 * same bucket retry the request whole, every time (a livelock).  A
	 * read that needs xtxd answers RETRY instead: it has not run.
	 */
	if (st == XTX_KV_DEFER && pc->mode == XTX_EXEC_REDEFER && !force_defer) {
		xtx_kv_unlock(b);
		return XTX_ST_RETRY;
	}
	if (st != XTX_KV_DEFER || nd >= pc->max_deferred || nd >= XTX_MAX_DEFERRED) {
		xtx_kv_unlock(b);
		if (st == XTX_KV_DEFER && force_defer)
			pc->redefer_busy = 1;
		/* answered here, in the slot: a read's room in the area goes unused */
		if (st != XTX_KV_DEFER && !xtx_kv_is_big_write(op))
			op->flags &= ~XTX_OPF_EXT;
		return st == XTX_KV_DEFER ? XTX_ST_RETRY : st;
	}

	e = &pc->deferred[nd & (XTX_MAX_DEFERRED - 1)];
	e->op_idx = idx;
	e->bucket = bidx;
	e->vfloor = b->vfloor;
	if (force_defer || xtx_kv_is_big_write(op) || xtx_kv_evicting(b, w)) {
		if (w >= 0)
			xtx_kv_plan_evict(b, w, e);
		else
			xtx_kv_plan_defer(b, false, e);
	} else {
		/* TC fills the slot with what xtxd answers, for ops that answer a key's value */
		xtx_kv_plan_defer(b, op->opcode != XTX_OP_DELETE &&
				  op->opcode != XTX_OP_OCC_VALIDATE &&
				  !(op->flags & XTX_OPF_DELETE), e);
		/* a key cached here is refreshed in place, never copied into a second way */
		if (w >= 0 && e->fill_way != XTX_KV_NO_WAY)
			e->fill_way = w;
	}
	if (force_defer)
		e->flags |= XTX_DEFER_REPLAY;
	/* from a frequent-path hold to a rare-path one, with a lease */
	e->token = xtx_now(pc) | 1;
	__sync_lock_test_and_set(&b->lock, e->token);
	pc->ndeferred = nd + 1;
	xtx_count(XTX_CTR_KV_DEFERRED);
	return XTX_ST_DEFERRED;
}

_Static_assert((XTX_MAX_DEFERRED & (XTX_MAX_DEFERRED - 1)) == 0, "deferred index is a mask");

#endif /* XTX_BPF_KV_H */
