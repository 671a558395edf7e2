/* SPDX-License-Identifier: GPL-2.0-only */
/* Where frames for a server go: interface, source address and MACs, as the kernel's tables say. */
#ifndef XTX_AFXDP_ROUTE_H
#define XTX_AFXDP_ROUTE_H

#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

struct xtx_route {
	int ifindex;
	char ifname[IF_NAMESIZE];
	struct in_addr src;		/* the route's preferred source, else the interface's first */
	struct in_addr nexthop;		/* the gateway, or the destination itself when on-link */
	uint8_t src_mac[6];		/* the interface's */
	uint8_t dst_mac[6];		/* the next hop's */
};

/*
 * Looks up dst's route and the next hop's MAC.  A neighbour the table does
 * not know (or has not resolved) is resolved by the kernel, waiting up to
 * resolve_ms.  Returns 0, or a negative errno with a one-line reason in err.
 */
int xtx_route_lookup(struct in_addr dst, unsigned int resolve_ms, struct xtx_route *out,
		     char *err, size_t errlen);

#endif /* XTX_AFXDP_ROUTE_H */
