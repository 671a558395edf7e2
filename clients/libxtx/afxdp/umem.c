// SPDX-License-Identifier: GPL-2.0-only
/* Per-(interface, queue) UMEMs of a process: the frames, the fill and completion rings. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "umem.h"

#define AREA_BYTES	((size_t)(XTX_UMEM_RX_FRAMES + XTX_UMEM_TX_FRAMES) * XTX_UMEM_FRAME_SIZE)

pthread_mutex_t xtx_umem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xtx_umem *groups;

struct xtx_umem *xtx_umem_get(int ifindex, unsigned int queue, const char *ifname)
{
	struct xsk_umem_config cfg = {
		.fill_size = XTX_UMEM_RX_FRAMES,
		.comp_size = XTX_UMEM_TX_FRAMES,
		.frame_size = XTX_UMEM_FRAME_SIZE,
		.frame_headroom = 0,
	};
	struct xtx_umem *u;
	unsigned int i;
	uint32_t idx = 0;
	int err;

	for (u = groups; u; u = u->next) {
		if (u->ifindex == ifindex && u->queue == queue) {
			u->users++;
			return u;
		}
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->area = mmap(NULL, AREA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (u->area == MAP_FAILED) {
		free(u);
		return NULL;
	}
	err = xsk_umem__create(&u->umem, u->area, AREA_BYTES, &u->fill, &u->comp, &cfg);
	if (err) {
		fprintf(stderr, "Error: AF_XDP: registering memory for %s queue %u: %s\n", ifname,
			queue, strerror(-err));
		munmap(u->area, AREA_BYTES);
		free(u);
		return NULL;
	}
	pthread_mutex_init(&u->lock, NULL);
	/* The first frames wait in the fill ring for replies; the rest are for sending. */
	xsk_ring_prod__reserve(&u->fill, XTX_UMEM_RX_FRAMES, &idx);
	for (i = 0; i < XTX_UMEM_RX_FRAMES; i++)
		*xsk_ring_prod__fill_addr(&u->fill, idx + i) = (uint64_t)i * XTX_UMEM_FRAME_SIZE;
	xsk_ring_prod__submit(&u->fill, XTX_UMEM_RX_FRAMES);
	for (i = 0; i < XTX_UMEM_TX_FRAMES; i++)
		u->free[i] = (uint64_t)(XTX_UMEM_RX_FRAMES + i) * XTX_UMEM_FRAME_SIZE;
	u->nfree = XTX_UMEM_TX_FRAMES;
	u->ifindex = ifindex;
	u->queue = queue;
	u->users = 1;
	u->next = groups;
	groups = u;
	return u;
}

void xtx_umem_put(struct xtx_umem *u)
{
	struct xtx_umem **p;
	int err;

	if (--u->users)
		return;
	for (p = &groups; *p; p = &(*p)->next) {
		if (*p == u) {
			*p = u->next;
			break;
		}
	}
	err = xsk_umem__delete(u->umem);
	if (err) {
		/* still bound: the memory must stay where the kernel may write */
		fprintf(stderr, "Warning: AF_XDP: releasing a UMEM: %s; keeping it\n",
			strerror(-err));
		return;
	}
	munmap(u->area, AREA_BYTES);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

void xtx_umem_refill_locked(struct xtx_umem *u, const uint64_t *addrs, unsigned int n)
{
	unsigned int room, i;
	uint32_t idx = 0;

	/* Frames never outnumber the ring, so pending always has room for them. */
	if (n)
		memcpy(u->pending + u->npending, addrs, n * sizeof(*addrs));
	u->npending += n;
	room = xsk_prod_nb_free(&u->fill, u->npending);
	if (room > u->npending)
		room = u->npending;
	if (!room || xsk_ring_prod__reserve(&u->fill, room, &idx) != room)
		return;
	for (i = 0; i < room; i++)
		*xsk_ring_prod__fill_addr(&u->fill, idx + i) = u->pending[u->npending - room + i];
	xsk_ring_prod__submit(&u->fill, room);
	u->npending -= room;
}

void xtx_umem_reap_locked(struct xtx_umem *u)
{
	uint32_t idx = 0, n, i;

	n = xsk_ring_cons__peek(&u->comp, XTX_UMEM_TX_FRAMES, &idx);
	for (i = 0; i < n; i++)
		u->free[u->nfree++] = *xsk_ring_cons__comp_addr(&u->comp, idx + i);
	if (n)
		xsk_ring_cons__release(&u->comp, n);
}

unsigned int xtx_umem_take(struct xtx_umem *u, uint64_t *out, unsigned int n)
{
	unsigned int got = 0;

	pthread_mutex_lock(&u->lock);
	xtx_umem_reap_locked(u);
	while (got < n && u->nfree)
		out[got++] = u->free[--u->nfree];
	pthread_mutex_unlock(&u->lock);
	return got;
}

void xtx_umem_give_locked(struct xtx_umem *u, const uint64_t *addrs, unsigned int n)
{
	memcpy(u->free + u->nfree, addrs, n * sizeof(*addrs));
	u->nfree += n;
}
