// SPDX-License-Identifier: GPL-2.0-only
/*
 * The lock-based commit path OCC and 2PL share (design §5).  After the
 * step function's reads (locks that read, for 2PL; for OCC plain reads, or
 * OCC_LOCK for a key read for update, as Xenic fuses them): lock the write
 * keys not locked yet, let the protocol check its read set, log every
 * write on every replica, install at the backups, install at the
 * primaries (which releases the locks); shared locks go with the primary
 * commits.
 *
 * Every phase sends its ops and waits until all are answered.  Once every
 * replica logged every write (the commit point) the transaction only
 * moves forward: lost requests are re-sent in new ones until the commits
 * are applied.
 */
#include <stdio.h>
#include <string.h>
#include "clock.h"
#include "locking.h"

/* ---- building ops -------------------------------------------------------- */

void lk_fill_op(const struct txn_opref *ref, struct xtx_op *op, const struct lk_rules *r)
{
	const struct xtx_txn *t = ref->t;
	const struct txn_key *k = &t->keys[ref->key];

	memset(op, 0, sizeof(*op));
	op->table = k->table;
	op->key = k->key;
	op->txn = t->id;
	switch (ref->kind) {
	case TOP_LOCK_EXCL:
		op->opcode = r->op_lock_excl;
		break;
	case TOP_LOCK_SHARED:
		op->opcode = XTX_OP_LOCK_SHARED;
		break;
	case TOP_LOG:
		op->opcode = XTX_OP_LOG_APPEND;
		op->version = k->version + 1;
		op->token = txn_replica_set(t, k);
		txn_fill_value(op, k);
		if (ref->oflags & OPR_LAST)
			/* the count makes a record missing a write incomplete (xtx/log.h) */
			op->flags |= XTX_OPF_LOG_LAST |
				     txn_log_count(t, ref->server) << XTX_OPF_LOG_COUNT_SHIFT;
		if (!(ref->oflags & OPR_REPLICA)) {
			/* the primary holds the lock: the append proves the grant (xtx/log.h) */
			op->flags |= XTX_OPF_LOG_PRIMARY;
			op->token |= (uint64_t)(uint32_t)k->token << 32;
		}
		break;
	case TOP_LOG_META:
		/* no write: the servers the resolver must ask (xtx/log.h) */
		op->opcode = XTX_OP_LOG_APPEND;
		op->key = 0;
		op->flags = XTX_OPF_LOG_META;
		op->version = txn_write_replicas(t);
		break;
	case TOP_COMMIT_BACKUP:
		op->opcode = XTX_OP_COMMIT_BACKUP;
		op->version = k->version + 1;
		txn_fill_value(op, k);
		break;
	case TOP_COMMIT_PRIMARY:
		op->opcode = XTX_OP_COMMIT_PRIMARY;
		op->version = k->version;
		op->token = k->token;
		txn_fill_value(op, k);
		break;
	case TOP_UNLOCK_EXCL:
		op->opcode = r->op_unlock_excl;
		op->token = k->token;
		break;
	case TOP_UNLOCK_SHARED:
		op->opcode = XTX_OP_UNLOCK_SHARED;
		op->token = k->shared_token;
		break;
	case TOP_VALIDATE:
		op->opcode = XTX_OP_OCC_VALIDATE;
		op->version = k->version;
		break;
	case TOP_VALIDATE_ABSENT:
		op->opcode = XTX_OP_READ;
		break;
	default:
		/* the protocol's own kinds: it fills the opcode */
		break;
	}
}

/* ---- replies -------------------------------------------------------------- */

/* Keys the step function read. */
static unsigned int lk_reads(const struct xtx_txn *t)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->nkeys; i++)
		n += !!(t->keys[i].flags & KF_READ);
	return n;
}

bool lk_locked_by_other(const struct xtx_op *op)
{
	return (op->flags & XTX_LOCKF_EXCL) && !(op->flags & XTX_LOCKF_MINE);
}

static void on_grant(struct xtx_txn *t, struct txn_key *k, const struct xtx_op *op, bool excl)
{
	bool absent = op->flags & XTX_TXF_ABSENT;

	if (excl) {
		k->flags |= KF_EXCL;
		k->token = op->token;
	} else {
		k->flags |= KF_SHARED;
		k->shared_token = op->token;
	}
	/*
	 * A key read before it was locked must not have changed meanwhile.
	 * Absent then and now is unchanged whatever the versions say: a read
	 * that finds nothing reports no version.
	 */
	if ((k->flags & KF_ANSWERED) && (!!(k->flags & KF_ABSENT) != absent ||
					 (!absent && k->version != op->version))) {
		txn_abort_for(t, XTX_CAUSE_VALIDATION);
		return;
	}
	txn_note_value(t, k, op, absent);
}

void lk_on_reply(struct txn_opref *ref, const struct xtx_op *op)
{
	struct xtx_txn *t = ref->t;
	struct txn_key *k = &t->keys[ref->key];
	uint8_t st = op->status;

	switch (ref->kind) {
	case TOP_LOCK_EXCL:
	case TOP_LOCK_SHARED:
		if (st == XTX_ST_OK)
			on_grant(t, k, op, ref->kind == TOP_LOCK_EXCL);
		else if (st == XTX_ST_REJECTED)
			txn_abort_for(t, XTX_CAUSE_LOCK);
		else if (st == XTX_ST_NOT_HELD)
			/* a resend answered after the lease took the grant back */
			txn_abort_for(t, XTX_CAUSE_LEASE);
		else
			txn_refused(t, op);
		break;
	case TOP_LOG:
	case TOP_LOG_META:
		if (st == XTX_ST_LOG_FULL)
			/*
			 * full for a second of tries (wire.c): a replica whose log
			 * is not drained (its xtxd suspended) may yet be moved out,
			 * and the replicas left, holding the record, commit it
			 * without this append; not an abort, then: the servers decide
			 */
			t->in_doubt = true;
		else if (st == XTX_ST_MOVED)
			/*
			 * placed by an older configuration: this append cannot
			 * complete the record, but the others may have, and the
			 * servers left decide it (the resolver)
			 */
			t->in_doubt = true;
		else if (st == XTX_ST_FENCED || st == XTX_ST_NOT_HELD)
			/*
			 * too slow: the servers decided the transaction without us,
			 * or the lease took the lock back and another may have
			 * committed the key since
			 */
			txn_abort_for(t, XTX_CAUSE_LEASE);
		else if (st != XTX_ST_OK)
			txn_refused(t, op);
		break;
	case TOP_COMMIT_BACKUP:
	case TOP_COMMIT_PRIMARY:
		if (st != XTX_ST_OK && st != XTX_ST_ALREADY_APPLIED)
			txn_commit_doubt(t, op);
		break;
	case TOP_VALIDATE:
		if (st == XTX_ST_LOCKED || st == XTX_ST_CHANGED || st == XTX_ST_NOT_FOUND)
			txn_abort_for(t, XTX_CAUSE_VALIDATION);
		else if (st != XTX_ST_OK)
			txn_refused(t, op);
		break;
	case TOP_VALIDATE_ABSENT:
		if (st == XTX_ST_OK || (st == XTX_ST_NOT_FOUND && lk_locked_by_other(op)))
			txn_abort_for(t, XTX_CAUSE_VALIDATION);
		else if (st != XTX_ST_NOT_FOUND)
			txn_refused(t, op);
		else
			/*
			 * Still absent: the transaction serializes here, so the
			 * absence it read is the one now (its version, for histories).
			 */
			k->version = op->version;
		break;
	case TOP_UNLOCK_EXCL:
	case TOP_UNLOCK_SHARED:
		/*
		 * A stale release changed nothing, which is all an abort needs.
		 * A read-only transaction's reads are consistent only if every
		 * lock was still held when released: one the lease took back may
		 * have been written over meanwhile.
		 */
		if ((op->flags & XTX_LOCKF_STALE) && t->phase == PH_RELEASE &&
		    t->release_outcome == XTX_COMMITTED && lk_reads(t) > 1) {
			t->release_outcome = XTX_ABORTED;
			txn_abort_for(t, XTX_CAUSE_LEASE);
		}
		break;
	default:
		txn_refused(t, op);
		break;
	}
}

/* ---- phases --------------------------------------------------------------- */

/* Releases every lock held; ends with o (and t->cause) when they are answered. */
static void start_release(struct xtx_txn *t, enum xtx_outcome o)
{
	unsigned int i;

	t->phase = PH_RELEASE;
	t->release_outcome = o;
	for (i = 0; i < t->nkeys; i++) {
		struct txn_key *k = &t->keys[i];

		if (k->flags & KF_EXCL)
			txn_queue(t, i, TOP_UNLOCK_EXCL, k->replica[0]);
		if (k->flags & KF_SHARED)
			txn_queue(t, i, TOP_UNLOCK_SHARED, k->replica[0]);
		k->flags &= ~(KF_EXCL | KF_SHARED);
	}
	if (!t->waiting)
		txn_finish(t, o);
}

static void abort_now(struct xtx_txn *t)
{
	start_release(t, t->failed ? XTX_FAILED : XTX_ABORTED);
}

unsigned int lk_queue_reads(struct xtx_txn *t, const struct lk_rules *r)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->nkeys; i++) {
		struct txn_key *k = &t->keys[i];

		if (!(k->flags & KF_READ) || (k->flags & KF_SENT))
			continue;
		k->flags |= KF_SENT;
		txn_queue(t, i, k->flags & KF_FOR_UPDATE ? TOP_LOCK_EXCL : r->plain_read,
			  k->replica[0]);
		n++;
	}
	return n;
}

/* Locks the write keys the reads did not lock (blind writes, upgrades). */
static unsigned int queue_write_locks(struct xtx_txn *t)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->nkeys; i++) {
		struct txn_key *k = &t->keys[i];

		if ((k->flags & KF_WRITE) && !(k->flags & KF_EXCL)) {
			txn_queue(t, i, TOP_LOCK_EXCL, k->replica[0]);
			n++;
		}
	}
	return n;
}

/* Every write on every replica (the LAST ordering: txn_queue_writes_at). */
static unsigned int queue_log(struct xtx_txn *t, bool last_only)
{
	unsigned int s, n = 0;

	for (s = 0; s < t->c->cfg.nservers; s++)
		n += txn_queue_writes_at(t, TOP_LOG, s, last_only);
	if (n)
		t->logging = true;
	return n;
}

static unsigned int queue_backups(struct xtx_txn *t)
{
	unsigned int i, r, n = 0;

	for (i = 0; i < t->nkeys; i++) {
		if (!(t->keys[i].flags & KF_WRITE))
			continue;
		for (r = 1; r < t->keys[i].nrep; r++) {
			txn_queue(t, i, TOP_COMMIT_BACKUP, t->keys[i].replica[r]);
			n++;
		}
	}
	return n;
}

/* Installs at the primaries, which releases the exclusive locks; shared ones go too. */
static unsigned int queue_primaries(struct xtx_txn *t)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->nkeys; i++) {
		struct txn_key *k = &t->keys[i];

		if (k->flags & KF_WRITE) {
			txn_queue(t, i, TOP_COMMIT_PRIMARY, k->replica[0]);
			k->flags &= ~KF_EXCL;
			n++;
		} else if (k->flags & KF_EXCL) {
			/* read for update, then not written */
			txn_queue(t, i, TOP_UNLOCK_EXCL, k->replica[0]);
			k->flags &= ~KF_EXCL;
			n++;
		}
		if (k->flags & KF_SHARED) {
			txn_queue(t, i, TOP_UNLOCK_SHARED, k->replica[0]);
			k->flags &= ~KF_SHARED;
			n++;
		}
	}
	return n;
}


void lk_phases(struct xtx_txn *t, const struct lk_rules *r)
{
	unsigned int n;

	for (;;) {
		if ((t->cause != XTX_CAUSE_NONE || t->failed) && t->phase != PH_RELEASE) {
			if (t->phase == PH_BACKUP || t->phase == PH_PRIMARY) {
				/* cannot happen: nothing past the commit point aborts */
				t->cause = XTX_CAUSE_NONE;
				t->failed = false;
			} else {
				abort_now(t);
				return;
			}
		}
		switch (t->phase) {
		case PH_EXEC:
			t->phase = PH_LOCK;
			n = queue_write_locks(t);
			break;
		case PH_LOCK:
			txn_check_write_rules(t);
			if (t->cause != XTX_CAUSE_NONE)
				continue;
			t->phase = PH_VALIDATE;
			n = r->queue_validation ? r->queue_validation(t) : 0;
			break;
		case PH_VALIDATE:
			if (!txn_has_writes(t)) {
				/* read-only: OCC holds nothing, 2PL releases its shared locks */
				start_release(t, XTX_COMMITTED);
				return;
			}
			if (txn_lease_passed(t, xtx_now_ns())) {
				txn_abort_for(t, XTX_CAUSE_LEASE);
				continue;
			}
			/* its locks may have gone with a failed primary */
			if (txn_placement_changed(t)) {
				txn_abort_for(t, XTX_CAUSE_MOVED);
				continue;
			}
			t->phase = PH_LOG;
			n = queue_log(t, false);
			break;
		case PH_LOG:
		case PH_LOG_LAST:
			/*
			 * An append could not be made under the new placement:
			 * the servers left decide, with the locks still held
			 * (a release could let another see what it overwrites).
			 */
			if (t->in_doubt) {
				txn_finish(t, XTX_IN_DOUBT);
				return;
			}
			if (t->phase == PH_LOG_LAST) {
				/* every replica logged every write: committed */
				t->phase = PH_BACKUP;
				n = queue_backups(t);
				break;
			}
			t->phase = PH_LOG_LAST;
			n = queue_log(t, true);
			break;
		case PH_BACKUP:
			t->phase = PH_PRIMARY;
			n = queue_primaries(t);
			break;
		case PH_PRIMARY:
			txn_finish(t, XTX_COMMITTED);
			return;
		case PH_RELEASE:
			txn_finish(t, t->release_outcome);
			return;
		default:
			/* not a phase of this path */
			return;
		}
		if (n) {
			t->rounds++;
			return;
		}
	}
}
