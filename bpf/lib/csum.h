/* SPDX-License-Identifier: GPL-2.0-only */
/* Checksums: the IPv4 header sum, recomputed where a length changed. */
#ifndef XTX_BPF_CSUM_H
#define XTX_BPF_CSUM_H

#include <linux/ip.h>

/*
 * From scratch over the 20-byte header (xtx frames carry no options).
 * Swapping addresses needs none of this: the sum does not depend on order.
 */
static __always_inline __u16 xtx_ip_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;
	int i;

	ip->check = 0;
	for (i = 0; i < (int)sizeof(*ip) / 2; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

#endif /* XTX_BPF_CSUM_H */
