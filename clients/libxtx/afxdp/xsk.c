// SPDX-License-Identifier: GPL-2.0-only
/* AF_XDP sockets of one thread over the process's shared per-queue UMEMs: batched tx, rx off the rings. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>
#include <xtx/kv.h>
#include <xtx/xsk.h>
#include "clock.h"
#include "frame.h"
#include "route.h"
#include "steer.h"
#include "umem.h"
#include "xsk.h"

#define RING_DESCS	1024	/* each socket's rx and tx ring */
#define STASH		64	/* send frames a socket takes from its UMEM at once */
/* How long an unknown neighbour may take to resolve. */
#define RESOLVE_MS	1000
/* How long a send waits for tx room before handing the rest back (as the UDP one does). */
#define SEND_WAIT_NS	(10 * 1000 * 1000ull)
/* A queue another socket just left stays taken until the kernel's deferred release runs. */
#define BIND_RETRY_NS	(1000 * 1000 * 1000ull)
/* How often one server's route and neighbour are read again (a MAC may change). */
#define REFRESH_NS	(1000 * 1000 * 1000ull)

struct xsk_sock {
	struct xsk_socket *xsk;
	struct xtx_umem *u;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	int fd;
	uint32_t key;			/* its XSKMAP index */
	int map_fd;			/* the steering program's XSKMAP; -1: not entered */
	bool zerocopy;			/* the driver reads its rings on its own */
	bool kick;			/* tx descriptors the kernel may not have taken yet */
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
	unsigned int nservers;
	struct sockaddr_in *servers;
	unsigned int nlinks;
	struct xsk_link *links;
	unsigned int *link_of;		/* per server */
	struct xtx_frame_tmpl *tmpl;	/* per server */
	uint16_t ip_id;
	bool zerocopy;
	uint64_t dropped;		/* datagrams for links that were down */
	uint64_t refresh_at;		/* when to read the next server's route again */
	unsigned int sends;		/* calls, so the clock is read for that every 256th */
	unsigned int refresh_next;
	int epfd;			/* every socket, and the UDP socket */
	unsigned int nsocks;
	struct epoll_event *ev;		/* nsocks + 1 */
};

/* Threads of one process spread their sends over the queues. */
static unsigned int next_txq;

/*
 * Queues of an interface, from ETHTOOL_GCHANNELS (1 each when it says
 * nothing): receive queues to listen on, and how many of them can send.
 */
static void queues_of(const char *ifname, unsigned int *nrx, unsigned int *ntx)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	*nrx = *ntx = 1;
	if (fd < 0)
		return;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ch;
	if (!ioctl(fd, SIOCETHTOOL, &ifr)) {
		*nrx = ch.rx_count + ch.combined_count ?: 1;
		*ntx = ch.tx_count + ch.combined_count ?: 1;
	}
	close(fd);
	if (*nrx > XTX_XSK_MAX_QUEUES)
		*nrx = XTX_XSK_MAX_QUEUES;
	if (*ntx > *nrx)
		*ntx = *nrx;
}

/* Under xtx_umem_lock (libxdp's socket bookkeeping is not thread-safe). */
static int sock_open(struct xsk_sock *s, struct xsk_link *l, unsigned int queue,
		     const struct xtx_steer *st, uint16_t port, bool *zerocopy)
{
	struct xsk_socket_config cfg = {
		.rx_size = RING_DESCS,
		.tx_size = RING_DESCS,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_USE_NEED_WAKEUP,
	};
	struct xdp_options opts;
	socklen_t optlen = sizeof(opts);
	uint64_t give_up = xtx_now_ns() + BIND_RETRY_NS;
	int err;

	s->fd = -1;
	s->map_fd = -1;
	s->key = XTX_XSK_INDEX(ntohs(port), queue);
	s->u = xtx_umem_get(l->ifindex, queue, l->ifname);
	if (!s->u) {
		fprintf(stderr, "Error: AF_XDP: no memory for %s queue %u\n", l->ifname, queue);
		return -ENOMEM;
	}
	for (;;) {
		err = xsk_socket__create_shared(&s->xsk, l->ifname, queue, s->u->umem, &s->rx,
						&s->tx, &s->u->fill, &s->u->comp, &cfg);
		if (err != -EBUSY || xtx_now_ns() >= give_up)
			break;
		usleep(20 * 1000);
	}
	if (err) {
		s->xsk = NULL;
		/* now, under the lock: libxdp may already have let the UMEM's rings go */
		xtx_umem_put(s->u);
		s->u = NULL;
		if (err == -EBUSY)
			fprintf(stderr, "Error: AF_XDP: queue %u of %s is taken by another process's "
				"AF_XDP socket (one client process per interface may use AF_XDP; "
				"use --transport udp for the others)\n", queue, l->ifname);
		else
			fprintf(stderr, "Error: AF_XDP: a socket on %s queue %u: %s\n", l->ifname,
				queue, strerror(-err));
		return err;
	}
	s->fd = xsk_socket__fd(s->xsk);
	s->zerocopy = !getsockopt(s->fd, SOL_XDP, XDP_OPTIONS, &opts, &optlen) &&
		      (opts.flags & XDP_OPTIONS_ZEROCOPY);
	if (!s->zerocopy)
		*zerocopy = false;
	/* The address first: the program steers only frames addressed to it. */
	if (bpf_map_update_elem(st->addr_fd, &s->key, &l->src.s_addr, BPF_ANY) ||
	    bpf_map_update_elem(st->xsk_fd, &s->key, &s->fd, BPF_ANY)) {
		err = -errno;
		fprintf(stderr, "Error: AF_XDP: steering %s queue %u to its socket: %s\n",
			l->ifname, queue, strerror(-err));
		return err;
	}
	s->map_fd = st->xsk_fd;
	return 0;
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
	/* What is left goes with the next kick (every send and wait kicks). */
	s->kick = *s->tx.consumer != s->tx.cached_prod;
}

/* Whether the socket's interface cannot send at all now (down, or gone). */
static bool link_dead(const struct xsk_sock *s)
{
	return s->kick_err == ENETDOWN || s->kick_err == ENXIO || s->kick_err == ENODEV;
}

/* Received frames of s back to its UMEM's fill ring; under s->u->lock. */
static void drain_rx_locked(struct xsk_sock *s)
{
	uint64_t addrs[RING_DESCS];
	uint32_t idx = 0, got, j;

	got = xsk_ring_cons__peek(&s->rx, RING_DESCS, &idx);
	for (j = 0; j < got; j++)
		addrs[j] = xsk_umem__extract_addr(xsk_ring_cons__rx_desc(&s->rx, idx + j)->addr);
	if (got) {
		xsk_ring_cons__release(&s->rx, got);
		xtx_umem_refill_locked(s->u, addrs, got);
	}
}

/*
 * Every frame the socket holds goes back to its UMEM before the socket
 * goes: no frame is lost for the sockets that stay, nothing more is
 * steered to a port the process may release.
 */
static void sock_close(struct xsk_sock *s)
{
	uint64_t unsent[RING_DESCS];
	uint32_t n = 0, i, cons;
	unsigned int tries;
	bool kernel_keeps;

	if (!s->u)
		return;
	pthread_mutex_lock(&xtx_umem_lock);
	if (s->map_fd >= 0)
		bpf_map_delete_elem(s->map_fd, &s->key);
	if (s->xsk) {
		for (tries = 0; s->kick && tries < 100; tries++) {
			kick(s);
			if (link_dead(s))
				break;
			if (s->kick)
				sched_yield();
		}
		/* a frame steered just before the map entry went is in the ring by now */
		usleep(1000);
		pthread_mutex_lock(&s->u->lock);
		drain_rx_locked(s);
		xtx_umem_reap_locked(s->u);
		for (cons = *s->tx.consumer; cons != s->tx.cached_prod; cons++)
			unsent[n++] = xsk_ring_prod__tx_desc(&s->tx, cons)->addr;
		pthread_mutex_unlock(&s->u->lock);
		/*
		 * libxdp keeps the UMEM's own socket open until the UMEM goes,
		 * and a zero-copy driver reads every socket's ring on its own
		 * until the socket is unbound: then what the ring holds may
		 * still be sent (and completed), so those frames stay out of
		 * use.  A copy-mode socket sends only when kicked, and once it
		 * is gone the kernel never reads its ring again.
		 */
		kernel_keeps = s->fd == xsk_umem__fd(s->u->umem) || s->zerocopy;
		xsk_socket__delete(s->xsk);
		if (kernel_keeps)
			n = 0;
	}
	pthread_mutex_lock(&s->u->lock);
	for (i = 0; i < n; i++)
		unsent[i] = xsk_umem__extract_addr(unsent[i]);
	xtx_umem_give_locked(s->u, unsent, n);
	xtx_umem_give_locked(s->u, s->stash, s->nstash);
	pthread_mutex_unlock(&s->u->lock);
	xtx_umem_put(s->u);
	pthread_mutex_unlock(&xtx_umem_lock);
	s->u = NULL;
	s->xsk = NULL;
}

static struct xsk_link *link_for(struct xtx_afxdp *x, const struct xtx_route *r, uint16_t port)
{
	char err[200], a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	struct xtx_steer st;
	struct xsk_link *l;
	unsigned int q, ntx;
	int ret;

	for (q = 0; q < x->nlinks; q++) {
		l = &x->links[q];
		if (l->ifindex != r->ifindex)
			continue;
		/* replies are checked against the link's one address */
		if (l->src.s_addr != r->src.s_addr) {
			inet_ntop(AF_INET, &l->src, a, sizeof(a));
			inet_ntop(AF_INET, &r->src, b, sizeof(b));
			fprintf(stderr, "Error: AF_XDP: routes over %s leave from %s and from %s; "
				"give every server there the same source address\n", l->ifname, a,
				b);
			return NULL;
		}
		return l;
	}
	l = &x->links[x->nlinks++];
	l->ifindex = r->ifindex;
	memcpy(l->ifname, r->ifname, sizeof(l->ifname));
	l->src = r->src;
	ret = xtx_steer_maps(r->ifindex, r->ifname, &st, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "Error: AF_XDP: %s\n", err);
		return NULL;
	}
	queues_of(r->ifname, &l->nqueues, &ntx);
	pthread_mutex_lock(&xtx_umem_lock);
	/* a queue that can send: on a veth a frame sent on queue q is received on queue q */
	l->txq = next_txq++ % ntx;
	for (q = 0; q < l->nqueues; q++)
		if (sock_open(&l->sock[q], l, q, &st, port, &x->zerocopy))
			break;
	pthread_mutex_unlock(&xtx_umem_lock);
	return q == l->nqueues ? l : NULL;
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
	char err[200];
	unsigned int s, i, q;

	if (!x)
		return NULL;
	x->port = port;
	x->zerocopy = true;
	x->epfd = -1;
	x->nservers = nservers;
	x->servers = calloc(nservers, sizeof(*x->servers));
	x->links = calloc(nservers, sizeof(*x->links));
	x->link_of = calloc(nservers, sizeof(*x->link_of));
	x->tmpl = calloc(nservers, sizeof(*x->tmpl));
	if (!x->servers || !x->links || !x->link_of || !x->tmpl) {
		fprintf(stderr, "Error: AF_XDP: out of memory\n");
		goto fail;
	}
	memcpy(x->servers, servers, nservers * sizeof(*servers));
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
	x->refresh_at = xtx_now_ns() + REFRESH_NS;
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
	x->ev = calloc(x->nsocks + 1, sizeof(*x->ev));
	if (!x->ev) {
		fprintf(stderr, "Error: AF_XDP: out of memory\n");
		goto fail;
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
	if (x->epfd >= 0)
		close(x->epfd);
	free(x->servers);
	free(x->links);
	free(x->link_of);
	free(x->tmpl);
	free(x->ev);
	free(x);
}

/* A free send frame for s, or UINT64_MAX when its UMEM has none now. */
static uint64_t take_frame(struct xsk_sock *s)
{
	if (!s->nstash)
		s->nstash = xtx_umem_take(s->u, s->stash, STASH);
	return s->nstash ? s->stash[--s->nstash] : UINT64_MAX;
}

void xtx_afxdp_flush(struct xtx_afxdp *x)
{
	unsigned int i;

	for (i = 0; i < x->nlinks; i++)
		if (x->links[i].sock[x->links[i].txq].kick)
			kick(&x->links[i].sock[x->links[i].txq]);
}

/*
 * Reads one server's route and neighbour again, so a MAC that changed
 * (a server's NIC swapped, a gateway failed over) is followed.  The same
 * interface and source only: anything else needs the client reopened.
 */
static void refresh_one(struct xtx_afxdp *x)
{
	unsigned int s = x->refresh_next++ % x->nservers;
	const struct xsk_link *l = &x->links[x->link_of[s]];
	struct xtx_route r;
	char err[200];

	if (xtx_route_lookup(x->servers[s].sin_addr, 0, &r, err, sizeof(err)) ||
	    r.ifindex != l->ifindex || r.src.s_addr != l->src.s_addr)
		return;
	xtx_frame_tmpl_init(&x->tmpl[s], r.src_mac, r.dst_mac, r.src, x->port, &x->servers[s]);
}

int xtx_afxdp_send(struct xtx_afxdp *x, const struct xtx_dgram *d, unsigned int n)
{
	uint64_t deadline = 0, addr, now;
	unsigned int i;
	uint32_t idx = 0;

	if (!(++x->sends % 256) && (now = xtx_now_ns()) >= x->refresh_at) {
		refresh_one(x);
		x->refresh_at = now + REFRESH_NS / x->nservers;
	}
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
				deadline = xtx_now_ns() + SEND_WAIT_NS;
			else if (xtx_now_ns() >= deadline)
				goto out;
			sched_yield();
		}
		if (addr == UINT64_MAX) {
			x->dropped++;
			continue;
		}
		memcpy(s->u->area + addr + XTX_FRAME_HDR_LEN, d[i].buf, d[i].len);
		xtx_frame_build(&x->tmpl[d[i].server], s->u->area + addr, d[i].len, x->ip_id++);
		desc = xsk_ring_prod__tx_desc(&s->tx, idx);
		desc->addr = addr;
		desc->len = d[i].len + XTX_FRAME_HDR_LEN;
		desc->options = 0;
		xsk_ring_prod__submit(&s->tx, 1);
		s->kick = true;
	}
out:
	xtx_afxdp_flush(x);
	return (int)i;
}

/* Up to n replies from one socket's ring into d; counts what is not one in t. */
static unsigned int recv_sock(struct xtx_afxdp *x, struct xsk_link *l, struct xsk_sock *s,
			      struct xtx_transport *t, struct xtx_dgram *d, unsigned int n)
{
	uint64_t addrs[XTX_RECV_BATCH];
	unsigned int j, kept = 0;
	uint32_t idx = 0, got;

	got = xsk_ring_cons__peek(&s->rx, n, &idx);
	if (!got) {
		/* frames still waiting for fill room, and a driver waiting for fill frames */
		if (s->u->npending) {
			pthread_mutex_lock(&s->u->lock);
			xtx_umem_refill_locked(s->u, NULL, 0);
			pthread_mutex_unlock(&s->u->lock);
		}
		if (s->zerocopy && xsk_ring_prod__needs_wakeup(&s->u->fill))
			recvfrom(s->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
		return 0;
	}
	for (j = 0; j < got; j++) {
		const struct xdp_desc *desc = xsk_ring_cons__rx_desc(&s->rx, idx + j);
		struct xtx_frame_view v;
		int srv;

		addrs[j] = xsk_umem__extract_addr(desc->addr);
		switch (xtx_frame_parse(xsk_umem__get_data(s->u->area, desc->addr), desc->len,
					l->src, x->port, &v)) {
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
	pthread_mutex_lock(&s->u->lock);
	xtx_umem_refill_locked(s->u, addrs, got);
	pthread_mutex_unlock(&s->u->lock);
	/* a zero-copy driver that ran out of fill frames waits to be told there are more */
	if (s->zerocopy && xsk_ring_prod__needs_wakeup(&s->u->fill))
		recvfrom(s->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	return kept;
}

unsigned int xtx_afxdp_recv(struct xtx_afxdp *x, struct xtx_transport *t, struct xtx_dgram *d,
			    unsigned int n)
{
	unsigned int i, q, kept = 0;

	if (n > XTX_RECV_BATCH)
		n = XTX_RECV_BATCH;
	for (i = 0; i < x->nlinks && kept < n; i++)
		for (q = 0; q < x->links[i].nqueues && kept < n; q++)
			kept += recv_sock(x, &x->links[i], &x->links[i].sock[q], t, d + kept,
					  n - kept);
	return kept;
}

int xtx_afxdp_wait(struct xtx_afxdp *x, uint64_t timeout_ns, bool *udp_ready)
{
	struct timespec ts = {
		.tv_sec = timeout_ns / 1000000000ull,
		.tv_nsec = timeout_ns % 1000000000ull,
	};
	int n, i;

	/* nothing queued for sending may wait out the sleep */
	xtx_afxdp_flush(x);
	n = epoll_pwait2(x->epfd, x->ev, x->nsocks + 1, &ts, NULL);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++)
		if (x->ev[i].data.u32 == UDP_TAG)
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
