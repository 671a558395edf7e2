/* SPDX-License-Identifier: GPL-2.0-only */
/* A 64-bit MAC over a byte buffer with the cluster's secret: SipHash-2-4, whole or in pieces. */
#ifndef XTX_SIPMAC_H
#define XTX_SIPMAC_H

#include <stddef.h>
#include <stdint.h>
#include <xtx/mac.h>

/*
 * The servers' own messages to each other (the resolver's peer port, the
 * copy port) are authenticated with this, not with the request MAC of
 * include/xtx/mac.h (SipHash-1-3, sized for XDP's budget): these
 * messages cost no XDP time, so they take the stronger 2-4 over the same
 * rounds, fed in pieces as a stream arrives.  The domain keeps the MACs of
 * different kinds of message apart: a MAC taken from one kind never checks
 * as another's.
 */
enum xtx_sipmac_domain {
	XTX_MAC_PEER = 1,		/* a resolver's message to a peer */
	XTX_MAC_COPY_REQ = 2,		/* a copier's request */
	XTX_MAC_COPY_REPLY = 3,		/* the source's answer to it */
	XTX_MAC_COPY_STREAM = 4,	/* the keys it streams */
};

struct xtx_sipmac {
	struct xtx_sip s;	/* the rounds are xtx/mac.h's */
	uint64_t tail;		/* bytes not yet a whole word, little-endian */
	size_t len;		/* bytes taken so far */
};

void xtx_sipmac_init(struct xtx_sipmac *m, const struct xtx_secret *s, uint64_t domain);
void xtx_sipmac_update(struct xtx_sipmac *m, const void *buf, size_t len);
uint64_t xtx_sipmac_final(struct xtx_sipmac *m);
/* The MAC of buf[0..len) in one call. */
uint64_t xtx_sipmac(const struct xtx_secret *s, uint64_t domain, const void *buf, size_t len);
/* Compares two MACs in time independent of where they differ. */
static inline int xtx_sipmac_eq(uint64_t a, uint64_t b)
{
	uint64_t d = a ^ b;

	return ((d | (0 - d)) >> 63) == 0;
}

#endif /* XTX_SIPMAC_H */
