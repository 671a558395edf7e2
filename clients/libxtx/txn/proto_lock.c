// SPDX-License-Identifier: GPL-2.0-only
/*
 * libxtx's protocols as per-transaction state machines (design §5).
 *
 * OCC (FaSST, as DINT runs TATP): reads at the primary (READ, or OCC_LOCK
 * for a key read for update: read and lock in one op, as Xenic fuses
 * them); at commit, lock the write keys not locked yet, validate the read
 * set, log every write on every replica, install at the backups, install
 * at the primaries (which releases the locks).  No-wait 2PL (DINT's
 * SmallBank): shared or exclusive locks that read, then the same log and
 * commit phases, and the shared locks released with the primary commits.
 *
 * Every phase sends its ops and waits until all are answered; the next
 * phase starts from txn_advance().  Once every replica logged every write
 * (the commit point) the transaction only moves forward: lost requests are
 * re-sent in new ones until the commits are applied.
 */
#include <stdio.h>
#include <string.h>
#include <xtx/log.h>
#include "clock.h"
#include "internal.h"

static bool is_occ(const struct xtx_txn *t)
{
	return t->c->cfg.protocol == XTX_PROTO_OCC;
}

static unsigned int replicas(const struct xtx_txn *t)
{
	return t->c->cfg.replication;
}

/* Notes the first reason to abort; later ones do not replace it. */
void txn_abort_for(struct xtx_txn *t, enum xtx_abort_cause cause)
{
	if (t->cause == XTX_CAUSE_NONE)
		t->cause = cause;
}

void txn_queue(struct xtx_txn *t, unsigned int ki, enum txn_op_kind kind, unsigned int srv)
{
	txn_queue_flags(t, ki, kind, srv, 0);
}

void txn_queue_flags(struct xtx_txn *t, unsigned int ki, enum txn_op_kind kind, unsigned int srv,
		     uint8_t oflags)
{
	if (txn_queue_op(t->c, t, ki, kind, srv, oflags)) {
		/* the queues are sized for every transaction's largest phase */
		fprintf(stderr, "Error: libxtx: op queue of server %u overflowed\n", srv);
		txn_abort_for(t, XTX_CAUSE_REFUSED);
	}
}

/* ---- building ops -------------------------------------------------------- */

static uint8_t acquire_opcode(const struct xtx_txn *t)
{
	return is_occ(t) ? XTX_OP_OCC_LOCK : XTX_OP_LOCK_EXCL;
}

uint64_t txn_replica_set(const struct xtx_txn *t, const struct txn_key *k)
{
	__u16 r[TXN_MAX_REPLICAS];
	unsigned int i;

	for (i = 0; i < replicas(t); i++)
		r[i] = k->replica[i];
	return xtx_log_replicas_pack(r, (__u8)replicas(t));
}

void txn_fill_value(struct xtx_op *op, const struct txn_key *k)
{
	op->vlen = k->new_vlen;
	memcpy(op->value, k->new_value, sizeof(op->value));
	if (k->flags & KF_DELETE)
		op->flags |= XTX_OPF_DELETE;
}

void txn_fill_op(const struct txn_opref *ref, struct xtx_op *op)
{
	const struct xtx_txn *t = ref->t;
	const struct txn_key *k = &t->keys[ref->key];

	if (ref->kind >= TOP_HREAD) {
		hades_fill_op(ref, op);
		return;
	}
	memset(op, 0, sizeof(*op));
	op->table = k->table;
	op->key = k->key;
	op->txn = t->id;
	switch (ref->kind) {
	case TOP_READ:
	case TOP_VALIDATE_ABSENT:
		op->opcode = XTX_OP_READ;
		break;
	case TOP_LOCK_EXCL:
		op->opcode = acquire_opcode(t);
		break;
	case TOP_LOCK_SHARED:
		op->opcode = XTX_OP_LOCK_SHARED;
		break;
	case TOP_VALIDATE:
		op->opcode = XTX_OP_OCC_VALIDATE;
		op->version = k->version;
		break;
	case TOP_LOG:
		op->opcode = XTX_OP_LOG_APPEND;
		op->version = k->version + 1;
		op->token = txn_replica_set(t, k);
		txn_fill_value(op, k);
		if (ref->oflags & OPR_LAST)
			op->flags |= XTX_OPF_LOG_LAST;
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
		op->opcode = is_occ(t) ? XTX_OP_OCC_UNLOCK : XTX_OP_UNLOCK_EXCL;
		op->token = k->token;
		break;
	case TOP_UNLOCK_SHARED:
		op->opcode = XTX_OP_UNLOCK_SHARED;
		op->token = k->shared_token;
		break;
	}
}

/* ---- replies -------------------------------------------------------------- */

void txn_note_value(struct txn_key *k, const struct xtx_op *op, bool absent)
{
	k->flags |= KF_ANSWERED;
	k->version = op->version;
	if (absent) {
		k->flags |= KF_ABSENT;
		k->vlen = 0;
		memset(k->value, 0, sizeof(k->value));
		return;
	}
	k->flags &= ~KF_ABSENT;
	k->vlen = op->vlen <= XTX_VALUE_MAX ? op->vlen : XTX_VALUE_MAX;
	memcpy(k->value, op->value, sizeof(k->value));
}

static bool locked_by_other(const struct xtx_op *op)
{
	return (op->flags & XTX_LOCKF_EXCL) && !(op->flags & XTX_LOCKF_MINE);
}

static void on_grant(struct xtx_txn *t, struct txn_key *k, const struct xtx_op *op, bool excl)
{
	bool absent = op->flags & XTX_TXF_ABSENT;

	if (!t->first_grant_ns)
		t->first_grant_ns = xtx_now_ns();
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
	txn_note_value(k, op, absent);
}

/* An op answered with something no phase expects: the server refused it. */
void txn_refused(struct xtx_txn *t, const struct xtx_op *op)
{
	static bool told;

	if (!told) {
		told = true;
		fprintf(stderr, "Warning: libxtx: server answered opcode %u with status %u\n",
			op->opcode, op->status);
	}
	txn_abort_for(t, op->status == XTX_ST_FULL ? XTX_CAUSE_FULL : XTX_CAUSE_REFUSED);
}

void txn_commit_warn(const struct xtx_op *op)
{
	static bool told;

	/*
	 * Past the commit point nothing may abort; a commit the server will
	 * not apply means the replicas disagree, which the checks will show.
	 */
	if (!told) {
		told = true;
		fprintf(stderr, "Warning: libxtx: commit of txn %#llx answered status %u\n",
			(unsigned long long)op->txn, op->status);
	}
}

void txn_on_reply(struct txn_opref *ref, const struct xtx_op *op)
{
	struct xtx_txn *t = ref->t;
	struct txn_key *k = &t->keys[ref->key];
	uint8_t st = op->status;

	switch (ref->kind) {
	case TOP_HREAD:
	case TOP_HWRITE:
	case TOP_HINTEND:
	case TOP_HVALIDATE:
	case TOP_HABORT:
		hades_on_reply(ref, op);
		break;
	case TOP_READ:
		if (st != XTX_ST_OK && st != XTX_ST_NOT_FOUND) {
			txn_refused(t, op);
			break;
		}
		txn_note_value(k, op, st == XTX_ST_NOT_FOUND);
		k->flags |= KF_VALIDATE;
		/* FaSST: a reader that finds the key locked aborts */
		if (locked_by_other(op))
			txn_abort_for(t, XTX_CAUSE_LOCK);
		break;
	case TOP_LOCK_EXCL:
	case TOP_LOCK_SHARED:
		if (st == XTX_ST_OK)
			on_grant(t, k, op, ref->kind == TOP_LOCK_EXCL);
		else if (st == XTX_ST_REJECTED)
			txn_abort_for(t, XTX_CAUSE_LOCK);
		else
			txn_refused(t, op);
		break;
	case TOP_VALIDATE:
		if (st == XTX_ST_LOCKED || st == XTX_ST_CHANGED || st == XTX_ST_NOT_FOUND)
			txn_abort_for(t, XTX_CAUSE_VALIDATION);
		else if (st != XTX_ST_OK)
			txn_refused(t, op);
		break;
	case TOP_VALIDATE_ABSENT:
		if (st == XTX_ST_OK || (st == XTX_ST_NOT_FOUND && locked_by_other(op)))
			txn_abort_for(t, XTX_CAUSE_VALIDATION);
		else if (st != XTX_ST_NOT_FOUND)
			txn_refused(t, op);
		break;
	case TOP_LOG:
		if (st == XTX_ST_LOG_FULL)
			txn_abort_for(t, XTX_CAUSE_FULL);
		else if (st == XTX_ST_FENCED)
			/* too slow: the servers decided the transaction without us */
			txn_abort_for(t, XTX_CAUSE_LEASE);
		else if (st != XTX_ST_OK)
			txn_refused(t, op);
		break;
	case TOP_COMMIT_BACKUP:
	case TOP_COMMIT_PRIMARY:
		if (st != XTX_ST_OK && st != XTX_ST_ALREADY_APPLIED)
			txn_commit_warn(op);
		break;
	case TOP_UNLOCK_EXCL:
	case TOP_UNLOCK_SHARED:
		/* a stale release changed nothing, which is all an abort needs */
		break;
	}
	if (--t->waiting == 0)
		txn_make_ready(t);
}

void txn_on_lost(struct txn_opref *ref)
{
	struct xtx_txn *t = ref->t;

	switch (ref->kind) {
	case TOP_LOG:
	case TOP_COMMIT_BACKUP:
	case TOP_COMMIT_PRIMARY:
	case TOP_HVALIDATE:
	case TOP_HABORT:
		/*
		 * Once a LOG_APPEND is out (or every HADES participant acked)
		 * the transaction may be committed on every replica: it must
		 * never be reported failed, so keep trying, in a new request.
		 * A HADES abort too: a committing slot waits for it forever.
		 */
		t->waiting--;
		if (txn_queue_op(t->c, t, ref->key, ref->kind, ref->server,
				 ref->oflags & ~OPR_GLUE) == 0)
			return;
		break;
	case TOP_UNLOCK_EXCL:
	case TOP_UNLOCK_SHARED:
		/* the lease frees what the release could not */
		t->waiting--;
		break;
	default:
		/* a grant may have happened unseen: the lease frees it */
		t->failed = true;
		t->waiting--;
		break;
	}
	if (t->waiting == 0)
		txn_make_ready(t);
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

bool txn_has_writes(const struct xtx_txn *t)
{
	unsigned int i;

	for (i = 0; i < t->nkeys; i++)
		if (t->keys[i].flags & KF_WRITE)
			return true;
	return false;
}

/* Queues the reads the step function asked for in this round. */
static unsigned int queue_reads(struct xtx_txn *t)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->nkeys; i++) {
		struct txn_key *k = &t->keys[i];
		enum txn_op_kind kind;

		if (!(k->flags & KF_READ) || (k->flags & KF_SENT))
			continue;
		k->flags |= KF_SENT;
		if (k->flags & KF_FOR_UPDATE)
			kind = TOP_LOCK_EXCL;
		else
			kind = is_occ(t) ? TOP_READ : TOP_LOCK_SHARED;
		txn_queue(t, i, kind, k->replica[0]);
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

/* The write set's existence rules, once every write key is locked and read. */
void txn_check_write_rules(struct xtx_txn *t)
{
	unsigned int i;

	for (i = 0; i < t->nkeys; i++) {
		const struct txn_key *k = &t->keys[i];

		if ((k->flags & KF_INSERT) && !(k->flags & KF_ABSENT))
			txn_abort_for(t, XTX_CAUSE_EXISTS);
		if ((k->flags & KF_DELETE) && (k->flags & KF_ABSENT))
			txn_abort_for(t, XTX_CAUSE_NOT_FOUND);
	}
}

/* OCC: re-checks the keys read without a lock (FaSST's validation). */
static unsigned int queue_validation(struct xtx_txn *t)
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

unsigned int txn_replica_index(const struct xtx_txn *t, const struct txn_key *k, unsigned int srv)
{
	unsigned int r;

	for (r = 0; r < replicas(t); r++)
		if (k->replica[r] == srv)
			return r + 1;
	return 0;
}

unsigned int txn_writes_at(const struct xtx_txn *t, unsigned int srv)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->nkeys; i++)
		n += (t->keys[i].flags & KF_WRITE) && txn_replica_index(t, &t->keys[i], srv);
	return n;
}

unsigned int txn_queue_writes_at(struct xtx_txn *t, enum txn_op_kind kind, unsigned int srv,
				 bool last_only)
{
	unsigned int i, k = 0, n = 0, total = txn_writes_at(t, srv);
	bool split = total > t->c->cfg.ops_per_packet;

	for (i = 0; i < t->nkeys; i++) {
		unsigned int ri = txn_replica_index(t, &t->keys[i], srv);
		bool last;

		if (!(t->keys[i].flags & KF_WRITE) || !ri)
			continue;
		last = ++k == total;
		if (split ? last_only != last : last_only)
			continue;
		txn_queue_flags(t, i, kind, srv, (last ? OPR_LAST : 0) | (ri > 1 ? OPR_REPLICA : 0) |
						 (!split && k > 1 ? OPR_GLUE : 0));
		n++;
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
		for (r = 1; r < replicas(t); r++) {
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

/* A coordinator that cannot log within the lease may have lost its locks. */
static bool lease_expired(const struct xtx_txn *t)
{
	uint64_t lease = t->c->cfg.lock_lease_ns, margin;

	if (!lease || !t->first_grant_ns)
		return false;
	margin = lease / 4;
	return xtx_now_ns() - t->first_grant_ns >= lease - margin;
}

/* Runs the step function for the next round; returns its verdict. */
static enum xtx_step run_step(struct xtx_txn *t)
{
	enum xtx_step v;

	t->in_step = true;
	v = t->step(t, t->arg);
	t->in_step = false;
	return v;
}

/* Moves from phase to phase until one has ops to wait for, or the end. */
static void commit_phases(struct xtx_txn *t)
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
			n = is_occ(t) ? queue_validation(t) : 0;
			break;
		case PH_VALIDATE:
			if (!txn_has_writes(t)) {
				/* read-only: OCC holds nothing, 2PL releases its shared locks */
				start_release(t, XTX_COMMITTED);
				return;
			}
			if (lease_expired(t)) {
				txn_abort_for(t, XTX_CAUSE_LEASE);
				continue;
			}
			t->phase = PH_LOG;
			n = queue_log(t, false);
			break;
		case PH_LOG:
			t->phase = PH_LOG_LAST;
			n = queue_log(t, true);
			break;
		case PH_LOG_LAST:
			/* every replica logged every write: committed */
			t->phase = PH_BACKUP;
			n = queue_backups(t);
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
			/* HADES phases: txn_hades.c */
			return;
		}
		if (n) {
			t->rounds++;
			return;
		}
	}
}

void txn_advance(struct xtx_txn *t)
{
	enum xtx_step v;

	if (t->waiting)
		return;
	if (t->c->cfg.protocol == XTX_PROTO_HADES && (t->phase != PH_EXEC || t->cause ||
						      t->failed)) {
		hades_phases(t);
		return;
	}
	if (t->phase != PH_EXEC) {
		commit_phases(t);
		return;
	}
	if (t->cause != XTX_CAUSE_NONE || t->failed) {
		abort_now(t);
		return;
	}
	v = run_step(t);
	t->round++;
	if (v == XTX_STEP_ABORT)
		txn_abort_for(t, XTX_CAUSE_USER);
	else if (v == XTX_STEP_READ && (t->c->cfg.protocol == XTX_PROTO_HADES ?
					hades_queue_reads(t) : queue_reads(t))) {
		t->rounds++;
		return;
	}
	/* COMMIT (reads asked for now are not needed), READ with nothing new, or ABORT */
	if (t->c->cfg.protocol == XTX_PROTO_HADES)
		hades_phases(t);
	else if (t->cause != XTX_CAUSE_NONE)
		abort_now(t);
	else
		commit_phases(t);
}
