/* SPDX-License-Identifier: GPL-2.0-only */
/* The lock manager (DINT §3.1): shared/exclusive and OCC locks on a shared-slot table. */
#ifndef XTX_BPF_LOCKS_H
#define XTX_BPF_LOCKS_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/hash.h>
#include "config.h"
#include "maps.h"
#include "stats.h"
#include "pktctx.h"
#include "pins.h"

/*
 * Slot rules and invariants are described with struct xtx_lock_slot in
 * include/xtx/maps.h.  Every function here runs between xtx_slot_trylock()
 * and xtx_slot_unlock() and calls no helper: the clock is read before, and
 * the pins of a freed slot are uncounted after (xtx_slot_unlock_ctx).
 */

struct xtx_lock_ctx {
	__u64 txn;
	__u64 hash;		/* xtx_hash(table, key) */
	__u64 now;		/* packet arrival: read once, before any slot is taken */
	__u64 lease_ns;		/* 0: leases off */
	__u32 flags;		/* reply flags gathered on the way */
	__u32 unpinned;		/* pinned tables of a slot freed: uncounted once let go */
};

static __always_inline struct xtx_lock_slot *xtx_lock_slot_get(__u64 hash)
{
	__u32 idx = xtx_lock_slot_of(hash, xtx_lock_slots);

	return bpf_map_lookup_elem(&xtx_locks, &idx);
}

/* One CAS, never a wait: a busy slot answers RETRY (DINT's fail-and-retry). */
static __always_inline bool xtx_slot_trylock(struct xtx_lock_slot *s)
{
	__u32 seq = *(volatile __u32 *)&s->spin;

	return !(seq & 1) && __sync_val_compare_and_swap(&s->spin, seq, seq + 1) == seq;
}

/*
 * An atomic exchange to the next even value: orders the slot's updates
 * before the release, and tells a reader between them that they came.
 */
static __always_inline void xtx_slot_unlock(struct xtx_lock_slot *s)
{
	__sync_lock_test_and_set(&s->spin, s->spin + 1);
}

/*
 * For what must not fail where a request may (a release, an undo): the
 * spin word is held for a few instructions by a CPU that cannot be
 * preempted there (XDP, TC), or by xtxd, which can: so the wait is bounded
 * by time (XTX_SLOT_WAIT_NS), not by a count of looks at the word, which
 * pass in a few microseconds now that a busy word is only read.  0 only
 * past the bound: counted, and the caller says so.  Global, on the slot's
 * index: verified once, not at every place a release is inlined.
 */
#define XTX_SLOT_WAIT_NS	(200 * 1000)
#define XTX_SLOT_WAIT_STEPS	(1u << 18)	/* bpf_loop's bound, far past the time */

struct xtx_slot_waiter {
	__u64 until;
	__u32 idx;
	__u32 got;
};

static int xtx_slot_wait_step(__u32 i, void *arg)
{
	struct xtx_slot_waiter *w = arg;
	struct xtx_lock_slot *s = bpf_map_lookup_elem(&xtx_locks, &w->idx);

	if (!s)
		return 1;
	if (xtx_slot_trylock(s)) {
		w->got = 1;
		return 1;
	}
	/* the clock only now and then: it costs more than a look at the word */
	return (i & 63) == 63 && bpf_ktime_get_ns() > w->until;
}

__noinline int xtx_slot_wait(__u32 idx)
{
	struct xtx_lock_slot *s = bpf_map_lookup_elem(&xtx_locks, &idx);
	struct xtx_slot_waiter w = { .idx = idx };

	if (!s)
		return 0;
	if (xtx_slot_trylock(s))
		return 1;
	w.until = bpf_ktime_get_ns() + XTX_SLOT_WAIT_NS;
	bpf_loop(XTX_SLOT_WAIT_STEPS, xtx_slot_wait_step, &w, 0);
	if (!w.got)
		xtx_count(XTX_CTR_LOCK_BUSY);
	return w.got;
}

/* hash's slot with its spin word taken (xtx_slot_wait), or NULL. */
static __always_inline struct xtx_lock_slot *xtx_slot_lock_wait(__u64 hash)
{
	__u32 idx = xtx_lock_slot_of(hash, xtx_lock_slots);

	if (!xtx_slot_wait(idx))
		return NULL;
	return bpf_map_lookup_elem(&xtx_locks, &idx);
}

static __always_inline bool xtx_slot_held(const struct xtx_lock_slot *s)
{
	return s->shared || s->excl;
}

static __always_inline void xtx_slot_free(struct xtx_lock_slot *s, struct xtx_lock_ctx *c)
{
	c->unpinned |= s->flags >> XTX_LOCK_PIN_SHIFT;
	s->shared = 0;
	s->excl = 0;
	s->owner = 0;
	s->flags = 0;
}

/* The pins of a slot freed meanwhile are uncounted once the slot is let go. */
static __always_inline void xtx_slot_unlock_ctx(struct xtx_lock_slot *s, struct xtx_lock_ctx *c)
{
	xtx_slot_unlock(s);
	if (c->unpinned)
		xtx_pins_add(c->unpinned, -1);
}

/* Index of one of txn's shared holds, or -1. */
static __always_inline int xtx_sharer_of(const struct xtx_lock_slot *s, __u64 txn)
{
	int i;

	for (i = 0; i < XTX_LOCK_SHARERS; i++)
		if (i < s->shared && s->sharer[i] == txn)
			return i;
	return -1;
}

/* Whether every shared hold is txn's (true when there is none). */
static __always_inline bool xtx_sharers_all(const struct xtx_lock_slot *s, __u64 txn)
{
	int i;

	for (i = 0; i < XTX_LOCK_SHARERS; i++)
		if (i < s->shared && s->sharer[i] != txn)
			return false;
	return true;
}

/*
 * A holder that vanished must not block the slot forever: past its lease
 * the slot is taken back, and the new gen turns the old holders' tokens
 * stale.  Never for a holder that has logged: it is committed (design §5).
 */
static __always_inline void xtx_lock_reclaim_expired(struct xtx_lock_slot *s,
						     struct xtx_lock_ctx *c)
{
	if (!xtx_slot_held(s) || !c->lease_ns || (s->flags & XTX_LOCKF_LOGGED) ||
	    !xtx_lease_over(c->now, s->granted_ns, c->lease_ns))
		return;
	xtx_slot_free(s, c);
	s->gen++;
	c->flags |= XTX_LOCKF_RECLAIMED;
}

/* Records the first key of a new hold, or notes that holders' keys differ. */
static __always_inline void xtx_lock_note_key(struct xtx_lock_slot *s, __u64 hash, bool first)
{
	if (first)
		s->key_hash = hash;
	else if (s->key_hash != hash)
		s->flags |= XTX_LOCK_KEYS_MIXED;
}

/* MINE: the exclusive holder is txn, or (no exclusive holder) a shared hold is. */
static __always_inline __u32 xtx_lock_state(const struct xtx_lock_slot *s, __u64 txn)
{
	bool mine = s->excl ? s->owner == txn : xtx_sharer_of(s, txn) >= 0;

	return (s->excl ? XTX_LOCKF_EXCL : 0) | (s->shared ? XTX_LOCKF_SHARED : 0) |
	       (mine ? XTX_LOCKF_MINE : 0) | (s->flags & XTX_LOCKF_LOGGED);
}

/*
 * The slot's state for txn (xtx_lock_state) read without taking the slot,
 * for a check that changes nothing: between two loads of the spin word,
 * each behind a fence.  False when an update was under way or came
 * between, or when a hold is past its lease (taking it back is a write):
 * the caller then takes the slot.  Returns gen << 32 | state, or -1 for
 * false: no out-argument, so nothing of it needs the caller's stack.  A
 * gen of 2^31 or more makes the value negative: callers test for -1 itself
 * (no state is all ones) and take gen unsigned (xtx_peek_gen).
 */
static __always_inline __s64 xtx_lock_peek(const struct xtx_lock_slot *s,
					   const struct xtx_lock_ctx *c)
{
	__u32 seq = *(const volatile __u32 *)&s->spin, st, g;

	if (seq & 1)
		return -1;
	xtx_load_fence();
	if (xtx_slot_held(s) && c->lease_ns && !(s->flags & XTX_LOCKF_LOGGED) &&
	    xtx_lease_over(c->now, s->granted_ns, c->lease_ns))
		return -1;
	st = xtx_lock_state(s, c->txn);
	g = s->gen;
	xtx_load_fence();
	if (*(const volatile __u32 *)&s->spin != seq)
		return -1;
	return (__s64)((__u64)g << 32 | st);
}

#define XTX_PEEK_BUSY	(-1)

static __always_inline __u32 xtx_peek_gen(__s64 seen)
{
	return (__u32)((__u64)seen >> 32);
}

/*
 * Whether txn still holds the grant token names on hash's slot, shared or
 * exclusive: 1 yes, 0 no, -1 not known (the slot stayed busy past the
 * bounded wait).  gen moves on with every grant of a free slot and every
 * reclaim, so the same gen with txn still holding means the hold never
 * lapsed since the grant.  A slot mid-update is looked at again, then
 * taken: on a hot slot other transactions' ops come between two loads
 * often, and "not held" must not be said of a hold that is there.
 * Global: only a replay asks, and its frame stays off the replay's stack.
 */
__noinline int xtx_lock_holds(__u64 hash, __u64 txn, __u64 token, int shared)
{
	struct xtx_lock_slot *s = xtx_lock_slot_get(hash);
	struct xtx_lock_ctx c = { .txn = txn, .hash = hash };
	__s64 seen = XTX_PEEK_BUSY;
	__u32 st, gen, i;

	if (!s)
		return 0;
	for (i = 0; i < 4 && seen == XTX_PEEK_BUSY; i++)
		seen = xtx_lock_peek(s, &c);
	if (seen != XTX_PEEK_BUSY) {
		st = (__u32)seen;
		gen = xtx_peek_gen(seen);
	} else {
		s = xtx_slot_lock_wait(hash);
		if (!s)
			return -1;
		st = xtx_lock_state(s, txn);
		gen = s->gen;
		xtx_slot_unlock(s);
	}
	return gen == token && (st & XTX_LOCKF_MINE) && (shared || (st & XTX_LOCKF_EXCL));
}

static __always_inline __u8 xtx_lock_reject(struct xtx_lock_slot *s, struct xtx_lock_ctx *c)
{
	if ((s->flags & XTX_LOCK_KEYS_MIXED) || s->key_hash != c->hash)
		c->flags |= XTX_LOCKF_SHARING;
	return XTX_ST_REJECTED;
}

static __always_inline __u8 xtx_lock_grant(struct xtx_lock_slot *s, struct xtx_lock_ctx *c)
{
	s->granted_ns = c->now;
	return XTX_ST_OK;
}

static __always_inline __u8 xtx_acquire_excl(struct xtx_lock_slot *s, struct xtx_lock_ctx *c)
{
	bool first = !xtx_slot_held(s);

	/* another's exclusive hold, or a shared hold that is not txn's (no upgrade past it) */
	if ((s->excl && s->owner != c->txn) || !xtx_sharers_all(s, c->txn))
		return xtx_lock_reject(s, c);
	if (s->excl == 0xffff)
		return XTX_ST_RETRY;
	if (first)
		s->gen++;
	s->owner = c->txn;
	s->excl++;
	xtx_lock_note_key(s, c->hash, first);
	return xtx_lock_grant(s, c);
}

static __always_inline __u8 xtx_acquire_shared(struct xtx_lock_slot *s, struct xtx_lock_ctx *c)
{
	bool first = !xtx_slot_held(s);
	__u16 n = s->shared;

	if (s->excl && s->owner != c->txn)
		return xtx_lock_reject(s, c);
	if (n >= XTX_LOCK_SHARERS) {
		/* as a conflict (no-wait): holds past the slot's room could not be proven */
		xtx_count(XTX_CTR_LOCK_SHARERS_FULL);
		return xtx_lock_reject(s, c);
	}
	if (first)
		s->gen++;
	s->sharer[n] = c->txn;
	s->shared = n + 1;
	xtx_lock_note_key(s, c->hash, first);
	return xtx_lock_grant(s, c);
}

static __always_inline __u8 xtx_release_shared(struct xtx_lock_slot *s, struct xtx_lock_ctx *c,
					       __u64 token)
{
	int i = xtx_sharer_of(s, c->txn);
	__u32 last = s->shared - 1;

	if (token != s->gen || i < 0 || i >= XTX_LOCK_SHARERS || last >= XTX_LOCK_SHARERS) {
		c->flags |= XTX_LOCKF_STALE;
		return XTX_ST_OK;
	}
	/* the last hold takes the freed place: holds stay packed */
	s->sharer[i] = s->sharer[last];
	s->sharer[last] = 0;
	s->shared = last;
	if (!xtx_slot_held(s))
		xtx_slot_free(s, c);
	return XTX_ST_OK;
}

static __always_inline __u8 xtx_release_excl(struct xtx_lock_slot *s, struct xtx_lock_ctx *c,
					     __u64 token)
{
	if (token != s->gen || !s->excl || s->owner != c->txn) {
		c->flags |= XTX_LOCKF_STALE;
		return XTX_ST_OK;
	}
	s->excl--;
	if (!s->excl)
		s->owner = 0;
	if (!xtx_slot_held(s))
		xtx_slot_free(s, c);
	return XTX_ST_OK;
}

/*
 * Releases one of txn's holds on hash's slot, shared or exclusive: a
 * commit's unlock, an undone grant, TC's release of a grant xtxd refused.
 * It must not fail for a busy spin word the way a request may.  Returns
 * XTX_ST_OK (also when the hold was already gone) or XTX_ST_RETRY.
 */
static __always_inline __u8 xtx_lock_release(__u64 txn, __u64 hash, __u64 token, bool shared)
{
	struct xtx_lock_ctx c = { .txn = txn, .hash = hash };
	struct xtx_lock_slot *s = xtx_slot_lock_wait(hash);

	if (!s)
		return XTX_ST_RETRY;
	/*
	 * A hold recovery took for its owner (maps.h): the token it was
	 * granted with is not the owner's, and its own commit frees it
	 */
	if (!shared && (s->flags & XTX_LOCK_RECOVERED) && s->excl && s->owner == txn)
		token = s->gen;
	if (shared)
		xtx_release_shared(s, &c, token);
	else
		xtx_release_excl(s, &c, token);
	xtx_slot_unlock_ctx(s, &c);
	return XTX_ST_OK;
}

static __always_inline __u8 xtx_lock_release_excl(__u64 txn, __u64 hash, __u64 token)
{
	return xtx_lock_release(txn, hash, token, false);
}

/* Runs one lock op on its slot; fills status, flags and token. */
static __always_inline __u8 xtx_op_lock(struct xtx_op *op, __u64 hash, __u64 now,
					__u64 lease_ns)
{
	struct xtx_lock_ctx c = {
		.txn = op->txn,
		.hash = hash,
		.now = now,
		.lease_ns = lease_ns,
	};
	struct xtx_lock_slot *s;
	__u8 opcode = op->opcode, st;
	__u64 token = op->token;

	s = xtx_lock_slot_get(c.hash);
	if (!s)
		return XTX_ST_BAD_ARG;
	/* a validation only looks: the slot's line stays clean on every other CPU */
	if (opcode == XTX_OP_OCC_VALIDATE) {
		__s64 seen = xtx_lock_peek(s, &c);

		if (seen != XTX_PEEK_BUSY) {
			op->flags = (__u32)seen;
			return XTX_ST_OK;
		}
	}
	if (!xtx_slot_trylock(s)) {
		xtx_count(XTX_CTR_LOCK_BUSY);
		return XTX_ST_RETRY;
	}
	xtx_lock_reclaim_expired(s, &c);
	switch (opcode) {
	case XTX_OP_LOCK_SHARED:
		st = xtx_acquire_shared(s, &c);
		break;
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
		st = xtx_acquire_excl(s, &c);
		break;
	case XTX_OP_UNLOCK_SHARED:
		st = xtx_release_shared(s, &c, token);
		break;
	case XTX_OP_UNLOCK_EXCL:
	case XTX_OP_OCC_UNLOCK:
		/* a hold recovery took for an undecided transaction: only a decision frees it */
		if (s->flags & XTX_LOCK_RECOVERED) {
			c.flags |= XTX_LOCKF_STALE;
			st = XTX_ST_OK;
			break;
		}
		st = xtx_release_excl(s, &c, token);
		break;
	default:	/* XTX_OP_OCC_VALIDATE: state only */
		st = XTX_ST_OK;
		break;
	}
	c.flags |= xtx_lock_state(s, c.txn);
	token = s->gen;
	xtx_slot_unlock_ctx(s, &c);

	op->flags = c.flags;
	if (st == XTX_ST_OK && (opcode == XTX_OP_LOCK_SHARED || opcode == XTX_OP_LOCK_EXCL ||
				opcode == XTX_OP_OCC_LOCK))
		op->token = token;
	if (c.flags & XTX_LOCKF_RECLAIMED)
		xtx_count(XTX_CTR_LOCK_RECLAIM);
	if (c.flags & XTX_LOCKF_STALE)
		xtx_count(XTX_CTR_LOCK_STALE);
	if (st == XTX_ST_REJECTED) {
		xtx_count(XTX_CTR_LOCK_CONFLICT);
		if (c.flags & XTX_LOCKF_SHARING)
			xtx_count(XTX_CTR_LOCK_SHARING);
	}
	return st;
}

#endif /* XTX_BPF_LOCKS_H */
