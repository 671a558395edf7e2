// SPDX-License-Identifier: GPL-2.0-only
/* XDP entry: serve xtx requests in place and answer with XDP_TX. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "lib/allow.h"
#include "lib/config.h"
#include "lib/maps.h"
#include "lib/parse.h"
#include "lib/reply.h"
#include "lib/stats.h"
#include "lib/dedupe.h"
#include "lib/exec.h"
#include "lib/fault.h"
#include "lib/kv.h"
#include "lib/defer.h"
#include "lib/pktctx.h"
#include "lib/warm.h"
#include "lib/area.h"

char LICENSE[] SEC("license") = "GPL";

/* Marks every op slot present with status st. */
static __always_inline void xtx_mark_ops(struct xdp_md *ctx, __u32 nops, __u8 st)
{
	__u32 i;

	for (i = 0; i < XTX_MAX_OPS; i++) {
		struct xtx_op *op = xtx_op_at(ctx, i);

		if (i >= nops || !op)
			break;
		op->status = st;
	}
}


/*
 * Header checks that need no op: version, reserved bits, op count, client.
 * A MAC left here is one no secret checked (xtx_mac_ok clears a checked
 * one): without a secret a request carries none.
 */
static __always_inline int xtx_check_header(struct xtx_hdr *hdr, __u32 payload_len,
					    __u32 *counter)
{
	__u32 ops_end;

	if (hdr->version != XTX_VERSION) {
		*counter = XTX_CTR_BAD_VERSION;
		return XTX_ST_BAD_VERSION;
	}
	/*
	 * the ops it says, then at most a value area (its tiling is checked
	 * with the ops): other trailing bytes are somebody's mistake, not ours
	 * to guess
	 */
	ops_end = sizeof(*hdr) + (__u32)hdr->nops * sizeof(struct xtx_op);
	if (hdr->nops == 0 || hdr->nops > XTX_MAX_OPS || hdr->reserved || hdr->mac ||
	    payload_len < ops_end ||
	    (payload_len > ops_end && payload_len > XTX_MAX_REQUEST)) {
		*counter = XTX_CTR_MALFORMED;
		return XTX_ST_MALFORMED;
	}
	if (hdr->client_id >= xtx_max_clients || hdr->req_id == 0 ||
	    hdr->req_id >= (1ull << 62)) {
		*counter = XTX_CTR_BAD_CLIENT;
		return XTX_ST_BAD_CLIENT;
	}
	return XTX_ST_OK;
}

/*
 * Validates every op and the value area's tiling; on a refusal marks the
 * culprit (an op, or every op for a malformed area) and returns its status.
 */
static __always_inline int xtx_validate_all(struct xdp_md *ctx, __u32 nops, __u32 client_id,
					    __u32 payload_len, int *mutates)
{
	__u32 ops_end = sizeof(struct xtx_hdr) + nops * sizeof(struct xtx_op), i;
	int v, ext = 0;

	/* the packet's shape before any op's arguments; one without an area pays nothing */
	if (payload_len != ops_end && !xtx_area_tiles(ctx, nops, payload_len)) {
		xtx_mark_ops(ctx, nops, XTX_ST_NOT_EXECUTED);
		return XTX_ST_MALFORMED;
	}
	for (i = 0; i < XTX_MAX_OPS && i < nops; i++) {
		v = xtx_validate_op(ctx, i, client_id);
		if ((v & 0xff) != XTX_ST_OK) {
			xtx_mark_ops(ctx, nops, XTX_ST_NOT_EXECUTED);
			struct xtx_op *op = xtx_op_at(ctx, i);

			if (op)
				op->status = v & 0xff;
			return v & 0xff;
		}
		*mutates |= v & XTX_VALID_MUTATES;
		ext |= v & XTX_VALID_EXT;
	}
	/* an area op in a packet that has no area points past its end */
	if (ext && payload_len == ops_end) {
		xtx_mark_ops(ctx, nops, XTX_ST_NOT_EXECUTED);
		return XTX_ST_MALFORMED;
	}
	return XTX_ST_OK;
}

static __always_inline int xtx_reply(struct xdp_md *ctx, const struct xtx_runtime *rt)
{
	if (xtx_fault_drop_reply(rt)) {
		xtx_count(XTX_CTR_FAULT_DROP);
		return XDP_DROP;
	}
	if (xtx_make_reply(ctx))
		return XDP_DROP;
	xtx_count(XTX_CTR_TX);
	return XDP_TX;
}

/* An error reply: the packet is refused as a whole and no op has run. */
static __always_inline int xtx_refuse(struct xdp_md *ctx, const struct xtx_runtime *rt,
				      __u32 nops, __u8 st, __u32 counter)
{
	struct xtx_hdr *hdr = xtx_hdr_of(ctx);

	if (!hdr)
		return XDP_DROP;
	hdr->status = st;
	xtx_mark_ops(ctx, nops, XTX_ST_NOT_EXECUTED);
	xtx_count(counter);
	return xtx_reply(ctx, rt);
}

SEC("xdp")
int xtx_xdp(struct xdp_md *ctx)
{
	struct xtx_parsed p = {};
	struct xtx_runtime *rt;
	struct xtx_pkt_ctx *pc;
	struct xtx_hdr *hdr;
	struct xtx_epoch_lease *el;
	__u32 nops, counter = 0, i, zero = 0;
	int st, mutates = 0;

	switch (xtx_parse(ctx, &p)) {
	case XTX_PARSE_NOT_OURS:
		return XDP_PASS;
	case XTX_PARSE_DROP:
		xtx_count(XTX_CTR_RX);
		xtx_count(p.drop_counter);
		xtx_count(XTX_CTR_DROP);
		return XDP_DROP;
	}
	xtx_count(XTX_CTR_RX);
	rt = xtx_runtime_cfg();
	pc = xtx_pkt_ctx_get();
	if (!pc)
		return XDP_DROP;
	if (!xtx_allowed(rt, pc, p.saddr)) {
		xtx_count(XTX_CTR_NOT_ALLOWED);
		xtx_count(XTX_CTR_DROP);
		return XDP_DROP;
	}
	if (xtx_fault_drop_request(rt)) {
		xtx_count(XTX_CTR_FAULT_DROP);
		return XDP_DROP;
	}

	hdr = xtx_hdr_of(ctx);
	if (!hdr)
		return XDP_DROP;
	nops = hdr->nops;
	if (!xtx_mac_ok(rt, ctx, p.payload_len)) {
		xtx_count(XTX_CTR_BAD_MAC);
		xtx_count(XTX_CTR_DROP);
		return XDP_DROP;
	}
	st = xtx_check_header(hdr, p.payload_len, &counter);
	if (st != XTX_ST_OK)
		return xtx_refuse(ctx, rt, nops, st, counter);
	/* routed by another configuration: its keys may not be ours, nor ours alone */
	el = bpf_map_lookup_elem(&xtx_epoch, &zero);
	if (el) {
		/* each field read once, as xtxd stores it: whole */
		__u64 until = *(volatile __u64 *)&el->until_ns;
		__u16 served = (__u16)*(volatile __u32 *)&el->epoch;

		/* boot time: a suspend does not stop a lease, as it does not stop a session */
		if (until && bpf_ktime_get_boot_ns() > until)
			served = XTX_EPOCH_FENCED;
		/* a fenced server serves nobody, whatever a request claims */
		if (hdr->epoch != served || served == XTX_EPOCH_FENCED) {
			hdr->epoch = served;
			return xtx_refuse(ctx, rt, nops, XTX_ST_EPOCH, XTX_CTR_WRONG_EPOCH);
		}
	}

	if (xtx_echo_mode) {
		xtx_mark_ops(ctx, nops, XTX_ST_OK);
		hdr = xtx_hdr_of(ctx);
		if (hdr)
			hdr->status = XTX_ST_OK;
		return xtx_reply(ctx, rt);
	}

	st = xtx_validate_all(ctx, nops, hdr->client_id, p.payload_len, &mutates);
	if (st != XTX_ST_OK)
		return xtx_refuse(ctx, rt, 0, st,
				  st == XTX_ST_MALFORMED ? XTX_CTR_MALFORMED : XTX_CTR_BAD_OP);
	/* the tables' misses overlap here instead of queueing op by op below */
	if (!xtx_no_warm)
		xtx_warm_ops(ctx, nops);

	/* Only packets that change state pay for the dedupe record. */
	hdr = xtx_hdr_of(ctx);
	if (!hdr)
		return XDP_DROP;
	pc->now = 0;
	pc->lock_lease_ns = rt ? rt->lock_lease_ns : 0;
	pc->kv_lease_ns = rt ? rt->kv_lease_ns : 0;
	pc->rt_flags = rt ? rt->flags : 0;
	pc->client_id = hdr->client_id;
	pc->fam_admitted = 0;
	pc->mode = XTX_EXEC_RUN;
	pc->rec_key = 0;
	pc->ndeferred = 0;
	pc->redefer_busy = 0;
	pc->payload_len = p.payload_len;
	pc->max_deferred = xtx_defer_budget(p.payload_len);
	if (mutates) {
		__u64 req_id = hdr->req_id;

		pc->rec_key = xtx_dedupe_key(hdr->client_id, req_id);
		switch (xtx_dedupe_claim(pc->rec_key, req_id, nops, pc)) {
		case XTX_DEDUPE_NEW:
			pc->mode = XTX_EXEC_RUN_RECORD;
			break;
		case XTX_DEDUPE_DUPLICATE:
			pc->mode = XTX_EXEC_REPLAY;
			hdr->flags |= XTX_F_REPLAYED;
			xtx_count(XTX_CTR_REPLAYED);
			break;
		case XTX_DEDUPE_REDEFER:
			pc->mode = XTX_EXEC_REDEFER;
			xtx_count(XTX_CTR_REPLAYED);
			break;
		case XTX_DEDUPE_IN_FLIGHT:
			return xtx_refuse(ctx, rt, nops, XTX_ST_RETRY, XTX_CTR_BUSY);
		default:
			return xtx_refuse(ctx, rt, nops, XTX_ST_STALE, XTX_CTR_STALE);
		}
	}

	for (i = 0; i < XTX_MAX_OPS && i < nops; i++)
		xtx_exec_op(ctx, i);

	/* the dedupe record stays BUSY until TC egress sees xtxd's answer */
	if (pc->ndeferred && !pc->redefer_busy) {
		st = xtx_defer_pass(ctx, pc);
		if (st == XDP_PASS)
			return XDP_PASS;
		pc->redefer_busy = pc->mode == XTX_EXEC_REDEFER;
		if (!pc->redefer_busy)
			xtx_defer_abort(ctx, pc, true);
	}
	/*
	 * A re-deferral that cannot go now is no answer: its ops may have
	 * run in xtxd, so none is recorded RETRY ("did not run"), and the
	 * next copy of the request tries again at once.  Nor is a replay
	 * that could not read a grant's value again: the whole request is
	 * answered RETRY, nothing of it changed.
	 */
	if ((pc->mode == XTX_EXEC_REDEFER || pc->mode == XTX_EXEC_REPLAY) && pc->redefer_busy) {
		xtx_defer_abort(ctx, pc, false);
		if (pc->mode == XTX_EXEC_REDEFER)
			xtx_dedupe_expire(pc->rec_key);
		return xtx_refuse(ctx, rt, nops, XTX_ST_RETRY, XTX_CTR_BUSY);
	}
	hdr = xtx_hdr_of(ctx);
	if (!hdr)
		return XDP_DROP;
	if (pc->mode == XTX_EXEC_RUN_RECORD || pc->mode == XTX_EXEC_REDEFER)
		xtx_dedupe_done(pc->rec_key, hdr->req_id);
	hdr->status = XTX_ST_OK;
	return xtx_reply(ctx, rt);
}
