// SPDX-License-Identifier: GPL-2.0-only
/* Frame construction for the XDP unit tests. */
#include <arpa/inet.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <netinet/in.h>
#include <xtx/proto.h>
#include "pkt.h"

const struct pkt_addrs pkt_default_addrs = {
	.src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
	.dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
	.saddr = 0x0a4d0001,	/* 10.77.0.1 */
	.daddr = 0x0a4d0002,	/* 10.77.0.2 */
	.sport = 40000,
	.dport = XTX_DEFAULT_PORT,
};

uint16_t pkt_ip_csum(const uint8_t *iphdr, size_t len)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)iphdr[i] << 8 | iphdr[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

size_t pkt_build(uint8_t *buf, const struct pkt_addrs *a, const void *payload, size_t len)
{
	struct ethhdr *eth = (struct ethhdr *)buf;
	struct iphdr *ip = (struct iphdr *)(buf + PKT_IP_OFF);
	struct udphdr *udp = (struct udphdr *)(buf + PKT_UDP_OFF);
	uint16_t csum;

	memset(buf, 0, PKT_PAYLOAD_OFF);
	memcpy(eth->h_dest, a->dst_mac, 6);
	memcpy(eth->h_source, a->src_mac, 6);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons(sizeof(*ip) + sizeof(*udp) + len);
	ip->id = htons(0x1234);
	ip->saddr = htonl(a->saddr);
	ip->daddr = htonl(a->daddr);
	csum = pkt_ip_csum((uint8_t *)ip, sizeof(*ip));
	ip->check = htons(csum);
	udp->source = htons(a->sport);
	udp->dest = htons(a->dport);
	udp->len = htons(sizeof(*udp) + len);
	udp->check = htons(0xbeef);	/* nonzero: a reply must clear it */
	memcpy(buf + PKT_PAYLOAD_OFF, payload, len);
	return PKT_PAYLOAD_OFF + len;
}
