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
#include "fault.h"

/*
 * Global (non-static, noinline) functions are verified once, on their own,
 * whatever number of call sites or loop iterations reach them: that keeps
 * verification cost flat as later ops join the switch below, instead of
 * multiplying every op's paths by the op-loop bound.
 */

#define XTX_VALID_MUTATES	0x100	/* xtx_validate_op: op needs a dedupe record */

/*
 * Checks an op before anything in the packet runs, so a packet holding one
 * bad op changes no state.  Returns XTX_ST_OK (| XTX_VALID_MUTATES) or the
 * op's refusal status.
 */
__noinline int xtx_validate_op(struct xdp_md *ctx, __u32 idx, __u32 client_id)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	int mutates;

	if (!op)
		return XTX_ST_MALFORMED;
	mutates = xtx_op_mutates(op->opcode) ? XTX_VALID_MUTATES : 0;
	if (op->vlen > XTX_VALUE_MAX || op->table >= XTX_MAX_TABLES)
		return XTX_ST_BAD_ARG;
	switch (op->opcode) {
	case XTX_OP_PING:
	case XTX_OP_STATS:
	case XTX_OP_COUNTER_ADD:
		return XTX_ST_OK | mutates;
	case XTX_OP_LOCK_SHARED ... XTX_OP_OCC_VALIDATE:
		/* a lock belongs to a transaction of the client that sent it */
		if (!op->txn || xtx_txn_client(op->txn) != client_id)
			return XTX_ST_BAD_TXN;
		return XTX_ST_OK | mutates;
	default:
		return XTX_ST_UNKNOWN_OP;
	}
}

enum xtx_exec_mode {
	XTX_EXEC_RUN,		/* first execution */
	XTX_EXEC_RUN_RECORD,	/* first execution of a packet with a dedupe record */
	XTX_EXEC_REPLAY,	/* duplicate: answer from the record */
};

static __always_inline struct xtx_pkt_ctx *xtx_pkt_ctx_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xtx_pkt_ctx, &zero);
}

/*
 * The clock, read at most once per packet and only by ops that need it:
 * bpf_ktime_get_ns() costs about as much as a whole PING packet here.
 */
static __always_inline __u64 xtx_now(struct xtx_pkt_ctx *pc)
{
	if (!pc->now)
		pc->now = bpf_ktime_get_ns();
	return pc->now;
}

/* Runs op idx of the packet described by xtx_pkt_ctx; returns its status. */
__noinline int xtx_exec_op(struct xdp_md *ctx, __u32 idx)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();
	struct xtx_stats *s;
	__u8 status;

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	if (pc->mode == XTX_EXEC_REPLAY && xtx_op_mutates(op->opcode)) {
		op->status = xtx_dedupe_replay(pc->rec_key, idx, op);
		return op->status;
	}

	switch (op->opcode) {
	case XTX_OP_PING:
		status = xtx_op_ping(op);
		break;
	case XTX_OP_STATS:
		status = xtx_op_stats(op);
		break;
	case XTX_OP_COUNTER_ADD:
		status = xtx_op_counter_add(op);
		break;
	case XTX_OP_LOCK_SHARED ... XTX_OP_OCC_VALIDATE:
		status = xtx_op_lock(op, xtx_now(pc), pc->lock_lease_ns);
		break;
	default:
		status = XTX_ST_UNKNOWN_OP;
		break;
	}
	op->status = status;
	if (pc->mode == XTX_EXEC_RUN_RECORD && xtx_op_mutates(op->opcode))
		xtx_dedupe_record(pc->rec_key, idx, op);

	s = xtx_stats_cpu();
	if (s) {
		xtx_count_op(s, op->opcode, status);
		s->ctr[XTX_CTR_OPS]++;
	}
	return status;
}

#endif /* XTX_BPF_EXEC_H */
