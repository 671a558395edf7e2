/* SPDX-License-Identifier: GPL-2.0-only */
/* The foundation ops: PING, STATS and COUNTER_ADD. */
#ifndef XTX_BPF_OPS_BASIC_H
#define XTX_BPF_OPS_BASIC_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include "config.h"
#include "maps.h"

/* version (the client's nonce) is echoed untouched; value: struct xtx_ping_info. */
static __always_inline __u8 xtx_op_ping(struct xtx_op *op, __u64 lock_lease_ns)
{
	struct xtx_ping_info pi = {
		.cpu = bpf_get_smp_processor_id(),
		.lock_lease_ns = lock_lease_ns,
		.hades_lease_ns = xtx_hades_lease_ns,
	};

	__builtin_memcpy(op->value, &pi, sizeof(pi));
	op->vlen = sizeof(pi);
	return XTX_ST_OK;
}

#define XTX_STATS_WORDS	(sizeof(struct xtx_stats) / sizeof(__u64))

struct xtx_stats_sum {
	__u32 first;			/* index of the first counter, as u64 words */
	__u32 end;			/* first word past the group: the rest reads 0 */
	__u64 sum[XTX_STATS_PER_OP];
};

/* bpf_loop callback: adds one CPU's five counters; verified once, not per CPU. */
static long xtx_stats_add_cpu(__u32 cpu, struct xtx_stats_sum *acc)
{
	__u32 zero = 0, i;
	__u64 *words = bpf_map_lookup_percpu_elem(&xtx_stats, &zero, cpu);

	if (!words)
		return 1;
	for (i = 0; i < XTX_STATS_PER_OP; i++) {
		__u32 w = acc->first + i;

		if (w < acc->end && w < XTX_STATS_WORDS)
			acc->sum[i] += words[w];
	}
	return 0;
}

/* Sums five counters over every CPU: bpf_map_lookup_percpu_elem reads the others. */
static __always_inline __u8 xtx_op_stats(struct xtx_op *op)
{
	struct xtx_stats_sum acc = {};
	__u64 key = op->key;

	if (key < XTX_STATS_KEY_OP && key * XTX_STATS_PER_OP < XTX_CTR__COUNT) {
		acc.first = key * XTX_STATS_PER_OP;
		acc.end = XTX_CTR__COUNT;
	} else if (key >= XTX_STATS_KEY_OP && key < XTX_STATS_KEY_OP * (XTX_STATS_OP_GROUPS + 1) &&
		   (key & 0xff) < XTX_OP__COUNT) {
		/* op[opcode][5g+1 .. 5g+5], laid out after the counters */
		__u32 group = (key >> 8) - 1, opcode = key & 0xff;

		acc.first = XTX_CTR__COUNT + opcode * XTX_ST__COUNT + 1 + group * XTX_STATS_PER_OP;
		acc.end = XTX_CTR__COUNT + (opcode + 1) * XTX_ST__COUNT;
	} else {
		return XTX_ST_BAD_ARG;
	}
	bpf_loop(xtx_nr_cpus, xtx_stats_add_cpu, &acc, 0);
	__builtin_memcpy(op->value, acc.sum, sizeof(acc.sum));
	op->vlen = sizeof(acc.sum);
	return XTX_ST_OK;
}

static __always_inline __u8 xtx_op_counter_add(struct xtx_op *op)
{
	__u32 idx = op->key & (XTX_COUNTERS - 1);
	__u64 *c = bpf_map_lookup_elem(&xtx_counters, &idx);
	__u64 delta = op->version;

	if (!c)
		return XTX_ST_BAD_ARG;
	op->version = __sync_fetch_and_add(c, delta) + delta;
	return XTX_ST_OK;
}

_Static_assert((XTX_COUNTERS & (XTX_COUNTERS - 1)) == 0, "counter index is a mask");
_Static_assert(XTX_STATS_PER_OP * 8 <= XTX_VALUE_INLINE, "stats fit one value");
_Static_assert(sizeof(struct xtx_stats) % sizeof(__u64) == 0, "stats are u64 words");

#endif /* XTX_BPF_OPS_BASIC_H */
