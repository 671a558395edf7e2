/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A test fault (the nemesis): a request sent twice at the same instant from
 * two CPUs, and the two answers held against each other.
 *
 * On veth (and any NIC whose receive path runs where the frame was sent)
 * the server's XDP program runs on the sending CPU, so two copies leaving
 * two CPUs together execute concurrently on the server: the case a
 * duplicate sent later from the same thread never reaches.  The copy
 * leaves a worker thread pinned to a CPU other than the sender's; the two
 * threads meet in a spin handshake and send through the same socket, so
 * both answers come back to the client.  A request runs once whatever
 * number of copies arrive, so any two complete answers to it must agree
 * on every op that changes state; one that does not is an anomaly.
 */
#ifndef XTX_DUPCPU_H
#define XTX_DUPCPU_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

struct xtx_dupcpu;

/* What the fault did and found, since it was opened. */
struct xtx_dupcpu_stats {
	uint64_t sent;		/* requests sent twice at once (copies sent) */
	uint64_t apart;		/* ... whose two sends ran on two different CPUs */
	/*
	 * answers to a copy refusing it whole with RETRY: the server had the
	 * other copy executing at that moment
	 */
	uint64_t busy;
	/* requests with two complete answers held against each other */
	uint64_t compared;
	uint64_t mismatched;	/* ... that disagreed on an op that changes state */
};

/*
 * Opens the fault for the UDP socket fd: up to two worker threads, started
 * when first needed, pinned to the first two CPUs this thread may use.
 * Returns NULL with errno set (EINVAL: fewer than two CPUs to use).
 */
struct xtx_dupcpu *xtx_dupcpu_open(int fd);
/* Stops the workers and frees everything; NULL is fine. */
void xtx_dupcpu_close(struct xtx_dupcpu *dc);

/*
 * Sends buf (a request of len bytes) to `to` from this thread and, at the
 * same instant, from a worker on another CPU; remembers the request so its
 * answers are compared.  Returns 1 when this thread's copy went out, 0
 * when the socket had no room (the caller sends it again later), or a
 * negative errno.
 */
int xtx_dupcpu_send(struct xtx_dupcpu *dc, const struct sockaddr_in *to, unsigned int server,
		    const void *buf, size_t len);

/*
 * A datagram from server `server`: if it answers a request sent twice,
 * keeps it or holds it against the answer kept (mismatches are printed to
 * stderr, the first few in full).
 */
void xtx_dupcpu_seen(struct xtx_dupcpu *dc, unsigned int server, const void *buf, size_t len);

/*
 * The transport sends a batch: what a client sends after taking an answer
 * may change what a later copy's replay reads again (a commit releasing
 * its lock), so those fields are compared only before that.
 */
void xtx_dupcpu_sending(struct xtx_dupcpu *dc);

void xtx_dupcpu_get_stats(const struct xtx_dupcpu *dc, struct xtx_dupcpu_stats *s);

#endif /* XTX_DUPCPU_H */
