/* SPDX-License-Identifier: GPL-2.0-only */
/* Loads every bucket and lock slot a packet will use before its ops run, so the misses overlap. */
#ifndef XTX_BPF_WARM_H
#define XTX_BPF_WARM_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/hash.h>
#include "config.h"
#include "maps.h"
#include "parse.h"
#include "pktctx.h"

/*
 * At spec scale the KV and lock tables are far larger than the caches, so
 * an op's first touch of its bucket and of its lock slot each miss (and
 * miss the TLB).  Run op by op, a packet of 11-16 ops takes those misses
 * one after another: the lock slot's CAS waits for its line, the op's
 * reply waits for the CAS, and only then does the next op's address get
 * computed.  This pass computes every address first and only loads a word
 * of each line, with nothing depending on the result, so the core keeps
 * many misses in flight at once (the batched lookups of MICA and cuckoo
 * hashing; a packet is exactly such a batch).  It takes no lock and
 * writes nothing: what a racing CPU changes meanwhile only costs a miss.
 */

#define XTX_WARM_KV	1u	/* the op reads or writes its key's bucket */
#define XTX_WARM_LOCK	2u	/* the op takes, checks or releases its key's lock slot */
#define XTX_WARM_VALUE	4u	/* the op reads or replaces its key's value */

static __always_inline __u32 xtx_warm_kind(const struct xtx_op *op)
{
	switch (op->opcode) {
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
		return (op->flags & XTX_OPF_NO_VALUE) ? XTX_WARM_LOCK :
		       XTX_WARM_KV | XTX_WARM_LOCK | XTX_WARM_VALUE;
	case XTX_OP_UNLOCK_SHARED:
	case XTX_OP_UNLOCK_EXCL:
	case XTX_OP_OCC_UNLOCK:
		return XTX_WARM_LOCK;
	case XTX_OP_OCC_VALIDATE:
		return XTX_WARM_KV | XTX_WARM_LOCK;
	case XTX_OP_READ:
	case XTX_OP_COMMIT_PRIMARY:
		return XTX_WARM_KV | XTX_WARM_LOCK | XTX_WARM_VALUE;
	case XTX_OP_INSERT:
	case XTX_OP_DELETE:
		return XTX_WARM_KV;
	case XTX_OP_GET:
	case XTX_OP_UPDATE:
	case XTX_OP_COMMIT_BACKUP:
	case XTX_OP_HREAD:
	case XTX_OP_HWRITE:
		return XTX_WARM_KV | XTX_WARM_VALUE;
	case XTX_OP_LOG_APPEND:
		return (op->flags & XTX_OPF_LOG_META) ? 0 : XTX_WARM_LOCK;
	default:
		return 0;
	}
}

/* A load the compiler must keep and nothing waits for: the line of byte p. */
static __always_inline void xtx_warm_line(const void *p)
{
	(void)*(const volatile __u8 *)p;
}

/*
 * The bucket's header is its first three lines (include/xtx/kv.h): the
 * lock and slot states, the keys, the versions.  A lock slot's 48 bytes lie on one or two lines: its first and last
 * byte.  The values wait for a second pass: which way holds the key is
 * known only once the bucket's keys have arrived, and by then every
 * packet's header lines are on their way together.
 */
__noinline int xtx_warm_ops(struct xdp_md *ctx, __u32 nops)
{
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();
	__u32 i, kind, idx;

	if (!pc)
		return 0;
	for (i = 0; i < XTX_MAX_OPS && i < nops; i++) {
		struct xtx_op *op = xtx_op_at(ctx, i);
		struct xtx_kv_bucket *b;
		struct xtx_lock_slot *s;
		__u64 h;

		if (!op)
			break;
		kind = xtx_warm_kind(op);
		if (!kind)
			continue;
		h = xtx_op_hash(pc, i);
		if (kind & XTX_WARM_KV) {
			idx = xtx_bucket_of(h, xtx_kv_buckets);
			b = bpf_map_lookup_elem(&xtx_kv, &idx);
			if (b) {
				xtx_warm_line(&b->lock);
				xtx_warm_line(&b->key[0]);
				xtx_warm_line(&b->version[0]);
			}
		}
		if (kind & XTX_WARM_LOCK) {
			idx = xtx_lock_slot_of(h, xtx_lock_slots);
			s = bpf_map_lookup_elem(&xtx_locks, &idx);
			if (s) {
				xtx_warm_line(&s->spin);
				xtx_warm_line((const __u8 *)(s + 1) - 1);
			}
		}
	}
	for (i = 0; i < XTX_MAX_OPS && i < nops; i++) {
		struct xtx_op *op = xtx_op_at(ctx, i);
		struct xtx_kv_bucket *b;
		__u32 w;

		if (!op)
			break;
		if (!(xtx_warm_kind(op) & XTX_WARM_VALUE))
			continue;
		idx = xtx_bucket_of(xtx_op_hash(pc, i), xtx_kv_buckets);
		b = bpf_map_lookup_elem(&xtx_kv, &idx);
		if (!b)
			continue;
		/* unlocked reads: a way that changes meanwhile only warms a line for nothing */
		for (w = 0; w < XTX_KV_WAYS; w++) {
			if (b->key[w] == op->key) {
				xtx_warm_line(b->value[w]);
				xtx_warm_line(&b->value[w][XTX_VALUE_INLINE - 1]);
				break;
			}
		}
	}
	return 0;
}

#endif /* XTX_BPF_WARM_H */
