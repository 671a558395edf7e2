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
#define FIX_HDR_LEN	offsetof(struct xtx_fix_trailer, e)
#define DEFER_FLAGS_KNOWN	(XTX_DEFER_HAS_VICTIM | XTX_DEFER_REPLAY)

_Static_assert(DEFER_HDR_LEN == 8 && FIX_HDR_LEN == 8, "trailer headers are 8 bytes");

static const char *const drop_names[XTXD_DROP__COUNT] = {
	[XTXD_DROP_TRUNCATED] = "truncated",
	[XTXD_DROP_HEADER] = "bad_header",
	[XTXD_DROP_LENGTH] = "bad_length",
	[XTXD_DROP_TRAILER] = "bad_trailer",
	[XTXD_DROP_ENTRY] = "bad_entry",
	[XTXD_DROP_TOO_BIG] = "too_big",
	[XTXD_DROP_RECORD] = "no_defer_record",
	[XTXD_DROP_LOG] = "log_failed",
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
		       const struct xtx_defer_trailer *dt)
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
	}
	return true;
}

static void item_of_op(struct xtxd_ovf_item *it, const struct xtx_op *op, uint64_t version)
{
	memset(it, 0, sizeof(*it));
	it->key = op->key;
	it->table = op->table;
	it->vlen = op->vlen;
	it->version = version;
	memcpy(it->value, op->value, op->vlen);
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
	int ret;

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
	/* older than the store's copy: nothing to save, the slot is clean as far as we know */
	xtxd_stat_inc(ret ? &x->stats.victims_saved : &x->stats.victims_stale);
	fix->action |= XTX_FIX_VICTIM_SAVED;
	return true;
}

static void fill(struct xtxd_exec *x, const struct xtx_defer_entry *e, struct xtx_fix_entry *fix,
		 bool can_fill)
{
	if (e->fill_way == XTX_KV_NO_WAY || !can_fill)
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
 */
static uint8_t run_txn_op(struct xtxd_exec *x, const struct xtx_defer_entry *e, struct xtx_op *op,
			  struct xtx_fix_entry *fix, bool can_fill, bool found,
			  const struct xtxd_ovf_item *cur)
{
	bool primary = op->opcode == XTX_OP_COMMIT_PRIMARY, del = op->flags & XTX_OPF_DELETE;
	struct xtxd_ovf_item it;
	uint64_t v;

	switch (op->opcode) {
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
		if (!found) {
			op->flags |= XTX_TXF_ABSENT;
			op->vlen = 0;
			op->version = absent_base(x, e, fix);
			return XTX_ST_OK;
		}
		op->vlen = cur->vlen;
		op->version = cur->version;
		memcpy(op->value, cur->value, XTX_VALUE_INLINE);
		fill(x, e, fix, can_fill);
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
		item_of_op(&it, op, v);
		if (xtxd_ovf_put(x->store, &it) < 0)
			return XTX_ST_FULL;
		op->version = v;
		fill(x, e, fix, can_fill);
		return XTX_ST_OK;
	}
}

/* Runs one op against the store (holding its bucket lock); returns its status. */
static uint8_t run_op(struct xtxd_exec *x, const struct xtx_defer_entry *e, struct xtx_op *op,
		      struct xtx_fix_entry *fix, bool can_fill)
{
	struct xtxd_ovf_item cur, it;
	uint64_t v;
	bool found = !xtxd_ovf_get(x->store, op->table, op->key, &cur);

	switch (op->opcode) {
	case XTX_OP_GET:
	case XTX_OP_READ:
		if (!found) {
			op->version = absent_base(x, e, fix);	/* as XDP answers */
			return XTX_ST_NOT_FOUND;
		}
		op->vlen = cur.vlen;
		op->version = cur.version;
		memcpy(op->value, cur.value, XTX_VALUE_INLINE);
		fill(x, e, fix, can_fill);
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
		item_of_op(&it, op, v + 1);
		if (xtxd_ovf_put(x->store, &it) < 0)
			return XTX_ST_FULL;
		op->version = v + 1;
		fill(x, e, fix, can_fill);
		return XTX_ST_OK;
	case XTX_OP_UPDATE:
		if (!found)
			return XTX_ST_NOT_FOUND;
		item_of_op(&it, op, cur.version + 1);
		if (xtxd_ovf_put(x->store, &it) < 0)
			return XTX_ST_FULL;
		op->version = cur.version + 1;
		fill(x, e, fix, can_fill);
		return XTX_ST_OK;
	case XTX_OP_LOCK_SHARED ... XTX_OP_OCC_VALIDATE:
	case XTX_OP_COMMIT_BACKUP:
	case XTX_OP_COMMIT_PRIMARY:
		return run_txn_op(x, e, op, fix, can_fill, found, &cur);
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
static uint8_t run_op_as(struct xtxd_exec *x, const struct xtx_defer_entry *e, struct xtx_op *op,
			 struct xtx_fix_entry *fix, bool can_fill)
{
	uint8_t orig = op->opcode, alias = xtx_hades_kv_opcode(orig, op->flags), st;

	if (alias == XTX_OP_NOP)
		return run_op(x, e, op, fix, can_fill);
	op->opcode = alias;
	op->version = xtx_hades_kv_version(orig, op->flags, op->version);
	st = run_op(x, e, op, fix, can_fill);
	op->opcode = orig;
	return st;
}

/*
 * A retransmission answered from the record.  Its fix may still fill the
 * kernel, but only while the store holds exactly the recorded version:
 * since the first answer other ops may have changed the key.
 */
static void answer_from_record(struct xtxd_exec *x, const struct xtx_defer_entry *e,
			       struct xtx_op *op, struct xtx_fix_entry *fix, bool can_fill,
			       const struct xtxd_replay_rec *rec)
{
	struct xtxd_ovf_item cur;

	op->status = rec->status;
	if (rec->status != XTX_ST_OK)
		return;
	op->version = rec->version;
	op->vlen = rec->vlen;
	memcpy(op->value, rec->value, XTX_VALUE_INLINE);
	if (op->opcode == XTX_OP_DELETE) {
		raise_floor(x, e, fix, rec->version);
		return;
	}
	if (!xtxd_ovf_get(x->store, op->table, op->key, &cur) && cur.version == rec->version)
		fill(x, e, fix, can_fill);
}

static void record(struct xtxd_exec *x, const struct xtx_hdr *hdr, uint8_t op_idx,
		   const struct xtx_op *op)
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
		.vlen = op->vlen,
	};

	memcpy(rec.value, op->value, XTX_VALUE_INLINE);
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
static bool run_entry(struct xtxd_exec *x, const struct xtx_hdr *hdr,
		      const struct xtx_defer_entry *e, struct xtx_op *op,
		      struct xtx_fix_entry *fix)
{
	struct xtxd_replay_rec rec;
	struct xtxd_ovf_item cur;
	bool can_fill = true, held, ran = false;
	uint64_t floor;

	memset(fix, 0, sizeof(*fix));
	fix->op_idx = e->op_idx;
	fix->fill_way = e->fill_way;
	fix->victim_way = e->victim_way;
	fix->bucket = e->bucket;
	fix->token = e->token;

	xtxd_ovf_lock(x->store, e->bucket);
	held = bucket_held(x, e);
	if (e->flags & XTX_DEFER_HAS_VICTIM) {
		bool saved = false;

		if (held)
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
	if (xtxd_replay_get(x->replay, hdr->client_id, hdr->req_id, e->op_idx, &rec) &&
	    record_matches(&rec, op)) {
		answer_from_record(x, e, op, fix, can_fill, &rec);
		xtxd_stat_inc((e->flags & XTX_DEFER_REPLAY) ? &x->stats.replays :
							       &x->stats.duplicates);
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
		record(x, hdr, e->op_idx, op);
	} else {
		if (e->flags & XTX_DEFER_REPLAY)
			xtxd_stat_inc(&x->stats.replays_unrecorded);
		op->status = run_op_as(x, e, op, fix, can_fill);
		ran = true;
		/* recorded before the bucket unlocks: a replay of it finds it */
		record(x, hdr, e->op_idx, op);
	}
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
	xtxd_ovf_unlock(x->store, e->bucket);
	xtxd_stat_inc(&x->stats.op[op->opcode & (XTX_OP__COUNT - 1)][op->status & (XTX_ST__COUNT - 1)]);
	return ran;
}

/* A plain write that ran here, as xtxd's log keeps it (userlog.h). */
static bool plain_write_entry(const struct xtx_hdr *hdr, const struct xtx_op *op,
			      struct xtx_log_entry *e)
{
	if (op->status != XTX_ST_OK || (op->opcode != XTX_OP_INSERT &&
					 op->opcode != XTX_OP_UPDATE && op->opcode != XTX_OP_DELETE))
		return false;
	memset(e, 0, sizeof(*e));
	e->client_id = hdr->client_id;
	e->key = op->key;
	e->table = op->table;
	e->version = op->version;
	if (op->opcode == XTX_OP_DELETE) {
		e->flags = XTX_LOGF_DELETE;
	} else {
		e->vlen = op->vlen;
		memcpy(e->value, op->value, XTX_VALUE_INLINE);
	}
	return true;
}

int xtxd_exec_packet(struct xtxd_exec *x, const void *req, size_t len, void *out,
		     size_t out_size)
{
	struct xtx_defer_trailer dt;
	struct xtx_fix_trailer ft;
	struct xtx_log_entry writes[XTX_MAX_DEFERRED];
	struct xtx_hdr hdr;
	size_t ops_end, reply_len;
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
	memset(&dt, 0, sizeof(dt));
	memcpy(&dt, (const uint8_t *)req + ops_end, DEFER_HDR_LEN);
	if (dt.magic != XTX_DEFER_MAGIC || !dt.count || dt.count > XTX_MAX_DEFERRED)
		return drop(x, XTXD_DROP_TRAILER);
	if (len != ops_end + DEFER_HDR_LEN + dt.count * sizeof(struct xtx_defer_entry))
		return drop(x, XTXD_DROP_LENGTH);
	memcpy(dt.e, (const uint8_t *)req + ops_end + DEFER_HDR_LEN,
	       dt.count * sizeof(struct xtx_defer_entry));
	if (!entries_ok(x->store, req, hdr.nops, &dt))
		return drop(x, XTXD_DROP_ENTRY);
	reply_len = ops_end + FIX_HDR_LEN + dt.count * sizeof(struct xtx_fix_entry);
	/* a fragmented reply would reach TC egress in pieces */
	if (reply_len > XTX_MAX_PAYLOAD || reply_len > out_size)
		return drop(x, XTXD_DROP_TOO_BIG);

	/* the reply is the request rewritten; out may be req */
	memmove(o, req, ops_end);
	for (i = 0; i < dt.count; i++) {
		const struct xtx_defer_entry *e = &dt.e[i];
		struct xtx_op op;

		memcpy(&op, o + op_off(e->op_idx), sizeof(op));
		if (run_entry(x, &hdr, e, &op, &ft.e[i]) &&
		    plain_write_entry(&hdr, &op, &writes[nwrites]))
			nwrites++;
		memcpy(o + op_off(e->op_idx), &op, sizeof(op));
	}
	/*
	 * Durable before anyone hears of them.  Should the disk fail, no
	 * reply goes: the client retries, and xtxd has said why.
	 */
	if (nwrites && x->log_writes && x->log_writes(writes, nwrites))
		return drop(x, XTXD_DROP_LOG);
	hdr.flags |= XTX_F_REPLY;
	if (hdr.status == XTX_ST_NONE)
		hdr.status = XTX_ST_OK;
	memcpy(o, &hdr, sizeof(hdr));
	ft.magic = XTX_FIX_MAGIC;
	ft.count = dt.count;
	memset(ft.pad, 0, sizeof(ft.pad));
	memcpy(o + ops_end, &ft, FIX_HDR_LEN + dt.count * sizeof(struct xtx_fix_entry));
	return (int)reply_len;
}
