// SPDX-License-Identifier: GPL-2.0-only
/* Where frames for a server go, from the kernel's route, link and neighbour tables (rtnetlink). */
#include <errno.h>
#include <stdbool.h>
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
#include "clock.h"
#include "route.h"

/* Room for any one reply (link messages come without stats), so none arrives cut short. */
#define NL_BUF		32768
/* A bound on each round trip, so that a lost answer cannot hang the caller. */
#define NL_TIMEOUT_MS	1000
/* How often a pending neighbour is looked at again: small against an ARP round trip. */
#define NEIGH_POLL_MS	5
/* The states whose MAC the kernel itself would send to (its NUD_VALID). */
#define NUD_USABLE	(NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | \
			 NUD_NOARP)

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
		struct ifaddrmsg ifa;
	};
	char attrs[64];
};

/* Takes one reply message; a negative errno ends the exchange. */
typedef int (*nl_cb)(struct nlmsghdr *h, void *arg);

static void req_init(struct nl_req *r, unsigned short type, unsigned short flags, size_t hdrlen)
{
	memset(r, 0, sizeof(*r));
	r->h.nlmsg_len = NLMSG_LENGTH(hdrlen);
	r->h.nlmsg_type = type;
	r->h.nlmsg_flags = NLM_F_REQUEST | flags;
}

static void add_attr(struct nl_req *r, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->h.nlmsg_len));

	a->rta_type = type;
	a->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	r->h.nlmsg_len = NLMSG_ALIGN(r->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* The attributes of a message whose fixed header is hdrlen bytes, by type. */
static void parse_attrs(struct nlmsghdr *h, size_t hdrlen, struct rtattr **tb, int max)
{
	struct rtattr *a = (struct rtattr *)((char *)NLMSG_DATA(h) + NLMSG_ALIGN(hdrlen));
	int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(hdrlen);

	memset(tb, 0, sizeof(*tb) * (max + 1));
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type <= max)
			tb[a->rta_type] = a;
}

/* Copies a fixed-size attribute when present and of that size. */
static bool attr_get(void *dst, struct rtattr *a, size_t len)
{
	if (!a || RTA_PAYLOAD(a) != len)
		return false;
	memcpy(dst, RTA_DATA(a), len);
	return true;
}

/*
 * Sends r, then hands each reply carrying its sequence number to cb, until the kernel's ACK or
 * error (so all but dumps ask for an ACK: it marks the end) or a dump's NLMSG_DONE.
 * Returns 0, or a negative errno (the kernel's, cb's, or -ETIMEDOUT).
 */
static int nl_talk(struct nl *nl, struct nl_req *r, nl_cb cb, void *arg)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK }, from = { 0 };
	char buf[NL_BUF] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr m = { .msg_name = &from, .msg_iov = &iov, .msg_iovlen = 1 };
	struct nlmsghdr *h;
	int len, ret;

	r->h.nlmsg_seq = ++nl->seq;
	if (sendto(nl->fd, r, r->h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (;;) {
		m.msg_namelen = sizeof(from);
		len = (int)recvmsg(nl->fd, &m, 0);
		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (m.msg_flags & MSG_TRUNC)
			return -EMSGSIZE;
		if (from.nl_pid)
			continue;	/* not the kernel */
		/* NLMSG_OK, but without comparing the u32 length with an int */
		for (h = (struct nlmsghdr *)buf;
		     len >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) &&
		     h->nlmsg_len <= (unsigned int)len; h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != nl->seq)
				continue;	/* late, for an earlier request that timed out */
			if (h->nlmsg_type == NLMSG_ERROR)
				return h->nlmsg_len < NLMSG_LENGTH(sizeof(int)) ? -EPROTO :
				       ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (cb && h->nlmsg_type != NLMSG_NOOP && (ret = cb(h, arg)) < 0)
				return ret;
		}
	}
}

/* What the kernel said, beyond what goes straight into out. */
struct ans {
	struct xtx_route *out;
	unsigned char rtype;	/* the route's RTN_*; RTN_UNSPEC until answered */
	bool via;		/* an IPv6 next hop (RFC 5549), which ARP cannot resolve */
	unsigned short ltype;	/* the link's ARPHRD_* */
	bool src_mac, dst_mac;	/* present, 6 bytes and (ours) not zero */
	int nstate;		/* the neighbour's NUD_*; -1 when the table has no entry */
};

static int route_cb(struct nlmsghdr *h, void *arg)
{
	struct ans *a = arg;
	struct rtmsg *rt = NLMSG_DATA(h);
	struct rtattr *tb[RTA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWROUTE)
		return 0;
	parse_attrs(h, sizeof(*rt), tb, RTA_MAX);
	a->rtype = rt->rtm_type;
	a->via = tb[RTA_VIA];
	attr_get(&a->out->ifindex, tb[RTA_OIF], sizeof(a->out->ifindex));
	attr_get(&a->out->nexthop, tb[RTA_GATEWAY], sizeof(a->out->nexthop));
	/* The kernel fills in the source it picked for this very lookup, not just the route's. */
	attr_get(&a->out->src, tb[RTA_PREFSRC], sizeof(a->out->src));
	return 0;
}

static int link_cb(struct nlmsghdr *h, void *arg)
{
	struct ans *a = arg;
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct rtattr *tb[IFLA_MAX + 1];
	static const uint8_t zero[6];

	if (h->nlmsg_type != RTM_NEWLINK)
		return 0;
	parse_attrs(h, sizeof(*ifi), tb, IFLA_MAX);
	a->ltype = ifi->ifi_type;
	if (tb[IFLA_IFNAME])
		snprintf(a->out->ifname, sizeof(a->out->ifname), "%.*s",
			 (int)RTA_PAYLOAD(tb[IFLA_IFNAME]), (char *)RTA_DATA(tb[IFLA_IFNAME]));
	a->src_mac = attr_get(a->out->src_mac, tb[IFLA_ADDRESS], 6) &&
		     memcmp(a->out->src_mac, zero, 6);
	return 0;
}

/* Keeps the interface's first IPv4 address: the primary, as the kernel lists those first. */
static int addr_cb(struct nlmsghdr *h, void *arg)
{
	struct xtx_route *out = arg;
	struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct rtattr *tb[IFA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWADDR || ifa->ifa_family != AF_INET ||
	    (int)ifa->ifa_index != out->ifindex || out->src.s_addr)
		return 0;
	parse_attrs(h, sizeof(*ifa), tb, IFA_MAX);
	/* IFA_LOCAL is our end; IFA_ADDRESS is the peer's on a point-to-point link. */
	if (!attr_get(&out->src, tb[IFA_LOCAL], sizeof(out->src)))
		attr_get(&out->src, tb[IFA_ADDRESS], sizeof(out->src));
	return 0;
}

static int neigh_cb(struct nlmsghdr *h, void *arg)
{
	struct ans *a = arg;
	struct ndmsg *nd = NLMSG_DATA(h);
	struct rtattr *tb[NDA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWNEIGH)
		return 0;
	parse_attrs(h, sizeof(*nd), tb, NDA_MAX);
	a->nstate = nd->ndm_state;
	a->dst_mac = attr_get(a->out->dst_mac, tb[NDA_LLADDR], 6);
	return 0;
}

/*
 * Asks the kernel to resolve the next hop as if it had a packet for it (NTF_USE): the entry is
 * created if absent and the kernel sends its own ARP requests; no packet of ours goes out.
 * The kernel ignores ndm_state here, but drops PERMANENT from an entry it "uses", so only
 * unusable entries are ever asked about.
 */
static int kick_neigh(struct nl *nl, const struct xtx_route *out)
{
	struct nl_req r;

	req_init(&r, RTM_NEWNEIGH, NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE, sizeof(r.nd));
	r.nd.ndm_family = AF_INET;
	r.nd.ndm_ifindex = out->ifindex;
	r.nd.ndm_flags = NTF_USE;
	add_attr(&r, NDA_DST, &out->nexthop, sizeof(out->nexthop));
	return nl_talk(nl, &r, NULL, NULL);
}

static long long ms_now(void)
{
	return (long long)(xtx_now_ns() / 1000000);
}

/* Waits up to resolve_ms for a usable entry, asking again whenever the kernel has given up. */
static int resolve(struct nl *nl, struct ans *a, unsigned int resolve_ms, char *err, size_t errlen)
{
	struct xtx_route *out = a->out;
	long long deadline = ms_now() + resolve_ms, left;
	bool asked = false, just_asked = false;
	char ip[INET_ADDRSTRLEN];
	struct timespec nap;
	struct nl_req r;
	int ret;

	inet_ntop(AF_INET, &out->nexthop, ip, sizeof(ip));
	for (;;) {
		/* A strict get: that one entry, or ENOENT. */
		req_init(&r, RTM_GETNEIGH, NLM_F_ACK, sizeof(r.nd));
		r.nd.ndm_family = AF_INET;
		r.nd.ndm_ifindex = out->ifindex;
		add_attr(&r, NDA_DST, &out->nexthop, sizeof(out->nexthop));
		a->nstate = -1;
		a->dst_mac = false;
		ret = nl_talk(nl, &r, neigh_cb, a);
		if (ret && ret != -ENOENT) {
			snprintf(err, errlen, "reading the neighbour entry for %s on %s: %s", ip,
				 out->ifname, strerror(-ret));
			return ret;
		}
		if (a->nstate > 0 && (a->nstate & NUD_USABLE) && a->dst_mac)
			return 0;
		left = deadline - ms_now();
		if (left <= 0 && asked)
			break;
		/* Absent or NONE: nobody asked yet; FAILED: the kernel gave up before we did. */
		if (!just_asked && (!asked || a->nstate <= 0 || (a->nstate & NUD_FAILED))) {
			ret = kick_neigh(nl, out);
			if (ret) {
				snprintf(err, errlen, "asking the kernel to resolve %s on %s: %s",
					 ip, out->ifname, strerror(-ret));
				return ret;
			}
			asked = just_asked = true;
			continue;	/* see at once what the kick made of the entry */
		}
		just_asked = false;
		nap.tv_sec = 0;
		nap.tv_nsec = (left < NEIGH_POLL_MS ? left : NEIGH_POLL_MS) * 1000000;
		nanosleep(&nap, NULL);
	}
	snprintf(err, errlen, "no neighbour entry for %s on %s: ARP unanswered after %u ms", ip,
		 out->ifname, resolve_ms);
	return -EHOSTUNREACH;
}

int xtx_route_lookup(struct in_addr dst, unsigned int resolve_ms, struct xtx_route *out,
		     char *err, size_t errlen)
{
	struct timeval tv = { NL_TIMEOUT_MS / 1000, NL_TIMEOUT_MS % 1000 * 1000 };
	uint32_t ext_mask = RTEXT_FILTER_SKIP_STATS;
	struct ans a = { .out = out, .rtype = RTN_UNSPEC };
	char ip[INET_ADDRSTRLEN];
	struct nl nl = { .seq = (uint32_t)ms_now() };
	struct nl_req r;
	int ret;

	memset(out, 0, sizeof(*out));
	out->nexthop = dst;
	inet_ntop(AF_INET, &dst, ip, sizeof(ip));
	nl.fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl.fd < 0 || setsockopt(nl.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		ret = -errno;
		snprintf(err, errlen, "opening a netlink socket: %s", strerror(-ret));
		goto out;
	}

	/* The route the kernel would use for a packet of its own: an output lookup, not a match. */
	req_init(&r, RTM_GETROUTE, NLM_F_ACK, sizeof(r.rt));
	r.rt.rtm_family = AF_INET;
	r.rt.rtm_dst_len = 32;
	add_attr(&r, RTA_DST, &dst, sizeof(dst));
	ret = nl_talk(&nl, &r, route_cb, &a);
	if (!ret && (a.rtype == RTN_UNSPEC || !out->ifindex))
		ret = -ENETUNREACH;
	if (ret) {
		snprintf(err, errlen, "no route to %s (%s)", ip, strerror(-ret));
		goto out;
	}
	if (a.via || (a.rtype != RTN_UNICAST && a.rtype != RTN_LOCAL)) {
		snprintf(err, errlen, "route to %s is %s", ip, a.via ? "via an IPv6 next hop" :
			 "not unicast (broadcast, multicast or the like)");
		ret = -EHOSTUNREACH;
		goto out;
	}

	req_init(&r, RTM_GETLINK, NLM_F_ACK, sizeof(r.ifi));
	r.ifi.ifi_family = AF_UNSPEC;
	r.ifi.ifi_index = out->ifindex;
	add_attr(&r, IFLA_EXT_MASK, &ext_mask, sizeof(ext_mask));
	ret = nl_talk(&nl, &r, link_cb, &a);
	if (ret) {
		snprintf(err, errlen, "reading interface %d, the route to %s: %s", out->ifindex, ip,
			 strerror(-ret));
		goto out;
	}
	if (!out->ifname[0])
		snprintf(out->ifname, sizeof(out->ifname), "#%d", out->ifindex);
	if (a.ltype != ARPHRD_ETHER) {
		/* Also where the host's own addresses lead: lo. */
		snprintf(err, errlen, "route to %s goes through %s, which has no Ethernet%s",
			 ip, out->ifname, a.rtype == RTN_LOCAL ? " (an address of this host)" : "");
		ret = -EOPNOTSUPP;
		goto out;
	}
	if (a.rtype == RTN_LOCAL) {
		/* The kernel would loop such a packet back; a frame on the wire reaches nobody. */
		snprintf(err, errlen, "%s is an address of this host (on %s)", ip, out->ifname);
		ret = -EOPNOTSUPP;
		goto out;
	}
	if (!a.src_mac) {
		snprintf(err, errlen, "interface %s has no MAC address", out->ifname);
		ret = -EADDRNOTAVAIL;
		goto out;
	}

	/* Without RTA_PREFSRC the kernel found no source; the interface's own may still do. */
	if (!out->src.s_addr) {
		req_init(&r, RTM_GETADDR, NLM_F_DUMP, sizeof(r.ifa));
		r.ifa.ifa_family = AF_INET;
		ret = nl_talk(&nl, &r, addr_cb, out);
		if (!ret && !out->src.s_addr)
			ret = -EADDRNOTAVAIL;
		if (ret) {
			snprintf(err, errlen, "%s has no IPv4 address to send from to %s (%s)",
				 out->ifname, ip, strerror(-ret));
			goto out;
		}
	}
	ret = resolve(&nl, &a, resolve_ms, err, errlen);
out:
	if (nl.fd >= 0)
		close(nl.fd);
	return ret;
}
