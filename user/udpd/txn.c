// SPDX-License-Identifier: GPL-2.0-only
/* Transaction ops as bpf/lib/txn.h runs them: a lock half and a KV half, fused. */
#include <xtx/hash.h>
#include <xtx/log.h>
#include "kv.h"
#include "locks.h"
#include "store.h"
#include "txlog.h"
#include "txn.h"

bool udpd_is_acquire(uint8_t opcode)
{
	return opcode == XTX_OP_LOCK_SHARED || opcode == XTX_OP_LOCK_EXCL ||
	       opcode == XTX_OP_OCC_LOCK;
}

/*
 * The lock half, then (unless XTX_OPF_NO_VALUE) the value of the key now
 * held.  A value longer than the room left for it answers TOO_BIG before
 * the lock is taken: the op did nothing, the client asks again with room.
 */
static uint8_t acquire(struct udpd_worker *w, struct udpd_stripe *s, uint64_t h,
		       struct xtx_op *op, const struct udpd_val *v)
{
	bool want_value = !(op->flags & XTX_OPF_NO_VALUE);
	uint16_t vlen;
	uint8_t st;

	if (want_value && !udpd_kv_fits(s, op, v, &vlen))
		return udpd_kv_too_big(op, v, vlen);
	st = udpd_lock_op(s, h, op, udpd_now(w), w->srv->cfg.lock_lease_ns, w->stats);
	if (st != XTX_ST_OK || !want_value)
		return st;
	return udpd_kv_read_locked(s, op, v);
}

/* Lock word first, then version: a lock held by another fails fast. */
static uint8_t validate(struct udpd_worker *w, struct udpd_stripe *s, uint64_t h,
			struct xtx_op *op)
{
	uint8_t st = udpd_lock_op(s, h, op, udpd_now(w), w->srv->cfg.lock_lease_ns, w->stats);

	if (st != XTX_ST_OK)
		return st;
	if ((op->flags & XTX_LOCKF_EXCL) && !(op->flags & XTX_LOCKF_MINE))
		return XTX_ST_LOCKED;
	return udpd_kv_validate(s, op);
}

/* A read reports the key's lock state too: a FaSST reader aborts on a locked key. */
static uint8_t read_op(struct udpd_stripe *s, uint64_t h, struct xtx_op *op,
		       const struct udpd_val *v)
{
	op->flags = udpd_lock_state(s, h, op->table, op->key, op->txn);
	return udpd_kv_op(s, op, v);
}

/* Install at the coordinator's version, then release the transaction's lock. */
static uint8_t commit_primary(struct udpd_stripe *s, uint64_t h, struct xtx_op *op,
			      const struct udpd_val *v)
{
	uint8_t st = udpd_kv_commit(s, op, true, v);

	udpd_lock_release_excl(s, h, op->table, op->key, op->txn, op->token);
	return st;
}

static uint8_t run_locked(struct udpd_worker *w, struct udpd_stripe *s, uint64_t h,
			  struct xtx_op *op, const struct udpd_val *v)
{
	switch (op->opcode) {
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
		return acquire(w, s, h, op, v);
	case XTX_OP_OCC_VALIDATE:
		return validate(w, s, h, op);
	case XTX_OP_UNLOCK_SHARED:
	case XTX_OP_UNLOCK_EXCL:
	case XTX_OP_OCC_UNLOCK:
		return udpd_lock_op(s, h, op, udpd_now(w), w->srv->cfg.lock_lease_ns, w->stats);
	case XTX_OP_READ:
		return read_op(s, h, op, v);
	case XTX_OP_COMMIT_PRIMARY:
		return commit_primary(s, h, op, v);
	case XTX_OP_COMMIT_BACKUP:
		return udpd_kv_commit(s, op, false, v);
	case XTX_OP_GET ... XTX_OP_DELETE:
		return udpd_kv_op(s, op, v);
	case XTX_OP_LOG_APPEND:
		/* a logged transaction is committed: its lock must outlive any lease */
		udpd_lock_mark_logged(s, h, op->table, op->key, op->txn);
		return XTX_ST_OK;
	default:
		return XTX_ST_UNKNOWN_OP;
	}
}

uint8_t udpd_op_keyed(struct udpd_worker *w, struct xtx_op *op, uint32_t client_id,
		      const struct udpd_val *v)
{
	uint64_t h = xtx_hash(op->table, op->key);
	struct udpd_stripe *s = udpd_stripe_of(w->srv->store, h);
	uint8_t st;

	if (op->opcode == XTX_OP_LOG_APPEND && (op->flags & XTX_OPF_LOG_PRIMARY)) {
		/* room first: a lock marked logged with no record would stay forever */
		if (!udpd_txlog_has_room(w->log, v->len))
			return XTX_ST_LOG_FULL;
		pthread_mutex_lock(&s->mu);
		st = udpd_lock_claim_grant(s, h, op->table, op->key, op->txn,
					   xtx_log_grant_of(op->token));
		pthread_mutex_unlock(&s->mu);
		return st == XTX_ST_OK ? udpd_txlog_append(w->log, op, client_id, v) : st;
	}
	if (op->opcode == XTX_OP_LOG_APPEND) {
		st = udpd_txlog_append(w->log, op, client_id, v);
		if (st != XTX_ST_OK)
			return st;
	}
	pthread_mutex_lock(&s->mu);
	st = run_locked(w, s, h, op, v);
	pthread_mutex_unlock(&s->mu);
	return st;
}

void udpd_reread_grant(struct udpd_worker *w, struct xtx_op *op, const struct udpd_val *v)
{
	uint64_t h = xtx_hash(op->table, op->key);
	struct udpd_stripe *s = udpd_stripe_of(w->srv->store, h);
	uint16_t vlen;

	pthread_mutex_lock(&s->mu);
	if (op->status == XTX_ST_TOO_BIG)
		/* the grant was never made: only the length is answered again */
		udpd_kv_too_big(op, v, udpd_kv_fits(s, op, v, &vlen) ? XTX_VALUE_MAX : vlen);
	else
		udpd_kv_read_locked(s, op, v);
	pthread_mutex_unlock(&s->mu);
}
