// SPDX-License-Identifier: GPL-2.0-only
/* AF_XDP sockets of one thread over shared per-queue UMEMs: batched tx, rx off the rings. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>
#include <xtx/kv.h>
#include <xtx/xsk.h>
#include "frame.h"
#include "route.h"
#include "steer.h"
#include "xsk.h"

/* 2 KiB frames hold the largest xtx datagram with its headers. */
#define FRAME_SIZE	2048
#define RX_FRAMES	2048	/* = the fill ring: every rx frame always has a place there */
#define TX_FRAMES	2048
#define NFRAMES		(RX_FRAMES + TX_FRAMES)
#define RING_DESCS	1024	/* each socket's rx and tx ring */
#define STASH		64	/* tx frames a socket takes from its UMEM at once */
/* How long an unknown neighbour may take to resolve. */
#define RESOLVE_MS	1000
/* How long a send waits for tx room before handing the rest back (as the UDP one does). */
#define SEND_WAIT_NS	(10 * 1000 * 1000ull)

/* One UMEM per (interface, queue) in this process, shared by the sockets bound there. */
struct umem_group {
	int ifindex;
	unsigned int queue;
	unsigned int users;
	uint8_t *area;
	struct xsk_umem *umem;
	pthread_mutex_t lock;	/* fill, comp and the free tx frames */
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	uint64_t free[TX_FRAMES];
	unsigned int nfree;
	struct umem_group *next;
};

static pthread_mutex_t groups_lock = PTHREAD_MUTEX_INITIALIZER;
static struct umem_group *groups;

struct xsk_sock {
	struct xsk_socket *xsk;
	struct umem_group *g;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	int fd;
	bool kick;			/* tx descriptors the kernel has not been told of */
	int kick_err;			/* what the last kick failed with (0: it did not) */
	unsigned int nstash;
	uint64_t stash[STASH];
};

/* One interface the routes use. */
struct xsk_link {
	int ifindex;
	char ifname[IF_NAMESIZE];
	struct in_addr src;
	unsigned int nqueues;		/* sockets: one per receive queue */
	unsigned int txq;		/* the one this thread sends on */
	struct xsk_sock sock[XTX_XSK_MAX_QUEUES];
};

struct xtx_afxdp {
	uint16_t port;			/* network order */
	unsigned int nlinks;
	struct xsk_link *links;
	unsigned int *link_of;		/* per server */
	struct xtx_frame_tmpl *tmpl;	/* per server */
	uint16_t ip_id;
	bool zerocopy;
	uint64_t dropped;		/* datagrams for links that were down */
	int epfd;			/* every socket, and the UDP socket */
	unsigned int nsocks;
};

/* Threads of one process spread their sends over the queues. */
static unsigned int next_txq;

static struct umem_group *group_get(int ifindex, unsigned int queue, const char *ifname)
{
	struct xsk_umem_config cfg = {
		.fill_size = RX_FRAMES,
		.comp_size = TX_FRAMES,
		.frame_size = FRAME_SIZE,
		.frame_headroom = 0,
	};
	struct umem_group *g;
	unsigned int i;
	uint32_t idx = 0;
	int err;

	for (g = groups; g; g = g->next) {
		if (g->ifindex == ifindex && g->queue == queue) {
			g->users++;
			return g;
		}
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->area = mmap(NULL, (size_t)NFRAMES * FRAME_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->area == MAP_FAILED) {
		free(g);
		return NULL;
	}
	err = xsk_umem__create(&g->umem, g->area, (size_t)NFRAMES * FRAME_SIZE, &g->fill,
			       &g->comp, &cfg);
	if (err) {
		fprintf(stderr, "Error: AF_XDP: registering memory for %s queue %u: %s\n", ifname,
			queue, strerror(-err));
		munmap(g->area, (size_t)NFRAMES * FRAME_SIZE);
		free(g);
		return NULL;
	}
	pthread_mutex_init(&g->lock, NULL);
	/* The first RX_FRAMES frames wait in the fill ring; the rest are for sending. */
	xsk_ring_prod__reserve(&g->fill, RX_FRAMES, &idx);
	for (i = 0; i < RX_FRAMES; i++)
		*xsk_ring_prod__fill_addr(&g->fill, idx + i) = (uint64_t)i * FRAME_SIZE;
	xsk_ring_prod__submit(&g->fill, RX_FRAMES);
	for (i = 0; i < TX_FRAMES; i++)
		g->free[i] = (uint64_t)(RX_FRAMES + i) * FRAME_SIZE;
	g->nfree = TX_FRAMES;
	g->ifindex = ifindex;
	g->queue = queue;
	g->users = 1;
	g->next = groups;
	groups = g;
	return g;
}

static void group_put(struct umem_group *g)
{
	struct umem_group **p;

	if (--g->users)
		return;
	for (p = &groups; *p; p = &(*p)->next) {
		if (*p == g) {
			*p = g->next;
			break;
		}
	}
	xsk_umem__delete(g->umem);
	munmap(g->area, (size_t)NFRAMES * FRAME_SIZE);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* Completed sends back to the free frames; under g->lock. */
static void reap_locked(struct umem_group *g)
{
	uint32_t idx, n, i;

	n = xsk_ring_cons__peek(&g->comp, TX_FRAMES, &idx);
	for (i = 0; i < n; i++)
		g->free[g->nfree++] = *xsk_ring_cons__comp_addr(&g->comp, idx + i);
	if (n)
		xsk_ring_cons__release(&g->comp, n);
}

/* Receive queues of an interface: what ETHTOOL_GCHANNELS says, 1 when it says nothing. */
static unsigned int rx_queues(const char *ifname)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr = { 0 };
	unsigned int n = 1;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ch;
	if (!ioctl(fd, SIOCETHTOOL, &ifr))
		n = ch.rx_count + ch.combined_count;
	close(fd);
	if (!n)
		n = 1;
	return n > XTX_XSK_MAX_QUEUES ? XTX_XSK_MAX_QUEUES : n;
}

static int sock_open(struct xsk_sock *s, struct xsk_link *l, unsigned int queue, int map_fd,
		     uint16_t port, bool *zerocopy)
{
	struct xsk_socket_config cfg = {
		.rx_size = RING_DESCS,
		.tx_size = RING_DESCS,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_USE_NEED_WAKEUP,
	};
	struct xdp_options opts;
	socklen_t optlen = sizeof(opts);
	uint32_t key = XTX_XSK_INDEX(ntohs(port), queue);
	int err;

	s->fd = -1;
	s->g = group_get(l->ifindex, queue, l->ifname);
	if (!s->g) {
		fprintf(stderr, "Error: AF_XDP: no memory for %s queue %u\n", l->ifname, queue);
		return -ENOMEM;
	}
	err = xsk_socket__create_shared(&s->xsk, l->ifname, queue, s->g->umem, &s->rx, &s->tx,
					&s->g->fill, &s->g->comp, &cfg);
	if (err) {
		if (err == -EBUSY)
			fprintf(stderr, "Error: AF_XDP: queue %u of %s is taken by another process's "
				"AF_XDP socket (one client process per interface may use AF_XDP; "
				"use --transport udp for the others)\n", queue, l->ifname);
		else
			fprintf(stderr, "Error: AF_XDP: a socket on %s queue %u: %s\n", l->ifname,
				queue, strerror(-err));
		s->xsk = NULL;
		return err;
	}
	s->fd = xsk_socket__fd(s->xsk);
	if (!getsockopt(s->fd, SOL_XDP, XDP_OPTIONS, &opts, &optlen) &&
	    !(opts.flags & XDP_OPTIONS_ZEROCOPY))
		*zerocopy = false;
	if (bpf_map_update_elem(map_fd, &key, &s->fd, BPF_ANY)) {
		err = -errno;
		fprintf(stderr, "Error: AF_XDP: steering %s queue %u to its socket: %s\n",
			l->ifname, queue, strerror(-err));
		return err;
	}
	return 0;
}

static void sock_close(struct xsk_sock *s)
{
	unsigned int i;

	if (!s->g)
		return;
	if (s->xsk)
		xsk_socket__delete(s->xsk);	/* the kernel drops its XSKMAP entry too */
	pthread_mutex_lock(&groups_lock);
	pthread_mutex_lock(&s->g->lock);
	for (i = 0; i < s->nstash; i++)
		s->g->free[s->g->nfree++] = s->stash[i];
	pthread_mutex_unlock(&s->g->lock);
	group_put(s->g);
	pthread_mutex_unlock(&groups_lock);
	s->g = NULL;
}

static struct xsk_link *link_for(struct xtx_afxdp *x, const struct xtx_route *r, uint16_t port)
{
	struct xsk_link *l;
	char err[160];
	unsigned int q;
	int map_fd;

	for (q = 0; q < x->nlinks; q++)
		if (x->links[q].ifindex == r->ifindex)
			return &x->links[q];
	l = &x->links[x->nlinks++];
	l->ifindex = r->ifindex;
	memcpy(l->ifname, r->ifname, sizeof(l->ifname));
	l->src = r->src;
	map_fd = xtx_steer_map(r->ifindex, r->ifname, err, sizeof(err));
	if (map_fd < 0) {
		fprintf(stderr, "Error: AF_XDP: %s\n", err);
		return NULL;
	}
	l->nqueues = rx_queues(r->ifname);
	pthread_mutex_lock(&groups_lock);
	l->txq = next_txq++ % l->nqueues;
	pthread_mutex_unlock(&groups_lock);
	for (q = 0; q < l->nqueues; q++) {
		pthread_mutex_lock(&groups_lock);
		if (sock_open(&l->sock[q], l, q, map_fd, port, &x->zerocopy)) {
			pthread_mutex_unlock(&groups_lock);
			return NULL;
		}
		pthread_mutex_unlock(&groups_lock);
	}
	return l;
}

/* The tag of the UDP socket's events (the sockets' are their numbers). */
#define UDP_TAG		UINT32_MAX

static int watch(int epfd, int fd, uint32_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

struct xtx_afxdp *xtx_afxdp_open(const struct sockaddr_in *servers, unsigned int nservers,
				 uint16_t port, int udp_fd)
{
	struct xtx_afxdp *x = calloc(1, sizeof(*x));
	struct xtx_route r;
	struct xsk_link *l;
	char err[160];
	unsigned int s, i, q;

	if (!x)
		return NULL;
	x->port = port;
	x->zerocopy = true;
	x->epfd = -1;
	x->links = calloc(nservers, sizeof(*x->links));
	x->link_of = calloc(nservers, sizeof(*x->link_of));
	x->tmpl = calloc(nservers, sizeof(*x->tmpl));
	if (!x->links || !x->link_of || !x->tmpl) {
		fprintf(stderr, "Error: AF_XDP: out of memory\n");
		goto fail;
	}
	for (s = 0; s < nservers; s++) {
		if (xtx_route_lookup(servers[s].sin_addr, RESOLVE_MS, &r, err, sizeof(err))) {
			fprintf(stderr, "Error: AF_XDP: %s\n", err);
			goto fail;
		}
		l = link_for(x, &r, port);
		if (!l)
			goto fail;
		x->link_of[s] = l - x->links;
		xtx_frame_tmpl_init(&x->tmpl[s], r.src_mac, r.dst_mac, r.src, port, &servers[s]);
	}
	x->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (x->epfd < 0 || watch(x->epfd, udp_fd, UDP_TAG)) {
		fprintf(stderr, "Error: AF_XDP: epoll: %s\n", strerror(errno));
		goto fail;
	}
	for (i = 0; i < x->nlinks; i++) {
		for (q = 0; q < x->links[i].nqueues; q++, x->nsocks++) {
			if (watch(x->epfd, x->links[i].sock[q].fd, x->nsocks)) {
				fprintf(stderr, "Error: AF_XDP: epoll: %s\n", strerror(errno));
				goto fail;
			}
		}
	}
	return x;
fail:
	xtx_afxdp_close(x);
	return NULL;
}

void xtx_afxdp_close(struct xtx_afxdp *x)
{
	unsigned int i, q;

	if (!x)
		return;
	for (i = 0; x->links && i < x->nlinks; i++)
		for (q = 0; q < XTX_XSK_MAX_QUEUES; q++)
			sock_close(&x->links[i].sock[q]);
	free(x->links);
	free(x->link_of);
	free(x->tmpl);
	if (x->epfd >= 0)
		close(x->epfd);
	free(x);
}

/* Tells the kernel of the socket's new tx descriptors; copy mode sends a few dozen per call. */
static void kick(struct xsk_sock *s)
{
	unsigned int tries;

	s->kick_err = 0;
	for (tries = 0; tries < 64; tries++) {
		if (!xsk_ring_prod__needs_wakeup(&s->tx) && tries)
			break;
		if (sendto(s->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			break;
		s->kick_err = errno;
		if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR)
			break;
		/* Copy mode stops after a batch with EAGAIN: the rest is still queued. */
		if (*s->tx.consumer == s->tx.cached_prod)
			break;
	}
	s->kick = false;
}

/* Whether the socket's interface cannot send at all now (down, or gone). */
static bool link_dead(const struct xsk_sock *s)
{
	return s->kick_err == ENETDOWN || s->kick_err == ENXIO || s->kick_err == ENODEV;
}

/* A free tx frame for s, or UINT64_MAX when its UMEM has none now. */
static uint64_t take_frame(struct xsk_sock *s)
{
	struct umem_group *g = s->g;

	if (!s->nstash) {
		pthread_mutex_lock(&g->lock);
		reap_locked(g);
		while (s->nstash < STASH && g->nfree)
			s->stash[s->nstash++] = g->free[--g->nfree];
		pthread_mutex_unlock(&g->lock);
		if (!s->nstash)
			return UINT64_MAX;
	}
	return s->stash[--s->nstash];
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Sends every socket's queued descriptors. */
static void kick_all(struct xtx_afxdp *x)
{
	unsigned int i;

	for (i = 0; i < x->nlinks; i++)
		if (x->links[i].sock[x->links[i].txq].kick)
			kick(&x->links[i].sock[x->links[i].txq]);
}

int xtx_afxdp_send(struct xtx_afxdp *x, const struct xtx_dgram *d, unsigned int n)
{
	uint64_t deadline = 0, addr;
	unsigned int i;
	uint32_t idx;

	for (i = 0; i < n; i++) {
		struct xsk_link *l = &x->links[x->link_of[d[i].server]];
		struct xsk_sock *s = &l->sock[l->txq];
		struct xdp_desc *desc;

		if (d[i].len > XTX_MAX_PAYLOAD)
			return i ? (int)i : -EMSGSIZE;
		for (;;) {
			addr = UINT64_MAX;
			if (xsk_ring_prod__reserve(&s->tx, 1, &idx) == 1) {
				addr = take_frame(s);
				if (addr != UINT64_MAX)
					break;
				/* no frame: give the slot back (nothing was written to it) */
				s->tx.cached_prod--;
			}
			/* The ring or the frames are full of sends not done yet: push them out. */
			kick(s);
			/*
			 * A link that is down loses what is sent to it, as a
			 * network would; retransmission covers it, and the
			 * other servers' requests do not wait.
			 */
			if (link_dead(s))
				break;
			if (!deadline)
				deadline = now_ns() + SEND_WAIT_NS;
			else if (now_ns() >= deadline)
				goto out;
			sched_yield();
		}
		if (addr == UINT64_MAX) {
			x->dropped++;
			continue;
		}
		memcpy(s->g->area + addr + XTX_FRAME_HDR_LEN, d[i].buf, d[i].len);
		xtx_frame_build(&x->tmpl[d[i].server], s->g->area + addr, d[i].len, x->ip_id++);
		desc = xsk_ring_prod__tx_desc(&s->tx, idx);
		desc->addr = addr;
		desc->len = d[i].len + XTX_FRAME_HDR_LEN;
		desc->options = 0;
		xsk_ring_prod__submit(&s->tx, 1);
		s->kick = true;
	}
out:
	kick_all(x);
	return (int)i;
}

unsigned int xtx_afxdp_recv(struct xtx_afxdp *x, struct xtx_transport *t, struct xtx_dgram *d,
			    unsigned int n)
{
	unsigned int i, q, j, kept = 0;
	uint32_t idx, got, fidx;

	for (i = 0; i < x->nlinks && kept < n; i++) {
		struct xsk_link *l = &x->links[i];

		for (q = 0; q < l->nqueues && kept < n; q++) {
			struct xsk_sock *s = &l->sock[q];
			struct umem_group *g = s->g;
			uint64_t addrs[XTX_RECV_BATCH];

			got = xsk_ring_cons__peek(&s->rx, n - kept, &idx);
			if (!got)
				continue;
			for (j = 0; j < got; j++) {
				const struct xdp_desc *desc = xsk_ring_cons__rx_desc(&s->rx, idx + j);
				struct xtx_frame_view v;
				int srv;

				addrs[j] = xsk_umem__extract_addr(desc->addr);
				switch (xtx_frame_parse(xsk_umem__get_data(g->area, desc->addr),
							desc->len, l->src, x->port, &v)) {
				case XTX_FRAME_MALFORMED:
					t->malformed++;
					continue;
				case XTX_FRAME_NOT_OURS:
					t->stray++;
					continue;
				case XTX_FRAME_OK:
					break;
				}
				srv = xtx_transport_server_index(t, &v.from);
				if (srv < 0) {
					t->stray++;
					continue;
				}
				if (v.len > d[kept].cap) {
					t->truncated++;
					continue;
				}
				memcpy(d[kept].buf, v.payload, v.len);
				d[kept].len = v.len;
				d[kept].server = srv;
				kept++;
			}
			xsk_ring_cons__release(&s->rx, got);
			/* The frames go straight back to the fill ring, which always has room for them. */
			pthread_mutex_lock(&g->lock);
			if (xsk_ring_prod__reserve(&g->fill, got, &fidx) == got) {
				for (j = 0; j < got; j++)
					*xsk_ring_prod__fill_addr(&g->fill, fidx + j) = addrs[j];
				xsk_ring_prod__submit(&g->fill, got);
			}
			pthread_mutex_unlock(&g->lock);
		}
	}
	return kept;
}

int xtx_afxdp_wait(struct xtx_afxdp *x, uint64_t timeout_ns, bool *udp_ready)
{
	struct timespec ts = {
		.tv_sec = timeout_ns / 1000000000ull,
		.tv_nsec = timeout_ns % 1000000000ull,
	};
	struct epoll_event ev[XTX_XSK_MAX_QUEUES + 1];
	int n, i;

	n = epoll_pwait2(x->epfd, ev, XTX_XSK_MAX_QUEUES + 1, &ts, NULL);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++)
		if (ev[i].data.u32 == UDP_TAG)
			*udp_ready = true;
	return n;
}

bool xtx_afxdp_zerocopy(const struct xtx_afxdp *x)
{
	return x->zerocopy;
}

void xtx_afxdp_shape(const struct xtx_afxdp *x, unsigned int *sockets, unsigned int *ifaces)
{
	*sockets = x->nsocks;
	*ifaces = x->nlinks;
}
