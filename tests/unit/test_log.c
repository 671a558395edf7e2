// SPDX-License-Identifier: GPL-2.0-only
/* LOG_APPEND (entries, full, wrap, duplicates, logged locks, fences) and the resolver's rules. */
/* checks: 19 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <time.h>
#include <stdlib.h>
#include <urcu.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/hash.h>
#include <xtx/kv.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include <xtx/log.h>
#include "check.h"
#include "harness.h"
#include "pkt.h"
#include "log.h"
#include "store/overflow.h"
#include "resolve/resolve_apply.h"
#include "log/txn_records.h"
#include "logrec.h"

#define CLIENT 9
#define RING 64	/* test_log_ring */
/* Entries appends may fill: the last sixteenth is the commit marks' (bpf/lib/log.h) */
#define APPEND_CAP (RING - RING / 16)

/* One entry's write (a value that fits it) into the table. */
static int txns_add(struct xtxd_txns *t, const struct xtx_log_entry *e, uint64_t now)
{
	static struct xtx_log_write w;

	xtx_logrec_from_entry(&w, e);
	return xtxd_txns_add(t, &w, now);
}

static int live_install(struct xtxd_live *l, const struct xtx_log_entry *e)
{
	static struct xtx_log_write w;

	xtx_logrec_from_entry(&w, e);
	return xtxd_live_install(l, &w);
}

static __u64 next_req = 30000;

/* The test runs the program on CPU 0: its log is the one to read. */
static struct xtx_log_cursor cursor(void)
{
	struct xtx_log_cursor c = {};
	__u32 cpu = 0;

	bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_log_cursor), &cpu, &c);
	return c;
}

static void set_head(__u64 head)
{
	struct xtx_log_cursor c = cursor();
	__u32 cpu = 0;

	c.head = head;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_log_cursor), &cpu, &c, 0);
}

static struct xtx_log_entry entry_at(__u64 seq)
{
	struct xtx_log_entry e = {};
	__u32 idx = seq & (RING - 1);

	bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_log), &idx, &e);
	return e;
}

static struct xtx_op append(__u64 req, __u64 txn_seq, __u64 key, __u64 version, __u32 flags)
{
	static const __u16 replicas[3] = { 0, 1, 2 };
	struct run r;

	make_req(&r, CLIENT, req, 1, XTX_OP_LOG_APPEND);
	in_op(&r, 0)->txn = xtx_txn_make(CLIENT, txn_seq);
	in_op(&r, 0)->key = key;
	in_op(&r, 0)->version = version;
	in_op(&r, 0)->flags = flags;
	in_op(&r, 0)->token = xtx_log_replicas_pack(replicas, 3);
	in_op(&r, 0)->vlen = 8;
	memset(in_op(&r, 0)->value, (int)key, 8);
	run(&r);
	return *out_op(&r, 0);
}

/* A COMMIT_BACKUP of txn_seq's write of key at version, as a coordinator sends it. */
static struct xtx_op commit_backup(__u64 req, __u64 txn_seq, __u64 key, __u64 version)
{
	struct run r;

	make_req(&r, CLIENT, req, 1, XTX_OP_COMMIT_BACKUP);
	in_op(&r, 0)->txn = xtx_txn_make(CLIENT, txn_seq);
	in_op(&r, 0)->key = key;
	in_op(&r, 0)->version = version;
	in_op(&r, 0)->vlen = 8;
	memset(in_op(&r, 0)->value, (int)key, 8);
	run(&r);
	return *out_op(&r, 0);
}

static void test_append_writes_an_entry(void)
{
	struct xtx_log_cursor before = cursor(), after;
	struct xtx_log_entry e;
	struct xtx_op o;

	o = append(next_req++, 1, 77, 5, XTX_OPF_LOG_LAST);
	after = cursor();
	e = entry_at(before.tail);
	CHECK(o.status == XTX_ST_OK && o.version == before.tail, "status %u seq %llu", o.status,
	      (unsigned long long)o.version);
	CHECK(after.tail == before.tail + 1 && after.appended == before.appended + 1, "tail");
	CHECK(e.seq == before.tail && e.txn == xtx_txn_make(CLIENT, 1) && e.key == 77 &&
	      e.version == 5 && e.client_id == CLIENT && e.vlen == 8 && e.value[0] == 77 &&
	      e.flags == XTX_LOGF_LAST && e.nreplicas == 3 && e.replicas[2] == 2, "entry");
}

/*
 * A full log refuses and overwrites nothing, yet a commit still leaves its
 * mark in the ring's reserve; drained, the log takes appends again and wraps.
 */
static void test_full_then_wrap(void)
{
	struct xtx_log_cursor c = cursor();
	struct xtx_log_entry oldest, mark;
	struct xtx_op o;
	__u64 i, room = APPEND_CAP - (c.tail - c.head), tail;

	for (i = 0; i < room; i++)
		CHECK(append(next_req++, 2, 100 + i, 1, 0).status == XTX_ST_OK, "append %llu",
		      (unsigned long long)i);
	oldest = entry_at(cursor().head);
	o = append(next_req++, 3, 999, 1, 0);
	CHECK(o.status == XTX_ST_LOG_FULL, "full log answered %u", o.status);
	CHECK(entry_at(cursor().head).key == oldest.key && cursor().full == c.full + 1,
	      "a full log overwrote an undrained entry");
	tail = cursor().tail;
	o = commit_backup(next_req++, 3, 997, 4);
	mark = entry_at(tail);
	CHECK(o.status == XTX_ST_OK && cursor().tail == tail + 1 &&
	      (mark.flags & XTX_LOGF_COMMITTED) && mark.txn == xtx_txn_make(CLIENT, 3) &&
	      mark.key == 997 && !mark.vlen,
	      "a commit past the appends' cap: status %u, its mark %s", o.status,
	      cursor().tail == tail + 1 ? "logged" : "missing");
	set_head(cursor().tail);	/* what xtxd does once the entries are on disk */
	o = append(next_req++, 3, 999, 1, 0);
	CHECK(o.status == XTX_ST_OK && entry_at(o.version).key == 999, "after the drain: %u",
	      o.status);
	/* drained as it goes, it takes as many again: past the ring's end, over the oldest */
	for (i = 0; i < RING && o.status == XTX_ST_OK; i++) {
		set_head(cursor().tail);
		o = append(next_req++, 3, 1000 + i, 1, 0);
	}
	CHECK(o.status == XTX_ST_OK && cursor().tail > RING &&
	      entry_at(o.version).key == 1000 + i - 1, "the ring wrapped (tail %llu, status %u)",
	      (unsigned long long)cursor().tail, o.status);
}

/* A retransmitted append is answered from its record, not appended twice. */
static void test_duplicate_appends_once(void)
{
	__u64 req = next_req++, t0;
	struct xtx_op a, b;

	set_head(cursor().tail);
	t0 = cursor().tail;
	a = append(req, 4, 55, 9, 0);
	b = append(req, 4, 55, 9, 0);
	CHECK(a.status == XTX_ST_OK && b.status == XTX_ST_OK && a.version == b.version,
	      "duplicate answered differently");
	CHECK(cursor().tail == t0 + 1, "a duplicate appended again");
}

/*
 * The lock lease XDP applies from now on: steps that must come within a lease
 * run under a long one (no pause of a busy machine outlasts it), and
 * past_lease() makes the next step come after one.
 */
static void lock_lease(__u64 ns)
{
	struct xtx_runtime rt = { .lock_lease_ns = ns };
	__u32 zero = 0;

	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_runtime), &zero, &rt, 0);
}

#define LEASE_LONG_NS	(60ull * 1000 * 1000 * 1000)

static void past_lease(void)
{
	struct timespec ms1 = { 0, 1000 * 1000 };

	lock_lease(1);
	nanosleep(&ms1, NULL);
}

/* Once logged, the transaction's lock outlives its lease. */
static void test_logged_lock_not_reclaimed(void)
{
	struct xtx_runtime rt;
	__u32 zero = 0;
	struct run r;
	__u64 txn = xtx_txn_make(CLIENT, 50);

	lock_lease(LEASE_LONG_NS);
	make_req(&r, CLIENT, next_req++, 1, XTX_OP_LOCK_EXCL);
	in_op(&r, 0)->txn = txn;
	in_op(&r, 0)->key = 60;
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK, "lock");
	set_head(cursor().tail);
	CHECK(append(next_req++, 50, 60, 2, 0).status == XTX_ST_OK, "append");
	past_lease();
	make_req(&r, CLIENT, next_req++, 1, XTX_OP_LOCK_EXCL);
	in_op(&r, 0)->txn = xtx_txn_make(CLIENT, 51);
	in_op(&r, 0)->key = 60;
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_REJECTED && (out_op(&r, 0)->flags & XTX_LOCKF_LOGGED),
	      "a logged transaction's lock was reclaimed (%u)", out_op(&r, 0)->status);
	memset(&rt, 0, sizeof(rt));
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_runtime), &zero, &rt, 0);
}

/* A lock op of txn_seq on key: the reply (status, token). */
static struct xtx_op lock_key(__u64 txn_seq, __u64 key, __u8 opcode)
{
	struct run r;

	make_req(&r, CLIENT, next_req++, 1, opcode);
	in_op(&r, 0)->txn = xtx_txn_make(CLIENT, txn_seq);
	in_op(&r, 0)->key = key;
	run(&r);
	return *out_op(&r, 0);
}

/* A primary's append proving grant: LOG_APPEND with XTX_OPF_LOG_PRIMARY. */
static struct xtx_op append_primary(__u64 txn_seq, __u64 key, __u64 grant)
{
	static const __u16 replicas[3] = { 0, 1, 2 };
	struct run r;

	make_req(&r, CLIENT, next_req++, 1, XTX_OP_LOG_APPEND);
	in_op(&r, 0)->txn = xtx_txn_make(CLIENT, txn_seq);
	in_op(&r, 0)->key = key;
	in_op(&r, 0)->version = 9;
	in_op(&r, 0)->flags = XTX_OPF_LOG_PRIMARY | XTX_OPF_LOG_LAST;
	in_op(&r, 0)->token = xtx_log_replicas_pack(replicas, 3) | (grant << 32);
	in_op(&r, 0)->vlen = 8;
	run(&r);
	return *out_op(&r, 0);
}

/*
 * The slow coordinator: its lock is taken back by the lease and granted to
 * another, so its append at the primary must not go in (nothing appended),
 * while the new holder's does, and pins the lock against the lease.  A
 * holder that took the same slot again after the reclaim proves nothing
 * with its first grant either.
 */
static void test_primary_append_proves_grant(void)
{
	struct xtx_log_cursor before;
	struct xtx_runtime rt;
	struct xtx_op g1, g2, o;
	__u32 zero = 0;

	set_head(cursor().tail);
	lock_lease(LEASE_LONG_NS);
	g1 = lock_key(60, 70, XTX_OP_LOCK_EXCL);
	CHECK(g1.status == XTX_ST_OK, "T1 locks");
	past_lease();				/* T1 stalls past the lease */
	g2 = lock_key(61, 70, XTX_OP_LOCK_EXCL);
	CHECK(g2.status == XTX_ST_OK && (g2.flags & XTX_LOCKF_RECLAIMED) && g2.token != g1.token,
	      "T2 takes the lock back from T1 (status %u)", g2.status);
	lock_lease(LEASE_LONG_NS);
	before = cursor();
	o = append_primary(60, 70, g1.token);
	CHECK(o.status == XTX_ST_NOT_HELD && cursor().tail == before.tail,
	      "T1's append at the primary is refused, nothing appended (status %u)", o.status);
	o = append_primary(61, 70, g2.token);
	CHECK(o.status == XTX_ST_OK && cursor().tail == before.tail + 1,
	      "T2's append proves its grant (status %u)", o.status);
	past_lease();
	o = lock_key(62, 70, XTX_OP_LOCK_EXCL);
	CHECK(o.status == XTX_ST_REJECTED && (o.flags & XTX_LOCKF_LOGGED),
	      "T2's proven lock is not reclaimed past the lease (status %u)", o.status);

	/* the same transaction, granted again after a reclaim: the old grant proves nothing */
	g1 = lock_key(63, 71, XTX_OP_LOCK_EXCL);
	past_lease();
	g2 = lock_key(63, 71, XTX_OP_LOCK_EXCL);
	CHECK(g2.status == XTX_ST_OK && g2.token != g1.token, "T reacquires after its lease ran out");
	lock_lease(LEASE_LONG_NS);
	o = append_primary(63, 71, g1.token);
	CHECK(o.status == XTX_ST_NOT_HELD, "a grant from before the reclaim is refused (%u)",
	      o.status);
	o = append_primary(63, 71, g2.token);
	CHECK(o.status == XTX_ST_OK, "the current grant is accepted (%u)", o.status);
	/* a full log refuses before it pins anything: no lock logged without a record */
	g1 = lock_key(64, 72, XTX_OP_LOCK_EXCL);
	set_head(cursor().tail - RING);
	o = append_primary(64, 72, g1.token);
	CHECK(o.status == XTX_ST_LOG_FULL, "a full log answers LOG_FULL (%u)", o.status);
	past_lease();
	o = lock_key(65, 72, XTX_OP_LOCK_EXCL);
	CHECK(o.status == XTX_ST_OK, "... and left the lock to its lease (%u)", o.status);
	set_head(cursor().tail);
	memset(&rt, 0, sizeof(rt));
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_runtime), &zero, &rt, 0);
}

static void test_append_needs_own_txn(void)
{
	struct run r;

	make_req(&r, CLIENT, next_req++, 1, XTX_OP_LOG_APPEND);
	in_op(&r, 0)->txn = xtx_txn_make(CLIENT + 1, 1);
	run(&r);
	CHECK(out_hdr(&r)->status == XTX_ST_BAD_TXN, "another client's txn: %u",
	      out_hdr(&r)->status);
}

static void set_fenced(__u64 on)
{
	struct xtx_log_cursor c = cursor();
	__u32 cpu = 0;

	c.fenced = on;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_log_cursor), &cpu, &c, 0);
}

/* A fenced transaction's append is refused and logs nothing; others go on. */
static void test_fenced_txn_refused(void)
{
	__u64 txn = xtx_txn_make(CLIENT, 60), when = 1, t0;
	struct xtx_op o;

	set_head(cursor().tail);
	set_fenced(1);
	t0 = cursor().tail;
	CHECK(!bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_fence), &txn, &when, BPF_ANY),
	      "fence: %s", strerror(errno));
	o = append(next_req++, 60, 70, 2, XTX_OPF_LOG_LAST);
	CHECK(o.status == XTX_ST_FENCED, "fenced txn answered %u", o.status);
	CHECK(cursor().tail == t0, "a fenced txn was logged");
	o = append(next_req++, 61, 70, 2, XTX_OPF_LOG_LAST);
	CHECK(o.status == XTX_ST_OK && cursor().tail == t0 + 1, "another txn: %u", o.status);
	bpf_map_delete_elem(bpf_map__fd(skel->maps.xtx_fence), &txn);
	set_fenced(0);
}

/*
 * Under a configuration with shards, an append must name its key's shard's
 * replica set as the server serves it: one placed by an older configuration
 * is refused MOVED and logs nothing.
 */
static void test_append_placement(void)
{
	static const __u16 all[3] = { 0, 1, 2 }, left[2] = { 1, 2 };
	int efd = bpf_map__fd(skel->maps.xtx_epoch), sfd = bpf_map__fd(skel->maps.xtx_shards);
	struct xtx_epoch_lease el = { .nshards = 4 }, none = {};
	__u32 zero = 0, shard = xtx_shard_of(xtx_hash(0, 81), 4), set;
	__u64 t0;
	struct xtx_op o;

	bpf_map_update_elem(efd, &zero, &el, 0);
	set = (__u32)xtx_log_replicas_pack(all, 3);
	bpf_map_update_elem(sfd, &shard, &set, 0);
	t0 = cursor().tail;
	o = append(next_req++, 80, 81, 2, XTX_OPF_LOG_LAST);
	CHECK(o.status == XTX_ST_OK && cursor().tail == t0 + 1,
	      "the shard's own replica set is logged: %u", o.status);
	set = (__u32)xtx_log_replicas_pack(left, 2);
	bpf_map_update_elem(sfd, &shard, &set, 0);
	o = append(next_req++, 82, 81, 3, XTX_OPF_LOG_LAST);
	CHECK(o.status == XTX_ST_MOVED && cursor().tail == t0 + 1,
	      "a replica set the shard no longer has is refused MOVED, nothing logged: %u",
	      o.status);
	bpf_map_update_elem(efd, &zero, &none, 0);
	o = append(next_req++, 83, 81, 4, XTX_OPF_LOG_LAST);
	CHECK(o.status == XTX_ST_OK && cursor().tail == t0 + 2,
	      "a static cluster (no shards) does not check placement: %u", o.status);
	set = 0;
	bpf_map_update_elem(sfd, &shard, &set, 0);
}

/*
 * A transaction over shards whose replica sets differ tells each server
 * its participants (META): logged as no write, never placement-checked,
 * and the resolver's record asks them all and counts it for completeness.
 */
static void test_meta_participants(void)
{
	int efd = bpf_map__fd(skel->maps.xtx_epoch);
	struct xtx_epoch_lease el = { .nshards = 4 }, none = {};
	struct xtx_log_cursor before;
	struct xtx_log_entry e, w = { .txn = 0, .key = 5, .nreplicas = 3,
				      .replicas = { 0, 1, 2 } };
	struct xtxd_txns t = {};
	struct xtxd_txn *x;
	__u32 zero = 0;
	struct run r;

	/* in a cluster, and no shard map entry for key 0: no MOVED for a META */
	bpf_map_update_elem(efd, &zero, &el, 0);
	before = cursor();
	make_req(&r, CLIENT, next_req++, 1, XTX_OP_LOG_APPEND);
	in_op(&r, 0)->txn = xtx_txn_make(CLIENT, 90);
	in_op(&r, 0)->flags = XTX_OPF_LOG_META;
	in_op(&r, 0)->version = 0x3f;	/* servers 0-5 */
	run(&r);
	e = entry_at(before.tail);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK && cursor().tail == before.tail + 1 &&
	      (e.flags & XTX_LOGF_META) && e.version == 0x3f && !e.key,
	      "a META is logged as the participants: %u", out_op(&r, 0)->status);
	make_req(&r, CLIENT, next_req++, 1, XTX_OP_LOG_APPEND);
	in_op(&r, 0)->txn = xtx_txn_make(CLIENT, 91);
	in_op(&r, 0)->flags = XTX_OPF_LOG_META | XTX_OPF_LOG_LAST;
	in_op(&r, 0)->version = 0x3f;
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_BAD_ARG && cursor().tail == before.tail + 1,
	      "a META that claims to be LAST is refused, nothing logged: %u",
	      out_op(&r, 0)->status);
	bpf_map_update_elem(efd, &zero, &none, 0);

	/* the record: its participants asked, the META counted among the LAST's */
	w.txn = e.txn;
	CHECK(!txns_add(&t, &w, 1) && !txns_add(&t, &e, 1), "added");
	w.key = 6;
	w.flags = XTX_LOGF_LAST;
	w.nwrites = 3;
	CHECK(!txns_add(&t, &w, 1), "added the LAST");
	x = xtxd_txns_get(&t, e.txn, false, 0);
	CHECK(x && x->nw == 2 && x->meta && x->nrep == 6 && xtxd_txn_complete(x),
	      "two writes and the participants: 6 servers to ask, complete");
	x->meta = false;
	CHECK(!xtxd_txn_complete(x), "without its META the record is not complete");
	xtxd_txns_free(&t);
}

/* FaRM's rule: commit only when every replica holds the record; one "not held" aborts. */
static void test_decide_rule(void)
{
	static const struct {
		uint8_t a[3];
		unsigned int n;
		enum xtxd_outcome want;
	} t[] = {
		{ { XTXD_ANS_HOLD, XTXD_ANS_HOLD, XTXD_ANS_HOLD }, 3, XTXD_OUT_COMMIT },
		{ { XTXD_ANS_HOLD, XTXD_ANS_HOLD, XTXD_ANS_NONE }, 3, XTXD_OUT_NONE },
		{ { XTXD_ANS_HOLD, XTXD_ANS_NOT_HELD, XTXD_ANS_NONE }, 3, XTXD_OUT_ABORT },
		{ { XTXD_ANS_NONE, XTXD_ANS_NONE, XTXD_ANS_ABORTED }, 3, XTXD_OUT_ABORT },
		{ { XTXD_ANS_NONE, XTXD_ANS_COMMITTED, XTXD_ANS_NONE }, 3, XTXD_OUT_COMMIT },
		{ { XTXD_ANS_HOLD, XTXD_ANS_HOLD }, 2, XTXD_OUT_COMMIT },
		{ { XTXD_ANS_NONE }, 0, XTXD_OUT_NONE },
		/* a replica moved out of the configuration: the ones left decide */
		{ { XTXD_ANS_GONE, XTXD_ANS_HOLD, XTXD_ANS_HOLD }, 3, XTXD_OUT_COMMIT },
		{ { XTXD_ANS_GONE, XTXD_ANS_HOLD, XTXD_ANS_NONE }, 3, XTXD_OUT_NONE },
		{ { XTXD_ANS_GONE, XTXD_ANS_HOLD, XTXD_ANS_NOT_HELD }, 3, XTXD_OUT_ABORT },
		{ { XTXD_ANS_GONE, XTXD_ANS_GONE, XTXD_ANS_HOLD }, 3, XTXD_OUT_COMMIT },
		{ { XTXD_ANS_GONE, XTXD_ANS_GONE, XTXD_ANS_GONE }, 3, XTXD_OUT_NONE },
	};
	unsigned int i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		CHECK(xtxd_decide(t[i].a, t[i].n) == t[i].want, "row %u: %d", i,
		      xtxd_decide(t[i].a, t[i].n));
}

/* The table gathers a txn's writes, its replica set and whether LAST came. */
static void test_txn_table(void)
{
	struct xtx_log_entry e = { .txn = 7, .key = 1, .nreplicas = 3,
				   .replicas = { 4, 5, 6 } };
	struct xtxd_txns t = {};
	struct xtxd_txn *x;
	int i;

	for (i = 0; i < 1000; i++) {
		e.txn = 1000 + i;
		CHECK(!txns_add(&t, &e, 5), "add %d", i);
	}
	e.txn = 7;
	CHECK(!txns_add(&t, &e, 5), "add");
	e.key = 2;
	e.flags = XTX_LOGF_LAST;
	CHECK(!txns_add(&t, &e, 9), "add last");
	x = xtxd_txns_get(&t, 7, false, 0);
	CHECK(x && x->nw == 2 && x->last && x->first_ns == 5 && x->nrep == 3 && x->rep[2] == 6 &&
	      x->w[1].key == 2, "txn 7 as logged");
	CHECK(t.n == 1001, "%zu txns", t.n);
	CHECK(xtxd_txn_complete(x), "LAST without a count: complete as before");

	/*
	 * A LAST that counts 3 writes here, after only one of the others: a
	 * record missing a write is not complete, even with that one logged twice.
	 */
	e.txn = 8;
	e.key = 1;
	e.flags = 0;
	txns_add(&t, &e, 9);
	e.key = 3;
	e.flags = XTX_LOGF_LAST;
	e.nwrites = 3;
	txns_add(&t, &e, 9);
	x = xtxd_txns_get(&t, 8, false, 0);
	CHECK(x && x->last && !xtxd_txn_complete(x), "LAST of 3 with 2 writes: incomplete");
	e.key = 1;
	e.flags = 0;
	e.nwrites = 0;
	txns_add(&t, &e, 9);
	CHECK(!xtxd_txn_complete(x), "a write logged twice does not stand in for a missing one");
	e.key = 2;
	txns_add(&t, &e, 9);
	CHECK(xtxd_txn_complete(x), "with the third write: complete");

	/* writes of keys in different shards: the record names every server of them */
	e.txn = 9;
	e.key = 1;
	txns_add(&t, &e, 9);
	e.key = 2;
	e.replicas[0] = 6;
	e.replicas[1] = 7;
	e.replicas[2] = 4;
	txns_add(&t, &e, 9);
	x = xtxd_txns_get(&t, 9, false, 0);
	CHECK(x && x->nrep == 4 && x->rep[0] == 4 && x->rep[1] == 5 && x->rep[2] == 6 &&
	      x->rep[3] == 7, "two shards' replica sets: their union, %u servers", x ? x->nrep : 0);
	xtxd_txns_del(&t, 8);
	xtxd_txns_del(&t, 7);
	CHECK(!xtxd_txns_get(&t, 7, false, 0) && xtxd_txns_get(&t, 1500, false, 0), "delete");
	xtxd_txns_free(&t);
}

/* An mmapable array map of the test's server, read-write, as xtxd maps it; NULL on failure. */
static void *map_array(struct bpf_map *m, size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	*len = ((size_t)bpf_map__max_entries(m) * ((bpf_map__value_size(m) + 7) & ~7u) + page - 1) &
	       ~(size_t)(page - 1);
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Table t's LOGGED holds as the family switch counts them (bpf/lib/pins.h). */
static int64_t pins_of(const int64_t *pins, __u32 t)
{
	int64_t sum = 0;
	int c;

	for (c = 0; c <= XTX_PIN_USER_ROW; c++)
		sum += pins[c * XTX_MAX_TABLES + t];
	return sum;
}

/*
 * The resolver frees a logged lock from user space; the next txn gets it,
 * old tokens go stale, and the table's pin is uncounted.
 */
static void test_resolver_frees_logged_lock(void)
{
	size_t locks_len = 0, pins_len = 0;
	struct xtxd_live l = { .locks = map_array(skel->maps.xtx_locks, &locks_len),
			       .pins = map_array(skel->maps.xtx_fam_pins, &pins_len),
			       .lock_slots = TEST_LOCK_SLOTS };
	__u64 txn = xtx_txn_make(CLIENT, 70), token;
	int64_t pinned;
	struct run r;

	CHECK(l.locks && l.pins, "mapping the lock table and pins: %s", strerror(errno));
	if (!l.locks || !l.pins)
		return;
	/* earlier cases left logged holds of their own: this one counts from here */
	pinned = pins_of(l.pins, 0);

	make_req(&r, CLIENT, next_req++, 1, XTX_OP_LOCK_EXCL);
	in_op(&r, 0)->txn = txn;
	in_op(&r, 0)->key = 80;
	run(&r);
	token = out_op(&r, 0)->token;
	set_head(cursor().tail);
	CHECK(append(next_req++, 70, 80, 2, XTX_OPF_LOG_LAST).status == XTX_ST_OK, "append");
	CHECK(xtxd_live_lock_held(&l, txn, 0, 80), "held after logging");
	CHECK(pins_of(l.pins, 0) == pinned + 1, "the logged hold pins table 0: %lld, %lld before",
	      (long long)pins_of(l.pins, 0), (long long)pinned);
	CHECK(xtxd_live_unlock(&l, xtx_txn_make(CLIENT, 71), 0, 80) == 0, "not another txn's");
	CHECK(xtxd_live_unlock(&l, txn, 0, 80) == 1, "freed");
	CHECK(!xtxd_live_lock_held(&l, txn, 0, 80), "still held");
	CHECK(pins_of(l.pins, 0) == pinned, "freed, table 0 still pinned: %lld, %lld before",
	      (long long)pins_of(l.pins, 0), (long long)pinned);
	make_req(&r, CLIENT, next_req++, 1, XTX_OP_UNLOCK_EXCL);
	in_op(&r, 0)->txn = txn;
	in_op(&r, 0)->key = 80;
	in_op(&r, 0)->token = token;
	run(&r);
	CHECK(out_op(&r, 0)->flags & XTX_LOCKF_STALE, "the old holder's release was not stale");
	make_req(&r, CLIENT, next_req++, 1, XTX_OP_LOCK_EXCL);
	in_op(&r, 0)->txn = xtx_txn_make(CLIENT, 72);
	in_op(&r, 0)->key = 80;
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK, "the next txn: %u", out_op(&r, 0)->status);
	munmap(l.locks, locks_len);
	munmap(l.pins, pins_len);
}

/* One lock op of client's transaction seq on key in a request of its own; the reply's op. */
static struct xtx_op lock_op(__u32 client, __u64 *req, __u8 opcode, __u64 seq, __u64 key,
			     __u64 token)
{
	struct run r;

	make_req(&r, client, (*req)++, 1, opcode);
	in_op(&r, 0)->txn = xtx_txn_make(client, seq);
	in_op(&r, 0)->key = key;
	in_op(&r, 0)->token = token;
	in_op(&r, 0)->flags = XTX_OPF_NO_VALUE;
	run(&r);
	return *out_op(&r, 0);
}

/* The calling thread runs on cpu only: BPF_PROG_TEST_RUN runs the program there. */
static void run_on_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

struct unlock_race {
	struct xtxd_live *l;
	int cpu;
	volatile int *go;
	int stale;		/* B: its releases found nothing of its own */
	int grants;		/* B: grants it got; A: holds the resolver took away */
};

/* A: the resolver takes away X's shared hold over and over, X granted again by XDP. */
static void *unlock_race_a(void *arg)
{
	struct unlock_race *u = arg;
	__u64 req = 1ull << 41;
	struct xtx_op o;
	int i;

	run_on_cpu(u->cpu);
	while (!*u->go)
		;
	for (i = 0; i < 5000; i++) {
		o = lock_op(CLIENT + 1, &req, XTX_OP_LOCK_SHARED, 1, 91, 0);
		if (o.status == XTX_ST_OK)
			u->grants += xtxd_live_unlock(u->l, xtx_txn_make(CLIENT + 1, 1), 0, 91) == 1;
	}
	return NULL;
}

/* B: transaction Y takes and releases its own shared hold of the same key. */
static void *unlock_race_b(void *arg)
{
	struct unlock_race *u = arg;
	__u64 req = 1ull << 41;
	struct xtx_op o;
	int i;

	run_on_cpu(u->cpu);
	while (!*u->go)
		;
	for (i = 0; i < 5000; i++) {
		o = lock_op(CLIENT + 2, &req, XTX_OP_LOCK_SHARED, 2, 91, 0);
		if (o.status != XTX_ST_OK)
			continue;
		u->grants++;
		do
			o = lock_op(CLIENT + 2, &req, XTX_OP_UNLOCK_SHARED, 2, 91, o.token);
		while (o.status == XTX_ST_RETRY);
		u->stale += !!(o.flags & XTX_LOCKF_STALE);
	}
	return NULL;
}

/*
 * The resolver takes away only its transaction's holds, under the slot's
 * spin word taken with a CAS: another transaction's shared hold of the
 * same slot stays, and its owner's release finds it.  Once in turn, then
 * from two CPUs at once (the resolver on one, XDP granting and releasing
 * on the other): a resolver that wrote the whole slot back, or freed
 * every hold, loses the other's holds.
 */
static void test_resolver_unlock_keeps_others(void)
{
	size_t locks_len = 0, pins_len = 0;
	struct xtxd_live l = { .locks = map_array(skel->maps.xtx_locks, &locks_len),
			       .pins = map_array(skel->maps.xtx_fam_pins, &pins_len),
			       .lock_slots = TEST_LOCK_SLOTS };
	__u64 req = 1ull << 40;	/* below the threads' ids: theirs are newer */
	volatile int go = 0;
	struct unlock_race a = { .l = &l, .cpu = 0, .go = &go }, b = { .l = &l, .cpu = 1, .go = &go };
	const struct xtx_lock_slot *s;
	struct xtx_op x, y;
	pthread_t ta, tb;

	CHECK(l.locks && l.pins, "mapping the lock table: %s", strerror(errno));
	if (!l.locks || !l.pins)
		return;
	s = &l.locks[xtx_lock_slot_of(xtx_hash(0, 91), TEST_LOCK_SLOTS)];
	x = lock_op(CLIENT + 1, &req, XTX_OP_LOCK_SHARED, 1, 91, 0);
	y = lock_op(CLIENT + 2, &req, XTX_OP_LOCK_SHARED, 2, 91, 0);
	CHECK(x.status == XTX_ST_OK && y.status == XTX_ST_OK, "two shared holds: %u %u", x.status,
	      y.status);
	CHECK(xtxd_live_unlock(&l, xtx_txn_make(CLIENT + 1, 1), 0, 91) == 1, "X's hold taken away");
	CHECK(s->shared == 1 && s->sharer[0] == xtx_txn_make(CLIENT + 2, 2),
	      "Y's hold went with X's: shared %u", s->shared);
	y = lock_op(CLIENT + 2, &req, XTX_OP_UNLOCK_SHARED, 2, 91, y.token);
	CHECK(y.status == XTX_ST_OK && !(y.flags & XTX_LOCKF_STALE), "Y's own release was stale");
	CHECK(!s->shared && !s->excl, "slot left held: shared %u excl %u", s->shared, s->excl);

	if (libbpf_num_possible_cpus() < 2 || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		CHECK(0, "the race needs two CPUs online");
		return;
	}
	pthread_create(&ta, NULL, unlock_race_a, &a);
	pthread_create(&tb, NULL, unlock_race_b, &b);
	go = 1;
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	CHECK(b.grants > 0 && b.stale == 0, "Y's releases found no hold of its own %d of %d times",
	      b.stale, b.grants);
	CHECK(a.grants > 0, "the resolver never took X's hold away");
	CHECK(!s->shared && !s->excl, "after the race the slot is held: shared %u excl %u",
	      s->shared, s->excl);
	munmap(l.locks, locks_len);
	munmap(l.pins, pins_len);
}

static struct xtx_log_entry wr(uint64_t key, uint64_t version, uint8_t flags, uint8_t byte)
{
	struct xtx_log_entry e = { .key = key, .version = version, .flags = flags, .vlen = 4 };

	memset(e.value, byte, 4);
	return e;
}

/*
 * A decided write goes in only when newer, wherever the key lives: kernel
 * way (kept dirty for write-back), tombstone, overflow store; a delete
 * raises the floor; a full store refuses and changes nothing.
 */
static void test_resolver_installs_decided_writes(void)
{
	struct xtx_kv_bucket *kv = calloc(1, sizeof(*kv));
	struct xtxd_live l = { .kv = kv, .nbuckets = 1, .store = xtxd_ovf_new(1, 2) };
	struct xtx_log_entry e;
	struct xtxd_ovf_item it;
	uint64_t v, k;

	rcu_register_thread();
	CHECK(kv && l.store, "setup");
	if (!kv || !l.store)
		goto out;
	e = wr(1, 5, 0, 0xa1);
	CHECK(live_install(&l, &e) == 1 && xtxd_live_version(&l, 0, 1, &v) == 1 && v == 5,
	      "a new key goes into a free way");
	CHECK(kv->flags[0] == (XTX_KVF_VALID | XTX_KVF_DIRTY) && kv->value[0][0] == 0xa1 &&
	      !kv->lock, "... valid, dirty, bucket unlocked");
	e = wr(1, 5, 0, 0xb2);
	CHECK(live_install(&l, &e) == 0 && kv->value[0][0] == 0xa1, "same version: kept");
	e = wr(1, 4, 0, 0xb2);
	CHECK(live_install(&l, &e) == 0 && kv->version[0] == 5, "older: kept");
	e = wr(1, 6, 0, 0xc3);
	CHECK(live_install(&l, &e) == 1 && kv->version[0] == 6 && kv->value[0][0] == 0xc3,
	      "newer: overwritten");
	e = wr(1, 7, XTX_LOGF_DELETE, 0);
	CHECK(live_install(&l, &e) == 1 && !kv->flags[0] && kv->vfloor == 7 &&
	      xtxd_live_version(&l, 0, 1, &v) == 0 && v == 7, "delete: way freed, floor raised");
	/* every way taken: the next keys go to the store, which holds two */
	for (k = 10; k < 10 + XTX_KV_WAYS; k++) {
		e = wr(k, 8, 0, 0x10);
		CHECK(live_install(&l, &e) == 1, "key %llu", (unsigned long long)k);
	}
	for (k = 20; k < 22; k++) {
		e = wr(k, 8, 0, 0x20);
		CHECK(live_install(&l, &e) == 1 && !xtxd_ovf_get(l.store, 0, k, &it) &&
		      it.version == 8, "key %llu into the store", (unsigned long long)k);
		CHECK(kv->bloom & (1ull << xtx_bloom_bit_of(xtx_hash(0, k))), "its filter bit");
	}
	e = wr(22, 8, 0, 0x20);
	CHECK(live_install(&l, &e) == -ENOSPC && xtxd_live_version(&l, 0, 22, &v) == 0,
	      "a full store refuses");
	e = wr(21, 9, 0, 0x21);
	CHECK(live_install(&l, &e) == 1 && !xtxd_ovf_get(l.store, 0, 21, &it) &&
	      it.version == 9 && it.value[0] == 0x21, "a store key updated in place");
	e = wr(20, 9, XTX_LOGF_DELETE, 0);
	CHECK(live_install(&l, &e) == 1 && xtxd_ovf_get(l.store, 0, 20, &it) == -ENOENT,
	      "a store key deleted");
	CHECK(!kv->lock, "every bucket lock let go");
out:
	if (l.store)
		xtxd_ovf_free(l.store);
	rcu_unregister_thread();
	free(kv);
}

/* The value byte i of a big write's test pattern for key. */
static uint8_t big_byte(uint64_t key, unsigned int i)
{
	return (uint8_t)(key * 31 + i * 7 + (i >> 8));
}

/*
 * A LOG_APPEND of a value of len bytes in the packet's value area (len >
 * XTX_VALUE_INLINE); flags as append()'s, grant for a primary's.
 */
static struct xtx_op append_big(__u64 txn_seq, __u64 key, __u16 len, __u32 flags, __u64 grant)
{
	static const __u16 replicas[3] = { 0, 1, 2 };
	__u8 payload[PKT_MAX] __attribute__((aligned(8))) = {};
	struct xtx_op *op;
	struct run r;
	size_t plen;
	__u8 *area;
	unsigned int i;

	xtx_msg_init(payload, CLIENT, next_req++);
	op = xtx_msg_add(payload, XTX_OP_LOG_APPEND, 0, key);
	op->txn = xtx_txn_make(CLIENT, txn_seq);
	op->version = 11;
	op->flags = flags;
	op->token = xtx_log_replicas_pack(replicas, 3) | (grant << 32);
	xtx_msg_set_area(op, len, len);
	plen = xtx_msg_finish(payload);
	area = xtx_msg_area(payload, op);
	for (i = 0; i < len; i++)
		area[i] = big_byte(key, i);
	r.in_len = pkt_build(r.in, &pkt_default_addrs, payload, plen);
	run(&r);
	return *out_op(&r, 0);
}

/* The write logged at seq, gathered from the ring; 0, or -EBADMSG with *why. */
static int write_at(__u64 seq, struct xtx_log_write *w, const char **why)
{
	struct xtx_log_entry e[XTX_LOGREC_MAX_ENTRIES];
	uint32_t n, i;

	e[0] = entry_at(seq);
	n = xtx_logrec_span(&e[0]);
	for (i = 1; i < n; i++)
		e[i] = entry_at(seq + i);
	return xtx_logrec_decode(e, n, w, why);
}

/*
 * A value over the slot is logged as a head and its continuations at the
 * following seqs, published together, and reads back whole; a big write
 * counts once in nwrites (the LAST's count is the client's, copied).
 */
static void test_big_append_whole(void)
{
	static const __u16 lens[] = { 41, 80, 81, 512, 1024 };
	static struct xtx_log_write w;
	const char *why = "";
	unsigned int i, j, bad;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct xtx_log_cursor before;
		__u32 n = xtx_logrec_entries(lens[i]);
		struct xtx_op o;

		set_head(cursor().tail);
		before = cursor();
		o = append_big(200 + i, 300 + i, lens[i],
			       XTX_OPF_LOG_LAST | (2u << XTX_OPF_LOG_COUNT_SHIFT), 0);
		CHECK(o.status == XTX_ST_OK && o.version == before.tail, "%u bytes: status %u",
		      lens[i], o.status);
		CHECK(cursor().tail == before.tail + n && cursor().appended == before.appended + n,
		      "%u bytes: %llu entries, want %u", lens[i],
		      (unsigned long long)(cursor().tail - before.tail), n);
		CHECK(!write_at(before.tail, &w, &why), "%u bytes: %s", lens[i], why);
		for (j = 0, bad = 0; j < lens[i]; j++)
			bad += w.value[j] != big_byte(300 + i, j);
		CHECK(w.vlen == lens[i] && !bad && w.e.key == 300 + i && w.e.version == 11 &&
		      w.e.txn == xtx_txn_make(CLIENT, 200 + i) && w.e.client_id == CLIENT &&
		      w.e.flags == (XTX_LOGF_LAST | XTX_LOGF_EXT) && w.e.nwrites == 2 &&
		      w.e.nreplicas == 3 && w.e.replicas[2] == 2 && !w.e.vlen,
		      "%u bytes read back: vlen %u, %u bytes differ, flags %#x", lens[i], w.vlen,
		      bad, w.e.flags);
	}
}

/*
 * All or nothing: a ring with room for all but one of a big write's
 * entries answers LOG_FULL and publishes none; a primary whose grant is
 * gone appends nothing either; a reference outside the packet is refused.
 */
static void test_big_append_all_or_nothing(void)
{
	__u32 n = xtx_logrec_entries(1024);
	struct xtx_log_cursor before;
	static struct xtx_log_write w;
	const char *why = "";
	struct xtx_op o, g;

	set_head(cursor().tail);
	/* room for n - 1 entries */
	set_head(cursor().tail - (APPEND_CAP - (n - 1)));
	before = cursor();
	o = append_big(210, 400, 1024, XTX_OPF_LOG_LAST, 0);
	CHECK(o.status == XTX_ST_LOG_FULL && cursor().tail == before.tail &&
	      cursor().appended == before.appended && cursor().full == before.full + 1,
	      "one entry short: status %u, tail moved by %llu", o.status,
	      (unsigned long long)(cursor().tail - before.tail));
	o = append_big(210, 400, 41, XTX_OPF_LOG_LAST, 0);
	CHECK(o.status == XTX_ST_OK && cursor().tail == before.tail + 2,
	      "a smaller big write fits: status %u", o.status);
	set_head(cursor().tail - (APPEND_CAP - n));
	before = cursor();
	o = append_big(211, 401, 1024, XTX_OPF_LOG_LAST, 0);
	CHECK(o.status == XTX_ST_OK && cursor().tail == before.tail + n &&
	      !write_at(before.tail, &w, &why) && w.vlen == 1024 &&
	      w.value[1023] == big_byte(401, 1023),
	      "exactly the room: status %u (%s)", o.status, why);

	/* a primary whose grant the lease took back: nothing logged, the lock not pinned */
	set_head(cursor().tail);
	g = lock_key(212, 402, XTX_OP_LOCK_EXCL);
	before = cursor();
	o = append_big(212, 402, 600, XTX_OPF_LOG_LAST | XTX_OPF_LOG_PRIMARY, g.token + 1);
	CHECK(g.status == XTX_ST_OK && o.status == XTX_ST_NOT_HELD && cursor().tail == before.tail,
	      "a stale grant: status %u, tail moved by %llu", o.status,
	      (unsigned long long)(cursor().tail - before.tail));
	o = append_big(212, 402, 600, XTX_OPF_LOG_LAST | XTX_OPF_LOG_PRIMARY, g.token);
	CHECK(o.status == XTX_ST_OK && cursor().tail == before.tail + xtx_logrec_entries(600),
	      "the grant proven: status %u", o.status);
	set_head(cursor().tail);
}

/* The shared reader finds a big write's damage: every case a wrong reader would replay. */
static void test_logrec_damage(void)
{
	static struct xtx_log_write w, got;
	struct xtx_log_entry e[XTX_LOGREC_MAX_ENTRIES], d[XTX_LOGREC_MAX_ENTRIES];
	struct xtx_log_ext x;
	struct xtx_logrec rec;
	const char *why = "";
	unsigned int i;
	int n;

	memset(&w, 0, sizeof(w));
	w.e.txn = 77;
	w.e.key = 5;
	w.e.version = 3;
	w.e.flags = XTX_LOGF_LAST;
	w.vlen = 1000;
	for (i = 0; i < w.vlen; i++)
		w.value[i] = big_byte(5, i);
	n = xtx_logrec_encode(&w, 50, e, XTX_LOGREC_MAX_ENTRIES);
	CHECK(n == 14 && (e[0].flags & XTX_LOGF_EXT) && !e[0].vlen && e[13].seq == 63 &&
	      xtx_logrec_span(&e[0]) == 14, "encoded as %d entries", n);
	CHECK(!xtx_logrec_decode(e, n, &got, &why) && got.vlen == 1000 &&
	      !memcmp(got.value, w.value, 1000) && got.e.key == 5 && got.e.seq == 50,
	      "decoded whole: %s", why);
	/* a continuation missing: the next entry is out of sequence */
	memcpy(d, e, sizeof(e));
	memmove(&d[5], &d[6], 8 * sizeof(d[0]));
	CHECK(xtx_logrec_decode(d, n - 1, &got, &why) == -EBADMSG && strstr(why, "sequence"),
	      "a missing continuation not found: %s", why);
	/* the log ends before the last continuation */
	CHECK(xtx_logrec_decode(e, n - 1, &got, &why) == -EBADMSG, "a cut-short write decoded");
	xtx_logrec_init(&rec);
	for (i = 0; i < (unsigned int)n - 1; i++)
		xtx_logrec_feed(&rec, &e[i]);
	CHECK(xtx_logrec_partial(&rec), "a cut-short write not seen as partial");
	/* two continuations swapped */
	memcpy(d, e, sizeof(e));
	d[3] = e[4];
	d[4] = e[3];
	CHECK(xtx_logrec_decode(d, n, &got, &why) == -EBADMSG, "swapped continuations decoded");
	/* bytes past the value's end */
	memcpy(d, e, sizeof(e));
	((uint8_t *)&d[13])[sizeof(__u64) + 1000 - 12 * XTX_LOG_CONT_BYTES] = 1;
	CHECK(xtx_logrec_decode(d, n, &got, &why) == -EBADMSG && strstr(why, "past"),
	      "bytes past the end accepted: %s", why);
	/* a head whose length is out of range, or names another txn */
	memcpy(d, e, sizeof(e));
	memcpy(&x, d[0].value, sizeof(x));
	x.len = XTX_VALUE_INLINE;
	memcpy(d[0].value, &x, sizeof(x));
	CHECK(xtx_logrec_decode(d, n, &got, &why) == -EBADMSG && xtx_logrec_span(&d[0]) == 1,
	      "a head of 40 bytes accepted");
	memcpy(d, e, sizeof(e));
	memcpy(&x, d[0].value, sizeof(x));
	x.txn = 78;
	memcpy(d[0].value, &x, sizeof(x));
	CHECK(xtx_logrec_decode(d, n, &got, &why) == -EBADMSG, "a head naming another txn");
	/* a small write is one entry, as before */
	w.vlen = 40;
	n = xtx_logrec_encode(&w, 70, e, 1);
	CHECK(n == 1 && !(e[0].flags & XTX_LOGF_EXT) && e[0].vlen == 40 &&
	      !xtx_logrec_decode(e, 1, &got, &why) && got.vlen == 40 &&
	      !memcmp(got.value, w.value, 40), "a 40-byte write: %d entries", n);
	w.vlen = 41;
	CHECK(xtx_logrec_encode(&w, 70, e, 1) == -EINVAL, "41 bytes encoded into one entry");
}

struct seen {
	struct xtx_log_entry e[256];
	size_t n, calls;
	bool cut;		/* a call began or ended inside a write */
};

static void seen_fn(const struct xtx_log_entry *e, size_t n, void *arg)
{
	struct seen *s = arg;

	s->cut |= xtx_logrec_whole(e, n) != n || xtx_logrec_span(&e[0]) > n;
	memcpy(&s->e[s->n], e, n * sizeof(*e));
	s->n += n;
	s->calls++;
}

/*
 * A reader of the ring (the drain) gets it in batches: one that ends inside
 * a big write (a batch's size, the ring's end) passes on whole writes only,
 * the cut one once its rest comes; a batch given again after a failed write
 * is not passed on twice; the reader frees nothing past a cut write's start.
 */
static void test_batch_splits_a_big_write(void)
{
	static struct xtx_logrec_batcher b;
	static struct seen s;
	static struct xtx_log_write w, got;
	struct xtx_log_entry log[64];
	const char *why = "";
	size_t n = 0, i;
	int k;

	memset(&w, 0, sizeof(w));
	/* small, big (14 entries), small, big (7), small */
	for (i = 0; i < 5; i++) {
		w.e.txn = 90 + i;
		w.e.key = i;
		w.vlen = i == 1 ? 1024 : i == 3 ? 500 : 8;
		memset(w.value, 0x40 + (int)i, w.vlen);
		k = xtx_logrec_encode(&w, n, &log[n], 64 - n);
		n += k > 0 ? (size_t)k : 0;
	}
	CHECK(n == 1 + 14 + 1 + 8 + 1, "%zu entries", n);
	xtx_logrec_batcher_init(&b, 0, NULL, 0);
	/* a batch ending inside the first big write (after its 5th entry) */
	xtx_logrec_batch(&b, log, 6, seen_fn, &s);
	CHECK(s.n == 1 && b.npart == 5 && xtx_logrec_batch_safe(&b, 6) == 1,
	      "first batch: %zu passed on, %u waiting, free up to %llu", s.n, b.npart,
	      (unsigned long long)xtx_logrec_batch_safe(&b, 6));
	/* given again from seq 3 (a failed write retried), then on to inside the second */
	xtx_logrec_batch(&b, &log[3], 17 - 3, seen_fn, &s);
	CHECK(s.n == 16 && b.npart == 1 && b.part[0].seq == 16,
	      "second batch: %zu passed on, %u waiting", s.n, b.npart);
	/* the ring's end: the rest in two runs */
	xtx_logrec_batch(&b, &log[17], 3, seen_fn, &s);
	xtx_logrec_batch(&b, &log[20], n - 20, seen_fn, &s);
	CHECK(s.n == n && !b.npart && !s.cut && xtx_logrec_batch_safe(&b, n) == n,
	      "every entry once, in whole writes: %zu of %zu, cut %d", s.n, n, s.cut);
	for (i = 0; i < n && s.e[i].seq == i; i++)
		;
	CHECK(i == n && !xtx_logrec_decode(&s.e[1], 14, &got, &why) && got.vlen == 1024 &&
	      got.value[1023] == 0x41, "in order and whole: %zu, %s", i, why);
}

/*
 * The resolver's record keeps a big write's value beside its head; a
 * decided big write goes to the overflow store only, the kernel's older
 * copy dropped.
 */
static void test_big_write_record_and_install(void)
{
	struct xtx_kv_bucket *kv = calloc(1, sizeof(*kv));
	struct xtxd_live l = { .kv = kv, .nbuckets = 1, .store = xtxd_ovf_new(1, 4) };
	static struct xtx_log_write w, got;
	static struct xtxd_ovf_item it;
	struct xtxd_txns t = {};
	struct xtxd_txn *x;
	struct xtx_log_entry e;
	uint16_t keeps;
	uint64_t v;

	rcu_register_thread();
	CHECK(kv && l.store, "setup");
	if (!kv || !l.store)
		goto out;
	memset(&w, 0, sizeof(w));
	w.e.txn = 500;
	w.e.key = 1;
	w.e.version = 6;
	w.e.nreplicas = 2;
	w.e.flags = XTX_LOGF_EXT | XTX_LOGF_LAST;
	w.vlen = 700;
	memset(w.value, 0x5a, 700);
	CHECK(!xtxd_txns_add(&t, &w, 1), "added");
	e = wr(2, 6, 0, 0x11);
	e.txn = 500;
	CHECK(!txns_add(&t, &e, 1), "added a small one");
	x = xtxd_txns_get(&t, 500, false, 0);
	xtxd_txn_write(x, 0, &got);
	CHECK(x && x->nw == 2 && got.vlen == 700 && got.value[699] == 0x5a && got.e.key == 1,
	      "the big write back whole: vlen %u", got.vlen);
	xtxd_txn_write(x, 1, &got);
	CHECK(got.vlen == 4 && got.value[0] == 0x11, "the small one: vlen %u", got.vlen);
	xtxd_txns_free(&t);

	/* what the store keeps of a value is the store's business: the install hands it whole */
	memset(&it, 0, sizeof(it));
	it.key = 99;
	it.version = 1;
	it.vlen = XTX_VALUE_MAX;
	xtxd_ovf_put(l.store, &it);
	xtxd_ovf_get(l.store, 0, 99, &it);
	keeps = it.vlen < 700 ? it.vlen : 700;
	xtxd_ovf_del(l.store, 0, 99, UINT64_MAX, NULL);
	e = wr(1, 5, 0, 0xa1);
	CHECK(live_install(&l, &e) == 1 && kv->flags[0] & XTX_KVF_VALID, "a small one in a way");
	CHECK(xtxd_live_install(&l, &w) == 1 && !(kv->flags[0] & (XTX_KVF_VALID | XTX_KVF_TOMB)) &&
	      !xtxd_ovf_get(l.store, 0, 1, &it) && it.vlen == keeps && it.version == 6 &&
	      it.value[keeps - 1] == 0x5a &&
	      (kv->bloom & (1ull << xtx_bloom_bit_of(xtx_hash(0, 1)))),
	      "the big one: in the store (%u of 700 bytes kept), the kernel's way free, flags %#x",
	      it.vlen, kv->flags[0]);
	CHECK(xtxd_live_version(&l, 0, 1, &v) == 1 && v == 6, "version %llu", (unsigned long long)v);
	w.e.key = 3;
	CHECK(xtxd_live_install(&l, &w) == 1 && !(kv->flags[0] & XTX_KVF_VALID) &&
	      !xtxd_ovf_get(l.store, 0, 3, &it) && it.vlen == keeps,
	      "a new big key goes to the store, never a free way");
	CHECK(!kv->lock, "bucket lock let go");
	/*
	 * A kernel copy a big write is evicting: the store may be newer than
	 * it, so nothing is written over it (it would be served, and written
	 * back, over the big write) until TC frees it
	 */
	e = wr(4, 5, 0, 0xb1);
	CHECK(live_install(&l, &e) == 1 && kv->flags[0] & XTX_KVF_VALID, "key 4 in a way");
	kv->flags[0] |= XTX_KVF_EVICTING;
	e = wr(4, 7, 0, 0xb2);
	CHECK(live_install(&l, &e) == -EAGAIN && kv->version[0] == 5 && kv->value[0][0] == 0xb1 &&
	      (kv->flags[0] & XTX_KVF_EVICTING) && !kv->lock,
	      "a decided write to an evicting copy waits (version %llu, flags %#x)",
	      (unsigned long long)kv->version[0], kv->flags[0]);
	kv->flags[0] = 0;
	CHECK(live_install(&l, &e) == 1, "once TC has freed the way, it goes in");
out:
	if (l.store)
		xtxd_ovf_free(l.store);
	free(kv);
	rcu_unregister_thread();
}

int main(void)
{
	cpu_set_t cpu0;

	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	sched_setaffinity(0, sizeof(cpu0), &cpu0);
	xtx_log_libbpf();
	test_log_ring = RING;
	skel = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
	if (!skel) {
		printf("FAIL: load_server (%s)\n", strerror(errno));
		return 1;
	}
	RUN_CASE(test_append_writes_an_entry);
	RUN_CASE(test_full_then_wrap);
	RUN_CASE(test_duplicate_appends_once);
	RUN_CASE(test_logged_lock_not_reclaimed);
	RUN_CASE(test_primary_append_proves_grant);
	RUN_CASE(test_append_needs_own_txn);
	RUN_CASE(test_fenced_txn_refused);
	RUN_CASE(test_append_placement);
	RUN_CASE(test_meta_participants);
	RUN_CASE(test_decide_rule);
	RUN_CASE(test_txn_table);
	RUN_CASE(test_resolver_frees_logged_lock);
	RUN_CASE(test_resolver_unlock_keeps_others);
	RUN_CASE(test_resolver_installs_decided_writes);
	RUN_CASE(test_big_append_whole);
	RUN_CASE(test_big_append_all_or_nothing);
	RUN_CASE(test_logrec_damage);
	RUN_CASE(test_batch_splits_a_big_write);
	RUN_CASE(test_big_write_record_and_install);
	xtx_xdp__destroy(skel);
	printf("# test_log: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
