/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The request MAC of a cluster with a shared secret: SipHash-1-3 keyed with
 * the secret over the request's client id, epoch, op count and request id, folded
 * to 32 bits and carried in hdr.reserved.  It binds the
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

/*
 * One compression round per word and three to finish (SipHash-1-3) over
 * the two words that name the request: client id, epoch and op count, and
 * request id (magic and version are checked on their own anyway).
 */
static inline __u32 xtx_hdr_mac(const struct xtx_secret *s, const struct xtx_hdr *h)
{
	__u64 v0 = s->k0 ^ 0x736f6d6570736575ull, v1 = s->k1 ^ 0x646f72616e646f6dull;
	__u64 v2 = s->k0 ^ 0x6c7967656e657261ull, v3 = s->k1 ^ 0x7465646279746573ull;
	__u64 m0 = (__u64)h->client_id | (__u64)h->epoch << 16 | (__u64)h->nops << 32 |
		   (__u64)16 << 56, m1 = h->req_id;

	v3 ^= m0;
	XTX_SIPROUND(v0, v1, v2, v3);
	v0 ^= m0;
	v3 ^= m1;
	XTX_SIPROUND(v0, v1, v2, v3);
	v0 ^= m1;
	v2 ^= 0xff;
	XTX_SIPROUND(v0, v1, v2, v3);
	XTX_SIPROUND(v0, v1, v2, v3);
	XTX_SIPROUND(v0, v1, v2, v3);
	v0 ^= v1 ^ v2 ^ v3;
	/* 0 is what a request without a MAC carries: never produce it */
	return ((__u32)(v0 >> 32) ^ (__u32)v0) | 1;
}

#endif /* XTX_MAC_H */
