/* SPDX-License-Identifier: GPL-2.0-only */
/* Validates and executes one op slot; each a global function verified once. */
#ifndef XTX_BPF_EXEC_H
#define XTX_BPF_EXEC_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "parse.h"
#include "stats.h"
#include "dedupe.h"
#include "ops_basic.h"
#include "locks.h"
#include "kv.h"
#include "txn.h"
#include "log.h"
#include "hades.h"
#include "pktctx.h"
#include "fault.h"
#include "family.h"
#include "area.h"

/*
 * Global (non-static, noinline) functions are verified once, on their own,
 * whatever number of call sites or loop iterations reach them: that keeps
 * verification cost flat as later ops join the switch below, instead of
 * multiplying every op's paths by the op-loop bound.
 */

#define XTX_VALID_MUTATES	0x100	/* xtx_validate_op: op needs a dedupe record */
#define XTX_VALID_EXT		0x200	/* xtx_validate_op: op has a value area */

/*
 * Checks an op before anything in the packet runs, so a packet holding one
 * bad op changes no state.  Returns XTX_ST_OK (| XTX_VALID_MUTATES) or the
 * op's refusal status.
 */
__noinline int xtx_validate_op(struct xdp_md *ctx, __u32 idx, __u32 client_id)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();
	int mutates;

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	/* every later step of the op places it from this one hash (PING and the like have no key) */
	if (op->opcode >= XTX_OP_LOCK_SHARED)
		pc->hash[idx & (XTX_MAX_OPS - 1)] = xtx_hash(op->table, op->key);
	mutates = xtx_op_mutates(op->opcode) ? XTX_VALID_MUTATES : 0;
	if (op->vlen > XTX_VALUE_INLINE || op->table >= XTX_MAX_TABLES)
		return XTX_ST_BAD_ARG;
	if (op->flags & XTX_OPF_EXT) {
		if (!xtx_ext_args_ok(op) || !xtx_ext_served(op->opcode) ||
		    xtx_ext_of(op)->len > xtx_value_size)
			return XTX_ST_BAD_ARG;
		mutates |= XTX_VALID_EXT;
	}
	switch (op->opcode) {
	case XTX_OP_PING:
	case XTX_OP_STATS:
	case XTX_OP_COUNTER_ADD:
		return XTX_ST_OK | mutates;
	case XTX_OP_GET:
	case XTX_OP_DELETE:
		return XTX_ST_OK | mutates;
	case XTX_OP_INSERT:
	case XTX_OP_UPDATE:
		if (op->vlen > xtx_value_size)
			return XTX_ST_BAD_ARG;
		return XTX_ST_OK | mutates;
	case XTX_OP_READ:
		return XTX_ST_OK | mutates;
	case XTX_OP_LOG_APPEND:
		if (op->vlen > xtx_value_size || !op->txn || xtx_txn_client(op->txn) != client_id)
			return op->vlen > xtx_value_size ? XTX_ST_BAD_ARG : XTX_ST_BAD_TXN;
		/* a participant list carries no write: never the last, a delete or a grant */
		if ((op->flags & XTX_OPF_LOG_META) &&
		    ((op->flags & (XTX_OPF_LOG_LAST | XTX_OPF_LOG_PRIMARY | XTX_OPF_DELETE)) ||
		     op->vlen || op->key))
			return XTX_ST_BAD_ARG;
		return XTX_ST_OK | mutates;
	case XTX_OP_COMMIT_BACKUP:
	case XTX_OP_COMMIT_PRIMARY:
		if (op->vlen > xtx_value_size)
			return XTX_ST_BAD_ARG;
		/* fall through: a commit belongs to a transaction too */
	case XTX_OP_LOCK_SHARED ... XTX_OP_OCC_VALIDATE:
		/* a lock belongs to a transaction of the client that sent it */
		if (!op->txn || xtx_txn_client(op->txn) != client_id)
			return XTX_ST_BAD_TXN;
		return XTX_ST_OK | mutates;
	case XTX_OP_HREAD ... XTX_OP_HABORT: {
		int st = xtx_hades_check(op, client_id);

		return st == XTX_ST_OK ? st | mutates : st;
	}
	default:
		return XTX_ST_UNKNOWN_OP;
	}
}


/*
 * A plain INSERT/UPDATE/DELETE: answered only once logged (log.h).  A full
 * log answers RETRY before anything runs: the drain makes room.  What goes
 * to xtxd is logged there (user/xtxd/log/userlog.h).
 */
static __noinline int xtx_op_plain_write(struct xdp_md *ctx, struct xtx_op *op, __u32 idx, struct xtx_pkt_ctx *pc,
					 bool force_defer)
{
	__u8 st;

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	if (!xtx_log_has_room()) {
		xtx_count(XTX_CTR_BUSY);
		return XTX_ST_RETRY;
	}
	st = xtx_op_kv(ctx, op, idx, pc, force_defer);
	if (st == XTX_ST_OK)
		xtx_log_plain_write(op, pc->client_id);
	return st;
}

/*
 * A replayed grant's value, which the record does not keep: read again,
 * under the lock the grant holds.  A grant whose hold is gone (its
 * transaction committed and let it go, or the lease took it back and
 * another transaction may have written the key) is answered NOT_HELD: the
 * value now is not what the grant read, and the client aborts.  Checked
 * before the read and again after it, so that an OK's value was read
 * under the hold.  Only this op says so: the request's other ops are
 * answered from the record as usual.  A read that cannot be had now
 * (bucket busy), or a hold that cannot be known (slot busy past the wait),
 * must not answer OK without the value: the request is retried whole
 * (redefer_busy), and nothing of it runs twice.  Returns the op's status:
 * OK, NOT_HELD, or DEFERRED when xtxd reads it.  Global: its KV code is
 * verified once, and its stack is not xtx_exec_op's.
 */
__noinline int xtx_replay_grant_value(struct xdp_md *ctx, __u32 idx)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();
	int shared, held;
	__u8 st;

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	shared = op->opcode == XTX_OP_LOCK_SHARED;
	held = xtx_lock_holds(xtx_op_hash(pc, idx), op->txn, op->token, shared);
	if (held == 0)
		goto lapsed;
	if (held < 0) {
		pc->redefer_busy = 1;
		return XTX_ST_OK;
	}
	st = xtx_op_kv(ctx, op, idx, pc, false);
	if (st == XTX_ST_DEFERRED)
		return st;
	op = xtx_op_at(ctx, idx);
	if (!op)
		return XTX_ST_MALFORMED;
	held = st == XTX_ST_OK ? xtx_lock_holds(xtx_op_hash(pc, idx), op->txn, op->token, shared) : -1;
	if (held == 0)
		goto lapsed;
	if (held < 0)
		pc->redefer_busy = 1;
	return XTX_ST_OK;
lapsed:
	xtx_count(XTX_CTR_REPLAY_LAPSED);
	return XTX_ST_NOT_HELD;
}

/* Runs op idx of the packet described by xtx_pkt_ctx; returns its status. */
__noinline int xtx_exec_op(struct xdp_md *ctx, __u32 idx)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();
	bool mutates, force_defer = false;
	struct xtx_stats *s;
	__u32 fam;
	__u8 status;

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	mutates = xtx_op_mutates(op->opcode);
	if (mutates && (pc->mode == XTX_EXEC_REPLAY || pc->mode == XTX_EXEC_REDEFER)) {
		bool want_value = !(op->flags & XTX_OPF_NO_VALUE);

		status = xtx_dedupe_replay(pc->rec_key, idx, op);
		if (status == XTX_ST_DEFERRED) {
			/*
			 * It went to xtxd and no answer came back: to xtxd
			 * again, with the arguments it went with then (op has
			 * them now), where its own record answers it if it ran.
			 */
			force_defer = true;
		} else if (status != XTX_ST_NONE || pc->mode == XTX_EXEC_REPLAY) {
			if (status == XTX_ST_OK && want_value && xtx_is_acquire(op->opcode)) {
				status = xtx_replay_grant_value(ctx, idx);
				op = xtx_op_at(ctx, idx);
				if (!op)
					return XTX_ST_MALFORMED;
			}
			op->status = status;
			return status;
		}
		/* no record in a request taken over: the op never ran, and runs now */
	}

	fam = xtx_op_family(op->opcode);
	/*
	 * A packet's ops mostly share a table: one admission each.  An op
	 * going to xtxd again was admitted when it first ran.
	 */
	if (fam && !force_defer && pc->fam_admitted != (op->table | fam << 8)) {
		status = xtx_family_admit(op->table, fam, xtx_now(pc), pc->lock_lease_ns);
		if (status != XTX_ST_OK) {
			op->status = status;
			goto out;
		}
		pc->fam_admitted = op->table | fam << 8;
	}
	switch (op->opcode) {
	case XTX_OP_PING:
		status = xtx_op_ping(op, pc->lock_lease_ns);
		break;
	case XTX_OP_STATS:
		status = xtx_op_stats(op);
		break;
	case XTX_OP_COUNTER_ADD:
		status = xtx_op_counter_add(op);
		break;
	case XTX_OP_LOCK_SHARED ... XTX_OP_OCC_VALIDATE:
	case XTX_OP_READ ... XTX_OP_COMMIT_PRIMARY:
		status = xtx_op_txn(ctx, op, idx, pc, force_defer);
		break;
	case XTX_OP_GET:
		status = xtx_op_kv(ctx, op, idx, pc, force_defer);
		break;
	case XTX_OP_INSERT ... XTX_OP_DELETE:
		status = xtx_op_plain_write(ctx, op, idx, pc, force_defer);
		break;
	case XTX_OP_LOG_APPEND:
		/* a value over a slot: head and continuations from the value area */
		if (op->flags & XTX_OPF_EXT)
			status = xtx_log_append_ext(ctx, idx);
		else
			status = xtx_op_log_append(op, xtx_txn_client(op->txn));
		break;
	case XTX_OP_HREAD ... XTX_OP_HABORT:
		status = xtx_op_hades(ctx, idx, op->opcode, force_defer);
		break;
	default:
		status = XTX_ST_UNKNOWN_OP;
		break;
	}
	op->status = status;
out:
	/*
	 * A deferred op is recorded DEFERRED with the arguments it goes to
	 * xtxd with, and TC egress records xtxd's answer over it.  A
	 * re-deferral that could not go now is no answer: its request is
	 * retried whole (redefer_busy), and a recorded RETRY would make a
	 * later duplicate tell the client "did not run" for an op xtxd ran.
	 * A refusal before the op ran (MIXED) is an answer like any other.
	 */
	if (mutates && !(force_defer && status == XTX_ST_RETRY) &&
	    (pc->mode == XTX_EXEC_RUN_RECORD || pc->mode == XTX_EXEC_REDEFER))
		xtx_dedupe_record(pc->rec_key, idx, op);
	s = xtx_stats_cpu();
	if (s) {
		xtx_count_op(s, op->opcode, status);
		s->ctr[XTX_CTR_OPS]++;
	}
	return status;
}

#endif /* XTX_BPF_EXEC_H */
