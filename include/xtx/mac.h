/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The request MAC of a cluster with a shared secret: SipHash-1-3 keyed with
 * the secret over the whole request, every byte of its UDP payload (header,
 * ops, value area) with hdr.mac read as zero, carried whole in hdr.mac.
 * A sender who can forge source addresses but does not know the secret
 * cannot make a server execute anything, nor change a byte of a request it
 * captured (an op, a key, a value, the request id).  The rounds live here
 * once; XDP (bpf/lib/allow.h) walks the packet with them, xtx-udpd, xtxd's
 * resolver and libxtx use xtx_mac() below.
 */
#ifndef XTX_MAC_H
#define XTX_MAC_H

#include <linux/types.h>
#include "proto.h"

struct xtx_secret {
	__u64 k0, k1;
};

/* Where the MAC sits: the header's last 8-byte word, so a walk skips it whole. */
#define XTX_MAC_OFF		24
_Static_assert(__builtin_offsetof(struct xtx_hdr, mac) == XTX_MAC_OFF &&
	       XTX_MAC_OFF + 8 == sizeof(struct xtx_hdr), "hdr.mac ends the header");
/* A MACed request is at most this many 8-byte words: the bound of XDP's walk. */
#define XTX_MAC_MAX_WORDS	(XTX_MAX_REQUEST / 8)
_Static_assert(XTX_MAX_REQUEST % 8 == 0, "the walk's bound is whole words");

static __always_inline __u64 xtx_rotl64(__u64 x, int b)
{
	return (x << b) | (x >> (64 - b));
}

/* SipHash's state between blocks. */
struct xtx_sip {
	__u64 v0, v1, v2, v3;
};

static __always_inline void xtx_sip_round(struct xtx_sip *s)
{
	s->v0 += s->v1;
	s->v1 = xtx_rotl64(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = xtx_rotl64(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = xtx_rotl64(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = xtx_rotl64(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = xtx_rotl64(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = xtx_rotl64(s->v2, 32);
}

static __always_inline void xtx_sip_init(struct xtx_sip *s, __u64 k0, __u64 k1)
{
	s->v0 = k0 ^ 0x736f6d6570736575ull;
	s->v1 = k1 ^ 0x646f72616e646f6dull;
	s->v2 = k0 ^ 0x6c7967656e657261ull;
	s->v3 = k1 ^ 0x7465646279746573ull;
}

/* One 8-byte block, little-endian: one compression round (the "1" of 1-3). */
static __always_inline void xtx_sip_block(struct xtx_sip *s, __u64 m)
{
	s->v3 ^= m;
	xtx_sip_round(s);
	s->v0 ^= m;
}

/*
 * The last block (the len % 8 bytes left, little-endian in tail, the
 * length's low byte on top) and three finishing rounds (the "3").
 */
static __always_inline __u64 xtx_sip_final(struct xtx_sip *s, __u64 tail, __u32 len)
{
	xtx_sip_block(s, tail | (__u64)(len & 0xff) << 56);
	s->v2 ^= 0xff;
	xtx_sip_round(s);
	xtx_sip_round(s);
	xtx_sip_round(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/*
 * 0 is what a request without a MAC carries: a server never accepts it as
 * a tag, so the one hash value 0 in 2^64 becomes 1 (both then pass as 1).
 */
static __always_inline __u64 xtx_mac_tag(__u64 h)
{
	return h ? h : 1;
}

#ifndef __bpf__
/*
 * SipHash-1-3 of len bytes at buf (any alignment), the 8-byte word at
 * offset hole read as zero; a hole that is not a multiple of 8 (or not
 * inside buf) reads nothing as zero: the plain SipHash-1-3.
 */
static inline __u64 xtx_siphash13_hole(const struct xtx_secret *k, const void *buf, __u32 len,
				       __u32 hole)
{
	const __u8 *p = (const __u8 *)buf;
	struct xtx_sip s;
	__u64 m, tail = 0;
	__u32 off, i;

	xtx_sip_init(&s, k->k0, k->k1);
	for (off = 0; off + 8 <= len; off += 8) {
		__builtin_memcpy(&m, p + off, 8);
		xtx_sip_block(&s, off == hole ? 0 : m);
	}
	for (i = 0; off + i < len; i++)
		tail |= (__u64)p[off + i] << (8 * i);
	return xtx_sip_final(&s, tail, len);
}

/* The MAC of a request of len bytes (len >= sizeof(struct xtx_hdr)). */
static inline __u64 xtx_mac(const struct xtx_secret *k, const void *payload, __u32 len)
{
	return xtx_mac_tag(xtx_siphash13_hole(k, payload, len, XTX_MAC_OFF));
}

/* Puts the MAC of the request's len bytes, final from here on, in its header. */
static inline void xtx_mac_sign(const struct xtx_secret *k, void *payload, __u32 len)
{
	struct xtx_hdr *h = (struct xtx_hdr *)payload;

	h->mac = xtx_mac(k, payload, len);
}

/*
 * A server's check of a request of len bytes: with a secret (k), its MAC
 * must be right; without one, it must carry none.  True when it passes.
 */
static inline int xtx_mac_ok(const struct xtx_secret *k, const void *payload, __u32 len)
{
	const struct xtx_hdr *h = (const struct xtx_hdr *)payload;

	if (len < sizeof(*h))
		return 0;
	return k ? h->mac == xtx_mac(k, payload, len) : h->mac == 0;
}
#endif /* !__bpf__ */

#endif /* XTX_MAC_H */
