// SPDX-License-Identifier: GPL-2.0-only
/* One request turned into its reply in place: the checks and steps of bpf/xtx_xdp.bpf.c. */
#include <sched.h>
#include <string.h>
#include <time.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/area.h>
#include "dedupe.h"
#include "stats.h"
#include "txn.h"
#include "udpd.h"
#include "value.h"

#define VALID_MUTATES	0x100	/* validate_op: the op needs a dedupe record */

enum exec_mode {
	EXEC_RUN,		/* first execution, nothing to record */
	EXEC_RUN_RECORD,	/* first execution of a packet with a dedupe record */
	EXEC_REPLAY,		/* duplicate: mutating ops answer from the record */
};

struct pkt {
	struct xtx_hdr *hdr;
	struct xtx_op *ops;
	uint32_t nops;		/* op slots present in the datagram, <= hdr->nops */
	enum exec_mode mode;
	struct xtx_op_result rec[XTX_MAX_OPS];	/* EXEC_REPLAY: the record's copy */
};

uint64_t udpd_now(struct udpd_worker *w)
{
	struct timespec ts;

	if (!w->now) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		w->now = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	}
	return w->now;
}

/* xorshift64: cheap and good enough to decide which packets a fault knob loses. */
static bool lose(struct udpd_worker *w, uint32_t ppm)
{
	uint64_t x = w->rng;

	if (!ppm)
		return false;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	w->rng = x;
	return x % 1000000 < ppm;
}

static void mark_ops(struct pkt *p, uint8_t st)
{
	uint32_t i;

	for (i = 0; i < p->nops; i++)
		p->ops[i].status = st;
}

/*
 * Header checks that need no op: version, reserved bits, op count, client;
 * a MAC still here is one no secret checked (udpd_handle clears a checked one).
 */
static uint8_t check_header(const struct udpd_server *srv, const struct xtx_hdr *hdr, int len,
			    unsigned int *counter)
{
	if (hdr->version != XTX_VERSION) {
		*counter = XTX_CTR_BAD_VERSION;
		return XTX_ST_BAD_VERSION;
	}
	/* exactly the ops it says, as XDP wants it, and value areas after them (checked later) */
	if (hdr->nops == 0 || hdr->nops > XTX_MAX_OPS || hdr->reserved || hdr->mac ||
	    (size_t)len < sizeof(*hdr) + (size_t)hdr->nops * sizeof(struct xtx_op)) {
		*counter = XTX_CTR_MALFORMED;
		return XTX_ST_MALFORMED;
	}
	if (hdr->client_id >= srv->cfg.max_clients || hdr->req_id == 0 ||
	    hdr->req_id >= (1ull << 62)) {
		*counter = XTX_CTR_BAD_CLIENT;
		return XTX_ST_BAD_CLIENT;
	}
	return XTX_ST_OK;
}

/* bpf/lib/exec.h's xtx_validate_op: XTX_ST_OK (| VALID_MUTATES) or the refusal. */
static int validate_op(const struct udpd_server *srv, const struct xtx_op *op,
		       uint32_t client_id)
{
	int mutates = xtx_op_mutates(op->opcode) ? VALID_MUTATES : 0;
	bool own_txn = op->txn && xtx_txn_client(op->txn) == client_id;
	uint8_t st;

	if (op->vlen > XTX_VALUE_INLINE || op->table >= XTX_MAX_TABLES)
		return XTX_ST_BAD_ARG;
	/* a value area the op may not carry, or a write longer than this server takes */
	st = udpd_val_check(op, srv->cfg.value_size);
	if (st != XTX_ST_OK)
		return st;
	switch (op->opcode) {
	case XTX_OP_PING:
	case XTX_OP_STATS:
	case XTX_OP_COUNTER_ADD:
	case XTX_OP_GET:
	case XTX_OP_INSERT:
	case XTX_OP_UPDATE:
	case XTX_OP_DELETE:
	case XTX_OP_READ:
		return XTX_ST_OK | mutates;
	case XTX_OP_LOG_APPEND:
	case XTX_OP_COMMIT_BACKUP:
	case XTX_OP_COMMIT_PRIMARY:
		/* a commit belongs to a transaction too */
		return own_txn ? XTX_ST_OK | mutates : XTX_ST_BAD_TXN;
	case XTX_OP_LOCK_SHARED ... XTX_OP_OCC_VALIDATE:
		return own_txn ? XTX_ST_OK | mutates : XTX_ST_BAD_TXN;
	default:
		/* HADES among them: this baseline serves OCC and 2PL only */
		return XTX_ST_UNKNOWN_OP;
	}
}

/* Every op checked before any runs: one bad op refuses the packet, and nothing changes. */
static uint8_t validate_all(const struct udpd_server *srv, struct pkt *p, int *mutates)
{
	uint32_t i;
	int v;

	for (i = 0; i < p->nops; i++) {
		v = validate_op(srv, &p->ops[i], p->hdr->client_id);
		if ((v & 0xff) != XTX_ST_OK) {
			mark_ops(p, XTX_ST_NOT_EXECUTED);
			p->ops[i].status = v & 0xff;
			return v & 0xff;
		}
		*mutates |= v & VALID_MUTATES;
	}
	return XTX_ST_OK;
}

static uint8_t op_ping(const struct udpd_server *srv, struct xtx_op *op)
{
	int cpu = sched_getcpu();
	struct xtx_ping_info pi = {
		.cpu = cpu < 0 ? 0 : (uint32_t)cpu,
		.lock_lease_ns = srv->cfg.lock_lease_ns,
	};

	/* version (the client's nonce) is echoed; value: struct xtx_ping_info */
	memcpy(op->value, &pi, sizeof(pi));
	op->vlen = sizeof(pi);
	return XTX_ST_OK;
}

static uint8_t op_counter_add(struct udpd_server *srv, struct xtx_op *op)
{
	uint64_t delta = op->version;

	op->version = __atomic_fetch_add(&srv->counters[op->key & (XTX_COUNTERS - 1)], delta,
					 __ATOMIC_RELAXED) + delta;
	return XTX_ST_OK;
}

_Static_assert((XTX_COUNTERS & (XTX_COUNTERS - 1)) == 0, "counter index is a mask");

/* Runs op idx; mirrors bpf/lib/exec.h's xtx_exec_op without the rare path. */
static void exec_op(struct udpd_worker *w, struct pkt *p, uint32_t idx)
{
	struct xtx_op *op = &p->ops[idx];
	bool mutates = xtx_op_mutates(op->opcode);
	struct udpd_val v;
	uint8_t st;

	/* before the reply rewrites value[] and flags */
	udpd_val_of(p->hdr, op, &v);
	if (mutates && p->mode == EXEC_REPLAY) {
		const struct xtx_op_result *r = &p->rec[idx];
		bool want_value = !(op->flags & XTX_OPF_NO_VALUE);

		op->flags = r->flags;
		op->version = r->version;
		op->token = r->token;
		op->status = r->status;
		if ((r->status == XTX_ST_OK || r->status == XTX_ST_TOO_BIG) && want_value &&
		    udpd_is_acquire(op->opcode))
			udpd_reread_grant(w, op, &v);
		return;
	}
	switch (op->opcode) {
	case XTX_OP_PING:
		st = op_ping(w->srv, op);
		break;
	case XTX_OP_STATS:
		st = udpd_op_stats(w->srv, op);
		break;
	case XTX_OP_COUNTER_ADD:
		st = op_counter_add(w->srv, op);
		break;
	default:
		st = udpd_op_keyed(w, op, p->hdr->client_id, &v);
		break;
	}
	op->status = st;
	if (mutates && p->mode == EXEC_RUN_RECORD)
		udpd_dedupe_record(w->srv->dedupe, p->hdr->client_id, p->hdr->req_id, idx, op);
	udpd_count_op(w->stats, op->opcode, st);
	udpd_count(w->stats, XTX_CTR_OPS);
}

static int reply(struct udpd_worker *w, struct pkt *p, int len)
{
	if (lose(w, w->srv->cfg.drop_reply_ppm)) {
		udpd_count(w->stats, XTX_CTR_FAULT_DROP);
		return -1;
	}
	p->hdr->flags |= XTX_F_REPLY;
	udpd_count(w->stats, XTX_CTR_TX);
	return len;
}

/* The packet refused as a whole: no op has run. */
static int refuse(struct udpd_worker *w, struct pkt *p, int len, uint8_t st, bool mark,
		  unsigned int counter)
{
	p->hdr->status = st;
	if (mark)
		mark_ops(p, XTX_ST_NOT_EXECUTED);
	udpd_count(w->stats, counter);
	return reply(w, p, len);
}

int udpd_handle(struct udpd_worker *w, void *buf, int len)
{
	struct udpd_server *srv = w->srv;
	unsigned int counter = 0;
	int mutates = 0, v;
	struct pkt p;
	uint32_t i;
	uint8_t st;

	udpd_count(w->stats, XTX_CTR_RX);
	if (len < (int)sizeof(struct xtx_hdr)) {
		udpd_count(w->stats, XTX_CTR_TRUNCATED);
		udpd_count(w->stats, XTX_CTR_DROP);
		return -1;
	}
	p.hdr = buf;
	p.ops = (struct xtx_op *)(p.hdr + 1);
	/* a reply arriving at the server port is never answered: no loops */
	if (p.hdr->magic != XTX_MAGIC || (p.hdr->flags & XTX_F_REPLY)) {
		udpd_count(w->stats, XTX_CTR_BAD_MAGIC);
		udpd_count(w->stats, XTX_CTR_DROP);
		return -1;
	}
	if (lose(w, srv->cfg.drop_request_ppm)) {
		udpd_count(w->stats, XTX_CTR_FAULT_DROP);
		return -1;
	}
	/*
	 * as XDP does (bpf/lib/allow.h): without the MAC of the secret over
	 * the whole request, nothing runs and nothing answers; a request longer
	 * than any may be is not hashed
	 */
	if (srv->cfg.has_secret) {
		if (len > XTX_MAX_REQUEST || !xtx_mac_ok(&srv->cfg.secret, buf, (uint32_t)len)) {
			udpd_count(w->stats, XTX_CTR_BAD_MAC);
			udpd_count(w->stats, XTX_CTR_DROP);
			return -1;
		}
		p.hdr->mac = 0;
	}
	p.nops = (len - sizeof(struct xtx_hdr)) / sizeof(struct xtx_op);
	if (p.nops > p.hdr->nops)
		p.nops = p.hdr->nops;
	if (p.nops > XTX_MAX_OPS)
		p.nops = XTX_MAX_OPS;
	st = check_header(srv, p.hdr, len, &counter);
	if (st == XTX_ST_OK && !xtx_areas_tile(p.hdr, (uint32_t)len)) {
		counter = XTX_CTR_MALFORMED;
		st = XTX_ST_MALFORMED;
	}
	if (st != XTX_ST_OK)
		return refuse(w, &p, len, st, true, counter);
	if (srv->cfg.echo) {
		mark_ops(&p, XTX_ST_OK);
		p.hdr->status = XTX_ST_OK;
		return reply(w, &p, len);
	}
	st = validate_all(srv, &p, &mutates);
	if (st != XTX_ST_OK)
		return refuse(w, &p, len, st, false, XTX_CTR_BAD_OP);

	w->now = 0;
	p.mode = EXEC_RUN;
	/* only packets that change state pay for the dedupe record */
	if (mutates) {
		v = udpd_dedupe_claim(srv->dedupe, p.hdr->client_id, p.hdr->req_id, p.rec);
		switch (v) {
		case UDPD_DEDUPE_NEW:
			p.mode = EXEC_RUN_RECORD;
			break;
		case UDPD_DEDUPE_DUPLICATE:
			p.mode = EXEC_REPLAY;
			p.hdr->flags |= XTX_F_REPLAYED;
			udpd_count(w->stats, XTX_CTR_REPLAYED);
			break;
		case UDPD_DEDUPE_IN_FLIGHT:
			return refuse(w, &p, len, XTX_ST_RETRY, true, XTX_CTR_BUSY);
		default:
			return refuse(w, &p, len, XTX_ST_STALE, true, XTX_CTR_STALE);
		}
	}
	for (i = 0; i < p.nops; i++)
		exec_op(w, &p, i);
	if (p.mode == EXEC_RUN_RECORD)
		udpd_dedupe_done(srv->dedupe, p.hdr->client_id, p.hdr->req_id);
	p.hdr->status = XTX_ST_OK;
	return reply(w, &p, len);
}
