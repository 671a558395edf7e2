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
#include "placement.h"
#include "stats.h"
#include "pktctx.h"
#include "kv.h"
#include "log.h"
#include "hades_bf.h"
#include "hades_slot.h"
#include "hades_big.h"

/* Which filters of another slot a probe looks at. */
#define XTX_HADES_RBF		0x1
#define XTX_HADES_WBF		0x2
#define XTX_HADES_NEED_COMMITTING 0x4
#define XTX_HADES_UNCOUNTED	0x8	/* the caller counts the probes */

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
	__u64 rd = !!(which & XTX_HADES_RBF), wr = !!(which & XTX_HADES_WBF), c;
	__u32 i, b, w;

	if (!s || !XTX_READ_ONCE64(s->owner))
		return XTX_HADES_NO_HIT;
	c = XTX_READ_ONCE64(s->ctl);
	if ((which & XTX_HADES_NEED_COMMITTING) && xtx_hades_state(c) != XTX_HS_COMMITTING)
		return XTX_HADES_NO_HIT;
	xtx_hades_count_n(XTX_CTR_HADES_PROBES, rd + wr);
	for (i = 0; i < XTX_HADES_HASHES_MAX; i++) {
		if (i >= xtx_hades_hashes)
			break;
		b = xtx_hades_bf_bit(h, i, xtx_hades_bf_bits);
		w = b >> 6;
		barrier_var(w);
		w &= XTX_HADES_BF_WORDS - 1;
		rd &= XTX_READ_ONCE64(s->rbf[w]) >> (b & 63);
		wr &= XTX_READ_ONCE64(s->wbf[w]) >> (b & 63);
	}
	if (!rd && !wr)
		return XTX_HADES_NO_HIT;
	return xtx_hades_exact_has(other, kh, rd, wr) ? XTX_HADES_HIT : XTX_HADES_HIT_FP;
}

/* Does any write slot self staged as primary hit slot other's filters? */
static __always_inline int xtx_hades_staged_hits(__u32 self, __u32 other, __u32 which)
{
	struct xtx_hades_slot *s = xtx_hades_slot(self), *o = xtx_hades_slot(other);
	int res = XTX_HADES_NO_HIT;
	__u32 j, n, i, b, w, probes = 0;
	__u64 c, rd, wr;

	if (!s || !o || !XTX_READ_ONCE64(o->owner))
		return XTX_HADES_NO_HIT;
	c = XTX_READ_ONCE64(o->ctl);
	if ((which & XTX_HADES_NEED_COMMITTING) && xtx_hades_state(c) != XTX_HS_COMMITTING)
		return XTX_HADES_NO_HIT;
	n = s->nstaged;
	for (j = 0; j < XTX_HADES_STAGE_MAX; j++) {
		struct xtx_hades_staged *e = &s->staged[j];

		if (j >= n)
			break;
		if (e->flags & XTX_HSF_REPLICA)
			continue;
		/* both filters in one branch-free pass over the key's bits */
		rd = !!(which & XTX_HADES_RBF);
		wr = !!(which & XTX_HADES_WBF);
		probes += rd + wr;
		for (i = 0; i < XTX_HADES_HASHES_MAX; i++) {
			if (i >= xtx_hades_hashes)
				break;
			b = e->bit[i];
			w = b >> 6;
			barrier_var(w);
			w &= XTX_HADES_BF_WORDS - 1;
			rd &= XTX_READ_ONCE64(o->rbf[w]) >> (b & 63);
			wr &= XTX_READ_ONCE64(o->wbf[w]) >> (b & 63);
		}
		if (!rd && !wr)
			continue;
		if (xtx_hades_exact_has(other, e->kh, rd, wr)) {
			res = XTX_HADES_HIT;
			break;
		}
		res = XTX_HADES_HIT_FP;
	}
	if (!(which & XTX_HADES_UNCOUNTED))
		xtx_hades_count_n(XTX_CTR_HADES_PROBES, probes);
	return res;
}

__noinline int xtx_hades_staged_hit(__u32 self, __u32 other, __u32 which)
{
	return xtx_hades_staged_hits(self, other, which);
}

/*
 * One key against every committing slot but self (HREAD/HWRITE's check).
 * The registry's mask is read after the caller's recording OR, so a
 * committer that published later sees the recorded bit instead.
 */
__noinline int xtx_hades_reg_key_hit(__u32 self, __u64 h, __u64 kh, __u32 which)
{
	struct xtx_hades_registry *reg = xtx_hades_registry();
	__u64 mask;
	__u32 i, e;
	int hit;

	if (!reg)
		return XTX_HADES_NO_HIT;
	mask = XTX_READ_ONCE64(reg->mask);
	for (i = 0; i < XTX_HADES_COMMITTING_MAX; i++) {
		if (!(mask >> i))
			break;
		if (!((mask >> i) & 1))
			continue;
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
__noinline int xtx_hades_reg_staged_hit(__u32 self)
{
	struct xtx_hades_registry *reg = xtx_hades_registry();
	__u64 mask;
	__u32 i, e;
	int hit;

	if (!reg)
		return XTX_HADES_NO_HIT;
	mask = XTX_READ_ONCE64(reg->mask);
	for (i = 0; i < XTX_HADES_COMMITTING_MAX; i++) {
		if (!(mask >> i))
			break;
		if (!((mask >> i) & 1))
			continue;
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

/* What the committer's scan did to one slot. */
#define XTX_HSCAN_SQUASHED	0x1
#define XTX_HSCAN_FP		0x2	/* the hit was one the exact sets refute */
#define XTX_HSCAN_NACK		0x4

/*
 * The committer's look at one occupied slot: squash it if it is active and
 * its filters hold a written key.  One that went COMMITTING since the
 * registry check (or that the squash CAS lost to) and is hit means the two
 * cannot both commit: refuse this one.
 */
__noinline int xtx_hades_scan_slot(__u32 self, __u32 idx)
{
	struct xtx_hades_slot *s;
	__u64 c, seen;
	__u32 st;
	int hit;

	if (idx == self)
		return 0;
	s = xtx_hades_slot(idx);
	if (!s || !XTX_READ_ONCE64(s->owner))
		return 0;
	c = XTX_READ_ONCE64(s->ctl);
	st = xtx_hades_state(c);
	/* a backup's slot has empty filters: the flag goes up before any bit */
	if ((st != XTX_HS_ACTIVE && st != XTX_HS_COMMITTING) ||
	    !(*(volatile __u32 *)&s->flags & XTX_HSLF_PRIMARY))
		return 0;
	hit = xtx_hades_staged_hits(self, idx, XTX_HADES_RBF | XTX_HADES_WBF | XTX_HADES_UNCOUNTED);
	if (!hit)
		return 0;
	if (st == XTX_HS_ACTIVE) {
		__u64 squashed = xtx_hades_ctl(xtx_hades_gen(c), XTX_HS_SQUASHED);

		seen = __sync_val_compare_and_swap(&s->ctl, c, squashed);
		if (seen == c)
			return XTX_HSCAN_SQUASHED | (hit == XTX_HADES_HIT_FP ? XTX_HSCAN_FP : 0);
		if (xtx_hades_gen(seen) != xtx_hades_gen(c) ||
		    xtx_hades_state(seen) != XTX_HS_COMMITTING)
			return 0;	/* released, reclaimed or squashed by another */
	}
	return XTX_HSCAN_NACK | (hit == XTX_HADES_HIT_FP ? XTX_HSCAN_FP : 0);
}

static __always_inline __u32 xtx_popcount64(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (x * 0x0101010101010101ull) >> 56;
}

struct xtx_hades_scan {
	__u32 self;
	__u32 probed;		/* occupied slots the scan looked at */
	__u32 nack;
	__u32 squashed;
	__u32 fp_squashed;
	__u32 fp_nack;
};

/* bpf_loop over the occupancy bitmap, one word of 64 slots per call. */
static long xtx_hades_scan_cb(__u64 w, void *data)
{
	struct xtx_hades_registry *reg = xtx_hades_registry();
	struct xtx_hades_scan *sc = data;
	__u64 word;
	__u32 b;
	int res;

	if (!reg)
		return 1;
	word = XTX_READ_ONCE64(reg->used[w & (XTX_HADES_SLOTS_MAX / 64 - 1)]);
	/* occupied slots, counted outside the loop: a count in it multiplies verifier paths */
	sc->probed += xtx_popcount64(word);
	for (b = 0; b < 64; b++) {
		if (!(word >> b))
			break;
		if (!((word >> b) & 1))
			continue;
		res = xtx_hades_scan_slot(sc->self, w * 64 + b);
		if (res & XTX_HSCAN_SQUASHED) {
			sc->squashed++;
			if (res & XTX_HSCAN_FP)
				sc->fp_squashed++;
		} else if (res & XTX_HSCAN_NACK) {
			sc->nack = 1;
			sc->fp_nack = !!(res & XTX_HSCAN_FP);
			return 1;
		}
	}
	return 0;
}

/*
 * The KV half, run as the op the HADES op stands for (xtx_hades_kv_opcode):
 * one global copy of the KV code for every HADES op that needs it.
 */
__noinline int xtx_hades_kv(struct xdp_md *ctx, __u32 idx, __u32 force_defer)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	return xtx_op_kv(ctx, op, idx, pc, force_defer);
}

/* HREAD / HWRITE: record first, then the committing filters, then the value. */
static __always_inline __u8 xtx_hades_access(struct xdp_md *ctx, struct xtx_op *op, __u32 idx,
					     struct xtx_pkt_ctx *pc, bool write)
{
	__u8 orig = op->opcode, st;
	struct xtx_hades_ref r;
	__u64 h, kh;
	int hit;

	xtx_hades_find(op->txn, op->flags & XTX_HOPF_BEGIN, &r);
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
	/* the exact sets' identity of the key, only when they are kept */
	kh = xtx_hades_exact_on ? xtx_hash(op->table, op->key) : 0;
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
	st = xtx_hades_kv(ctx, idx, false);
	op->opcode = orig;
	return st;
}

static __always_inline void xtx_hades_stage(struct xtx_hades_staged *e, const struct xtx_op *op)
{
	__u64 h = xtx_hades_bf_hash(op->table, op->key);
	__u32 i;

	for (i = 0; i < XTX_HADES_HASHES_MAX; i++) {
		if (i >= xtx_hades_hashes)
			break;
		e->bit[i] = xtx_hades_bf_bit(h, i, xtx_hades_bf_bits);
	}
	e->kh = xtx_hades_exact_on ? xtx_hash(op->table, op->key) : 0;
	e->key = op->key;
	e->version = op->version;
	e->table = op->table;
	e->vlen = op->vlen;
	e->flags = ((op->flags & XTX_OPF_DELETE) ? XTX_HSF_DELETE : 0) |
		   ((op->flags & XTX_HOPF_REPLICA) ? XTX_HSF_REPLICA : 0) |
		   ((op->flags & XTX_OPF_EXT) ? XTX_HSF_BIG : 0);
	/* a big value is in XTX_MAP_HADES_BIG: value[] holds nothing then */
	if (op->flags & XTX_OPF_EXT)
		__builtin_memset(e->value, 0, XTX_VALUE_INLINE);
	else
		__builtin_memcpy(e->value, op->value, XTX_VALUE_INLINE);
}

/* Does s stage a write as its primary (what a squash scan looks for)? */
static __always_inline bool xtx_hades_writes_here(struct xtx_hades_slot *s)
{
	__u32 j, n = s->nstaged;

	for (j = 0; j < XTX_HADES_STAGE_MAX; j++) {
		if (j >= n)
			break;
		if (!(s->staged[j].flags & XTX_HSF_REPLICA))
			return true;
	}
	return false;
}

/*
 * The partial lock of HADES §V-B, at the transaction's last intend here:
 * publish COMMITTING (registry entry first, then the state), and only then
 * look at the others, so two committers cannot both miss each other.
 * Slot idx is the caller's in tenure ctl; pos its registry entry.
 */
__noinline int xtx_hades_lock(__u32 idx, __u64 ctl, __u32 pos)
{
	struct xtx_hades_scan sc = { .self = idx };
	__u64 want = xtx_hades_ctl(xtx_hades_gen(ctl), XTX_HS_COMMITTING);
	struct xtx_hades_slot *s = xtx_hades_slot(idx);
	int hit;

	if (!s) {
		xtx_hades_reg_drop(pos);
		return XTX_ST_RETRY;
	}
	s->reg_pos = pos;
	if (__sync_val_compare_and_swap(&s->ctl, ctl, want) != ctl) {
		xtx_hades_reg_drop(pos);
		s->reg_pos = 0;
		return XTX_ST_SQUASHED;
	}
	hit = xtx_hades_reg_staged_hit(idx);
	if (hit) {
		sc.nack = 1;
		sc.fp_nack = hit == XTX_HADES_HIT_FP;
	} else if (xtx_hades_writes_here(s)) {
		bpf_loop((xtx_hades_slots + 63) / 64, xtx_hades_scan_cb, &sc, 0);
	}
	/* two filters per written key and other slot */
	if (sc.probed > 1)
		xtx_hades_count_n(XTX_CTR_HADES_PROBES, 2ull * (sc.probed - 1) * s->nstaged);
	if (sc.squashed)
		xtx_hades_count_n(XTX_CTR_HADES_SQUASH, sc.squashed);
	if (sc.fp_squashed)
		xtx_hades_count_n(XTX_CTR_HADES_FP_SQUASH, sc.fp_squashed);
	if (!sc.nack)
		return XTX_ST_OK;
	xtx_count(XTX_CTR_HADES_NACK);
	if (sc.fp_nack)
		xtx_count(XTX_CTR_HADES_FP_BLOCK);
	xtx_hades_release_at(s, idx, want, XTX_HO_NACKED);
	return XTX_ST_NACK;
}

/*
 * Did xtxd's resolver fence txn (user/xtxd/resolve/resolve_hades.h)?  It answered
 * a peer that txn is not committing here, so txn must never commit here.
 */
static __always_inline bool xtx_hades_fenced(__u64 txn)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct xtx_log_cursor *c = bpf_map_lookup_elem(&xtx_log_cursor, &cpu);

	return c && c->fenced && bpf_map_lookup_elem(&xtx_fence, &txn);
}

/* HINTEND: stage one write; the last one here partially locks (Ack or NACK). */
static __always_inline __u8 xtx_hades_intend(struct xdp_md *ctx, struct xtx_op *op, __u32 idx,
					     struct xtx_pkt_ctx *pc)
{
	bool last = op->flags & XTX_HOPF_LAST, nowrite = op->flags & XTX_HOPF_NO_WRITE;
	bool replica = op->flags & XTX_HOPF_REPLICA, primary;
	struct xtx_hades_staged *e;
	struct xtx_hades_ref r;
	__u32 pos = 0, n;
	__u64 h;
	int err;

	/* checked before the slot is looked at: the resolver's grace period covers the rest */
	if (xtx_hades_fenced(op->txn))
		return XTX_ST_NACK;
	xtx_hades_find(op->txn, op->flags & XTX_HOPF_BEGIN, &r);
	if (r.status != XTX_ST_OK || !r.s)
		return r.status;
	if (xtx_hades_state(r.ctl) == XTX_HS_SQUASHED)
		return XTX_ST_SQUASHED;
	if (xtx_hades_state(r.ctl) != XTX_HS_ACTIVE)
		return XTX_ST_BAD_ARG;	/* its last intend already ran */
	if (!nowrite && !xtx_placement_covered(op->table, op->key, op->token)) {
		/*
		 * Placed by an older configuration: nothing staged, and no Ack
		 * here ever (its LAST finds the slot squashed), so no resolver
		 * can validate it without this write
		 */
		__sync_val_compare_and_swap(&r.s->ctl, r.ctl,
					    xtx_hades_ctl(xtx_hades_gen(r.ctl), XTX_HS_SQUASHED));
		return XTX_ST_MOVED;
	}
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
		/* atomic: two packets of the transaction may stage at once */
		n = __sync_fetch_and_add(&r.s->nstaged, 1);
		if (n >= XTX_HADES_STAGE_MAX) {
			__sync_fetch_and_sub(&r.s->nstaged, 1);
			xtx_hades_reg_drop(pos);
			return XTX_ST_TOO_MANY;
		}
		/* the value first: the resolver may install it once the slot commits */
		if (op->flags & XTX_OPF_EXT) {
			err = xtx_hades_stage_big(ctx, idx, r.idx, n);
			if (err != XTX_ST_OK) {
				__sync_fetch_and_sub(&r.s->nstaged, 1);
				xtx_hades_reg_drop(pos);
				return err;
			}
			/* the area reference was used: op is the packet's, looked up anew */
			op = xtx_op_at(ctx, idx);
			if (!op) {
				__sync_fetch_and_sub(&r.s->nstaged, 1);
				xtx_hades_reg_drop(pos);
				return XTX_ST_MALFORMED;
			}
		}
		e = &r.s->staged[n & (XTX_HADES_STAGE_MAX - 1)];
		xtx_hades_stage(e, op);
		if (!replica) {
			/* the flag first: a committer's scan skips slots without it */
			if (!(r.s->flags & XTX_HSLF_PRIMARY))
				__sync_fetch_and_or(&r.s->flags, XTX_HSLF_PRIMARY);
			h = xtx_hades_bf_hash(op->table, op->key);
			xtx_hades_bf_record(r.s->wbf, h);
			xtx_hades_exact_add(r.idx, e->kh, true);
		}
	}
	if (op->token)
		r.s->participants |= op->token;
	if (!last)
		return XTX_ST_OK;
	if (primary)
		return xtx_hades_lock(r.idx, r.ctl, pos);
	/* a backup only holds the writes: no filters, nothing to check */
	h = xtx_hades_ctl(xtx_hades_gen(r.ctl), XTX_HS_COMMITTING);
	if (__sync_val_compare_and_swap(&r.s->ctl, r.ctl, h) != r.ctl)
		return XTX_ST_SQUASHED;
	return XTX_ST_OK;
}

/* Room for n entries in this CPU's log (a big value: its head and continuations). */
static __always_inline bool xtx_hades_log_room(__u32 n)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct xtx_log_cursor *c = bpf_map_lookup_elem(&xtx_log_cursor, &cpu);

	return c && c->tail - c->head + n <= xtx_log_append_cap();
}

/*
 * Appends a validated write to this CPU's log, in LOG_APPEND's entry
 * format (global: the append's code is verified once more, not per caller).
 */
__noinline int xtx_hades_log(struct xdp_md *ctx, __u32 idx, __u64 version, __u32 last)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	__u32 flags;

	if (!op)
		return XTX_ST_MALFORMED;
	flags = op->flags;
	op->version = version;
	op->flags = (flags & (XTX_OPF_DELETE | XTX_OPF_EXT)) | (last ? XTX_OPF_LOG_LAST : 0);
	/*
	 * every participant acked: decided, so recovery replays it without
	 * asking; a big value (in the area, put there by validation) goes as
	 * a head and its continuations, all or nothing
	 */
	if (flags & XTX_OPF_EXT) {
		xtx_log_append_ext_as(ctx, idx, XTX_LOGF_DECIDED);
		op = xtx_op_at(ctx, idx);
		if (!op)
			return XTX_ST_MALFORMED;
	} else {
		xtx_log_append_decided(op, xtx_txn_client(op->txn));
	}
	op->flags = flags;
	op->version = version;
	return XTX_ST_OK;
}

/*
 * A re-deferred HVALIDATE of a big staged write: the staged bytes go over
 * the client's copy in its area while the slot still holds them (after
 * the slot's release only the client's copy is left).  Global: verified once.
 */
__noinline int xtx_hades_refill_big(struct xdp_md *ctx, __u32 idx)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_hades_big *b;
	struct xtx_hades_ref r;
	__u32 j, n;

	if (!op)
		return XTX_ST_MALFORMED;
	xtx_hades_find(op->txn, false, &r);
	if (!r.s)
		return XTX_ST_OK;
	n = r.s->nstaged;
	for (j = 0; j < XTX_HADES_STAGE_MAX; j++) {
		if (j >= n)
			break;
		if (r.s->staged[j].key != op->key || r.s->staged[j].table != op->table)
			continue;
		if (!(r.s->staged[j].flags & XTX_HSF_BIG))
			break;
		b = xtx_hades_big_at(r.idx, j);
		/* too little room: the client's copy, as it would go anyway */
		if (b && b->len <= xtx_ext_of(op)->cap)
			return xtx_hades_unstage_big(ctx, idx, r.idx, j);
		break;
	}
	return XTX_ST_OK;
}

/*
 * HVALIDATE: install one staged write at base + 1 (as COMMIT_PRIMARY, or
 * COMMIT_BACKUP at a replica, so xtxd's rare path runs it the same way),
 * log it, and once the last one came and every write is in, release the slot.
 */
static __always_inline __u8 xtx_hades_validate(struct xdp_md *ctx, struct xtx_op *op, __u32 idx,
					       struct xtx_pkt_ctx *pc, bool force_defer)
{
	bool last = op->flags & XTX_HOPF_LAST, was_done;
	struct xtx_hades_staged *e = NULL;
	__u8 orig = op->opcode, st;
	struct xtx_hades_ref r;
	__u64 base;
	__u32 j, n, at = 0, len = 0;
	int err;

	if (force_defer) {
		/* ran here before and went to xtxd: only its record can answer */
		if (op->flags & XTX_OPF_EXT) {
			xtx_hades_refill_big(ctx, idx);
			op = xtx_op_at(ctx, idx);
			if (!op)
				return XTX_ST_MALFORMED;
		}
		base = op->version;
		op->opcode = xtx_hades_kv_opcode(orig, op->flags);
		op->version = xtx_hades_kv_version(orig, op->flags, base);
		st = xtx_hades_kv(ctx, idx, true);
		op->opcode = orig;
		if (st == XTX_ST_DEFERRED || st == XTX_ST_RETRY)
			op->version = base;
		else if (st == XTX_ST_OK || st == XTX_ST_ALREADY_APPLIED)
			op->version = base + 1;
		return st;
	}
	xtx_hades_find(op->txn, false, &r);
	if (r.status == XTX_ST_RETRY)
		return r.status;
	if (!r.s) {
		if (r.outcome != XTX_HO_VALIDATED)
			return XTX_ST_TXN_GONE;
		/* the request names the base: the answer, as every other, the version written */
		op->version++;
		return XTX_ST_ALREADY_APPLIED;
	}
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
			at = j;
			break;
		}
	}
	if (!e)
		return XTX_ST_BAD_ARG;	/* never intended here */
	if (e->flags & XTX_HSF_BIG) {
		struct xtx_hades_big *b = xtx_hades_big_at(r.idx, at);

		len = b ? b->len : 0;
	}
	/*
	 * Done before still runs the install: it is idempotent by version, and
	 * an install whose trip to xtxd failed after it was logged is redone.
	 */
	was_done = e->flags & XTX_HSF_DONE;
	if (!was_done && !xtx_hades_log_room(1 + xtx_log_cont_count(len)))
		return XTX_ST_LOG_FULL;
	/* the packet carries the staged write, so xtxd can run it if it must */
	base = e->version;
	if (e->flags & XTX_HSF_BIG) {
		/* the staged bytes into the op's area (or TOO_BIG: nothing changed) */
		err = xtx_hades_unstage_big(ctx, idx, r.idx, at);
		if (err != XTX_ST_OK)
			return err;
		op = xtx_op_at(ctx, idx);
		if (!op)
			return XTX_ST_MALFORMED;
		op->vlen = 0;
	} else {
		/* answered in the slot: room the request left goes unused */
		op->flags &= ~XTX_OPF_EXT;
		__builtin_memcpy(op->value, e->value, XTX_VALUE_INLINE);
		op->vlen = e->vlen;
	}
	op->flags &= ~(XTX_OPF_DELETE | XTX_HOPF_REPLICA);
	if (e->flags & XTX_HSF_DELETE)
		op->flags |= XTX_OPF_DELETE;
	if (e->flags & XTX_HSF_REPLICA)
		op->flags |= XTX_HOPF_REPLICA;
	op->opcode = xtx_hades_kv_opcode(orig, op->flags);
	op->version = xtx_hades_kv_version(orig, op->flags, base);
	st = xtx_hades_kv(ctx, idx, false);
	op->opcode = orig;
	if (st != XTX_ST_OK && st != XTX_ST_DEFERRED && st != XTX_ST_ALREADY_APPLIED) {
		op->version = base;
		return st;
	}
	/*
	 * Installed now or before: the answer names the version the write
	 * has, whichever way (kernel, xtxd, a replica's rule) answered it, so
	 * every copy of the request is answered alike.
	 */
	if (st != XTX_ST_DEFERRED)
		op->version = base + 1;
	e->flags |= XTX_HSF_DONE;
	if (!was_done && st != XTX_ST_ALREADY_APPLIED) {
		/* the log's LAST marks the write that completes the transaction here */
		xtx_hades_log(ctx, idx, base + 1,
			      (last || (r.s->flags & XTX_HSLF_LAST)) &&
			      xtx_hades_all_done(r.s, false));
	}
	/* what goes to xtxd carries the base, as a re-deferral of it expects (force_defer) */
	if (st == XTX_ST_DEFERRED) {
		op->version = base;
		e->flags |= XTX_HSF_INSTALLING;
	}
done:
	if (last && !(r.s->flags & XTX_HSLF_LAST))
		__sync_fetch_and_or(&r.s->flags, XTX_HSLF_LAST);
	if ((r.s->flags & XTX_HSLF_LAST) && xtx_hades_all_done(r.s, true)) {
		xtx_hades_release(&r, XTX_HO_VALIDATED);
		xtx_count(XTX_CTR_HADES_COMMIT);
	}
	return st;
}

/* HABORT: forget the transaction here, whatever its state. */
static __always_inline __u8 xtx_hades_abort(struct xtx_op *op)
{
	struct xtx_hades_ref r;

	xtx_hades_find(op->txn, false, &r);
	if (r.status == XTX_ST_RETRY)
		return r.status;
	if (!r.s) {
		op->flags |= XTX_HRF_NOTHING;
		return XTX_ST_OK;
	}
	/*
	 * Its participants are deciding it, and this one promised to keep it:
	 * their decision, not a late abort, ends it (the coordinator resends)
	 */
	if (xtx_hades_state(r.ctl) == XTX_HS_COMMITTING && (r.s->flags & XTX_HSLF_HELD))
		return XTX_ST_RETRY;
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
	/* a value area: a read's room, or a write's value (area.h checked its shape) */
	case XTX_OP_HREAD:
	case XTX_OP_HWRITE:
		allowed = XTX_HOPF_BEGIN | XTX_OPF_EXT;
		break;
	case XTX_OP_HINTEND:
		allowed = XTX_HOPF_KNOWN | XTX_OPF_EXT;
		break;
	case XTX_OP_HVALIDATE:
		allowed = (XTX_HOPF_KNOWN & ~XTX_HOPF_BEGIN) | XTX_OPF_EXT;
		break;
	default:
		allowed = 0;
		break;
	}
	if (op->flags & ~allowed)
		return XTX_ST_BAD_ARG;
	/* a value with no write */
	if ((op->flags & XTX_OPF_EXT) && (op->flags & XTX_HOPF_NO_WRITE))
		return XTX_ST_BAD_ARG;
	if (op->opcode == XTX_OP_HINTEND && !(op->flags & XTX_HOPF_NO_WRITE) &&
	    op->vlen > xtx_value_size)
		return XTX_ST_BAD_ARG;
	return XTX_ST_OK;
}

/* Each op is a global function: verified once, and its stack apart from the others'. */
__noinline int xtx_hades_op_access(struct xdp_md *ctx, __u32 idx, __u32 write)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	return xtx_hades_access(ctx, op, idx, pc, write);
}

__noinline int xtx_hades_op_intend(struct xdp_md *ctx, __u32 idx)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	return xtx_hades_intend(ctx, op, idx, pc);
}

__noinline int xtx_hades_op_validate(struct xdp_md *ctx, __u32 idx, __u32 force_defer)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_pkt_ctx *pc = xtx_pkt_ctx_get();

	if (!op || !pc)
		return XTX_ST_MALFORMED;
	return xtx_hades_validate(ctx, op, idx, pc, force_defer);
}

__noinline int xtx_hades_op_abort(struct xdp_md *ctx, __u32 idx)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);

	if (!op)
		return XTX_ST_MALFORMED;
	return xtx_hades_abort(op);
}

/* Runs HADES op idx of the packet. */
static __always_inline int xtx_op_hades(struct xdp_md *ctx, __u32 idx, __u8 opcode,
					bool force_defer)
{
	switch (opcode) {
	case XTX_OP_HREAD:
		return xtx_hades_op_access(ctx, idx, 0);
	case XTX_OP_HWRITE:
		return xtx_hades_op_access(ctx, idx, 1);
	case XTX_OP_HINTEND:
		return xtx_hades_op_intend(ctx, idx);
	case XTX_OP_HVALIDATE:
		return xtx_hades_op_validate(ctx, idx, force_defer);
	case XTX_OP_HABORT:
		return xtx_hades_op_abort(ctx, idx);
	default:
		return XTX_ST_UNKNOWN_OP;
	}
}

#endif /* XTX_BPF_HADES_H */
