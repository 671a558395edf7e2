// SPDX-License-Identifier: GPL-2.0-only
/* Batched UDP send/receive to a fixed set of servers over one socket per thread. */
#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xtx/kv.h>
#include "afxdp/xsk.h"
#include "dupcpu.h"
#include "transport.h"

/* How long a send waits for socket buffer space before giving the rest back. */
#define XTX_SEND_WAIT_NS	(10 * 1000 * 1000ull)

static int set_buf(int fd, int opt, int force_opt, const char *name)
{
	int bytes = XTX_SOCK_BUF_BYTES;

	/*
	 * The plain option is capped by net.core.[rw]mem_max; as root the
	 * FORCE variant is not, so try it first and fall back quietly.
	 */
	if (!setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof(bytes)))
		return 0;
	if (!setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof(bytes)))
		return 0;
	bytes = -errno;
	fprintf(stderr, "Error: setting %s: %s\n", name, strerror(-bytes));
	return bytes;
}

int xtx_transport_open(struct xtx_transport *t, const struct sockaddr_in *servers,
		       unsigned int nservers)
{
	return xtx_transport_open_kind(t, servers, nservers, XTX_TRANSPORT_UDP);
}

int xtx_transport_parse(const char *name, enum xtx_transport_kind *kind)
{
	if (!strcmp(name, "udp"))
		*kind = XTX_TRANSPORT_UDP;
	else if (!strcmp(name, "afxdp"))
		*kind = XTX_TRANSPORT_AFXDP;
	else
		return -1;
	return 0;
}

const char *xtx_transport_name(enum xtx_transport_kind kind)
{
	return kind == XTX_TRANSPORT_AFXDP ? "afxdp" : "udp";
}

void xtx_transport_describe(const struct xtx_transport *t, char *buf, size_t len)
{
	unsigned int socks, ifaces;

	if (!t->xdp) {
		snprintf(buf, len, "udp: one socket");
		return;
	}
	xtx_afxdp_shape(t->xdp, &socks, &ifaces);
	snprintf(buf, len, "afxdp: %u socket(s) on %u interface(s), %s mode", socks, ifaces,
		 xtx_afxdp_zerocopy(t->xdp) ? "zero-copy" : "copy");
}

/* With AF_XDP: the sockets for the port the UDP socket holds. */
static int open_afxdp(struct xtx_transport *t)
{
	struct sockaddr_in me;
	socklen_t len = sizeof(me);

	if (getsockname(t->fd, (struct sockaddr *)&me, &len)) {
		fprintf(stderr, "Error: reading the UDP socket's port: %s\n", strerror(errno));
		return -errno;
	}
	t->xdp = xtx_afxdp_open(t->servers, t->nservers, me.sin_port, t->fd);
	return t->xdp ? 0 : -EINVAL;
}

int xtx_transport_open_kind(struct xtx_transport *t, const struct sockaddr_in *servers,
			    unsigned int nservers, enum xtx_transport_kind kind)
{
	struct sockaddr_in any = { .sin_family = AF_INET };
	int err;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->servers = calloc(nservers, sizeof(*servers));
	if (!t->servers) {
		fprintf(stderr, "Error: allocating the server list: %s\n", strerror(ENOMEM));
		return -ENOMEM;
	}
	memcpy(t->servers, servers, nservers * sizeof(*servers));
	t->nservers = nservers;

	t->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (t->fd < 0) {
		err = -errno;
		fprintf(stderr, "Error: creating a UDP socket: %s\n", strerror(-err));
		goto fail;
	}
	err = set_buf(t->fd, SO_RCVBUF, SO_RCVBUFFORCE, "SO_RCVBUF");
	if (!err)
		err = set_buf(t->fd, SO_SNDBUF, SO_SNDBUFFORCE, "SO_SNDBUF");
	if (err)
		goto fail;
	/* Bind now so a receive before the first send has a port to listen on. */
	if (bind(t->fd, (struct sockaddr *)&any, sizeof(any))) {
		err = -errno;
		fprintf(stderr, "Error: binding a UDP socket: %s\n", strerror(-err));
		goto fail;
	}
	t->kind = kind;
	if (kind == XTX_TRANSPORT_AFXDP) {
		err = open_afxdp(t);
		if (err)
			goto fail;
	}
	return 0;
fail:
	xtx_transport_close(t);
	return err;
}

void xtx_transport_close(struct xtx_transport *t)
{
	xtx_dupcpu_close(t->dupcpu);
	t->dupcpu = NULL;
	xtx_afxdp_close(t->xdp);
	t->xdp = NULL;
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	free(t->servers);
	t->servers = NULL;
	t->nservers = 0;
	free(t->held);
	t->held = NULL;
	t->held_len = 0;
}

static int wait_fd(int fd, short events, uint64_t timeout_ns)
{
	struct timespec ts = {
		.tv_sec = timeout_ns / 1000000000ull,
		.tv_nsec = timeout_ns % 1000000000ull,
	};
	struct pollfd p = { .fd = fd, .events = events };
	int n = ppoll(&p, 1, &ts, NULL);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n;
}

static int send_plain(struct xtx_transport *t, const struct xtx_dgram *d, unsigned int n);

static bool fault_hit(struct xtx_transport *t, uint32_t ppm)
{
	uint64_t x;

	if (!ppm)
		return false;
	x = t->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	t->rng = x;
	return x % 1000000 < ppm;
}

/* Sends the datagram held back, if any: it goes after those sent since it was held. */
static void send_held(struct xtx_transport *t)
{
	struct xtx_dgram g = { .buf = t->held, .len = t->held_len, .server = t->held_server };

	if (t->held_len && send_plain(t, &g, 1) == 1)
		t->held_len = 0;
}

/* With the faults: each datagram maybe twice (later, or at once from two CPUs), or one held back. */
static int send_faulty(struct xtx_transport *t, const struct xtx_dgram *d, unsigned int n)
{
	unsigned int i;
	int sent;

	for (i = 0; i < n; i++) {
		if (t->dupcpu && fault_hit(t, t->fault.dup_cpu_ppm)) {
			sent = xtx_dupcpu_send(t->dupcpu, &t->servers[d[i].server], d[i].server,
					       d[i].buf, d[i].len);
			if (sent < 1)
				return i ? (int)i : sent;
			continue;
		}
		if (!t->held_len && d[i].len <= XTX_MAX_PAYLOAD &&
		    fault_hit(t, t->fault.reorder_ppm)) {
			memcpy(t->held, d[i].buf, d[i].len);
			t->held_len = d[i].len;
			t->held_server = d[i].server;
			t->reordered++;
			continue;
		}
		sent = send_plain(t, &d[i], 1);
		if (sent < 1)
			return i ? (int)i : sent;
		if (fault_hit(t, t->fault.dup_ppm) && send_plain(t, &d[i], 1) == 1)
			t->duplicated++;
	}
	send_held(t);
	return (int)n;
}

int xtx_transport_set_faults(struct xtx_transport *t, const struct xtx_netfault *f)
{
	if (f->dup_ppm > 1000000 || f->reorder_ppm > 1000000 || f->dup_cpu_ppm > 1000000)
		return -EINVAL;
	/* the copy goes through the UDP socket: an AF_XDP ring has one producer */
	if (f->dup_cpu_ppm && t->xdp)
		return -EINVAL;
	if (f->reorder_ppm && !t->held) {
		t->held = malloc(XTX_MAX_PAYLOAD);
		if (!t->held)
			return -ENOMEM;
	}
	if (f->dup_cpu_ppm && !t->dupcpu) {
		t->dupcpu = xtx_dupcpu_open(t->fd);
		if (!t->dupcpu)
			return -errno;
	}
	t->fault = *f;
	t->rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull | 1;
	return 0;
}

int xtx_transport_send(struct xtx_transport *t, const struct xtx_dgram *d, unsigned int n)
{
	if (t->dupcpu)
		xtx_dupcpu_sending(t->dupcpu);
	if (t->fault.dup_ppm || t->fault.reorder_ppm || t->fault.dup_cpu_ppm)
		return send_faulty(t, d, n);
	return send_plain(t, d, n);
}

static int send_udp(struct xtx_transport *t, const struct xtx_dgram *d, unsigned int n);

static int send_plain(struct xtx_transport *t, const struct xtx_dgram *d, unsigned int n)
{
	if (t->xdp)
		return xtx_afxdp_send(t->xdp, d, n);
	return send_udp(t, d, n);
}

static int send_udp(struct xtx_transport *t, const struct xtx_dgram *d, unsigned int n)
{
	struct mmsghdr msgs[XTX_RECV_BATCH];
	struct iovec iov[XTX_RECV_BATCH];
	unsigned int done = 0, i, chunk;
	int sent, err;

	while (done < n) {
		chunk = n - done < XTX_RECV_BATCH ? n - done : XTX_RECV_BATCH;
		for (i = 0; i < chunk; i++) {
			const struct xtx_dgram *g = &d[done + i];

			iov[i].iov_base = g->buf;
			iov[i].iov_len = g->len;
			memset(&msgs[i], 0, sizeof(msgs[i]));
			msgs[i].msg_hdr.msg_name = &t->servers[g->server];
			msgs[i].msg_hdr.msg_namelen = sizeof(t->servers[0]);
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		sent = sendmmsg(t->fd, msgs, chunk, 0);
		if (sent > 0) {
			done += sent;
			continue;
		}
		err = sent < 0 ? -errno : -EAGAIN;
		if (err == -EINTR)
			continue;
		if (err == -EAGAIN || err == -ENOBUFS) {
			/* Buffers full: give the NIC a moment, then hand the rest back. */
			err = wait_fd(t->fd, POLLOUT, XTX_SEND_WAIT_NS);
			if (err > 0)
				continue;
			if (!err)
				break;
		}
		/* A later call reports the error again if it persists. */
		return done ? (int)done : err;
	}
	return done;
}

int xtx_transport_server_index(const struct xtx_transport *t, const struct sockaddr_in *from)
{
	unsigned int i;

	/* A handful of servers per thread: a scan beats a hash here. */
	for (i = 0; i < t->nservers; i++)
		if (t->servers[i].sin_addr.s_addr == from->sin_addr.s_addr &&
		    t->servers[i].sin_port == from->sin_port)
			return i;
	return -1;
}

static int recv_udp(struct xtx_transport *t, struct xtx_dgram *d, unsigned int n,
		    uint64_t timeout_ns)
{
	struct sockaddr_in from[XTX_RECV_BATCH];
	struct mmsghdr msgs[XTX_RECV_BATCH];
	struct iovec iov[XTX_RECV_BATCH];
	unsigned int i, kept = 0;
	int got, idx;

	for (i = 0; i < n; i++) {
		iov[i].iov_base = d[i].buf;
		iov[i].iov_len = d[i].cap;
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_name = &from[i];
		msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	got = recvmmsg(t->fd, msgs, n, MSG_DONTWAIT, NULL);
	if (got < 0 && errno == EAGAIN && timeout_ns) {
		got = wait_fd(t->fd, POLLIN, timeout_ns);
		if (got <= 0)
			return got;
		got = recvmmsg(t->fd, msgs, n, MSG_DONTWAIT, NULL);
	}
	if (got < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;

	for (i = 0; i < (unsigned int)got; i++) {
		if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
			t->truncated++;
			continue;
		}
		idx = xtx_transport_server_index(t, &from[i]);
		if (idx < 0) {
			t->stray++;
			continue;
		}
		/* Keep accepted datagrams in front; the buffers travel with them. */
		if (kept != i) {
			struct xtx_dgram tmp = d[kept];

			d[kept] = d[i];
			d[i] = tmp;
		}
		d[kept].len = msgs[i].msg_len;
		d[kept].server = idx;
		kept++;
	}
	return kept;
}

/*
 * The rings first; the UDP socket when asked (a wait saw it readable) and
 * every so often regardless, so a stray reply there is not stranded.
 */
static int recv_afxdp_once(struct xtx_transport *t, struct xtx_dgram *d, unsigned int n,
			   bool udp_ready)
{
	unsigned int got = xtx_afxdp_recv(t->xdp, t, d, n);
	int more;

	if (got < n && (udp_ready || !(++t->tick % 64))) {
		more = recv_udp(t, d + got, n - got, 0);
		if (more < 0)
			return got ? (int)got : more;
		t->fallback += more;
		got += more;
	}
	return got;
}

int xtx_transport_recv(struct xtx_transport *t, struct xtx_dgram *d, unsigned int n,
		       uint64_t timeout_ns)
{
	bool udp_ready = false;
	int got, i;

	if (n > XTX_RECV_BATCH)
		n = XTX_RECV_BATCH;
	send_held(t);
	if (!t->xdp) {
		got = recv_udp(t, d, n, timeout_ns);
		for (i = 0; t->dupcpu && i < got; i++)
			xtx_dupcpu_seen(t->dupcpu, d[i].server, d[i].buf, d[i].len);
		return got;
	}
	got = recv_afxdp_once(t, d, n, false);
	if (got || !timeout_ns)
		return got;
	got = xtx_afxdp_wait(t->xdp, timeout_ns, &udp_ready);
	if (got <= 0)
		return got;
	return recv_afxdp_once(t, d, n, udp_ready);
}
