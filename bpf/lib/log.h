/* SPDX-License-Identifier: GPL-2.0-only */
/* LOG_APPEND (DINT §3.3): a write appended to this CPU's log, contention-free. */
#ifndef XTX_BPF_LOG_H
#define XTX_BPF_LOG_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/log.h>
#include <xtx/hash.h>
#include "config.h"
#include "maps.h"
#include "locks.h"

/*
 * A logged transaction is committed once every replica logged it: from
 * then on its locks must outlive any lease (design §5).
 */
static __always_inline void xtx_log_mark_lock(const struct xtx_op *op)
{
	struct xtx_lock_slot *s = xtx_lock_slot_get(xtx_hash(op->table, op->key));
	int i;

	if (!s)
		return;
	for (i = 0; i < 64; i++) {
		if (xtx_slot_trylock(s)) {
			if (s->excl && s->owner == op->txn)
				s->flags |= XTX_LOCKF_LOGGED;
			xtx_slot_unlock(s);
			return;
		}
	}
}

static __always_inline __u8 xtx_log_append_flags(struct xtx_op *op, __u32 client_id,
						 __u8 extra)
{
	__u32 cpu = bpf_get_smp_processor_id(), idx;
	struct xtx_log_cursor *c = bpf_map_lookup_elem(&xtx_log_cursor, &cpu);
	struct xtx_log_entry *e;
	__u64 tail, packed = op->token, txn = op->txn;

	if (!c)
		return XTX_ST_BAD_ARG;
	/*
	 * The servers decided this transaction without this write (xtxd's
	 * resolver): it must never be logged here now.  The resolver sets
	 * fenced, inserts the fence, then waits out a grace period longer than
	 * any program run before it reads the ring, so an append that missed
	 * the fence is seen.
	 */
	if (c->fenced && bpf_map_lookup_elem(&xtx_fence, &txn))
		return XTX_ST_FENCED;
	tail = c->tail;
	/* xtxd's head only moves forward; a stale read only makes us say full early */
	if (tail - c->head >= xtx_log_ring) {
		c->full++;
		return XTX_ST_LOG_FULL;
	}
	idx = cpu * xtx_log_ring + (__u32)(tail & (xtx_log_ring - 1));
	e = bpf_map_lookup_elem(&xtx_log, &idx);
	if (!e)
		return XTX_ST_BAD_ARG;
	e->seq = tail;
	e->txn = op->txn;
	e->key = op->key;
	e->version = op->version;
	e->client_id = client_id;
	e->table = op->table;
	e->vlen = op->vlen;
	e->flags = ((op->flags & XTX_OPF_DELETE) ? XTX_LOGF_DELETE : 0) |
		   ((op->flags & XTX_OPF_LOG_LAST) ? XTX_LOGF_LAST : 0) | extra;
	e->nreplicas = (packed >> 48) > 3 ? 3 : packed >> 48;
	e->replicas[0] = packed;
	e->replicas[1] = packed >> 16;
	e->replicas[2] = packed >> 32;
	__builtin_memcpy(e->value, op->value, XTX_VALUE_MAX);
	/* publish: the entry's stores are ordered before the tail that exposes it */
	__sync_lock_test_and_set(&c->tail, tail + 1);
	c->appended++;
	xtx_log_mark_lock(op);
	op->version = tail;
	return XTX_ST_OK;
}

/* LOG_APPEND: a write of a transaction not decided yet (design §5). */
static __always_inline __u8 xtx_op_log_append(struct xtx_op *op, __u32 client_id)
{
	return xtx_log_append_flags(op, client_id, 0);
}

/*
 * A write of a transaction already decided committed (HADES validates
 * before it logs): recovery replays it whatever the other replicas hold.
 */
static __always_inline __u8 xtx_log_append_decided(struct xtx_op *op, __u32 client_id)
{
	return xtx_log_append_flags(op, client_id, XTX_LOGF_DECIDED);
}

#endif /* XTX_BPF_LOG_H */
