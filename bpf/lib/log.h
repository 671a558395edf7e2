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
#include "placement.h"
#include "parse.h"
#include <xtx/area.h>

/*
 * Marks txn's exclusive hold on op's key LOGGED, under the slot's spin
 * word held by the caller: from now on no lease takes it back, and the
 * table's family stays until it is freed (pins.h).  Returns the pin bit
 * to count once the slot is let go, or 0 when the table was counted.
 */
static __always_inline __u32 xtx_log_mark_held(struct xtx_lock_slot *s, const struct xtx_op *op)
{
	__u32 pin = 1u << (XTX_LOCK_PIN_SHIFT + (op->table & (XTX_MAX_TABLES - 1)));

	s->flags |= XTX_LOCKF_LOGGED;
	if (s->flags & pin)
		return 0;
	s->flags |= pin;
	return pin >> XTX_LOCK_PIN_SHIFT;
}

/*
 * An append that proves no grant (HADES, a backup, or an older client at
 * the primary) still keeps a lock its transaction holds from the lease.
 */
static __always_inline void xtx_log_mark_lock(const struct xtx_op *op)
{
	struct xtx_lock_slot *s = xtx_slot_lock_wait(xtx_hash(op->table, op->key));
	__u32 pin = 0;

	if (!s)
		return;
	if (s->excl && s->owner == op->txn)
		pin = xtx_log_mark_held(s, op);
	xtx_slot_unlock(s);
	if (pin)
		xtx_pins_add(pin, 1);
}

/*
 * The primary's proof (include/xtx/log.h): txn still holds the key's
 * exclusive lock under the grant it was given, and from now on the lease
 * never takes it back, since a transaction that logged everywhere is
 * committed (design §5).  Checked and marked in one critical section, so no
 * reclaim slips in between.  The caller has made sure the append cannot
 * fail after this: a lock marked logged with no record would stay forever.
 */
static __always_inline __u8 xtx_log_claim_grant(const struct xtx_op *op)
{
	struct xtx_lock_slot *s = xtx_slot_lock_wait(xtx_hash(op->table, op->key));
	__u8 st = XTX_ST_NOT_HELD;
	__u32 pin = 0;

	if (!s)
		return XTX_ST_RETRY;
	if (s->excl && s->owner == op->txn && s->gen == xtx_log_grant_of(op->token)) {
		pin = xtx_log_mark_held(s, op);
		st = XTX_ST_OK;
	}
	xtx_slot_unlock(s);
	if (pin)
		xtx_pins_add(pin, 1);
	return st;
}

/*
 * Entries a CPU's ring takes before appends other than commit marks are
 * refused: the last sixteenth is the marks' (xtx_log_commit_mark()), so a
 * commit, which frees locks, never waits behind new appends for room.
 */
static __always_inline __u64 xtx_log_append_cap(void)
{
	return xtx_log_ring - (xtx_log_ring >> 4);
}

/* Whether op names its key's replica set under the served configuration. */
static __always_inline bool xtx_log_placed_here(const struct xtx_op *op)
{
	__u32 set = 0;
	int r = xtx_placement(op->table, op->key, &set);

	return r == 0 || (r > 0 && set == (__u32)op->token);
}

/*
 * What is checked before an append takes room: the fence, and the
 * placement.  XTX_ST_OK, or the refusal.
 */
static __always_inline __u8 xtx_log_precheck(const struct xtx_op *op, struct xtx_log_cursor *c,
					     __u8 extra)
{
	__u64 txn = op->txn;

	/*
	 * The servers decided this transaction without this write (xtxd's
	 * resolver): it must never be logged here now.  The resolver sets
	 * fenced, inserts the fence, then waits out a grace period longer than
	 * any program run before it reads the ring, so an append that missed
	 * the fence is seen.
	 */
	if (c->fenced && bpf_map_lookup_elem(&xtx_fence, &txn))
		return XTX_ST_FENCED;
	/*
	 * Placed by an older configuration: its primary's locks may be gone
	 * with a failed server, and the replicas recovery asks are others.
	 * HADES's decided writes are placed by their validation.
	 */
	if (!(extra & XTX_LOGF_DECIDED) && !(op->flags & XTX_OPF_LOG_META) &&
	    !xtx_log_placed_here(op))
		return XTX_ST_MOVED;
	return XTX_ST_OK;
}

/* The entry of op at seq tail, all but its value. */
static __always_inline void xtx_log_fill(struct xtx_log_entry *e, const struct xtx_op *op,
					 __u32 client_id, __u8 extra, __u64 tail)
{
	__u16 rep[3];

	e->seq = tail;
	e->txn = op->txn;
	e->key = op->key;
	e->version = op->version;
	e->client_id = client_id;
	e->table = op->table;
	e->flags = ((op->flags & XTX_OPF_DELETE) ? XTX_LOGF_DELETE : 0) |
		   ((op->flags & XTX_OPF_LOG_LAST) ? XTX_LOGF_LAST : 0) |
		   ((op->flags & XTX_OPF_LOG_META) ? XTX_LOGF_META : 0) |
		   ((op->flags & XTX_OPF_LOG_PRIMARY) ? XTX_LOGF_PRIMARY : 0) | extra;
	e->nreplicas = xtx_log_replicas_unpack(op->token, rep);
	/* a big write, head and continuations, is one write of the count */
	e->nwrites = (op->flags & XTX_OPF_LOG_LAST) ?
		     (op->flags & XTX_OPF_LOG_COUNT_MASK) >> XTX_OPF_LOG_COUNT_SHIFT : 0;
	e->replicas[0] = rep[0];
	e->replicas[1] = rep[1];
	e->replicas[2] = rep[2];
}

/*
 * Makes n entries written at tail.. visible to the drain; then the grant
 * marks and the answer.  Only this CPU appends, and XDP runs to completion:
 * the room checked before writing is still there.
 */
static __always_inline void xtx_log_publish(struct xtx_log_cursor *c, struct xtx_op *op,
					    __u64 tail, __u32 n)
{
	/* the entries' stores are ordered before the tail that exposes them */
	__sync_lock_test_and_set(&c->tail, tail + n);
	c->appended += n;
	if (!(op->flags & (XTX_OPF_LOG_PRIMARY | XTX_OPF_LOG_META)))
		xtx_log_mark_lock(op);
	op->version = tail;
}

static __always_inline __u8 xtx_log_append_flags(struct xtx_op *op, __u32 client_id,
						 __u8 extra)
{
	__u32 cpu = bpf_get_smp_processor_id(), idx;
	struct xtx_log_cursor *c = bpf_map_lookup_elem(&xtx_log_cursor, &cpu);
	struct xtx_log_entry *e;
	__u64 tail;
	__u8 st;

	if (!c)
		return XTX_ST_BAD_ARG;
	st = xtx_log_precheck(op, c, extra);
	if (st != XTX_ST_OK)
		return st;
	tail = c->tail;
	/* xtxd's head only moves forward; a stale read only makes us say full early */
	if (tail - c->head >= xtx_log_append_cap()) {
		c->full++;
		return XTX_ST_LOG_FULL;
	}
	idx = cpu * xtx_log_ring + (__u32)(tail & (xtx_log_ring - 1));
	e = bpf_map_lookup_elem(&xtx_log, &idx);
	if (!e)
		return XTX_ST_BAD_ARG;
	/* only this CPU appends to its ring, and XDP runs to completion: the room stays */
	if (op->flags & XTX_OPF_LOG_PRIMARY) {
		st = xtx_log_claim_grant(op);
		if (st != XTX_ST_OK)
			return st;
	}
	xtx_log_fill(e, op, client_id, extra, tail);
	e->vlen = op->vlen;
	__builtin_memcpy(e->value, op->value, XTX_VALUE_INLINE);
	xtx_log_publish(c, op, tail, 1);
	return XTX_ST_OK;
}

/* Continuations a value of XTX_VALUE_MAX bytes takes. */
#define XTX_LOG_CONT_MAX	((XTX_VALUE_MAX + XTX_LOG_CONT_BYTES - 1) / XTX_LOG_CONT_BYTES)

/*
 * LOG_APPEND of a value over XTX_VALUE_INLINE, in the packet's value area:
 * a head entry (XTX_LOGF_EXT, vlen 0, value[] a struct xtx_log_ext) and
 * xtx_log_cont_count(len) continuations at the following seqs, all or
 * nothing.  Every slot is written past tail first, where the drain does
 * not look; the grant is claimed only then (nothing can fail after it),
 * and one tail update publishes them together.  A ring without room for
 * them all answers LOG_FULL, writing nothing.  extra: entry flags beyond
 * the op's (XTX_LOGF_DECIDED for HADES).  Global: verified once.
 */
__noinline int xtx_log_append_ext_as(struct xdp_md *ctx, __u32 op_idx, __u32 extra)
{
	struct xtx_op *op = xtx_op_at(ctx, op_idx);
	__u32 cpu = bpf_get_smp_processor_id(), idx, k, n, off, len, chunk;
	struct xtx_log_cursor *c;
	struct xtx_log_entry *e;
	struct xtx_log_cont *ct;
	struct xtx_log_ext x;
	struct xtx_hdr *h;
	__u64 tail;
	__u8 st;

	if (!op)
		return XTX_ST_MALFORMED;
	h = xtx_hdr_of(ctx);
	c = bpf_map_lookup_elem(&xtx_log_cursor, &cpu);
	if (!h || !c)
		return XTX_ST_BAD_ARG;
	off = xtx_ext_of(op)->off;
	len = xtx_ext_of(op)->len;
	/*
	 * The tiling was checked with every op; this op's own reference is
	 * checked again here, against the frame: the bytes read below must
	 * be this packet's, after its op array.
	 */
	if (len <= XTX_VALUE_INLINE || len > XTX_VALUE_MAX ||
	    off < sizeof(struct xtx_hdr) + (__u32)h->nops * sizeof(struct xtx_op) ||
	    (long)XTX_HDR_OFF + off + len > (long)(ctx->data_end - ctx->data))
		return XTX_ST_MALFORMED;
	extra &= XTX_LOGF_DECIDED;
	st = xtx_log_precheck(op, c, extra);
	if (st != XTX_ST_OK)
		return st;
	n = xtx_log_cont_count(len);
	tail = c->tail;
	if (tail - c->head + 1 + n > xtx_log_append_cap()) {
		c->full++;
		return XTX_ST_LOG_FULL;
	}
	for (k = 0; k < XTX_LOG_CONT_MAX; k++) {
		if (k >= n)
			break;
		idx = cpu * xtx_log_ring + (__u32)((tail + 1 + k) & (xtx_log_ring - 1));
		ct = bpf_map_lookup_elem(&xtx_log, &idx);
		if (!ct)
			return XTX_ST_BAD_ARG;
		ct->seq = tail + 1 + k;
		/* zero past the value's end */
		__builtin_memset(ct->bytes, 0, XTX_LOG_CONT_BYTES);
		chunk = len - k * XTX_LOG_CONT_BYTES;
		if (chunk > XTX_LOG_CONT_BYTES)
			chunk = XTX_LOG_CONT_BYTES;
		if (chunk < 1 || chunk > XTX_LOG_CONT_BYTES)
			return XTX_ST_BAD_ARG;
		if (bpf_xdp_load_bytes(ctx, XTX_HDR_OFF + off + k * XTX_LOG_CONT_BYTES, ct->bytes,
				       chunk))
			return XTX_ST_MALFORMED;
	}
	idx = cpu * xtx_log_ring + (__u32)(tail & (xtx_log_ring - 1));
	e = bpf_map_lookup_elem(&xtx_log, &idx);
	if (!e)
		return XTX_ST_BAD_ARG;
	if (op->flags & XTX_OPF_LOG_PRIMARY) {
		st = xtx_log_claim_grant(op);
		if (st != XTX_ST_OK)
			return st;
	}
	xtx_log_fill(e, op, xtx_txn_client(op->txn), XTX_LOGF_EXT | extra, tail);
	e->vlen = 0;
	__builtin_memset(&x, 0, sizeof(x));
	x.len = (__u16)len;
	x.txn = op->txn;
	__builtin_memset(e->value, 0, XTX_VALUE_INLINE);
	__builtin_memcpy(e->value, &x, sizeof(x));
	xtx_log_publish(c, op, tail, 1 + n);
	return XTX_ST_OK;
}

/* LOG_APPEND of a value over XTX_VALUE_INLINE: a write not decided yet. */
static __always_inline int xtx_log_append_ext(struct xdp_md *ctx, __u32 op_idx)
{
	return xtx_log_append_ext_as(ctx, op_idx, 0);
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

/* Whether this CPU's log has room for one more entry, the marks' reserve left alone. */
static __always_inline bool xtx_log_has_room(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct xtx_log_cursor *c = bpf_map_lookup_elem(&xtx_log_cursor, &cpu);

	return c && c->tail - c->head < xtx_log_append_cap();
}

/*
 * A plain INSERT/UPDATE/DELETE XDP just applied, logged as a decided write
 * of no transaction, so recovery replays it like any other: without it a
 * write acknowledged and then evicted to xtxd's store would die with xtxd.
 * The caller checked the room before writing; only this CPU appends, and
 * XDP runs to completion, so the room is still there.
 */
static __always_inline void xtx_log_plain_write(const struct xtx_op *op, __u32 client_id)
{
	__u32 cpu = bpf_get_smp_processor_id(), idx;
	struct xtx_log_cursor *c = bpf_map_lookup_elem(&xtx_log_cursor, &cpu);
	struct xtx_log_entry *e;
	__u64 tail;

	if (!c)
		return;
	tail = c->tail;
	if (tail - c->head >= xtx_log_ring) {
		c->full++;
		return;
	}
	idx = cpu * xtx_log_ring + (__u32)(tail & (xtx_log_ring - 1));
	e = bpf_map_lookup_elem(&xtx_log, &idx);
	if (!e)
		return;
	e->seq = tail;
	e->txn = 0;
	e->key = op->key;
	e->version = op->version;
	e->client_id = client_id;
	e->table = op->table;
	e->vlen = op->opcode == XTX_OP_DELETE ? 0 : op->vlen;
	e->flags = XTX_LOGF_DECIDED | XTX_LOGF_LAST |
		   (op->opcode == XTX_OP_DELETE ? XTX_LOGF_DELETE : 0);
	e->nreplicas = 0;
	e->nwrites = 1;
	e->replicas[0] = 0;
	e->replicas[1] = 0;
	e->replicas[2] = 0;
	__builtin_memcpy(e->value, op->value, XTX_VALUE_INLINE);
	__sync_lock_test_and_set(&c->tail, tail + 1);
	c->appended++;
}

/*
 * A commit mark (XTX_LOGF_COMMITTED) after a COMMIT_BACKUP or
 * COMMIT_PRIMARY: the coordinator sends those only once its transaction is
 * decided committed, so recovery may replay the record it finds here
 * without asking the other replicas.  It may use the ring's last sixteenth
 * (xtx_log_append_cap()), kept from every other append, so it is lost only
 * when that too is full (counted in full): the commit goes on regardless,
 * and recovery then leaves the transaction to the resolver.
 */
static __always_inline void xtx_log_commit_mark(const struct xtx_op *op, __u32 client_id)
{
	__u32 cpu = bpf_get_smp_processor_id(), idx;
	struct xtx_log_cursor *c = bpf_map_lookup_elem(&xtx_log_cursor, &cpu);
	struct xtx_log_entry *e;
	__u64 tail;

	if (!c)
		return;
	tail = c->tail;
	if (tail - c->head >= xtx_log_ring) {
		c->full++;
		return;
	}
	idx = cpu * xtx_log_ring + (__u32)(tail & (xtx_log_ring - 1));
	e = bpf_map_lookup_elem(&xtx_log, &idx);
	if (!e)
		return;
	e->seq = tail;
	e->txn = op->txn;
	e->key = op->key;
	e->version = op->version;
	e->client_id = client_id;
	e->table = op->table;
	e->vlen = 0;
	e->flags = XTX_LOGF_COMMITTED;
	e->nreplicas = 0;
	e->nwrites = 0;
	e->replicas[0] = 0;
	e->replicas[1] = 0;
	e->replicas[2] = 0;
	__builtin_memset(e->value, 0, XTX_VALUE_INLINE);
	__sync_lock_test_and_set(&c->tail, tail + 1);
	c->appended++;
}

#endif /* XTX_BPF_LOG_H */
