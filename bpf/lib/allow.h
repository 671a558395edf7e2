/* SPDX-License-Identifier: GPL-2.0-only */
/* Who may talk to the server: the client allowlist, an LPM trie of IPv4 prefixes. */
#ifndef XTX_BPF_ALLOW_H
#define XTX_BPF_ALLOW_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/maps.h>
#include <xtx/mac.h>
#include "maps.h"

/*
 * With the allowlist on, a sender outside every listed prefix is dropped
 * before anything is parsed further or changed; off (the default, so a
 * fresh server answers the test clients), everyone is served.
 */
static __always_inline bool xtx_allowed(const struct xtx_runtime *rt, struct xtx_pkt_ctx *pc,
					__u32 saddr)
{
	struct xtx_allow_key k = { .prefixlen = 32, .addr = saddr };
	__u32 gen;

	if (!rt || !(rt->flags & XTX_RTF_ALLOWLIST))
		return true;
	gen = (rt->flags >> XTX_RTF_ALLOW_GEN_SHIFT) + 1;
	if (pc->allow_saddr == saddr && pc->allow_gen == gen)
		return true;
	if (!bpf_map_lookup_elem(&xtx_allow, &k))
		return false;
	pc->allow_saddr = saddr;
	pc->allow_gen = gen;
	return true;
}

/*
 * With a shared secret every request carries its header's MAC in
 * hdr.reserved (include/xtx/mac.h): a sender without the secret is dropped
 * before anything runs.  The field is cleared once checked, since the rare
 * path uses it for its own ticket.  Without a secret it must be zero.  A
 * subprogram of its own: inlined, its rounds' registers made clang spill
 * the packet pointer in a way the verifier refuses.
 */
static __noinline bool xtx_mac_check(const struct xtx_runtime *rt, struct xtx_hdr *hdr)
{
	struct xtx_secret s;
	__u32 got = hdr->reserved;

	s.k0 = rt->secret_k0;
	s.k1 = rt->secret_k1;
	if (got != xtx_hdr_mac(&s, hdr))
		return false;
	hdr->reserved = 0;
	return true;
}

static __always_inline bool xtx_mac_ok(const struct xtx_runtime *rt, struct xtx_hdr *hdr)
{
	return !rt || !(rt->flags & XTX_RTF_SECRET) || xtx_mac_check(rt, hdr);
}

#endif /* XTX_BPF_ALLOW_H */
