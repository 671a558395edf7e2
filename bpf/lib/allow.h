/* SPDX-License-Identifier: GPL-2.0-only */
/* Who may talk to the server: the client allowlist, an LPM trie of IPv4 prefixes. */
#ifndef XTX_BPF_ALLOW_H
#define XTX_BPF_ALLOW_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/maps.h>
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

#endif /* XTX_BPF_ALLOW_H */
