/* SPDX-License-Identifier: GPL-2.0-only */
/* Classifies a frame: not xtx (pass), unsound xtx (drop), or an xtx request. */
#ifndef XTX_BPF_PARSE_H
#define XTX_BPF_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "config.h"

/*
 * Requests carry no IP options, so every xtx field sits at a constant
 * offset; the verifier then needs one bounds check per op slot.
 */
#define XTX_L2_LEN	sizeof(struct ethhdr)
#define XTX_IP_OFF	XTX_L2_LEN
#define XTX_UDP_OFF	(XTX_IP_OFF + sizeof(struct iphdr))
#define XTX_HDR_OFF	(XTX_UDP_OFF + sizeof(struct udphdr))
#define XTX_OPS_OFF	(XTX_HDR_OFF + sizeof(struct xtx_hdr))

enum xtx_parse_verdict {
	XTX_PARSE_NOT_OURS,	/* any other traffic: XDP_PASS untouched */
	XTX_PARSE_DROP,		/* to the xtx port but not a sound request */
	XTX_PARSE_REQUEST,	/* header present and magic right */
};

struct xtx_parsed {
	__u32 payload_len;	/* UDP payload bytes, from a checked length */
	__u32 drop_counter;	/* XTX_CTR_* reason when XTX_PARSE_DROP */
	__u32 saddr;		/* the sender, network order */
};

#define IP_MF		0x2000
#define IP_OFFSET	0x1fff

static __always_inline int xtx_parse(struct xdp_md *ctx, struct xtx_parsed *p)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + XTX_IP_OFF;
	struct udphdr *udp = data + XTX_UDP_OFF;
	struct xtx_hdr *hdr = data + XTX_HDR_OFF;
	__u32 ulen;

	if ((void *)(udp + 1) > data_end)
		return XTX_PARSE_NOT_OURS;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->version != 4 ||
	    ip->protocol != IPPROTO_UDP)
		return XTX_PARSE_NOT_OURS;
	/*
	 * With options the UDP header is elsewhere: look at the real port
	 * before deciding the frame is ours.
	 */
	if (ip->ihl != 5) {
		struct udphdr *ou = data + XTX_IP_OFF + (ip->ihl & 0xf) * 4;

		if ((void *)(ou + 1) > data_end || ou->dest != bpf_htons(xtx_port))
			return XTX_PARSE_NOT_OURS;
		p->drop_counter = XTX_CTR_IP_OPTIONS;
		return XTX_PARSE_DROP;
	}
	if (udp->dest != bpf_htons(xtx_port))
		return XTX_PARSE_NOT_OURS;
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)) {
		p->drop_counter = XTX_CTR_IP_OPTIONS;
		return XTX_PARSE_DROP;
	}

	ulen = bpf_ntohs(udp->len);
	if (ulen < sizeof(*udp) + sizeof(*hdr) ||
	    (void *)udp + ulen > data_end || (void *)(hdr + 1) > data_end) {
		p->drop_counter = XTX_CTR_TRUNCATED;
		return XTX_PARSE_DROP;
	}
	/* A reply arriving at the server port is never answered: no loops. */
	if (hdr->magic != XTX_MAGIC || (hdr->flags & XTX_F_REPLY)) {
		p->drop_counter = XTX_CTR_BAD_MAGIC;
		return XTX_PARSE_DROP;
	}
	p->payload_len = ulen - sizeof(*udp);
	p->saddr = ip->saddr;
	return XTX_PARSE_REQUEST;
}

/* The op slot at index idx, or NULL when it is not inside the packet. */
static __always_inline struct xtx_op *xtx_op_at(struct xdp_md *ctx, __u32 idx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xtx_op *op;

	if (idx >= XTX_MAX_OPS)
		return NULL;
	op = data + XTX_OPS_OFF + idx * sizeof(struct xtx_op);
	if ((void *)(op + 1) > data_end)
		return NULL;
	return op;
}

static __always_inline struct xtx_hdr *xtx_hdr_of(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xtx_hdr *hdr = data + XTX_HDR_OFF;

	if ((void *)(hdr + 1) > data_end)
		return NULL;
	return hdr;
}

#endif /* XTX_BPF_PARSE_H */
