// SPDX-License-Identifier: GPL-2.0-only
/*
 * libxtx's wire half: every in-flight transaction's ops for one server wait
 * in that server's queue and leave together, up to ops_per_packet per
 * request, when the client has nothing else to do (the aggregation of
 * DINT/FaSST).  Replies are matched to their requests by the request
 * windows and each op's answer goes to its transaction.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <xtx/msg.h>
#include "clock.h"
#include "dupcpu.h"
#include "internal.h"

/* About a second of round trips before a full log aborts the transaction. */
#define LOG_FULL_TRIES		10000

struct txn_opref *txn_sent_ops(struct xtx_client *c, unsigned int server, unsigned int slot)
{
	return &c->sent[((size_t)server * XTX_DEDUPE_WINDOW + slot) * XTX_MAX_OPS];
}

void txn_fill_op(const struct txn_opref *ref, struct xtx_op *op)
{
	ref->t->c->proto->fill_op(ref, op);
}

void txn_on_reply(struct txn_opref *ref, const struct xtx_op *op)
{
	struct xtx_txn *t = ref->t;

	/* the same for every protocol: the read did nothing, and asks for more room */
	if (op->status == XTX_ST_TOO_BIG)
		txn_too_big(ref, op);
	else
		t->c->proto->on_reply(ref, op);
	if (--t->waiting == 0)
		txn_make_ready(t);
}

int txn_queue_op(struct xtx_client *c, struct xtx_txn *t, unsigned int ki,
		 enum txn_op_kind kind, unsigned int server, uint8_t oflags)
{
	struct txn_queue *q = &c->queue[server];
	struct txn_opref *ref;

	/* sized for every transaction's largest phase: never full in use */
	if (q->len == q->cap)
		return -ENOSPC;
	ref = &q->ops[(q->head + q->len++) % q->cap];
	*ref = (struct txn_opref){ .t = t, .key = ki, .kind = kind, .server = server,
				   .oflags = oflags };
	t->waiting++;
	return 0;
}

/* Re-queues an op that must go out again in a new request. */
static void requeue(struct xtx_client *c, const struct txn_opref *ref)
{
	struct txn_queue *q = &c->queue[ref->server];

	if (q->len == q->cap) {
		/* cannot happen: the op's own slot was just freed */
		fprintf(stderr, "Error: libxtx: queue of server %u full\n", ref->server);
		return;
	}
	struct txn_opref *again = &q->ops[(q->head + q->len++) % q->cap];

	*again = *ref;
	again->tries++;
	/* what it was glued to has been answered: it goes alone now */
	again->oflags &= ~OPR_GLUE;
}

/*
 * A HADES access that met a committing transaction's filters waits a little
 * before it asks again: the committer needs about a round trip to finish,
 * and asking sooner only burns both sides' CPU.
 */
#define PARK_BASE_NS		20000ull
#define PARK_MAX_NS		200000ull

static bool parks_on_retry(const struct txn_opref *ref)
{
	return ref->kind == TOP_HREAD || ref->kind == TOP_HWRITE;
}

static void park(struct xtx_client *c, const struct txn_opref *ref, uint64_t now)
{
	struct txn_parked *p;
	uint64_t wait = PARK_BASE_NS << (ref->tries < 3 ? ref->tries : 3);

	if (c->nparked == c->parked_cap) {
		requeue(c, ref);
		return;
	}
	p = &c->parked[c->nparked++];
	p->ref = *ref;
	p->due_ns = now + (wait < PARK_MAX_NS ? wait : PARK_MAX_NS);
}

/* Parked ops whose pause is over go back to their queues; returns the next due time. */
static uint64_t unpark(struct xtx_client *c, uint64_t now, uint64_t next)
{
	unsigned int i = 0;

	while (i < c->nparked) {
		struct txn_parked *p = &c->parked[i];

		if (p->due_ns <= now) {
			requeue(c, &p->ref);
			*p = c->parked[--c->nparked];
			continue;
		}
		if (p->due_ns < next)
			next = p->due_ns;
		i++;
	}
	return next;
}

/* Server s told its leases: transactions keep to the shortest lock lease known. */
static void learn_lease(struct xtx_client *c, unsigned int s, const struct xtx_op *op)
{
	struct xtx_ping_info pi;
	unsigned int i;

	if (op->status != XTX_ST_OK || op->vlen < sizeof(pi)) {
		/* an older server, or an echo: nothing learnt, the servers' own checks stand */
		c->srv_lease_state[s] = LEASE_KNOWN;
		return;
	}
	memcpy(&pi, op->value, sizeof(pi));
	c->srv_lease_ns[s] = pi.lock_lease_ns;
	c->srv_lease_state[s] = LEASE_KNOWN;
	c->lock_lease_ns = c->cfg.lock_lease_ns;
	for (i = 0; i < c->cfg.nservers; i++) {
		uint64_t l = c->srv_lease_ns[i];

		if (l && (!c->lock_lease_ns || l < c->lock_lease_ns))
			c->lock_lease_ns = l;
	}
}

/*
 * A log append whose transaction's lease has passed is not sent: the
 * transaction aborts before its commit point instead of logging over locks
 * the server may have taken back (which the server would refuse anyway).
 * Not one sent before whose answer was lost: that copy may have been
 * logged, and if every replica holds the transaction the servers may
 * commit it, so only a server's answer (logged, or refused) settles it.
 */
static bool drop_late_log(struct xtx_client *c, const struct txn_opref *ref, uint64_t now)
{
	struct xtx_txn *t = ref->t;

	if ((ref->kind != TOP_LOG && ref->kind != TOP_LOG_META) || (ref->oflags & OPR_RESENT) ||
	    !txn_lease_passed(t, now))
		return false;
	txn_abort_for(t, XTX_CAUSE_LEASE);
	if (--t->waiting == 0)
		txn_make_ready(t);
	c->st.late_logs++;
	return true;
}

/* Ops at the head of q that must share a request: the first and those glued to it. */
static unsigned int group_len(const struct txn_queue *q)
{
	unsigned int n = 1;

	while (n < q->len && (q->ops[(q->head + n) % q->cap].oflags & OPR_GLUE))
		n++;
	return n;
}

static uint32_t round8(uint32_t x)
{
	return (x + XTX_EXT_ALIGN - 1) & ~(uint32_t)(XTX_EXT_ALIGN - 1);
}

/* An op's value area, noted while its request fills and laid out once its ops are final. */
struct pack_area {
	unsigned int op;	/* index in the request */
	uint16_t cap, len;	/* len: a write's bytes at src */
	const uint8_t *src;
};

/* Area bytes the ops at the head of q that must travel together take. */
static uint32_t group_area(const struct txn_queue *q, unsigned int n)
{
	const uint8_t *src;
	uint32_t bytes = 0;
	unsigned int i;
	uint16_t len;

	for (i = 0; i < n; i++)
		bytes += round8(txn_op_area(&q->ops[(q->head + i) % q->cap], &src, &len));
	return bytes;
}

/*
 * The areas after the op array, in op order, each at the previous end
 * rounded up to 8 (include/xtx/proto.h), and the request's length.
 */
static void lay_out_areas(struct xtx_req *r, const struct pack_area *a, unsigned int n)
{
	uint8_t *base = (uint8_t *)&r->msg;
	uint32_t off = xtx_msg_len(r->msg.hdr.nops);
	unsigned int i;

	if (!n)
		return;
	for (i = 0; i < n; i++) {
		struct xtx_op *op = &r->msg.ops[a[i].op];
		struct xtx_ext e = { .off = (uint16_t)off, .cap = a[i].cap, .len = a[i].len };

		memset(base + off, 0, round8(a[i].cap));
		if (a[i].len)
			memcpy(base + off, a[i].src, a[i].len);
		op->vlen = 0;
		op->flags |= XTX_OPF_EXT;
		memset(op->value, 0, sizeof(op->value));
		memcpy(op->value, &e, sizeof(e));
		off = round8(off + a[i].cap);
	}
	r->len = (uint16_t)off;
}

/*
 * Packs queued ops into as many requests as the windows allow: at most
 * ops_per_packet ops, and with value areas, at most XTX_MAX_REQUEST bytes
 * of ops and areas together.
 */
void txn_wire_pack(struct xtx_client *c)
{
	unsigned int s, per = c->cfg.ops_per_packet;
	uint64_t now = xtx_now_ns();

	for (s = 0; s < c->cfg.nservers; s++) {
		struct txn_queue *q = &c->queue[s];

		while (q->len) {
			struct xtx_req *r = xtx_reqwin_next(&c->w, s);
			struct pack_area areas[XTX_MAX_OPS];
			unsigned int n = 0, nareas = 0;
			uint32_t area_bytes = 0;
			struct txn_opref *slots;

			if (!r)
				break;
			slots = txn_sent_ops(c, s, (unsigned int)(r - c->w.srv[s].slot));
			if (c->srv_lease_state[s] == LEASE_UNASKED) {
				/* the first request to a server also asks its leases */
				xtx_msg_add(&r->msg, XTX_OP_PING, 0, 0);
				slots[n++] = (struct txn_opref){ .kind = TOP_PING, .server = s };
				c->srv_lease_state[s] = LEASE_ASKED;
			}
			while (q->len && n < per) {
				struct txn_opref *ref = &q->ops[q->head];
				unsigned int g = group_len(q);
				const uint8_t *src;
				struct xtx_op *op;
				uint16_t cap, len;

				/* glued ops travel together: start a new request if they do not fit */
				if (n && n + g > per)
					break;
				if (n && xtx_msg_len(n + g) + area_bytes + group_area(q, g) >
				    XTX_MAX_REQUEST)
					break;
				/* never past the buffer, glued or not (one op always fits) */
				if (xtx_msg_len(n + 1) + area_bytes + group_area(q, 1) >
				    XTX_MAX_REQUEST)
					break;
				if (drop_late_log(c, ref, now)) {
					q->head = (q->head + 1) % q->cap;
					q->len--;
					continue;
				}
				if ((ref->kind == TOP_LOCK_EXCL || ref->kind == TOP_LOCK_SHARED) &&
				    !ref->t->lease_anchor_ns)
					ref->t->lease_anchor_ns = now;
				op = xtx_msg_add(&r->msg, 0, 0, 0);
				ref->t->sent_mask |= 1ull << s;

				txn_fill_op(ref, op);
				cap = txn_op_area(ref, &src, &len);
				if (cap) {
					areas[nareas++] = (struct pack_area){ .op = n, .cap = cap,
									      .len = len, .src = src };
					area_bytes += round8(cap);
				}
				ref->t->ops++;
				if (ref->t->last_req != r) {
					ref->t->last_req = r;
					ref->t->packets++;
				}
				slots[n++] = *ref;
				q->head = (q->head + 1) % q->cap;
				q->len--;
			}
			if (!n)
				break;	/* every op was a late log append: nothing to send */
			lay_out_areas(r, areas, nareas);
			memset(&slots[n], 0, (XTX_MAX_OPS - n) * sizeof(*slots));
			xtx_reqwin_submit(&c->w, s, r);
			c->st.ops += n;
		}
	}
}

/* A request's ops leave the window: each goes back to its transaction. */
static void settle(struct xtx_client *c, unsigned int s, struct xtx_req *r,
		   const struct xtx_msgbuf *reply, size_t reply_len)
{
	struct txn_opref *slots = txn_sent_ops(c, s, (unsigned int)(r - c->w.srv[s].slot));
	struct txn_opref refs[XTX_MAX_OPS];
	unsigned int i, n = r->msg.hdr.nops;
	uint8_t st;

	/* the slot may be reused by a requeue below: work on copies */
	memcpy(refs, slots, n * sizeof(*refs));
	memset(slots, 0, n * sizeof(*slots));
	xtx_reqwin_done(&c->w, s, r);
	/* the answers' value areas, for txn_note_value() */
	c->reply_base = (const uint8_t *)reply;
	c->reply_len = reply ? reply_len : 0;
	for (i = 0; i < n; i++) {
		if (!refs[i].t && refs[i].kind == TOP_PING) {
			if (reply)
				learn_lease(c, s, &reply->ops[i]);
			else
				c->srv_lease_state[s] = LEASE_UNASKED;
			continue;
		}
		if (!refs[i].t)
			continue;
		if (!reply) {
			txn_on_lost(&refs[i]);
			continue;
		}
		st = reply->ops[i].status;
		/* did not run, or the log is momentarily full: again, in a new request */
		if (st == XTX_ST_RETRY || (st == XTX_ST_LOG_FULL && refs[i].tries < LOG_FULL_TRIES)) {
			c->st.op_retries++;
			if (st == XTX_ST_RETRY && parks_on_retry(&refs[i]))
				park(c, &refs[i], xtx_now_ns());
			else
				requeue(c, &refs[i]);
			continue;
		}
		txn_on_reply(&refs[i], &reply->ops[i]);
	}
	c->reply_base = NULL;
	c->reply_len = 0;
}

/*
 * A request is given up only once it has also gone this long unanswered
 * since its first send.  On a busy machine the server's softirq or the
 * client itself may not run for tens of milliseconds, and 50 tries at a
 * 1 ms timeout pass in 50 ms: a transaction would end in doubt over a
 * stall, not over a server that stopped answering.
 */
#define GIVE_UP_MIN_NS	(300ull * 1000 * 1000)

/*
 * Requests sent max_tries times, and unanswered for GIVE_UP_MIN_NS, are
 * given up: their ops go back to their transactions as lost (which fails
 * a transaction before its commit point and re-queues it after).
 */
static void give_up_stale(struct xtx_client *c, uint64_t now)
{
	unsigned int s, i;

	for (s = 0; s < c->cfg.nservers; s++) {
		struct xtx_reqwin *srv = &c->w.srv[s];

		if (!srv->outstanding)
			continue;
		for (i = 0; i < XTX_DEDUPE_WINDOW; i++) {
			struct xtx_req *r = &srv->slot[i];

			if (r->req_id && !r->pending && r->tx >= c->cfg.max_tries &&
			    now - r->last_ns >= c->w.timeout_ns &&
			    now - r->first_ns >= GIVE_UP_MIN_NS) {
				c->st.lost_requests++;
				/*
				 * a server that stopped answering may have been
				 * moved out: its ops are dealt with by where their
				 * keys are now
				 */
				txn_reconfigure(c, false);
				settle(c, s, r, NULL, 0);
			}
		}
	}
}

static void dispatch(struct xtx_client *c, const struct xtx_dgram *d)
{
	const struct xtx_msgbuf *m = d->buf;
	struct xtx_req *r;

	switch (xtx_reqwin_match(&c->w, d, &r)) {
	case XTX_RW_ANSWER:
		if (m->hdr.status != XTX_ST_OK && m->hdr.status != XTX_ST_UNKNOWN_OP &&
		    m->hdr.status != XTX_ST_BAD_ARG && m->hdr.status != XTX_ST_NOT_FOUND)
			c->st.refused_packets++;
		settle(c, d->server, r, m, d->len);
		break;
	case XTX_RW_RETRY:
		/*
		 * An epoch refusal ran nothing: resent like an unanswered
		 * request, so a server that lost its lease for a moment only
		 * delays, and one that keeps refusing ends as unreachable.
		 */
		if (m->hdr.status == XTX_ST_EPOCH) {
			c->st.epoch_refusals++;
			if (m->hdr.epoch != XTX_EPOCH_FENCED && m->hdr.epoch > c->w.epoch)
				txn_reconfigure(c, true);
		}
		break;
	case XTX_RW_MISMATCH:
		/* not our request's reply: resend it rather than trust it */
		r->pending = true;
		break;
	default:
		/* retries are paced by the timeout; duplicates and strays are dropped */
		break;
	}
}

/* What the concurrent-duplicate fault did and found, as the transport's receives saw it. */
static void note_dupcpu(struct xtx_client *c)
{
	struct xtx_dupcpu_stats d;

	xtx_dupcpu_get_stats(c->tr.dupcpu, &d);
	c->st.dup_cpu_sent = d.sent;
	c->st.dup_cpu_apart = d.apart;
	c->st.dup_cpu_busy = d.busy;
	c->st.dup_cpu_compared = d.compared;
	c->st.dup_cpu_mismatched = d.mismatched;
}

int txn_wire_io(struct xtx_client *c, uint64_t wait_ns)
{
	uint64_t now = xtx_now_ns(), next;
	unsigned int i;
	int n, err;

	next = unpark(c, now, now + wait_ns);
	txn_wire_pack(c);
	give_up_stale(c, now);
	/* ops given up may have been re-queued */
	txn_wire_pack(c);
	next = xtx_reqwins_expire(&c->w, now, next - now);
	err = xtx_reqwins_send(&c->w, &c->tr, &c->st.packets, &c->st.retransmits);
	c->st.duplicated = c->tr.duplicated;
	c->st.reordered = c->tr.reordered;

	c->st.frames_malformed = c->tr.malformed;
	c->st.udp_fallback = c->tr.fallback;
	if (err)
		return err;
	if (c->nready)
		next = now;
	now = xtx_now_ns();
	n = xtx_transport_recv(&c->tr, c->recvv, XTX_RECV_BATCH, next > now ? next - now : 0);
	if (n < 0)
		return n;
	for (i = 0; i < (unsigned int)n; i++)
		dispatch(c, &c->recvv[i]);
	if (c->tr.dupcpu)
		note_dupcpu(c);
	/* the receive may have swapped buffers: give every entry one back */
	for (i = 0; i < XTX_RECV_BATCH; i++) {
		c->recvv[i].buf = &c->rbufs[i];
		c->recvv[i].cap = sizeof(c->rbufs[i]);
	}
	return n;
}
