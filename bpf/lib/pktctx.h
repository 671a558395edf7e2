/* SPDX-License-Identifier: GPL-2.0-only */
/* The per-packet context every op of a packet shares (struct xtx_pkt_ctx in maps.h). */
#ifndef XTX_BPF_PKTCTX_H
#define XTX_BPF_PKTCTX_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "maps.h"

static __always_inline struct xtx_pkt_ctx *xtx_pkt_ctx_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xtx_pkt_ctx, &zero);
}

/*
 * The clock, read at most once per packet and only by ops that need it:
 * bpf_ktime_get_ns() costs about as much as a whole PING packet here.
 */
static __always_inline __u64 xtx_now(struct xtx_pkt_ctx *pc)
{
	if (!pc->now)
		pc->now = bpf_ktime_get_ns();
	return pc->now;
}

#endif /* XTX_BPF_PKTCTX_H */
