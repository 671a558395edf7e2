/* SPDX-License-Identifier: GPL-2.0-only */
/* Turns a request frame into its reply in place: addresses, ports, checksums. */
#ifndef XTX_BPF_REPLY_H
#define XTX_BPF_REPLY_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <xtx/proto.h>
#include "parse.h"

/*
 * Swapping source and destination leaves the IPv4 header checksum valid
 * (the one's-complement sum is order-independent, see csum.h) and the
 * length is unchanged, so only the UDP checksum needs care: 0 means "none"
 * on IPv4, cheaper than recomputing it over the payload we rewrote.
 */
static __always_inline int xtx_make_reply(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + XTX_IP_OFF;
	struct udphdr *udp = data + XTX_UDP_OFF;
	struct xtx_hdr *hdr = data + XTX_HDR_OFF;
	unsigned char mac[ETH_ALEN];
	__be32 addr;
	__be16 port;

	if ((void *)(hdr + 1) > data_end)
		return -1;
	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	addr = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = addr;
	port = udp->source;
	udp->source = udp->dest;
	udp->dest = port;
	udp->check = 0;
	hdr->flags |= XTX_F_REPLY;
	return 0;
}

#endif /* XTX_BPF_REPLY_H */
