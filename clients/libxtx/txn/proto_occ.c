// SPDX-License-Identifier: GPL-2.0-only
/*
 * OCC as FaSST runs it and DINT runs TATP: reads at the primary without a
 * lock (READ, which also reports the lock state: a reader that finds the
 * key locked aborts), a key read for update read and locked in one op
 * (OCC_LOCK); at commit the read set is validated (lock word, then
 * version) once the write keys are locked, then the shared lock-based path
 * logs and commits (locking.c).
 */
#include "locking.h"

/* Re-checks the keys read without a lock (FaSST's validation). */
static unsigned int occ_queue_validation(struct xtx_txn *t)
{
	unsigned int i, n = 0, reads = 0;

	for (i = 0; i < t->nkeys; i++)
		reads += !!(t->keys[i].flags & KF_READ);
	/* one key read and nothing written: the read alone is serializable */
	if (reads <= 1 && !txn_has_writes(t))
		return 0;
	for (i = 0; i < t->nkeys; i++) {
		struct txn_key *k = &t->keys[i];

		if (!(k->flags & KF_VALIDATE) || (k->flags & KF_EXCL))
			continue;
		txn_queue(t, i, k->flags & KF_ABSENT ? TOP_VALIDATE_ABSENT : TOP_VALIDATE,
			  k->replica[0]);
		n++;
	}
	return n;
}

static const struct lk_rules occ_rules = {
	.op_lock_excl = XTX_OP_OCC_LOCK,
	.op_unlock_excl = XTX_OP_OCC_UNLOCK,
	.plain_read = TOP_READ,
	.queue_validation = occ_queue_validation,
};

static unsigned int occ_queue_reads(struct xtx_txn *t)
{
	return lk_queue_reads(t, &occ_rules);
}

static void occ_phases(struct xtx_txn *t)
{
	lk_phases(t, &occ_rules);
}

static void occ_fill_op(const struct txn_opref *ref, struct xtx_op *op)
{
	lk_fill_op(ref, op, &occ_rules);
	if (ref->kind == TOP_READ)
		op->opcode = XTX_OP_READ;
}

static void occ_on_reply(struct txn_opref *ref, const struct xtx_op *op)
{
	struct xtx_txn *t = ref->t;
	struct txn_key *k = &t->keys[ref->key];
	uint8_t st = op->status;

	switch (ref->kind) {
	case TOP_READ:
		if (st != XTX_ST_OK && st != XTX_ST_NOT_FOUND) {
			txn_refused(t, op);
			break;
		}
		txn_note_value(t, k, op, st == XTX_ST_NOT_FOUND);
		k->flags |= KF_VALIDATE;
		/* FaSST: a reader that finds the key locked aborts */
		if (lk_locked_by_other(op))
			txn_abort_for(t, XTX_CAUSE_LOCK);
		break;
	default:
		lk_on_reply(ref, op);
		break;
	}
}

const struct txn_protocol txn_proto_occ = {
	.name = "occ",
	.queue_reads = occ_queue_reads,
	.phases = occ_phases,
	.fill_op = occ_fill_op,
	.on_reply = occ_on_reply,
};
