// SPDX-License-Identifier: GPL-2.0-only
/* xtxd's overflow store and rare-path executor, run on hand-built requests without sockets. */
/* checks: 29 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <urcu.h>
#include <bpf/bpf.h>
#include <xtx/hash.h>
#include <xtx/kv.h>
#include <xtx/maps.h>
#include <xtx/proto.h>
#include "check.h"
#include "rare/rare_exec.h"
#include "store/valstore.h"

/* This suite loads no BPF program, so it does without harness.o and defines these itself. */
int check_failed, cases_passed, cases_failed;

static uint64_t rng = 0x1234567;
/* The run's seed: new each run, printed; XTX_FUZZ_SEED=S replays it. */
static uint64_t run_seed;

static uint64_t rnd(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return xtx_mix64(rng);
}

/* ---- store helpers: the store wants its bucket lock held for changes ---- */

static struct xtxd_ovf_item item(uint8_t table, uint64_t key, uint64_t version, uint8_t fillc)
{
	struct xtxd_ovf_item it = { .key = key, .version = version, .table = table, .vlen = 8 };

	memset(it.value, fillc, it.vlen);
	return it;
}

static int put(struct xtxd_ovf *s, struct xtxd_ovf_item it)
{
	uint32_t b = xtxd_ovf_bucket_of(s, it.table, it.key);
	int ret;

	xtxd_ovf_lock(s, b);
	ret = xtxd_ovf_put(s, &it);
	xtxd_ovf_unlock(s, b);
	return ret;
}

static int del(struct xtxd_ovf *s, uint8_t table, uint64_t key, uint64_t below)
{
	uint32_t b = xtxd_ovf_bucket_of(s, table, key);
	int ret;

	xtxd_ovf_lock(s, b);
	ret = xtxd_ovf_del(s, table, key, below, NULL);
	xtxd_ovf_unlock(s, b);
	return ret;
}

static uint64_t bloom(struct xtxd_ovf *s, uint32_t bucket)
{
	uint64_t bl;

	xtxd_ovf_lock(s, bucket);
	bl = xtxd_ovf_bloom(s, bucket);
	xtxd_ovf_unlock(s, bucket);
	return bl;
}

static uint64_t bit_of(uint8_t table, uint64_t key)
{
	return 1ull << xtx_bloom_bit_of(xtx_hash(table, key));
}

/* The filters recomputed from what foreach sees. */
struct recompute {
	struct xtxd_ovf *s;
	uint64_t *bloom;
	uint64_t n;
};

static int recompute_one(const struct xtxd_ovf_item *it, void *arg)
{
	struct recompute *r = arg;

	r->bloom[xtxd_ovf_bucket_of(r->s, it->table, it->key)] |= bit_of(it->table, it->key);
	r->n++;
	return 0;
}

/* Every bucket's filter equals the brute-force one, and count matches the items. */
static void check_filters_exact(struct xtxd_ovf *s)
{
	uint32_t nb = xtxd_ovf_nbuckets(s), b;
	struct recompute r = { .s = s, .bloom = calloc(nb, sizeof(uint64_t)) };

	xtxd_ovf_foreach(s, recompute_one, &r);
	CHECK(r.n == xtxd_ovf_count(s), "foreach saw %llu items, count says %llu",
	      (unsigned long long)r.n, (unsigned long long)xtxd_ovf_count(s));
	for (b = 0; b < nb; b++)
		CHECK(bloom(s, b) == r.bloom[b], "bucket %u filter %#llx, recomputed %#llx", b,
		      (unsigned long long)bloom(s, b), (unsigned long long)r.bloom[b]);
	free(r.bloom);
}

/* ---- store cases ---- */

static void store_put_if_newer(void)
{
	struct xtxd_ovf *s = xtxd_ovf_new(16, 100);
	struct xtxd_ovf_item got;

	CHECK(xtxd_ovf_get(s, 1, 42, &got) == -ENOENT, "empty store has the key");
	CHECK(put(s, item(1, 42, 5, 0xaa)) == 1, "first put not stored");
	CHECK(put(s, item(1, 42, 3, 0xbb)) == 0, "older put not ignored");
	CHECK(!xtxd_ovf_get(s, 1, 42, &got) && got.version == 5 && got.value[0] == 0xaa,
	      "older put changed the item: version %llu", (unsigned long long)got.version);
	CHECK(put(s, item(1, 42, 5, 0xaa)) == 1, "a repeated write-back is not applied");
	CHECK(put(s, item(1, 42, 7, 0xcc)) == 1, "newer put not stored");
	CHECK(!xtxd_ovf_get(s, 1, 42, &got) && got.version == 7 && got.value[7] == 0xcc &&
	      got.vlen == 8 && got.value[8] == 0, "newer put not visible");
	/* the same key in another table is another item */
	CHECK(xtxd_ovf_get(s, 2, 42, &got) == -ENOENT, "table is not part of the key");
	CHECK(xtxd_ovf_count(s) == 1, "count %llu", (unsigned long long)xtxd_ovf_count(s));
	xtxd_ovf_free(s);
}

static void store_delete(void)
{
	struct xtxd_ovf *s = xtxd_ovf_new(16, 100);
	struct xtxd_ovf_item got;
	uint32_t b = xtxd_ovf_bucket_of(s, 3, 9);

	put(s, item(3, 9, 10, 1));
	CHECK(del(s, 3, 9, 10) == 0, "delete below the stored version removed it");
	CHECK(del(s, 3, 9, 5) == 0, "delete below an older version removed it");
	CHECK(!xtxd_ovf_get(s, 3, 9, &got), "a refused delete lost the key");
	CHECK(bloom(s, b) == bit_of(3, 9), "filter %#llx", (unsigned long long)bloom(s, b));
	CHECK(del(s, 3, 9, 11) == 1, "delete of an older version refused");
	CHECK(xtxd_ovf_get(s, 3, 9, &got) == -ENOENT, "deleted key still there");
	CHECK(del(s, 3, 9, UINT64_MAX) == 0, "second delete removed something");
	CHECK(xtxd_ovf_count(s) == 0 && bloom(s, b) == 0, "count %llu filter %#llx",
	      (unsigned long long)xtxd_ovf_count(s), (unsigned long long)bloom(s, b));
	xtxd_ovf_free(s);
}

static void store_full(void)
{
	struct xtxd_ovf *s = xtxd_ovf_new(1, 3);
	struct xtxd_ovf_item got;
	uint64_t before;

	CHECK(put(s, item(0, 1, 1, 1)) == 1 && put(s, item(0, 2, 1, 2)) == 1 &&
	      put(s, item(0, 3, 1, 3)) == 1, "three keys do not fit a store of three");
	before = bloom(s, 0);
	CHECK(put(s, item(0, 4, 1, 4)) == -ENOSPC, "a fourth key was not refused");
	CHECK(xtxd_ovf_count(s) == 3, "count %llu after FULL",
	      (unsigned long long)xtxd_ovf_count(s));
	CHECK(xtxd_ovf_get(s, 0, 4, &got) == -ENOENT, "the refused key is there");
	CHECK(bloom(s, 0) == before, "FULL changed the filter");
	CHECK(put(s, item(0, 2, 2, 9)) == 1, "an update at the limit was refused");
	CHECK(!xtxd_ovf_get(s, 0, 2, &got) && got.version == 2, "update at the limit lost");
	del(s, 0, 1, UINT64_MAX);
	CHECK(put(s, item(0, 4, 1, 4)) == 1, "no room after a delete");
	check_filters_exact(s);
	xtxd_ovf_free(s);
}

static void bloom_counts(void)
{
	struct xtxd_ovf *s = xtxd_ovf_new(1, 100);
	uint64_t k1 = 1, k2 = 2, k3;

	/* two keys sharing a filter bit, and a third on another bit */
	while (bit_of(0, k2) != bit_of(0, k1))
		k2++;
	for (k3 = k2 + 1; bit_of(0, k3) == bit_of(0, k1); k3++)
		;
	put(s, item(0, k1, 1, 0));
	put(s, item(0, k2, 1, 0));
	put(s, item(0, k3, 1, 0));
	CHECK(bloom(s, 0) == (bit_of(0, k1) | bit_of(0, k3)), "filter %#llx",
	      (unsigned long long)bloom(s, 0));
	del(s, 0, k1, UINT64_MAX);
	CHECK(bloom(s, 0) == (bit_of(0, k1) | bit_of(0, k3)),
	      "bit cleared while another key still has it");
	del(s, 0, k3, UINT64_MAX);
	CHECK(bloom(s, 0) == bit_of(0, k2), "bit of the last key not cleared: %#llx",
	      (unsigned long long)bloom(s, 0));
	del(s, 0, k2, UINT64_MAX);
	CHECK(bloom(s, 0) == 0, "empty bucket has filter %#llx", (unsigned long long)bloom(s, 0));
	xtxd_ovf_free(s);
}

/* Random puts and deletes against a model; the filters must always be exact. */
static void bloom_random_exact(void)
{
	enum { TABLES = 3, KEYS = 150, NB = 8, STEPS = 30000, MAX = 200 };
	static uint64_t ver[TABLES][KEYS];	/* 0: absent */
	struct xtxd_ovf *s = xtxd_ovf_new(NB, MAX);
	struct xtxd_ovf_item got;
	uint64_t model_n = 0;
	int i, t, k, ret, bad = 0;

	memset(ver, 0, sizeof(ver));
	for (i = 0; i < STEPS && !bad; i++) {
		uint64_t v = 1 + rnd() % 20, want = 0;
		uint32_t b;

		t = rnd() % TABLES;
		k = rnd() % KEYS;
		b = xtxd_ovf_bucket_of(s, t, k);
		if (rnd() % 3) {
			ret = put(s, item(t, k, v, (uint8_t)v));
			if (ver[t][k] && v >= ver[t][k]) {
				CHECK(ret == 1, "step %d: put over v%llu of v%llu: %d", i,
				      (unsigned long long)ver[t][k], (unsigned long long)v, ret);
				ver[t][k] = v;
			} else if (ver[t][k]) {
				CHECK(ret == 0, "step %d: older put answered %d", i, ret);
			} else if (model_n < MAX) {
				CHECK(ret == 1, "step %d: new put answered %d", i, ret);
				ver[t][k] = v;
				model_n++;
			} else {
				CHECK(ret == -ENOSPC, "step %d: put into a full store: %d", i, ret);
			}
		} else {
			ret = del(s, t, k, v);
			CHECK(ret == (ver[t][k] && ver[t][k] < v), "step %d: delete answered %d", i,
			      ret);
			if (ver[t][k] && ver[t][k] < v) {
				ver[t][k] = 0;
				model_n--;
			}
		}
		for (t = 0; t < TABLES; t++)
			for (k = 0; k < KEYS; k++)
				if (ver[t][k] && xtxd_ovf_bucket_of(s, t, k) == b)
					want |= bit_of(t, k);
		if (bloom(s, b) != want) {
			CHECK(0, "step %d: bucket %u filter %#llx, brute force %#llx", i, b,
			      (unsigned long long)bloom(s, b), (unsigned long long)want);
			bad = 1;
		}
		if (xtxd_ovf_count(s) != model_n) {
			CHECK(0, "step %d: count %llu, model %llu", i,
			      (unsigned long long)xtxd_ovf_count(s), (unsigned long long)model_n);
			bad = 1;
		}
	}
	for (t = 0; t < TABLES; t++)
		for (k = 0; k < KEYS; k++) {
			ret = xtxd_ovf_get(s, t, k, &got);
			CHECK(ver[t][k] ? !ret && got.version == ver[t][k] : ret == -ENOENT,
			      "table %d key %d: model v%llu, store %d v%llu", t, k,
			      (unsigned long long)ver[t][k], ret, (unsigned long long)got.version);
		}
	check_filters_exact(s);
	xtxd_ovf_free(s);
}

struct hammer {
	struct xtxd_ovf *s;
	uint64_t seed;
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	uint64_t x = h->seed;
	int i;

	rcu_register_thread();
	for (i = 0; i < 1000000; i++) {
		uint64_t r = xtx_mix64(x++);
		uint8_t t = r % 4;
		uint64_t k = (r >> 8) % 500, v = 1 + ((r >> 20) % 50);
		struct xtxd_ovf_item got;

		if ((r >> 40) % 3)
			put(h->s, item(t, k, v, (uint8_t)k));
		else if ((r >> 40) % 3 == 1)
			xtxd_ovf_get(h->s, t, k, &got);
		else
			del(h->s, t, k, v);
		if (!((r >> 44) % 8))
			del(h->s, t, k, UINT64_MAX);
	}
	rcu_unregister_thread();
	return NULL;
}

/* Threads racing on the same keys: afterwards, filters and count still agree with the items. */
static void store_concurrent(void)
{
	struct xtxd_ovf *s = xtxd_ovf_new(32, 1500);
	struct hammer h[3];
	pthread_t tid[3];
	int i;

	for (i = 0; i < 3; i++) {
		h[i] = (struct hammer){ .s = s, .seed = 1000003ull * (i + 1) };
		pthread_create(&tid[i], NULL, hammer_main, &h[i]);
	}
	for (i = 0; i < 3; i++)
		pthread_join(tid[i], NULL);
	CHECK(xtxd_ovf_count(s) <= 1500, "count %llu over the limit",
	      (unsigned long long)xtxd_ovf_count(s));
	check_filters_exact(s);
	xtxd_ovf_free(s);
}

/* ---- executor: hand-built requests as XDP would pass them ---- */

#define NB	64

struct req {
	uint8_t buf[2048] __attribute__((aligned(8)));
	int nops;
	struct xtx_defer_trailer dt;
	size_t len;
	size_t body_len;	/* 0: header and ops only; else with the value area */
};

/* A reply's fixes, read from its end: the entries and the footer's fields. */
struct fixes {
	uint32_t magic;
	uint8_t count;
	uint16_t body_len;
	struct xtx_fix_entry e[XTX_MAX_DEFERRED];
};

struct reply {
	uint8_t buf[2048] __attribute__((aligned(8)));
	int len;
	struct fixes ft;
};

static struct xtxd_exec x;

static void exec_setup(uint64_t max)
{
	memset(&x, 0, sizeof(x));
	x.store = xtxd_ovf_new(NB, max);
	x.replay = xtxd_replay_new(XTXD_REPLAY_ENTRIES);
}

static void exec_teardown(void)
{
	xtxd_ovf_free(x.store);
	xtxd_replay_free(x.replay);
	memset(&x, 0, sizeof(x));
}

static struct xtx_op *op_at(uint8_t *buf, int i)
{
	return (struct xtx_op *)(buf + sizeof(struct xtx_hdr) + i * sizeof(struct xtx_op));
}

static struct xtx_hdr *hdr_of(uint8_t *buf)
{
	return (struct xtx_hdr *)buf;
}

/* nops ops; op i is a PING "XDP already answered" until req_defer makes it a KV op. */
static void req_init(struct req *r, uint32_t client, uint64_t req_id, int nops)
{
	struct xtx_hdr *h = hdr_of(r->buf);
	int i;

	memset(r, 0, sizeof(*r));
	r->nops = nops;
	h->magic = XTX_MAGIC;
	h->version = XTX_VERSION;
	h->nops = nops;
	h->status = XTX_ST_NONE;
	h->client_id = client;
	h->req_id = req_id;
	for (i = 0; i < nops; i++) {
		struct xtx_op *op = op_at(r->buf, i);

		op->opcode = XTX_OP_PING;
		op->status = XTX_ST_OK;
		op->version = 0x1111 * (i + 1);
		op->value[0] = 0x5a;
	}
	r->dt.magic = XTX_DEFER_MAGIC;
}

static struct xtx_defer_entry *req_defer(struct req *r, int idx, uint8_t opcode, uint8_t table,
					 uint64_t key, uint8_t valc)
{
	struct xtx_op *op = op_at(r->buf, idx);
	struct xtx_defer_entry *e = &r->dt.e[r->dt.count++];

	memset(op, 0, sizeof(*op));
	op->opcode = opcode;
	op->status = XTX_ST_DEFERRED;
	op->table = table;
	op->key = key;
	op->txn = xtx_txn_make(hdr_of(r->buf)->client_id, 1);
	if (opcode == XTX_OP_INSERT || opcode == XTX_OP_UPDATE) {
		op->vlen = 8;
		memset(op->value, valc, 8);
	}
	memset(e, 0, sizeof(*e));
	e->op_idx = idx;
	e->fill_way = opcode == XTX_OP_DELETE ? XTX_KV_NO_WAY : 2;
	e->victim_way = XTX_KV_NO_WAY;
	e->bucket = xtx_bucket_of(xtx_hash(table, key), NB);
	e->token = 0xabc0001 + 2 * idx;
	return e;
}

static void set_victim(struct xtx_defer_entry *e, uint8_t table, uint64_t key, uint64_t version,
		       uint8_t flags, uint8_t valc)
{
	e->flags |= XTX_DEFER_HAS_VICTIM;
	e->victim_way = 1;
	e->victim.key = key;
	e->victim.table = table;
	e->victim.version = version;
	e->victim.flags = flags;
	e->victim.vlen = flags & XTX_KVF_TOMB ? 0 : 8;
	memset(e->victim.value, valc, e->victim.vlen);
}

static size_t req_finish(struct req *r)
{
	size_t off = r->body_len ? r->body_len :
				   sizeof(struct xtx_hdr) + r->nops * sizeof(struct xtx_op);
	size_t tl = offsetof(struct xtx_defer_trailer, e) + r->dt.count * sizeof(r->dt.e[0]);

	memcpy(r->buf + off, &r->dt, tl);
	r->len = off + tl;
	return r->len;
}

static int run(struct req *r, struct reply *rep)
{
	size_t off = r->body_len ? r->body_len :
				   sizeof(struct xtx_hdr) + r->nops * sizeof(struct xtx_op);
	struct xtx_fix_footer ff;

	if (!r->len)
		req_finish(r);
	memset(rep, 0, sizeof(*rep));
	rep->len = xtxd_exec_packet(&x, r->buf, r->len, rep->buf, sizeof(rep->buf));
	if (rep->len > 0) {
		CHECK((size_t)rep->len == off + XTX_FIX_TRAILER_LEN(r->dt.count),
		      "reply length %d", rep->len);
		memcpy(&ff, rep->buf + rep->len - sizeof(ff), sizeof(ff));
		rep->ft.magic = ff.magic;
		rep->ft.count = ff.count;
		rep->ft.body_len = ff.body_len;
		memcpy(rep->ft.e, rep->buf + off, r->dt.count * sizeof(struct xtx_fix_entry));
		CHECK(ff.magic == XTX_FIX_MAGIC && ff.count == r->dt.count && ff.body_len == off,
		      "fix footer magic %#x count %u body %u", ff.magic, ff.count, ff.body_len);
		CHECK(hdr_of(rep->buf)->flags & XTX_F_REPLY, "reply flag not set");
	}
	return rep->len;
}

static struct xtx_op *rop(struct reply *rep, int i)
{
	return op_at(rep->buf, i);
}

static void seed(uint8_t table, uint64_t key, uint64_t version, uint8_t valc)
{
	CHECK(put(x.store, item(table, key, version, valc)) == 1, "seeding the store");
}

/* A second key of the same bucket as (table, key), with another filter bit. */
static uint64_t neighbour(uint8_t table, uint64_t key)
{
	uint32_t b = xtx_bucket_of(xtx_hash(table, key), NB);
	uint64_t k;

	for (k = key + 1;; k++)
		if (xtx_bucket_of(xtx_hash(table, k), NB) == b &&
		    bit_of(table, k) != bit_of(table, key))
			return k;
}

static void exec_get(void)
{
	struct req r;
	struct reply rep;
	struct xtx_op before;
	uint32_t b;

	exec_setup(100);
	seed(1, 77, 10, 0xee);
	b = xtxd_ovf_bucket_of(x.store, 1, 77);
	req_init(&r, 5, 1000, 3);
	req_defer(&r, 1, XTX_OP_GET, 1, 77, 0);
	req_defer(&r, 2, XTX_OP_GET, 1, 78, 0)->fill_way = 0;
	before = *op_at(r.buf, 0);
	CHECK(run(&r, &rep) > 0, "dropped: %d", rep.len);
	CHECK(!memcmp(rop(&rep, 0), &before, sizeof(before)), "an op XDP answered was changed");
	CHECK(hdr_of(rep.buf)->status == XTX_ST_OK, "packet status %u", hdr_of(rep.buf)->status);
	CHECK(rop(&rep, 1)->status == XTX_ST_OK && rop(&rep, 1)->version == 10 &&
	      rop(&rep, 1)->vlen == 8 && rop(&rep, 1)->value[7] == 0xee,
	      "hit: status %u version %llu", rop(&rep, 1)->status,
	      (unsigned long long)rop(&rep, 1)->version);
	CHECK(rep.ft.e[0].op_idx == 1 && rep.ft.e[0].action == XTX_FIX_FILL &&
	      rep.ft.e[0].fill_way == 2 && rep.ft.e[0].bucket == b &&
	      rep.ft.e[0].token == 0xabc0003 && rep.ft.e[0].bloom == bit_of(1, 77) &&
	      rep.ft.e[0].victim_way == XTX_KV_NO_WAY,
	      "hit fix: action %#x way %u bucket %u token %#llx bloom %#llx",
	      rep.ft.e[0].action, rep.ft.e[0].fill_way, rep.ft.e[0].bucket,
	      (unsigned long long)rep.ft.e[0].token, (unsigned long long)rep.ft.e[0].bloom);
	CHECK(rop(&rep, 2)->status == XTX_ST_NOT_FOUND, "miss: status %u", rop(&rep, 2)->status);
	CHECK(rep.ft.e[1].op_idx == 2 && rep.ft.e[1].action == 0 && rep.ft.e[1].fill_way == 0,
	      "miss fix: action %#x", rep.ft.e[1].action);
	CHECK(x.stats.op[XTX_OP_GET][XTX_ST_OK] == 1 && x.stats.op[XTX_OP_GET][XTX_ST_NOT_FOUND] == 1,
	      "op counters");

	/* no way to fill: the answer alone */
	req_init(&r, 5, 1001, 1);
	req_defer(&r, 0, XTX_OP_GET, 1, 77, 0)->fill_way = XTX_KV_NO_WAY;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK && rep.ft.e[0].action == 0,
	      "GET without a fill way: status %u action %#x", rop(&rep, 0)->status,
	      rep.ft.e[0].action);
	exec_teardown();
}

static void exec_insert(void)
{
	struct xtxd_ovf_item got;
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;
	uint64_t k2;

	exec_setup(100);
	seed(2, 500, 4, 0x11);
	req_init(&r, 5, 2000, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 2, 500, 0x22)->vfloor = 50;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_EXISTS &&
	      rep.ft.e[0].action == 0, "insert of a stored key: status %u action %#x",
	      rop(&rep, 0)->status, rep.ft.e[0].action);
	CHECK(!xtxd_ovf_get(x.store, 2, 500, &got) && got.version == 4 && got.value[0] == 0x11,
	      "EXISTS changed the stored key");

	/* new: above the bucket's floor */
	req_init(&r, 5, 2001, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 2, 501, 0x33)->vfloor = 50;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 51 && rep.ft.e[0].action == XTX_FIX_FILL,
	      "new key: status %u version %llu action %#x", rop(&rep, 0)->status,
	      (unsigned long long)rop(&rep, 0)->version, rep.ft.e[0].action);
	CHECK(!xtxd_ovf_get(x.store, 2, 501, &got) && got.version == 51 && got.value[3] == 0x33 &&
	      got.vlen == 8, "new key not stored");
	CHECK(rep.ft.e[0].bloom & bit_of(2, 501), "the filter misses the new key");

	/* a tombstone written back first raises the floor the new key starts above */
	k2 = neighbour(2, 600);
	req_init(&r, 5, 2002, 1);
	e = req_defer(&r, 0, XTX_OP_INSERT, 2, 600, 0x44);
	e->vfloor = 50;
	set_victim(e, 2, k2, 70, XTX_KVF_TOMB | XTX_KVF_DIRTY | XTX_KVF_IN_USER, 0);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 71, "insert after a tombstone: version %llu",
	      (unsigned long long)rop(&rep, 0)->version);
	CHECK(rep.ft.e[0].action == (XTX_FIX_FILL | XTX_FIX_VICTIM_SAVED | XTX_FIX_RAISE_FLOOR) &&
	      rep.ft.e[0].floor_to == 70, "action %#x floor_to %llu", rep.ft.e[0].action,
	      (unsigned long long)rep.ft.e[0].floor_to);

	/* xtxd's own floor: the kernel never heard of that tombstone (fix lost) */
	req_init(&r, 5, 2003, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 2, neighbour(2, k2), 0x55)->vfloor = 50;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->version == 71,
	      "insert below xtxd's floor: version %llu", (unsigned long long)rop(&rep, 0)->version);
	exec_teardown();
}

static void exec_update(void)
{
	struct xtxd_ovf_item got;
	struct req r;
	struct reply rep;

	exec_setup(100);
	seed(3, 9, 5, 0x01);
	req_init(&r, 6, 3000, 2);
	req_defer(&r, 0, XTX_OP_UPDATE, 3, 9, 0x02);
	req_defer(&r, 1, XTX_OP_UPDATE, 3, 10, 0x03);
	CHECK(run(&r, &rep) > 0, "dropped");
	CHECK(rop(&rep, 0)->status == XTX_ST_OK && rop(&rep, 0)->version == 6 &&
	      rep.ft.e[0].action == XTX_FIX_FILL, "update: status %u version %llu action %#x",
	      rop(&rep, 0)->status, (unsigned long long)rop(&rep, 0)->version, rep.ft.e[0].action);
	CHECK(!xtxd_ovf_get(x.store, 3, 9, &got) && got.version == 6 && got.value[0] == 0x02,
	      "update not stored");
	CHECK(rop(&rep, 1)->status == XTX_ST_NOT_FOUND && rep.ft.e[1].action == 0,
	      "update of an absent key: status %u action %#x", rop(&rep, 1)->status,
	      rep.ft.e[1].action);
	CHECK(xtxd_ovf_get(x.store, 3, 10, &got) == -ENOENT, "update created a key");
	exec_teardown();
}

static void exec_delete(void)
{
	struct xtxd_ovf_item got;
	struct req r;
	struct reply rep;

	exec_setup(100);
	seed(4, 1, 8, 0x01);
	req_init(&r, 6, 4000, 2);
	req_defer(&r, 0, XTX_OP_DELETE, 4, 1, 0);
	req_defer(&r, 1, XTX_OP_DELETE, 4, 2, 0);
	CHECK(run(&r, &rep) > 0, "dropped");
	CHECK(rop(&rep, 0)->status == XTX_ST_OK && rop(&rep, 0)->version == 9,
	      "delete: status %u version %llu", rop(&rep, 0)->status,
	      (unsigned long long)rop(&rep, 0)->version);
	CHECK(rep.ft.e[0].action == XTX_FIX_RAISE_FLOOR && rep.ft.e[0].floor_to == 9 &&
	      rep.ft.e[0].bloom == 0, "delete fix: action %#x floor_to %llu bloom %#llx",
	      rep.ft.e[0].action, (unsigned long long)rep.ft.e[0].floor_to,
	      (unsigned long long)rep.ft.e[0].bloom);
	CHECK(xtxd_ovf_get(x.store, 4, 1, &got) == -ENOENT, "deleted key still stored");
	CHECK(rop(&rep, 1)->status == XTX_ST_NOT_FOUND && rep.ft.e[1].action == 0,
	      "delete of an absent key: status %u action %#x", rop(&rep, 1)->status,
	      rep.ft.e[1].action);
	exec_teardown();
}

static void exec_tomb_victim(void)
{
	struct xtxd_ovf_item got;
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;
	uint64_t v = neighbour(1, 100);

	exec_setup(100);
	seed(1, v, 11, 0x07);
	seed(1, 100, 3, 0x08);
	req_init(&r, 7, 5000, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 1, 100, 0);
	set_victim(e, 1, v, 12, XTX_KVF_TOMB | XTX_KVF_DIRTY | XTX_KVF_IN_USER, 0);
	CHECK(run(&r, &rep) > 0, "dropped");
	CHECK(xtxd_ovf_get(x.store, 1, v, &got) == -ENOENT, "tombstone's key still stored");
	CHECK(rep.ft.e[0].action == (XTX_FIX_VICTIM_SAVED | XTX_FIX_RAISE_FLOOR | XTX_FIX_FILL) &&
	      rep.ft.e[0].floor_to == 12 && rep.ft.e[0].victim_key == v &&
	      rep.ft.e[0].victim_version == 12 && rep.ft.e[0].victim_way == 1,
	      "fix: action %#x floor_to %llu victim %llu v%llu", rep.ft.e[0].action,
	      (unsigned long long)rep.ft.e[0].floor_to, (unsigned long long)rep.ft.e[0].victim_key,
	      (unsigned long long)rep.ft.e[0].victim_version);
	CHECK(rep.ft.e[0].bloom == bit_of(1, 100), "filter after the write-back %#llx",
	      (unsigned long long)rep.ft.e[0].bloom);
	CHECK(rop(&rep, 0)->status == XTX_ST_OK && rop(&rep, 0)->version == 3, "the GET itself");
	CHECK(x.stats.tombs_saved == 1, "tombs_saved %llu",
	      (unsigned long long)x.stats.tombs_saved);
	exec_teardown();
}

static void exec_valid_victim(void)
{
	struct xtxd_ovf_item got;
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;
	uint64_t v = neighbour(1, 200);

	exec_setup(100);
	seed(1, v, 5, 0x05);
	/* older than the store's copy: ignored */
	req_init(&r, 7, 6000, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 1, 200, 0);
	set_victim(e, 1, v, 3, XTX_KVF_VALID | XTX_KVF_DIRTY, 0x03);
	CHECK(run(&r, &rep) > 0, "dropped");
	CHECK(!xtxd_ovf_get(x.store, 1, v, &got) && got.version == 5 && got.value[0] == 0x05,
	      "an older victim overwrote the store: v%llu", (unsigned long long)got.version);
	CHECK(rep.ft.e[0].action == XTX_FIX_VICTIM_SAVED && rep.ft.e[0].victim_key == v &&
	      rep.ft.e[0].victim_version == 3, "fix: action %#x", rep.ft.e[0].action);
	CHECK(rop(&rep, 0)->status == XTX_ST_NOT_FOUND, "GET of an absent key");
	CHECK(x.stats.victims_stale == 1, "victims_stale %llu",
	      (unsigned long long)x.stats.victims_stale);

	/* newer: stored, and its bit joins the filter */
	req_init(&r, 7, 6001, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 1, 200, 0);
	set_victim(e, 1, v, 9, XTX_KVF_VALID | XTX_KVF_DIRTY | XTX_KVF_IN_USER, 0x09);
	CHECK(run(&r, &rep) > 0, "dropped");
	CHECK(!xtxd_ovf_get(x.store, 1, v, &got) && got.version == 9 && got.value[7] == 0x09,
	      "a newer victim was not stored");
	CHECK(rep.ft.e[0].action == XTX_FIX_VICTIM_SAVED && rep.ft.e[0].bloom == bit_of(1, v),
	      "fix: action %#x bloom %#llx", rep.ft.e[0].action,
	      (unsigned long long)rep.ft.e[0].bloom);
	exec_teardown();
}

/*
 * A hand-off whose bucket was taken over after its lease (a slow xtxd
 * under load) reaches the store late: after the takeover, another hand-off
 * wrote the same key back as a tombstone, newer, and the store forgot the
 * key.  The late copy's victim must not bring the deleted key back.
 */
static void exec_taken_over_victim(void)
{
	static struct xtx_kv_bucket kv[NB];
	struct xtxd_ovf_item got;
	struct xtx_defer_entry *e;
	struct req late, r;
	struct reply rep;
	uint64_t k = 4, n = neighbour(0, 4);
	uint32_t b = xtx_bucket_of(xtx_hash(0, k), NB);

	exec_setup(100);
	memset(kv, 0, sizeof(kv));
	x.kv = kv;
	x.kv_buckets = NB;

	/* the first hand-off: k's first version rides along as the dirty victim */
	req_init(&late, 7, 9000, 1);
	e = req_defer(&late, 0, XTX_OP_GET, 0, n, 0);
	set_victim(e, 0, k, 1, XTX_KVF_VALID | XTX_KVF_DIRTY | XTX_KVF_IN_USER, 0x01);
	e->token = 0x1001;

	/* its lease ran out: XDP took the bucket over, deleted k, and handed the tombstone on */
	kv[b].lock = 0x2001;
	req_init(&r, 8, 9001, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 0, n, 0);
	set_victim(e, 0, k, 2, XTX_KVF_TOMB | XTX_KVF_DIRTY | XTX_KVF_IN_USER, 0);
	e->token = 0x2001;
	CHECK(run(&r, &rep) > 0 && rep.ft.e[0].floor_to == 2, "the tombstone's hand-off");
	/* TC freed the tombstone and let the bucket go */
	kv[b].lock = 0;

	CHECK(run(&late, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_NOT_FOUND, "the late hand-off");
	CHECK(xtxd_ovf_get(x.store, 0, k, &got) == -ENOENT,
	      "a deleted key came back from a late write-back: v%llu",
	      (unsigned long long)got.version);
	CHECK(!(rep.ft.e[0].action & XTX_FIX_VICTIM_SAVED) && !(rep.ft.e[0].bloom & bit_of(0, k)),
	      "late fix: action %#x bloom %#llx", rep.ft.e[0].action,
	      (unsigned long long)rep.ft.e[0].bloom);

	/* a GET of k after a fresh deferral: not found, as the client was told */
	kv[b].lock = 0x3001;
	req_init(&r, 9, 9002, 1);
	req_defer(&r, 0, XTX_OP_GET, 0, k, 0)->token = 0x3001;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_NOT_FOUND,
	      "GET of the deleted key: status %u v%llu", rop(&rep, 0)->status,
	      (unsigned long long)rop(&rep, 0)->version);

	/* while the bucket is still held by the hand-off, its victim is saved */
	req_init(&r, 9, 9003, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 0, n, 0);
	set_victim(e, 0, k, 5, XTX_KVF_VALID | XTX_KVF_DIRTY | XTX_KVF_IN_USER, 0x05);
	e->token = 0x3001;
	CHECK(run(&r, &rep) > 0 && (rep.ft.e[0].action & XTX_FIX_VICTIM_SAVED) &&
	      !xtxd_ovf_get(x.store, 0, k, &got) && got.version == 5,
	      "a held hand-off's victim: action %#x", rep.ft.e[0].action);
	exec_teardown();
}

/*
 * A DELETE in the store whose fix came back after its bucket was taken
 * over: TC skips it, so the kernel's floor never heard of the tombstone's
 * version.  The next fix clears the key's filter bit, and from then on XDP
 * inserts the key itself above its own floor: that fix must raise the
 * floor too, or the key's new life reuses versions of its old one.
 */
static void exec_taken_over_floor(void)
{
	static struct xtx_kv_bucket kv[NB];
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;
	uint64_t k = 721, n = neighbour(0, 721);
	uint32_t b = xtx_bucket_of(xtx_hash(0, k), NB);

	exec_setup(100);
	memset(kv, 0, sizeof(kv));
	x.kv = kv;
	x.kv_buckets = NB;
	seed(0, k, 3, 0x03);
	seed(0, n, 1, 0x01);

	/* the delete runs, but its bucket was taken over meanwhile: TC drops this fix */
	kv[b].lock = 0x2001;
	req_init(&r, 7, 9100, 1);
	req_defer(&r, 0, XTX_OP_DELETE, 0, k, 0)->token = 0x1001;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 4, "the delete: status %u v%llu", rop(&rep, 0)->status,
	      (unsigned long long)rop(&rep, 0)->version);

	/* the next hand-off of the bucket, holding it, from a kernel whose floor is still 0 */
	req_init(&r, 8, 9101, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 0, n, 0);
	e->token = 0x2001;
	e->vfloor = 0;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK, "GET of the neighbour");
	CHECK(!(rep.ft.e[0].bloom & bit_of(0, k)), "filter still has the deleted key's bit");
	CHECK((rep.ft.e[0].action & XTX_FIX_RAISE_FLOOR) && rep.ft.e[0].floor_to >= 4,
	      "a fix clearing the key's bit leaves the kernel's floor below its tombstone: "
	      "action %#x floor_to %llu", rep.ft.e[0].action,
	      (unsigned long long)rep.ft.e[0].floor_to);

	/* a kernel that already knows the floor is not told again */
	req_init(&r, 8, 9102, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 0, n, 0);
	e->token = 0x2001;
	e->vfloor = 4;
	CHECK(run(&r, &rep) > 0 && !(rep.ft.e[0].action & XTX_FIX_RAISE_FLOOR),
	      "floor raised again: action %#x", rep.ft.e[0].action);
	exec_teardown();
}

/*
 * An INSERT of a new key from a hand-off whose bucket was taken over: the
 * new holder's fix may carry a filter read before the key went in, and
 * leave the kernel answering for the key as absent.  It answers RETRY
 * instead, and so does every copy of the request.
 */
static void exec_taken_over_insert(void)
{
	static struct xtx_kv_bucket kv[NB];
	struct xtxd_ovf_item got;
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;
	uint64_t k = 94, n = neighbour(0, 94);
	uint32_t b = xtx_bucket_of(xtx_hash(0, k), NB);

	exec_setup(100);
	memset(kv, 0, sizeof(kv));
	x.kv = kv;
	x.kv_buckets = NB;
	seed(0, n, 1, 0x01);
	kv[b].lock = 0x2001;

	req_init(&r, 7, 9200, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 0, k, 0x94)->token = 0x1001;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_RETRY,
	      "late INSERT of a new key: status %u", rop(&rep, 0)->status);
	CHECK(xtxd_ovf_get(x.store, 0, k, &got) == -ENOENT && !(rep.ft.e[0].bloom & bit_of(0, k)),
	      "a late INSERT answered RETRY changed the store");

	/* its retransmission, re-deferred by the holder: the same answer */
	req_init(&r, 7, 9200, 1);
	e = req_defer(&r, 0, XTX_OP_INSERT, 0, k, 0x94);
	e->token = 0x2001;
	e->flags |= XTX_DEFER_REPLAY;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_RETRY &&
	      xtxd_ovf_get(x.store, 0, k, &got) == -ENOENT,
	      "retransmission: status %u", rop(&rep, 0)->status);

	/* sent again in a new request, holding the bucket: it goes in */
	req_init(&r, 7, 9201, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 0, k, 0x94)->token = 0x2001;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      !xtxd_ovf_get(x.store, 0, k, &got) && got.value[0] == 0x94,
	      "INSERT holding the bucket: status %u", rop(&rep, 0)->status);

	/* a late INSERT of a key the store holds changes nothing and runs: EXISTS */
	req_init(&r, 8, 9202, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 0, n, 0x02)->token = 0x1001;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_EXISTS,
	      "late INSERT of a stored key: status %u", rop(&rep, 0)->status);
	exec_teardown();
}

static void exec_full(void)
{
	struct xtxd_ovf_item got;
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;

	exec_setup(1);
	seed(0, 1, 1, 0x01);
	req_init(&r, 8, 7000, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 0, 2, 0x02);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_FULL && rep.ft.e[0].action == 0,
	      "insert into a full store: status %u action %#x", rop(&rep, 0)->status,
	      rep.ft.e[0].action);
	CHECK(xtxd_ovf_get(x.store, 0, 2, &got) == -ENOENT && xtxd_ovf_count(x.store) == 1,
	      "FULL changed the store");

	/* a victim the store has no room for stays dirty, and its way is not filled over */
	req_init(&r, 8, 7001, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 0, 1, 0);
	set_victim(e, 0, neighbour(0, 1), 4, XTX_KVF_VALID | XTX_KVF_DIRTY, 0x04);
	e->fill_way = e->victim_way;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK && rep.ft.e[0].action == 0,
	      "unsaved victim: status %u action %#x", rop(&rep, 0)->status, rep.ft.e[0].action);
	CHECK(x.stats.victims_full == 1, "victims_full %llu",
	      (unsigned long long)x.stats.victims_full);
	exec_teardown();
}

static void exec_replay(void)
{
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;

	exec_setup(100);
	req_init(&r, 9, 8000, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 5, 1, 0x10)->vfloor = 20;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 21, "first insert: status %u", rop(&rep, 0)->status);

	/* its retransmission: the same answer, not EXISTS, and the fill still applies */
	req_init(&r, 9, 8000, 1);
	e = req_defer(&r, 0, XTX_OP_INSERT, 5, 1, 0x10);
	e->vfloor = 20;
	e->flags |= XTX_DEFER_REPLAY;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 21 && rep.ft.e[0].action == XTX_FIX_FILL,
	      "replayed insert: status %u version %llu action %#x", rop(&rep, 0)->status,
	      (unsigned long long)rop(&rep, 0)->version, rep.ft.e[0].action);
	CHECK(x.stats.replays == 1, "replays %llu", (unsigned long long)x.stats.replays);

	/* the first copy delivered late, after its re-deferred retransmission ran */
	req_init(&r, 9, 8000, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 5, 1, 0x10)->vfloor = 20;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 21 && x.stats.duplicates == 1,
	      "late first copy: status %u version %llu", rop(&rep, 0)->status,
	      (unsigned long long)rop(&rep, 0)->version);

	/* another client updates it; a late replay answers as before, but fills nothing stale */
	req_init(&r, 10, 1, 1);
	req_defer(&r, 0, XTX_OP_UPDATE, 5, 1, 0x20);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->version == 22, "update");
	req_init(&r, 9, 8000, 1);
	e = req_defer(&r, 0, XTX_OP_INSERT, 5, 1, 0x10);
	e->flags |= XTX_DEFER_REPLAY;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 21 && rep.ft.e[0].action == 0,
	      "late replay: status %u version %llu action %#x", rop(&rep, 0)->status,
	      (unsigned long long)rop(&rep, 0)->version, rep.ft.e[0].action);

	/* a delete, replayed: OK with its version and the floor raise, not NOT_FOUND */
	req_init(&r, 9, 8001, 1);
	req_defer(&r, 0, XTX_OP_DELETE, 5, 1, 0);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->version == 23, "delete");
	req_init(&r, 9, 8001, 1);
	req_defer(&r, 0, XTX_OP_DELETE, 5, 1, 0)->flags |= XTX_DEFER_REPLAY;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 23 && rep.ft.e[0].action == XTX_FIX_RAISE_FLOOR &&
	      rep.ft.e[0].floor_to == 23, "replayed delete: status %u action %#x",
	      rop(&rep, 0)->status, rep.ft.e[0].action);

	/* no record (the first attempt never reached xtxd): executed */
	req_init(&r, 9, 8002, 1);
	e = req_defer(&r, 0, XTX_OP_INSERT, 5, 1, 0x30);
	e->flags |= XTX_DEFER_REPLAY;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 24, "unrecorded replay: status %u version %llu",
	      rop(&rep, 0)->status, (unsigned long long)rop(&rep, 0)->version);
	CHECK(x.stats.replays_unrecorded == 1, "replays_unrecorded %llu",
	      (unsigned long long)x.stats.replays_unrecorded);

	/*
	 * An HVALIDATE that finds its write installed answers ALREADY_APPLIED
	 * with the version the write has (base + 1); a copy XDP re-defers
	 * carries the base, and its answer from the record names the same.
	 */
	req_init(&r, 9, 8003, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 6, 1, 0x40)->vfloor = 40;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->version == 41, "key 6 at v41");
	req_init(&r, 9, 8004, 1);
	req_defer(&r, 0, XTX_OP_HVALIDATE, 6, 1, 0x40);
	op_at(r.buf, 0)->version = 40;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_ALREADY_APPLIED &&
	      rop(&rep, 0)->version == 41, "validate of an installed write: status %u v%llu",
	      rop(&rep, 0)->status, (unsigned long long)rop(&rep, 0)->version);
	req_init(&r, 9, 8004, 1);
	e = req_defer(&r, 0, XTX_OP_HVALIDATE, 6, 1, 0x40);
	e->flags |= XTX_DEFER_REPLAY;
	op_at(r.buf, 0)->version = 40;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_ALREADY_APPLIED &&
	      rop(&rep, 0)->version == 41, "its copy from the record: status %u v%llu (want v41)",
	      rop(&rep, 0)->status, (unsigned long long)rop(&rep, 0)->version);

	/* a record of another op under the same ids answers nothing */
	req_init(&r, 9, 8002, 1);
	req_defer(&r, 0, XTX_OP_GET, 5, 1, 0)->flags |= XTX_DEFER_REPLAY;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 24 && rop(&rep, 0)->value[0] == 0x30,
	      "mismatched record: status %u", rop(&rep, 0)->status);
	exec_teardown();
}

/* A valid two-entry request to break in one place at a time. */
/* A key of another bucket than (table, key). */
static uint64_t elsewhere(uint8_t table, uint64_t key)
{
	uint32_t b = xtx_bucket_of(xtx_hash(table, key), NB);
	uint64_t k;

	for (k = key + 1; xtx_bucket_of(xtx_hash(table, k), NB) == b; k++)
		;
	return k;
}

static void good_req(struct req *r)
{
	struct xtx_defer_entry *e;

	req_init(r, 11, 9000, 3);
	req_defer(r, 0, XTX_OP_GET, 1, 1, 0);
	e = req_defer(r, 2, XTX_OP_INSERT, 1, 2, 0x42);
	set_victim(e, 1, neighbour(1, 2), 3, XTX_KVF_VALID | XTX_KVF_DIRTY, 0x01);
	req_finish(r);
}

static struct xtx_defer_entry *raw_entry(struct req *r, int i)
{
	size_t off = sizeof(struct xtx_hdr) + r->nops * sizeof(struct xtx_op) + 8;

	return (struct xtx_defer_entry *)(r->buf + off + i * sizeof(struct xtx_defer_entry));
}

static void expect_drop(struct req *r, const char *what)
{
	struct reply rep;
	uint64_t n = xtxd_ovf_count(x.store);

	CHECK(run(r, &rep) < 0, "accepted: %s", what);
	CHECK(xtxd_ovf_count(x.store) == n, "a dropped request changed the store: %s", what);
}

static int digest_item(const struct xtxd_ovf_item *it, void *arg)
{
	uint64_t *h = arg, v[XTX_VALUE_INLINE / 8] = { 0 }, vh = 0;
	unsigned int i;

	memcpy(v, it->value, it->vlen <= XTX_VALUE_INLINE ? it->vlen : XTX_VALUE_INLINE);
	for (i = 0; i < XTX_VALUE_INLINE / 8; i++)
		vh = xtx_mix64(vh ^ v[i]);
	/* order-free: the walk's order is the store's business */
	*h += xtx_mix64(it->key ^ (uint64_t)it->table << 56 ^ it->version * 0x9e3779b97f4a7c15ull ^
			it->vlen ^ vh);
	return 0;
}

/* Everything a request could change in the store: items, floors, filters. */
static uint64_t store_digest(struct xtxd_ovf *s)
{
	uint64_t h = xtxd_ovf_count(s);
	uint32_t b;

	xtxd_ovf_foreach(s, digest_item, &h);
	for (b = 0; b < xtxd_ovf_nbuckets(s); b++)
		h = xtx_mix64(h ^ xtxd_ovf_floor(s, b) ^ xtxd_ovf_bloom(s, b) * 31);
	return h;
}

static void exec_malformed(void)
{
	struct reply rep;
	struct req r;
	uint64_t drops = 0;
	int i, d, accepted = 0, changed = 0;

	exec_setup(100);
	good_req(&r);
	CHECK(run(&r, &rep) > 0, "the good request was dropped");
	exec_teardown();
	exec_setup(100);

#define BREAK(what, stmt)                                                                        \
	do {                                                                                     \
		good_req(&r);                                                                    \
		stmt;                                                                            \
		expect_drop(&r, what);                                                           \
	} while (0)
	BREAK("short", r.len = 10);
	BREAK("header only", r.len = sizeof(struct xtx_hdr));
	BREAK("magic", hdr_of(r.buf)->magic ^= 1);
	BREAK("version", hdr_of(r.buf)->version = XTX_VERSION + 1);
	BREAK("a reply", hdr_of(r.buf)->flags |= XTX_F_REPLY);
	BREAK("nops 0", hdr_of(r.buf)->nops = 0);
	BREAK("nops 17", hdr_of(r.buf)->nops = 17);
	BREAK("nops 2", hdr_of(r.buf)->nops = 2);
	BREAK("one byte more", r.len++);
	BREAK("one byte less", r.len--);
	BREAK("no trailer", r.len = sizeof(struct xtx_hdr) + 3 * sizeof(struct xtx_op));
	BREAK("trailer magic", *(uint32_t *)(r.buf + r.len - 8 - 2 * 88) = XTX_FIX_MAGIC);
	BREAK("count 0", r.buf[r.len - 2 * 88 - 4] = 0);
	BREAK("count 1 of 2", r.buf[r.len - 2 * 88 - 4] = 1);
	BREAK("count 5", r.buf[r.len - 2 * 88 - 4] = 5);
	BREAK("op_idx past nops", raw_entry(&r, 0)->op_idx = 3);
	BREAK("op_idx twice", raw_entry(&r, 1)->op_idx = 0);
	BREAK("op not deferred", op_at(r.buf, 0)->status = XTX_ST_OK);
	BREAK("non-deferred slot named", raw_entry(&r, 0)->op_idx = 1);
	BREAK("not a KV op", op_at(r.buf, 0)->opcode = XTX_OP_COUNTER_ADD);
	BREAK("table 16", op_at(r.buf, 0)->table = XTX_MAX_TABLES);
	BREAK("vlen 41", op_at(r.buf, 2)->vlen = XTX_VALUE_INLINE + 1);
	BREAK("bucket of another key", raw_entry(&r, 0)->bucket ^= 1);
	BREAK("bucket out of range", raw_entry(&r, 0)->bucket = NB);
	BREAK("huge bucket", raw_entry(&r, 0)->bucket = 0xffffffffu);
	BREAK("fill way past the ways", raw_entry(&r, 0)->fill_way = XTX_KV_WAYS);
	BREAK("unknown flag", raw_entry(&r, 0)->flags |= 0x80);
	BREAK("victim valid and tomb", raw_entry(&r, 1)->victim.flags |= XTX_KVF_TOMB);
	BREAK("victim neither", raw_entry(&r, 1)->victim.flags = XTX_KVF_DIRTY);
	BREAK("victim of another bucket", raw_entry(&r, 1)->victim.key = elsewhere(1, 2));
	BREAK("victim table", raw_entry(&r, 1)->victim.table = 200);
	BREAK("victim vlen", raw_entry(&r, 1)->victim.vlen = 200);
	BREAK("victim way", raw_entry(&r, 1)->victim_way = XTX_KV_NO_WAY);
#undef BREAK
	for (d = 0; d < XTXD_DROP__COUNT; d++)
		drops += x.stats.drop[d];
	CHECK(drops == 33, "drop counters add up to %llu", (unsigned long long)drops);

	/*
	 * Garbage, and valid requests with random bytes flipped: no crash,
	 * nothing out of bounds, and a dropped one leaves the store as it was.
	 */
	for (i = 0; i < 1000000; i++) {
		uint64_t before = store_digest(x.store);
		size_t j, n;

		good_req(&r);
		if (i % 4 == 0) {
			r.len = rnd() % sizeof(r.buf);
			for (j = 0; j < r.len; j++)
				r.buf[j] = rnd();
		} else {
			for (n = 1 + rnd() % 4; n; n--)
				r.buf[rnd() % r.len] ^= 1u << (rnd() % 8);
		}
		if (xtxd_exec_packet(&x, r.buf, r.len, rep.buf, sizeof(rep.buf)) > 0)
			accepted++;
		else if (store_digest(x.store) != before && changed++ < 3)
			printf("#   seed %llu: dropped request %d changed the store\n",
			       (unsigned long long)run_seed, i);
	}
	CHECK(!changed, "%d dropped requests changed the store", changed);
	CHECK(xtxd_ovf_count(x.store) <= 100, "fuzzing overfilled the store");
	check_filters_exact(x.store);
	printf("#   fuzz: %d of 1000000 mangled requests were still well-formed\n", accepted);
	exec_teardown();
}

/* ---- values over the slot: the value area, eviction, TOO_BIG ---- */

/* Byte i of a test value: a pattern that shows a shifted or truncated copy. */
static uint8_t vbyte(uint8_t c, unsigned int i)
{
	return (uint8_t)(c + i * 7);
}

static void fill_value(uint8_t *p, uint16_t len, uint8_t c)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		p[i] = vbyte(c, i);
}

static bool value_is(const uint8_t *p, uint16_t len, uint8_t c)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		if (p[i] != vbyte(c, i))
			return false;
	return true;
}

/*
 * Gives op idx of r an area of cap bytes after the previous one (canonical
 * tiling); a write's value of len bytes goes in it.  Returns the offset.
 */
static uint16_t req_area(struct req *r, int idx, uint16_t cap, uint16_t len, uint8_t c)
{
	size_t off = r->body_len ? r->body_len :
				   sizeof(struct xtx_hdr) + r->nops * sizeof(struct xtx_op);
	struct xtx_ext ext = { .off = (uint16_t)off, .cap = cap, .len = len };
	struct xtx_op *op = op_at(r->buf, idx);

	op->flags |= XTX_OPF_EXT;
	op->vlen = 0;
	memset(op->value, 0, sizeof(op->value));
	memcpy(op->value, &ext, sizeof(ext));
	memset(r->buf + off, 0, cap);
	fill_value(r->buf + off, len, c);
	r->body_len = (off + cap + XTX_EXT_ALIGN - 1) & ~(size_t)(XTX_EXT_ALIGN - 1);
	return ext.off;
}

static struct xtx_ext rext(struct reply *rep, int i)
{
	struct xtx_ext ext;

	memcpy(&ext, rop(rep, i)->value, sizeof(ext));
	return ext;
}

static void seed_big(uint8_t table, uint64_t key, uint64_t version, uint16_t vlen, uint8_t c)
{
	struct xtxd_ovf_item it = { .key = key, .version = version, .table = table, .vlen = vlen };

	fill_value(it.value, vlen, c);
	CHECK(put(x.store, it) == 1, "seeding the store");
}

/* The store keeps each value at its own length, whole, and zero past it. */
/* The copy of one key in the value store: 1 and *v, 0 when it has none. */
static int copy_of(int fd, uint8_t table, uint64_t key, struct xtx_bigval *v)
{
	struct xtx_bigval_key k = { .key = key, .table = table };

	return !bpf_map_lookup_elem(fd, &k, v);
}

/* The value store follows the overflow store: never a copy the store has replaced. */
static void store_valstore(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "test_bigval", sizeof(struct xtx_bigval_key),
				sizeof(struct xtx_bigval), 3, &mo);
	struct xtxd_ovf *s = xtxd_ovf_new(NB, 100);
	struct xtxd_ovf_item it = { .key = 500, .version = 4, .table = 3, .vlen = 600 };
	struct xtx_bigval v;
	uint64_t k;

	CHECK(fd >= 0, "creating a hash map for the value store: %s", strerror(errno));
	if (fd < 0)
		return;
	xtxd_ovf_set_valstore(s, fd);
	fill_value(it.value, it.vlen, 1);
	CHECK(put(s, it) == 1 && copy_of(fd, 3, 500, &v) && v.version == 4 && v.len == 600 &&
	      v.key == 500 && v.table == 3 && value_is(v.data, 600, 1) && v.data[600] == 0,
	      "a new big key is copied whole, zero past its length");
	it.version = 3;
	fill_value(it.value, it.vlen, 2);
	CHECK(put(s, it) == 0 && copy_of(fd, 3, 500, &v) && v.version == 4 &&
	      value_is(v.data, 600, 1), "an older put changes neither store nor copy");
	it.version = 5;
	it.vlen = 41;
	fill_value(it.value, it.vlen, 3);
	CHECK(put(s, it) == 1 && copy_of(fd, 3, 500, &v) && v.version == 5 && v.len == 41 &&
	      value_is(v.data, 41, 3) && v.data[41] == 0, "a newer big value replaces the copy");
	it.version = 6;
	it.vlen = 40;
	CHECK(put(s, it) == 1 && !copy_of(fd, 3, 500, &v),
	      "a value that fits the slot: the copy goes");
	it.version = 7;
	it.vlen = 1024;
	fill_value(it.value, it.vlen, 4);
	CHECK(put(s, it) == 1 && copy_of(fd, 3, 500, &v) && v.len == 1024,
	      "big again: copied again");
	CHECK(del(s, 3, 500, 7) == 0 && copy_of(fd, 3, 500, &v),
	      "a delete below the stored version keeps both");
	CHECK(del(s, 3, 500, UINT64_MAX) == 1 && !copy_of(fd, 3, 500, &v),
	      "a delete removes the copy with the key");
	/* three copies at most: the fourth key has none, and reads of it go to xtxd */
	for (k = 600; k < 604; k++) {
		it.key = k;
		it.version = 1;
		it.vlen = 100;
		put(s, it);
	}
	CHECK(copy_of(fd, 3, 600, &v) && copy_of(fd, 3, 602, &v) && !copy_of(fd, 3, 603, &v),
	      "a full value store copies no more");
	it.key = 602;
	it.version = 2;
	it.vlen = 200;
	fill_value(it.value, it.vlen, 5);
	CHECK(put(s, it) == 1 && copy_of(fd, 3, 602, &v) && v.version == 2 && v.len == 200,
	      "full: a key it holds is still replaced in place");
	CHECK(!xtxd_valstore_clear(fd) && !copy_of(fd, 3, 600, &v) && !copy_of(fd, 3, 602, &v),
	      "clear empties it");

	/* the rare path's writes are not durable yet: copies only once they are */
	xtxd_ovf_copy_later(true);
	it.key = 700;
	it.version = 1;
	it.vlen = 300;
	fill_value(it.value, it.vlen, 6);
	CHECK(put(s, it) == 1 && !copy_of(fd, 3, 700, &v), "copy later: a new big key, no copy");
	xtxd_ovf_copy_refresh(s, 3, 700, 2);
	CHECK(!copy_of(fd, 3, 700, &v), "a refresh at another version copies nothing");
	xtxd_ovf_copy_refresh(s, 3, 700, 1);
	CHECK(copy_of(fd, 3, 700, &v) && v.version == 1 && value_is(v.data, 300, 6),
	      "a refresh at the stored version copies it");
	it.version = 2;
	fill_value(it.value, it.vlen, 7);
	CHECK(put(s, it) == 1 && !copy_of(fd, 3, 700, &v),
	      "copy later: a newer big value takes the old copy away, makes none");
	xtxd_ovf_copy_refresh(s, 3, 700, 2);
	CHECK(copy_of(fd, 3, 700, &v) && v.version == 2 && value_is(v.data, 300, 7),
	      "once durable, the newer one is copied");
	xtxd_ovf_copy_later(false);
	xtxd_ovf_free(s);
	close(fd);
}

/* Emptying a value store of many copies: each one goes, whatever the walk's order. */
static void valstore_clear_many(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "test_bigval", sizeof(struct xtx_bigval_key),
				sizeof(struct xtx_bigval), 1 << 16, &mo);
	struct xtxd_ovf_item it = { .table = 1, .version = 1, .vlen = 64 };
	struct xtx_bigval_key k;
	uint64_t i;

	CHECK(fd >= 0, "creating a hash map for the value store: %s", strerror(errno));
	if (fd < 0)
		return;
	for (i = 0; i < 20000; i++) {
		it.key = i;
		xtxd_valstore_put(fd, &it);
	}
	CHECK(!xtxd_valstore_clear(fd) && bpf_map_get_next_key(fd, NULL, &k) && errno == ENOENT,
	      "20000 copies cleared");
	close(fd);
}

static void store_big_values(void)
{
	static const uint16_t lens[] = { 1, 40, 41, 512, 1024 };
	struct xtxd_ovf *s = xtxd_ovf_new(NB, 100);
	size_t small, big, fb, pb;
	unsigned int i, j;

	for (i = 0; i < 5; i++) {
		struct xtxd_ovf_item it = { .key = 300 + i, .version = 1, .table = 2,
					    .vlen = lens[i] };

		fill_value(it.value, lens[i], (uint8_t)i);
		CHECK(put(s, it) == 1, "put of %u bytes", lens[i]);
	}
	for (i = 0; i < 5; i++) {
		struct xtxd_ovf_item got;
		bool zero = true;

		memset(&got, 0xee, sizeof(got));
		CHECK(!xtxd_ovf_get(s, 2, 300 + i, &got) && got.vlen == lens[i] &&
		      value_is(got.value, lens[i], (uint8_t)i), "value of %u bytes read back (%u)",
		      lens[i], got.vlen);
		for (j = lens[i]; j < XTX_VALUE_MAX; j++)
			zero &= got.value[j] == 0;
		CHECK(zero, "bytes past a %u-byte value are not zero", lens[i]);
	}
	/* a big value overwritten by a small one: the old bytes are gone */
	{
		struct xtxd_ovf_item it = { .key = 304, .version = 2, .table = 2, .vlen = 3 }, got;

		fill_value(it.value, 3, 9);
		CHECK(put(s, it) == 1 && !xtxd_ovf_get(s, 2, 304, &got) && got.vlen == 3 &&
		      got.value[3] == 0 && got.value[1023] == 0, "small over big: stale bytes");
	}
	check_filters_exact(s);
	/* a node holds its own length: a kilobyte value costs about a kilobyte more */
	xtxd_ovf_cost(XTX_VALUE_INLINE, &small, &fb, &pb);
	xtxd_ovf_cost(XTX_VALUE_MAX, &big, &fb, &pb);
	CHECK(small < 160 && big >= small + XTX_VALUE_MAX - XTX_VALUE_INLINE &&
	      big < small + XTX_VALUE_MAX, "cost per key: %zu small, %zu big", small, big);
	xtxd_ovf_free(s);
}

/* The plain writes a packet logged: captured instead of written to a disk. */
static struct xtx_log_entry logged[64];
static size_t nlogged;

static int capture_log(struct xtx_log_entry *e, size_t n)
{
	memcpy(logged + nlogged, e, n * sizeof(*e));
	nlogged += n;
	return 0;
}

/* A copy of the request run while the first copy's writes are being logged (another thread's). */
static struct req *reenter;
static int reenter_ret = 99;
static uint8_t reenter_status;

static int log_and_reenter(struct xtx_log_entry *e, size_t n)
{
	struct reply rep;
	struct req *r = reenter;

	capture_log(e, n);
	if (r) {
		reenter = NULL;
		reenter_ret = run(r, &rep);
		reenter_status = reenter_ret > 0 ? rop(&rep, 0)->status : 0;
	}
	return 0;
}

/*
 * A plain write's record is no answer until its packet has logged it: a
 * copy of the request arriving meanwhile (the client's retransmission, on
 * the other rare thread) is dropped, not acknowledged, and asks again.
 */
static void exec_pending_record(void)
{
	struct req r, copy;
	struct reply rep;

	exec_setup(100);
	x.log_writes = log_and_reenter;
	nlogged = 0;
	req_init(&r, 9, 9100, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 5, 77, 0x10)->vfloor = 20;
	req_finish(&r);
	copy = r;
	reenter = &copy;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK && nlogged == 1,
	      "the insert: status %u, %zu logged", rop(&rep, 0)->status, nlogged);
	CHECK(reenter_ret <= 0 && x.stats.drop[XTXD_DROP_PENDING] == 1,
	      "its copy while the log write ran: dropped (ret %d, status %u)", reenter_ret,
	      reenter_status);
	copy = r;
	CHECK(run(&copy, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 21 && nlogged == 1,
	      "once logged, a copy is answered from the record: status %u, %zu logged",
	      rop(&rep, 0)->status, nlogged);
	exec_teardown();
}

/* A big write to a key the kernel does not cache: stored whole, never filled, logged in pieces. */
static void exec_big_write(void)
{
	static const uint16_t lens[] = { 41, 512, 1024 };
	struct xtxd_ovf_item got;
	struct req r;
	struct reply rep;
	unsigned int i, k;

	exec_setup(100);
	x.log_writes = capture_log;
	for (i = 0; i < 3; i++) {
		struct xtx_log_ext lx;
		bool pieces = true;

		nlogged = 0;
		req_init(&r, 3, 100 + i, 2);
		req_defer(&r, 1, XTX_OP_INSERT, 1, 40 + i, 0);
		req_area(&r, 1, lens[i], lens[i], (uint8_t)(0x40 + i));
		CHECK(run(&r, &rep) > 0 && rop(&rep, 1)->status == XTX_ST_OK &&
		      rop(&rep, 1)->version == 1, "insert of %u bytes: status %u", lens[i],
		      rop(&rep, 1)->status);
		CHECK(!(rep.ft.e[0].action & XTX_FIX_FILL), "a %u-byte value filled the kernel",
		      lens[i]);
		CHECK(rep.ft.e[0].bloom & bit_of(1, 40 + i), "the filter misses the key");
		CHECK(!xtxd_ovf_get(x.store, 1, 40 + i, &got) && got.vlen == lens[i] &&
		      value_is(got.value, lens[i], (uint8_t)(0x40 + i)),
		      "stored %u of %u bytes", got.vlen, lens[i]);
		/* head entry, then the continuations in order, bytes in order */
		memcpy(&lx, logged[0].value, sizeof(lx));
		CHECK(nlogged == 1 + xtx_log_cont_count(lens[i]) &&
		      (logged[0].flags & XTX_LOGF_EXT) && logged[0].vlen == 0 &&
		      lx.len == lens[i] && logged[0].key == 40 + i, "log head: %zu entries",
		      nlogged);
		for (k = 0; k < lens[i]; k++) {
			const struct xtx_log_cont *c =
				(const struct xtx_log_cont *)&logged[1 + k / XTX_LOG_CONT_BYTES];

			pieces &= c->bytes[k % XTX_LOG_CONT_BYTES] == vbyte(0x40 + i, k);
		}
		CHECK(pieces, "the log's continuations do not hold the %u bytes", lens[i]);
		/* the reply's body is as long as the request's: the client gets its area back */
		CHECK(rep.ft.body_len == r.body_len, "body %u", rep.ft.body_len);
	}
	/* an update of a big value with a small one: the kernel may cache it again */
	req_init(&r, 3, 200, 1);
	req_defer(&r, 0, XTX_OP_UPDATE, 1, 41, 0x77);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 2 && (rep.ft.e[0].action & XTX_FIX_FILL),
	      "small update: status %u action %#x", rop(&rep, 0)->status, rep.ft.e[0].action);
	CHECK(!xtxd_ovf_get(x.store, 1, 41, &got) && got.vlen == 8 && got.value[8] == 0,
	      "small update left %u bytes", got.vlen);
	exec_teardown();
}

/* Reads: in the slot when it fits, in the area when the room takes it, else TOO_BIG. */
static void exec_big_read(void)
{
	struct xtxd_ovf_item got;
	struct xtx_ext ext;
	struct req r;
	struct reply rep;
	uint16_t off;

	exec_setup(100);
	seed_big(1, 7, 4, 512, 0x11);
	seed_big(1, 8, 6, 20, 0x22);
	seed_big(1, 9, 3, 1024, 0x33);

	req_init(&r, 4, 1, 3);
	req_defer(&r, 0, XTX_OP_GET, 1, 7, 0);
	off = req_area(&r, 0, 520, 0, 0);
	req_defer(&r, 1, XTX_OP_GET, 1, 8, 0);
	req_area(&r, 1, 64, 0, 0);
	req_defer(&r, 2, XTX_OP_GET, 1, 9, 0);
	req_area(&r, 2, 200, 0, 0);
	/* as XDP defers it: the reply with three fixes fits one datagram */
	CHECK(r.body_len + XTX_FIX_TRAILER_LEN(3) <= XTX_MAX_PAYLOAD, "test request of %zu bytes",
	      r.body_len);
	CHECK(run(&r, &rep) > 0, "dropped");
	ext = rext(&rep, 0);
	CHECK(rop(&rep, 0)->status == XTX_ST_OK && (rop(&rep, 0)->flags & XTX_OPF_EXT) &&
	      ext.off == off && ext.len == 512 && rop(&rep, 0)->version == 4 &&
	      value_is(rep.buf + off, 512, 0x11) && rep.buf[off + 512] == 0,
	      "512 bytes in a room of 520: status %u len %u", rop(&rep, 0)->status, ext.len);
	CHECK(!(rep.ft.e[0].action & XTX_FIX_FILL), "a big answer filled the kernel");
	CHECK(rop(&rep, 1)->status == XTX_ST_OK && !(rop(&rep, 1)->flags & XTX_OPF_EXT) &&
	      rop(&rep, 1)->vlen == 20 && value_is(rop(&rep, 1)->value, 20, 0x22) &&
	      (rep.ft.e[1].action & XTX_FIX_FILL), "a small value answers in the slot");
	ext = rext(&rep, 2);
	CHECK(rop(&rep, 2)->status == XTX_ST_TOO_BIG && ext.len == 1024 && ext.cap == 200 &&
	      !(rep.ft.e[2].action & XTX_FIX_FILL), "1024 bytes in 200: status %u len %u",
	      rop(&rep, 2)->status, ext.len);

	/* no room at all: TOO_BIG with the length, and nothing changed */
	req_init(&r, 4, 2, 1);
	req_defer(&r, 0, XTX_OP_GET, 1, 7, 0);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_TOO_BIG &&
	      (rop(&rep, 0)->flags & XTX_OPF_EXT) && rext(&rep, 0).len == 512,
	      "GET without room: status %u", rop(&rep, 0)->status);
	CHECK(!xtxd_ovf_get(x.store, 1, 7, &got) && got.version == 4 && got.vlen == 512,
	      "TOO_BIG changed the store");

	/* a grant too big for its room takes nothing: TC releases XDP's grant */
	req_init(&r, 4, 3, 1);
	req_defer(&r, 0, XTX_OP_LOCK_EXCL, 1, 9, 0);
	req_area(&r, 0, 100, 0, 0);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_TOO_BIG &&
	      rext(&rep, 0).len == 1024 && (rep.ft.e[0].action & XTX_FIX_RELEASE) &&
	      !(rep.ft.e[0].action & XTX_FIX_FILL), "too-big grant: status %u action %#x",
	      rop(&rep, 0)->status, rep.ft.e[0].action);
	/* with room, granted with the value */
	req_init(&r, 4, 4, 1);
	req_defer(&r, 0, XTX_OP_LOCK_EXCL, 1, 9, 0);
	off = req_area(&r, 0, 1024, 0, 0);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rext(&rep, 0).len == 1024 && value_is(rep.buf + off, 1024, 0x33) &&
	      !(rep.ft.e[0].action & (XTX_FIX_RELEASE | XTX_FIX_FILL)),
	      "grant with room: status %u action %#x", rop(&rep, 0)->status,
	      rep.ft.e[0].action);
	exec_teardown();
}

/*
 * A big write to a key the kernel caches: the dirty kernel copy is saved
 * first, the op runs on it, and TC is told to free the way, never to fill.
 */
static void exec_evict(void)
{
	struct xtxd_ovf_item got;
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;

	exec_setup(100);
	req_init(&r, 5, 1, 1);
	e = req_defer(&r, 0, XTX_OP_UPDATE, 2, 70, 0);
	req_area(&r, 0, 512, 300, 0x5e);
	set_victim(e, 2, 70, 7, XTX_KVF_VALID | XTX_KVF_DIRTY, 0x07);
	e->flags |= XTX_DEFER_EVICT;
	e->fill_way = e->victim_way;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 8, "evicting update: status %u version %llu",
	      rop(&rep, 0)->status, (unsigned long long)rop(&rep, 0)->version);
	CHECK(rep.ft.e[0].action == (XTX_FIX_VICTIM_SAVED | XTX_FIX_EVICT) &&
	      rep.ft.e[0].fill_way == 1 && rep.ft.e[0].victim_version == 7 &&
	      (rep.ft.e[0].bloom & bit_of(2, 70)), "evict fix: action %#x",
	      rep.ft.e[0].action);
	CHECK(!xtxd_ovf_get(x.store, 2, 70, &got) && got.version == 8 && got.vlen == 300 &&
	      value_is(got.value, 300, 0x5e), "the store holds v%llu of %u bytes",
	      (unsigned long long)got.version, got.vlen);

	/* its copy again (the answer was lost, TC never evicted): the record answers, evicting */
	req_init(&r, 5, 1, 1);
	e = req_defer(&r, 0, XTX_OP_UPDATE, 2, 70, 0);
	req_area(&r, 0, 512, 300, 0x5e);
	set_victim(e, 2, 70, 7, XTX_KVF_VALID | XTX_KVF_DIRTY, 0x07);
	e->flags |= XTX_DEFER_EVICT;
	e->fill_way = e->victim_way;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 8 && x.stats.duplicates == 1 &&
	      (rep.ft.e[0].action & XTX_FIX_EVICT) && !(rep.ft.e[0].action & XTX_FIX_FILL),
	      "evicting update again: status %u v%llu action %#x", rop(&rep, 0)->status,
	      (unsigned long long)rop(&rep, 0)->version, rep.ft.e[0].action);
	CHECK(!xtxd_ovf_get(x.store, 2, 70, &got) && got.version == 8 && got.vlen == 300,
	      "the old kernel copy overwrote the store: v%llu", (unsigned long long)got.version);

	/* a clean cached copy: no victim, the store's copy is current */
	req_init(&r, 5, 2, 1);
	e = req_defer(&r, 0, XTX_OP_UPDATE, 2, 70, 0);
	req_area(&r, 0, 64, 64, 0x6f);
	e->flags |= XTX_DEFER_EVICT;
	e->fill_way = 4;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 9 && rep.ft.e[0].action == XTX_FIX_EVICT,
	      "clean evict: status %u action %#x", rop(&rep, 0)->status, rep.ft.e[0].action);

	/* the kernel copy cannot be saved (store full): the op does not run, nothing evicted */
	exec_teardown();
	exec_setup(1);
	seed(0, 1, 1, 0x01);
	req_init(&r, 5, 3, 1);
	e = req_defer(&r, 0, XTX_OP_UPDATE, 2, 71, 0);
	req_area(&r, 0, 64, 64, 0x6f);
	set_victim(e, 2, 71, 3, XTX_KVF_VALID | XTX_KVF_DIRTY, 0x03);
	e->flags |= XTX_DEFER_EVICT;
	e->fill_way = e->victim_way;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_FULL &&
	      !(rep.ft.e[0].action & (XTX_FIX_EVICT | XTX_FIX_VICTIM_SAVED)),
	      "unsaved evict: status %u action %#x", rop(&rep, 0)->status, rep.ft.e[0].action);
	CHECK(xtxd_ovf_get(x.store, 2, 71, &got) == -ENOENT, "FULL stored the key");

	/* an eviction that names a victim of another key is a bad datagram */
	req_init(&r, 5, 4, 1);
	e = req_defer(&r, 0, XTX_OP_UPDATE, 2, 71, 0);
	req_area(&r, 0, 64, 64, 0x6f);
	set_victim(e, 2, neighbour(2, 71), 3, XTX_KVF_VALID | XTX_KVF_DIRTY, 0x03);
	e->flags |= XTX_DEFER_EVICT;
	e->fill_way = e->victim_way;
	CHECK(run(&r, &rep) < 0, "an eviction of another key's way was run");
	exec_teardown();
}

/* A retransmitted grant that answered a big value is answered with it again, from the record. */
static void exec_big_replay(void)
{
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;
	uint16_t off;

	exec_setup(100);
	seed_big(3, 5, 10, 700, 0x70);
	req_init(&r, 6, 50, 1);
	req_defer(&r, 0, XTX_OP_LOCK_EXCL, 3, 5, 0);
	off = req_area(&r, 0, 1024, 0, 0);
	op_at(r.buf, 0)->token = 0x77;	/* the grant XDP's lock half took */
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rext(&rep, 0).len == 700, "first grant: status %u", rop(&rep, 0)->status);
	/* the key changes meanwhile (another value): the replay still answers what was granted */
	seed_big(3, 5, 11, 900, 0x90);
	req_init(&r, 6, 50, 1);
	e = req_defer(&r, 0, XTX_OP_LOCK_EXCL, 3, 5, 0);
	e->flags |= XTX_DEFER_REPLAY;
	off = req_area(&r, 0, 1024, 0, 0);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      (rop(&rep, 0)->flags & XTX_OPF_EXT) && rext(&rep, 0).len == 700 &&
	      rop(&rep, 0)->version == 10 && value_is(rep.buf + off, 700, 0x70) &&
	      rop(&rep, 0)->token == 0x77 && x.stats.replays == 1,
	      "replayed grant: status %u len %u v%llu",
	      rop(&rep, 0)->status, rext(&rep, 0).len, (unsigned long long)rop(&rep, 0)->version);

	/*
	 * A replayed TOO_BIG answers TOO_BIG with the length again, and
	 * releases the first copy's grant: if the first answer was lost, its
	 * release was too, and the lock would wait for the lock lease.
	 */
	req_init(&r, 6, 51, 1);
	req_defer(&r, 0, XTX_OP_LOCK_EXCL, 3, 5, 0);
	req_area(&r, 0, 64, 0, 0);
	op_at(r.buf, 0)->token = 0x55;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_TOO_BIG, "too big");
	req_init(&r, 6, 51, 1);
	req_defer(&r, 0, XTX_OP_LOCK_EXCL, 3, 5, 0)->flags |= XTX_DEFER_REPLAY;
	req_area(&r, 0, 64, 0, 0);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_TOO_BIG &&
	      rext(&rep, 0).len == 900 && (rep.ft.e[0].action & XTX_FIX_RELEASE) &&
	      rop(&rep, 0)->token == 0x55,
	      "replayed TOO_BIG: status %u len %u action %#x token %#llx", rop(&rep, 0)->status,
	      rext(&rep, 0).len, rep.ft.e[0].action, (unsigned long long)rop(&rep, 0)->token);
	exec_teardown();
}

/*
 * A deferred COMMIT_PRIMARY keeps its transaction lock in XDP until xtxd
 * answers: every answer but RETRY releases it (XTX_FIX_RELEASE, the
 * commit's token), also one from the record, since the first may be lost.
 */
static void exec_commit_release(void)
{
	static struct xtx_kv_bucket kv[NB];
	struct xtxd_ovf_item got;
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;
	uint32_t b = xtx_bucket_of(xtx_hash(1, 40), NB);

	exec_setup(100);
	memset(kv, 0, sizeof(kv));
	x.kv = kv;
	x.kv_buckets = NB;
	seed(1, 40, 5, 0x05);

	/* taken over before it ran: RETRY, and the lock stays for the resend */
	kv[b].lock = 0x7777;
	req_init(&r, 5, 60, 1);
	e = req_defer(&r, 0, XTX_OP_COMMIT_PRIMARY, 1, 40, 0);
	e->flags |= XTX_DEFER_EVICT;
	op_at(r.buf, 0)->version = 5;
	op_at(r.buf, 0)->token = 0x99;
	req_area(&r, 0, 700, 700, 0x70);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_RETRY &&
	      !(rep.ft.e[0].action & XTX_FIX_RELEASE),
	      "taken-over commit: status %u action %#x", rop(&rep, 0)->status,
	      rep.ft.e[0].action);

	/* the resend, held: installed, and the lock goes with the answer */
	kv[b].lock = e->token;
	req_init(&r, 5, 61, 1);
	e = req_defer(&r, 0, XTX_OP_COMMIT_PRIMARY, 1, 40, 0);
	e->flags |= XTX_DEFER_EVICT;
	op_at(r.buf, 0)->version = 5;
	op_at(r.buf, 0)->token = 0x99;
	req_area(&r, 0, 700, 700, 0x70);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 6 && (rep.ft.e[0].action & XTX_FIX_RELEASE) &&
	      rop(&rep, 0)->token == 0x99 && !xtxd_ovf_get(x.store, 1, 40, &got) &&
	      got.version == 6 && got.vlen == 700,
	      "commit: status %u v%llu action %#x", rop(&rep, 0)->status,
	      (unsigned long long)rop(&rep, 0)->version, rep.ft.e[0].action);

	/* its replay (the answer was lost): the record answers, releasing again */
	req_init(&r, 5, 61, 1);
	e = req_defer(&r, 0, XTX_OP_COMMIT_PRIMARY, 1, 40, 0);
	e->flags |= XTX_DEFER_EVICT | XTX_DEFER_REPLAY;
	op_at(r.buf, 0)->version = 5;
	op_at(r.buf, 0)->token = 0x99;
	req_area(&r, 0, 700, 700, 0x70);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      (rep.ft.e[0].action & XTX_FIX_RELEASE) && rop(&rep, 0)->token == 0x99,
	      "replayed commit: status %u action %#x", rop(&rep, 0)->status,
	      rep.ft.e[0].action);

	/* a later copy finds it installed, and one at another version CHANGED: both release */
	req_init(&r, 5, 62, 1);
	req_defer(&r, 0, XTX_OP_COMMIT_PRIMARY, 1, 40, 0);
	op_at(r.buf, 0)->version = 5;
	op_at(r.buf, 0)->token = 0x99;
	req_area(&r, 0, 700, 700, 0x70);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_ALREADY_APPLIED &&
	      (rep.ft.e[0].action & XTX_FIX_RELEASE),
	      "already applied: status %u action %#x", rop(&rep, 0)->status, rep.ft.e[0].action);
	req_init(&r, 5, 63, 1);
	req_defer(&r, 0, XTX_OP_COMMIT_PRIMARY, 1, 40, 0);
	op_at(r.buf, 0)->version = 2;
	req_area(&r, 0, 700, 700, 0x70);
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_CHANGED &&
	      (rep.ft.e[0].action & XTX_FIX_RELEASE),
	      "changed: status %u action %#x", rop(&rep, 0)->status, rep.ft.e[0].action);
	exec_teardown();
}

/*
 * An op on a way EVICTING brings its victim again, after the store ran
 * the big write (or an op after it): a victim at a version the store
 * already has is not written over it.  A victim the store has no room
 * for: the op does not run and the way serves again (XTX_FIX_UNEVICT).
 */
static void exec_evict_again(void)
{
	struct xtxd_ovf_item got;
	struct xtx_defer_entry *e;
	struct req r;
	struct reply rep;

	exec_setup(100);
	seed_big(2, 80, 8, 300, 0x5e);	/* the big write, at the version the kernel copy had */
	req_init(&r, 5, 1, 1);
	e = req_defer(&r, 0, XTX_OP_UPDATE, 2, 80, 0x0d);
	set_victim(e, 2, 80, 8, XTX_KVF_VALID | XTX_KVF_DIRTY | XTX_KVF_EVICTING, 0x08);
	e->flags |= XTX_DEFER_EVICT;
	e->fill_way = e->victim_way;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 9 &&
	      (rep.ft.e[0].action & (XTX_FIX_VICTIM_SAVED | XTX_FIX_EVICT)) ==
	      (XTX_FIX_VICTIM_SAVED | XTX_FIX_EVICT) && x.stats.victims_stale == 1,
	      "update of an EVICTING way: status %u v%llu action %#x",
	      rop(&rep, 0)->status, (unsigned long long)rop(&rep, 0)->version,
	      rep.ft.e[0].action);
	CHECK(!xtxd_ovf_get(x.store, 2, 80, &got) && got.version == 9 && got.vlen == 8 &&
	      got.value[0] == 0x0d, "the store holds v%llu of %u bytes",
	      (unsigned long long)got.version, got.vlen);
	/* the same victim again, with a GET: the store is newer, nothing written */
	req_init(&r, 5, 2, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 2, 80, 0);
	set_victim(e, 2, 80, 8, XTX_KVF_VALID | XTX_KVF_DIRTY | XTX_KVF_EVICTING, 0x08);
	e->flags |= XTX_DEFER_EVICT;
	e->fill_way = e->victim_way;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_OK &&
	      rop(&rep, 0)->version == 9 && rop(&rep, 0)->value[0] == 0x0d &&
	      !(rep.ft.e[0].action & XTX_FIX_FILL),
	      "GET of an EVICTING way: status %u v%llu", rop(&rep, 0)->status,
	      (unsigned long long)rop(&rep, 0)->version);
	/* equal versions: the store's copy stays (a write-back never replaces it) */
	seed_big(2, 81, 3, 300, 0x33);
	req_init(&r, 5, 3, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 2, 81, 0);
	set_victim(e, 2, 81, 3, XTX_KVF_VALID | XTX_KVF_DIRTY | XTX_KVF_EVICTING, 0x03);
	e->flags |= XTX_DEFER_EVICT;
	e->fill_way = e->victim_way;
	CHECK(run(&r, &rep) > 0 && !xtxd_ovf_get(x.store, 2, 81, &got) && got.version == 3 &&
	      got.vlen == 300 && value_is(got.value, 300, 0x33),
	      "a write-back at the store's version replaced it: %u bytes", got.vlen);
	exec_teardown();

	/* no room for the victim: FULL, and the way serves again */
	exec_setup(1);
	seed(0, 1, 1, 0x01);
	req_init(&r, 5, 4, 1);
	e = req_defer(&r, 0, XTX_OP_GET, 2, 82, 0);
	set_victim(e, 2, 82, 3, XTX_KVF_VALID | XTX_KVF_DIRTY | XTX_KVF_EVICTING, 0x03);
	e->flags |= XTX_DEFER_EVICT;
	e->fill_way = e->victim_way;
	CHECK(run(&r, &rep) > 0 && rop(&rep, 0)->status == XTX_ST_FULL &&
	      (rep.ft.e[0].action & XTX_FIX_UNEVICT) &&
	      !(rep.ft.e[0].action & (XTX_FIX_EVICT | XTX_FIX_VICTIM_SAVED)),
	      "unsaved EVICTING way: status %u action %#x", rop(&rep, 0)->status,
	      rep.ft.e[0].action);
	exec_teardown();
}

/* Areas that do not lie in the body, or write values that belong in the slot: dropped. */
static void exec_bad_area(void)
{
	struct req r;
	struct reply rep;
	struct xtx_ext ext;

	exec_setup(100);
	req_init(&r, 7, 1, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 1, 1, 0);
	req_area(&r, 0, 64, 40, 0x01);
	CHECK(run(&r, &rep) < 0, "an area write of 40 bytes was run");
	req_init(&r, 7, 2, 1);
	req_defer(&r, 0, XTX_OP_INSERT, 1, 1, 0);
	req_area(&r, 0, 64, 65, 0x01);
	CHECK(run(&r, &rep) < 0, "a value longer than its area was run");
	req_init(&r, 7, 3, 1);
	req_defer(&r, 0, XTX_OP_GET, 1, 1, 0);
	req_area(&r, 0, 64, 0, 0);
	memcpy(&ext, op_at(r.buf, 0)->value, sizeof(ext));
	ext.cap = 72;	/* past the body's end */
	memcpy(op_at(r.buf, 0)->value, &ext, sizeof(ext));
	CHECK(run(&r, &rep) < 0, "an area past the body was used");
	CHECK(xtxd_ovf_count(x.store) == 0, "a dropped datagram changed the store");
	exec_teardown();
}

int main(void)
{
	const char *env = getenv("XTX_FUZZ_SEED");

	run_seed = env ? strtoull(env, NULL, 0) :
			 (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	rng = run_seed;
	printf("# seed %llu (XTX_FUZZ_SEED=%llu replays it)\n", (unsigned long long)run_seed,
	       (unsigned long long)run_seed);
	rcu_register_thread();
	RUN_CASE(store_put_if_newer);
	RUN_CASE(store_delete);
	RUN_CASE(store_full);
	RUN_CASE(bloom_counts);
	RUN_CASE(bloom_random_exact);
	RUN_CASE(store_concurrent);
	RUN_CASE(exec_get);
	RUN_CASE(exec_insert);
	RUN_CASE(exec_update);
	RUN_CASE(exec_delete);
	RUN_CASE(exec_tomb_victim);
	RUN_CASE(exec_valid_victim);
	RUN_CASE(exec_taken_over_victim);
	RUN_CASE(exec_taken_over_floor);
	RUN_CASE(exec_taken_over_insert);
	RUN_CASE(exec_full);
	RUN_CASE(exec_replay);
	RUN_CASE(exec_malformed);
	RUN_CASE(store_big_values);
	RUN_CASE(store_valstore);
	RUN_CASE(valstore_clear_many);
	RUN_CASE(exec_big_write);
	RUN_CASE(exec_pending_record);
	RUN_CASE(exec_big_read);
	RUN_CASE(exec_evict);
	RUN_CASE(exec_big_replay);
	RUN_CASE(exec_commit_release);
	RUN_CASE(exec_evict_again);
	RUN_CASE(exec_bad_area);
	rcu_unregister_thread();
	printf("# test_overflow: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
