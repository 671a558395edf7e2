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
#include "parse.h"

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
 * With a shared secret every request carries the MAC of its whole UDP
 * payload in hdr.mac (include/xtx/mac.h): a sender without the secret, or
 * a request changed on the way, is dropped before anything runs.  The
 * walk reads one 8-byte word per compression round, each bounds-checked,
 * up to XTX_MAC_MAX_WORDS; the header's four words come first, the MAC's
 * own as zero.  A payload longer than any request may be (XTX_MAX_REQUEST),
 * or not whole words (no well-formed request is), is not walked: it fails.  The field is cleared once checked, so that
 * replies and the rare path never carry it.  A global subprogram: verified
 * once on its own, whatever the feature combination around it, and only
 * packets with the secret on call it.  1: the MAC is right.
 */
__noinline int xtx_mac_check(struct xdp_md *ctx, __u64 k0, __u64 k1, __u32 len)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *p = data + XTX_HDR_OFF;
	struct xtx_hdr *hdr = (struct xtx_hdr *)p;
	__u32 i, n = len / 8;
	__u64 *w, got;
	struct xtx_sip s;

	/*
	 * Every well-formed request is whole words (header, op slots and the
	 * value area's tiling are), so no other length needs its tail walked.
	 */
	if ((void *)(hdr + 1) > data_end || len < sizeof(*hdr) || len > XTX_MAX_REQUEST ||
	    (len & 7))
		return 0;
	got = hdr->mac;
	xtx_sip_init(&s, k0, k1);
	w = (__u64 *)hdr;
	xtx_sip_block(&s, w[0]);
	xtx_sip_block(&s, w[1]);
	xtx_sip_block(&s, w[2]);
	xtx_sip_block(&s, 0);
	for (i = sizeof(*hdr) / 8; i < XTX_MAC_MAX_WORDS; i++) {
		if (i >= n)
			break;
		w = (__u64 *)(p + i * 8);
		if ((void *)(w + 1) > data_end)
			return 0;
		xtx_sip_block(&s, *w);
	}
	/* from len, not i: past the loop i is dead, and what follows is walked once */
	if (xtx_mac_tag(xtx_sip_final(&s, 0, len)) != got)
		return 0;
	hdr = (struct xtx_hdr *)(data + XTX_HDR_OFF);
	if ((void *)(hdr + 1) > data_end)
		return 0;
	hdr->mac = 0;
	return 1;
}

/* With the secret on, the request's MAC is right; without it there is nothing to check. */
static __always_inline bool xtx_mac_ok(const struct xtx_runtime *rt, struct xdp_md *ctx,
				       __u32 payload_len)
{
	return !rt || !(rt->flags & XTX_RTF_SECRET) ||
	       xtx_mac_check(ctx, rt->secret_k0, rt->secret_k1, payload_len);
}

#endif /* XTX_BPF_ALLOW_H */
