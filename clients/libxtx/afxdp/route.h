/* SPDX-License-Identifier: GPL-2.0-only */
/* Where frames for a server go: interface, source address and MACs, as the kernel's tables say. */
#ifndef XTX_AFXDP_ROUTE_H
#define XTX_AFXDP_ROUTE_H

#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* Where frames for one destination go, as the kernel's routing and neighbour tables say. */
struct xtx_route {
	int ifindex;
	char ifname[IF_NAMESIZE];
	struct in_addr src;		/* RTA_PREFSRC, else the interface's first IPv4 */
	struct in_addr nexthop;		/* the gateway, or the destination itself when on-link */
	uint8_t src_mac[6];		/* the interface's */
	uint8_t dst_mac[6];		/* the next hop's */
};

/*
 * Looks up dst's route and the next hop's MAC. When the neighbour table has no usable entry
 * (absent, INCOMPLETE or FAILED), asks the kernel to resolve it (RTM_NEWNEIGH with NTF_USE: the
 * kernel sends its own ARP request, as for its own first packet; we send nothing) and waits up
 * to resolve_ms for an entry in a valid state (REACHABLE, STALE, DELAY, PROBE, PERMANENT, NOARP).
 * Asking needs CAP_NET_ADMIN, which an AF_XDP client has anyway.
 * Returns 0, or a negative errno after writing a one-line reason into err.
 * Never blocks longer than resolve_ms plus a few netlink round trips (each at most 1 s).
 */
int xtx_route_lookup(struct in_addr dst, unsigned int resolve_ms, struct xtx_route *out,
		     char *err, size_t errlen);

#endif /* XTX_AFXDP_ROUTE_H */
