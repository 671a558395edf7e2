/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The AF_XDP transport of one thread: an AF_XDP socket on every receive
 * queue of every interface its servers' routes use, frames built and
 * checked here, the UDP port held by an ordinary socket.
 *
 * Replies land on whichever queue the network picks (on a veth, the
 * queue of the sender's CPU), so each thread listens on them all.  The
 * sockets of a process on one (interface, queue) share one UMEM (the
 * kernel allows one per queue), with one fill and one completion ring
 * under a lock; each socket's own rx and tx rings need none.
 */
#ifndef XTX_AFXDP_XSK_H
#define XTX_AFXDP_XSK_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include "transport.h"

struct xtx_afxdp;

/*
 * Opens the sockets for these servers, sending from port (network
 * order), which the caller holds with the UDP socket udp_fd (watched by
 * xtx_afxdp_wait() too).  Returns NULL after
 * printing "Error: ..." (no route or neighbour, no native XDP, a queue
 * taken by another process, no permission).
 */
struct xtx_afxdp *xtx_afxdp_open(const struct sockaddr_in *servers, unsigned int nservers,
				 uint16_t port, int udp_fd);
void xtx_afxdp_close(struct xtx_afxdp *x);

/*
 * Sends the first datagrams of d; returns how many went (0 when the rings
 * stayed full for a while) or a negative errno.  A datagram for a link
 * that is down counts as sent, and lost, as the network would lose it.
 */
int xtx_afxdp_send(struct xtx_afxdp *x, const struct xtx_dgram *d, unsigned int n);
/* Has the kernel send what the sockets still hold (copy mode sends in batches). */
void xtx_afxdp_flush(struct xtx_afxdp *x);

/*
 * Takes up to n replies off the receive rings without waiting; counts in
 * t what is not a reply from one of t's servers.
 */
unsigned int xtx_afxdp_recv(struct xtx_afxdp *x, struct xtx_transport *t, struct xtx_dgram *d,
			    unsigned int n);

/*
 * Waits up to timeout_ns for a frame on any ring or on the UDP socket
 * (then *udp_ready); >0, 0 on timeout, or a negative errno.
 */
int xtx_afxdp_wait(struct xtx_afxdp *x, uint64_t timeout_ns, bool *udp_ready);

/* Whether every socket runs in zero-copy mode (a veth offers only copy mode). */
bool xtx_afxdp_zerocopy(const struct xtx_afxdp *x);
/* Sockets opened, over how many interfaces. */
void xtx_afxdp_shape(const struct xtx_afxdp *x, unsigned int *sockets, unsigned int *ifaces);

#endif /* XTX_AFXDP_XSK_H */
