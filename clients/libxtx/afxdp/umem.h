/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The UMEMs of a process: one per (interface, queue), shared by every
 * AF_XDP socket the process binds there (the kernel gives a queue to one
 * UMEM).  Each has one fill and one completion ring and the free send
 * frames, under its lock; groups are created and dropped under
 * xtx_umem_lock, which also covers libxdp's bookkeeping of the sockets.
 */
#ifndef XTX_AFXDP_UMEM_H
#define XTX_AFXDP_UMEM_H

#include <pthread.h>
#include <stdint.h>
#include <xdp/xsk.h>

/* 2 KiB frames hold the largest xtx datagram with its headers. */
#define XTX_UMEM_FRAME_SIZE	2048
#define XTX_UMEM_RX_FRAMES	2048	/* = the fill ring's size */
#define XTX_UMEM_TX_FRAMES	2048

struct xtx_umem {
	int ifindex;
	unsigned int queue;
	unsigned int users;		/* sockets bound here */
	uint8_t *area;
	struct xsk_umem *umem;
	pthread_mutex_t lock;		/* everything below */
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	uint64_t free[XTX_UMEM_TX_FRAMES];
	unsigned int nfree;
	/* Received frames the fill ring had no room for yet (it publishes room lazily). */
	uint64_t pending[XTX_UMEM_RX_FRAMES];
	unsigned int npending;
	struct xtx_umem *next;
};

extern pthread_mutex_t xtx_umem_lock;

/* The group for (ifindex, queue), made on first use; under xtx_umem_lock.  NULL: no memory. */
struct xtx_umem *xtx_umem_get(int ifindex, unsigned int queue, const char *ifname);
/* Drops a user; the last one frees the group.  Under xtx_umem_lock. */
void xtx_umem_put(struct xtx_umem *u);

/*
 * Received frames back to the fill ring (those it has no room for wait
 * their turn; n = 0 only retries those); under u->lock.
 */
void xtx_umem_refill_locked(struct xtx_umem *u, const uint64_t *addrs, unsigned int n);
/* Completed sends back to the free frames; under u->lock. */
void xtx_umem_reap_locked(struct xtx_umem *u);
/* Up to n free send frames into out (reaping first); returns how many. */
unsigned int xtx_umem_take(struct xtx_umem *u, uint64_t *out, unsigned int n);
/* Send frames given back unused; under u->lock. */
void xtx_umem_give_locked(struct xtx_umem *u, const uint64_t *addrs, unsigned int n);

#endif /* XTX_AFXDP_UMEM_H */
