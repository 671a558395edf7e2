/* SPDX-License-Identifier: GPL-2.0-only */
/* The per-packet context every op of a packet shares (struct xtx_pkt_ctx in maps.h). */
#ifndef XTX_BPF_PKTCTX_H
#define XTX_BPF_PKTCTX_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "maps.h"

enum xtx_exec_mode {
	XTX_EXEC_RUN,		/* first execution */
	XTX_EXEC_RUN_RECORD,	/* first execution of a packet with a dedupe record */
	XTX_EXEC_REPLAY,	/* duplicate: answer from the record */
	/*
	 * Duplicate of a request whose rare-path round trip was lost: ops
	 * recorded then are answered from the record, the others were with
	 * xtxd and go back to it, which answers from its own record.
	 */
	XTX_EXEC_REDEFER,
};

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

/* Op idx's xtx_hash(table, key), stored when the op was validated (exec.h). */
static __always_inline __u64 xtx_op_hash(const struct xtx_pkt_ctx *pc, __u32 idx)
{
	return pc->hash[idx & (XTX_MAX_OPS - 1)];
}

/*
 * A full barrier between the loads before it and those after: an atomic
 * exchange, which every JIT emits fully ordered, on this CPU's own
 * packet context, so no other CPU's line is written.
 */
static __always_inline void xtx_load_fence(void)
{
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();

	if (pc)
		__sync_lock_test_and_set(&pc->fence, 0);
}

/*
 * Whether a lease that started at stamp has run out by now.  Stamps come
 * from every CPU, and now was read when this packet started: a packet that
 * started later on another CPU may have written a stamp after it, which an
 * unsigned difference would read as an age of ~2^64.  A stamp in the
 * future is fresh.
 */
static __always_inline bool xtx_lease_over(__u64 now, __u64 stamp, __u64 lease_ns)
{
	return (__s64)(now - stamp) > (__s64)lease_ns;
}

#endif /* XTX_BPF_PKTCTX_H */
