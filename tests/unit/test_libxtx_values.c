// SPDX-License-Identifier: GPL-2.0-only
/*
 * libxtx with values up to XTX_VALUE_MAX, without a network: requests are
 * packed as xtx_poll() packs them and answered by a small in-process server
 * that keeps values and locks, so every request's value areas are checked
 * (canonical tiling, XTX_MAX_REQUEST) and every value read back compared.
 */
/* checks: 5 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <xtx/msg.h>
#include <xtx/hades.h>
#include "check.h"
#include "txn/internal.h"

#define NSRV		3
#define TABLE		2
#define MAX_ROWS	32

static struct sockaddr_in srv_addr[NSRV];

static struct xtx_client *open_client(enum xtx_protocol p)
{
	struct xtx_client_cfg cfg = {
		.servers = srv_addr, .nservers = NSRV, .protocol = p, .client_id = 9,
		.max_inflight = 4,
	};
	unsigned int i;

	for (i = 0; i < NSRV; i++) {
		srv_addr[i].sin_family = AF_INET;
		srv_addr[i].sin_port = htons(XTX_DEFAULT_PORT);
		/* documentation addresses: nothing is ever sent in this test */
		srv_addr[i].sin_addr.s_addr = htonl(0xc0000201 + i);
	}
	return xtx_client_open(&cfg);
}

/* ---- the server: one store for every replica, and exclusive locks ---- */

struct row {
	uint64_t key;
	bool live;
	uint64_t version;
	uint16_t vlen;
	uint8_t value[XTX_VALUE_MAX];
	unsigned int locks;	/* held by a transaction */
	uint16_t staged_vlen;	/* HADES: the write HINTEND staged, HVALIDATE installs */
	uint8_t staged[XTX_VALUE_MAX];
};

static struct row rows[MAX_ROWS];
static unsigned int nrows;
/* what the requests looked like */
static unsigned int bad_tiling, over_max, two_big_areas, requests, areas, logged_wrong;
/* HADES: validations without room for what they staged, or sent with other bytes */
static unsigned int validate_no_room, validate_wrong;

static struct row *row_of(uint64_t key, bool create)
{
	unsigned int i;

	for (i = 0; i < nrows; i++)
		if (rows[i].key == key)
			return &rows[i];
	if (!create || nrows == MAX_ROWS)
		return NULL;
	memset(&rows[nrows], 0, sizeof(rows[nrows]));
	rows[nrows].key = key;
	return &rows[nrows++];
}

static void pattern(uint64_t key, uint16_t len, uint8_t *out)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		out[i] = (uint8_t)(key * 13 + i * 7 + len);
}

static uint32_t round8(uint32_t x)
{
	return (x + 7) & ~7u;
}

/* The request's areas as include/xtx/proto.h tiles them; counts what is wrong. */
static void check_request(const struct xtx_req *r)
{
	uint32_t end = xtx_msg_len(r->msg.hdr.nops), len = r->len ? r->len : end;
	unsigned int i, big = 0;
	struct xtx_ext e;

	requests++;
	if (len > XTX_MAX_REQUEST)
		over_max++;
	for (i = 0; i < r->msg.hdr.nops; i++) {
		if (!(r->msg.ops[i].flags & XTX_OPF_EXT))
			continue;
		memcpy(&e, r->msg.ops[i].value, sizeof(e));
		areas++;
		if (e.off != round8(end) || r->msg.ops[i].vlen || e.pad || e.len > e.cap)
			bad_tiling++;
		end = e.off + e.cap;
		big += e.cap > 512;
	}
	if (round8(end) != len)
		bad_tiling++;
	if (big > 1)
		two_big_areas++;
}

/* A read's answer: in the slot, the request's area, or TOO_BIG with the length. */
static uint8_t answer_value(struct xtx_op *op, uint8_t *base, const struct row *w)
{
	struct xtx_ext e = { 0 };
	bool ext = op->flags & XTX_OPF_EXT;

	if (ext)
		memcpy(&e, op->value, sizeof(e));
	op->flags &= ~XTX_OPF_EXT;
	memset(op->value, 0, sizeof(op->value));
	op->vlen = 0;
	if (w->vlen <= XTX_VALUE_INLINE) {
		memcpy(op->value, w->value, w->vlen);
		op->vlen = (uint8_t)w->vlen;
		return XTX_ST_OK;
	}
	e.len = w->vlen;
	memcpy(op->value, &e, sizeof(e));
	op->flags |= XTX_OPF_EXT;
	if (!ext || e.cap < w->vlen)
		return XTX_ST_TOO_BIG;
	memcpy(base + e.off, w->value, w->vlen);
	return XTX_ST_OK;
}

/* A write's bytes, from its slot or its area. */
static const uint8_t *write_value(const struct xtx_op *op, const uint8_t *base, uint16_t *len)
{
	struct xtx_ext e;

	if (!(op->flags & XTX_OPF_EXT)) {
		*len = op->vlen;
		return op->value;
	}
	memcpy(&e, op->value, sizeof(e));
	*len = e.len;
	return base + e.off;
}

static void serve_op(struct xtx_op *op, uint8_t *base)
{
	struct row *w = row_of(op->key, true);
	uint8_t want[XTX_VALUE_MAX];
	const uint8_t *v;
	uint16_t len;

	op->status = XTX_ST_OK;
	switch (op->opcode) {
	case XTX_OP_READ:
	case XTX_OP_HREAD:
		if (!w->live) {
			op->status = XTX_ST_NOT_FOUND;
			break;
		}
		op->status = answer_value(op, base, w);
		op->version = w->version;
		op->flags &= XTX_OPF_EXT;
		break;
	case XTX_OP_OCC_LOCK:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_LOCK_SHARED:
		if (w->live && w->vlen > XTX_VALUE_INLINE) {
			/* the room first: a value that does not fit takes no lock */
			op->status = answer_value(op, base, w);
			if (op->status != XTX_ST_OK)
				break;
		}
		w->locks++;
		op->token = 1000 + w->locks;
		op->flags &= XTX_OPF_EXT;
		op->version = w->version;
		if (!w->live) {
			op->flags = XTX_TXF_ABSENT;
			op->vlen = 0;
		} else if (w->vlen <= XTX_VALUE_INLINE) {
			answer_value(op, base, w);
		}
		break;
	case XTX_OP_OCC_VALIDATE:
		op->status = op->version == w->version ? XTX_ST_OK : XTX_ST_CHANGED;
		break;
	case XTX_OP_LOG_APPEND:
		v = write_value(op, base, &len);
		pattern(op->key, len, want);
		if (!(op->flags & XTX_OPF_LOG_META) && memcmp(v, want, len))
			logged_wrong++;
		break;
	case XTX_OP_COMMIT_BACKUP:
	case XTX_OP_COMMIT_PRIMARY:
		v = write_value(op, base, &len);
		if (op->opcode == XTX_OP_COMMIT_BACKUP)
			break;
		w->live = !(op->flags & XTX_OPF_DELETE);
		w->vlen = len;
		memcpy(w->value, v, len);
		w->version = op->version + 1;
		if (w->locks)
			w->locks--;
		break;
	case XTX_OP_OCC_UNLOCK:
	case XTX_OP_UNLOCK_EXCL:
	case XTX_OP_UNLOCK_SHARED:
		if (w->locks)
			w->locks--;
		break;
	case XTX_OP_HWRITE:
		op->version = w->version;
		if (!w->live) {
			op->flags = XTX_TXF_ABSENT;
			op->vlen = 0;
			break;
		}
		op->status = answer_value(op, base, w);
		op->flags &= XTX_OPF_EXT;
		break;
	case XTX_OP_HINTEND:
		if (op->flags & XTX_HOPF_NO_WRITE)
			break;
		v = write_value(op, base, &len);
		pattern(op->key, len, want);
		if (memcmp(v, want, len))
			logged_wrong++;
		w->staged_vlen = len;
		memcpy(w->staged, v, len);
		break;
	case XTX_OP_HVALIDATE:
		if (op->flags & XTX_HOPF_NO_WRITE)
			break;
		/* as XDP does: the staged copy needs room the size of it, and answers there */
		if (w->staged_vlen > XTX_VALUE_INLINE) {
			struct xtx_ext e;

			memcpy(&e, op->value, sizeof(e));
			if (!(op->flags & XTX_OPF_EXT) || e.cap < w->staged_vlen) {
				validate_no_room++;
				op->status = XTX_ST_TOO_BIG;
				break;
			}
			if (e.len != w->staged_vlen || memcmp(base + e.off, w->staged, e.len))
				validate_wrong++;
		} else if (op->flags & XTX_OPF_EXT) {
			validate_wrong++;
		}
		w->live = true;
		w->vlen = w->staged_vlen;
		memcpy(w->value, w->staged, w->vlen);
		w->version = op->version + 1;
		break;
	case XTX_OP_HABORT:
		break;
	default:
		op->status = XTX_ST_UNKNOWN_OP;
		break;
	}
}

/* Every request packed so far, checked, answered and taken back as xtx_poll() would. */
static void serve_all(struct xtx_client *c)
{
	static struct xtx_msgbuf reply;
	struct txn_opref refs[XTX_MAX_OPS];
	unsigned int s, i, k, n;

	for (s = 0; s < NSRV; s++) {
		for (i = 0; i < XTX_DEDUPE_WINDOW; i++) {
			struct xtx_req *r = &c->w.srv[s].slot[i];
			struct txn_opref *slots = txn_sent_ops(c, s, i);
			size_t len;

			if (!r->req_id)
				continue;
			check_request(r);
			len = r->len ? r->len : xtx_msg_len(r->msg.hdr.nops);
			memcpy(&reply, &r->msg, len);
			reply.hdr.flags |= XTX_F_REPLY;
			n = reply.hdr.nops;
			for (k = 0; k < n; k++)
				if (reply.ops[k].opcode != XTX_OP_PING)
					serve_op(&reply.ops[k], (uint8_t *)&reply);
			memcpy(refs, slots, n * sizeof(*refs));
			memset(slots, 0, n * sizeof(*slots));
			xtx_reqwin_done(&c->w, s, r);
			c->reply_base = (const uint8_t *)&reply;
			c->reply_len = len;
			for (k = 0; k < n; k++) {
				if (!refs[k].t)
					c->srv_lease_state[s] = LEASE_KNOWN;
				else
					txn_on_reply(&refs[k], &reply.ops[k]);
			}
			c->reply_base = NULL;
			c->reply_len = 0;
		}
	}
}

/* Runs the client until every transaction ended: steps, packing, the server. */
static void run(struct xtx_client *c)
{
	unsigned int i;

	for (i = 0; i < 100 && xtx_inflight(c); i++) {
		while (c->nready) {
			struct xtx_txn *t = c->ready[--c->nready];

			t->ready = false;
			txn_advance(t);
		}
		txn_wire_pack(c);
		serve_all(c);
	}
}

/* ---- the transactions ---- */

static const uint16_t lens[] = { 1, 40, 41, 512, 1000, 1024 };
#define NLENS	(sizeof(lens) / sizeof(lens[0]))

struct job {
	bool write;		/* put lens[i] bytes at key 100 + i, else read them */
	int handles[NLENS];
	unsigned int read_wrong;
	struct xtx_txn_result res;
	bool done;
};

static enum xtx_step job_step(struct xtx_txn *t, void *arg)
{
	struct job *j = arg;
	uint8_t v[XTX_VALUE_MAX], want[XTX_VALUE_MAX];
	const void *got;
	uint16_t len;
	unsigned int i;

	if (j->write) {
		for (i = 0; i < NLENS; i++) {
			pattern(100 + i, lens[i], v);
			if (xtx_put(t, TABLE, 100 + i, v, lens[i]))
				return XTX_STEP_ABORT;
		}
		return XTX_STEP_COMMIT;
	}
	if (xtx_txn_round(t) == 0) {
		for (i = 0; i < NLENS; i++)
			j->handles[i] = xtx_get(t, TABLE, 100 + i, 0);
		return XTX_STEP_READ;
	}
	for (i = 0; i < NLENS; i++) {
		pattern(100 + i, lens[i], want);
		if (xtx_value(t, j->handles[i], &got, &len) || len != lens[i] ||
		    memcmp(got, want, len))
			j->read_wrong++;
	}
	return XTX_STEP_COMMIT;
}

static void job_done(struct xtx_txn *t, const struct xtx_txn_result *res, void *arg)
{
	struct job *j = arg;

	(void)t;
	j->res = *res;
	j->done = true;
}

static unsigned int locks_held(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < nrows; i++)
		n += rows[i].locks;
	return n;
}

/*
 * Writes of 1..1024 bytes commit with their bytes; a read without room
 * learns it (TOO_BIG: aborted VALUE_ROOM, retryable, nothing held) and the
 * retry reads every value back.
 */
static void roundtrip(enum xtx_protocol p)
{
	struct xtx_client *c = open_client(p);
	struct job w = { .write = true }, r1 = { 0 }, r2 = { 0 };
	uint8_t want[XTX_VALUE_MAX];
	unsigned int i, wrong = 0;

	if (!c)
		return;
	nrows = 0;
	bad_tiling = over_max = two_big_areas = requests = areas = logged_wrong = 0;
	xtx_txn_start(c, job_step, job_done, &w);
	run(c);
	for (i = 0; i < NLENS; i++) {
		const struct row *row = row_of(100 + i, false);

		pattern(100 + i, lens[i], want);
		wrong += !row || !row->live || row->vlen != lens[i] ||
			 memcmp(row->value, want, lens[i]);
	}
	CHECK(w.done && w.res.outcome == XTX_COMMITTED && !wrong && !logged_wrong,
	      "%s: 1..1024-byte writes commit with their bytes (%s, %u wrong, %u logged wrong)",
	      xtx_protocol_name(p), xtx_outcome_name(w.res.outcome), wrong, logged_wrong);

	xtx_txn_start(c, job_step, job_done, &r1);
	run(c);
	CHECK(r1.done && r1.res.outcome == XTX_ABORTED && r1.res.cause == XTX_CAUSE_VALUE_ROOM &&
	      xtx_cause_retryable(r1.res.cause) && c->value_room[TABLE] == XTX_VALUE_MAX &&
	      !locks_held(), "%s: a read without room aborts %s, room now %u, %u locks held",
	      xtx_protocol_name(p), xtx_cause_name(r1.res.cause), c->value_room[TABLE],
	      locks_held());

	xtx_txn_start(c, job_step, job_done, &r2);
	run(c);
	CHECK(r2.done && r2.res.outcome == XTX_COMMITTED && !r2.read_wrong && !locks_held(),
	      "%s: with the room learnt every value reads back (%s, %u wrong)",
	      xtx_protocol_name(p), xtx_outcome_name(r2.res.outcome), r2.read_wrong);
	CHECK(areas && !bad_tiling && !over_max && !two_big_areas,
	      "%s: %u requests, %u areas: %u badly tiled, %u over %u bytes, %u with two big areas",
	      xtx_protocol_name(p), requests, areas, bad_tiling, over_max, XTX_MAX_REQUEST,
	      two_big_areas);
	xtx_client_close(c);
}

/* HADES reads long values too: the room is learnt the same way. */
static void test_hades_reads(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_HADES);
	struct job r1 = { 0 }, r2 = { 0 };
	unsigned int i;

	if (!c)
		return;
	nrows = 0;
	bad_tiling = over_max = two_big_areas = requests = areas = 0;
	for (i = 0; i < NLENS; i++) {
		struct row *w = row_of(100 + i, true);

		w->live = true;
		w->version = 3;
		w->vlen = lens[i];
		pattern(100 + i, lens[i], w->value);
	}
	xtx_txn_start(c, job_step, job_done, &r1);
	run(c);
	xtx_txn_start(c, job_step, job_done, &r2);
	run(c);
	CHECK(r1.done && r1.res.outcome == XTX_ABORTED && r1.res.cause == XTX_CAUSE_VALUE_ROOM &&
	      r2.done && r2.res.outcome == XTX_COMMITTED && !r2.read_wrong,
	      "hades: %s (%s), then %s with %u values read wrong",
	      xtx_outcome_name(r1.res.outcome), xtx_cause_name(r1.res.cause),
	      xtx_outcome_name(r2.res.outcome), r2.read_wrong);
	CHECK(areas && !bad_tiling && !over_max, "hades: %u areas, %u badly tiled, %u too long",
	      areas, bad_tiling, over_max);
	xtx_client_close(c);
}

static void test_occ_values(void)
{
	roundtrip(XTX_PROTO_OCC);
}

static void test_2pl_values(void)
{
	roundtrip(XTX_PROTO_2PL);
}

static enum xtx_step hades_step(struct xtx_txn *t, void *arg)
{
	int *res = arg;
	uint8_t v[XTX_VALUE_MAX + 1] = { 0 };

	res[0] = xtx_put(t, TABLE, 1, v, XTX_VALUE_INLINE + 1);
	res[1] = xtx_insert(t, TABLE, 2, v, XTX_VALUE_MAX);
	res[2] = xtx_put(t, TABLE, 3, v, XTX_VALUE_INLINE);
	res[3] = xtx_put(t, TABLE, 4, v, XTX_VALUE_MAX + 1);
	return XTX_STEP_ABORT;
}

/*
 * HADES writes of 1..1024 bytes: HINTEND carries each value, HVALIDATE
 * leaves room for it (and sends the same bytes); over 1024 is refused.
 */
static void test_hades_values(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_HADES);
	int res[4] = { 1, 1, 1, 1 };

	if (!c)
		return;
	xtx_txn_start(c, hades_step, NULL, res);
	run(c);
	CHECK(res[0] == 0 && res[1] == 0 && res[2] == 0 && res[3] == -EMSGSIZE,
	      "HADES puts of 41, 1024, 40, 1025 bytes: %d %d %d %d", res[0], res[1], res[2],
	      res[3]);
	xtx_client_close(c);
	validate_no_room = validate_wrong = 0;
	roundtrip(XTX_PROTO_HADES);
	CHECK(!validate_no_room && !validate_wrong,
	      "hades: %u validations without room for their staged value, %u with other bytes",
	      validate_no_room, validate_wrong);
}

static enum xtx_step read_one(struct xtx_txn *t, void *arg)
{
	(void)arg;
	xtx_get(t, TABLE, 100, 0);
	xtx_get(t, TABLE + 1, 100, 0);
	return XTX_STEP_READ;
}

/* A declared room goes out as the read's area; rooms out of range are refused. */
static void test_declared_room(void)
{
	struct xtx_client *c = open_client(XTX_PROTO_OCC);
	unsigned int s, i, k, with = 0, without = 0;
	struct xtx_ext e;

	if (!c)
		return;
	CHECK(xtx_client_table_value_max(c, XTX_MAX_TABLES, 100) == -EINVAL &&
	      xtx_client_table_value_max(c, TABLE, XTX_VALUE_MAX + 1) == -EINVAL &&
	      xtx_client_table_value_max(c, TABLE + 1, 30) == 0 && !c->value_room[TABLE + 1] &&
	      xtx_client_table_value_max(c, TABLE, 300) == 0, "rooms out of range refused");
	xtx_txn_start(c, read_one, NULL, NULL);
	while (c->nready) {
		struct xtx_txn *t = c->ready[--c->nready];

		t->ready = false;
		txn_advance(t);
	}
	txn_wire_pack(c);
	for (s = 0; s < NSRV; s++) {
		for (i = 0; i < XTX_DEDUPE_WINDOW; i++) {
			const struct xtx_req *r = &c->w.srv[s].slot[i];

			for (k = 0; r->req_id && k < r->msg.hdr.nops; k++) {
				const struct xtx_op *op = &r->msg.ops[k];

				if (op->opcode != XTX_OP_READ)
					continue;
				memcpy(&e, op->value, sizeof(e));
				if (op->table == TABLE && (op->flags & XTX_OPF_EXT) && e.cap == 300 &&
				    !e.len && r->len == round8(e.off + 300))
					with++;
				if (op->table == TABLE + 1 && !(op->flags & XTX_OPF_EXT))
					without++;
			}
		}
	}
	CHECK(with == 1 && without == 1,
	      "the declared table's read reserves 300 bytes (%u), the other none (%u)", with,
	      without);
	xtx_client_close(c);
}

int main(void)
{
	RUN_CASE(test_occ_values);
	RUN_CASE(test_2pl_values);
	RUN_CASE(test_hades_values);
	RUN_CASE(test_hades_reads);
	RUN_CASE(test_declared_room);
	printf("# test_libxtx_values: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
