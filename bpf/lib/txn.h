/* SPDX-License-Identifier: GPL-2.0-only */
/* Transaction ops: a lock-table half and a KV half in one op (fused, per Xenic). */
#ifndef XTX_BPF_TXN_H
#define XTX_BPF_TXN_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <xtx/proto.h>
#include <xtx/hash.h>
#include "locks.h"
#include "kv.h"
#include "log.h"
#include "pktctx.h"
#include "parse.h"

/*
 * The lock half of op idx, a function of its own: verified once for every
 * op that has one, and its slot context off the caller's stack.
 */
__noinline int xtx_op_lock_idx(struct xdp_md *ctx, __u32 idx)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	return xtx_op_lock(op, xtx_op_hash(pc, idx), xtx_now(pc), pc->lock_lease_ns);
}

static __always_inline bool xtx_is_acquire(__u8 opcode)
{
	return opcode == XTX_OP_LOCK_SHARED || opcode == XTX_OP_LOCK_EXCL ||
	       opcode == XTX_OP_OCC_LOCK;
}

/*
 * A grant that cannot read its value right now (bucket busy) is undone:
 * the client sends the op again in a new request, and a second grant of a
 * re-entrant lock would otherwise leave a hold nobody releases.
 */
static __always_inline __u8 xtx_txn_acquire(struct xdp_md *ctx, struct xtx_op *op, __u32 idx,
					    struct xtx_pkt_ctx *pc)
{
	bool want_value = !(op->flags & XTX_OPF_NO_VALUE);
	__u32 ext = op->flags & XTX_OPF_EXT;
	__u8 st = xtx_op_lock_idx(ctx, idx);

	if (st != XTX_ST_OK || !want_value)
		return st;
	/* the lock half answered its state in flags: the read keeps the room it asked for */
	op->flags |= ext;
	st = xtx_op_kv(ctx, op, idx, pc, false);
	if (st == XTX_ST_OK || st == XTX_ST_DEFERRED)
		return st;
	/* the undo waits for the slot as a release does: RETRY must leave nothing held */
	if (xtx_lock_release(op->txn, xtx_op_hash(pc, idx), op->token,
			     op->opcode == XTX_OP_LOCK_SHARED) == XTX_ST_OK)
		return XTX_ST_RETRY;
	/*
	 * Still held (the slot stayed busy past the wait): sent again, the op
	 * would be granted a second time on top of this hold, and one release
	 * would leave the other.  A conflict instead: the transaction aborts
	 * without logging, and the lease takes the hold back.
	 */
	return XTX_ST_REJECTED;
}

/* Lock word first, then version: a lock held by another fails fast. */
static __always_inline __u8 xtx_txn_validate(struct xdp_md *ctx, struct xtx_op *op, __u32 idx,
					     struct xtx_pkt_ctx *pc)
{
	__u8 st = xtx_op_lock_idx(ctx, idx);
	bool broken = pc->rt_flags & XTX_RTF_BREAK_VALIDATE;

	if (st != XTX_ST_OK)
		return st;
	if ((op->flags & XTX_LOCKF_EXCL) && !(op->flags & XTX_LOCKF_MINE) && !broken)
		return XTX_ST_LOCKED;
	st = xtx_op_kv(ctx, op, idx, pc, false);
	return st == XTX_ST_CHANGED && broken ? XTX_ST_OK : st;
}

/* A read reports the key's lock state too: a FaSST reader aborts on a locked key. */
static __always_inline __u8 xtx_txn_read(struct xdp_md *ctx, struct xtx_op *op, __u32 idx,
					 struct xtx_pkt_ctx *pc)
{
	struct xtx_lock_ctx c = { .txn = op->txn, .hash = xtx_op_hash(pc, idx) };
	struct xtx_lock_slot *s = xtx_lock_slot_get(c.hash);
	__u8 st = xtx_op_kv(ctx, op, idx, pc, false);

	/* a read xtxd answers keeps its room (xtx_op_kv cleared it when answered here) */
	op->flags &= XTX_OPF_EXT;
	if (s && !(pc->rt_flags & XTX_RTF_BREAK_VALIDATE))
		op->flags |= xtx_lock_state(s, c.txn);
	return st;
}

/*
 * Commit at the primary: install, then release the transaction's lock.
 * An install that went to xtxd keeps the lock until xtxd has answered (TC
 * egress releases it, XTX_FIX_RELEASE): the bucket lock it also holds is
 * taken over after the KV lease, and another transaction granted the key
 * meanwhile could read the old copy and commit over it, so that xtxd's
 * answer (RETRY: the install could not run) and the resend it asks for
 * would find the key moved on and the write lost.
 */
static __always_inline __u8 xtx_txn_commit_primary(struct xdp_md *ctx, struct xtx_op *op,
						   __u32 idx, struct xtx_pkt_ctx *pc)
{
	__u8 st = xtx_op_kv(ctx, op, idx, pc, false), rel;

	if (st == XTX_ST_RETRY || st == XTX_ST_BAD_ARG || st == XTX_ST_DEFERRED)
		return st;
	rel = xtx_lock_release_excl(op->txn, xtx_op_hash(pc, idx), op->token);
	return rel == XTX_ST_OK ? st : rel;
}

/* Runs a transaction op; force_defer: see xtx_op_kv(). */
static __always_inline __u8 xtx_op_txn(struct xdp_md *ctx, struct xtx_op *op, __u32 idx,
				       struct xtx_pkt_ctx *pc, bool force_defer)
{
	__u8 opcode = op->opcode;

	/* the lock half already ran the first time: only xtxd's record is left */
	if (force_defer)
		return xtx_op_kv(ctx, op, idx, pc, true);
	if (xtx_is_acquire(opcode))
		return xtx_txn_acquire(ctx, op, idx, pc);
	if (opcode == XTX_OP_OCC_VALIDATE)
		return xtx_txn_validate(ctx, op, idx, pc);
	if (opcode == XTX_OP_READ)
		return xtx_txn_read(ctx, op, idx, pc);
	if (opcode == XTX_OP_COMMIT_PRIMARY || opcode == XTX_OP_COMMIT_BACKUP) {
		/* the commit mark (log.h), unless the op must come again (RETRY) */
		__u8 st = opcode == XTX_OP_COMMIT_PRIMARY ? xtx_txn_commit_primary(ctx, op, idx, pc) :
			  xtx_op_kv(ctx, op, idx, pc, false);

		if (st != XTX_ST_RETRY)
			xtx_log_commit_mark(op, pc->client_id);
		return st;
	}
	/* releases */
	return xtx_op_lock_idx(ctx, idx);
}

#endif /* XTX_BPF_TXN_H */
