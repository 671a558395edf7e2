/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A per-thread endpoint to a set of servers, batched send and receive: a
 * UDP socket, or AF_XDP sockets (afxdp/xsk.h) that build the frames
 * themselves and leave the kernel's socket layer out, same datagrams.
 */
#ifndef XTX_TRANSPORT_H
#define XTX_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include "libxtx.h"

/* Most datagrams one recvmmsg() call fills. */
#define XTX_RECV_BATCH		64
/* Socket buffers: room for a burst of full-size replies from every server. */
#define XTX_SOCK_BUF_BYTES	(4 << 20)

/*
 * One datagram.  Send: buf holds len bytes for servers[server].  Receive:
 * the caller sets buf and cap; the transport fills len and server.
 */
struct xtx_dgram {
	void *buf;
	size_t len;
	size_t cap;
	unsigned int server;
};

/*
 * Network faults for tests (the nemesis), in parts per million of the
 * datagrams sent: sent twice, or held back and sent after the next ones
 * (by the next send or receive call), as a network may; or sent twice at
 * the same instant from two CPUs, so the server runs both copies at once,
 * and the answers compared (dupcpu.h; UDP only).
 */
struct xtx_netfault {
	uint32_t dup_ppm;
	uint32_t reorder_ppm;
	uint32_t dup_cpu_ppm;
};

struct xtx_afxdp;
struct xtx_dupcpu;

struct xtx_transport {
	enum xtx_transport_kind kind;
	/*
	 * The UDP socket.  With AF_XDP it holds the port, so nothing else on
	 * the host takes it, and receives what the steering program could not
	 * hand to an AF_XDP socket (a queue beyond XTX_XSK_MAX_QUEUES).
	 */
	int fd;
	struct xtx_afxdp *xdp;		/* AF_XDP only */
	uint64_t fallback;		/* AF_XDP: replies that came through the UDP socket */
	uint64_t malformed;		/* AF_XDP: frames with broken headers, dropped */
	unsigned int tick;
	unsigned int nservers;
	struct sockaddr_in *servers;	/* owned copy */
	uint64_t stray;			/* datagrams from no server of ours: dropped */
	uint64_t truncated;		/* datagrams larger than the buffer: dropped */
	struct xtx_netfault fault;
	uint64_t rng;
	uint64_t duplicated, reordered;	/* what the faults did */
	struct xtx_dupcpu *dupcpu;	/* with dup_cpu_ppm */
	/* the datagram held back, if any (held_len 0: none) */
	size_t held_len;
	unsigned int held_server;
	uint8_t *held;
};

/*
 * Opens a non-blocking UDP socket bound to an ephemeral port and remembers
 * the servers.  Returns 0 or a negative errno (after printing why).
 */
int xtx_transport_open(struct xtx_transport *t, const struct sockaddr_in *servers,
		       unsigned int nservers);
/* The same with the given kind: AF_XDP needs root and native XDP on the routes' interfaces. */
int xtx_transport_open_kind(struct xtx_transport *t, const struct sockaddr_in *servers,
			    unsigned int nservers, enum xtx_transport_kind kind);
/* "udp" or "afxdp" into *kind; -1 for anything else. */
int xtx_transport_parse(const char *name, enum xtx_transport_kind *kind);
const char *xtx_transport_name(enum xtx_transport_kind kind);
/* One line on how the transport runs (kind, sockets, copy or zero-copy mode). */
void xtx_transport_describe(const struct xtx_transport *t, char *buf, size_t len);
/* The index of the server a datagram came from, or -1. */
int xtx_transport_server_index(const struct xtx_transport *t, const struct sockaddr_in *from);
void xtx_transport_close(struct xtx_transport *t);

/*
 * Sends n datagrams with as few sendmmsg() calls as it takes, waiting a
 * little for buffer space.  Returns how many went out (the first ones,
 * in order; fewer than n when the socket stays full) or a negative errno
 * when the first could not be sent.
 */
int xtx_transport_send(struct xtx_transport *t, const struct xtx_dgram *d, unsigned int n);
/*
 * Switches the network faults on (or off, zeros); 0 or -EINVAL (over a
 * million; dup_cpu_ppm over AF_XDP or with fewer than two CPUs) / -ENOMEM.
 */
int xtx_transport_set_faults(struct xtx_transport *t, const struct xtx_netfault *f);

/*
 * Receives up to n (at most XTX_RECV_BATCH) datagrams from the servers,
 * waiting up to timeout_ns for the first when none is queued (0: do not
 * wait).  Returns how many entries were filled (0 on timeout or signal) or
 * a negative errno.  Datagrams from elsewhere are dropped, which may swap
 * entries (buffers included) within d[0..n).
 */
int xtx_transport_recv(struct xtx_transport *t, struct xtx_dgram *d, unsigned int n,
		       uint64_t timeout_ns);

#endif /* XTX_TRANSPORT_H */
