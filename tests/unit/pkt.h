/* SPDX-License-Identifier: GPL-2.0-only */
/* Builds Ethernet/IPv4/UDP frames around xtx payloads for BPF_PROG_TEST_RUN. */
#ifndef XTX_TEST_PKT_H
#define XTX_TEST_PKT_H

#include <stddef.h>
#include <stdint.h>

#define PKT_MAX 2048

/* Offsets in a frame built by pkt_build (no IP options). */
#define PKT_IP_OFF 14
#define PKT_UDP_OFF 34
#define PKT_PAYLOAD_OFF 42

struct pkt_addrs {
	uint8_t src_mac[6], dst_mac[6];
	uint32_t saddr, daddr;	/* host order */
	uint16_t sport, dport;
};

extern const struct pkt_addrs pkt_default_addrs;

/* Writes a frame carrying payload into buf; returns the frame length. */
size_t pkt_build(uint8_t *buf, const struct pkt_addrs *a, const void *payload, size_t len);
/* One's-complement checksum of an IPv4 header; 0 when it is valid. */
uint16_t pkt_ip_csum(const uint8_t *iphdr, size_t len);

#endif /* XTX_TEST_PKT_H */
