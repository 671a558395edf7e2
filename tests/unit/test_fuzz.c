// SPDX-License-Identifier: GPL-2.0-only
/*
 * A structure-aware fuzz of the XDP program through BPF_PROG_TEST_RUN: requests over every
 * opcode with random fields, flags, lengths and op counts, and requests broken on purpose.
 * After every refused packet each map that holds state is byte-identical to before; plain
 * KV ops on table 0 are checked against the reference model.  The seed is new each run and
 * printed; XTX_FUZZ_SEED=S replays a run, XTX_FUZZ_PACKETS=N sets its length.
 */
/* checks: 3 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/msg.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include "check.h"
#include "harness.h"
#include "kvmodel.h"

#define FUZZ_CLIENTS		4	/* random requests' ids; the model's client is the next */
#define FUZZ_MAX_CLIENTS	8
#define FUZZ_LOCK_SLOTS		64
#define FUZZ_HADES_SLOTS	8
#define FUZZ_LOG_RING		16
#define FUZZ_KV_KEYS		24	/* table 0's keys: few enough that no bucket overflows */
#define FUZZ_TXN_KEYS		16	/* the other tables' keys */
#define FUZZ_DEFAULT_PACKETS	1000000
#define BROKEN_BATCH		64	/* broken requests between two snapshots */

static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t x = rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng = x;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* ---- the maps that hold state, read whole ---- */

struct snap_map {
	const char *name;
	int fd;
	uint32_t n, vsize;
	uint8_t *a, *b;		/* before, after */
};

static struct snap_map maps[16];
static unsigned int nmaps;

static void snap_add(struct bpf_map *m)
{
	struct snap_map *s = &maps[nmaps++];

	s->name = bpf_map__name(m);
	s->fd = bpf_map__fd(m);
	s->n = bpf_map__max_entries(m);
	s->vsize = bpf_map__value_size(m);
	s->a = calloc(s->n, s->vsize);
	s->b = calloc(s->n, s->vsize);
}

/* The whole array in one call. */
static int snap_read(struct snap_map *s, uint8_t *into)
{
	static uint32_t keys[4096];
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	uint32_t out, count = s->n;
	int err;

	err = bpf_map_lookup_batch(s->fd, NULL, &out, keys, into, &count, &o);
	if (err && errno != ENOENT)
		return -errno;
	return count == s->n ? 0 : -EIO;
}

static void snapshot(int after)
{
	unsigned int i;

	for (i = 0; i < nmaps; i++)
		CHECK(!snap_read(&maps[i], after ? maps[i].b : maps[i].a), "reading map %s",
		      maps[i].name);
}

/*
 * What xtxd's drain does: every CPU's log emptied, so plain writes always
 * find room.  Returns whether it moved anything.
 */
static bool drain_log(void)
{
	int fd = bpf_map__fd(skel->maps.xtx_log_cursor), ncpu = libbpf_num_possible_cpus(), c;
	struct xtx_log_cursor cur;
	bool moved = false;

	for (c = 0; c < ncpu; c++)
		if (!bpf_map_lookup_elem(fd, &c, &cur) && cur.head != cur.tail) {
			cur.head = cur.tail;
			bpf_map_update_elem(fd, &c, &cur, BPF_ANY);
			moved = true;
		}
	return moved;
}

/* A small server: every map small enough to be read whole around each packet. */
static struct xtx_xdp *load_small(void)
{
	struct xtx_xdp *s = xtx_xdp__open();
	int ncpu = libbpf_num_possible_cpus();

	if (!s)
		return NULL;
	s->rodata->xtx_max_clients = FUZZ_MAX_CLIENTS;
	s->rodata->xtx_nr_cpus = ncpu;
	s->rodata->xtx_lock_slots = FUZZ_LOCK_SLOTS;
	s->rodata->xtx_kv_buckets = 64;
	s->rodata->xtx_log_ring = FUZZ_LOG_RING;
	s->rodata->xtx_hades_slots = FUZZ_HADES_SLOTS;
	if (bpf_map__set_max_entries(s->maps.xtx_dedupe, FUZZ_MAX_CLIENTS * XTX_DEDUPE_WINDOW) ||
	    bpf_map__set_max_entries(s->maps.xtx_locks, FUZZ_LOCK_SLOTS) ||
	    bpf_map__set_max_entries(s->maps.xtx_kv, 64) ||
	    bpf_map__set_max_entries(s->maps.xtx_defer_ring, XTX_DEFER_RING * ncpu) ||
	    bpf_map__set_max_entries(s->maps.xtx_log, FUZZ_LOG_RING * ncpu) ||
	    bpf_map__set_max_entries(s->maps.xtx_log_cursor, ncpu) ||
	    bpf_map__set_max_entries(s->maps.xtx_hades, FUZZ_HADES_SLOTS) ||
	    xtx_xdp__load(s)) {
		xtx_xdp__destroy(s);
		return NULL;
	}
	return s;
}

/* The first map that changed, or NULL. */
static const struct snap_map *snap_changed(void)
{
	unsigned int i;

	for (i = 0; i < nmaps; i++)
		if (memcmp(maps[i].a, maps[i].b, (size_t)maps[i].n * maps[i].vsize))
			return &maps[i];
	return NULL;
}

/* ---- requests ---- */

static const uint8_t opcodes[] = {
	XTX_OP_PING, XTX_OP_STATS, XTX_OP_COUNTER_ADD, XTX_OP_LOCK_SHARED, XTX_OP_LOCK_EXCL,
	XTX_OP_UNLOCK_SHARED, XTX_OP_UNLOCK_EXCL, XTX_OP_OCC_LOCK, XTX_OP_OCC_UNLOCK,
	XTX_OP_OCC_VALIDATE, XTX_OP_GET, XTX_OP_INSERT, XTX_OP_UPDATE, XTX_OP_DELETE,
	XTX_OP_READ, XTX_OP_COMMIT_BACKUP, XTX_OP_COMMIT_PRIMARY, XTX_OP_LOG_APPEND,
	XTX_OP_HREAD, XTX_OP_HWRITE, XTX_OP_HINTEND, XTX_OP_HVALIDATE, XTX_OP_HABORT,
};

/* A random op: mostly meaningful fields, sometimes anything at all. */
static void random_op(struct xtx_op *op, uint32_t client, bool kv_only)
{
	bool wild = below(16) == 0;

	op->opcode = kv_only ? XTX_OP_GET + below(4) : opcodes[below(sizeof(opcodes))];
	op->table = kv_only ? 0 : 1 + below(XTX_MAX_TABLES - 1);
	op->key = below(kv_only ? FUZZ_KV_KEYS : FUZZ_TXN_KEYS);
	op->vlen = below(XTX_VALUE_INLINE + 1);
	op->version = below(4) ? below(8) : rnd();
	op->txn = xtx_txn_make(client, 1 + below(4));
	op->token = below(2) ? below(8) : rnd();
	op->flags = below(2) ? 0 : (uint32_t)rnd();
	for (unsigned int i = 0; i < op->vlen; i++)
		op->value[i] = (uint8_t)rnd();
	if (kv_only) {
		op->flags = 0;
		return;
	}
	if (wild) {
		uint8_t *p = (uint8_t *)op;
		unsigned int i, n = 1 + below(4);

		for (i = 0; i < n; i++)
			p[below(sizeof(*op))] = (uint8_t)rnd();
	}
}

/* A well-formed request of random ops; kv_only: plain KV ops on table 0 (the model's). */
static size_t random_req(uint8_t *payload, uint32_t *client, bool kv_only)
{
	unsigned int nops = 1 + below(XTX_MAX_OPS), i;

	*client = below(FUZZ_CLIENTS);
	xtx_msg_init(payload, *client, 1 + below(64));
	for (i = 0; i < nops; i++) {
		struct xtx_op *op = xtx_msg_add(payload, XTX_OP_PING, 0, 0);

		random_op(op, *client, kv_only);
	}
	return xtx_msg_len(nops);
}

enum breakage { BR_MAGIC, BR_VERSION, BR_NOPS_ZERO, BR_NOPS_BIG, BR_SHORT, BR_LONG, BR_REPLY,
		BR_CLIENT, BR_TABLE, BR_VLEN, BR_OPCODE, BR_TXN_OWNER, BR_EPOCH, BR__COUNT };

/*
 * A request broken in one way a server must refuse whole: in the header,
 * the length, or one op of an otherwise good request (nothing runs then).
 */
static size_t broken_req(uint8_t *payload, uint32_t *client, enum breakage *how)
{
	size_t len = random_req(payload, client, below(2));
	struct xtx_hdr *h = (struct xtx_hdr *)payload;
	struct xtx_op *op = xtx_msg_ops(payload) + below(h->nops);

	*how = (enum breakage)below(BR__COUNT);
	switch (*how) {
	case BR_MAGIC: h->magic ^= 1u << below(32); break;
	case BR_VERSION: h->version += 1 + below(200); break;
	case BR_NOPS_ZERO: h->nops = 0; break;
	case BR_NOPS_BIG: h->nops = XTX_MAX_OPS + 1 + below(200); break;
	case BR_SHORT: len -= 1 + below(sizeof(struct xtx_op) - 1); break;
	case BR_LONG: len += 1 + below(sizeof(struct xtx_op) - 1); break;
	case BR_REPLY: h->flags |= XTX_F_REPLY; break;
	case BR_CLIENT: h->client_id = FUZZ_MAX_CLIENTS + below(65536 - FUZZ_MAX_CLIENTS); break;
	case BR_TABLE: op->table = XTX_MAX_TABLES + below(256 - XTX_MAX_TABLES); break;
	case BR_VLEN: op->vlen = XTX_VALUE_INLINE + 1 + below(255 - XTX_VALUE_INLINE); break;
	case BR_OPCODE: op->opcode = 37 + below(219); break;
	case BR_TXN_OWNER:
		/* a lock op naming another client's transaction */
		op->opcode = XTX_OP_LOCK_EXCL;
		op->txn = xtx_txn_make((*client + 1) % FUZZ_CLIENTS, 1);
		break;
	case BR_EPOCH:
		/* a static server (epoch 0) serves no configuration's epoch, fenced included */
		h->epoch = 1 + below(0xffff);
		break;
	default: break;
	}
	return len;
}

/*
 * Whether the server refused the packet whole: dropped, or answered with a
 * refusal.  XDP_PASS hands it to xtxd's rare path: accepted.
 */
static bool refused(struct run *r)
{
	return r->retval == XDP_DROP || r->retval == XDP_ABORTED ||
	       (r->retval == XDP_TX && out_hdr(r)->status != XTX_ST_OK);
}

/* ---- the cases ---- */

static uint64_t npackets, seed;
static uint64_t n_broken, n_random, n_refused, n_model_ops, n_deferred;

/* Swaps before and after: the state after one packet is the state before the next. */
static void snap_advance(void)
{
	unsigned int i;

	for (i = 0; i < nmaps; i++) {
		uint8_t *t = maps[i].a;

		maps[i].a = maps[i].b;
		maps[i].b = t;
	}
}

/*
 * Broken requests, in batches between two snapshots: each must be refused,
 * so the state after a batch is the state before it, byte for byte.
 */
static void fuzz_broken_refused(void)
{
	static struct run r;
	uint8_t payload[PKT_MAX];
	uint64_t i, changed = 0, accepted = 0, first;
	enum breakage how, first_how = BR__COUNT;
	const struct snap_map *m;
	uint32_t client;

	drain_log();
	snapshot(0);
	for (i = 0, first = 0; i < npackets / 2; i++) {
		size_t len = broken_req(payload, &client, &how);

		r.in_len = pkt_build(r.in, &pkt_default_addrs, payload, len);
		CHECK(!run(&r), "test run");
		n_broken++;
		if (!refused(&r) && accepted++ < 5)
			printf("#   seed %" PRIu64 " packet %" PRIu64 ": breakage %d accepted\n", seed,
			       i, how);
		if (first_how == BR__COUNT)
			first_how = how;
		if ((i + 1) % BROKEN_BATCH && i + 1 < npackets / 2)
			continue;
		snapshot(1);
		m = snap_changed();
		if (m && changed++ < 5)
			printf("#   seed %" PRIu64 " packets %" PRIu64 "..%" PRIu64 " (the first broken "
			       "as %d) changed map %s\n", seed, first, i, first_how, m->name);
		snap_advance();
		first = i + 1;
		first_how = BR__COUNT;
	}
	CHECK(!accepted, "%" PRIu64 " broken requests accepted", accepted);
	CHECK(!changed, "%" PRIu64 " batches of broken requests changed state", changed);
}

/* Random requests: one refused leaves the state as the one before left it. */
static void fuzz_random(void)
{
	static struct run r;
	uint8_t payload[PKT_MAX];
	uint64_t i, changed = 0;
	const struct snap_map *m;
	uint32_t client;

	drain_log();
	snapshot(0);
	for (i = 0; i < npackets / 4; i++) {
		size_t len = random_req(payload, &client, false);

		r.in_len = pkt_build(r.in, &pkt_default_addrs, payload, len);
		CHECK(!run(&r), "test run");
		n_random++;
		snapshot(1);
		if (refused(&r)) {
			n_refused++;
			m = snap_changed();
			if (m && changed++ < 5)
				printf("#   seed %" PRIu64 " packet %" PRIu64 ": refused (status %u, "
				       "action %d) but changed map %s\n", seed, i,
				       out_hdr(&r)->status, r.retval, m->name);
		}
		/* the drain runs between packets, as xtxd's does: not a change of theirs */
		if (drain_log())
			snapshot(1);
		snap_advance();
	}
	CHECK(n_refused > 0, "some random requests refused");
	CHECK(!changed, "%" PRIu64 " refused requests changed state", changed);
}

static void fuzz_kv_model(void)
{
	static struct run r;
	struct kvmodel *model = kvmodel_new(XTX_VALUE_INLINE, 0);
	uint8_t payload[PKT_MAX], sent[PKT_MAX];
	uint64_t i, bad = 0;
	char why[KVMODEL_WHY_MAX];
	uint32_t client;
	unsigned int j;

	for (i = 0; i < npackets / 4 && model; i++) {
		size_t len = random_req(payload, &client, true);
		struct xtx_hdr *h = (struct xtx_hdr *)payload;

		/* a fresh request id each time: a repeat would be answered from its record */
		h->req_id = (i + 1) * 64 + 7;
		h->client_id = FUZZ_CLIENTS;
		memcpy(sent, payload, len);
		r.in_len = pkt_build(r.in, &pkt_default_addrs, payload, len);
		drain_log();
		CHECK(!run(&r), "test run");
		if (r.retval != XDP_TX) {
			/* handed to xtxd, which this test has not: the model cannot follow */
			n_deferred++;
			break;
		}
		for (j = 0; j < h->nops; j++) {
			n_model_ops++;
			if (kvmodel_check(model, xtx_msg_ops(sent) + j, out_op(&r, j), why,
					  sizeof(why)) && bad++ < 5)
				printf("#   seed %" PRIu64 " packet %" PRIu64 " op %u: %s\n", seed, i,
				       j, why);
		}
	}
	CHECK(model && !bad, "%" PRIu64 " KV answers differ from the model", bad);
	CHECK(n_model_ops > 0, "KV ops checked against the model");
	kvmodel_free(model);
}

int main(void)
{
	const char *s = getenv("XTX_FUZZ_SEED"), *n = getenv("XTX_FUZZ_PACKETS");
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	seed = s ? strtoull(s, NULL, 0) : (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 20;
	npackets = n ? strtoull(n, NULL, 0) : FUZZ_DEFAULT_PACKETS;
	rng = seed | 1;
	printf("# fuzz: seed %" PRIu64 " (XTX_FUZZ_SEED=%" PRIu64 " replays it), %" PRIu64
	       " packets\n", seed, seed, npackets);
	skel = load_small();
	if (!skel) {
		printf("FAIL: loading the XDP program\n");
		return 1;
	}
	snap_add(skel->maps.xtx_dedupe);
	snap_add(skel->maps.xtx_table_family);
	snap_add(skel->maps.xtx_counters);
	snap_add(skel->maps.xtx_locks);
	snap_add(skel->maps.xtx_kv);
	snap_add(skel->maps.xtx_log_cursor);
	/* the log ring and the defer ring are written only behind their cursors (above) */
	snap_add(skel->maps.xtx_hades);
	snap_add(skel->maps.xtx_hades_reg);

	RUN_CASE(fuzz_kv_model);
	RUN_CASE(fuzz_broken_refused);
	RUN_CASE(fuzz_random);
	printf("# fuzz: %" PRIu64 " broken requests, %" PRIu64 " random (%" PRIu64 " refused), %"
	       PRIu64 " KV ops checked against the model%s\n", n_broken, n_random, n_refused,
	       n_model_ops, n_deferred ? " (stopped at a deferral)" : "");
	xtx_xdp__destroy(skel);
	printf("# test_fuzz: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
