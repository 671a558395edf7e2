/* SPDX-License-Identifier: GPL-2.0-only */
/* Fault injection: lose a fraction of requests or replies, for loss tests. */
#ifndef XTX_BPF_FAULT_H
#define XTX_BPF_FAULT_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "maps.h"

static __always_inline struct xtx_runtime *xtx_runtime_cfg(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xtx_runtime, &zero);
}

static __always_inline int xtx_fault_hit(__u32 ppm)
{
	return ppm && bpf_get_prandom_u32() % 1000000 < ppm;
}

/* Before execution: as if the request never arrived. */
static __always_inline int xtx_fault_drop_request(const struct xtx_runtime *rt)
{
	return rt && xtx_fault_hit(rt->drop_request_ppm);
}

/* After execution: the work is done but the client never hears of it. */
static __always_inline int xtx_fault_drop_reply(const struct xtx_runtime *rt)
{
	return rt && xtx_fault_hit(rt->drop_reply_ppm);
}

#endif /* XTX_BPF_FAULT_H */
