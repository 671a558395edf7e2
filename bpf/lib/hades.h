/* SPDX-License-Identifier: GPL-2.0-only */
/* HADES ops in XDP (design §6): read/write recording, intend-to-commit, validation, abort. */
#ifndef XTX_BPF_HADES_H
#define XTX_BPF_HADES_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/hash.h>
#include <xtx/hades.h>
#include <xtx/log.h>
#include "config.h"
#include "maps.h"
#include "parse.h"
#include "stats.h"
#include "pktctx.h"
#include "kv.h"
#include "log.h"
#include "hades_bf.h"
#include "hades_slot.h"

/* Which filters of another slot a probe looks at. */
#define XTX_HADES_RBF		0x1
#define XTX_HADES_WBF		0x2
#define XTX_HADES_NEED_COMMITTING 0x4

/* Results of a conflict probe. */
#define XTX_HADES_NO_HIT	0
#define XTX_HADES_HIT		1
#define XTX_HADES_HIT_FP	2	/* filter hit the exact sets refute */

static __always_inline void xtx_hades_count_n(__u32 counter, __u64 n)
{
	struct xtx_stats *s = xtx_stats_cpu();

	if (s && counter < XTX_CTR__COUNT)
		s->ctr[counter] += n;
}

/*
 * Does key (filter hash h, exact hash kh) hit slot other's filters?
 * Global so that its verification is paid once, whatever loop calls it.
 */
__noinline int xtx_hades_key_hit(__u32 other, __u64 h, __u64 kh, __u32 which)
{
	struct xtx_hades_slot *s = xtx_hades_slot(other);
	bool rd = false, wr = false;
	__u64 c;

	if (!s || !XTX_READ_ONCE64(s->owner))
		return XTX_HADES_NO_HIT;
	c = XTX_READ_ONCE64(s->ctl);
	if ((which & XTX_HADES_NEED_COMMITTING) && xtx_hades_state(c) != XTX_HS_COMMITTING)
		return XTX_HADES_NO_HIT;
	if (which & XTX_HADES_RBF) {
		rd = xtx_hades_bf_has(s->rbf, h);
		xtx_count(XTX_CTR_HADES_PROBES);
	}
	if (which & XTX_HADES_WBF) {
		wr = xtx_hades_bf_has(s->wbf, h);
		xtx_count(XTX_CTR_HADES_PROBES);
	}
	if (!rd && !wr)
		return XTX_HADES_NO_HIT;
	return xtx_hades_exact_has(other, kh, rd, wr) ? XTX_HADES_HIT : XTX_HADES_HIT_FP;
}

/* Does any write slot self staged as primary hit slot other's filters? */
__noinline int xtx_hades_staged_hit(__u32 self, __u32 other, __u32 which)
{
	struct xtx_hades_slot *s = xtx_hades_slot(self);
	int res = XTX_HADES_NO_HIT, hit;
	__u32 j, n;

	if (!s)
		return XTX_HADES_NO_HIT;
	n = s->nstaged;
	for (j = 0; j < XTX_HADES_STAGE_MAX; j++) {
		struct xtx_hades_staged *e = &s->staged[j];

		if (j >= n)
			break;
		if (e->flags & XTX_HSF_REPLICA)
			continue;
		hit = xtx_hades_key_hit(other, xtx_hades_bf_hash(e->table, e->key),
					xtx_hash(e->table, e->key), which);
		if (hit == XTX_HADES_HIT)
			return hit;
		if (hit)
			res = hit;
	}
	return res;
}

/* One key against every committing slot but self (HREAD/HWRITE's check). */
static __always_inline int xtx_hades_reg_key_hit(__u32 self, __u64 h, __u64 kh, __u32 which)
{
	struct xtx_hades_registry *reg = xtx_hades_registry();
	__u32 i, e;
	int hit;

	if (!reg)
		return XTX_HADES_NO_HIT;
	for (i = 0; i < XTX_HADES_COMMITTING_MAX; i++) {
		e = *(volatile __u32 *)&reg->slot[i];
		if (!e || e - 1 == self)
			continue;
		hit = xtx_hades_key_hit(e - 1, h, kh, which | XTX_HADES_NEED_COMMITTING);
		if (hit)
			return hit;
	}
	return XTX_HADES_NO_HIT;
}

/* Self's staged writes against every committing slot but self. */
static __always_inline int xtx_hades_reg_staged_hit(__u32 self)
{
	struct xtx_hades_registry *reg = xtx_hades_registry();
	__u32 i, e;
	int hit;

	if (!reg)
		return XTX_HADES_NO_HIT;
	for (i = 0; i < XTX_HADES_COMMITTING_MAX; i++) {
		e = *(volatile __u32 *)&reg->slot[i];
		if (!e || e - 1 == self)
			continue;
		hit = xtx_hades_staged_hit(self, e - 1, XTX_HADES_RBF | XTX_HADES_WBF |
					   XTX_HADES_NEED_COMMITTING);
		if (hit)
			return hit;
	}
	return XTX_HADES_NO_HIT;
}

struct xtx_hades_scan {
	__u32 self;
	__u32 nack;
	__u32 squashed;
	__u32 fp_squashed;
	__u32 fp_nack;
};

/*
 * The committer's scan over every slot: squash each active transaction
 * whose filters hold a written key.  One that went COMMITTING since the
 * registry check (or that the squash CAS lost to) and is hit means the two
 * cannot both commit: refuse this one.
 */
static long xtx_hades_scan_cb(__u64 i, void *data)
{
	struct xtx_hades_scan *sc = data;
	struct xtx_hades_slot *s;
	__u32 idx = i, st;
	__u64 c, seen;
	int hit;

	if (idx == sc->self)
		return 0;
	s = xtx_hades_slot(idx);
	if (!s)
		return 1;
	if (!XTX_READ_ONCE64(s->owner))
		return 0;
	c = XTX_READ_ONCE64(s->ctl);
	st = xtx_hades_state(c);
	if (st != XTX_HS_ACTIVE && st != XTX_HS_COMMITTING)
		return 0;
	hit = xtx_hades_staged_hit(sc->self, idx, XTX_HADES_RBF | XTX_HADES_WBF);
	if (!hit)
		return 0;
	if (st == XTX_HS_ACTIVE) {
		seen = __sync_val_compare_and_swap(&s->ctl, c,
						   xtx_hades_ctl(xtx_hades_gen(c), XTX_HS_SQUASHED));
		if (seen == c) {
			sc->squashed++;
			if (hit == XTX_HADES_HIT_FP)
				sc->fp_squashed++;
			return 0;
		}
		if (xtx_hades_gen(seen) != xtx_hades_gen(c) ||
		    xtx_hades_state(seen) != XTX_HS_COMMITTING)
			return 0;	/* released, reclaimed or squashed by another */
	}
	sc->nack = 1;
	if (hit == XTX_HADES_HIT_FP)
		sc->fp_nack = 1;
	return 1;
}

/* HREAD / HWRITE: record first, then the committing filters, then the value. */
static __always_inline __u8 xtx_hades_access(struct xtx_op *op, __u32 idx, struct xtx_pkt_ctx *pc,
					     bool write)
{
	__u8 orig = op->opcode, st;
	struct xtx_hades_ref r;
	__u64 h, kh;
	int hit;

	xtx_hades_find(op->txn, op->flags & XTX_HOPF_BEGIN, pc, &r);
	if (r.status != XTX_ST_OK || !r.s)
		return r.status;
	if (xtx_hades_state(r.ctl) == XTX_HS_SQUASHED)
		return XTX_ST_SQUASHED;
	if (xtx_hades_state(r.ctl) != XTX_HS_ACTIVE)
		return XTX_ST_BAD_ARG;	/* no accesses after the last intend-to-commit */
	r.s->touched_ns = xtx_now(pc);
	if (!(r.s->flags & XTX_HSLF_PRIMARY))
		__sync_fetch_and_or(&r.s->flags, XTX_HSLF_PRIMARY);
	h = xtx_hades_bf_hash(op->table, op->key);
	kh = xtx_hash(op->table, op->key);
	xtx_hades_bf_record(write ? r.s->wbf : r.s->rbf, h);
	xtx_hades_exact_add(r.idx, kh, write);
	hit = xtx_hades_reg_key_hit(r.idx, h, kh,
				    write ? XTX_HADES_RBF | XTX_HADES_WBF : XTX_HADES_WBF);
	if (hit) {
		xtx_count(XTX_CTR_HADES_FILTER_RETRY);
		if (hit == XTX_HADES_HIT_FP)
			xtx_count(XTX_CTR_HADES_FP_BLOCK);
		return XTX_ST_RETRY;
	}
	op->opcode = xtx_hades_kv_opcode(orig, op->flags);
	st = xtx_op_kv(op, idx, pc, false);
	op->opcode = orig;
	return st;
}

static __always_inline void xtx_hades_stage(struct xtx_hades_staged *e, const struct xtx_op *op)
{
	e->key = op->key;
	e->version = op->version;
	e->table = op->table;
	e->vlen = op->vlen;
	e->flags = ((op->flags & XTX_OPF_DELETE) ? XTX_HSF_DELETE : 0) |
		   ((op->flags & XTX_HOPF_REPLICA) ? XTX_HSF_REPLICA : 0);
	__builtin_memcpy(e->value, op->value, XTX_VALUE_MAX);
}

/*
 * The partial lock of HADES §V-B, at the transaction's last intend here:
 * publish COMMITTING (registry entry first, then the state), and only then
 * look at the others, so two committers cannot both miss each other.
 */
static __always_inline __u8 xtx_hades_lock(struct xtx_hades_ref *r, __u32 pos)
{
	struct xtx_hades_scan sc = { .self = r->idx };
	__u64 want = xtx_hades_ctl(xtx_hades_gen(r->ctl), XTX_HS_COMMITTING);
	int hit;

	r->s->reg_pos = pos;
	if (__sync_val_compare_and_swap(&r->s->ctl, r->ctl, want) != r->ctl) {
		xtx_hades_reg_drop(pos);
		r->s->reg_pos = 0;
		return XTX_ST_SQUASHED;
	}
	r->ctl = want;
	hit = xtx_hades_reg_staged_hit(r->idx);
	if (hit) {
		sc.nack = 1;
		sc.fp_nack = hit == XTX_HADES_HIT_FP;
	} else if (r->s->nstaged) {
		bpf_loop(xtx_hades_slots, xtx_hades_scan_cb, &sc, 0);
	}
	if (sc.squashed)
		xtx_hades_count_n(XTX_CTR_HADES_SQUASH, sc.squashed);
	if (sc.fp_squashed)
		xtx_hades_count_n(XTX_CTR_HADES_FP_SQUASH, sc.fp_squashed);
	if (!sc.nack)
		return XTX_ST_OK;
	xtx_count(XTX_CTR_HADES_NACK);
	if (sc.fp_nack)
		xtx_count(XTX_CTR_HADES_FP_BLOCK);
	xtx_hades_release(r, XTX_HO_NACKED);
	return XTX_ST_NACK;
}

/* HINTEND: stage one write; the last one here partially locks (Ack or NACK). */
static __always_inline __u8 xtx_hades_intend(struct xtx_op *op, struct xtx_pkt_ctx *pc)
{
	bool last = op->flags & XTX_HOPF_LAST, nowrite = op->flags & XTX_HOPF_NO_WRITE;
	bool replica = op->flags & XTX_HOPF_REPLICA, primary;
	struct xtx_hades_ref r;
	__u32 pos = 0, n;
	__u64 h;

	xtx_hades_find(op->txn, op->flags & XTX_HOPF_BEGIN, pc, &r);
	if (r.status != XTX_ST_OK || !r.s)
		return r.status;
	if (xtx_hades_state(r.ctl) == XTX_HS_SQUASHED)
		return XTX_ST_SQUASHED;
	if (xtx_hades_state(r.ctl) != XTX_HS_ACTIVE)
		return XTX_ST_BAD_ARG;	/* its last intend already ran */
	r.s->touched_ns = xtx_now(pc);
	primary = (r.s->flags & XTX_HSLF_PRIMARY) || (!nowrite && !replica);
	if (last && primary) {
		pos = xtx_hades_reg_take(r.idx);
		if (!pos) {
			xtx_count(XTX_CTR_HADES_FULL);
			return XTX_ST_RETRY;
		}
	}
	if (!nowrite) {
		n = r.s->nstaged;
		if (n >= XTX_HADES_STAGE_MAX) {
			xtx_hades_reg_drop(pos);
			return XTX_ST_TOO_MANY;
		}
		xtx_hades_stage(&r.s->staged[n & (XTX_HADES_STAGE_MAX - 1)], op);
		r.s->nstaged = n + 1;
		if (!replica) {
			h = xtx_hades_bf_hash(op->table, op->key);
			xtx_hades_bf_record(r.s->wbf, h);
			xtx_hades_exact_add(r.idx, xtx_hash(op->table, op->key), true);
			if (!(r.s->flags & XTX_HSLF_PRIMARY))
				__sync_fetch_and_or(&r.s->flags, XTX_HSLF_PRIMARY);
		}
	}
	if (op->token)
		r.s->participants |= op->token;
	if (!last)
		return XTX_ST_OK;
	if (primary)
		return xtx_hades_lock(&r, pos);
	/* a backup only holds the writes: no filters, nothing to check */
	if (__sync_val_compare_and_swap(&r.s->ctl, r.ctl,
					xtx_hades_ctl(xtx_hades_gen(r.ctl), XTX_HS_COMMITTING)) != r.ctl)
		return XTX_ST_SQUASHED;
	return XTX_ST_OK;
}

static __always_inline bool xtx_hades_log_room(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct xtx_log_cursor *c = bpf_map_lookup_elem(&xtx_log_cursor, &cpu);

	return c && c->tail - c->head < xtx_log_ring;
}

/* Appends a validated write to this CPU's log, in LOG_APPEND's entry format. */
static __always_inline void xtx_hades_log(struct xtx_op *op, __u64 version, bool last)
{
	__u32 flags = op->flags;

	op->version = version;
	op->flags = (flags & XTX_OPF_DELETE) | (last ? XTX_OPF_LOG_LAST : 0);
	xtx_op_log_append(op, xtx_txn_client(op->txn));
	op->flags = flags;
	op->version = version;
}

/*
 * HVALIDATE: install one staged write at base + 1 (as COMMIT_PRIMARY, or
 * COMMIT_BACKUP at a replica, so xtxd's rare path runs it the same way),
 * log it, and with the last one release the slot.
 */
static __always_inline __u8 xtx_hades_validate(struct xtx_op *op, __u32 idx,
					       struct xtx_pkt_ctx *pc, bool force_defer)
{
	bool last = op->flags & XTX_HOPF_LAST;
	struct xtx_hades_staged *e = NULL;
	__u8 orig = op->opcode, st;
	struct xtx_hades_ref r;
	__u64 base;
	__u32 j, n;

	if (force_defer) {
		/* ran here before and went to xtxd: only its record can answer */
		base = op->version;
		op->opcode = xtx_hades_kv_opcode(orig, op->flags);
		op->version = xtx_hades_kv_version(orig, op->flags, base);
		st = xtx_op_kv(op, idx, pc, true);
		op->opcode = orig;
		if (st == XTX_ST_DEFERRED || st == XTX_ST_RETRY)
			op->version = base;
		return st;
	}
	xtx_hades_find(op->txn, false, pc, &r);
	if (r.status == XTX_ST_RETRY)
		return r.status;
	if (!r.s)
		return r.outcome == XTX_HO_VALIDATED ? XTX_ST_ALREADY_APPLIED : XTX_ST_TXN_GONE;
	if (xtx_hades_state(r.ctl) != XTX_HS_COMMITTING)
		return XTX_ST_TXN_GONE;
	if (op->flags & XTX_HOPF_NO_WRITE) {
		st = XTX_ST_OK;
		goto done;
	}
	n = r.s->nstaged;
	for (j = 0; j < XTX_HADES_STAGE_MAX; j++) {
		if (j >= n)
			break;
		if (r.s->staged[j].key == op->key && r.s->staged[j].table == op->table) {
			e = &r.s->staged[j];
			break;
		}
	}
	if (!e)
		return XTX_ST_BAD_ARG;	/* never intended here */
	if (e->flags & XTX_HSF_DONE) {
		st = XTX_ST_ALREADY_APPLIED;
		goto done;
	}
	if (!xtx_hades_log_room())
		return XTX_ST_LOG_FULL;
	/* the packet carries the staged write, so xtxd can run it if it must */
	base = e->version;
	__builtin_memcpy(op->value, e->value, XTX_VALUE_MAX);
	op->vlen = e->vlen;
	op->flags = (op->flags & ~XTX_OPF_DELETE) | ((e->flags & XTX_HSF_DELETE) ? XTX_OPF_DELETE : 0);
	op->opcode = xtx_hades_kv_opcode(orig, op->flags);
	op->version = xtx_hades_kv_version(orig, op->flags, base);
	st = xtx_op_kv(op, idx, pc, false);
	op->opcode = orig;
	if (st == XTX_ST_OK || st == XTX_ST_DEFERRED) {
		xtx_hades_log(op, base + 1, last);
		if (st == XTX_ST_DEFERRED)
			op->version = base;
	} else if (st != XTX_ST_ALREADY_APPLIED) {
		op->version = base;
		return st;
	}
	e->flags |= XTX_HSF_DONE;
done:
	if (last) {
		xtx_hades_release(&r, XTX_HO_VALIDATED);
		xtx_count(XTX_CTR_HADES_COMMIT);
	}
	return st;
}

/* HABORT: forget the transaction here, whatever its state. */
static __always_inline __u8 xtx_hades_abort(struct xtx_op *op, struct xtx_pkt_ctx *pc)
{
	struct xtx_hades_ref r;

	xtx_hades_find(op->txn, false, pc, &r);
	if (r.status == XTX_ST_RETRY)
		return r.status;
	if (!r.s) {
		op->flags |= XTX_HRF_NOTHING;
		return XTX_ST_OK;
	}
	xtx_hades_release(&r, XTX_HO_ABORTED);
	xtx_count(XTX_CTR_HADES_ABORT);
	return XTX_ST_OK;
}

/* Checks a HADES op before anything in its packet runs. */
static __always_inline int xtx_hades_check(const struct xtx_op *op, __u32 client_id)
{
	__u32 allowed;

	if (!op->txn || xtx_txn_client(op->txn) != client_id)
		return XTX_ST_BAD_TXN;
	switch (op->opcode) {
	case XTX_OP_HREAD:
	case XTX_OP_HWRITE:
		allowed = XTX_HOPF_BEGIN;
		break;
	case XTX_OP_HINTEND:
		allowed = XTX_HOPF_KNOWN;
		break;
	case XTX_OP_HVALIDATE:
		allowed = XTX_HOPF_KNOWN & ~XTX_HOPF_BEGIN;
		break;
	default:
		allowed = 0;
		break;
	}
	if (op->flags & ~allowed)
		return XTX_ST_BAD_ARG;
	if (op->opcode == XTX_OP_HINTEND && !(op->flags & XTX_HOPF_NO_WRITE) &&
	    op->vlen > xtx_value_size)
		return XTX_ST_BAD_ARG;
	return XTX_ST_OK;
}

/* Runs HADES op idx of the packet; global, verified once. */
__noinline int xtx_op_hades(struct xdp_md *ctx, __u32 idx, __u32 force_defer)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	switch (op->opcode) {
	case XTX_OP_HREAD:
		return xtx_hades_access(op, idx, pc, false);
	case XTX_OP_HWRITE:
		return xtx_hades_access(op, idx, pc, true);
	case XTX_OP_HINTEND:
		return xtx_hades_intend(op, pc);
	case XTX_OP_HVALIDATE:
		return xtx_hades_validate(op, idx, pc, force_defer);
	case XTX_OP_HABORT:
		return xtx_hades_abort(op, pc);
	default:
		return XTX_ST_UNKNOWN_OP;
	}
}

#endif /* XTX_BPF_HADES_H */
