// SPDX-License-Identifier: GPL-2.0-only
/* Per-key no-wait locks mirroring bpf/lib/locks.h: grants, releases, tokens, leases. */
#include <stdbool.h>
#include <stdlib.h>
#include "locks.h"
#include "stats.h"

struct lock_ctx {
	uint64_t txn;
	uint64_t now;
	uint64_t lease_ns;	/* 0: leases off */
	uint32_t flags;		/* reply flags gathered on the way */
};

static struct udpd_lock **chain_of(struct udpd_stripe *s, uint64_t hash)
{
	return &s->locks[(hash >> 32) & (UDPD_LOCK_BUCKETS - 1)];
}

/* The link pointing at (table, key)'s lock, or at the chain's NULL end. */
static struct udpd_lock **find(struct udpd_stripe *s, uint64_t hash, uint8_t table, uint64_t key)
{
	struct udpd_lock **p = chain_of(s, hash);

	while (*p && ((*p)->key != key || (*p)->table != table))
		p = &(*p)->next;
	return p;
}

static bool held(const struct udpd_lock *l)
{
	return l->shared || l->excl;
}

/* A lock nobody holds is dropped: its gen dies with it, so old tokens stay stale. */
static void drop_if_free(struct udpd_lock **p)
{
	struct udpd_lock *l = *p;

	if (l && !held(l)) {
		*p = l->next;
		free(l);
	}
}

/* A free lock becomes held: a new epoch, so earlier tokens never match. */
static void new_epoch(struct udpd_stripe *s, struct udpd_lock *l)
{
	l->gen = ++s->gen;
	l->flags = 0;
}

/* Past its lease a holder's lock is taken back, unless it has logged (design §5). */
static void reclaim_expired(struct udpd_stripe *s, struct udpd_lock *l, struct lock_ctx *c)
{
	/*
	 * A thread's clock is read once per packet, so another thread may
	 * have granted since: a grant "in the future" is not expired.
	 */
	if (!held(l) || !c->lease_ns || (l->flags & XTX_LOCKF_LOGGED) ||
	    c->now <= l->granted_ns || c->now - l->granted_ns <= c->lease_ns)
		return;
	l->shared = 0;
	l->excl = 0;
	l->owner = 0;
	new_epoch(s, l);
	c->flags |= XTX_LOCKF_RECLAIMED;
}

/* Index of one of txn's shared holds, or -1. */
static int sharer_of(const struct udpd_lock *l, uint64_t txn)
{
	int i;

	for (i = 0; i < l->shared; i++)
		if (l->sharer[i] == txn)
			return i;
	return -1;
}

static bool sharers_all(const struct udpd_lock *l, uint64_t txn)
{
	int i;

	for (i = 0; i < l->shared; i++)
		if (l->sharer[i] != txn)
			return false;
	return true;
}

static uint32_t state_of(const struct udpd_lock *l, uint64_t txn)
{
	bool mine;

	if (!l)
		return 0;
	mine = l->excl ? l->owner == txn : sharer_of(l, txn) >= 0;
	return (l->excl ? XTX_LOCKF_EXCL : 0) | (l->shared ? XTX_LOCKF_SHARED : 0) |
	       (mine ? XTX_LOCKF_MINE : 0) | (l->flags & XTX_LOCKF_LOGGED);
}

static uint8_t grant(struct udpd_lock *l, struct lock_ctx *c)
{
	/* the lease runs from the latest grant, whichever thread's clock is older */
	if (l->granted_ns < c->now)
		l->granted_ns = c->now;
	return XTX_ST_OK;
}

static uint8_t acquire_excl(struct udpd_stripe *s, struct udpd_lock *l, struct lock_ctx *c)
{
	bool first = !held(l);

	/* another's exclusive hold, or a shared hold that is not txn's (no upgrade past it) */
	if ((l->excl && l->owner != c->txn) || !sharers_all(l, c->txn))
		return XTX_ST_REJECTED;
	if (l->excl == 0xffff)
		return XTX_ST_RETRY;
	if (first)
		new_epoch(s, l);
	l->owner = c->txn;
	l->excl++;
	return grant(l, c);
}

static uint8_t acquire_shared(struct udpd_stripe *s, struct udpd_lock *l, struct lock_ctx *c)
{
	if (l->excl && l->owner != c->txn)
		return XTX_ST_REJECTED;
	/* as many shared holds as an XDP lock slot proves: the same answers as XDP's */
	if (l->shared >= XTX_LOCK_SHARERS)
		return XTX_ST_REJECTED;
	if (!held(l))
		new_epoch(s, l);
	l->sharer[l->shared++] = c->txn;
	return grant(l, c);
}

/* Frees one of txn's shared holds: another's is never touched. */
static void release_shared(struct udpd_lock *l, struct lock_ctx *c, uint64_t token)
{
	int i = l && token == l->gen ? sharer_of(l, c->txn) : -1;

	if (i < 0) {
		c->flags |= XTX_LOCKF_STALE;
		return;
	}
	l->shared--;
	l->sharer[i] = l->sharer[l->shared];
	l->sharer[l->shared] = 0;
}

static void release_excl(struct udpd_lock *l, struct lock_ctx *c, uint64_t token)
{
	if (!l || token != l->gen || !l->excl || l->owner != c->txn) {
		c->flags |= XTX_LOCKF_STALE;
		return;
	}
	if (!--l->excl)
		l->owner = 0;
}

static bool is_acquire(uint8_t opcode)
{
	return opcode == XTX_OP_LOCK_SHARED || opcode == XTX_OP_LOCK_EXCL ||
	       opcode == XTX_OP_OCC_LOCK;
}

uint8_t udpd_lock_op(struct udpd_stripe *s, uint64_t hash, struct xtx_op *op, uint64_t now,
		     uint64_t lease_ns, struct xtx_stats *stats)
{
	struct lock_ctx c = { .txn = op->txn, .now = now, .lease_ns = lease_ns };
	struct udpd_lock **p = find(s, hash, op->table, op->key), *l = *p;
	uint8_t opcode = op->opcode, st = XTX_ST_OK;
	uint64_t token = 0;

	if (!l && is_acquire(opcode)) {
		l = calloc(1, sizeof(*l));
		if (!l)
			return XTX_ST_RETRY;	/* no memory: nothing changed, try again */
		l->key = op->key;
		l->table = op->table;
		*p = l;
	}
	if (l)
		reclaim_expired(s, l, &c);
	switch (opcode) {
	case XTX_OP_LOCK_SHARED:
		st = acquire_shared(s, l, &c);
		break;
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
		st = acquire_excl(s, l, &c);
		break;
	case XTX_OP_UNLOCK_SHARED:
		release_shared(l, &c, op->token);
		break;
	case XTX_OP_UNLOCK_EXCL:
	case XTX_OP_OCC_UNLOCK:
		release_excl(l, &c, op->token);
		break;
	default:	/* XTX_OP_OCC_VALIDATE: state only */
		break;
	}
	c.flags |= state_of(l, c.txn);
	if (l)
		token = l->gen;
	drop_if_free(p);

	op->flags = c.flags;
	if (st == XTX_ST_OK && is_acquire(opcode))
		op->token = token;
	if (c.flags & XTX_LOCKF_RECLAIMED)
		udpd_count(stats, XTX_CTR_LOCK_RECLAIM);
	if (c.flags & XTX_LOCKF_STALE)
		udpd_count(stats, XTX_CTR_LOCK_STALE);
	if (st == XTX_ST_REJECTED)
		udpd_count(stats, XTX_CTR_LOCK_CONFLICT);
	return st;
}

uint32_t udpd_lock_state(struct udpd_stripe *s, uint64_t hash, uint8_t table, uint64_t key,
			 uint64_t txn)
{
	return state_of(*find(s, hash, table, key), txn);
}

void udpd_lock_release_excl(struct udpd_stripe *s, uint64_t hash, uint8_t table, uint64_t key,
			    uint64_t txn, uint64_t token)
{
	struct lock_ctx c = { .txn = txn };
	struct udpd_lock **p = find(s, hash, table, key);

	release_excl(*p, &c, token);
	drop_if_free(p);
}

uint8_t udpd_lock_claim_grant(struct udpd_stripe *s, uint64_t hash, uint8_t table, uint64_t key,
			      uint64_t txn, uint32_t grant)
{
	struct udpd_lock *l = *find(s, hash, table, key);

	if (!l || !l->excl || l->owner != txn || (uint32_t)l->gen != grant)
		return XTX_ST_NOT_HELD;
	l->flags |= XTX_LOCKF_LOGGED;
	return XTX_ST_OK;
}

void udpd_lock_mark_logged(struct udpd_stripe *s, uint64_t hash, uint8_t table, uint64_t key,
			   uint64_t txn)
{
	struct udpd_lock *l = *find(s, hash, table, key);

	if (l && l->excl && l->owner == txn)
		l->flags |= XTX_LOCKF_LOGGED;
}

uint64_t udpd_lock_print(struct udpd_stripe *s, FILE *f)
{
	const struct udpd_lock *l;
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < UDPD_LOCK_BUCKETS; i++) {
		for (l = s->locks[i]; l; l = l->next, n++)
			fprintf(f, "table=%u key=%llu shared=%u excl=%u owner=0x%llx token=%llu%s\n",
				l->table, (unsigned long long)l->key, l->shared, l->excl,
				(unsigned long long)l->owner, (unsigned long long)l->gen,
				(l->flags & XTX_LOCKF_LOGGED) ? " logged" : "");
	}
	return n;
}

void udpd_lock_free_all(struct udpd_stripe *s)
{
	struct udpd_lock *l, *next;
	unsigned int i;

	for (i = 0; i < UDPD_LOCK_BUCKETS; i++) {
		for (l = s->locks[i]; l; l = next) {
			next = l->next;
			free(l);
		}
		s->locks[i] = NULL;
	}
}
