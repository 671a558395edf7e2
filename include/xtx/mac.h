/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The request MAC of a cluster with a shared secret: SipHash-1-3 keyed with
 * the secret over the request header (magic .. req_id, the MAC field taken
 * as zero), folded to 32 bits and carried in hdr.reserved.  It binds the
 * client id and the request id to the secret, so a sender who can forge
 * source addresses but does not know the secret cannot make a server
 * execute anything; the same code runs in XDP, xtx-udpd and libxtx.
 */
#ifndef XTX_MAC_H
#define XTX_MAC_H

#include <linux/types.h>
#include "proto.h"

struct xtx_secret {
	__u64 k0, k1;
};

static inline __u64 xtx_rotl64(__u64 x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define XTX_SIPROUND(v0, v1, v2, v3)                                      \
	do {                                                              \
		v0 += v1; v1 = xtx_rotl64(v1, 13); v1 ^= v0;              \
		v0 = xtx_rotl64(v0, 32);                                  \
		v2 += v3; v3 = xtx_rotl64(v3, 16); v3 ^= v2;              \
		v0 += v3; v3 = xtx_rotl64(v3, 21); v3 ^= v0;              \
		v2 += v1; v1 = xtx_rotl64(v1, 17); v1 ^= v2;              \
		v2 = xtx_rotl64(v2, 32);                                  \
	} while (0)

/* One compression round per word, three to finish (SipHash-1-3): the header is 3 words. */
static inline __u32 xtx_hdr_mac(const struct xtx_secret *s, const struct xtx_hdr *h)
{
	__u64 v0 = s->k0 ^ 0x736f6d6570736575ull, v1 = s->k1 ^ 0x646f72616e646f6dull;
	__u64 v2 = s->k0 ^ 0x6c7967656e657261ull, v3 = s->k1 ^ 0x7465646279746573ull;
	__u64 m[4];
	int i;

	m[0] = (__u64)h->magic | (__u64)h->version << 32 | (__u64)h->flags << 40 |
	       (__u64)h->nops << 48 | (__u64)h->status << 56;
	m[1] = h->client_id;			/* the MAC's own field counts as zero */
	m[2] = h->req_id;
	m[3] = (__u64)sizeof(*h) << 56;		/* SipHash's length block */
	for (i = 0; i < 4; i++) {
		v3 ^= m[i];
		XTX_SIPROUND(v0, v1, v2, v3);
		v0 ^= m[i];
	}
	v2 ^= 0xff;
	XTX_SIPROUND(v0, v1, v2, v3);
	XTX_SIPROUND(v0, v1, v2, v3);
	XTX_SIPROUND(v0, v1, v2, v3);
	v0 ^= v1 ^ v2 ^ v3;
	/* 0 is what a request without a MAC carries: never produce it */
	return ((__u32)(v0 >> 32) ^ (__u32)v0) | 1;
}

#endif /* XTX_MAC_H */
