// SPDX-License-Identifier: GPL-2.0-only
/* Runs the ops XDP deferred against the overflow store and builds the reply TC egress fixes up. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <xtx/hash.h>
#include <xtx/kv.h>
#include <xtx/maps.h>
#include <xtx/hades.h>
#include "rare_exec.h"
#include "log.h"
#include "names.h"

#define DEFER_HDR_LEN	offsetof(struct xtx_defer_trailer, e)
#define DEFER_FLAGS_KNOWN	(XTX_DEFER_HAS_VICTIM | XTX_DEFER_REPLAY | XTX_DEFER_EVICT)
/* log entries of one plain write: a head and the continuations of the longest value */
#define WRITE_ENTRIES	(1 + (XTX_VALUE_MAX + XTX_LOG_CONT_BYTES - 1) / XTX_LOG_CONT_BYTES)

_Static_assert(DEFER_HDR_LEN == 8, "trailer headers are 8 bytes");

/* The request body (header, ops, value area) the reply is written over. */
struct body {
	uint8_t *p;
	size_t len;
};

static const char *const drop_names[XTXD_DROP__COUNT] = {
	[XTXD_DROP_TRUNCATED] = "truncated",
	[XTXD_DROP_HEADER] = "bad_header",
	[XTXD_DROP_LENGTH] = "bad_length",
	[XTXD_DROP_TRAILER] = "bad_trailer",
	[XTXD_DROP_ENTRY] = "bad_entry",
	[XTXD_DROP_TOO_BIG] = "too_big",
	[XTXD_DROP_RECORD] = "no_defer_record",
	[XTXD_DROP_LOG] = "log_failed",
	[XTXD_DROP_PENDING] = "log_pending",
};

const char *xtxd_drop_name(int drop)
{
	return drop >= 0 && drop < XTXD_DROP__COUNT ? drop_names[drop] : "?";
}

static int drop(struct xtxd_exec *x, enum xtxd_drop why)
{
	xtxd_stat_inc(&x->stats.drop[why]);
	return -EINVAL;
}

static size_t op_off(uint32_t idx)
{
	return sizeof(struct xtx_hdr) + (size_t)idx * sizeof(struct xtx_op);
}

/* Ops whose request value is written to the store: a big one comes in the area. */
static bool is_value_write(uint8_t opcode)
{
	return opcode == XTX_OP_INSERT || opcode == XTX_OP_UPDATE ||
	       opcode == XTX_OP_COMMIT_BACKUP || opcode == XTX_OP_COMMIT_PRIMARY;
}

static bool op_ext(const struct xtx_op *op, struct xtx_ext *ext)
{
	if (!(op->flags & XTX_OPF_EXT))
		return false;
	memcpy(ext, op->value, sizeof(*ext));
	return true;
}

static void set_ext(struct xtx_op *op, const struct xtx_ext *ext)
{
	memset(op->value, 0, sizeof(op->value));
	memcpy(op->value, ext, sizeof(*ext));
	op->flags |= XTX_OPF_EXT;
	op->vlen = 0;
}

/*
 * An op's area lies inside the body, after the ops, 8-byte aligned, and a
 * write's value in it is over XTX_VALUE_INLINE and within the area (XDP
 * checked the whole tiling; this is what a wrong datagram could break).
 */
static bool ext_ok(const struct xtx_op *op, size_t ops_end, size_t body_len)
{
	struct xtx_ext ext;

	if (!op_ext(op, &ext))
		return true;
	if (op->vlen || ext.off < ops_end || ext.off % XTX_EXT_ALIGN ||
	    (size_t)ext.off + ext.cap > body_len || ext.cap > XTX_VALUE_MAX)
		return false;
	/* HVALIDATE commits the value XDP put in its area */
	if (is_value_write(op->opcode) ||
	    is_value_write(xtx_hades_kv_opcode(op->opcode, op->flags)))
		return ext.len > XTX_VALUE_INLINE && ext.len <= ext.cap;
	return true;
}

/* The ops XDP may hand over: the KV ops and the KV half of transaction ops. */
static bool is_kv_op(uint8_t opcode)
{
	switch (opcode) {
	case XTX_OP_GET ... XTX_OP_DELETE:
	case XTX_OP_READ ... XTX_OP_COMMIT_PRIMARY:
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
	case XTX_OP_OCC_VALIDATE:
	case XTX_OP_HREAD:
	case XTX_OP_HWRITE:
	case XTX_OP_HVALIDATE:
		return true;
	default:
		return false;
	}
}

static bool way_ok(uint8_t way)
{
	return way < XTX_KV_WAYS || way == XTX_KV_NO_WAY;
}

/* A piggybacked slot: live or tombstone (not both), and of the entry's bucket. */
static bool victim_ok(const struct xtxd_ovf *s, const struct xtx_defer_entry *e)
{
	const struct xtx_kv_item *v = &e->victim;
	uint8_t live = v->flags & (XTX_KVF_VALID | XTX_KVF_TOMB);

	return (live == XTX_KVF_VALID || live == XTX_KVF_TOMB) && e->victim_way < XTX_KV_WAYS &&
	       v->table < XTX_MAX_TABLES && v->vlen <= XTX_VALUE_INLINE &&
	       xtxd_ovf_bucket_of(s, v->table, v->key) == e->bucket;
}

/*
 * Anyone can send to this socket, and a bucket index is used as an array
 * index: every entry is checked against its op before anything runs, so a
 * bad datagram changes nothing.
 */
static bool entries_ok(const struct xtxd_ovf *s, const uint8_t *req, uint32_t nops,
		       size_t body_len, const struct xtx_defer_trailer *dt)
{
	uint32_t seen = 0, i;

	for (i = 0; i < dt->count; i++) {
		const struct xtx_defer_entry *e = &dt->e[i];
		struct xtx_op op;

		if (e->op_idx >= nops || (seen & (1u << e->op_idx)))
			return false;
		seen |= 1u << e->op_idx;
		memcpy(&op, req + op_off(e->op_idx), sizeof(op));
		if (op.status != XTX_ST_DEFERRED || !is_kv_op(op.opcode) ||
		    op.table >= XTX_MAX_TABLES || op.vlen > XTX_VALUE_INLINE)
			return false;
		if ((e->flags & ~DEFER_FLAGS_KNOWN) || !way_ok(e->fill_way) ||
		    e->bucket >= xtxd_ovf_nbuckets(s) ||
		    xtxd_ovf_bucket_of(s, op.table, op.key) != e->bucket)
			return false;
		if ((e->flags & XTX_DEFER_HAS_VICTIM) && !victim_ok(s, e))
			return false;
		if (!ext_ok(&op, op_off(nops), body_len))
			return false;
		/* an eviction names the key's way, and only a victim of that way */
		if ((e->flags & XTX_DEFER_EVICT) &&
		    (e->fill_way >= XTX_KV_WAYS || ((e->flags & XTX_DEFER_HAS_VICTIM) &&
						     (e->victim_way != e->fill_way ||
						      e->victim.key != op.key ||
						      e->victim.table != op.table))))
			return false;
	}
	return true;
}

/* The item a write installs: its value from the slot, or from its area. */
static void item_of_op(struct xtxd_ovf_item *it, const struct body *b, const struct xtx_op *op,
		       uint64_t version)
{
	struct xtx_ext ext;

	memset(it, 0, sizeof(*it));
	it->key = op->key;
	it->table = op->table;
	it->version = version;
	if (op_ext(op, &ext)) {
		it->vlen = ext.len;
		memcpy(it->value, b->p + ext.off, ext.len);
	} else {
		it->vlen = op->vlen;
		memcpy(it->value, op->value, op->vlen);
	}
}

/* Whether the kernel may cache what op wrote or read: never a value over the slot. */
static bool fits_kernel(const struct xtx_op *op)
{
	return !(op->flags & XTX_OPF_EXT) && op->vlen <= XTX_VALUE_INLINE;
}

/*
 * A read's answer: in the slot when it fits there, else in the op's area
 * when its room takes it (EXT, ext.len).  Returns XTX_ST_OK, or
 * XTX_ST_TOO_BIG with the value's length in ext.len: nothing answered.
 */
static uint8_t answer_value(const struct body *b, struct xtx_op *op, const uint8_t *value,
			    uint16_t vlen)
{
	struct xtx_ext ext = {};
	bool room = op_ext(op, &ext);

	if (vlen <= XTX_VALUE_INLINE) {
		op->flags &= ~XTX_OPF_EXT;
		memset(op->value, 0, sizeof(op->value));
		memcpy(op->value, value, vlen);
		op->vlen = vlen;
		return XTX_ST_OK;
	}
	if (!room || vlen > ext.cap) {
		if (!room)
			ext.off = ext.cap = 0;
		ext.len = vlen;
		ext.pad = 0;
		set_ext(op, &ext);
		return XTX_ST_TOO_BIG;
	}
	memcpy(b->p + ext.off, value, vlen);
	/* the rest of the area is the request's: zero, so no stale byte reads as value */
	memset(b->p + ext.off + vlen, 0, ext.cap - vlen);
	ext.len = vlen;
	ext.pad = 0;
	set_ext(op, &ext);
	return XTX_ST_OK;
}

/*
 * Big values this packet wrote are durable now (logged here, or decided by
 * their transaction's log records): XDP may answer reads from copies of
 * them (store/overflow.h, xtxd_ovf_copy_later).
 */
static void copy_durable(struct xtxd_exec *x, const uint8_t *body,
			 const struct xtx_defer_trailer *dt, const bool *ran)
{
	struct xtx_op op;
	uint32_t i;

	for (i = 0; i < dt->count; i++) {
		/* an answer from a record: its own packet copies it once durable */
		if (!ran[i])
			continue;
		memcpy(&op, body + op_off(dt->e[i].op_idx), sizeof(op));
		if (op.status != XTX_ST_OK || !(op.flags & XTX_OPF_EXT) ||
		    (op.opcode != XTX_OP_INSERT && op.opcode != XTX_OP_UPDATE &&
		     op.opcode != XTX_OP_COMMIT_BACKUP && op.opcode != XTX_OP_COMMIT_PRIMARY &&
		     op.opcode != XTX_OP_HVALIDATE))
			continue;
		xtxd_ovf_copy_refresh(x->store, op.table, op.key, op.version);
	}
}

/*
 * Writes the piggybacked dirty slot back.  Returns false when it could not
 * be saved (the store is full): it stays dirty in the kernel, and its way
 * must not be filled over.
 */
static bool write_back_victim(struct xtxd_exec *x, const struct xtx_defer_entry *e,
			      struct xtx_fix_entry *fix)
{
	const struct xtx_kv_item *v = &e->victim;
	struct xtxd_ovf_item it;
	int ret = 0;

	fix->victim_key = v->key;
	fix->victim_version = v->version;
	if (v->flags & XTX_KVF_TOMB) {
		/* deleted in the kernel; a newer copy (none should exist) would be kept */
		xtxd_ovf_del(x->store, v->table, v->key, v->version, NULL);
		xtxd_ovf_raise_floor(x->store, e->bucket, v->version);
		if (fix->floor_to < v->version)
			fix->floor_to = v->version;
		fix->action |= XTX_FIX_VICTIM_SAVED | XTX_FIX_RAISE_FLOOR;
		xtxd_stat_inc(&x->stats.tombs_saved);
		return true;
	}
	/*
	 * The kernel's copy is never newer than a version the store already
	 * has: that one came from this copy, or from a write the store ran
	 * after it (a victim sent again, e.g. by an op on a way EVICTING).
	 */
	if (!xtxd_ovf_get(x->store, v->table, v->key, &it) && it.version >= v->version)
		goto stale;
	memset(&it, 0, sizeof(it));
	it.key = v->key;
	it.version = v->version;
	it.table = v->table;
	it.vlen = v->vlen;
	memcpy(it.value, v->value, v->vlen);
	ret = xtxd_ovf_put(x->store, &it);
	if (ret < 0) {
		xtxd_stat_inc(&x->stats.victims_full);
		return false;
	}
stale:
	/* older than the store's copy: nothing to save, the slot is clean as far as we know */
	xtxd_stat_inc(ret ? &x->stats.victims_saved : &x->stats.victims_stale);
	fix->action |= XTX_FIX_VICTIM_SAVED;
	return true;
}

/* TC fills the way with the op's answer: only a value the slot holds, and never an evicted key. */
static void fill(struct xtxd_exec *x, const struct xtx_defer_entry *e, struct xtx_fix_entry *fix,
		 bool can_fill, const struct xtx_op *op)
{
	if (e->fill_way == XTX_KV_NO_WAY || !can_fill || (e->flags & XTX_DEFER_EVICT) ||
	    !fits_kernel(op))
		return;
	fix->action |= XTX_FIX_FILL;
	xtxd_stat_inc(&x->stats.fills);
}

static void raise_floor(struct xtxd_exec *x, const struct xtx_defer_entry *e,
			struct xtx_fix_entry *fix, uint64_t version)
{
	xtxd_ovf_raise_floor(x->store, e->bucket, version);
	if (fix->floor_to < version)
		fix->floor_to = version;
	fix->action |= XTX_FIX_RAISE_FLOOR;
}

/* The version an absent key's next incarnation must start above: the bucket's floor. */
static uint64_t absent_base(struct xtxd_exec *x, const struct xtx_defer_entry *e,
			    const struct xtx_fix_entry *fix)
{
	uint64_t v = e->vfloor;

	if (v < fix->floor_to)
		v = fix->floor_to;
	if (v < xtxd_ovf_floor(x->store, e->bucket))
		v = xtxd_ovf_floor(x->store, e->bucket);
	return v;
}

/*
 * The KV half of transaction ops, with the kernel's semantics (bpf/lib/kv.h):
 * the lock half already ran in XDP.  Commits install at the version the
 * coordinator fixed and answer ALREADY_APPLIED when it is there already.
 * A grant whose value does not fit the room answers TOO_BIG, and TC
 * releases the grant (XTX_FIX_RELEASE, run_entry): the op took nothing.
 */
static uint8_t run_txn_op(struct xtxd_exec *x, const struct body *bd,
			  const struct xtx_defer_entry *e, struct xtx_op *op,
			  struct xtx_fix_entry *fix, bool can_fill, bool found,
			  const struct xtxd_ovf_item *cur)
{
	bool primary = op->opcode == XTX_OP_COMMIT_PRIMARY, del = op->flags & XTX_OPF_DELETE;
	struct xtxd_ovf_item it;
	uint64_t v;
	uint8_t st;

	switch (op->opcode) {
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
		if (!found) {
			op->flags = (op->flags & ~XTX_OPF_EXT) | XTX_TXF_ABSENT;
			memset(op->value, 0, sizeof(op->value));
			op->vlen = 0;
			op->version = absent_base(x, e, fix);
			return XTX_ST_OK;
		}
		st = answer_value(bd, op, cur->value, cur->vlen);
		if (st == XTX_ST_TOO_BIG)
			return st;
		op->version = cur->version;
		fill(x, e, fix, can_fill, op);
		return XTX_ST_OK;
	case XTX_OP_OCC_VALIDATE:
		v = found ? cur->version : absent_base(x, e, fix);
		if (v == op->version)
			return XTX_ST_OK;
		op->version = v;
		return XTX_ST_CHANGED;
	default:	/* the commits */
		if (found) {
			if (primary && cur->version == op->version + 1)
				return XTX_ST_ALREADY_APPLIED;
			if (primary && cur->version != op->version)
				return XTX_ST_CHANGED;
			if (!primary && cur->version >= op->version)
				return XTX_ST_ALREADY_APPLIED;
		}
		v = primary ? op->version + 1 : op->version;
		if (del) {
			if (found)
				xtxd_ovf_del(x->store, op->table, op->key, UINT64_MAX, NULL);
			raise_floor(x, e, fix, v);
			op->version = v;
			return XTX_ST_OK;
		}
		item_of_op(&it, bd, op, v);
		if (xtxd_ovf_put(x->store, &it) < 0)
			return XTX_ST_FULL;
		op->version = v;
		fill(x, e, fix, can_fill, op);
		return XTX_ST_OK;
	}
}

/* Runs one op against the store (holding its bucket lock); returns its status. */
static uint8_t run_op(struct xtxd_exec *x, const struct body *bd, const struct xtx_defer_entry *e,
		      struct xtx_op *op, struct xtx_fix_entry *fix, bool can_fill)
{
	struct xtxd_ovf_item cur, it;
	uint64_t v;
	bool found = !xtxd_ovf_get(x->store, op->table, op->key, &cur);
	uint8_t st;

	switch (op->opcode) {
	case XTX_OP_GET:
	case XTX_OP_READ:
		if (!found) {
			op->version = absent_base(x, e, fix);	/* as XDP answers */
			return XTX_ST_NOT_FOUND;
		}
		st = answer_value(bd, op, cur.value, cur.vlen);
		if (st != XTX_ST_OK)
			return st;
		op->version = cur.version;
		fill(x, e, fix, can_fill, op);
		return XTX_ST_OK;
	case XTX_OP_INSERT:
		if (found)
			return XTX_ST_EXISTS;
		/* above every version that ever left this bucket, ours or the kernel's */
		v = e->vfloor;
		if (v < fix->floor_to)
			v = fix->floor_to;
		if (v < xtxd_ovf_floor(x->store, e->bucket))
			v = xtxd_ovf_floor(x->store, e->bucket);
		item_of_op(&it, bd, op, v + 1);
		if (xtxd_ovf_put(x->store, &it) < 0)
			return XTX_ST_FULL;
		op->version = v + 1;
		fill(x, e, fix, can_fill, op);
		return XTX_ST_OK;
	case XTX_OP_UPDATE:
		if (!found)
			return XTX_ST_NOT_FOUND;
		item_of_op(&it, bd, op, cur.version + 1);
		if (xtxd_ovf_put(x->store, &it) < 0)
			return XTX_ST_FULL;
		op->version = cur.version + 1;
		fill(x, e, fix, can_fill, op);
		return XTX_ST_OK;
	case XTX_OP_LOCK_SHARED ... XTX_OP_OCC_VALIDATE:
	case XTX_OP_COMMIT_BACKUP:
	case XTX_OP_COMMIT_PRIMARY:
		return run_txn_op(x, bd, e, op, fix, can_fill, found, &cur);
	default: /* XTX_OP_DELETE */
		if (!found || !xtxd_ovf_del(x->store, op->table, op->key, UINT64_MAX, &cur))
			return XTX_ST_NOT_FOUND;
		/* the tombstone's version leaves the bucket for good: no one reuses it */
		op->version = cur.version + 1;
		raise_floor(x, e, fix, op->version);
		return XTX_ST_OK;
	}
}

/* A HADES op's KV half runs as the op it stands for, as in XDP (include/xtx/hades.h). */
static uint8_t run_op_as(struct xtxd_exec *x, const struct body *bd,
			 const struct xtx_defer_entry *e, struct xtx_op *op,
			 struct xtx_fix_entry *fix, bool can_fill)
{
	uint8_t orig = op->opcode, alias = xtx_hades_kv_opcode(orig, op->flags), st;
	uint64_t base = op->version;

	if (alias == XTX_OP_NOP)
		return run_op(x, bd, e, op, fix, can_fill);
	op->opcode = alias;
	op->version = xtx_hades_kv_version(orig, op->flags, op->version);
	st = run_op(x, bd, e, op, fix, can_fill);
	op->opcode = orig;
	/* a validation names the version its write has, as XDP answers it (bpf/lib/hades.h) */
	if (orig == XTX_OP_HVALIDATE && (st == XTX_ST_OK || st == XTX_ST_ALREADY_APPLIED))
		op->version = base + 1;
	return st;
}

/* The lock ops whose lock half XDP ran before it deferred the KV half. */
static bool is_grant(uint8_t opcode)
{
	return opcode == XTX_OP_LOCK_SHARED || opcode == XTX_OP_LOCK_EXCL ||
	       opcode == XTX_OP_OCC_LOCK;
}

/* Ops whose answer is a value (a read, or a grant that reads). */
static bool answers_value(const struct xtx_op *op)
{
	return !is_value_write(op->opcode) && op->opcode != XTX_OP_DELETE &&
	       op->opcode != XTX_OP_OCC_VALIDATE && op->opcode != XTX_OP_HVALIDATE;
}

/*
 * A retransmission answered from the record: a value read is answered
 * again, from the slot or the area (the request, sent again, leaves the
 * same room).  Its fix may still fill the kernel, but only while the store
 * holds exactly the recorded version: since the first answer other ops
 * may have changed the key.
 */
static void answer_from_record(struct xtxd_exec *x, const struct body *bd,
			       const struct xtx_defer_entry *e, struct xtx_op *op,
			       struct xtx_fix_entry *fix, bool can_fill,
			       const struct xtxd_replay_rec *rec)
{
	struct xtxd_ovf_item cur;

	op->status = rec->status;
	/*
	 * A re-deferred grant did not run its lock half again: its token is
	 * the first copy's, which only this record still has (and which a
	 * refused grant's release names, run_entry).
	 */
	op->token = rec->token;
	if (rec->status == XTX_ST_TOO_BIG) {
		answer_value(bd, op, rec->value, rec->vlen);
		return;
	}
	/*
	 * The version as first answered, whatever the status: an HVALIDATE
	 * found already applied answers the version its write has (base + 1,
	 * run_op_as), while a copy re-deferred by XDP carries the base.
	 */
	op->version = rec->version;
	if (rec->status != XTX_ST_OK)
		return;
	if (answers_value(op)) {
		/* the room is the request's: its area reference stays in the slot */
		op->flags = (rec->flags & ~XTX_OPF_EXT) | (op->flags & XTX_OPF_EXT);
		answer_value(bd, op, rec->value, rec->vlen);
	}
	if (op->opcode == XTX_OP_DELETE) {
		raise_floor(x, e, fix, rec->version);
		return;
	}
	if (!xtxd_ovf_get(x->store, op->table, op->key, &cur) && cur.version == rec->version)
		fill(x, e, fix, can_fill, op);
}

/*
 * Records an op's answer: a value it answered in the area is kept whole,
 * and a TOO_BIG keeps the length it asked room for.
 */
/* A plain write that ran: its packet logs it (plain_write_entries) before anyone hears of it. */
static bool is_logged_write(const struct xtx_op *op)
{
	return op->status == XTX_ST_OK && (op->opcode == XTX_OP_INSERT ||
					   op->opcode == XTX_OP_UPDATE ||
					   op->opcode == XTX_OP_DELETE);
}

static void record(struct xtxd_exec *x, const struct body *bd, const struct xtx_hdr *hdr,
		   uint8_t op_idx, const struct xtx_op *op, bool pending)
{
	struct xtxd_replay_rec rec = {
		.req_id = hdr->req_id,
		.client_id = hdr->client_id,
		.op_idx = op_idx,
		.opcode = op->opcode,
		.table = op->table,
		.status = op->status,
		.key = op->key,
		.version = op->version,
		.token = op->token,
		.flags = op->flags,
		.vlen = op->vlen,
		.pending = pending,
	};
	struct xtx_ext ext;

	if (answers_value(op) && op_ext(op, &ext) &&
	    (op->status == XTX_ST_OK || op->status == XTX_ST_TOO_BIG)) {
		rec.vlen = ext.len;
		if (op->status == XTX_ST_OK)
			memcpy(rec.value, bd->p + ext.off, ext.len);
	} else {
		memcpy(rec.value, op->value, XTX_VALUE_INLINE);
	}
	xtxd_replay_put(x->replay, &rec);
}

static bool record_matches(const struct xtxd_replay_rec *rec, const struct xtx_op *op)
{
	return rec->opcode == op->opcode && rec->table == op->table && rec->key == op->key;
}

/*
 * Whether XDP's lock token still holds the entry's kernel bucket.  A round
 * trip that outlived its lease was taken over: XDP has run other ops on the
 * bucket since, kept the victim dirty there (this answer's fix will not
 * touch the bucket), and a later hand-off may already have written the same
 * key back newer, or deleted it and the store forgot it.  Writing this
 * older copy back would then bring a deleted key back.  Asked under the
 * store's bucket lock, which every later hand-off of the bucket takes too:
 * a token still held here orders this write-back before all of theirs.
 * Without the kernel buckets (tests) the hand-off counts as held.
 */
static bool bucket_held(const struct xtxd_exec *x, const struct xtx_defer_entry *e)
{
	if (!x->kv || e->bucket >= x->kv_buckets)
		return true;
	return __atomic_load_n(&x->kv[e->bucket].lock, __ATOMIC_SEQ_CST) == e->token;
}

/*
 * One deferred entry: victim, op, record, filter, as one step under the
 * bucket lock.  Returns whether the op ran here (not answered from a record).
 */
static bool run_entry(struct xtxd_exec *x, const struct body *bd, const struct xtx_hdr *hdr,
		      const struct xtx_defer_entry *e, struct xtx_op *op,
		      struct xtx_fix_entry *fix, bool *wait_log)
{
	struct xtxd_replay_rec rec;
	struct xtxd_ovf_item cur;
	bool can_fill = true, held, ran = false, saved = true, have, decided;
	uint64_t floor;

	memset(fix, 0, sizeof(*fix));
	fix->op_idx = e->op_idx;
	fix->fill_way = e->fill_way;
	fix->victim_way = e->victim_way;
	fix->bucket = e->bucket;
	fix->token = e->token;

	xtxd_ovf_lock(x->store, e->bucket);
	held = bucket_held(x, e);
	/*
	 * A HADES install evicting its key's kernel copy: XDP has logged it
	 * and counted it done (and may have released the slot), so it runs
	 * even when the bucket was taken over.  Its victim is that key's own
	 * way, at the version the transaction read, which nothing writes
	 * meanwhile (the slot's filters hold off other HADES ops on the key,
	 * table families keep the other protocols away): saving it over the
	 * store, which keeps the newer of two, is as safe as when held.
	 */
	decided = op->opcode == XTX_OP_HVALIDATE && (e->flags & XTX_DEFER_EVICT);
	/* nor is such an install refused for room: the store may go past --overflow-max for it */
	xtxd_ovf_past_max(op->opcode == XTX_OP_HVALIDATE);
	if (e->flags & XTX_DEFER_HAS_VICTIM) {
		saved = false;
		if (held || decided)
			saved = write_back_victim(x, e, fix);
		else
			pr_debug("rare: bucket %u taken over: victim key %llu v%llu not written back\n",
				 e->bucket, (unsigned long long)e->victim.key,
				 (unsigned long long)e->victim.version);
		/* filling the way of a victim that could not be saved would lose its write */
		if (!saved && e->fill_way == e->victim_way)
			can_fill = false;
	}
	/*
	 * Every op, not only a REPLAY one, is answered from its record when
	 * it has one: after a lease takeover XDP may re-defer the request
	 * while the first copy still waits in our socket, and that copy,
	 * though not marked, must not run a second time.
	 */
	have = xtxd_replay_get(x->replay, hdr->client_id, hdr->req_id, e->op_idx, &rec) &&
	       record_matches(&rec, op);
	if (have && rec.pending) {
		/* its first copy's write is not durable yet: no answer now, the client asks again */
		*wait_log = true;
		op->status = XTX_ST_RETRY;
	} else if (have) {
		answer_from_record(x, bd, e, op, fix, can_fill, &rec);
		xtxd_stat_inc((e->flags & XTX_DEFER_REPLAY) ? &x->stats.replays :
							       &x->stats.duplicates);
	} else if ((e->flags & XTX_DEFER_EVICT) && ((!held && !decided) || !saved)) {
		/*
		 * The key's kernel copy could not be saved first (store full,
		 * or the bucket was taken over and XDP may have changed it
		 * since): the store's copy may be older, so the op does not
		 * run.  FULL when the store has no room, else RETRY.
		 */
		op->status = held ? XTX_ST_FULL : XTX_ST_RETRY;
		record(x, bd, hdr, e->op_idx, op, false);
	} else if (!held && op->opcode == XTX_OP_INSERT &&
		   xtxd_ovf_get(x->store, op->table, op->key, &cur)) {
		/*
		 * A new key from a hand-off whose bucket was taken over: the
		 * bucket's holder may already have read the filter its fix
		 * leaves in the kernel, without this key's bit, and XDP would
		 * then answer for the key as if it were absent.  It has not
		 * run, so RETRY says the truth; recorded, every copy of the
		 * request answers the same.
		 */
		op->status = XTX_ST_RETRY;
		record(x, bd, hdr, e->op_idx, op, false);
	} else {
		if (e->flags & XTX_DEFER_REPLAY)
			xtxd_stat_inc(&x->stats.replays_unrecorded);
		op->status = run_op_as(x, bd, e, op, fix, can_fill);
		ran = true;
		/*
		 * Recorded before the bucket unlocks: a replay of it finds it.
		 * A plain write is logged with its packet, after this loop:
		 * until then its record is no answer.
		 */
		record(x, bd, hdr, e->op_idx, op, is_logged_write(op));
	}
	/*
	 * The store holds the key at least as new as the kernel's copy (saved
	 * first, or clean): the way goes, also when the answer came from a
	 * record (the first copy's eviction may be what was lost), so XDP
	 * never answers from a copy older than the store's.
	 */
	if ((e->flags & XTX_DEFER_EVICT) && (held || decided) && saved)
		fix->action |= XTX_FIX_EVICT;
	/* the way could not leave (store full): XDP serves it again */
	if ((e->flags & XTX_DEFER_EVICT) && held && !saved)
		fix->action |= XTX_FIX_UNEVICT;
	/*
	 * XDP kept a deferred COMMIT_PRIMARY's lock until this answer: it
	 * goes with every answer but RETRY (the resend still needs it, and
	 * holding it kept the key from moving on meanwhile), as XDP's own
	 * commit releases it; a commit that has logged is never reclaimed by
	 * the lease.  A grant that took nothing (TOO_BIG, or RETRY and FULL
	 * when the key's kernel copy could not be saved) gives back the lock
	 * XDP's half took.  Also from a record: the first answer may be lost,
	 * and a second release does nothing (TC checks the token).
	 */
	if ((op->opcode == XTX_OP_COMMIT_PRIMARY && op->status != XTX_ST_RETRY) ||
	    (is_grant(op->opcode) && op->status != XTX_ST_OK))
		fix->action |= XTX_FIX_RELEASE;
	pr_debug("rare: client %u req %llu op %u %s key %llu -> %s v%llu%s\n", hdr->client_id,
		 (unsigned long long)hdr->req_id, e->op_idx, xtx_op_name(op->opcode) ?: "?",
		 (unsigned long long)op->key, xtx_status_name(op->status),
		 (unsigned long long)op->version, (e->flags & XTX_DEFER_REPLAY) ? " (replay)" : "");
	fix->bloom = xtxd_ovf_bloom(x->store, e->bucket);
	floor = xtxd_ovf_floor(x->store, e->bucket);
	/*
	 * Every fix brings the kernel's floor up to the store's, not only
	 * the one whose op raised it: that fix is skipped when its bucket
	 * was taken over, and once this one clears the filter bit of the key
	 * that left, XDP inserts the key afresh above its own floor, which
	 * would reuse the versions the key had.
	 */
	if (floor > e->vfloor && floor > fix->floor_to) {
		fix->floor_to = floor;
		fix->action |= XTX_FIX_RAISE_FLOOR;
	}
	if (x->kv && e->bucket < x->kv_buckets)
		__atomic_fetch_or(&x->kv[e->bucket].bloom, fix->bloom, __ATOMIC_SEQ_CST);
	xtxd_ovf_past_max(false);
	xtxd_ovf_unlock(x->store, e->bucket);
	xtxd_stat_inc(&x->stats.op[op->opcode & (XTX_OP__COUNT - 1)][op->status & (XTX_ST__COUNT - 1)]);
	return ran;
}

/*
 * A plain write that ran here, as xtxd's log keeps it (userlog.h): one
 * entry, or for a value over the slot a head entry (XTX_LOGF_EXT) and its
 * continuations, appended together.  Returns the entries written to e.
 */
static uint32_t plain_write_entries(const struct body *bd, const struct xtx_hdr *hdr,
				    const struct xtx_op *op, struct xtx_log_entry *e)
{
	struct xtx_log_ext lx = {};
	struct xtx_ext ext;
	uint32_t n, i;

	if (op->status != XTX_ST_OK || (op->opcode != XTX_OP_INSERT &&
					 op->opcode != XTX_OP_UPDATE && op->opcode != XTX_OP_DELETE))
		return 0;
	memset(e, 0, sizeof(*e));
	e->client_id = hdr->client_id;
	e->key = op->key;
	e->table = op->table;
	e->version = op->version;
	if (op->opcode == XTX_OP_DELETE) {
		e->flags = XTX_LOGF_DELETE;
		return 1;
	}
	if (!op_ext(op, &ext)) {
		e->vlen = op->vlen;
		memcpy(e->value, op->value, XTX_VALUE_INLINE);
		return 1;
	}
	e->flags = XTX_LOGF_EXT;
	lx.len = ext.len;
	lx.txn = e->txn;
	memcpy(e->value, &lx, sizeof(lx));
	n = xtx_log_cont_count(ext.len);
	for (i = 0; i < n; i++) {
		struct xtx_log_cont c = {};
		uint32_t at = i * XTX_LOG_CONT_BYTES, k = ext.len - at;

		if (k > XTX_LOG_CONT_BYTES)
			k = XTX_LOG_CONT_BYTES;
		/* seq is the log writer's to number, consecutively after the head */
		memcpy(c.bytes, bd->p + ext.off + at, k);
		memcpy(&e[1 + i], &c, sizeof(c));
	}
	return 1 + n;
}

/*
 * The body's length: the defer trailer XDP's record left after it names
 * its entry count, so it is found from the datagram's end.  Counts are
 * tried from 1 up: a shorter guess lands inside the real trailer, at an
 * entry's start, whose first byte is an op index, never the magic's.
 */
static size_t body_len_of(const uint8_t *req, size_t len, size_t ops_end)
{
	struct xtx_defer_trailer dt;
	uint32_t c;

	for (c = 1; c <= XTX_MAX_DEFERRED; c++) {
		size_t tl = XTX_DEFER_TRAILER_LEN(c);

		if (len < ops_end + tl)
			break;
		memcpy(&dt, req + len - tl, DEFER_HDR_LEN);
		if (dt.magic == XTX_DEFER_MAGIC && dt.count == c)
			return len - tl;
	}
	return 0;
}

int xtxd_exec_packet(struct xtxd_exec *x, const void *req, size_t len, void *out,
		     size_t out_size)
{
	struct xtx_defer_trailer dt;
	struct xtx_fix_entry fe[XTX_MAX_DEFERRED];
	struct xtx_fix_footer ff;
	struct xtx_log_entry writes[XTX_MAX_DEFERRED * WRITE_ENTRIES];
	bool ran[XTX_MAX_DEFERRED] = {}, wait_log = false;
	struct xtx_hdr hdr;
	struct body bd;
	size_t ops_end, body_len, reply_len;
	uint8_t *o = out;
	uint32_t i, nwrites = 0;

	xtxd_stat_inc(&x->stats.rx);
	if (len < sizeof(hdr))
		return drop(x, XTXD_DROP_TRUNCATED);
	memcpy(&hdr, req, sizeof(hdr));
	if (hdr.magic != XTX_MAGIC || hdr.version != XTX_VERSION || !hdr.nops ||
	    hdr.nops > XTX_MAX_OPS || (hdr.flags & XTX_F_REPLY))
		return drop(x, XTXD_DROP_HEADER);
	ops_end = op_off(hdr.nops);
	if (len < ops_end + DEFER_HDR_LEN)
		return drop(x, XTXD_DROP_LENGTH);
	body_len = body_len_of(req, len, ops_end);
	if (!body_len) {
		memset(&dt, 0, sizeof(dt));
		memcpy(&dt, (const uint8_t *)req + ops_end, DEFER_HDR_LEN);
		return drop(x, dt.magic != XTX_DEFER_MAGIC || !dt.count ||
			       dt.count > XTX_MAX_DEFERRED ? XTXD_DROP_TRAILER : XTXD_DROP_LENGTH);
	}
	if (body_len % XTX_EXT_ALIGN || body_len > XTX_MAX_REQUEST)
		return drop(x, XTXD_DROP_LENGTH);
	memset(&dt, 0, sizeof(dt));
	memcpy(&dt, (const uint8_t *)req + body_len, len - body_len);
	if (!entries_ok(x->store, req, hdr.nops, body_len, &dt))
		return drop(x, XTXD_DROP_ENTRY);
	reply_len = body_len + XTX_FIX_TRAILER_LEN(dt.count);
	/* a fragmented reply would reach TC egress in pieces */
	if (reply_len > XTX_MAX_PAYLOAD || reply_len > out_size)
		return drop(x, XTXD_DROP_TOO_BIG);

	/* the reply is the request rewritten; out may be req */
	memmove(o, req, body_len);
	bd.p = o;
	bd.len = body_len;
	for (i = 0; i < dt.count; i++) {
		const struct xtx_defer_entry *e = &dt.e[i];
		struct xtx_op op;

		memcpy(&op, o + op_off(e->op_idx), sizeof(op));
		ran[i] = run_entry(x, &bd, &hdr, e, &op, &fe[i], &wait_log);
		if (ran[i])
			nwrites += plain_write_entries(&bd, &hdr, &op, &writes[nwrites]);
		memcpy(o + op_off(e->op_idx), &op, sizeof(op));
	}
	/*
	 * Durable before anyone hears of them.  Should the disk fail, no
	 * reply goes: the client retries, and xtxd has said why.
	 */
	if (nwrites && x->log_writes && x->log_writes(writes, nwrites))
		return drop(x, XTXD_DROP_LOG);
	/* now their records answer copies of the request, and XDP may serve their values */
	for (i = 0; i < dt.count; i++) {
		struct xtx_op op;

		if (!ran[i])
			continue;
		memcpy(&op, o + op_off(dt.e[i].op_idx), sizeof(op));
		if (is_logged_write(&op))
			record(x, &bd, &hdr, dt.e[i].op_idx, &op, false);
	}
	copy_durable(x, o, &dt, ran);
	if (wait_log)
		return drop(x, XTXD_DROP_PENDING);
	hdr.flags |= XTX_F_REPLY;
	if (hdr.status == XTX_ST_NONE)
		hdr.status = XTX_ST_OK;
	memcpy(o, &hdr, sizeof(hdr));
	memcpy(o + body_len, fe, dt.count * sizeof(struct xtx_fix_entry));
	ff.magic = XTX_FIX_MAGIC;
	ff.count = dt.count;
	ff.pad = 0;
	ff.body_len = (uint16_t)body_len;
	memcpy(o + body_len + dt.count * sizeof(struct xtx_fix_entry), &ff, sizeof(ff));
	return (int)reply_len;
}
