// SPDX-License-Identifier: GPL-2.0-only
/*
 * libxtx's HADES coordinator (seed 000 §IV-V; wire rules in
 * include/xtx/hades.h): no versions checked and no locks taken during
 * execution.  Reads (HREAD) and write intents (HWRITE) are recorded in the
 * transaction's Bloom filters at each key's primary; writes are buffered.
 * Commit sends intend-to-commit (HINTEND) with the new values to every
 * server the transaction touched and every replica of its writes; once all
 * of them acked, validation (HVALIDATE) makes the writes visible and logs
 * them.  A NACK or SQUASHED anywhere aborts everywhere (HABORT).
 *
 * Round trips of a read-write transaction: its reads, then intend, then
 * validate -- no separate lock, validate, log and commit-backup phases.
 */
#include <stdio.h>
#include <string.h>
#include <xtx/hades.h>
#include "internal.h"

static uint64_t bit(unsigned int s)
{
	return 1ull << s;
}

/* Every server the transaction touched, and every replica of its writes. */
static uint64_t participants(const struct xtx_txn *t)
{
	return t->sent_mask | txn_write_replicas(t);
}

static void hades_fill_op(const struct txn_opref *ref, struct xtx_op *op)
{
	const struct xtx_txn *t = ref->t;
	const struct txn_key *k = &t->keys[ref->key];
	bool begin = !(t->seen_mask & bit(ref->server));

	memset(op, 0, sizeof(*op));
	op->txn = t->id;
	op->table = k->table;
	op->key = k->key;
	switch (ref->kind) {
	case TOP_HREAD:
		op->opcode = XTX_OP_HREAD;
		break;
	case TOP_HWRITE:
		op->opcode = XTX_OP_HWRITE;
		break;
	case TOP_HINTEND:
	case TOP_HVALIDATE:
		op->opcode = ref->kind == TOP_HINTEND ? XTX_OP_HINTEND : XTX_OP_HVALIDATE;
		if (ref->oflags & OPR_LAST)
			op->flags |= XTX_HOPF_LAST;
		if (ref->oflags & OPR_NO_WRITE) {
			op->flags |= XTX_HOPF_NO_WRITE;
			op->key = 0;
		} else {
			txn_fill_value(op, k);
			op->version = k->version;	/* the base: the write installs + 1 */
			if (ref->oflags & OPR_REPLICA)
				op->flags |= XTX_HOPF_REPLICA;
		}
		if (ref->kind == TOP_HINTEND)
			op->token = participants(t);
		else if (!(ref->oflags & OPR_NO_WRITE))
			op->token = txn_replica_set(t, k);
		break;
	case TOP_HABORT:
		op->opcode = XTX_OP_HABORT;
		op->key = 0;
		begin = false;
		break;
	default:
		break;
	}
	/* only the first request to a server may take the transaction's slot there */
	if (begin && ref->kind != TOP_HVALIDATE)
		op->flags |= XTX_HOPF_BEGIN;
}

static void abort_cause_of(struct xtx_txn *t, const struct xtx_op *op)
{
	switch (op->status) {
	case XTX_ST_SQUASHED:
		txn_abort_for(t, XTX_CAUSE_SQUASHED);
		break;
	case XTX_ST_NACK:
		txn_abort_for(t, XTX_CAUSE_NACK);
		break;
	case XTX_ST_TOO_MANY:
		txn_abort_for(t, XTX_CAUSE_FULL);
		break;
	case XTX_ST_MOVED:
		/* placed by an older configuration: nothing staged there, never an Ack */
		txn_abort_for(t, XTX_CAUSE_MOVED);
		break;
	default:
		txn_refused(t, op);
		break;
	}
}

static void hades_on_reply(struct txn_opref *ref, const struct xtx_op *op)
{
	struct xtx_txn *t = ref->t;
	struct txn_key *k = &t->keys[ref->key];
	uint8_t st = op->status;

	switch (ref->kind) {
	case TOP_HREAD:
		if (st == XTX_ST_OK || st == XTX_ST_NOT_FOUND) {
			t->seen_mask |= bit(ref->server);
			txn_note_value(t, k, op, st == XTX_ST_NOT_FOUND);
		} else {
			abort_cause_of(t, op);
		}
		break;
	case TOP_HWRITE:
		if (st == XTX_ST_OK) {
			t->seen_mask |= bit(ref->server);
			txn_note_value(t, k, op, op->flags & XTX_TXF_ABSENT);
			/* the base version a write installs over is known */
			k->flags |= KF_EXCL;
		} else {
			abort_cause_of(t, op);
		}
		break;
	case TOP_HINTEND:
		if (st == XTX_ST_OK)
			t->seen_mask |= bit(ref->server);
		else
			abort_cause_of(t, op);
		break;
	case TOP_HVALIDATE:
		if (st == XTX_ST_LOG_FULL || st == XTX_ST_RETRY) {
			/* decided: it must be applied, however long the log takes */
			txn_queue_flags(t, ref->key, TOP_HVALIDATE, ref->server,
					ref->oflags & ~OPR_GLUE);
		} else if (st != XTX_ST_OK && st != XTX_ST_ALREADY_APPLIED) {
			txn_commit_doubt(t, op);
		}
		break;
	default:
		/* HABORT always succeeds */
		break;
	}
}

static unsigned int hades_queue_reads(struct xtx_txn *t)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->nkeys; i++) {
		struct txn_key *k = &t->keys[i];

		if (!(k->flags & KF_READ) || (k->flags & KF_SENT))
			continue;
		k->flags |= KF_SENT;
		txn_queue(t, i, k->flags & KF_FOR_UPDATE ? TOP_HWRITE : TOP_HREAD, k->replica[0]);
		n++;
	}
	return n;
}

/* Write intents for writes whose base version is not known yet (blind, or read absent). */
static unsigned int queue_write_intents(struct xtx_txn *t)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->nkeys; i++) {
		struct txn_key *k = &t->keys[i];

		if (!(k->flags & KF_WRITE) || (k->flags & KF_EXCL))
			continue;
		if ((k->flags & KF_ANSWERED) && !(k->flags & KF_ABSENT))
			continue;
		/* a read that found nothing told no version: ask the write intent */
		k->flags &= ~KF_ANSWERED;
		txn_queue(t, i, TOP_HWRITE, k->replica[0]);
		n++;
	}
	return n;
}

/*
 * One server's HINTENDs or HVALIDATEs: one per write staged there (ordered
 * as txn_queue_writes_at() says), or a single NO_WRITE one.
 */
static unsigned int queue_group(struct xtx_txn *t, enum txn_op_kind kind, unsigned int s,
				bool last_only)
{
	if (txn_writes_at(t, s))
		return txn_queue_writes_at(t, kind, s, last_only);
	if (last_only)
		return 0;
	txn_queue_flags(t, 0, kind, s, OPR_LAST | OPR_NO_WRITE);
	return 1;
}

static unsigned int queue_all(struct xtx_txn *t, enum txn_op_kind kind, bool last_only)
{
	uint64_t p = participants(t);
	unsigned int s, n = 0;

	for (s = 0; s < t->c->cfg.nservers; s++)
		if (p & bit(s))
			n += queue_group(t, kind, s, last_only);
	return n;
}

/* HABORT everywhere the transaction sent anything; ends with o when they answered. */
static void hades_release(struct xtx_txn *t, enum xtx_outcome o)
{
	unsigned int s;

	t->phase = PH_RELEASE;
	t->release_outcome = o;
	for (s = 0; s < t->c->cfg.nservers && t->nkeys; s++)
		if (t->sent_mask & bit(s))
			txn_queue(t, 0, TOP_HABORT, s);
	if (!t->waiting)
		txn_finish(t, t->release_outcome);
	else
		t->rounds++;
}

static void hades_abort(struct xtx_txn *t)
{
	hades_release(t, t->failed ? XTX_FAILED : XTX_ABORTED);
}

/*
 * A read-only transaction that touched one server needs no intend-to-
 * commit there: a committer that squashes it makes every later op of it
 * answer SQUASHED, and one that commits while it reads makes the read
 * answer RETRY (its filters block the key), so reads that all answered
 * OK are a consistent view as of the last one.  Its slot is released.
 * Across servers each must confirm at the end (HINTEND), since a squash
 * at one server is not seen by reads at another.
 */
static bool read_only_one_server(const struct xtx_txn *t)
{
	return !txn_has_writes(t) && t->sent_mask && !(t->sent_mask & (t->sent_mask - 1));
}

static void hades_phases(struct xtx_txn *t)
{
	unsigned int n = 0;

	for (;;) {
		if ((t->cause != XTX_CAUSE_NONE || t->failed) && t->phase != PH_RELEASE &&
		    t->phase != PH_H_VALIDATE && t->phase != PH_H_VALIDATE_LAST) {
			hades_abort(t);
			return;
		}
		switch (t->phase) {
		case PH_EXEC:
			t->phase = PH_LOCK;
			n = queue_write_intents(t);
			break;
		case PH_LOCK:
			txn_check_write_rules(t);
			if (t->cause != XTX_CAUSE_NONE)
				continue;
			if (!t->nkeys) {
				txn_finish(t, XTX_COMMITTED);
				return;
			}
			if (read_only_one_server(t)) {
				hades_release(t, XTX_COMMITTED);
				return;
			}
			t->phase = PH_H_INTEND;
			n = queue_all(t, TOP_HINTEND, false);
			break;
		case PH_H_INTEND:
			t->phase = PH_H_INTEND_LAST;
			n = queue_all(t, TOP_HINTEND, true);
			break;
		case PH_H_INTEND_LAST:
			/* every participant acked: committed, only validation is left */
			t->logging = true;
			t->phase = PH_H_VALIDATE;
			n = queue_all(t, TOP_HVALIDATE, false);
			break;
		case PH_H_VALIDATE:
			t->phase = PH_H_VALIDATE_LAST;
			n = queue_all(t, TOP_HVALIDATE, true);
			break;
		case PH_H_VALIDATE_LAST:
			txn_finish(t, XTX_COMMITTED);
			return;
		case PH_RELEASE:
			txn_finish(t, t->release_outcome);
			return;
		default:
			return;
		}
		if (n) {
			t->rounds++;
			return;
		}
	}
}

const struct txn_protocol txn_proto_hades = {
	.name = "hades",
	/* participants are named in a 64-bit set (include/xtx/hades.h) */
	.max_servers = XTX_HADES_MAX_SERVERS,
	.queue_reads = hades_queue_reads,
	.phases = hades_phases,
	.fill_op = hades_fill_op,
	.on_reply = hades_on_reply,
};
