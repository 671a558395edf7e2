/* SPDX-License-Identifier: GPL-2.0-only */
/* The defer ring: where XDP leaves the deferred ops of a packet it passes to xtxd. */
#ifndef XTXD_DEFER_RING_H
#define XTXD_DEFER_RING_H

#include <stddef.h>
#include <stdint.h>
#include "target.h"

struct xtxd_defer_ring {
	const uint8_t *base;	/* read-only mapping of XTX_MAP_DEFER */
	size_t size;
	uint32_t entries;
	uint32_t value_size;
};

/* Maps the pinned ring of t; 0 or a negative errno after printing why. */
int xtxd_defer_ring_open(struct xtxd_defer_ring *r, const struct xtx_target *t);
void xtxd_defer_ring_close(struct xtxd_defer_ring *r);

/*
 * Turns a passed packet (header, ops, value area; ticket + 1 in hdr.reserved) into
 * the request the executor reads: the record's defer trailer appended
 * after the body, reserved cleared.  Returns the new length, or -1 when the
 * ticket is bad or its slot was reused for another packet (the deferred
 * ops' buckets then come back by lease, and the client resends).
 */
int xtxd_defer_ring_complete(const struct xtxd_defer_ring *r, uint8_t *buf, size_t len,
			     size_t cap);

#endif /* XTXD_DEFER_RING_H */
