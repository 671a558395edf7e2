/* SPDX-License-Identifier: GPL-2.0-only */
/* Hands a packet with deferred ops to xtxd: append the defer trailer, fix lengths, pass. */
#ifndef XTX_BPF_DEFER_H
#define XTX_BPF_DEFER_H

#include <linux/bpf.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <xtx/proto.h>
#include <xtx/kv.h>
#include "parse.h"
#include "maps.h"
#include "stats.h"
#include "dedupe.h"
#include "exec.h"


/*
 * How many ops may be deferred so that xtxd's reply (the request's body,
 * value area included, then a fix entry per op and the footer) fits the MTU.
 */
static __always_inline __u32 xtx_defer_budget(__u32 payload_len)
{
	__u32 room, n;

	if (payload_len + XTX_FIX_TRAILER_LEN(1) > XTX_MAX_PAYLOAD)
		return 0;
	room = XTX_MAX_PAYLOAD - payload_len - sizeof(struct xtx_fix_footer);
	n = room / sizeof(struct xtx_fix_entry);
	return n < XTX_MAX_DEFERRED ? n : XTX_MAX_DEFERRED;
}

/*
 * Frees what the deferred ops hold when the packet cannot be handed over
 * (no tailroom): each answers RETRY, to be sent again in a later request.
 */
static __always_inline void xtx_defer_abort(struct xdp_md *ctx, struct xtx_pkt_ctx *pc,
					    bool record)
{
	__u32 i;

	for (i = 0; i < XTX_MAX_DEFERRED && i < pc->ndeferred; i++) {
		struct xtx_defer_entry *e = &pc->deferred[i];
		struct xtx_kv_bucket *b = bpf_map_lookup_elem(&xtx_kv, &e->bucket);
		struct xtx_op *op = xtx_op_at(ctx, e->op_idx);

		if (b)
			__sync_val_compare_and_swap(&b->lock, e->token, 0);
		if (!op)
			continue;
		op->status = XTX_ST_RETRY;
		if (record && xtx_op_mutates(op->opcode) &&
		    (pc->mode == XTX_EXEC_RUN_RECORD || pc->mode == XTX_EXEC_REDEFER))
			xtx_dedupe_record(pc->rec_key, e->op_idx, op);
	}
	pc->ndeferred = 0;
}

/*
 * Records the deferred ops in this CPU's next defer-ring slot and passes
 * the packet to xtxd.  Returns XDP_PASS, or -1 when it cannot (the caller
 * then answers the deferred ops RETRY).
 */
static __always_inline int xtx_defer_pass(struct xdp_md *ctx, struct xtx_pkt_ctx *pc)
{
	__u32 cpu = bpf_get_smp_processor_id(), ticket;
	struct xtx_defer_record *rec;
	struct xtx_hdr *hdr;
	struct udphdr *udp;
	void *data, *data_end;

	ticket = cpu * XTX_DEFER_RING + (pc->ring_pos++ & (XTX_DEFER_RING - 1));
	rec = bpf_map_lookup_elem(&xtx_defer_ring, &ticket);
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	udp = data + XTX_UDP_OFF;
	hdr = data + XTX_HDR_OFF;
	if (!rec || (void *)(hdr + 1) > data_end || pc->ndeferred > XTX_MAX_DEFERRED) {
		xtx_count(XTX_CTR_KV_NO_ROOM);
		return -1;
	}
	rec->client_id = hdr->client_id;
	rec->body_len = pc->payload_len;
	rec->req_id = hdr->req_id;
	rec->t.magic = XTX_DEFER_MAGIC;
	rec->t.count = pc->ndeferred;
	__builtin_memcpy(rec->t.e, pc->deferred, sizeof(rec->t.e));
	hdr->reserved = ticket + 1;
	/* statuses changed in the payload: no checksum rather than a wrong one (IPv4) */
	udp->check = 0;
	xtx_count(XTX_CTR_KV_DEFER_PKTS);
	xtx_count(XTX_CTR_PASS);
	return XDP_PASS;
}

#endif /* XTX_BPF_DEFER_H */
