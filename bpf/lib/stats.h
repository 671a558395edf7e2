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

/*
 * Masked indices behind a compiler barrier: otherwise clang drops the mask
 * it can prove redundant and indexes with a copy the verifier cannot bound.
 */
static __always_inline void xtx_count_op(struct xtx_stats *s, __u8 opcode, __u8 status)
{
	__u32 o = opcode, st = status;

	barrier_var(o);
	barrier_var(st);
	if (s && opcode < XTX_OP__COUNT && status < XTX_ST__COUNT)
		s->op[o & (XTX_OP__COUNT - 1)][st & (XTX_ST__COUNT - 1)]++;
}

_Static_assert((XTX_OP__COUNT & (XTX_OP__COUNT - 1)) == 0, "op index is a mask");
_Static_assert((XTX_ST__COUNT & (XTX_ST__COUNT - 1)) == 0, "status index is a mask");

#endif /* XTX_BPF_STATS_H */
