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
#include "csum.h"
#include "maps.h"
#include "stats.h"
#include "dedupe.h"
#include "exec.h"


/* How many ops may be deferred so that xtxd's reply, with its fixes, fits the MTU. */
static __always_inline __u32 xtx_defer_budget(__u32 nops)
{
	__u32 room = XTX_MAX_PAYLOAD - sizeof(struct xtx_hdr) - nops * sizeof(struct xtx_op);
	__u32 n;

	if (room < XTX_TRAILER_HDR_LEN + sizeof(struct xtx_fix_entry))
		return 0;
	n = (room - XTX_TRAILER_HDR_LEN) / sizeof(struct xtx_fix_entry);
	return n < XTX_MAX_DEFERRED ? n : XTX_MAX_DEFERRED;
}

/*
 * Frees what the deferred ops hold when the packet cannot be handed over
 * (no tailroom): each answers RETRY, to be sent again in a later request.
 */
static __always_inline void xtx_defer_abort(struct xdp_md *ctx, struct xtx_pkt_ctx *pc)
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
		if (xtx_op_mutates(op->opcode) &&
		    (pc->mode == XTX_EXEC_RUN_RECORD || pc->mode == XTX_EXEC_REDEFER))
			xtx_dedupe_record(pc->rec_key, e->op_idx, op);
	}
	pc->ndeferred = 0;
}

/* Returns XDP_PASS with the trailer in place, or -1 when the frame cannot grow. */
static __always_inline int xtx_defer_pass(struct xdp_md *ctx, struct xtx_pkt_ctx *pc, __u32 nops)
{
	__u32 n = pc->ndeferred, i, ops_end, new_len;
	struct xtx_defer_trailer *t;
	struct iphdr *ip;
	struct udphdr *udp;
	void *data, *data_end;

	if (nops > XTX_MAX_OPS || n > XTX_MAX_DEFERRED)
		return -1;
	ops_end = XTX_OPS_OFF + nops * sizeof(struct xtx_op);
	new_len = ops_end + XTX_TRAILER_HDR_LEN + n * sizeof(struct xtx_defer_entry);
	if (bpf_xdp_adjust_tail(ctx, (int)new_len - (int)bpf_xdp_get_buff_len(ctx))) {
		xtx_count(XTX_CTR_KV_NO_ROOM);
		return -1;
	}

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	ip = data + XTX_IP_OFF;
	udp = data + XTX_UDP_OFF;
	if ((void *)(udp + 1) > data_end)
		return -1;
	ip->tot_len = bpf_htons(new_len - XTX_IP_OFF);
	ip->check = xtx_ip_csum(ip);
	udp->len = bpf_htons(new_len - XTX_UDP_OFF);
	/* the payload changed: no checksum rather than a wrong one (legal on IPv4) */
	udp->check = 0;

	t = data + ops_end;
	if ((void *)t + XTX_TRAILER_HDR_LEN > data_end)
		return -1;
	t->magic = XTX_DEFER_MAGIC;
	t->count = n;
	t->pad[0] = t->pad[1] = t->pad[2] = 0;
	for (i = 0; i < XTX_MAX_DEFERRED && i < n; i++) {
		if ((void *)&t->e[i + 1] > data_end)
			return -1;
		__builtin_memcpy(&t->e[i], &pc->deferred[i], sizeof(t->e[i]));
	}
	xtx_count(XTX_CTR_KV_DEFER_PKTS);
	xtx_count(XTX_CTR_PASS);
	return XDP_PASS;
}

#endif /* XTX_BPF_DEFER_H */
