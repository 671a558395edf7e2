// SPDX-License-Identifier: GPL-2.0-only
/* Ethernet/IPv4/UDP headers for the AF_XDP transport: written from a per-server template, checked on receive. */
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include "frame.h"

#define IP_OFF		ETH_HLEN
#define UDP_OFF		(IP_OFF + (int)sizeof(struct iphdr))
#define IP_MF		0x2000
#define IP_OFFMASK	0x1fff

static uint32_t sum16(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t s = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	return s;
}

static uint16_t fold(uint32_t s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

void xtx_frame_tmpl_init(struct xtx_frame_tmpl *t, const uint8_t src_mac[6],
			 const uint8_t dst_mac[6], struct in_addr src, uint16_t src_port_be,
			 const struct sockaddr_in *dst)
{
	struct ethhdr eth = { .h_proto = htons(ETH_P_IP) };
	struct iphdr ip = {
		.version = 4,
		.ihl = 5,
		.ttl = 64,
		.protocol = IPPROTO_UDP,
		/* Not fragmented, and not to be: replies fit one frame. */
		.frag_off = htons(0x4000),
		.saddr = src.s_addr,
		.daddr = dst->sin_addr.s_addr,
	};
	struct udphdr udp = { .source = src_port_be, .dest = dst->sin_port };

	memset(t, 0, sizeof(*t));
	memcpy(eth.h_dest, dst_mac, ETH_ALEN);
	memcpy(eth.h_source, src_mac, ETH_ALEN);
	memcpy(t->hdr, &eth, sizeof(eth));
	memcpy(t->hdr + IP_OFF, &ip, sizeof(ip));
	memcpy(t->hdr + UDP_OFF, &udp, sizeof(udp));
	/* tot_len, id and check are 0 here: the sum covers the rest. */
	t->ip_csum_base = sum16(&ip, sizeof(ip));
}

void xtx_frame_build(const struct xtx_frame_tmpl *t, void *frame, size_t len, uint16_t ip_id)
{
	/*
	 * The headers are put together here and copied out whole: in a UMEM
	 * frame the IP header sits 14 bytes in, not 4-aligned.
	 */
	uint8_t hdr[XTX_FRAME_HDR_LEN] __attribute__((aligned(4)));
	struct iphdr ip;
	struct udphdr udp;
	uint16_t tot = (uint16_t)(len + sizeof(ip) + sizeof(udp));

	memcpy(hdr, t->hdr, sizeof(hdr));
	memcpy(&ip, hdr + IP_OFF, sizeof(ip));
	memcpy(&udp, hdr + UDP_OFF, sizeof(udp));
	ip.tot_len = htons(tot);
	ip.id = htons(ip_id);
	ip.check = htons((uint16_t)~fold(t->ip_csum_base + tot + ip_id));
	udp.len = htons((uint16_t)(len + sizeof(udp)));
	memcpy(hdr + IP_OFF, &ip, sizeof(ip));
	memcpy(hdr + UDP_OFF, &udp, sizeof(udp));
	memcpy(frame, hdr, sizeof(hdr));
}

enum xtx_frame_verdict xtx_frame_parse(const void *frame, size_t len, struct in_addr local,
				       uint16_t port_be, struct xtx_frame_view *v)
{
	const uint8_t *f = frame;
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
	size_t ihl, tot, ulen;

	/* Copies, not casts: the headers of a frame need not be aligned. */
	if (len < ETH_HLEN + sizeof(ip))
		return XTX_FRAME_MALFORMED;
	memcpy(&eth, f, sizeof(eth));
	memcpy(&ip, f + IP_OFF, sizeof(ip));
	if (eth.h_proto != htons(ETH_P_IP) || ip.version != 4 || ip.protocol != IPPROTO_UDP)
		return XTX_FRAME_NOT_OURS;
	ihl = (size_t)ip.ihl * 4;
	tot = ntohs(ip.tot_len);
	/* A frame may carry padding after the datagram, never less than it. */
	if (ihl < sizeof(ip) || tot < ihl + sizeof(udp) || ETH_HLEN + tot > len)
		return XTX_FRAME_MALFORMED;
	if (fold(sum16(f + IP_OFF, ihl)) != 0xffff)
		return XTX_FRAME_MALFORMED;
	if (ntohs(ip.frag_off) & (IP_MF | IP_OFFMASK))
		return XTX_FRAME_MALFORMED;
	memcpy(&udp, f + IP_OFF + ihl, sizeof(udp));
	ulen = ntohs(udp.len);
	if (ulen < sizeof(udp) || ulen != tot - ihl)
		return XTX_FRAME_MALFORMED;
	if (ip.daddr != local.s_addr || udp.dest != port_be)
		return XTX_FRAME_NOT_OURS;
	/*
	 * The UDP checksum is not checked: a veth hands over frames whose
	 * checksum the sender's kernel left for "hardware" to finish.  The
	 * xtx header's magic and the match against the request stand in.
	 */
	memset(&v->from, 0, sizeof(v->from));
	v->from.sin_family = AF_INET;
	v->from.sin_addr.s_addr = ip.saddr;
	v->from.sin_port = udp.source;
	v->payload = f + IP_OFF + ihl + sizeof(udp);
	v->len = ulen - sizeof(udp);
	return XTX_FRAME_OK;
}
