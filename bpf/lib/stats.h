/* SPDX-License-Identifier: GPL-2.0-only */
/* Per-CPU counters: plain increments, no atomics on the hot path. */
#ifndef XTX_BPF_STATS_H
#define XTX_BPF_STATS_H

#include "maps.h"

static __always_inline struct xtx_stats *xtx_stats_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xtx_stats, &zero);
}

static __always_inline void xtx_count(__u32 counter)
{
	struct xtx_stats *s = xtx_stats_cpu();

	if (s && counter < XTX_CTR__COUNT)
		s->ctr[counter]++;
}

static __always_inline void xtx_count_op(struct xtx_stats *s, __u8 opcode, __u8 status)
{
	if (s && opcode < XTX_OP__COUNT && status < XTX_ST__COUNT)
		s->op[opcode][status]++;
}

#endif /* XTX_BPF_STATS_H */
