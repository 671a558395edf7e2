// SPDX-License-Identifier: GPL-2.0-only
/*
 * What every protocol shares: the first abort cause, queueing ops, a key's
 * replicas and the order of a server's writes (LAST after the others),
 * noting read values, and what a lost request means for each op kind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/log.h>
#include <xtx/msg.h>
#include "internal.h"

/* Notes the first reason to abort; later ones do not replace it. */
bool txn_lease_passed(const struct xtx_txn *t, uint64_t now)
{
	uint64_t lease = t->c->lock_lease_ns;

	if (!lease || !t->lease_anchor_ns)
		return false;
	/* a quarter of the lease covers the trip to the server and clock drift */
	return now - t->lease_anchor_ns >= lease - lease / 4;
}

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

uint64_t txn_replica_set(const struct xtx_txn *t, const struct txn_key *k)
{
	__u16 r[TXN_MAX_REPLICAS];
	unsigned int i;

	(void)t;	/* the key knows its replicas: its shard's when it was placed */
	for (i = 0; i < k->nrep; i++)
		r[i] = k->replica[i];
	return xtx_log_replicas_pack(r, k->nrep);
}

void txn_fill_value(struct xtx_op *op, const struct txn_key *k)
{
	if (k->flags & KF_DELETE)
		op->flags |= XTX_OPF_DELETE;
	/* a long value goes in the op's area, laid out once the request is full */
	if (k->new_vlen > XTX_VALUE_INLINE)
		return;
	op->vlen = (uint8_t)k->new_vlen;
	memcpy(op->value, k->new_value, sizeof(op->value));
}

/* An answer's long value: its area, if the reply holds it whole.  NULL otherwise. */
static const uint8_t *reply_area(const struct xtx_client *c, const struct xtx_op *op,
				 uint16_t *len)
{
	struct xtx_ext e;

	memcpy(&e, op->value, sizeof(e));
	if (!c->reply_base || e.len <= XTX_VALUE_INLINE || e.len > XTX_VALUE_MAX ||
	    e.len > e.cap || (size_t)e.off + e.len > c->reply_len ||
	    e.off < sizeof(struct xtx_hdr))
		return NULL;
	*len = e.len;
	return c->reply_base + e.off;
}

void txn_note_value(struct xtx_txn *t, struct txn_key *k, const struct xtx_op *op, bool absent)
{
	const uint8_t *area;
	uint16_t len;

	k->flags |= KF_ANSWERED;
	k->version = op->version;
	memset(k->value, 0, sizeof(k->value));
	k->vlen = 0;
	if (absent) {
		k->flags |= KF_ABSENT;
		return;
	}
	k->flags &= ~KF_ABSENT;
	if (!(op->flags & XTX_OPF_EXT)) {
		k->vlen = op->vlen <= XTX_VALUE_INLINE ? op->vlen : XTX_VALUE_INLINE;
		memcpy(k->value, op->value, sizeof(k->value));
		return;
	}
	area = reply_area(t->c, op, &len);
	if (!area) {
		/* an answer that says more than it carries is not one */
		txn_refused(t, op);
		return;
	}
	if (k->value_cap < len) {
		k->value_big = txn_arena_alloc(t, len);
		k->value_cap = k->value_big ? len : 0;
	}
	if (!k->value_big) {
		txn_abort_for(t, XTX_CAUSE_FULL);
		return;
	}
	memcpy(k->value_big, area, len);
	k->vlen = len;
}

uint16_t txn_op_area(const struct txn_opref *ref, const uint8_t **src, uint16_t *len)
{
	const struct txn_key *k;
	uint16_t room;

	*src = NULL;
	*len = 0;
	if (!ref->t)
		return 0;
	k = &ref->t->keys[ref->key];
	switch (ref->kind) {
	case TOP_LOG:
	case TOP_COMMIT_BACKUP:
	case TOP_COMMIT_PRIMARY:
	case TOP_HINTEND:
	/* the value it staged: the server's copy goes over it (xtx/hades.h) */
	case TOP_HVALIDATE:
		if ((ref->oflags & OPR_NO_WRITE) || !(k->flags & KF_WRITE) || (k->flags & KF_DELETE) ||
		    k->new_vlen <= XTX_VALUE_INLINE)
			return 0;
		*src = k->new_big;
		*len = k->new_vlen;
		return k->new_vlen;
	case TOP_READ:
	case TOP_LOCK_EXCL:
	case TOP_LOCK_SHARED:
	case TOP_HREAD:
	case TOP_HWRITE:
		/* a read that must find nothing needs no room: TOO_BIG says it found something */
		room = ref->t->c->value_room[k->table];
		return room > XTX_VALUE_INLINE ? room : 0;
	default:
		return 0;
	}
}

/* Learnt rooms grow in steps of this: a table's values of similar lengths ask once. */
#define ROOM_STEP	64

void txn_too_big(struct txn_opref *ref, const struct xtx_op *op)
{
	struct xtx_txn *t = ref->t;
	struct xtx_client *c = t->c;
	uint8_t table = t->keys[ref->key].table;
	struct xtx_ext e;
	uint32_t want;

	if (ref->kind == TOP_VALIDATE_ABSENT) {
		/* the key it read absent exists now */
		txn_abort_for(t, XTX_CAUSE_VALIDATION);
		return;
	}
	if (ref->kind == TOP_HVALIDATE) {
		/* it sent the whole value it staged: the server staged another */
		txn_commit_doubt(t, op);
		return;
	}
	memcpy(&e, op->value, sizeof(e));
	want = (uint32_t)e.len;
	if (want <= XTX_VALUE_INLINE || want > XTX_VALUE_MAX || table >= XTX_MAX_TABLES) {
		/* no length it could ever have room for: a server to distrust */
		txn_refused(t, op);
		return;
	}
	want = (want + ROOM_STEP - 1) / ROOM_STEP * ROOM_STEP;
	if (want > XTX_VALUE_MAX)
		want = XTX_VALUE_MAX;
	if (c->value_room[table] < want) {
		c->value_room[table] = (uint16_t)want;
		c->st.value_room_raised++;
	}
	/* the op took nothing (no lock, no record): the abort releases what others took */
	txn_abort_for(t, XTX_CAUSE_VALUE_ROOM);
}

uint8_t *txn_arena_alloc(struct xtx_txn *t, size_t n)
{
	struct txn_arena *a = &t->arena;
	struct txn_arena_blk *b;

	if (n > TXN_ARENA_BLOCK)
		return NULL;
	/* 8-byte pieces: whatever the caller keeps there stays aligned */
	n = (n + 7) & ~(size_t)7;
	if (a->cur && a->used + n <= TXN_ARENA_BLOCK) {
		a->used += n;
		return a->cur->data + a->used - n;
	}
	b = a->cur ? a->cur->next : a->head;
	if (!b) {
		b = malloc(sizeof(*b));
		if (!b)
			return NULL;
		b->next = NULL;
		if (a->cur)
			a->cur->next = b;
		else
			a->head = b;
	}
	a->cur = b;
	a->used = n;
	return b->data;
}

void txn_arena_reset(struct txn_arena *a)
{
	a->cur = NULL;
	a->used = 0;
}

void txn_arena_free(struct txn_arena *a)
{
	struct txn_arena_blk *b = a->head, *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	a->head = a->cur = NULL;
	a->used = 0;
}

/* An op answered with something no phase expects: the server refused it. */
void txn_refused(struct xtx_txn *t, const struct xtx_op *op)
{
	static bool told;

	/* a table switching protocols: expected, and said by the cause */
	if (!told && op->status != XTX_ST_MIXED) {
		told = true;
		fprintf(stderr, "Warning: libxtx: server answered opcode %u with status %u\n",
			op->opcode, op->status);
	}
	txn_abort_for(t, op->status == XTX_ST_FULL ? XTX_CAUSE_FULL :
			 op->status == XTX_ST_MIXED ? XTX_CAUSE_MIXED : XTX_CAUSE_REFUSED);
}

void txn_commit_doubt(struct xtx_txn *t, const struct xtx_op *op)
{
	static bool told;

	/*
	 * Past the commit point nothing may abort, but a commit the server
	 * did not apply means its write may be missing there: the client can
	 * no longer say COMMITTED truthfully.
	 */
	t->in_doubt = true;
	if (!told) {
		told = true;
		fprintf(stderr, "Warning: libxtx: commit of txn %#llx answered status %u: "
			"outcome in doubt\n", (unsigned long long)op->txn, op->status);
	}
}

uint64_t txn_write_replicas(const struct xtx_txn *t)
{
	uint64_t p = 0;
	unsigned int i, r;

	for (i = 0; i < t->nkeys; i++)
		if (t->keys[i].flags & KF_WRITE)
			for (r = 0; r < t->keys[i].nrep; r++)
				p |= 1ull << t->keys[i].replica[r];
	return p;
}

uint64_t txn_witnesses(const struct xtx_txn *t)
{
	uint64_t w = txn_write_replicas(t);

	/* HADES: every server it touched took part in its intend-to-commit */
	return t->c->cfg.protocol == XTX_PROTO_HADES ? w | t->sent_mask : w;
}

bool txn_has_writes(const struct xtx_txn *t)
{
	unsigned int i;

	for (i = 0; i < t->nkeys; i++)
		if (t->keys[i].flags & KF_WRITE)
			return true;
	return false;
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

unsigned int txn_replica_index(const struct xtx_txn *t, const struct txn_key *k, unsigned int srv)
{
	unsigned int r;

	(void)t;
	for (r = 0; r < k->nrep; r++)
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

/* The servers holding k: a bit each. */
static uint64_t replicas_of(const struct txn_key *k)
{
	uint64_t m = 0;
	unsigned int r;

	for (r = 0; r < k->nrep; r++)
		m |= 1ull << k->replica[r];
	return m;
}

bool txn_needs_meta(const struct xtx_txn *t, unsigned int srv)
{
	uint64_t all = 0, here = 0;
	bool multi = false;
	unsigned int i;

	for (i = 0; i < t->nkeys; i++) {
		const struct txn_key *k = &t->keys[i];

		if (!(k->flags & KF_WRITE))
			continue;
		all |= replicas_of(k);
		if (txn_replica_index(t, k, srv)) {
			here |= replicas_of(k);
			multi |= k->nrep > 1;
		}
	}
	return multi && (all & ~here);
}

unsigned int txn_log_count(const struct xtx_txn *t, unsigned int srv)
{
	return txn_writes_at(t, srv) + (txn_needs_meta(t, srv) ? 1 : 0);
}

/*
 * Whether n ops and the long values of t's writes at srv fit one request,
 * with a lease PING ahead of them.
 */
static bool writes_fit(const struct xtx_txn *t, unsigned int srv, unsigned int n)
{
	size_t bytes = xtx_msg_len(n + 1);
	unsigned int i;

	for (i = 0; i < t->nkeys; i++) {
		const struct txn_key *k = &t->keys[i];

		if ((k->flags & KF_WRITE) && !(k->flags & KF_DELETE) &&
		    k->new_vlen > XTX_VALUE_INLINE && txn_replica_index(t, k, srv))
			bytes += (k->new_vlen + XTX_EXT_ALIGN - 1) & ~(XTX_EXT_ALIGN - 1);
	}
	return bytes <= XTX_MAX_REQUEST;
}

unsigned int txn_queue_writes_at(struct xtx_txn *t, enum txn_op_kind kind, unsigned int srv,
				 bool last_only)
{
	bool meta = kind == TOP_LOG && txn_needs_meta(t, srv);
	unsigned int i, k = 0, n = 0, total = txn_writes_at(t, srv) + (meta ? 1 : 0);
	bool split = total > t->c->cfg.ops_per_packet || !writes_fit(t, srv, total);

	/* the participants first: never the last entry, so the LAST one counts it */
	if (meta) {
		k = 1;
		for (i = 0; !last_only && i < t->nkeys; i++) {
			if ((t->keys[i].flags & KF_WRITE) && txn_replica_index(t, &t->keys[i], srv)) {
				txn_queue_flags(t, i, TOP_LOG_META, srv, 0);
				n++;
				break;
			}
		}
	}

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

void txn_on_lost(struct txn_opref *ref)
{
	struct xtx_txn *t = ref->t;
	/* a failed server the configuration moved out of the key's shard */
	bool moved = !txn_still_replica(t->c, &t->keys[ref->key], ref->server);

	switch (ref->kind) {
	case TOP_COMMIT_BACKUP:
	case TOP_COMMIT_PRIMARY:
		/*
		 * Past the commit point: every replica holds the complete
		 * record, so the servers left commit it whatever this one
		 * did, and the one promoted does before it serves the shard.
		 */
		if (moved) {
			t->waiting--;
			break;
		}
		goto keep_trying;
	case TOP_LOG:
	case TOP_LOG_META:
		/*
		 * Its vote may never come: the servers left decide without
		 * it, and only they can say what became of the transaction.
		 */
		if (moved) {
			t->in_doubt = true;
			t->waiting--;
			break;
		}
		goto keep_trying;
	case TOP_HVALIDATE:
	case TOP_HABORT:
		/*
		 * Moved out: every participant acked (validate) and the ones
		 * left validate without it, or its slot went with it (abort)
		 */
		if (moved) {
			t->waiting--;
			break;
		}
keep_trying:
		/*
		 * Once a LOG_APPEND is out (or every HADES participant acked)
		 * the transaction may be committed on every replica: it must
		 * never be reported failed, so keep trying, in a new request.
		 * A HADES abort too: a committing slot waits for it forever.
		 */
		t->waiting--;
		if (txn_queue_op(t->c, t, ref->key, ref->kind, ref->server,
				 (ref->oflags & ~OPR_GLUE) | OPR_RESENT) == 0)
			return;
		break;
	case TOP_UNLOCK_EXCL:
	case TOP_UNLOCK_SHARED:
		/* the lease frees what the release could not */
		t->waiting--;
		break;
	case TOP_HINTEND:
		/*
		 * It may have arrived: every participant may hold the
		 * transaction committing, and the resolver then validates it.
		 */
		t->in_doubt = true;
		t->failed = true;
		t->waiting--;
		break;
	default:
		t->waiting--;
		/* before logging, with a server gone: nothing of it can commit */
		if (moved && t->c->cfg.protocol != XTX_PROTO_HADES) {
			txn_abort_for(t, XTX_CAUSE_MOVED);
			break;
		}
		/* a grant may have happened unseen: the lease frees it */
		t->failed = true;
		break;
	}
	if (t->waiting == 0)
		txn_make_ready(t);
}
