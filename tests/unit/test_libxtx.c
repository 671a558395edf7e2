// SPDX-License-Identifier: GPL-2.0-only
/*
 * libxtx without a network: placement, API misuse, packing, and the OCC
 * and 2PL state machines driven op by op with the answers a server gives.
 * (tests/integration/test_bank.sh runs the same code against real servers.)
 */
/* checks: 16 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <xtx/hades.h>
#include <xtx/log.h>
#include "check.h"
#include "clock.h"
#include "txn/internal.h"

#define NSRV	3
/* the lock lease the clients below keep to; a step past it moves its anchor back */
#define LEASE_NS	(60ull * 1000 * 1000 * 1000)

static struct sockaddr_in srv_addr[NSRV];

static void fill_servers(void)
{
	unsigned int i;

	for (i = 0; i < NSRV; i++) {
		srv_addr[i].sin_family = AF_INET;
		srv_addr[i].sin_port = htons(XTX_DEFAULT_PORT);
		/* documentation addresses: nothing is ever sent in this test */
		srv_addr[i].sin_addr.s_addr = htonl(0xc0000201 + i);
	}
}

static struct xtx_client *open_client(enum xtx_protocol p, unsigned int per_packet)
{
	struct xtx_client_cfg cfg = {
		.servers = srv_addr, .nservers = NSRV, .protocol = p, .client_id = 7,
		.max_inflight = 4, .ops_per_packet = per_packet,
	};

	fill_servers();
	return xtx_client_open(&cfg);
}

/* ---- an application transaction, scripted by the test ---- */

struct script {
	uint64_t keys[4];
	unsigned int nkeys;
	unsigned int get_flags;
	bool write;		/* round 1 puts every key */
	bool insert;		/* ... with xtx_insert() */
	int handles[4];
	int api_err;		/* first misuse result seen */
	struct xtx_txn_result res;
	bool done;
};

static enum xtx_step script_step(struct xtx_txn *t, void *arg)
{
	struct script *s = arg;
	uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	unsigned int i;

	if (xtx_txn_round(t) == 0) {
		for (i = 0; i < s->nkeys; i++)
			s->handles[i] = xtx_get(t, 1, s->keys[i], s->get_flags);
		return s->nkeys ? XTX_STEP_READ : XTX_STEP_COMMIT;
	}
	for (i = 0; s->write && i < s->nkeys; i++) {
		if (s->insert)
			xtx_insert(t, 1, s->keys[i], v, sizeof(v));
		else
			xtx_put(t, 1, s->keys[i], v, sizeof(v));
	}
	return XTX_STEP_COMMIT;
}

static void script_done(struct xtx_txn *t, const struct xtx_txn_result *res, void *arg)
{
	struct script *s = arg;

	(void)t;
	s->res = *res;
	s->done = true;
}

/* Runs ready transactions' next phases, as xtx_poll() does. */
static void advance_all(struct xtx_client *c)
{
	while (c->nready) {
		struct xtx_txn *t = c->ready[--c->nready];

		t->ready = false;
		txn_advance(t);
	}
}

/* Every op queued for any server, taken off the queues (at most n). */
static unsigned int take_queued(struct xtx_client *c, struct txn_opref *out, unsigned int n)
{
	unsigned int s, k = 0;

	for (s = 0; s < NSRV; s++) {
		struct txn_queue *q = &c->queue[s];

		while (q->len && k < n) {
			/* what packing does: the op goes to server s */
			q->ops[q->head].t->sent_mask |= 1ull << s;
			out[k++] = q->ops[q->head];
			q->head = (q->head + 1) % q->cap;
			q->len--;
		}
	}
	return k;
}

/* The server's answer to ref: status, and version/token/value for grants and reads. */
static void answer(struct txn_opref *ref, uint8_t status, uint64_t version, uint64_t token,
		   uint32_t flags)
{
	struct xtx_op op;

	txn_fill_op(ref, &op);
	op.status = status;
	op.version = version;
	op.token = token;
	op.flags = flags;
	op.vlen = 8;
	memset(op.value, 0x5a, 8);
	txn_on_reply(ref, &op);
}

static unsigned int count_opcode(const struct txn_opref *refs, unsigned int n, uint8_t opcode)
{
	unsigned int i, k = 0;
	struct xtx_op op;

	for (i = 0; i < n; i++) {
		txn_fill_op(&refs[i], &op);
		k += op.opcode == opcode;
	}
	return k;
}

static void test_placement(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_OCC, 0);
	unsigned int primaries[NSRV] = { 0 }, k, i;

	CHECK(c, "client opens");
	if (!c)
		return;
	for (k = 0; k < 30000; k++) {
		unsigned int p = xtx_replica_of(c, 2, k, 0);

		primaries[p]++;
		for (i = 1; i < NSRV; i++)
			CHECK(xtx_replica_of(c, 2, k, i) == (p + i) % NSRV,
			      "key %u: replica %u is the next server", k, i);
	}
	for (i = 0; i < NSRV; i++)
		CHECK(primaries[i] > 9000 && primaries[i] < 11000,
		      "server %u is primary of %u of 30000 keys", i, primaries[i]);
	xtx_client_close(c);
}

static void test_bad_config(void)
{
	struct xtx_client_cfg cfg = { .servers = srv_addr, .nservers = NSRV };

	fill_servers();
	cfg.replication = 4;
	CHECK(!xtx_client_open(&cfg), "replication 4 refused");
	cfg.replication = 0;
	cfg.ops_per_packet = XTX_MAX_OPS + 1;
	CHECK(!xtx_client_open(&cfg), "17 ops per packet refused");
	cfg.ops_per_packet = 0;
	cfg.nservers = 0;
	CHECK(!xtx_client_open(&cfg), "no servers refused");
	cfg.nservers = NSRV;
	cfg.client_id = 1u << XTX_CLIENT_BITS;
	CHECK(!xtx_client_open(&cfg), "client id too large refused");
	cfg.client_id = 0;
	srv_addr[2] = srv_addr[0];
	CHECK(!xtx_client_open(&cfg), "one server listed twice refused");
}

static struct { int get_bad_table, get_bad_flags, put_big, too_many, twice, first; } misuse;

static enum xtx_step misuse_step(struct xtx_txn *t, void *arg)
{
	uint8_t big[XTX_VALUE_MAX + 1] = { 0 };
	unsigned int i;
	int h = 0;

	(void)arg;
	misuse.get_bad_table = xtx_get(t, XTX_MAX_TABLES, 1, 0);
	misuse.get_bad_flags = xtx_get(t, 1, 1, 0x80);
	misuse.put_big = xtx_put(t, 1, 1, big, sizeof(big));
	misuse.first = xtx_get(t, 1, 1000, 0);
	misuse.twice = xtx_get(t, 1, 1000, XTX_GET_FOR_UPDATE);
	for (i = 0; i < XTX_TXN_MAX_KEYS + 1 && h >= 0; i++)
		h = xtx_get(t, 1, 2000 + i, 0);
	misuse.too_many = h;
	return XTX_STEP_ABORT;
}

static void test_api_misuse(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_OCC, 0);
	struct script s = { 0 };
	struct xtx_txn *t;

	if (!c)
		return;
	CHECK(xtx_txn_start(c, misuse_step, script_done, &s) == 0, "start");
	t = c->ready[0];
	advance_all(c);
	CHECK(misuse.get_bad_table == -EINVAL, "table out of range: %d", misuse.get_bad_table);
	CHECK(misuse.get_bad_flags == -EINVAL, "unknown get flag: %d", misuse.get_bad_flags);
	CHECK(misuse.put_big == -EMSGSIZE, "value too large: %d", misuse.put_big);
	CHECK(misuse.twice == misuse.first, "a key read twice has one handle");
	CHECK(misuse.too_many == -E2BIG, "key 33: %d", misuse.too_many);
	CHECK(s.done && s.res.outcome == XTX_ABORTED && s.res.cause == XTX_CAUSE_USER,
	      "user abort with nothing held ends at once");
	CHECK(xtx_get(t, 1, 5, 0) == -EALREADY, "a get after the transaction ended is refused");
	CHECK(xtx_put(t, 1, 5, "x", 1) == -EALREADY, "a put outside the step is refused");
	xtx_client_close(c);
}

/* OCC: lock both keys with their reads, log on 3 replicas, backups, primaries. */
static void test_occ_commit_sequence(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_OCC, 0);
	struct script s = { .keys = { 11, 12 }, .nkeys = 2, .get_flags = XTX_GET_FOR_UPDATE,
			    .write = true };
	struct txn_opref refs[32];
	unsigned int n, i, last[NSRV] = { 0 };
	struct xtx_op op;
	__u16 rep[3];
	bool primary;

	if (!c)
		return;
	xtx_txn_start(c, script_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 32);
	CHECK(n == 2 && count_opcode(refs, n, XTX_OP_OCC_LOCK) == 2, "2 fused read+locks: %u", n);
	for (i = 0; i < n; i++) {
		CHECK(refs[i].server == xtx_replica_of(c, 1, refs[i].t->keys[refs[i].key].key, 0),
		      "lock at the primary");
		answer(&refs[i], XTX_ST_OK, 7, 90 + i, 0);
	}
	advance_all(c);
	n = take_queued(c, refs, 32);
	CHECK(n == 6 && count_opcode(refs, n, XTX_OP_LOG_APPEND) == 6,
	      "every write logged on its 3 replicas: %u ops", n);
	for (i = 0; i < n; i++) {
		txn_fill_op(&refs[i], &op);
		CHECK(op.version == 8, "log records the new version");
		CHECK(xtx_log_replicas_unpack(op.token, rep) == 3, "log names 3 replicas");
		primary = refs[i].server == xtx_replica_of(c, 1, op.key, 0);
		CHECK(!!(op.flags & XTX_OPF_LOG_PRIMARY) == primary,
		      "only the primary's append proves the grant");
		CHECK(!primary || xtx_log_grant_of(op.token) == 90 || xtx_log_grant_of(op.token) == 91,
		      "... with the token the lock was granted with (%u)",
		      xtx_log_grant_of(op.token));
		last[refs[i].server] += !!(op.flags & XTX_OPF_LOG_LAST);
		CHECK(!(op.flags & XTX_OPF_LOG_LAST) ||
		      (op.flags & XTX_OPF_LOG_COUNT_MASK) >> XTX_OPF_LOG_COUNT_SHIFT == 2,
		      "the LAST append counts the 2 writes its server logs");
		answer(&refs[i], XTX_ST_OK, i, 0, 0);
	}
	for (i = 0; i < NSRV; i++)
		CHECK(last[i] == 1, "server %u: exactly one LOG_LAST (%u)", i, last[i]);
	CHECK(!s.done, "not done before the commits");
	advance_all(c);
	n = take_queued(c, refs, 32);
	CHECK(n == 4 && count_opcode(refs, n, XTX_OP_COMMIT_BACKUP) == 4,
	      "backups first: 2 keys x 2 backups, %u ops", n);
	for (i = 0; i < n; i++) {
		txn_fill_op(&refs[i], &op);
		CHECK(op.version == 8 && op.vlen == 8 && op.value[0] == 1, "backup gets v+1 and value");
		CHECK(refs[i].server != xtx_replica_of(c, 1, op.key, 0), "not at the primary");
		answer(&refs[i], i ? XTX_ST_OK : XTX_ST_ALREADY_APPLIED, 8, 0, 0);
	}
	advance_all(c);
	n = take_queued(c, refs, 32);
	CHECK(n == 2 && count_opcode(refs, n, XTX_OP_COMMIT_PRIMARY) == 2, "then primaries: %u", n);
	for (i = 0; i < n; i++) {
		txn_fill_op(&refs[i], &op);
		CHECK(op.version == 7 && (op.token == 90 || op.token == 91),
		      "primary commit expects the locked version and echoes the token");
		answer(&refs[i], XTX_ST_OK, 8, 0, 0);
	}
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_COMMITTED && !s.res.read_only, "committed");
	CHECK(s.res.rounds == 4, "4 round trips: lock, log, backups, primaries (%u)", s.res.rounds);
	CHECK(xtx_inflight(c) == 0, "nothing in flight");
	xtx_client_close(c);
}

/* One lock refused: the granted one is released with its token, cause LOCK. */
static void test_conflict_releases(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_2PL, 0);
	struct script s = { .keys = { 21, 22 }, .nkeys = 2, .get_flags = XTX_GET_FOR_UPDATE,
			    .write = true };
	struct txn_opref refs[8];
	struct xtx_op op;
	unsigned int n;

	if (!c)
		return;
	xtx_txn_start(c, script_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 8);
	CHECK(n == 2 && count_opcode(refs, n, XTX_OP_LOCK_EXCL) == 2, "2PL exclusive locks");
	answer(&refs[0], XTX_ST_OK, 3, 44, 0);
	answer(&refs[1], XTX_ST_REJECTED, 0, 0, XTX_LOCKF_EXCL);
	advance_all(c);
	n = take_queued(c, refs, 8);
	CHECK(n == 1, "one release: %u", n);
	txn_fill_op(&refs[0], &op);
	CHECK(op.opcode == XTX_OP_UNLOCK_EXCL && op.token == 44, "releases the grant it got");
	CHECK(!s.done, "waits for the release");
	answer(&refs[0], XTX_ST_OK, 0, 0, 0);
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_ABORTED && s.res.cause == XTX_CAUSE_LOCK,
	      "aborted for a lock conflict");
	xtx_client_close(c);
}

/* OCC read set: a changed version aborts at validation and frees the write lock. */
static void test_occ_validation(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_OCC, 0);
	struct script s = { .keys = { 31, 32 }, .nkeys = 2 };
	struct txn_opref refs[8];
	struct xtx_op op;
	unsigned int n, i;

	if (!c)
		return;
	xtx_txn_start(c, script_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 8);
	CHECK(n == 2 && count_opcode(refs, n, XTX_OP_READ) == 2, "plain reads: %u", n);
	for (i = 0; i < n; i++)
		answer(&refs[i], XTX_ST_OK, 5, 0, 0);
	advance_all(c);
	n = take_queued(c, refs, 8);
	/* a read-only transaction of two keys validates both */
	CHECK(n == 2 && count_opcode(refs, n, XTX_OP_OCC_VALIDATE) == 2, "validates: %u", n);
	txn_fill_op(&refs[0], &op);
	CHECK(op.version == 5, "validates the version read");
	answer(&refs[0], XTX_ST_OK, 5, 0, 0);
	answer(&refs[1], XTX_ST_CHANGED, 6, 0, 0);
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_ABORTED && s.res.cause == XTX_CAUSE_VALIDATION,
	      "validation abort");

	/* a single-key read-only transaction commits on its read alone */
	memset(&s, 0, sizeof(s));
	s.keys[0] = 33;
	s.nkeys = 1;
	xtx_txn_start(c, script_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 8);
	answer(&refs[0], XTX_ST_OK, 5, 0, 0);
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_COMMITTED && s.res.rounds == 1,
	      "one-key read commits without validation");
	CHECK(take_queued(c, refs, 8) == 0, "and sends nothing more");
	xtx_client_close(c);
}

/* Insert of a key that exists aborts after locking, before anything is logged. */
static void test_insert_exists(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_OCC, 0);
	struct script s = { .keys = { 41 }, .nkeys = 1, .write = true, .insert = true };
	struct txn_opref refs[8];
	unsigned int n;

	if (!c)
		return;
	xtx_txn_start(c, script_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 8);
	answer(&refs[0], XTX_ST_OK, 2, 0, 0);		/* the plain read finds it */
	advance_all(c);
	n = take_queued(c, refs, 8);
	CHECK(n == 1 && count_opcode(refs, n, XTX_OP_OCC_LOCK) == 1, "blind write locks first");
	answer(&refs[0], XTX_ST_OK, 2, 5, 0);
	advance_all(c);
	n = take_queued(c, refs, 8);
	CHECK(n == 1 && count_opcode(refs, n, XTX_OP_OCC_UNLOCK) == 1, "then releases: %u", n);
	answer(&refs[0], XTX_ST_OK, 0, 0, 0);
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_ABORTED && s.res.cause == XTX_CAUSE_EXISTS,
	      "insert of an existing key: cause %d", s.res.cause);
	xtx_client_close(c);
}

/* Lost before the commit point: FAILED.  A lost log op is sent again instead. */
static void test_lost_requests(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_OCC, 0);
	struct script s = { .keys = { 51 }, .nkeys = 1, .get_flags = XTX_GET_FOR_UPDATE,
			    .write = true };
	struct txn_opref refs[8];
	unsigned int n, i;

	if (!c)
		return;
	xtx_txn_start(c, script_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 8);
	txn_on_lost(&refs[0]);
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_FAILED, "lost lock request: failed");

	memset(&s, 0, sizeof(s));
	s.keys[0] = 52;
	s.nkeys = 1;
	s.get_flags = XTX_GET_FOR_UPDATE;
	s.write = true;
	xtx_txn_start(c, script_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 8);
	answer(&refs[0], XTX_ST_OK, 1, 9, 0);
	advance_all(c);
	n = take_queued(c, refs, 8);
	CHECK(n == 3, "3 log appends");
	txn_on_lost(&refs[0]);
	for (i = 1; i < n; i++)
		answer(&refs[i], XTX_ST_OK, 0, 0, 0);
	advance_all(c);
	CHECK(!s.done, "a lost log append does not end the transaction");
	n = take_queued(c, refs, 8);
	CHECK(n == 1 && count_opcode(refs, n, XTX_OP_LOG_APPEND) == 1, "it is queued again");
	xtx_client_close(c);
}

/*
 * A server's LAST log write never overtakes its others: glued into one
 * request when they fit, else sent after their answers.
 */
static void test_log_last_order(void)
{
	unsigned int per;

	for (per = 1; per <= 16; per += 15) {
		struct xtx_client *c = open_client(XTX_PROTO_2PL, per);
		struct script s = { .keys = { 61, 62 }, .nkeys = 2,
				    .get_flags = XTX_GET_FOR_UPDATE, .write = true };
		struct txn_opref refs[16];
		unsigned int n, i, lasts = 0, glued = 0;
		struct xtx_op op;

		if (!c)
			return;
		xtx_txn_start(c, script_step, script_done, &s);
		advance_all(c);
		n = take_queued(c, refs, 16);
		for (i = 0; i < n; i++)
			answer(&refs[i], XTX_ST_OK, 1, 5, 0);
		advance_all(c);
		n = take_queued(c, refs, 16);
		for (i = 0; i < n; i++) {
			txn_fill_op(&refs[i], &op);
			lasts += !!(op.flags & XTX_OPF_LOG_LAST);
			glued += !!(refs[i].oflags & OPR_GLUE);
		}
		if (per == 1) {
			CHECK(n == 3 && lasts == 0, "1 op/packet: the first writes alone (%u, %u LAST)",
			      n, lasts);
			for (i = 0; i < n; i++)
				answer(&refs[i], XTX_ST_OK, 0, 0, 0);
			advance_all(c);
			n = take_queued(c, refs, 16);
			lasts = 0;
			for (i = 0; i < n; i++) {
				txn_fill_op(&refs[i], &op);
				lasts += !!(op.flags & XTX_OPF_LOG_LAST);
			}
			CHECK(n == 3 && lasts == 3, "then the LAST ones (%u, %u LAST)", n, lasts);
		} else {
			CHECK(n == 6 && lasts == 3 && glued == 3,
			      "16 ops/packet: both writes per server, the LAST glued (%u, %u, %u)", n,
			      lasts, glued);
		}
		xtx_client_close(c);
	}
}

/*
 * HADES read-only: at one server the answered reads suffice (the slot is
 * released); across servers each confirms with a NO_WRITE intend, then
 * validate.
 */
static void test_hades_read_only(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_HADES, 0);
	struct script s = { .nkeys = 1, .keys = { 70 } };
	struct txn_opref refs[8];
	struct xtx_op op;
	unsigned int n, i, k2;

	if (!c)
		return;
	xtx_txn_start(c, script_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 8);
	txn_fill_op(&refs[0], &op);
	CHECK(n == 1 && op.opcode == XTX_OP_HREAD && (op.flags & XTX_HOPF_BEGIN), "HREAD, BEGIN");
	answer(&refs[0], XTX_ST_OK, 4, 0, 0);
	advance_all(c);
	n = take_queued(c, refs, 8);
	txn_fill_op(&refs[0], &op);
	CHECK(n == 1 && op.opcode == XTX_OP_HABORT, "one server: the slot is released (%u)", n);
	answer(&refs[0], XTX_ST_OK, 0, 0, 0);
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_COMMITTED && s.res.rounds == 2,
	      "committed after 2 round trips (%u)", s.res.rounds);

	/* two keys on two primaries */
	for (k2 = 71; xtx_replica_of(c, 1, k2, 0) == xtx_replica_of(c, 1, 70, 0); k2++)
		;
	memset(&s, 0, sizeof(s));
	s.nkeys = 2;
	s.keys[0] = 70;
	s.keys[1] = k2;
	xtx_txn_start(c, script_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 8);
	for (i = 0; i < n; i++)
		answer(&refs[i], XTX_ST_OK, 4, 0, 0);
	advance_all(c);
	n = take_queued(c, refs, 8);
	CHECK(n == 2 && count_opcode(refs, n, XTX_OP_HINTEND) == 2, "two servers: intend at each");
	for (i = 0; i < n; i++) {
		txn_fill_op(&refs[i], &op);
		CHECK((op.flags & XTX_HOPF_NO_WRITE) && (op.flags & XTX_HOPF_LAST) &&
		      !(op.flags & XTX_HOPF_BEGIN), "NO_WRITE | LAST, slot already there");
		answer(&refs[i], XTX_ST_OK, 0, 0, 0);
	}
	advance_all(c);
	n = take_queued(c, refs, 8);
	CHECK(n == 2 && count_opcode(refs, n, XTX_OP_HVALIDATE) == 2, "then validate at each");
	for (i = 0; i < n; i++)
		answer(&refs[i], XTX_ST_OK, 0, 0, 0);
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_COMMITTED, "committed");
	xtx_client_close(c);
}

/* A step that returns XTX_STEP_READ with no new read: an error, never a silent commit. */
static enum xtx_step reread_step(struct xtx_txn *t, void *arg)
{
	struct script *s = arg;

	s->handles[0] = xtx_get(t, 1, s->keys[0], 0);	/* round 1: the same key again */
	return XTX_STEP_READ;
}

static void test_read_without_new_get(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_OCC, 0);
	struct script s = { .keys = { 81 }, .nkeys = 1 };
	struct txn_opref refs[8];
	unsigned int n;

	if (!c)
		return;
	xtx_txn_start(c, reread_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 8);
	CHECK(n == 1, "round 0 reads the key");
	answer(&refs[0], XTX_ST_OK, 3, 0, 0);
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_ABORTED && s.res.cause == XTX_CAUSE_MISUSE,
	      "READ without a new get aborts with cause misuse (%s, %s)",
	      xtx_outcome_name(s.res.outcome), xtx_cause_name(s.res.cause));
	CHECK(xtx_client_stats(c)->committed == 0, "nothing counted committed");
	xtx_client_close(c);
}

/*
 * Past the commit point a commit the server did not apply (CHANGED,
 * BAD_ARG, ...) leaves the write possibly missing: IN_DOUBT, not COMMITTED.
 */
static void test_commit_in_doubt(void)
{
	static const uint8_t refusals[] = { XTX_ST_CHANGED, XTX_ST_BAD_ARG, XTX_ST_TXN_GONE };
	struct xtx_client *c = open_client(XTX_PROTO_2PL, 0);
	struct txn_opref refs[32];
	unsigned int n, i, r;

	if (!c)
		return;
	for (r = 0; r < sizeof(refusals); r++) {
		struct script s = { .keys = { 90 + r }, .nkeys = 1,
				    .get_flags = XTX_GET_FOR_UPDATE, .write = true };

		xtx_txn_start(c, script_step, script_done, &s);
		advance_all(c);
		n = take_queued(c, refs, 32);
		answer(&refs[0], XTX_ST_OK, 5, 40, 0);		/* the lock */
		advance_all(c);
		n = take_queued(c, refs, 32);
		for (i = 0; i < n; i++)				/* the log on 3 replicas */
			answer(&refs[i], XTX_ST_OK, 0, 0, 0);
		advance_all(c);
		n = take_queued(c, refs, 32);
		CHECK(n == 2 && count_opcode(refs, n, XTX_OP_COMMIT_BACKUP) == 2, "2 backups");
		answer(&refs[0], refusals[r], 6, 0, 0);
		answer(&refs[1], XTX_ST_OK, 6, 0, 0);
		advance_all(c);
		n = take_queued(c, refs, 32);
		for (i = 0; i < n; i++)
			answer(&refs[i], XTX_ST_OK, 6, 0, 0);
		advance_all(c);
		CHECK(s.done && s.res.outcome == XTX_IN_DOUBT,
		      "a backup commit answered status %u: in doubt (%s)", refusals[r],
		      xtx_outcome_name(s.res.outcome));
	}
	CHECK(xtx_client_stats(c)->in_doubt == 3 && xtx_client_stats(c)->committed == 0,
	      "counted in doubt, never committed");
	xtx_client_close(c);
}

/* A HADES intend-to-commit that went unanswered may have been acked: IN_DOUBT, not FAILED. */
static void test_hades_lost_intend(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_HADES, 0);
	struct script s = { .keys = { 95 }, .nkeys = 1, .get_flags = XTX_GET_FOR_UPDATE,
			    .write = true };
	struct txn_opref refs[16];
	unsigned int n, i;

	if (!c)
		return;
	xtx_txn_start(c, script_step, script_done, &s);
	advance_all(c);
	n = take_queued(c, refs, 16);
	answer(&refs[0], XTX_ST_OK, 4, 0, 0);		/* HWRITE */
	advance_all(c);
	n = take_queued(c, refs, 16);
	CHECK(n == 3 && count_opcode(refs, n, XTX_OP_HINTEND) == 3, "intend at 3 replicas (%u)", n);
	txn_on_lost(&refs[0]);
	for (i = 1; i < n; i++)
		answer(&refs[i], XTX_ST_OK, 0, 0, 0);
	advance_all(c);
	n = take_queued(c, refs, 16);
	for (i = 0; i < n; i++)				/* the HABORTs */
		answer(&refs[i], XTX_ST_OK, 0, 0, 0);
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_IN_DOUBT, "lost intend: in doubt (%s)",
	      xtx_outcome_name(s.res.outcome));
	xtx_client_close(c);
}

/* Aggregation: ops of one server leave in requests of at most ops_per_packet. */
static void test_packing(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_2PL, 4);
	struct script s[4];
	unsigned int i, srv, nreq = 0, nops = 0, maxops = 0, pings = 0;
	uint64_t first_id[NSRV];

	if (!c)
		return;
	for (srv = 0; srv < NSRV; srv++)
		first_id[srv] = c->w.srv[srv].next_id;
	for (i = 0; i < 4; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		s[i].nkeys = 3;
		s[i].keys[0] = 100 + i * 3;
		s[i].keys[1] = 101 + i * 3;
		s[i].keys[2] = 102 + i * 3;
		CHECK(xtx_txn_start(c, script_step, script_done, &s[i]) == 0, "start %u", i);
	}
	CHECK(xtx_txn_start(c, script_step, script_done, &s[0]) == -EBUSY,
	      "max_inflight transactions in flight");
	advance_all(c);
	txn_wire_pack(c);
	for (srv = 0; srv < NSRV; srv++) {
		CHECK(c->queue[srv].len == 0, "server %u: everything packed", srv);
		for (i = 0; i < XTX_DEDUPE_WINDOW; i++) {
			struct xtx_req *r = &c->w.srv[srv].slot[i];

			if (!r->req_id)
				continue;
			nreq++;
			nops += r->msg.hdr.nops;
			/* ids count up from the first, which carries the PING first */
			pings += r->msg.ops[0].opcode == XTX_OP_PING && r->req_id == first_id[srv];
			if (r->req_id == first_id[srv])
				CHECK(c->srv_lease_state[srv] == LEASE_ASKED, "server %u asked", srv);
			if (r->msg.hdr.nops > maxops)
				maxops = r->msg.hdr.nops;
		}
	}
	CHECK(nops == 12 + NSRV, "12 shared locks packed, and a lease PING per server: %u", nops);
	CHECK(pings == NSRV, "the first request to each server asks its leases: %u", pings);
	CHECK(maxops == 4, "at most 4 ops per request, and full ones: %u", maxops);
	CHECK(nreq >= 4 && nreq <= 6, "15 ops over 3 servers in 4..6 requests: %u", nreq);
	xtx_client_close(c);
}

/*
 * A transaction whose first lock request left longer than the lease ago
 * does not log: it aborts before its commit point, cause LEASE, and its
 * locks are released.
 */
static void test_late_log_not_sent(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_OCC, 0);
	struct script s = { .keys = { 97 }, .nkeys = 1, .get_flags = XTX_GET_FOR_UPDATE,
			    .write = true };
	struct txn_opref refs[16];
	unsigned int n, srv, i, logs = 0;
	struct xtx_txn *t;

	if (!c)
		return;
	/* as if the servers' PING said a minute: no pause of a busy machine outlasts it */
	c->lock_lease_ns = LEASE_NS;
	xtx_txn_start(c, script_step, script_done, &s);
	t = c->ready[0];
	advance_all(c);
	n = take_queued(c, refs, 16);
	answer(&refs[0], XTX_ST_OK, 5, 40, 0);
	advance_all(c);
	CHECK(c->queue[0].len + c->queue[1].len + c->queue[2].len == 3, "3 log appends queued");
	t->lease_anchor_ns = xtx_now_ns() - 2 * LEASE_NS;	/* the lock request left long ago */
	txn_wire_pack(c);
	for (srv = 0; srv < NSRV; srv++)
		for (i = 0; i < XTX_DEDUPE_WINDOW; i++) {
			struct xtx_req *r = &c->w.srv[srv].slot[i];
			unsigned int k;

			for (k = 0; r->req_id && k < r->msg.hdr.nops; k++)
				logs += r->msg.ops[k].opcode == XTX_OP_LOG_APPEND;
		}
	CHECK(logs == 0 && xtx_client_stats(c)->late_logs == 3,
	      "no log append left (%u sent, %llu held back)", logs,
	      (unsigned long long)xtx_client_stats(c)->late_logs);
	advance_all(c);
	n = take_queued(c, refs, 16);
	CHECK(n == 1 && count_opcode(refs, n, XTX_OP_OCC_UNLOCK) == 1, "the lock is released");
	answer(&refs[0], XTX_ST_OK, 0, 0, 0);
	advance_all(c);
	CHECK(s.done && s.res.outcome == XTX_ABORTED && s.res.cause == XTX_CAUSE_LEASE,
	      "aborted, cause lease (%s, %s)", xtx_outcome_name(s.res.outcome),
	      xtx_cause_name(s.res.cause));
	xtx_client_close(c);
}

/* Log appends in the windows' requests. */
static unsigned int logs_sent(struct xtx_client *c)
{
	unsigned int srv, i, k, logs = 0;

	for (srv = 0; srv < NSRV; srv++)
		for (i = 0; i < XTX_DEDUPE_WINDOW; i++) {
			struct xtx_req *r = &c->w.srv[srv].slot[i];

			for (k = 0; r->req_id && k < r->msg.hdr.nops; k++)
				logs += r->msg.ops[k].opcode == XTX_OP_LOG_APPEND;
		}
	return logs;
}

/*
 * A log append whose request went unanswered may have been logged: sent
 * again past the lease, never dropped as late (which would abort, and
 * unlock, a transaction the servers may commit when every replica holds it).
 */
static void test_lost_log_resent_past_lease(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_OCC, 0);
	struct script s = { .keys = { 98 }, .nkeys = 1, .get_flags = XTX_GET_FOR_UPDATE,
			    .write = true };
	struct txn_opref refs[16];
	unsigned int n, i;
	struct xtx_txn *t;

	if (!c)
		return;
	c->lock_lease_ns = LEASE_NS;
	xtx_txn_start(c, script_step, script_done, &s);
	t = c->ready[0];
	advance_all(c);
	n = take_queued(c, refs, 16);
	answer(&refs[0], XTX_ST_OK, 5, 40, 0);
	advance_all(c);
	n = take_queued(c, refs, 16);
	CHECK(n == 3, "3 log appends (%u)", n);
	txn_on_lost(&refs[0]);
	for (i = 1; i < n; i++)
		answer(&refs[i], XTX_ST_OK, 0, 0, 0);
	advance_all(c);
	t->lease_anchor_ns = xtx_now_ns() - 2 * LEASE_NS;	/* and now the lease has passed */
	txn_wire_pack(c);
	CHECK(logs_sent(c) == 1 && xtx_client_stats(c)->late_logs == 0,
	      "the lost one is sent again (%u sent, %llu held back)", logs_sent(c),
	      (unsigned long long)xtx_client_stats(c)->late_logs);
	CHECK(!s.done, "and the transaction waits for its answer");
	xtx_client_close(c);
}

int main(void)
{
	RUN_CASE(test_placement);
	RUN_CASE(test_bad_config);
	RUN_CASE(test_api_misuse);
	RUN_CASE(test_occ_commit_sequence);
	RUN_CASE(test_conflict_releases);
	RUN_CASE(test_occ_validation);
	RUN_CASE(test_insert_exists);
	RUN_CASE(test_lost_requests);
	RUN_CASE(test_log_last_order);
	RUN_CASE(test_hades_read_only);
	RUN_CASE(test_packing);
	RUN_CASE(test_read_without_new_get);
	RUN_CASE(test_commit_in_doubt);
	RUN_CASE(test_hades_lost_intend);
	RUN_CASE(test_late_log_not_sent);
	RUN_CASE(test_lost_log_resent_past_lease);
	printf("# test_libxtx: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
