// SPDX-License-Identifier: GPL-2.0-only
/* Where frames for a server go, from the kernel's routing and neighbour tables (rtnetlink). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if_arp.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include "route.h"

#define NL_BUF		8192
#define NL_TIMEOUT_MS	1000
/* How often a pending neighbour is looked at again. */
#define NEIGH_POLL_MS	5

struct nl {
	int fd;
	uint32_t seq;
};

struct nl_req {
	struct nlmsghdr h;
	union {
		struct rtmsg rt;
		struct ndmsg nd;
		struct ifinfomsg ifi;
	};
	char attrs[64];
};

static void add_attr(struct nl_req *r, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->h.nlmsg_len));

	a->rta_type = type;
	a->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	r->h.nlmsg_len = NLMSG_ALIGN(r->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/*
 * Sends r and reads its one answer into buf: the reply message's length,
 * or a negative errno (the kernel's, or -ETIMEDOUT).
 */
static int nl_call(struct nl *nl, struct nl_req *r, char *buf, size_t cap)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct pollfd p = { .fd = nl->fd, .events = POLLIN };
	struct nlmsghdr *h;
	ssize_t n;
	int len;

	r->h.nlmsg_seq = ++nl->seq;
	if (sendto(nl->fd, r, r->h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (;;) {
		if (poll(&p, 1, NL_TIMEOUT_MS) <= 0)
			return -ETIMEDOUT;
		n = recv(nl->fd, buf, cap, 0);
		if (n < 0)
			return errno == EINTR ? 0 : -errno;
		len = (int)n;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != nl->seq)
				continue;	/* an answer to an earlier, timed-out request */
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : -ENODATA;
			}
			memmove(buf, h, h->nlmsg_len);
			return (int)h->nlmsg_len;
		}
	}
}

/* The attributes of a message whose fixed header is hdrlen bytes, by type. */
static void parse_attrs(struct nlmsghdr *h, size_t hdrlen, struct rtattr **tb, int max)
{
	struct rtattr *a = (struct rtattr *)((char *)NLMSG_DATA(h) + NLMSG_ALIGN(hdrlen));
	int len = (int)h->nlmsg_len - NLMSG_LENGTH(hdrlen);

	memset(tb, 0, sizeof(*tb) * (max + 1));
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type <= max)
			tb[a->rta_type] = a;
}

static void req_init(struct nl_req *r, unsigned short type, unsigned short flags, size_t hdrlen)
{
	memset(r, 0, sizeof(*r));
	r->h.nlmsg_len = NLMSG_LENGTH(hdrlen);
	r->h.nlmsg_type = type;
	r->h.nlmsg_flags = NLM_F_REQUEST | flags;
}

static int get_route(struct nl *nl, struct in_addr dst, struct xtx_route *out, char *err,
		     size_t errlen)
{
	struct rtattr *tb[RTA_MAX + 1];
	char buf[NL_BUF], ip[INET_ADDRSTRLEN];
	struct nl_req r;
	struct rtmsg *rt;
	int n;

	inet_ntop(AF_INET, &dst, ip, sizeof(ip));
	req_init(&r, RTM_GETROUTE, 0, sizeof(r.rt));
	r.rt.rtm_family = AF_INET;
	r.rt.rtm_dst_len = 32;
	add_attr(&r, RTA_DST, &dst, sizeof(dst));
	n = nl_call(nl, &r, buf, sizeof(buf));
	if (n < 0) {
		snprintf(err, errlen, "no route to %s: %s", ip, strerror(-n));
		return n;
	}
	rt = NLMSG_DATA((struct nlmsghdr *)buf);
	parse_attrs((struct nlmsghdr *)buf, sizeof(*rt), tb, RTA_MAX);
	if (rt->rtm_type != RTN_UNICAST || !tb[RTA_OIF]) {
		snprintf(err, errlen, "no route to %s over a network interface (%s)", ip,
			 rt->rtm_type == RTN_LOCAL ? "it is this host's own address" :
			 "unreachable, or not unicast");
		return -EHOSTUNREACH;
	}
	out->ifindex = *(int *)RTA_DATA(tb[RTA_OIF]);
	out->nexthop = dst;
	if (tb[RTA_GATEWAY])
		memcpy(&out->nexthop, RTA_DATA(tb[RTA_GATEWAY]), sizeof(out->nexthop));
	if (tb[RTA_PREFSRC])
		memcpy(&out->src, RTA_DATA(tb[RTA_PREFSRC]), sizeof(out->src));
	else
		out->src.s_addr = 0;
	return 0;
}

static int get_link(struct nl *nl, struct xtx_route *out, char *err, size_t errlen)
{
	struct rtattr *tb[IFLA_MAX + 1];
	struct ifinfomsg *ifi;
	char buf[NL_BUF];
	struct nl_req r;
	int n;

	req_init(&r, RTM_GETLINK, 0, sizeof(r.ifi));
	r.ifi.ifi_family = AF_UNSPEC;
	r.ifi.ifi_index = out->ifindex;
	n = nl_call(nl, &r, buf, sizeof(buf));
	if (n < 0) {
		snprintf(err, errlen, "reading interface %d: %s", out->ifindex, strerror(-n));
		return n;
	}
	ifi = NLMSG_DATA((struct nlmsghdr *)buf);
	parse_attrs((struct nlmsghdr *)buf, sizeof(*ifi), tb, IFLA_MAX);
	snprintf(out->ifname, sizeof(out->ifname), "%s",
		 tb[IFLA_IFNAME] ? (char *)RTA_DATA(tb[IFLA_IFNAME]) : "?");
	if (ifi->ifi_type != ARPHRD_ETHER || !tb[IFLA_ADDRESS] ||
	    RTA_PAYLOAD(tb[IFLA_ADDRESS]) != 6) {
		snprintf(err, errlen, "the route goes through %s, which is not an Ethernet "
			 "interface", out->ifname);
		return -EPROTONOSUPPORT;
	}
	memcpy(out->src_mac, RTA_DATA(tb[IFLA_ADDRESS]), 6);
	return 0;
}

/* The interface's first IPv4 address, for a route that names no preferred source. */
static int get_addr(struct nl *nl, struct xtx_route *out, char *err, size_t errlen)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct pollfd p = { .fd = nl->fd, .events = POLLIN };
	struct rtattr *tb[IFA_MAX + 1];
	char buf[NL_BUF];
	struct nl_req r;
	struct nlmsghdr *h;
	ssize_t n;
	int len;

	req_init(&r, RTM_GETADDR, NLM_F_DUMP, sizeof(struct ifaddrmsg));
	((struct ifaddrmsg *)&r.rt)->ifa_family = AF_INET;
	r.h.nlmsg_seq = ++nl->seq;
	if (sendto(nl->fd, &r, r.h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (;;) {
		if (poll(&p, 1, NL_TIMEOUT_MS) <= 0)
			break;
		n = recv(nl->fd, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		len = (int)n;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			struct ifaddrmsg *ifa = NLMSG_DATA(h);

			if (h->nlmsg_seq != nl->seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
				goto done;
			if (h->nlmsg_type != RTM_NEWADDR || (int)ifa->ifa_index != out->ifindex ||
			    out->src.s_addr)
				continue;
			parse_attrs(h, sizeof(*ifa), tb, IFA_MAX);
			if (tb[IFA_LOCAL])
				memcpy(&out->src, RTA_DATA(tb[IFA_LOCAL]), sizeof(out->src));
			else if (tb[IFA_ADDRESS])
				memcpy(&out->src, RTA_DATA(tb[IFA_ADDRESS]), sizeof(out->src));
		}
	}
done:
	if (out->src.s_addr)
		return 0;
	snprintf(err, errlen, "%s has no IPv4 address to send from", out->ifname);
	return -EADDRNOTAVAIL;
}

/* 1 with the MAC when the entry is usable, 0 when absent or unresolved, or a negative errno. */
static int get_neigh(struct nl *nl, struct xtx_route *out)
{
	struct rtattr *tb[NDA_MAX + 1];
	char buf[NL_BUF];
	struct nl_req r;
	struct ndmsg *nd;
	int n;

	req_init(&r, RTM_GETNEIGH, 0, sizeof(r.nd));
	r.nd.ndm_family = AF_INET;
	r.nd.ndm_ifindex = out->ifindex;
	add_attr(&r, NDA_DST, &out->nexthop, sizeof(out->nexthop));
	n = nl_call(nl, &r, buf, sizeof(buf));
	if (n == -ENOENT)
		return 0;
	if (n < 0)
		return n;
	nd = NLMSG_DATA((struct nlmsghdr *)buf);
	parse_attrs((struct nlmsghdr *)buf, sizeof(*nd), tb, NDA_MAX);
	if (!(nd->ndm_state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT |
			       NUD_NOARP)) ||
	    !tb[NDA_LLADDR] || RTA_PAYLOAD(tb[NDA_LLADDR]) != 6)
		return 0;
	memcpy(out->dst_mac, RTA_DATA(tb[NDA_LLADDR]), 6);
	return 1;
}

/*
 * Asks the kernel to resolve the next hop, as its own first packet there
 * would (NTF_USE): an ARP request goes out, no packet of ours does.
 */
static int kick_neigh(struct nl *nl, const struct xtx_route *out)
{
	char buf[NL_BUF];
	struct nl_req r;
	int n;

	req_init(&r, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK, sizeof(r.nd));
	r.nd.ndm_family = AF_INET;
	r.nd.ndm_ifindex = out->ifindex;
	r.nd.ndm_state = NUD_NONE;
	r.nd.ndm_flags = NTF_USE;
	add_attr(&r, NDA_DST, &out->nexthop, sizeof(out->nexthop));
	n = nl_call(nl, &r, buf, sizeof(buf));
	return n == -ENODATA ? 0 : n;	/* the ACK: error 0 */
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int xtx_route_lookup(struct in_addr dst, unsigned int resolve_ms, struct xtx_route *out,
		     char *err, size_t errlen)
{
	struct nl nl = { .seq = (uint32_t)time(NULL) };
	char ip[INET_ADDRSTRLEN];
	uint64_t deadline;
	int ret;

	memset(out, 0, sizeof(*out));
	nl.fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl.fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "opening a netlink socket: %s", strerror(-ret));
		return ret;
	}
	ret = get_route(&nl, dst, out, err, errlen);
	if (!ret)
		ret = get_link(&nl, out, err, errlen);
	if (!ret && !out->src.s_addr)
		ret = get_addr(&nl, out, err, errlen);
	if (ret)
		goto out;
	inet_ntop(AF_INET, &out->nexthop, ip, sizeof(ip));
	ret = get_neigh(&nl, out);
	if (ret == 0) {
		ret = kick_neigh(&nl, out);
		deadline = ms_now() + resolve_ms;
		while (!ret) {
			ret = get_neigh(&nl, out);
			if (ret || ms_now() >= deadline)
				break;
			usleep(NEIGH_POLL_MS * 1000);
		}
	}
	if (ret < 0) {
		snprintf(err, errlen, "looking up the neighbour %s on %s: %s", ip, out->ifname,
			 strerror(-ret));
	} else if (ret == 0) {
		snprintf(err, errlen, "no neighbour entry for %s on %s: ARP unanswered after %u ms",
			 ip, out->ifname, resolve_ms);
		ret = -EHOSTUNREACH;
	} else {
		ret = 0;
	}
out:
	close(nl.fd);
	return ret;
}
