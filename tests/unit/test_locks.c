// SPDX-License-Identifier: GPL-2.0-only
/* BPF_PROG_TEST_RUN tables for the lock manager: every transition of a lock slot. */
/* checks: 14 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include <xtx/hash.h>
#include "check.h"
#include "harness.h"
#include "log.h"
#include "stats_read.h"

/* A server whose lock table has one slot: every key shares it. */
static struct xtx_xdp *tiny;
static __u64 next_req = 1000;

/* transaction n of client 1, as a constant expression for the step tables */
#define T(n) ((1ull << XTX_TXN_SEQ_BITS) | (n))
#define ANY_FLAGS 0xffffffffu

struct step {
	__u64 txn;
	__u8 opcode;
	__u64 key;
	int token_of;		/* echo the token granted at this step (-1: none) */
	__u8 want_status;
	__u32 want_set;		/* flags that must be set in the reply */
	__u32 want_clear;	/* flags that must be clear */
};

struct step_result {
	__u64 token;
	__u8 status;
	__u32 flags;
};

static struct xtx_op lock_op_on(struct xtx_xdp *s, __u64 req, __u64 txn, __u8 opcode, __u64 key,
				__u64 token)
{
	struct run r;

	make_req(&r, xtx_txn_client(txn), req, 1, opcode);
	in_op(&r, 0)->txn = txn;
	in_op(&r, 0)->key = key;
	in_op(&r, 0)->token = token;
	in_op(&r, 0)->version = 0;	/* validates: the keys were never written */
	run_on(s, &r);
	CHECK(r.retval == XDP_TX, "lock op verdict %d", r.retval);
	return *out_op(&r, 0);
}

/* Runs steps in order on server s, checking each against its expectation. */
static void run_steps(struct xtx_xdp *s, const char *name, const struct step *steps, int n)
{
	struct step_result res[32] = {};
	int i;

	for (i = 0; i < n && i < 32; i++) {
		const struct step *st = &steps[i];
		__u64 token = st->token_of >= 0 ? res[st->token_of].token : 0;
		struct xtx_op op = lock_op_on(s, next_req++, st->txn, st->opcode, st->key, token);

		res[i].token = op.token;
		res[i].status = op.status;
		res[i].flags = op.flags;
		CHECK(op.status == st->want_status, "%s step %d: status %u, want %u", name, i,
		      op.status, st->want_status);
		CHECK((op.flags & st->want_set) == st->want_set, "%s step %d: flags %#x lack %#x",
		      name, i, op.flags, st->want_set);
		CHECK(!(op.flags & st->want_clear), "%s step %d: flags %#x have %#x", name, i,
		      op.flags, op.flags & st->want_clear);
	}
}

#define S(txn, key)		{ txn, XTX_OP_LOCK_SHARED, key, -1, XTX_ST_OK, 0, 0 }
#define X(txn, key)		{ txn, XTX_OP_LOCK_EXCL, key, -1, XTX_ST_OK, 0, 0 }
#define S_NO(txn, key)		{ txn, XTX_OP_LOCK_SHARED, key, -1, XTX_ST_REJECTED, 0, 0 }
#define X_NO(txn, key)		{ txn, XTX_OP_LOCK_EXCL, key, -1, XTX_ST_REJECTED, 0, 0 }
#define US(txn, key, at)	{ txn, XTX_OP_UNLOCK_SHARED, key, at, XTX_ST_OK, 0, XTX_LOCKF_STALE }
#define UX(txn, key, at)	{ txn, XTX_OP_UNLOCK_EXCL, key, at, XTX_ST_OK, 0, XTX_LOCKF_STALE }
#define UX_STALE(txn, key, at)	{ txn, XTX_OP_UNLOCK_EXCL, key, at, XTX_ST_OK, XTX_LOCKF_STALE, 0 }
#define US_STALE(txn, key, at)	{ txn, XTX_OP_UNLOCK_SHARED, key, at, XTX_ST_OK, XTX_LOCKF_STALE, 0 }

static void test_shared_then_more_sharers(void)
{
	static const struct step steps[] = {
		S(T(1), 10), S(T(2), 10), S(T(3), 10),
		X_NO(T(4), 10),
		US(T(1), 10, 0), US(T(2), 10, 1),
		X_NO(T(4), 10),		/* T3 still shares */
		US(T(3), 10, 2),
		X(T(4), 10),		/* free again */
		UX(T(4), 10, 8),
	};

	run_steps(skel, "sharers", steps, sizeof(steps) / sizeof(steps[0]));
}

static void test_exclusive_vs_shared(void)
{
	static const struct step steps[] = {
		X(T(1), 20),
		S_NO(T(2), 20), X_NO(T(2), 20),
		UX(T(1), 20, 0),
		S(T(2), 20),
		X_NO(T(1), 20),		/* now shared by T2 */
		US(T(2), 20, 4),
	};

	run_steps(skel, "excl-vs-shared", steps, sizeof(steps) / sizeof(steps[0]));
}

static void test_holder_reacquires(void)
{
	static const struct step steps[] = {
		X(T(1), 30),
		{ T(1), XTX_OP_LOCK_EXCL, 30, -1, XTX_ST_OK, XTX_LOCKF_EXCL | XTX_LOCKF_MINE, 0 },
		UX(T(1), 30, 0),
		X_NO(T(2), 30),		/* one of two holds remains */
		UX(T(1), 30, 1),
		X(T(2), 30),
		UX(T(2), 30, 5),
	};

	run_steps(skel, "re-acquire", steps, sizeof(steps) / sizeof(steps[0]));
}

/* SmallBank WriteCheck: shared SAV[a] and exclusive CHK[a] may share a slot. */
static void test_one_txn_shared_and_exclusive(void)
{
	static const struct step steps[] = {
		S(T(1), 1), X(T(1), 2),		/* upgrade as the sole sharer */
		S_NO(T(2), 3), X_NO(T(2), 3),
		UX(T(1), 2, 1),
		S(T(2), 3),			/* only T1's shared hold remains */
		US(T(1), 1, 0), US(T(2), 3, 5),
		X(T(3), 4), S(T(3), 5),		/* the reverse order */
		S_NO(T(4), 6),
		US(T(3), 5, 9), UX(T(3), 4, 8),
		X(T(4), 6), UX(T(4), 6, 13),
		S(T(5), 1), S(T(6), 2),
		X_NO(T(5), 3),			/* two sharers: no upgrade */
		US(T(5), 1, 15), US(T(6), 2, 16),
	};

	run_steps(tiny, "shared+excl", steps, sizeof(steps) / sizeof(steps[0]));
}

static void test_foreign_and_stale_unlock(void)
{
	static const struct step steps[] = {
		X(T(1), 40),
		UX_STALE(T(2), 40, 0),		/* T1's token, not T1 */
		X_NO(T(3), 40),
		UX(T(1), 40, 0),
		X(T(2), 40),
		UX_STALE(T(1), 40, 0),		/* late release with an old token */
		X_NO(T(3), 40),
		US_STALE(T(2), 40, 4),		/* wrong kind */
		X_NO(T(3), 40),
		UX(T(2), 40, 4),
		X(T(3), 40), UX(T(3), 40, 10),
	};

	run_steps(skel, "foreign/stale", steps, sizeof(steps) / sizeof(steps[0]));
}

/* A retransmitted lock or unlock must not count twice. */
static void test_duplicates(void)
{
	__u64 req = next_req;
	struct xtx_op a, b;

	next_req += 10;
	a = lock_op_on(skel, req, T(1), XTX_OP_LOCK_SHARED, 50, 0);
	b = lock_op_on(skel, req, T(1), XTX_OP_LOCK_SHARED, 50, 0);
	CHECK(a.status == XTX_ST_OK && b.status == XTX_ST_OK && a.token == b.token,
	      "duplicate lock answered differently");
	lock_op_on(skel, req + 1, T(1), XTX_OP_UNLOCK_SHARED, 50, a.token);
	b = lock_op_on(skel, req + 2, T(2), XTX_OP_LOCK_EXCL, 50, 0);
	CHECK(b.status == XTX_ST_OK, "a duplicated shared lock leaked a hold (status %u)",
	      b.status);
	lock_op_on(skel, req + 3, T(2), XTX_OP_UNLOCK_EXCL, 50, b.token);

	a = lock_op_on(skel, req + 4, T(1), XTX_OP_LOCK_SHARED, 51, 0);
	lock_op_on(skel, req + 5, T(2), XTX_OP_LOCK_SHARED, 51, 0);
	lock_op_on(skel, req + 6, T(1), XTX_OP_UNLOCK_SHARED, 51, a.token);
	b = lock_op_on(skel, req + 6, T(1), XTX_OP_UNLOCK_SHARED, 51, a.token);
	CHECK(b.status == XTX_ST_OK, "duplicate unlock answered %u", b.status);
	b = lock_op_on(skel, req + 7, T(3), XTX_OP_LOCK_EXCL, 51, 0);
	CHECK(b.status == XTX_ST_REJECTED, "a duplicated unlock freed T2's shared hold");
}

static void set_lease(struct xtx_xdp *s, __u64 ns)
{
	struct xtx_runtime rt = {};
	__u32 zero = 0;

	bpf_map_lookup_elem(bpf_map__fd(s->maps.xtx_runtime), &zero, &rt);
	rt.lock_lease_ns = ns;
	bpf_map_update_elem(bpf_map__fd(s->maps.xtx_runtime), &zero, &rt, 0);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

static struct xtx_lock_slot *slot_of(struct xtx_xdp *s, __u64 key, struct xtx_lock_slot *out,
				     __u32 *idx)
{
	*idx = xtx_lock_slot_of(xtx_hash(0, key), s->rodata->xtx_lock_slots);
	bpf_map_lookup_elem(bpf_map__fd(s->maps.xtx_locks), idx, out);
	return out;
}

static void test_lease_expiry(void)
{
	struct xtx_stats before, after;
	struct xtx_lock_slot slot;
	struct xtx_op a, b, c;
	__u32 idx;

	/* within a lease no pause outlasts; then past one of 1 ns, a millisecond later */
	set_lease(skel, 60ull * 1000 * 1000 * 1000);
	a = lock_op_on(skel, next_req++, T(1), XTX_OP_LOCK_EXCL, 60, 0);
	b = lock_op_on(skel, next_req++, T(2), XTX_OP_LOCK_EXCL, 60, 0);
	CHECK(a.status == XTX_ST_OK && b.status == XTX_ST_REJECTED, "within the lease");
	set_lease(skel, 1);
	sleep_ms(1);
	read_stats(&before);
	b = lock_op_on(skel, next_req++, T(2), XTX_OP_LOCK_EXCL, 60, 0);
	read_stats(&after);
	CHECK(b.status == XTX_ST_OK && (b.flags & XTX_LOCKF_RECLAIMED), "expired lock reclaimed");
	CHECK(b.token != a.token, "reclaim keeps the old token valid");
	CHECK(after.ctr[XTX_CTR_LOCK_RECLAIM] == before.ctr[XTX_CTR_LOCK_RECLAIM] + 1,
	      "reclaim counter");
	set_lease(skel, 60ull * 1000 * 1000 * 1000);
	c = lock_op_on(skel, next_req++, T(1), XTX_OP_UNLOCK_EXCL, 60, a.token);
	CHECK(c.flags & XTX_LOCKF_STALE, "old holder's late unlock not stale");
	c = lock_op_on(skel, next_req++, T(3), XTX_OP_LOCK_EXCL, 60, 0);
	CHECK(c.status == XTX_ST_REJECTED, "late unlock freed the new holder's lock");
	lock_op_on(skel, next_req++, T(2), XTX_OP_UNLOCK_EXCL, 60, b.token);

	/* a holder that has logged is committed: its locks are never reclaimed */
	a = lock_op_on(skel, next_req++, T(4), XTX_OP_LOCK_EXCL, 61, 0);
	slot_of(skel, 61, &slot, &idx);
	slot.flags |= XTX_LOCKF_LOGGED;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_locks), &idx, &slot, 0);
	set_lease(skel, 1);
	sleep_ms(1);
	b = lock_op_on(skel, next_req++, T(5), XTX_OP_LOCK_EXCL, 61, 0);
	CHECK(b.status == XTX_ST_REJECTED && (b.flags & XTX_LOCKF_LOGGED),
	      "a logged holder's lock was reclaimed");
	lock_op_on(skel, next_req++, T(4), XTX_OP_UNLOCK_EXCL, 61, a.token);
	set_lease(skel, 0);
}

static void test_sharing_conflicts(void)
{
	struct xtx_stats before, after;
	struct xtx_op a, b;
	struct xtx_xdp *save = skel;

	skel = tiny;	/* read_stats() reads the global server */
	read_stats(&before);
	a = lock_op_on(tiny, next_req++, T(1), XTX_OP_LOCK_EXCL, 70, 0);
	b = lock_op_on(tiny, next_req++, T(2), XTX_OP_LOCK_EXCL, 71, 0);
	CHECK(a.status == XTX_ST_OK && b.status == XTX_ST_REJECTED, "one slot, two keys");
	CHECK(b.flags & XTX_LOCKF_SHARING, "conflict through sharing not flagged");
	b = lock_op_on(tiny, next_req++, T(2), XTX_OP_LOCK_EXCL, 70, 0);
	CHECK(b.status == XTX_ST_REJECTED && !(b.flags & XTX_LOCKF_SHARING),
	      "a real conflict flagged as sharing");
	read_stats(&after);
	CHECK(after.ctr[XTX_CTR_LOCK_CONFLICT] == before.ctr[XTX_CTR_LOCK_CONFLICT] + 2,
	      "conflict counter");
	CHECK(after.ctr[XTX_CTR_LOCK_SHARING] == before.ctr[XTX_CTR_LOCK_SHARING] + 1,
	      "sharing counter");
	{	/* STATS reaches statuses past 5: group 2 holds 6..10, REJECTED last */
		struct run r;
		__u64 v[XTX_STATS_PER_OP];

		make_req(&r, 1, next_req++, 1, XTX_OP_STATS);
		in_op(&r, 0)->key = 2 * XTX_STATS_KEY_OP + XTX_OP_LOCK_EXCL;
		run_on(tiny, &r);
		memcpy(v, out_op(&r, 0)->value, sizeof(v));
		CHECK(out_op(&r, 0)->status == XTX_ST_OK &&
		      v[XTX_ST_REJECTED - 6] == after.op[XTX_OP_LOCK_EXCL][XTX_ST_REJECTED] &&
		      v[XTX_ST_REJECTED - 6] > 0, "STATS op of rejected lock_excl: %llu",
		      (unsigned long long)v[XTX_ST_REJECTED - 6]);
	}
	lock_op_on(tiny, next_req++, T(1), XTX_OP_UNLOCK_EXCL, 70, a.token);
	skel = save;
}

static void test_occ_lock_bits(void)
{
	static const struct step steps[] = {
		{ T(1), XTX_OP_OCC_LOCK, 80, -1, XTX_ST_OK, XTX_LOCKF_EXCL | XTX_LOCKF_MINE, 0 },
		{ T(2), XTX_OP_OCC_VALIDATE, 80, -1, XTX_ST_LOCKED, XTX_LOCKF_EXCL, XTX_LOCKF_MINE },
		{ T(1), XTX_OP_OCC_VALIDATE, 80, -1, XTX_ST_OK, XTX_LOCKF_EXCL | XTX_LOCKF_MINE, 0 },
		{ T(2), XTX_OP_OCC_LOCK, 80, -1, XTX_ST_REJECTED, XTX_LOCKF_EXCL, XTX_LOCKF_MINE },
		{ T(1), XTX_OP_OCC_UNLOCK, 80, 0, XTX_ST_OK, 0, XTX_LOCKF_STALE | XTX_LOCKF_EXCL },
		{ T(2), XTX_OP_OCC_VALIDATE, 80, -1, XTX_ST_OK, 0, XTX_LOCKF_EXCL | XTX_LOCKF_SHARED },
		{ T(2), XTX_OP_OCC_LOCK, 80, -1, XTX_ST_OK, XTX_LOCKF_MINE, 0 },
		{ T(2), XTX_OP_OCC_UNLOCK, 80, 6, XTX_ST_OK, 0, XTX_LOCKF_STALE },
	};

	run_steps(skel, "occ", steps, sizeof(steps) / sizeof(steps[0]));
}

static void test_bad_txn(void)
{
	struct xtx_op a;
	struct run r;

	make_req(&r, 1, next_req++, 2, XTX_OP_LOCK_EXCL);
	in_op(&r, 0)->txn = xtx_txn_make(1, 9);
	in_op(&r, 1)->txn = xtx_txn_make(2, 9);	/* another client's transaction */
	run(&r);
	CHECK(out_hdr(&r)->status == XTX_ST_BAD_TXN && out_op(&r, 1)->status == XTX_ST_BAD_TXN &&
	      out_op(&r, 0)->status == XTX_ST_NOT_EXECUTED, "foreign txn refused");
	in_op(&r, 1)->txn = 0;
	in_hdr(&r)->req_id = next_req++;
	run(&r);
	CHECK(out_hdr(&r)->status == XTX_ST_BAD_TXN, "txn 0 refused");
	/* nothing was locked: another transaction gets the key */
	a = lock_op_on(skel, next_req++, T(3), XTX_OP_LOCK_EXCL, 0, 0);
	CHECK(a.status == XTX_ST_OK, "refused packet took a lock");
	lock_op_on(skel, next_req++, T(3), XTX_OP_UNLOCK_EXCL, 0, a.token);
}

/* Eight lock ops in one packet, each answered on its own. */
static void test_many_ops_per_packet(void)
{
	struct run r;
	int i;

	make_req(&r, 1, next_req++, 8, XTX_OP_LOCK_EXCL);
	for (i = 0; i < 8; i++) {
		in_op(&r, i)->txn = T(100 + i % 2);
		in_op(&r, i)->key = 900 + i / 2;	/* pairs of txns race for a key */
	}
	run(&r);
	for (i = 0; i < 8; i++)
		CHECK(out_op(&r, i)->status == (i % 2 ? XTX_ST_REJECTED : XTX_ST_OK),
		      "op %d status %u", i, out_op(&r, i)->status);
	make_req(&r, 1, next_req++, 4, XTX_OP_UNLOCK_EXCL);
	for (i = 0; i < 4; i++) {
		in_op(&r, i)->txn = T(100);
		in_op(&r, i)->key = 900 + i;
		in_op(&r, i)->token = 0;
	}
	run(&r);
	for (i = 0; i < 4; i++)	/* token 0 never matches a grant */
		CHECK(out_op(&r, i)->flags & XTX_LOCKF_STALE, "release without token applied");
}

static void test_busy_slot_retries(void)
{
	struct xtx_lock_slot slot;
	struct xtx_op a;
	__u32 idx;

	slot_of(skel, 95, &slot, &idx);
	slot.spin = 1;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_locks), &idx, &slot, 0);
	a = lock_op_on(skel, next_req++, T(1), XTX_OP_LOCK_EXCL, 95, 0);
	CHECK(a.status == XTX_ST_RETRY, "busy slot answered %u", a.status);
	slot.spin = 0;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_locks), &idx, &slot, 0);
	a = lock_op_on(skel, next_req++, T(1), XTX_OP_LOCK_EXCL, 95, 0);
	CHECK(a.status == XTX_ST_OK, "after the spin bit cleared: %u", a.status);
	lock_op_on(skel, next_req++, T(1), XTX_OP_UNLOCK_EXCL, 95, a.token);
}

/*
 * A release the server makes itself (here a commit's, after its install)
 * waits for a busy slot, since it must not fail where a request may, but
 * for a bounded time, not a count of looks at the word: a word stuck odd
 * (a holder that never lets go) answers RETRY after about 200 us, counted,
 * and the hold stays until the word is free again.
 */
static void test_release_waits_bounded(void)
{
	struct xtx_stats before, after;
	struct xtx_lock_slot slot;
	struct timespec t0, t1;
	struct xtx_op a, u;
	__u64 us;
	__u32 idx;

	a = lock_op_on(skel, next_req++, T(1), XTX_OP_LOCK_EXCL, 97, 0);
	CHECK(a.status == XTX_ST_OK, "the grant: %u", a.status);
	slot_of(skel, 97, &slot, &idx);
	slot.spin |= 1;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_locks), &idx, &slot, 0);
	read_stats(&before);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	u = lock_op_on(skel, next_req++, T(1), XTX_OP_COMMIT_PRIMARY, 97, a.token);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	read_stats(&after);
	us = (__u64)((t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec)) / 1000;
	CHECK(u.status == XTX_ST_RETRY && after.ctr[XTX_CTR_LOCK_BUSY] > before.ctr[XTX_CTR_LOCK_BUSY],
	      "a commit's release on a slot stuck busy: %u (want RETRY, counted)", u.status);
	CHECK(us >= 200, "it waited %llu us, not the 200 the bound says", (unsigned long long)us);
	slot_of(skel, 97, &slot, &idx);
	CHECK(slot.excl == 1 && slot.owner == T(1), "the hold is still there");
	slot.spin &= ~1u;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_locks), &idx, &slot, 0);
	u = lock_op_on(skel, next_req++, T(1), XTX_OP_UNLOCK_EXCL, 97, a.token);
	CHECK(u.status == XTX_ST_OK, "released once the word is free: %u", u.status);
}

/* The slot's spin word now, a sequence count (include/xtx/maps.h). */
static __u32 slot_seq(__u64 key)
{
	struct xtx_lock_slot slot;
	__u32 idx;

	slot_of(skel, key, &slot, &idx);
	return slot.spin;
}

/*
 * OCC_VALIDATE reads the slot without taking it: the spin word does not
 * move.  It still never answers from a slot mid-update, and a hold past
 * its lease is still taken back (a write: then it takes the slot).
 */
static void test_validate_only_looks(void)
{
	struct xtx_lock_slot slot;
	struct xtx_op a, v;
	__u32 idx, seq;

	set_lease(skel, 60ull * 1000 * 1000 * 1000);
	a = lock_op_on(skel, next_req++, T(2), XTX_OP_OCC_LOCK, 96, 0);
	CHECK(a.status == XTX_ST_OK, "occ-lock by T2: %u", a.status);
	seq = slot_seq(96);
	CHECK(!(seq & 1), "a free slot's spin word is odd: %u", seq);

	v = lock_op_on(skel, next_req++, T(1), XTX_OP_OCC_VALIDATE, 96, 0);
	CHECK(v.status == XTX_ST_LOCKED && (v.flags & XTX_LOCKF_EXCL) &&
	      !(v.flags & XTX_LOCKF_MINE), "T1 validates T2's key: %u flags %#x", v.status, v.flags);
	v = lock_op_on(skel, next_req++, T(2), XTX_OP_OCC_VALIDATE, 96, 0);
	CHECK(v.status == XTX_ST_OK && (v.flags & XTX_LOCKF_MINE), "T2 validates its own: %u",
	      v.status);
	CHECK(slot_seq(96) == seq, "two validations took the slot: spin %u -> %u", seq,
	      slot_seq(96));

	/* mid-update (odd): busy, as for any lock op */
	slot_of(skel, 96, &slot, &idx);
	slot.spin = seq + 1;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_locks), &idx, &slot, 0);
	v = lock_op_on(skel, next_req++, T(1), XTX_OP_OCC_VALIDATE, 96, 0);
	CHECK(v.status == XTX_ST_RETRY, "validated a slot mid-update: %u", v.status);
	slot.spin = seq;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_locks), &idx, &slot, 0);

	/* past the lease the hold is taken back, by taking the slot */
	set_lease(skel, 1);
	sleep_ms(1);
	v = lock_op_on(skel, next_req++, T(1), XTX_OP_OCC_VALIDATE, 96, 0);
	CHECK(v.status == XTX_ST_OK && (v.flags & XTX_LOCKF_RECLAIMED),
	      "an expired hold outlived a validation: %u flags %#x", v.status, v.flags);
	CHECK(slot_seq(96) == seq + 2, "the reclaim did not take the slot: spin %u -> %u", seq,
	      slot_seq(96));
	set_lease(skel, 0);
}

int main(void)
{
	xtx_log_libbpf();
	skel = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
	tiny = load_server(TEST_MAX_CLIENTS, 1, false);
	if (!skel || !tiny) {
		printf("FAIL: load_server (%s)\n", strerror(errno));
		return 1;
	}
	set_lease(skel, 0);
	set_lease(tiny, 0);
	RUN_CASE(test_shared_then_more_sharers);
	RUN_CASE(test_exclusive_vs_shared);
	RUN_CASE(test_holder_reacquires);
	RUN_CASE(test_one_txn_shared_and_exclusive);
	RUN_CASE(test_foreign_and_stale_unlock);
	RUN_CASE(test_duplicates);
	RUN_CASE(test_release_waits_bounded);
	RUN_CASE(test_lease_expiry);
	RUN_CASE(test_sharing_conflicts);
	RUN_CASE(test_occ_lock_bits);
	RUN_CASE(test_bad_txn);
	RUN_CASE(test_many_ops_per_packet);
	RUN_CASE(test_busy_slot_retries);
	RUN_CASE(test_validate_only_looks);
	xtx_xdp__destroy(tiny);
	xtx_xdp__destroy(skel);
	printf("# test_locks: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
