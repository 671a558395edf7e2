// SPDX-License-Identifier: GPL-2.0-only
/* BPF_PROG_TEST_RUN tables for transaction ops: fused lock+read, validate, commits, abort. */
/* checks: 9 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include <xtx/hash.h>
#include <xtx/kv.h>
#include "check.h"
#include "harness.h"
#include "log.h"

#define CLIENT 4
#define TXN(n) xtx_txn_make(CLIENT, (n))

static __u64 next_req = 9000;

struct txop {
	__u8 opcode;
	__u64 key;
	__u64 txn;
	__u64 version;
	__u64 token;
	__u32 flags;
	__u8 fill;	/* value bytes (8 of them), 0: no value */
};

static struct xtx_op txn_do(const struct txop *t, __u64 req)
{
	struct run r;

	make_req(&r, CLIENT, req, 1, t->opcode);
	in_op(&r, 0)->key = t->key;
	in_op(&r, 0)->txn = t->txn;
	in_op(&r, 0)->version = t->version;
	in_op(&r, 0)->token = t->token;
	in_op(&r, 0)->flags = t->flags;
	in_op(&r, 0)->vlen = t->fill ? 8 : 0;
	memset(in_op(&r, 0)->value, t->fill, t->fill ? 8 : 0);
	run(&r);
	CHECK(r.retval == XDP_TX, "verdict %d for op %u", r.retval, t->opcode);
	return *out_op(&r, 0);
}

static struct xtx_op op1(__u8 opcode, __u64 key, __u64 txn, __u64 version, __u64 token,
			 __u32 flags, __u8 fill)
{
	struct txop t = { opcode, key, txn, version, token, flags, fill };

	return txn_do(&t, next_req++);
}

static void kv_insert(__u64 key, __u8 fill)
{
	struct xtx_op o = op1(XTX_OP_INSERT, key, 0, 0, 0, 0, fill);

	CHECK(o.status == XTX_ST_OK, "insert %llu: %u", (unsigned long long)key, o.status);
}

/* Xenic's fused execute: the grant carries value and version. */
static void test_lock_returns_value(void)
{
	struct xtx_op o;

	kv_insert(1, 0x11);
	o = op1(XTX_OP_OCC_LOCK, 1, TXN(1), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK && o.version == 1 && o.vlen == 8 && o.value[0] == 0x11 &&
	      !(o.flags & XTX_TXF_ABSENT), "OCC_LOCK: status %u version %llu vlen %u", o.status,
	      (unsigned long long)o.version, o.vlen);
	op1(XTX_OP_OCC_UNLOCK, 1, TXN(1), 0, o.token, 0, 0);
	o = op1(XTX_OP_LOCK_SHARED, 1, TXN(2), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK && o.value[7] == 0x11 && o.version == 1, "2PL shared + value");
	op1(XTX_OP_UNLOCK_SHARED, 1, TXN(2), 0, o.token, 0, 0);
	o = op1(XTX_OP_LOCK_EXCL, 1, TXN(3), 0, 0, XTX_OPF_NO_VALUE, 0);
	CHECK(o.status == XTX_ST_OK && o.vlen == 0, "NO_VALUE grant read the value");
	op1(XTX_OP_UNLOCK_EXCL, 1, TXN(3), 0, o.token, 0, 0);
	/* an absent key is lockable: the reply says so and gives the base version */
	o = op1(XTX_OP_LOCK_EXCL, 2, TXN(4), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK && (o.flags & XTX_TXF_ABSENT), "absent key: flags %#x",
	      o.flags);
	op1(XTX_OP_UNLOCK_EXCL, 2, TXN(4), 0, o.token, 0, 0);
}

static void test_read_reports_lock_state(void)
{
	struct xtx_op o, l;

	kv_insert(10, 0x22);
	o = op1(XTX_OP_READ, 10, TXN(10), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK && o.value[0] == 0x22 && !(o.flags & XTX_LOCKF_EXCL), "READ");
	l = op1(XTX_OP_OCC_LOCK, 10, TXN(11), 0, 0, 0, 0);
	o = op1(XTX_OP_READ, 10, TXN(10), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK && (o.flags & XTX_LOCKF_EXCL) && !(o.flags & XTX_LOCKF_MINE),
	      "READ of a locked key: flags %#x", o.flags);
	op1(XTX_OP_OCC_UNLOCK, 10, TXN(11), 0, l.token, 0, 0);
	o = op1(XTX_OP_READ, 11, TXN(10), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_NOT_FOUND, "READ of a missing key: %u", o.status);
}

static void test_validate(void)
{
	struct xtx_op o, l;

	kv_insert(20, 1);
	o = op1(XTX_OP_OCC_VALIDATE, 20, TXN(20), 1, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK, "unchanged: %u", o.status);
	o = op1(XTX_OP_OCC_VALIDATE, 20, TXN(20), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_CHANGED && o.version == 1, "changed: %u", o.status);
	l = op1(XTX_OP_OCC_LOCK, 20, TXN(21), 0, 0, 0, 0);
	o = op1(XTX_OP_OCC_VALIDATE, 20, TXN(20), 1, 0, 0, 0);
	CHECK(o.status == XTX_ST_LOCKED && !(o.flags & XTX_LOCKF_MINE), "locked by another: %u",
	      o.status);
	o = op1(XTX_OP_OCC_VALIDATE, 20, TXN(21), 1, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK && (o.flags & XTX_LOCKF_MINE), "locked by me: %u", o.status);
	op1(XTX_OP_OCC_UNLOCK, 20, TXN(21), 0, l.token, 0, 0);
}

/* FaRM order: backups first, then the primary installs, bumps and unlocks. */
static void test_commit_backup_then_primary(void)
{
	struct xtx_op l, o;

	kv_insert(30, 1);
	l = op1(XTX_OP_OCC_LOCK, 30, TXN(30), 0, 0, 0, 0);
	CHECK(l.version == 1, "lock read version %llu", (unsigned long long)l.version);

	/* this server as a backup of another key */
	o = op1(XTX_OP_COMMIT_BACKUP, 31, TXN(30), 5, 0, 0, 0x55);
	CHECK(o.status == XTX_ST_OK && o.version == 5, "backup install: %u", o.status);
	o = op1(XTX_OP_COMMIT_BACKUP, 31, TXN(30), 5, 0, 0, 0x55);
	CHECK(o.status == XTX_ST_ALREADY_APPLIED, "backup again: %u", o.status);
	o = op1(XTX_OP_COMMIT_BACKUP, 31, TXN(30), 4, 0, 0, 0x44);
	CHECK(o.status == XTX_ST_ALREADY_APPLIED, "older backup: %u", o.status);
	o = op1(XTX_OP_GET, 31, 0, 0, 0, 0, 0);
	CHECK(o.version == 5 && o.value[0] == 0x55, "backup content");

	o = op1(XTX_OP_COMMIT_PRIMARY, 30, TXN(30), l.version, l.token, 0, 0x66);
	CHECK(o.status == XTX_ST_OK && o.version == 2, "primary: %u v%llu", o.status,
	      (unsigned long long)o.version);
	o = op1(XTX_OP_GET, 30, 0, 0, 0, 0, 0);
	CHECK(o.version == 2 && o.value[0] == 0x66, "primary content");
	o = op1(XTX_OP_OCC_LOCK, 30, TXN(31), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK, "the commit released the lock: %u", o.status);
	op1(XTX_OP_OCC_UNLOCK, 30, TXN(31), 0, o.token, 0, 0);

	/* a retransmission in a new request (its record gone) changes nothing */
	o = op1(XTX_OP_COMMIT_PRIMARY, 30, TXN(30), l.version, l.token, 0, 0x77);
	CHECK(o.status == XTX_ST_ALREADY_APPLIED, "primary again: %u", o.status);
	o = op1(XTX_OP_GET, 30, 0, 0, 0, 0, 0);
	CHECK(o.version == 2 && o.value[0] == 0x66, "primary applied twice");
	o = op1(XTX_OP_COMMIT_PRIMARY, 30, TXN(32), 7, 0, 0, 0x77);
	CHECK(o.status == XTX_ST_CHANGED, "wrong expected version: %u", o.status);
}

/* A duplicate commit request answers from the dedupe record. */
static void test_commit_duplicate(void)
{
	struct txop t = { XTX_OP_COMMIT_BACKUP, 40, TXN(40), 3, 0, 0, 0x33 };
	__u64 req = next_req++;
	struct xtx_op a, b;

	a = txn_do(&t, req);
	b = txn_do(&t, req);
	CHECK(a.status == XTX_ST_OK && b.status == XTX_ST_OK && b.version == 3,
	      "duplicate answered %u (first %u)", b.status, a.status);
}

static void test_commit_inserts_and_deletes(void)
{
	struct xtx_op l, o;

	/* create: lock the absent key, commit at the base it reported */
	l = op1(XTX_OP_OCC_LOCK, 50, TXN(50), 0, 0, 0, 0);
	CHECK(l.flags & XTX_TXF_ABSENT, "absent");
	o = op1(XTX_OP_COMMIT_PRIMARY, 50, TXN(50), l.version, l.token, 0, 0x50);
	CHECK(o.status == XTX_ST_OK && o.version == l.version + 1, "create: %u", o.status);
	o = op1(XTX_OP_GET, 50, 0, 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK && o.value[0] == 0x50, "created");

	/* delete at the primary */
	l = op1(XTX_OP_OCC_LOCK, 50, TXN(51), 0, 0, 0, 0);
	o = op1(XTX_OP_COMMIT_PRIMARY, 50, TXN(51), l.version, l.token, XTX_OPF_DELETE, 0);
	CHECK(o.status == XTX_ST_OK && o.version == l.version + 1, "delete: %u", o.status);
	o = op1(XTX_OP_GET, 50, 0, 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_NOT_FOUND, "deleted");
	l = op1(XTX_OP_OCC_LOCK, 50, TXN(52), 0, 0, 0, 0);
	CHECK((l.flags & XTX_TXF_ABSENT) && l.version >= o.version,
	      "re-created key must start above the deleted version (%llu)",
	      (unsigned long long)l.version);
	op1(XTX_OP_OCC_UNLOCK, 50, TXN(52), 0, l.token, 0, 0);

	/* delete at a backup */
	op1(XTX_OP_COMMIT_BACKUP, 51, TXN(53), 2, 0, 0, 0x51);
	o = op1(XTX_OP_COMMIT_BACKUP, 51, TXN(53), 3, 0, XTX_OPF_DELETE, 0);
	CHECK(o.status == XTX_ST_OK, "backup delete: %u", o.status);
	o = op1(XTX_OP_GET, 51, 0, 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_NOT_FOUND, "backup deleted");
}

/* Abort releases: the next transaction gets the lock. */
static void test_abort(void)
{
	struct xtx_op l, o;

	kv_insert(60, 6);
	l = op1(XTX_OP_LOCK_EXCL, 60, TXN(60), 0, 0, 0, 0);
	o = op1(XTX_OP_LOCK_EXCL, 60, TXN(61), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_REJECTED, "held");
	op1(XTX_OP_UNLOCK_EXCL, 60, TXN(60), 0, l.token, 0, 0);
	o = op1(XTX_OP_LOCK_EXCL, 60, TXN(61), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK && o.value[0] == 6, "after abort");
	op1(XTX_OP_UNLOCK_EXCL, 60, TXN(61), 0, o.token, 0, 0);
}

/* A grant whose value cannot be read now is undone, so a resend never nests. */
static void test_grant_undone_when_bucket_busy(void)
{
	__u32 bidx = xtx_bucket_of(xtx_hash(0, 70), test_kv_buckets);
	struct xtx_kv_bucket b;
	struct xtx_op o;

	kv_insert(70, 7);
	bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_kv), &bidx, &b);
	b.lock = XTX_KV_LOCK_FAST;	/* another CPU mid-op */
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_kv), &bidx, &b, 0);
	o = op1(XTX_OP_LOCK_EXCL, 70, TXN(70), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_RETRY, "busy bucket: %u", o.status);
	b.lock = 0;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_kv), &bidx, &b, 0);
	o = op1(XTX_OP_LOCK_EXCL, 70, TXN(71), 0, 0, 0, 0);
	CHECK(o.status == XTX_ST_OK, "the undone grant still holds the lock: %u", o.status);
	op1(XTX_OP_UNLOCK_EXCL, 70, TXN(71), 0, o.token, 0, 0);
}

static void test_commit_needs_txn(void)
{
	struct xtx_op o = op1(XTX_OP_COMMIT_PRIMARY, 80, 0, 0, 0, 0, 1);

	CHECK(o.status == XTX_ST_BAD_TXN, "commit without a transaction: %u", o.status);
}

int main(void)
{
	xtx_log_libbpf();
	skel = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
	if (!skel) {
		printf("FAIL: load_server (%s)\n", strerror(errno));
		return 1;
	}
	RUN_CASE(test_lock_returns_value);
	RUN_CASE(test_read_reports_lock_state);
	RUN_CASE(test_validate);
	RUN_CASE(test_commit_backup_then_primary);
	RUN_CASE(test_commit_duplicate);
	RUN_CASE(test_commit_inserts_and_deletes);
	RUN_CASE(test_abort);
	RUN_CASE(test_grant_undone_when_bucket_busy);
	RUN_CASE(test_commit_needs_txn);
	xtx_xdp__destroy(skel);
	printf("# test_txn: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
