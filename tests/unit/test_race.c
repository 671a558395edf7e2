// SPDX-License-Identifier: GPL-2.0-only
/* Races of the XDP program on two CPUs over one lock slot, bucket, dedupe record or table. */
/* checks: 13 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include <xtx/hash.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include <xtx/hades.h>
#include "check.h"
#include "harness.h"
#include "log.h"
#include "race.h"

#define MS (1000ull * 1000)
#define LOCK_LEASE (500 * MS)
#define KV_LEASE (50 * MS)
/*
 * The leases of the races: far past any hold there, even one whose thread
 * the machine stalls for seconds, so only a stamp misread can expire.
 */
#define RACE_LEASE (60000 * MS)
/* Far past twice the longer lease: a family word aged this much is idle (bpf/lib/family.h). */
#define LONG_AGO (10000 * MS)
/* bpf/lib/family.h: a family word's low 2 bits are the family, the rest its last use in ns. */
#define FAM_MASK 3ull

/*
 * Side 0 of a race (race.h) runs RACE_ROUNDS packets and stops side 1;
 * neither goes past RACE_MAX_NS (a loaded machine is slower, not wrong:
 * the report says how far it got).
 */
#define RACE_ROUNDS 100000
#define RACE_MAX_NS (4000 * MS)
/* Lockstep rounds need both threads running at once: more time on a loaded machine. */
#define LOCKSTEP_MAX_NS (20000 * MS)
/*
 * A packet that changes state reads the clock when it claims its dedupe
 * record, at its start.  Delay ops before the racing op keep it busy
 * meanwhile (a counter add makes the packet one that changes state, then
 * STATS ops, each summing counters over every CPU), so the other CPU
 * stamps state later than this packet's `now` before the racing op runs.
 */
#define DELAY_OPS (XTX_MAX_OPS - 1)
#define SCRATCH_CTR 63

#define TXN(c, n) xtx_txn_make((c), (n))

static __u64 next_req = 1000;

/* ---- requests ---- */

struct opreq {
	__u8 opcode, table;
	__u64 key, txn, version, token;
	__u32 flags;
	__u8 fill;		/* 8 value bytes of it; 0: no value */
};

static void add_op(void *payload, const struct opreq *o)
{
	struct xtx_op *op = xtx_msg_add(payload, o->opcode, o->table, o->key);

	op->txn = o->txn;
	op->version = o->version;
	op->token = o->token;
	op->flags = o->flags;
	if (o->fill) {
		op->vlen = 8;
		memset(op->value, o->fill, 8);
	}
}

/* A request from client: `delay` delay ops, then o (op index delay). */
static void build(struct run *r, __u32 client, __u64 req, int delay, const struct opreq *o)
{
	__u8 payload[PKT_MAX] __attribute__((aligned(8)));
	struct opreq add = { .opcode = XTX_OP_COUNTER_ADD, .key = SCRATCH_CTR };
	struct opreq stats = { .opcode = XTX_OP_STATS };
	int i;

	xtx_msg_init(payload, client, req);
	for (i = 0; i < delay; i++)
		add_op(payload, i ? &stats : &add);
	add_op(payload, o);
	r->in_len = pkt_build(r->in, &pkt_default_addrs, payload,
			      xtx_msg_len(((struct xtx_hdr *)payload)->nops));
}

/* A request from client: n copies of o. */
static void build_copies(struct run *r, __u32 client, __u64 req, int n, const struct opreq *o)
{
	__u8 payload[PKT_MAX] __attribute__((aligned(8)));
	int i;

	xtx_msg_init(payload, client, req);
	for (i = 0; i < n; i++)
		add_op(payload, o);
	r->in_len = pkt_build(r->in, &pkt_default_addrs, payload, xtx_msg_len(n));
}

/* o alone, from client, answered by XDP: the answer. */
static struct xtx_op send1(__u32 client, const struct opreq *o)
{
	struct run r;

	build(&r, client, next_req++, 0, o);
	run(&r);
	CHECK(r.retval == XDP_TX, "verdict %d for op %u", r.retval, o->opcode);
	return *out_op(&r, 0);
}

/* ---- server state ---- */

/*
 * A race, or a rare-path round trip, gets a server of its own: no lock,
 * counter or family binding leaks into it from another case.  The
 * one-CPU cases share one, each on tables and keys of its own (lock slots
 * and buckets apart too), as the other suites do.
 */
static struct xtx_xdp *shared;

static bool server_up(struct xtx_xdp *s)
{
	skel = s;
	CHECK(s, "load the server: %s", strerror(errno));
	return s;
}

static void server_down(void)
{
	if (skel != shared)
		xtx_xdp__destroy(skel);
	skel = NULL;
}

static __u64 ctr(__u32 c)
{
	struct xtx_stats st;

	read_stats(&st);
	return st.ctr[c];
}

static __u32 lock_idx(__u8 table, __u64 key)
{
	return xtx_lock_slot_of(xtx_hash(table, key), skel->rodata->xtx_lock_slots);
}

static struct xtx_lock_slot lock_get(__u8 table, __u64 key)
{
	struct xtx_lock_slot s = {};
	__u32 idx = lock_idx(table, key);

	bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_locks), &idx, &s);
	return s;
}

/* Rewrites the last grant of key's lock slot to `ago` ns back: the lease as if waited. */
static void lock_grant_age(__u8 table, __u64 key, __u64 ago)
{
	struct xtx_lock_slot s = lock_get(table, key);
	__u32 idx = lock_idx(table, key);

	s.granted_ns = clock_mono_ns() - ago;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_locks), &idx, &s, 0);
}

static __u32 bucket_idx(__u8 table, __u64 key)
{
	return xtx_bucket_of(xtx_hash(table, key), skel->rodata->xtx_kv_buckets);
}

static void bucket_put(__u32 idx, const struct xtx_kv_bucket *b)
{
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_kv), &idx, b, 0);
}

/* Another key of key's bucket. */
static __u64 bucket_mate(__u8 table, __u64 key)
{
	__u64 k = key + 1;

	while (bucket_idx(table, k) != bucket_idx(table, key))
		k++;
	return k;
}

/* Makes table's family last used `ago` ns back: its idle time as if waited. */
static void family_age(__u32 table, __u64 ago)
{
	int fd = bpf_map__fd(skel->maps.xtx_table_family);
	__u64 w = 0;

	bpf_map_lookup_elem(fd, &table, &w);
	w = ((clock_mono_ns() - ago) & ~FAM_MASK) | (w & FAM_MASK);
	bpf_map_update_elem(fd, &table, &w, 0);
}

static __u32 dedupe_idx(__u32 client, __u64 req)
{
	return client * XTX_DEDUPE_WINDOW + (__u32)(req % XTX_DEDUPE_WINDOW);
}

/* Makes the request holding a dedupe slot claimed `ago` ns back: the KV lease as if waited. */
static void dedupe_age(__u32 idx, __u64 ago)
{
	int fd = bpf_map__fd(skel->maps.xtx_dedupe);
	struct xtx_dedupe_slot d;

	if (bpf_map_lookup_elem(fd, &idx, &d))
		return;
	d.claimed_ns = clock_mono_ns() - ago;
	bpf_map_update_elem(fd, &idx, &d, 0);
}

static __u64 log_token(__u64 grant)
{
	static const __u16 primary_only[1] = { 0 };

	return xtx_log_replicas_pack(primary_only, 1) | grant << 32;
}

/* A server whose HADES table has `slots` slots and whose active slots live `lease_ns`. */
static struct xtx_xdp *load_hades_server(__u32 slots, __u64 lease_ns)
{
	struct xtx_xdp *s = open_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);

	if (!s)
		return NULL;
	s->rodata->xtx_hades_slots = slots;
	s->rodata->xtx_hades_lease_ns = lease_ns;
	if (bpf_map__set_max_entries(s->maps.xtx_hades, slots) ||
	    bpf_map__set_max_entries(s->maps.xtx_hades_big, slots * XTX_HADES_STAGE_MAX) ||
	    xtx_xdp__load(s)) {
		xtx_xdp__destroy(s);
		return NULL;
	}
	return s;
}

/*
 * Releases me's hold o names, sending the op again, in a new request, for
 * as long as the slot's spin bit is busy (RETRY: the release did not run).
 * Counts a release that found its hold gone (STALE) as lost.
 */
static void race_release(struct racer *me, struct opreq *o)
{
	int i;

	for (i = 0; i < 1000; i++) {
		build(&me->u, me->client, me->req++, 0, o);
		race_send(me, &me->u);
		if (me->u.retval != XDP_TX || out_op(&me->u, 0)->status != XTX_ST_RETRY)
			break;
	}
	if (me->u.retval != XDP_TX || out_op(&me->u, 0)->status != XTX_ST_OK)
		me->other++;
	me->lost += !!(out_op(&me->u, 0)->flags & XTX_LOCKF_STALE);
}

/* ---- finding 1: a stamp another CPU wrote after our `now` must not read as expired ---- */

#define F1_KEY 1
#define F1_TABLE 1

/*
 * Two transactions per round take and drop a shared lock on one key:
 * CPU 0's grant comes after its delay ops, CPU 1's at once, so CPU 1's
 * grants are stamped after CPU 0 read its clock.  No hold held for
 * microseconds may be reclaimed.
 */
static void lock_reclaim_body(struct racer *me)
{
	int delay = me->side ? 0 : DELAY_OPS;

	while (race_more(me)) {
		struct opreq o = { .opcode = XTX_OP_LOCK_SHARED, .key = F1_KEY,
				   .txn = TXN(me->client, ++me->txn), .flags = XTX_OPF_NO_VALUE };
		struct xtx_op a;

		build(&me->r, me->client, me->req++, delay, &o);
		race_send(me, &me->r);
		a = *out_op(&me->r, delay);
		if (me->r.retval != XDP_TX || a.status != XTX_ST_OK) {
			/* a busy spin bit answers RETRY and took nothing */
			if (me->r.retval == XDP_TX && a.status == XTX_ST_RETRY)
				me->busy++;
			else
				me->other++;
			continue;
		}
		me->hit += !!(a.flags & XTX_LOCKF_RECLAIMED);
		o.opcode = XTX_OP_UNLOCK_SHARED;
		o.token = a.token;
		o.flags = 0;
		race_release(me, &o);
	}
}

static void test_f1_lock_lease_stamp_from_other_cpu(void)
{
	struct race rc = {};
	struct xtx_lock_slot s;

	if (!server_up(load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false)))
		return;
	set_leases(skel, RACE_LEASE, 0);
	if (race_run(&rc, lock_reclaim_body, RACE_ROUNDS, RACE_MAX_NS, 1, 2)) {
		race_report("shared grants of one key", &rc);
		s = lock_get(0, F1_KEY);
		CHECK(!ctr(XTX_CTR_LOCK_RECLAIM) && !rc.s[0].hit && !rc.s[1].hit,
		      "fresh holds reclaimed: %llu reclaims (%llu+%llu grants flagged RECLAIMED)",
		      (unsigned long long)ctr(XTX_CTR_LOCK_RECLAIM),
		      (unsigned long long)rc.s[0].hit, (unsigned long long)rc.s[1].hit);
		CHECK(!rc.s[0].lost && !rc.s[1].lost,
		      "%llu+%llu releases found their hold gone (STALE)",
		      (unsigned long long)rc.s[0].lost, (unsigned long long)rc.s[1].lost);
		CHECK(!rc.s[0].other && !rc.s[1].other, "%llu+%llu answers neither OK nor RETRY",
		      (unsigned long long)rc.s[0].other, (unsigned long long)rc.s[1].other);
		CHECK(!s.shared && !s.excl, "slot left held: shared %u excl %u", s.shared, s.excl);
	}
	server_down();
}

/*
 * CPU 1 keeps a table busy with 2PL reads (each refreshes the family's
 * last use, at most once a millisecond); CPU 0 asks for HADES on it after
 * its delay ops.  The table was used microseconds ago: HADES stays MIXED.
 */
static void family_body(struct racer *me)
{
	struct opreq o = { .table = F1_TABLE, .txn = TXN(me->client, 1) };
	__u8 st;

	while (race_more(me)) {
		if (me->side == 0) {
			o.opcode = XTX_OP_HREAD;
			o.key = 7;
			o.txn = TXN(me->client, ++me->txn);
			o.flags = XTX_HOPF_BEGIN;
			build(&me->r, me->client, me->req++, DELAY_OPS, &o);
			race_send(me, &me->r);
			st = out_op(&me->r, DELAY_OPS)->status;
			if (me->r.retval != XDP_TX) {
				me->other++;
			} else if (st != XTX_ST_MIXED) {
				me->hit++;	/* the table now serves HADES: nothing more to learn */
				race_stop(me);
			}
		} else {
			o.opcode = XTX_OP_READ;
			o.key = 8;
			build(&me->r, me->client, me->req++, 0, &o);
			race_send(me, &me->r);
			st = out_op(&me->r, 0)->status;
			if (me->r.retval == XDP_TX && st == XTX_ST_MIXED)
				me->hit++;
			else if (me->r.retval != XDP_TX || st != XTX_ST_NOT_FOUND)
				me->other++;
		}
	}
}

static void test_f1_family_switch_stamp_from_other_cpu(void)
{
	struct opreq rd = { .opcode = XTX_OP_READ, .table = F1_TABLE, .key = 8, .txn = TXN(3, 1) };
	struct race rc = {};

	if (!server_up(load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false)))
		return;
	set_leases(skel, RACE_LEASE, 0);	/* a table switches after twice this idle */
	CHECK(send1(3, &rd).status == XTX_ST_NOT_FOUND, "binding the table to 2PL");
	if (race_run(&rc, family_body, RACE_ROUNDS, RACE_MAX_NS, 1, 2)) {
		race_report("HADES asks for a busy 2PL table", &rc);
		CHECK(!rc.s[0].hit, "HADES admitted onto a table 2PL used microseconds before "
		      "(after %llu tries)", (unsigned long long)rc.s[0].sent);
		CHECK(!rc.s[1].hit, "%llu 2PL reads of the table answered MIXED",
		      (unsigned long long)rc.s[1].hit);
		CHECK(!rc.s[0].other && !rc.s[1].other, "%llu+%llu unexpected answers",
		      (unsigned long long)rc.s[0].other, (unsigned long long)rc.s[1].other);
	}
	server_down();
}

struct bucket_race {
	volatile struct xtx_kv_bucket *b;	/* the bucket, mapped */
	struct xtx_defer_record *ring;		/* the defer ring, mapped */
	__u64 k1, k2;
};

/*
 * CPU 1 sends a read of a key only the store may hold: it goes to xtxd
 * holding the bucket with a rare-path token (its clock), which CPU 1 then
 * releases as TC would.  CPU 0 reads a cached key of that bucket after its
 * delay ops: a hold stamped after its `now` is fresh, answered RETRY.
 */
static void bucket_body(struct racer *me)
{
	struct bucket_race *br = me->race->arg;
	struct opreq o = { .opcode = XTX_OP_GET };
	__u64 token;

	while (race_more(me)) {
		if (me->side == 0) {
			o.key = br->k1;
			build(&me->r, me->client, me->req++, DELAY_OPS, &o);
			race_send(me, &me->r);
			if (me->r.retval != XDP_TX)
				me->other++;
			else if (out_op(&me->r, DELAY_OPS)->status == XTX_ST_RETRY)
				me->busy++;
			else if (out_op(&me->r, DELAY_OPS)->status != XTX_ST_OK)
				me->other++;
			continue;
		}
		o.key = br->k2;
		build(&me->r, me->client, me->req++, 0, &o);
		race_send(me, &me->r);
		if (me->r.retval == XDP_PASS && out_hdr(&me->r)->reserved) {
			me->busy++;
			token = br->ring[out_hdr(&me->r)->reserved - 1].t.e[0].token;
			/* TC's release: only while the bucket still holds our token */
			if (__sync_val_compare_and_swap(&br->b->lock, token, 0) != token)
				me->lost++;
		} else if (me->r.retval != XDP_TX || out_op(&me->r, 0)->status != XTX_ST_RETRY) {
			me->other++;
		}
	}
}

static void test_f1_bucket_lease_stamp_from_other_cpu(void)
{
	struct bucket_race br = { .k1 = 1 };
	struct xtx_kv_bucket b = { .bloom = ~0ull };
	size_t kv_len = 0, ring_len = 0;
	struct xtx_kv_bucket *kv;
	struct race rc = { .arg = &br };
	__u32 bidx;

	if (!server_up(load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false)))
		return;
	set_leases(skel, 0, RACE_LEASE);
	br.k2 = bucket_mate(0, br.k1);
	bidx = bucket_idx(0, br.k1);
	/* k1 cached clean; every other key of the bucket may be in the store */
	b.key[0] = br.k1;
	b.version[0] = 1;
	b.vlen[0] = 8;
	b.flags[0] = XTX_KVF_VALID | XTX_KVF_IN_USER;
	bucket_put(bidx, &b);
	kv = map_mmap(skel->maps.xtx_kv, &kv_len);
	br.ring = map_mmap(skel->maps.xtx_defer_ring, &ring_len);
	CHECK(kv && br.ring, "mmap the bucket and defer maps: %s", strerror(errno));
	if (kv && br.ring) {
		br.b = &kv[bidx];
		if (race_run(&rc, bucket_body, RACE_ROUNDS, RACE_MAX_NS, 1, 2)) {
			race_report("a cached read against a rare-path hold", &rc);
			printf("#   CPU1 held the bucket %llu times; CPU0 found it held %llu times\n",
			       (unsigned long long)rc.s[1].busy, (unsigned long long)rc.s[0].busy);
			CHECK(!ctr(XTX_CTR_KV_TAKEOVER) && !rc.s[1].lost,
			      "fresh rare-path holds taken over: %llu takeovers, %llu holds lost",
			      (unsigned long long)ctr(XTX_CTR_KV_TAKEOVER),
			      (unsigned long long)rc.s[1].lost);
			CHECK(rc.s[1].busy && rc.s[0].busy, "the holds and the reads never met");
			CHECK(!rc.s[0].other && !rc.s[1].other, "%llu+%llu unexpected answers",
			      (unsigned long long)rc.s[0].other, (unsigned long long)rc.s[1].other);
		}
	}
	if (kv)
		munmap(kv, kv_len);
	if (br.ring)
		munmap(br.ring, ring_len);
	server_down();
}

#define F1_HADES_SLOTS XTX_HADES_PROBES

/*
 * A full HADES table: CPU 1's transaction touches its slot continuously,
 * CPU 0 begins new transactions after its delay ops and finds no slot to
 * take.  A slot touched after CPU 0 read its clock is not past its lease.
 */
static void hades_body(struct racer *me)
{
	struct opreq o = { .opcode = XTX_OP_HREAD };
	__u8 st;

	while (race_more(me)) {
		if (me->side == 0) {
			o.key = 300;
			o.txn = TXN(me->client, ++me->txn);
			o.flags = XTX_HOPF_BEGIN;
			build(&me->r, me->client, me->req++, DELAY_OPS, &o);
			race_send(me, &me->r);
			st = out_op(&me->r, DELAY_OPS)->status;
			if (me->r.retval != XDP_TX) {
				me->other++;
			} else if (st == XTX_ST_RETRY) {
				me->busy++;
			} else {
				me->hit++;	/* took the other's slot: the table changed */
				race_stop(me);
			}
			continue;
		}
		o.key = 200;
		o.txn = TXN(me->client, 1);
		o.flags = 0;
		build(&me->r, me->client, me->req++, 0, &o);
		race_send(me, &me->r);
		st = out_op(&me->r, 0)->status;
		if (me->r.retval == XDP_TX && st == XTX_ST_SQUASHED) {
			me->lost++;
			race_stop(me);
		} else if (me->r.retval != XDP_TX || st != XTX_ST_NOT_FOUND) {
			me->other++;
		}
	}
}

static void test_f1_hades_lease_stamp_from_other_cpu(void)
{
	struct opreq o = { .opcode = XTX_OP_HREAD, .flags = XTX_HOPF_BEGIN };
	struct race rc = {};
	int i;

	if (!server_up(load_hades_server(F1_HADES_SLOTS, RACE_LEASE)))
		return;
	for (i = 0; i < F1_HADES_SLOTS - 1; i++) {
		o.key = 100 + i;
		o.txn = TXN(3, i + 1);
		CHECK(send1(3, &o).status == XTX_ST_NOT_FOUND, "filling slot %d", i);
	}
	o.key = 200;
	o.txn = TXN(2, 1);	/* CPU 1's transaction */
	CHECK(send1(2, &o).status == XTX_ST_NOT_FOUND, "CPU 1's transaction begins");
	o.txn = TXN(3, 99);
	CHECK(send1(3, &o).status == XTX_ST_RETRY, "the table is not full");
	if (race_run(&rc, hades_body, RACE_ROUNDS, RACE_MAX_NS, 1, 2)) {
		race_report("begins on a full table against a busy slot", &rc);
		CHECK(!ctr(XTX_CTR_HADES_RECLAIM) && !rc.s[0].hit && !rc.s[1].lost,
		      "an active slot touched microseconds before was reclaimed "
		      "(%llu reclaims; CPU0 after %llu begins)",
		      (unsigned long long)ctr(XTX_CTR_HADES_RECLAIM),
		      (unsigned long long)rc.s[0].sent);
		CHECK(!rc.s[0].other && !rc.s[1].other, "%llu+%llu unexpected answers",
		      (unsigned long long)rc.s[0].other, (unsigned long long)rc.s[1].other);
	}
	server_down();
}

/* ---- finding 2: a retransmission after xtxd's answer was lost ---- */

#define F2_CLIENT 1
#define F2_KEY 5
#define F2_BASE 5	/* the key's version before the commit */

/*
 * What a copy of the commit may answer: OK at base + 1 (what xtxd answered),
 * or ALREADY_APPLIED (base + 1 is there), echoing the request's version as
 * the kernel's commit does, or naming base + 1; never another request's.
 */
static bool commit_answer(const struct xtx_op *a)
{
	if (a->status == XTX_ST_OK)
		return a->version == F2_BASE + 1;
	return a->status == XTX_ST_ALREADY_APPLIED &&
	       (a->version == F2_BASE || a->version == F2_BASE + 1);
}

/*
 * LOCK_EXCL, LOG_APPEND at the primary (the lock is LOGGED: no lease takes
 * it back), then a COMMIT_PRIMARY of a key only the store holds goes to
 * xtxd.  xtxd installs base + 1 and its answer is lost; another op's round
 * trip brings the key back into the kernel cache.  The client resends
 * after the KV lease: it must get the commit's answer, or go to xtxd again
 * with the request as sent, and the key's lock must be free once answered.
 * With `reuse`, the dedupe slot served an older request before, whose
 * answer must not leak into this one's.
 */
static void redefer_case(bool reuse)
{
	const __u64 req_commit = reuse ? 0x110 : 0x103, txn = TXN(F2_CLIENT, 1);
	struct opreq o = { .opcode = XTX_OP_LOCK_EXCL, .key = F2_KEY, .txn = txn,
			   .flags = XTX_OPF_NO_VALUE };
	struct xtx_kv_bucket b = {};
	struct xtx_fix_entry fix = { .action = XTX_FIX_RELEASE, .fill_way = XTX_KV_NO_WAY,
				     .victim_way = XTX_KV_NO_WAY };
	struct xtx_defer_record rec = {};
	struct xtx_lock_slot s;
	struct xtx_tc *tc;
	struct xtx_op a;
	struct run r, t;
	__u32 bidx, ticket;
	__u64 grant;

	if (!server_up(load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false)))
		return;
	tc = load_tc_for(skel, true);
	CHECK(tc, "load TC egress: %s", strerror(errno));
	if (!tc)
		goto out;
	set_leases(skel, LOCK_LEASE, KV_LEASE);
	bidx = bucket_idx(0, F2_KEY);
	b.bloom = 1ull << xtx_bloom_bit_of(xtx_hash(0, F2_KEY));
	bucket_put(bidx, &b);
	if (reuse) {	/* same slot: 0x100 % 16 == 0x110 % 16 */
		struct opreq c = { .opcode = XTX_OP_COUNTER_ADD, .key = 1, .version = 1000 };

		build(&r, F2_CLIENT, 0x100, 0, &c);
		run(&r);
		CHECK(out_op(&r, 0)->status == XTX_ST_OK && out_op(&r, 0)->version == 1000,
		      "the slot's previous request");
	}
	build(&r, F2_CLIENT, 0x101, 0, &o);
	run(&r);
	a = *out_op(&r, 0);
	grant = a.token;
	CHECK(a.status == XTX_ST_OK, "grant: %u", a.status);
	o = (struct opreq){ .opcode = XTX_OP_LOG_APPEND, .key = F2_KEY, .txn = txn,
			    .version = F2_BASE, .token = log_token(grant), .fill = 0x77,
			    .flags = XTX_OPF_LOG_PRIMARY | XTX_OPF_LOG_LAST };
	build(&r, F2_CLIENT, 0x102, 0, &o);
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK, "log at the primary: %u", out_op(&r, 0)->status);
	CHECK(lock_get(0, F2_KEY).flags & XTX_LOCKF_LOGGED, "the lock is not LOGGED");

	o = (struct opreq){ .opcode = XTX_OP_COMMIT_PRIMARY, .key = F2_KEY, .txn = txn,
			    .version = F2_BASE, .token = grant, .fill = 0x77 };
	build(&r, F2_CLIENT, req_commit, 0, &o);
	run(&r);
	CHECK(r.retval == XDP_PASS && out_op(&r, 0)->status == XTX_ST_DEFERRED,
	      "commit of a key only the store holds: verdict %d status %u", r.retval,
	      out_op(&r, 0)->status);
	/* answer lost; a later round trip's TC fill brought base + 1 back, and let the bucket go */
	b.key[0] = F2_KEY;
	b.version[0] = F2_BASE + 1;
	b.vlen[0] = 8;
	memset(b.value[0], 0x77, 8);
	b.flags[0] = XTX_KVF_VALID | XTX_KVF_IN_USER;
	bucket_put(bidx, &b);
	dedupe_age(dedupe_idx(F2_CLIENT, req_commit), 10 * KV_LEASE);

	run(&r);	/* the client's resend: the same bytes */
	a = *out_op(&r, 0);
	if (r.retval == XDP_TX) {
		printf("#   the resend was answered in XDP: status %u version %llu\n", a.status,
		       (unsigned long long)a.version);
		CHECK(commit_answer(&a), "resend answered status %u version %llu; the commit "
		      "installed %u", a.status, (unsigned long long)a.version, F2_BASE + 1);
	} else if (r.retval == XDP_PASS) {
		printf("#   the resend went to xtxd again\n");
		ticket = out_hdr(&r)->reserved - 1;
		bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_defer_ring), &ticket, &rec);
		CHECK(rec.req_id == req_commit && rec.t.count == 1 &&
		      (rec.t.e[0].flags & XTX_DEFER_REPLAY),
		      "passed again without XTX_DEFER_REPLAY (%u entries, flags %#x)",
		      rec.t.count, rec.t.e[0].flags);
		CHECK(a.version == F2_BASE && a.token == grant && a.txn == txn,
		      "passed to xtxd with other arguments: version %llu token %llu",
		      (unsigned long long)a.version, (unsigned long long)a.token);
		/* xtxd answers from its own record; TC releases the lock as on any answer */
		fix.bucket = rec.t.e[0].bucket;
		fix.token = rec.t.e[0].token;
		fix.bloom = b.bloom;
		xtxd_reply(&r, &t, XTX_ST_OK, F2_BASE + 1, &fix);
		CHECK(!run_tc_on(tc, &t) && t.retval == TC_ACT_OK, "TC verdict %d", t.retval);
	} else {
		CHECK(0, "resend: verdict %d", r.retval);
	}
	s = lock_get(0, F2_KEY);
	CHECK(!s.excl && !s.shared, "the committed key's lock stays held (excl %u, flags %#x; "
	      "a LOGGED lock is never reclaimed)", s.excl, s.flags);
	o = (struct opreq){ .opcode = XTX_OP_LOCK_EXCL, .key = F2_KEY, .txn = TXN(2, 1),
			    .flags = XTX_OPF_NO_VALUE };
	a = send1(2, &o);
	CHECK(a.status == XTX_ST_OK, "another transaction's grant on the key: %u", a.status);
	run(&r);	/* one more copy: the commit's answer again */
	a = *out_op(&r, 0);
	CHECK(r.retval == XDP_TX && commit_answer(&a),
	      "a later copy: verdict %d status %u version %llu",
	      r.retval, a.status, (unsigned long long)a.version);
	xtx_tc__destroy(tc);
out:
	server_down();
}

static void test_f2_redefer_runs_original_request(void)
{
	redefer_case(false);
}

static void test_f2_redefer_into_reused_dedupe_slot(void)
{
	redefer_case(true);
}

/* ---- finding 3: a duplicate racing the claim of its dedupe record ---- */

#define F3_CLIENTS 1024
#define F3_ROUNDS (F3_CLIENTS * XTX_DEDUPE_WINDOW)	/* every record once */
#define F3_DELTA 2
/* Past any stall of a packet between its claim and its answer: only a stale stamp expires. */
#define F3_KV_LEASE (10000 * MS)

struct answer {
	__u8 verdict, pkt, status, sent;
	__u32 flags;
	__u64 version, token;
};

/*
 * Round i: both CPUs send the same COUNTER_ADD (request 17 + i % 16 of
 * client i / 16) at the same moment, into a dedupe record whose previous
 * request is long done: it must run once, and both answers agree.
 */
static void dedupe_body(struct racer *me)
{
	struct answer (*ans)[2] = me->race->arg;
	struct opreq o = { .opcode = XTX_OP_COUNTER_ADD, .key = 0, .version = F3_DELTA };
	unsigned long i;

	for (i = 0; i < F3_ROUNDS; i++) {
		struct answer *x = &ans[i][me->side];

		build(&me->r, i / XTX_DEDUPE_WINDOW, XTX_DEDUPE_WINDOW + 1 + i % XTX_DEDUPE_WINDOW,
		      0, &o);
		if ((i & 255) == 0 && clock_mono_ns() > me->race->deadline)
			race_stop(me);
		if (!race_meet(me, i))
			break;
		race_send(me, &me->r);
		x->sent = 1;
		x->verdict = me->r.retval;
		x->pkt = out_hdr(&me->r)->status;
		x->status = out_op(&me->r, 0)->status;
		x->flags = out_op(&me->r, 0)->flags;
		x->version = out_op(&me->r, 0)->version;
		x->token = out_op(&me->r, 0)->token;
	}
}

static void test_f3_dedupe_claim_window(void)
{
	struct opreq warm = { .opcode = XTX_OP_COUNTER_ADD, .key = 1, .version = 1 };
	__u64 ran = 0, both_ok = 0, differ = 0, retry = 0, odd = 0, got;
	struct race rc = {};
	struct answer (*ans)[2];
	__u32 c, q;
	struct run r;
	long i;

	if (!server_up(load_server(F3_CLIENTS, TEST_LOCK_SLOTS, false)))
		return;
	ans = calloc(F3_ROUNDS, sizeof(*ans));
	CHECK(ans, "out of memory");
	if (!ans)
		goto out;
	set_leases(skel, 0, F3_KV_LEASE);
	/* every record served a request before (its answer a running total), long done */
	for (c = 0; c < F3_CLIENTS; c++) {
		for (q = 1; q <= XTX_DEDUPE_WINDOW; q++) {
			build(&r, c, q, 0, &warm);
			run(&r);
			dedupe_age(dedupe_idx(c, q), 2 * F3_KV_LEASE);
		}
	}
	CHECK(counter_value(1) == F3_ROUNDS, "warm-up counted %llu",
	      (unsigned long long)counter_value(1));
	rc.arg = ans;
	if (race_run(&rc, dedupe_body, F3_ROUNDS, LOCKSTEP_MAX_NS, 0, 0)) {
		race_report("the same request from both CPUs at once", &rc);
		for (i = 0; i < F3_ROUNDS; i++) {
			struct answer *a = &ans[i][0], *b = &ans[i][1];
			bool ok_a = a->verdict == XDP_TX && a->status == XTX_ST_OK;
			bool ok_b = b->verdict == XDP_TX && b->status == XTX_ST_OK;

			if (!a->sent && !b->sent)
				continue;
			ran++;
			retry += (a->pkt == XTX_ST_RETRY) + (b->pkt == XTX_ST_RETRY);
			odd += (a->sent && !ok_a && a->pkt != XTX_ST_RETRY) +
			       (b->sent && !ok_b && b->pkt != XTX_ST_RETRY);
			if (ok_a && ok_b) {
				both_ok++;
				differ += a->version != b->version || a->flags != b->flags ||
					  a->token != b->token;
			}
		}
		got = counter_value(0);
		printf("#   %llu rounds: %llu copies found the other executing (RETRY), "
		       "%llu pairs both answered\n", (unsigned long long)ran,
		       (unsigned long long)retry, (unsigned long long)both_ok);
		CHECK(ran == F3_ROUNDS, "only %llu of %u rounds ran", (unsigned long long)ran,
		      F3_ROUNDS);
		CHECK(got == ran * F3_DELTA, "counter %llu after %llu requests of +%d: want %llu",
		      (unsigned long long)got, (unsigned long long)ran, F3_DELTA,
		      (unsigned long long)(ran * F3_DELTA));
		CHECK(!differ, "%llu of %llu pairs answered OK differently", (unsigned long long)differ,
		      (unsigned long long)both_ok);
		CHECK(!odd, "%llu answers neither OK nor RETRY", (unsigned long long)odd);
	}
	free(ans);
out:
	server_down();
}

/* ---- finding 4: state no lease takes back keeps the table's family ---- */

#define F4_LOCK_TABLE 2
#define F4_HADES_TABLE 3

static void test_f4_family_switch_keeps_logged_lock(void)
{
	enum { C = 10 };	/* its clients on the shared server: C, C + 1, ... */
	struct opreq o = { .opcode = XTX_OP_LOCK_EXCL, .table = F4_LOCK_TABLE, .key = 20,
			   .txn = TXN(C, 1), .flags = XTX_OPF_NO_VALUE };
	struct xtx_op a;
	__u64 grant;

	if (!server_up(shared))
		return;
	set_leases(skel, LOCK_LEASE, 0);
	a = send1(C, &o);
	grant = a.token;
	CHECK(a.status == XTX_ST_OK, "grant: %u", a.status);
	o = (struct opreq){ .opcode = XTX_OP_LOG_APPEND, .table = F4_LOCK_TABLE, .key = 20,
			    .txn = TXN(C, 1), .token = log_token(grant), .fill = 0x20,
			    .flags = XTX_OPF_LOG_PRIMARY | XTX_OPF_LOG_LAST };
	CHECK(send1(C, &o).status == XTX_ST_OK, "log at the primary");
	/* the coordinator goes silent: committed, its lock LOGGED, the table idle for long */
	family_age(F4_LOCK_TABLE, LONG_AGO);
	o = (struct opreq){ .opcode = XTX_OP_HREAD, .table = F4_LOCK_TABLE, .key = 21,
			    .txn = TXN(C + 1, 1), .flags = XTX_HOPF_BEGIN };
	a = send1(C + 1, &o);
	CHECK(a.status == XTX_ST_MIXED, "HADES admitted while a LOGGED 2PL lock holds the table "
	      "(answered %u)", a.status);
	o = (struct opreq){ .opcode = XTX_OP_COMMIT_PRIMARY, .table = F4_LOCK_TABLE, .key = 20,
			    .txn = TXN(C, 1), .token = grant, .fill = 0x20 };
	a = send1(C, &o);
	CHECK(a.status == XTX_ST_OK, "the logged transaction's commit: %u", a.status);
	/* its lock gone and the table idle again, HADES may have it */
	family_age(F4_LOCK_TABLE, LONG_AGO);
	o = (struct opreq){ .opcode = XTX_OP_HREAD, .table = F4_LOCK_TABLE, .key = 21,
			    .txn = TXN(C + 1, 2), .flags = XTX_HOPF_BEGIN };
	a = send1(C + 1, &o);
	CHECK(a.status == XTX_ST_NOT_FOUND, "an idle table with no lock refused HADES: %u",
	      a.status);
	server_down();
}

static void test_f4_family_switch_keeps_committing_slot(void)
{
	enum { C = 20 };	/* its clients on the shared server: C, C + 1, ... */
	struct opreq o = { .opcode = XTX_OP_HWRITE, .table = F4_HADES_TABLE, .key = 30,
			   .txn = TXN(C, 1), .flags = XTX_HOPF_BEGIN };
	struct xtx_op a;
	__u64 base;

	if (!server_up(shared))
		return;
	set_leases(skel, LOCK_LEASE, 0);
	a = send1(C, &o);
	base = a.version;
	CHECK(a.status == XTX_ST_OK, "write intent: %u", a.status);
	o = (struct opreq){ .opcode = XTX_OP_HINTEND, .table = F4_HADES_TABLE, .key = 30,
			    .txn = TXN(C, 1), .version = base, .token = 1 /* server 0 */,
			    .fill = 0x30, .flags = XTX_HOPF_LAST };
	CHECK(send1(C, &o).status == XTX_ST_OK, "intend-to-commit acked");
	/* the coordinator goes silent: its slot COMMITTING with a staged write, the table idle */
	family_age(F4_HADES_TABLE, LONG_AGO);
	o = (struct opreq){ .opcode = XTX_OP_LOCK_EXCL, .table = F4_HADES_TABLE, .key = 30,
			    .txn = TXN(C + 1, 1), .flags = XTX_OPF_NO_VALUE };
	a = send1(C + 1, &o);
	CHECK(a.status == XTX_ST_MIXED, "2PL admitted while a committing HADES transaction "
	      "holds the table (answered %u)", a.status);
	o = (struct opreq){ .opcode = XTX_OP_HVALIDATE, .table = F4_HADES_TABLE, .key = 30,
			    .txn = TXN(C, 1), .version = base, .token = log_token(0),
			    .flags = XTX_HOPF_LAST };
	a = send1(C, &o);
	CHECK(a.status == XTX_ST_OK && a.version == base + 1, "the staged write validates: %u",
	      a.status);
	family_age(F4_HADES_TABLE, LONG_AGO);
	o = (struct opreq){ .opcode = XTX_OP_LOCK_EXCL, .table = F4_HADES_TABLE, .key = 30,
			    .txn = TXN(C + 1, 2), .flags = XTX_OPF_NO_VALUE };
	a = send1(C + 1, &o);
	CHECK(a.status == XTX_ST_OK, "an idle table with no committing slot refused 2PL: %u",
	      a.status);
	server_down();
}

/* ---- finding 5: a shared grant undone while the slot's spin bit is busy ---- */

#define F5_KEY 40

/*
 * The key's bucket is held by a round trip that never returns (within the
 * KV lease), so every grant that wants the value cannot read it: it is
 * undone and answered RETRY.  CPU 1 takes and drops shared holds and
 * meanwhile sends releases no grant matches (token 0: each takes the slot
 * and changes nothing), keeping the slot's spin bit busy.  A validation
 * would not: it reads the slot without taking it.
 */
static void undo_body(struct racer *me)
{
	struct opreq o = { .key = F5_KEY };
	struct xtx_op a;

	while (race_more(me)) {
		o.opcode = XTX_OP_LOCK_SHARED;
		o.txn = TXN(me->client, ++me->txn);
		o.flags = me->side ? XTX_OPF_NO_VALUE : 0;
		o.token = 0;
		build(&me->r, me->client, me->req++, 0, &o);
		race_send(me, &me->r);
		a = *out_op(&me->r, 0);
		if (me->r.retval != XDP_TX || (a.status != XTX_ST_OK && a.status != XTX_ST_RETRY)) {
			me->other++;
			continue;
		}
		if (a.status == XTX_ST_RETRY) {
			me->busy++;
			continue;
		}
		if (me->side) {	/* the spin bit, sixteen times more */
			struct opreq v = { .opcode = XTX_OP_UNLOCK_SHARED, .key = F5_KEY, .txn = o.txn };

			build_copies(&me->u, me->client, me->req++, XTX_MAX_OPS, &v);
			race_send(me, &me->u);
		} else {
			me->other++;	/* CPU 0's grant cannot read its value: never OK */
		}
		o.opcode = XTX_OP_UNLOCK_SHARED;
		o.token = a.token;
		o.flags = 0;
		race_release(me, &o);
	}
}

static void test_f5_shared_undo_leaves_no_hold(void)
{
	struct opreq get = { .opcode = XTX_OP_GET };
	struct xtx_kv_bucket b = { .bloom = ~0ull };
	struct xtx_lock_slot s;
	struct race rc = {};
	struct run r;

	if (!server_up(load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false)))
		return;
	set_leases(skel, 0, RACE_LEASE);
	bucket_put(bucket_idx(0, F5_KEY), &b);
	get.key = bucket_mate(0, F5_KEY);
	build(&r, 3, next_req++, 0, &get);
	run(&r);
	CHECK(r.retval == XDP_PASS, "the bucket's round trip: verdict %d", r.retval);
	if (race_run(&rc, undo_body, RACE_ROUNDS, RACE_MAX_NS, 1, 2)) {
		race_report("shared grants against a held bucket, a busy spin bit", &rc);
		s = lock_get(0, F5_KEY);
		printf("#   CPU0: %llu grants answered RETRY; %llu lock ops found the spin bit busy\n",
		       (unsigned long long)rc.s[0].busy,
		       (unsigned long long)ctr(XTX_CTR_LOCK_BUSY));
		CHECK(!s.shared && !s.excl, "holds leaked by RETRY answers: shared %u excl %u",
		      s.shared, s.excl);
		CHECK(!rc.s[1].lost, "%llu releases found their hold gone",
		      (unsigned long long)rc.s[1].lost);
		CHECK(rc.s[0].busy, "no grant met the held bucket");
		CHECK(!rc.s[0].other && !rc.s[1].other, "%llu+%llu unexpected answers",
		      (unsigned long long)rc.s[0].other, (unsigned long long)rc.s[1].other);
	}
	server_down();
}

/* ---- finding 6: UNLOCK_SHARED by a transaction that holds nothing ---- */

static void test_f6_unlock_shared_checks_holder(void)
{
	enum { C = 30 };	/* its clients on the shared server: C, C + 1, ... */
	struct opreq o = { .opcode = XTX_OP_LOCK_SHARED, .key = 50, .txn = TXN(C, 1),
			   .flags = XTX_OPF_NO_VALUE };
	struct xtx_op a, u;

	if (!server_up(shared))
		return;
	set_leases(skel, 0, 0);
	a = send1(C, &o);
	CHECK(a.status == XTX_ST_OK, "A's shared grant: %u", a.status);
	/* B of the same client, then D of another, release with A's token */
	o = (struct opreq){ .opcode = XTX_OP_UNLOCK_SHARED, .key = 50, .txn = TXN(C, 2),
			    .token = a.token };
	u = send1(C, &o);
	CHECK(u.flags & XTX_LOCKF_STALE, "B released A's hold (flags %#x)", u.flags);
	o.txn = TXN(C + 1, 1);
	u = send1(C + 1, &o);
	CHECK(u.flags & XTX_LOCKF_STALE, "D released A's hold (flags %#x)", u.flags);
	o = (struct opreq){ .opcode = XTX_OP_LOCK_EXCL, .key = 50, .txn = TXN(C + 2, 1),
			    .flags = XTX_OPF_NO_VALUE };
	CHECK(send1(C + 2, &o).status == XTX_ST_REJECTED, "C granted exclusive over A's shared hold");
	o = (struct opreq){ .opcode = XTX_OP_UNLOCK_SHARED, .key = 50, .txn = TXN(C, 1),
			    .token = a.token };
	u = send1(C, &o);
	CHECK(!(u.flags & XTX_LOCKF_STALE), "A's own release found nothing (flags %#x)", u.flags);
	o = (struct opreq){ .opcode = XTX_OP_LOCK_EXCL, .key = 50, .txn = TXN(C + 2, 2),
			    .flags = XTX_OPF_NO_VALUE };
	a = send1(C + 2, &o);
	CHECK(a.status == XTX_ST_OK, "the free key refused C: %u", a.status);
	server_down();
}

/* ---- finding 8c: a MIXED refusal is the answer a duplicate gets ---- */

#define F8_TABLE 4

static void test_f8c_mixed_refusal_is_recorded(void)
{
	enum { C = 40 };	/* its clients on the shared server: C, C + 1, ... */
	struct opreq o = { .opcode = XTX_OP_HREAD, .table = F8_TABLE, .key = 60,
			   .txn = TXN(C, 1), .flags = XTX_HOPF_BEGIN };
	struct xtx_op a;
	struct run r;

	if (!server_up(shared))
		return;
	set_leases(skel, LOCK_LEASE, 0);
	CHECK(send1(C, &o).status == XTX_ST_NOT_FOUND, "the table binds to HADES");
	o = (struct opreq){ .opcode = XTX_OP_HABORT, .table = F8_TABLE, .txn = TXN(C, 1) };
	send1(C, &o);
	o = (struct opreq){ .opcode = XTX_OP_LOCK_EXCL, .table = F8_TABLE, .key = 61,
			    .txn = TXN(C + 1, 1), .flags = XTX_OPF_NO_VALUE };
	build(&r, C + 1, next_req++, 0, &o);
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_MIXED, "2PL on a HADES table: %u",
	      out_op(&r, 0)->status);
	/* the table goes to 2PL, then the first request's copy arrives */
	family_age(F8_TABLE, LONG_AGO);
	o.key = 62;
	o.txn = TXN(C + 2, 1);
	a = send1(C + 2, &o);
	CHECK(a.status == XTX_ST_OK, "2PL takes the idle table: %u", a.status);
	o.opcode = XTX_OP_UNLOCK_EXCL;
	o.token = a.token;
	send1(C + 2, &o);
	run(&r);
	CHECK(r.retval == XDP_TX && out_op(&r, 0)->status == XTX_ST_MIXED,
	      "the copy answered %u, the request MIXED", out_op(&r, 0)->status);
	CHECK(!lock_get(F8_TABLE, 61).excl, "the copy took the lock");
	o = (struct opreq){ .opcode = XTX_OP_LOCK_EXCL, .table = F8_TABLE, .key = 61,
			    .txn = TXN(C + 2, 2), .flags = XTX_OPF_NO_VALUE };
	CHECK(send1(C + 2, &o).status == XTX_ST_OK, "the key is held");
	server_down();
}

/* ---- a grant asked for late in a holder's lease ---- */

static void test_lease_edge_excludes_then_reclaims(void)
{
	enum { C = 50 };	/* its clients on the shared server: C, C + 1, ... */
	struct opreq o = { .opcode = XTX_OP_LOCK_EXCL, .key = 70, .txn = TXN(C, 1),
			   .flags = XTX_OPF_NO_VALUE };
	struct xtx_op a, b;
	__u64 reclaims;

	if (!server_up(shared))
		return;
	set_leases(skel, RACE_LEASE, 0);	/* a stall of this process must not pass it */
	reclaims = ctr(XTX_CTR_LOCK_RECLAIM);
	a = send1(C, &o);
	CHECK(a.status == XTX_ST_OK, "A's grant: %u", a.status);
	lock_grant_age(0, 70, RACE_LEASE * 9 / 10);
	o = (struct opreq){ .opcode = XTX_OP_LOCK_SHARED, .key = 70, .txn = TXN(C + 1, 1),
			    .flags = XTX_OPF_NO_VALUE };
	CHECK(send1(C + 1, &o).status == XTX_ST_REJECTED, "shared granted at 0.9 lease");
	o.opcode = XTX_OP_LOCK_EXCL;
	CHECK(send1(C + 1, &o).status == XTX_ST_REJECTED, "exclusive granted at 0.9 lease");
	CHECK(ctr(XTX_CTR_LOCK_RECLAIM) == reclaims, "reclaimed within the lease");
	lock_grant_age(0, 70, RACE_LEASE * 11 / 10);
	b = send1(C + 1, &o);
	CHECK(b.status == XTX_ST_OK && (b.flags & XTX_LOCKF_RECLAIMED) && b.token != a.token &&
	      ctr(XTX_CTR_LOCK_RECLAIM) == reclaims + 1, "past the lease: status %u flags %#x", b.status,
	      b.flags);
	o = (struct opreq){ .opcode = XTX_OP_UNLOCK_EXCL, .key = 70, .txn = TXN(C, 1),
			    .token = a.token };
	CHECK(send1(C, &o).flags & XTX_LOCKF_STALE, "the old holder's release freed the lock");
	server_down();
}

int main(void)
{
	xtx_log_libbpf();
	RUN_CASE(test_f1_lock_lease_stamp_from_other_cpu);
	RUN_CASE(test_f1_family_switch_stamp_from_other_cpu);
	RUN_CASE(test_f1_bucket_lease_stamp_from_other_cpu);
	RUN_CASE(test_f1_hades_lease_stamp_from_other_cpu);
	RUN_CASE(test_f2_redefer_runs_original_request);
	RUN_CASE(test_f2_redefer_into_reused_dedupe_slot);
	RUN_CASE(test_f3_dedupe_claim_window);
	shared = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
	RUN_CASE(test_f4_family_switch_keeps_logged_lock);
	RUN_CASE(test_f4_family_switch_keeps_committing_slot);
	RUN_CASE(test_f5_shared_undo_leaves_no_hold);
	RUN_CASE(test_f6_unlock_shared_checks_holder);
	RUN_CASE(test_f8c_mixed_refusal_is_recorded);
	RUN_CASE(test_lease_edge_excludes_then_reclaims);
	xtx_xdp__destroy(shared);
	printf("# test_race: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
