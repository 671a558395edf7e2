// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench lock2pl and lockocc: DINT's lock-manager microbenchmarks (NSDI'24 §5.1). */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/hash.h>
#include <xtx/msg.h>
#include "bench.h"
#include "benchthread.h"
#include "clock.h"
#include "hist.h"
#include "ids.h"
#include "log.h"
#include "msgbuf.h"
#include "names.h"
#include "num.h"
#include "reqwin.h"
#include "runner.h"
#include "servers.h"
#include "transport.h"
#include "zipf.h"

#define LOCKS_MAX_THREADS	256
/* The table every lock of the benchmark lives in. */
#define LOCKS_TABLE		0
#define LOCKS_MAX_KEYS		(1ull << 40)
/* --check keeps three words per key in memory shared by all threads. */
#define LOCKS_CHECK_MAX_KEYS	(1u << 20)
/* Longest --hold-us: far beyond any lease a benchmark would run with. */
#define LOCKS_MAX_HOLD_US	10000000u
/* Holds this long or longer come close to the server's default lease. */
#define LOCKS_CHECK_HOLD_WARN_NS	(100 * 1000 * 1000ull)
/* How often a thread hands its numbers to the progress reporter. */
#define LOCKS_PUBLISH_NS	(50 * 1000 * 1000ull)
/* Longest a thread sleeps in receive, so it notices the stop flag. */
#define LOCKS_MAX_WAIT_NS	(1000 * 1000ull)
/* Violations printed in all; the rest are only counted. */
#define LOCKS_VIOLATION_REPORTS	10
#define LOCKS_TXN_SEQ_MASK	((1ull << XTX_TXN_SEQ_BITS) - 1)
#define HOLDER_NONE		UINT32_MAX

enum locks_mode {
	LOCKS_2PL,	/* LOCK_SHARED / LOCK_EXCL, then the matching UNLOCK */
	LOCKS_OCC,	/* OCC_VALIDATE, or OCC_LOCK then OCC_UNLOCK */
};

struct locks_opts {
	enum locks_mode mode;
	const char *name;
	struct sockaddr_in *servers;
	unsigned int nservers;
	uint16_t port;
	uint32_t threads;
	uint64_t duration_ns;
	uint64_t keys;
	double theta;
	uint32_t read_pct;
	uint32_t ops;
	uint32_t inflight;
	uint64_t hold_ns;
	uint32_t holders;	/* per thread: enough to fill every window */
	uint32_t client_base;
	uint64_t timeout_ns;
	bool check;
	bool json;
	struct xtx_zipf zipf;
};

/* Only u64 fields: added and copied as an array. */
struct locks_counts {
	uint64_t sent;		/* datagrams sent, retransmissions included */
	uint64_t replies;	/* datagrams received from a server */
	uint64_t packets;	/* requests answered OK as a packet */
	uint64_t packet_ops;	/* ops in those, RETRY answers included */
	uint64_t ops;		/* lock ops executed: answered OK or REJECTED */
	uint64_t acquires;	/* acquire answers, OK or REJECTED */
	uint64_t granted_shared;
	uint64_t granted_excl;
	uint64_t conflicts;	/* acquires REJECTED (no-wait: not retried) */
	uint64_t sharing;	/* ... flagged as against another key of the slot */
	uint64_t retries;	/* ops answered RETRY (slot busy): sent again */
	uint64_t releases;
	uint64_t stale;		/* releases that found nothing of ours to free */
	uint64_t validates;
	uint64_t validate_locked; /* validates that found another txn's exclusive lock */
	uint64_t reclaims;	/* answers that took over an expired lease */
	uint64_t violations;	/* --check */
	uint64_t retrans;
	uint64_t dups;		/* replies to requests already answered */
	uint64_t errors;	/* replies that were wrong, failures */
	uint64_t unanswered;	/* requests given up at the end */
	uint64_t left_held;	/* grants whose release was never answered */
};

#define LOCKS_NCOUNTS	(sizeof(struct locks_counts) / sizeof(uint64_t))

enum holder_phase {
	HOLDER_IDLE,
	HOLDER_ACQUIRE,		/* acquire or validate queued or in flight */
	HOLDER_HOLD,		/* granted; on the hold list until the release is due */
	HOLDER_RELEASE,		/* release queued or in flight */
};

/*
 * One logical lock request and its release.  A thread runs many at once
 * and packs the ops they have ready for a server into one packet.
 */
struct holder {
	uint64_t key;
	uint64_t txn;		/* a fresh transaction per request: never re-entrant */
	uint64_t token;		/* the grant's, echoed by the release */
	uint64_t due_ns;	/* HOLD: when the release is due */
	uint64_t seen;		/* --check, validate: exclusive holder when packed */
	uint32_t next;		/* queue link */
	uint32_t server;
	uint8_t opcode;		/* the op queued or in flight */
	uint8_t phase;
	bool marked;		/* --check: our hold is marked on the key */
};

struct holder_queue {
	uint32_t head, tail;
};

/*
 * --check: what the client believes is held, per key, shared by all
 * threads.  A mark is set when a grant arrives and cleared before the
 * release is sent, so with a correct server a mark is always set after
 * any conflicting mark was cleared; seq_cst atomics make two conflicting
 * holders see each other even when they mark at the same moment.
 */
struct key_mark {
	_Atomic uint64_t excl;		/* txn of the exclusive holder, 0: none */
	_Atomic uint64_t shared;	/* shared holders */
	_Atomic uint64_t last_shared;	/* txn of the latest shared holder, for reports */
};

struct locks_thread {
	struct bench_thread bt;
	const struct locks_opts *o;
	struct xtx_transport tr;
	struct xtx_reqwins win;
	uint64_t rng;
	uint64_t txn_seq;
	bool stopping;

	struct holder *h;
	uint32_t busy;			/* holders not idle */
	struct holder_queue *sendq;	/* per server: ops ready to go */
	struct holder_queue holdq;	/* granted, by due time (hold is constant) */
	/* Holder of each op in flight: [server][req_id % window][op]. */
	uint32_t *opmap;

	/* Owned by the thread. */
	struct locks_counts c;
	struct locks_counts at_stop;	/* c when the stop was seen: rates use this */

	/* Read by the progress reporter under bt.lock. */
	struct locks_counts pub;
};

static struct key_mark *locks_marks;
static atomic_uint locks_violation_reports;

static void usage(FILE *out, const struct locks_opts *o)
{
	bool occ = o->mode == LOCKS_OCC;

	fprintf(out,
		"Usage: xtxbench %s --servers IP[,IP...] [options]\n"
		"DINT's lock-manager microbenchmark (NSDI'24 5.1) for %s: every thread\n"
		"keeps servers x W x K lock requests on Zipf-chosen keys going at once\n"
		"and packs the ops ready for a server into packets of up to K ops, W\n"
		"packets in flight per server.\n",
		o->name, occ ? "OCC" : "2PL");
	if (occ)
		fprintf(out,
			"A request is, with probability P%%, an OCC_VALIDATE (version read: the\n"
			"lock state) and otherwise an OCC_LOCK, released by OCC_UNLOCK after\n"
			"--hold-us.\n");
	else
		fprintf(out,
			"A request is, with probability P%%, a LOCK_SHARED and otherwise a\n"
			"LOCK_EXCL, released (echoing the grant token) after --hold-us.\n");
	fprintf(out,
		"A REJECTED acquire is a conflict and is not retried (no-wait); an op\n"
		"answered RETRY is sent again.  Each request is its own transaction.  A\n"
		"key's server is xtx_shard_of(xtx_hash(table %u, key), N).  Every op\n"
		"executed counts as a lock op.  Progress goes to stderr once a second,\n"
		"the summary to stdout.  Exits 1 if a reply was wrong, none arrived, or\n"
		"--check saw conflicting holds.\n"
		"\n"
		"Options:\n"
		"  -s, --servers IP[,IP...]  the servers (IPv4)\n"
		"  -p, --port N              server UDP port (default %u)\n"
		"  -t, --threads N           threads, each with its own socket and client id\n"
		"                            (default 1, at most %u)\n"
		"  -d, --duration S          how long to start new requests (default 5s)\n"
		"  -n, --keys N              key space 0..N-1 (default 1000000)\n"
		"  -z, --zipf THETA          key skew, 0 (uniform) to %.3f (default 0.99)\n"
		"  -r, --read-pct P          %% of requests that %s (default 80)\n"
		"  -k, --ops K               ops per packet at most, 1..%u (default 8)\n"
		"  -w, --inflight W          packets outstanding per server and thread,\n"
		"                            1..%u (default 8)\n"
		"  -H, --hold-us U           hold a grant U microseconds before releasing\n"
		"                            (default 0: in the next packet)\n"
		"  -c, --client-id BASE      thread i uses client id BASE+i (default derived\n"
		"                            from the pid, below %u)\n"
		"  -T, --timeout DUR         retransmit after this long without a reply\n"
		"                            (default 20ms)\n"
		"  -C, --check               mark every hold in shared memory and fail on\n"
		"                            conflicting grants of one key (--keys <= %u;\n"
		"                            keep holds far below the server's lease)\n"
		"  -j, --json                one JSON object on stdout instead of text\n"
		"  -v, --verbose             more output\n"
		"  -h, --help                this text\n"
		"\n"
		"Example: xtxbench %s --servers 10.77.0.2,10.77.1.2 --threads 2 --ops 8 "
		"--duration 3\n",
		LOCKS_TABLE, XTX_DEFAULT_PORT, LOCKS_MAX_THREADS, XTX_ZIPF_THETA_MAX,
		occ ? "validate" : "lock shared", XTX_MAX_OPS, XTX_REQWIN_MAX_INFLIGHT,
		XTX_MAX_CLIENTS_DEFAULT, LOCKS_CHECK_MAX_KEYS, o->name);
}

static void counts_add(struct locks_counts *a, const struct locks_counts *b)
{
	bench_counts_add((uint64_t *)a, (const uint64_t *)b, LOCKS_NCOUNTS);
}

static void publish(struct locks_thread *t)
{
	bench_publish(&t->bt, &t->pub, &t->c, sizeof(t->c));
}

/* Every bad reply is counted in c.errors. */
#define bad_reply(t, server, ...) \
	bench_bad_reply(&(t)->bt, &(t)->c.errors, &(t)->tr.servers[server], __VA_ARGS__)

/* ---- --check ---- */

/* "client.seq", how holders are named in violation reports. */
static const char *txn_str(uint64_t txn, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%llu", xtx_txn_client(txn),
		 (unsigned long long)(txn & LOCKS_TXN_SEQ_MASK));
	return buf;
}

static void violation(struct locks_thread *t, uint64_t key, const char *what, uint64_t mine,
		      const char *held, uint64_t other)
{
	char a[32], b[32];

	t->c.violations++;
	if (atomic_fetch_add(&locks_violation_reports, 1) >= LOCKS_VIOLATION_REPORTS)
		return;
	fprintf(stderr, "Error: --check: key %llu: %s by txn %s while txn %s holds it %s\n",
		(unsigned long long)key, what, txn_str(mine, a, sizeof(a)),
		txn_str(other, b, sizeof(b)), held);
}

/* A grant arrived: mark it, and no conflicting hold may be marked on the key. */
static void check_grant(struct locks_thread *t, struct holder *h, uint32_t flags)
{
	struct key_mark *m = &locks_marks[h->key];
	/* A takeover of an expired lease legitimately overlaps the old holder. */
	bool reclaimed = flags & XTX_LOCKF_RECLAIMED;
	uint64_t other = 0, n;

	h->marked = true;
	if (h->opcode == XTX_OP_LOCK_SHARED) {
		atomic_fetch_add(&m->shared, 1);
		atomic_store(&m->last_shared, h->txn);
		other = atomic_load(&m->excl);
		if (other && !reclaimed)
			violation(t, h->key, "shared grant", h->txn, "exclusively", other);
		return;
	}
	if (!atomic_compare_exchange_strong(&m->excl, &other, h->txn)) {
		if (reclaimed)	/* the old holder's release then leaves our mark alone */
			atomic_store(&m->excl, h->txn);
		else
			violation(t, h->key, "exclusive grant", h->txn, "exclusively", other);
	}
	n = atomic_load(&m->shared);
	if (n && !reclaimed)
		violation(t, h->key, "exclusive grant", h->txn, "shared",
			  atomic_load(&m->last_shared));
}

/* Before the release goes out: from here on the server may grant it to others. */
static void check_release(struct holder *h)
{
	struct key_mark *m = &locks_marks[h->key];
	uint64_t mine = h->txn;

	if (!h->marked)
		return;
	h->marked = false;
	if (h->opcode == XTX_OP_UNLOCK_SHARED)
		atomic_fetch_sub(&m->shared, 1);
	else
		atomic_compare_exchange_strong(&m->excl, &mine, 0);
}

/*
 * A validate answered "not locked": if the exclusive holder marked when
 * it was packed is still marked now, that holder held the lock all the
 * while the server executed the validate.
 */
static void check_validate(struct locks_thread *t, const struct holder *h, uint32_t flags)
{
	if (!h->seen || (flags & (XTX_LOCKF_EXCL | XTX_LOCKF_RECLAIMED)))
		return;
	if (atomic_load(&locks_marks[h->key].excl) == h->seen)
		violation(t, h->key, "validate found it unlocked", h->txn, "exclusively", h->seen);
}

/* ---- holders ---- */

static void enqueue(struct locks_thread *t, struct holder_queue *q, uint32_t hi)
{
	t->h[hi].next = HOLDER_NONE;
	if (q->head == HOLDER_NONE)
		q->head = hi;
	else
		t->h[q->tail].next = hi;
	q->tail = hi;
}

static uint32_t dequeue(struct locks_thread *t, struct holder_queue *q)
{
	uint32_t hi = q->head;

	if (hi != HOLDER_NONE)
		q->head = t->h[hi].next;
	return hi;
}

static uint64_t next_txn(struct locks_thread *t)
{
	/* Sequence 0 of client 0 would be txn 0, which names no transaction. */
	do
		t->txn_seq = (t->txn_seq + 1) & LOCKS_TXN_SEQ_MASK;
	while (!t->txn_seq);
	return xtx_txn_make(t->bt.client_id, t->txn_seq);
}

/* A new request on a Zipf-chosen key, queued for its server. */
static void holder_start(struct locks_thread *t, uint32_t hi)
{
	const struct locks_opts *o = t->o;
	struct holder *h = &t->h[hi];
	bool read = xtx_rng_below(&t->rng, 100) < o->read_pct;

	h->key = xtx_zipf_next(&o->zipf, &t->rng);
	h->txn = next_txn(t);
	h->token = 0;
	h->seen = 0;
	h->marked = false;
	if (o->mode == LOCKS_2PL)
		h->opcode = read ? XTX_OP_LOCK_SHARED : XTX_OP_LOCK_EXCL;
	else
		h->opcode = read ? XTX_OP_OCC_VALIDATE : XTX_OP_OCC_LOCK;
	h->server = xtx_shard_of(xtx_hash(LOCKS_TABLE, h->key), o->nservers);
	h->phase = HOLDER_ACQUIRE;
	t->busy++;
	enqueue(t, &t->sendq[h->server], hi);
}

/* The request is over: start the next one while the run lasts. */
static void holder_done(struct locks_thread *t, uint32_t hi)
{
	t->h[hi].phase = HOLDER_IDLE;
	t->busy--;
	if (!t->stopping)
		holder_start(t, hi);
}

static uint8_t release_op(uint8_t acquire)
{
	switch (acquire) {
	case XTX_OP_LOCK_SHARED:
		return XTX_OP_UNLOCK_SHARED;
	case XTX_OP_LOCK_EXCL:
		return XTX_OP_UNLOCK_EXCL;
	default:
		return XTX_OP_OCC_UNLOCK;
	}
}

static void holder_release(struct locks_thread *t, uint32_t hi)
{
	struct holder *h = &t->h[hi];

	h->phase = HOLDER_RELEASE;
	h->opcode = release_op(h->opcode);
	enqueue(t, &t->sendq[h->server], hi);
}

/* Queues the releases that are due; all of them once the run is stopping. */
static void release_due(struct locks_thread *t, uint64_t now)
{
	uint32_t hi;

	while (t->holdq.head != HOLDER_NONE &&
	       (t->stopping || t->h[t->holdq.head].due_ns <= now)) {
		hi = dequeue(t, &t->holdq);
		holder_release(t, hi);
	}
}

static uint32_t *opmap_of(struct locks_thread *t, unsigned int s, const struct xtx_req *r)
{
	unsigned int slot = r - t->win.srv[s].slot;

	return &t->opmap[(s * XTX_DEDUPE_WINDOW + slot) * XTX_MAX_OPS];
}

/* Packs queued ops into packets, up to --ops each, while windows have room. */
static void pack(struct locks_thread *t)
{
	const struct locks_opts *o = t->o;
	unsigned int s, n;
	struct xtx_req *r;
	uint32_t hi, *map;

	for (s = 0; s < o->nservers; s++) {
		struct holder_queue *q = &t->sendq[s];

		while (q->head != HOLDER_NONE && (r = xtx_reqwin_next(&t->win, s))) {
			map = opmap_of(t, s, r);
			n = 0;
			while (n < o->ops && (hi = dequeue(t, q)) != HOLDER_NONE) {
				struct holder *h = &t->h[hi];
				struct xtx_op *op;

				/* Nothing is held yet: a stopping run just drops it. */
				if (t->stopping && h->phase == HOLDER_ACQUIRE) {
					holder_done(t, hi);
					continue;
				}
				op = xtx_msg_add(&r->msg, h->opcode, LOCKS_TABLE, h->key);
				op->txn = h->txn;
				/*
				 * DINT's lock-manager microbenchmark measures locks
				 * alone: no value read with a grant; a validate of
				 * the never-written keys expects version 0.
				 */
				op->flags = XTX_OPF_NO_VALUE;
				if (h->phase == HOLDER_RELEASE) {
					op->token = h->token;
					if (locks_marks)
						check_release(h);
				} else if (h->opcode == XTX_OP_OCC_VALIDATE && locks_marks) {
					h->seen = atomic_load(&locks_marks[h->key].excl);
				}
				map[n++] = hi;
			}
			if (!n)
				break;
			xtx_reqwin_submit(&t->win, s, r);
		}
	}
}

/*
 * The packet's ops did not run or cannot be trusted: their requests end
 * here (a release's mark is already gone; an unanswered grant, if any,
 * is left to the server's lease).
 */
static void abandon(struct locks_thread *t, unsigned int s, const struct xtx_req *r)
{
	const uint32_t *map = opmap_of(t, s, r);
	unsigned int i;

	for (i = 0; i < r->msg.hdr.nops; i++)
		holder_done(t, map[i]);
}

/* One op's answer in a packet the server executed. */
static void handle_op(struct locks_thread *t, unsigned int s, uint32_t hi,
		      const struct xtx_op *rop, uint64_t req_id, uint64_t now)
{
	const struct locks_opts *o = t->o;
	struct holder *h = &t->h[hi];

	if (rop->opcode != h->opcode || rop->key != h->key || rop->txn != h->txn) {
		bad_reply(t, s, "request %llu: op %s key %llu txn %#llx is not the one sent",
			  (unsigned long long)req_id, xtx_op_name(rop->opcode) ?: "?",
			  (unsigned long long)rop->key, (unsigned long long)rop->txn);
		holder_done(t, hi);
		return;
	}
	if (rop->flags & XTX_LOCKF_RECLAIMED)
		t->c.reclaims++;
	if (rop->status == XTX_ST_RETRY) {
		/* The slot was busy and nothing ran: the same op again, in a new packet. */
		t->c.retries++;
		if (t->stopping && h->phase == HOLDER_ACQUIRE)
			holder_done(t, hi);
		else
			enqueue(t, &t->sendq[s], hi);
		return;
	}
	if (rop->status == XTX_ST_REJECTED && h->phase == HOLDER_ACQUIRE &&
	    h->opcode != XTX_OP_OCC_VALIDATE) {
		t->c.ops++;
		t->c.acquires++;
		t->c.conflicts++;
		if (rop->flags & XTX_LOCKF_SHARING)
			t->c.sharing++;
		holder_done(t, hi);
		return;
	}
	if (rop->status != XTX_ST_OK &&
	    !(rop->status == XTX_ST_LOCKED && h->opcode == XTX_OP_OCC_VALIDATE)) {
		bad_reply(t, s, "request %llu: %s on key %llu: status %s",
			  (unsigned long long)req_id, xtx_op_name(rop->opcode) ?: "?",
			  (unsigned long long)rop->key, xtx_status_name(rop->status));
		holder_done(t, hi);
		return;
	}
	t->c.ops++;
	if (h->phase == HOLDER_RELEASE) {
		t->c.releases++;
		if (rop->flags & XTX_LOCKF_STALE)
			t->c.stale++;
		holder_done(t, hi);
		return;
	}
	if (h->opcode == XTX_OP_OCC_VALIDATE) {
		t->c.validates++;
		if ((rop->flags & XTX_LOCKF_EXCL) && !(rop->flags & XTX_LOCKF_MINE))
			t->c.validate_locked++;
		if (locks_marks)
			check_validate(t, h, rop->flags);
		holder_done(t, hi);
		return;
	}
	t->c.acquires++;
	if (h->opcode == XTX_OP_LOCK_SHARED)
		t->c.granted_shared++;
	else
		t->c.granted_excl++;
	h->token = rop->token;
	if (locks_marks)
		check_grant(t, h, rop->flags);
	if (o->hold_ns && !t->stopping) {
		h->phase = HOLDER_HOLD;
		h->due_ns = now + o->hold_ns;
		enqueue(t, &t->holdq, hi);
	} else {
		holder_release(t, hi);
	}
}

static void handle_reply(struct locks_thread *t, const struct xtx_dgram *d, uint64_t now)
{
	const struct xtx_msgbuf *m = d->buf;
	const struct xtx_hdr *h = &m->hdr;
	const uint32_t *map;
	struct xtx_req *r;
	unsigned int i;

	t->c.replies++;
	switch (xtx_reqwin_match(&t->win, d, &r)) {
	case XTX_RW_FOREIGN:
		bad_reply(t, d->server, "not an xtx reply for us (%zu bytes)", d->len);
		return;
	case XTX_RW_DUPLICATE:
		t->c.dups++;
		return;
	case XTX_RW_UNKNOWN:
		bad_reply(t, d->server, "request id %llu was never sent",
			  (unsigned long long)h->req_id);
		return;
	case XTX_RW_RETRY:
		return;
	case XTX_RW_MISMATCH:
		bad_reply(t, d->server, "request %llu: %zu bytes, %u ops: not its reply",
			  (unsigned long long)h->req_id, d->len, h->nops);
		abandon(t, d->server, r);
		goto done;
	case XTX_RW_ANSWER:
		break;
	}
	if (h->status != XTX_ST_OK) {
		/* Refused as a whole: no op ran, and retrying would be refused again. */
		bad_reply(t, d->server, "request %llu: status %s%s", (unsigned long long)h->req_id,
			  xtx_status_name(h->status),
			  h->status == XTX_ST_BAD_CLIENT ?
				  " (is --client-id below the server's max clients?)" : "");
		abandon(t, d->server, r);
		goto done;
	}
	t->c.packets++;
	t->c.packet_ops += h->nops;
	xtx_hist_add(&t->bt.recent, now - r->first_ns);
	map = opmap_of(t, d->server, r);
	for (i = 0; i < h->nops; i++)
		handle_op(t, d->server, map[i], &m->ops[i], h->req_id, now);
done:
	xtx_reqwin_done(&t->win, d->server, r);
}

static void *locks_thread_main(void *arg)
{
	struct locks_thread *t = arg;
	const struct locks_opts *o = t->o;
	struct xtx_dgram recvv[XTX_RECV_BATCH];
	struct xtx_msgbuf *rbuf = calloc(XTX_RECV_BATCH, sizeof(*rbuf));
	uint64_t now, next, last_pub, drain_end = 0;
	unsigned int i;
	int n;

	if (!rbuf) {
		fprintf(stderr, "Error: thread %u: %s\n", t->bt.idx, strerror(ENOMEM));
		t->c.errors++;
		goto out;
	}
	for (i = 0; i < XTX_RECV_BATCH; i++) {
		recvv[i].buf = &rbuf[i];
		recvv[i].cap = sizeof(rbuf[i]);
	}
	for (i = 0; i < o->holders; i++)
		holder_start(t, i);
	last_pub = xtx_now_ns();
	for (;;) {
		now = xtx_now_ns();
		if (!t->stopping && xtx_run_stopping()) {
			t->stopping = true;
			t->at_stop = t->c;
			/* Give lost requests, releases above all, a few retransmissions. */
			drain_end = now + (o->timeout_ns * 10 > 200000000ull ?
					   o->timeout_ns * 10 : 200000000ull);
		}
		release_due(t, now);
		pack(t);
		next = xtx_reqwins_expire(&t->win, now, LOCKS_MAX_WAIT_NS);
		if (t->holdq.head != HOLDER_NONE && t->h[t->holdq.head].due_ns < next)
			next = t->h[t->holdq.head].due_ns;
		if (t->stopping &&
		    ((!t->busy && !xtx_reqwins_outstanding(&t->win)) || now >= drain_end))
			break;
		n = xtx_reqwins_step(&t->win, &t->tr, &t->c.sent, &t->c.retrans, recvv, next,
				     t->bt.idx);
		if (n < 0) {
			t->c.errors++;
			break;
		}
		now = xtx_now_ns();
		for (i = 0; i < (unsigned int)n; i++)
			handle_reply(t, &recvv[i], now);
		if (now - last_pub >= LOCKS_PUBLISH_NS) {
			publish(t);
			last_pub = now;
		}
	}
	if (!t->stopping)
		t->at_stop = t->c;
	t->c.unanswered = xtx_reqwins_outstanding(&t->win);
	for (i = 0; i < o->holders; i++)
		if (t->h[i].phase == HOLDER_HOLD || t->h[i].phase == HOLDER_RELEASE)
			t->c.left_held++;
out:
	publish(t);
	free(rbuf);
	return NULL;
}

/* A number in [0, max] with nothing after it: strtod alone takes "0.9x" or "nan". */
static int parse_theta(const char *what, const char *s, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= max)) {
		fprintf(stderr, "Error: %s: '%s' is not a number in [0, %.3f]\n", what, s, max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct locks_opts *o)
{
	static const struct option longopts[] = {
		{ "servers", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'n' },
		{ "zipf", required_argument, NULL, 'z' },
		{ "read-pct", required_argument, NULL, 'r' },
		{ "ops", required_argument, NULL, 'k' },
		{ "inflight", required_argument, NULL, 'w' },
		{ "hold-us", required_argument, NULL, 'H' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "check", no_argument, NULL, 'C' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *servers = NULL;
	uint32_t port = XTX_DEFAULT_PORT, hold_us = 0;
	bool base_given = false;
	int c;

	o->threads = 1;
	o->duration_ns = 5000000000ull;
	o->keys = 1000000;
	o->theta = 0.99;
	o->read_pct = 80;
	o->ops = 8;
	o->inflight = 8;
	o->timeout_ns = 20000000ull;
	while ((c = getopt_long(argc, argv, "s:p:t:d:n:z:r:k:w:H:c:T:Cjvh", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 's':
			servers = optarg;
			break;
		case 'p':
			if (xtx_parse_u32("--port", optarg, 1, 65535, &port))
				return -1;
			break;
		case 't':
			if (xtx_parse_u32("--threads", optarg, 1, LOCKS_MAX_THREADS, &o->threads))
				return -1;
			break;
		case 'd':
			if (xtx_parse_duration("--duration", optarg, &o->duration_ns))
				return -1;
			break;
		case 'n':
			if (xtx_parse_u64("--keys", optarg, 1, LOCKS_MAX_KEYS, &o->keys))
				return -1;
			break;
		case 'z':
			if (parse_theta("--zipf", optarg, XTX_ZIPF_THETA_MAX, &o->theta))
				return -1;
			break;
		case 'r':
			if (xtx_parse_u32("--read-pct", optarg, 0, 100, &o->read_pct))
				return -1;
			break;
		case 'k':
			if (xtx_parse_u32("--ops", optarg, 1, XTX_MAX_OPS, &o->ops))
				return -1;
			break;
		case 'w':
			if (xtx_parse_u32("--inflight", optarg, 1, XTX_REQWIN_MAX_INFLIGHT,
					  &o->inflight))
				return -1;
			break;
		case 'H':
			if (xtx_parse_u32("--hold-us", optarg, 0, LOCKS_MAX_HOLD_US, &hold_us))
				return -1;
			break;
		case 'c':
			if (xtx_parse_u32("--client-id", optarg, 0, XTX_MAX_CLIENTS_LIMIT - 1,
					  &o->client_base))
				return -1;
			base_given = true;
			break;
		case 'T':
			if (xtx_parse_duration("--timeout", optarg, &o->timeout_ns))
				return -1;
			break;
		case 'C':
			o->check = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'v':
			xtx_log_level++;
			break;
		case 'h':
			usage(stdout, o);
			return 1;
		default:
			usage(stderr, o);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "Error: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!servers) {
		fprintf(stderr, "Error: --servers is required\n");
		usage(stderr, o);
		return -1;
	}
	if (!o->duration_ns || o->timeout_ns < 1000) {
		fprintf(stderr, "Error: --duration must be above 0 and --timeout at least 1us\n");
		return -1;
	}
	if (o->check && o->keys > LOCKS_CHECK_MAX_KEYS) {
		fprintf(stderr, "Error: --check: at most %u keys, got %llu (use --keys)\n",
			LOCKS_CHECK_MAX_KEYS, (unsigned long long)o->keys);
		return -1;
	}
	if (base_given && o->client_base + o->threads > XTX_MAX_CLIENTS_LIMIT) {
		fprintf(stderr, "Error: --client-id: %u + %u threads exceeds the limit of %u\n",
			o->client_base, o->threads, XTX_MAX_CLIENTS_LIMIT);
		return -1;
	}
	if (!base_given)
		o->client_base = xtx_client_base_default(o->threads);
	o->hold_ns = hold_us * 1000ull;
	if (o->check && o->hold_ns >= LOCKS_CHECK_HOLD_WARN_NS)
		pr_warn("Warning: --check: a hold near the server's lock lease (default 500ms) "
			"is reclaimed, which voids the check for that key\n");
	o->port = port;
	if (xtx_parse_servers("--servers", servers, port, &o->servers, &o->nservers))
		return -1;
	/* Enough requests in the air to fill every window with full packets. */
	o->holders = o->nservers * o->inflight * o->ops;
	if (xtx_zipf_init(&o->zipf, o->keys, o->theta)) {
		fprintf(stderr, "Error: --zipf %g over %llu keys\n", o->theta,
			(unsigned long long)o->keys);
		return -1;
	}
	return 0;
}

/* Collects what the threads published since the last call. */
static void gather(struct locks_thread *th, unsigned int n, struct locks_counts *sum,
		   struct xtx_hist *h)
{
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	xtx_hist_reset(h);
	for (i = 0; i < n; i++) {
		bench_gather(&th[i].bt, (uint64_t *)sum, (const uint64_t *)&th[i].pub,
			     LOCKS_NCOUNTS, h);
	}
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

struct locks_progress {
	struct locks_thread *th;
	unsigned int nthreads;
	struct locks_counts prev;
};

/* A progress line on stderr for the second just over. */
static void progress_tick(void *ctx, unsigned int sec, double dt)
{
	struct locks_progress *p = ctx;
	struct locks_counts cur;
	struct xtx_hist h;

	gather(p->th, p->nthreads, &cur, &h);
	fprintf(stderr,
		"t=%us  lock_ops/s=%.0f  pkts/s=%.0f  ops/pkt=%.1f  p50=%.1fus p99=%.1fus  "
		"conflicts=%.1f%%  retries=%llu  retrans=%llu",
		sec, (double)(cur.ops - p->prev.ops) / dt,
		(double)(cur.packets - p->prev.packets) / dt,
		ratio(cur.packet_ops - p->prev.packet_ops, cur.packets - p->prev.packets),
		(double)xtx_hist_percentile(&h, 50) / 1e3,
		(double)xtx_hist_percentile(&h, 99) / 1e3,
		100 * ratio(cur.conflicts - p->prev.conflicts, cur.acquires - p->prev.acquires),
		(unsigned long long)(cur.retries - p->prev.retries),
		(unsigned long long)(cur.retrans - p->prev.retrans));
	if (cur.violations)
		fprintf(stderr, "  VIOLATIONS=%llu", (unsigned long long)cur.violations);
	if (cur.errors)
		fprintf(stderr, "  errors=%llu", (unsigned long long)cur.errors);
	fputc('\n', stderr);
	p->prev = cur;
}

static void print_summary(const struct locks_opts *o, const struct locks_counts *c,
			  const struct locks_counts *at_stop, const struct xtx_hist *h,
			  double run_s, uint64_t stray)
{
	double ops_s = at_stop->ops / run_s, pkts_s = at_stop->packets / run_s;
	double per_pkt = ratio(c->packet_ops, c->packets);
	uint64_t granted = c->granted_shared + c->granted_excl;

	if (o->json) {
		printf("{\"bench\":\"%s\",\"servers\":%u,\"threads\":%u,\"keys\":%llu,"
		       "\"zipf\":%.3f,\"read_pct\":%u,\"max_ops_per_packet\":%u,\"inflight\":%u,"
		       "\"hold_us\":%llu,\"holders_per_thread\":%u,\"client_id_base\":%u,"
		       "\"duration_s\":%.3f,\"sent_packets\":%llu,\"replies\":%llu,"
		       "\"packets\":%llu,\"packets_per_s\":%.1f,\"ops_per_packet\":%.2f,"
		       "\"lock_ops\":%llu,\"lock_ops_per_s\":%.1f,\"acquires\":%llu,"
		       "\"granted\":%llu,\"granted_shared\":%llu,\"granted_excl\":%llu,"
		       "\"conflicts\":%llu,\"sharing_conflicts\":%llu,\"retries\":%llu,"
		       "\"releases\":%llu,\"stale_releases\":%llu,\"validates\":%llu,"
		       "\"validate_locked\":%llu,\"lease_reclaims\":%llu,"
		       "\"latency_us\":{\"avg\":%.2f,\"p50\":%.2f,\"p99\":%.2f,\"p999\":%.2f,"
		       "\"max\":%.2f},\"retransmits\":%llu,\"duplicates\":%llu,"
		       "\"unanswered\":%llu,\"left_held\":%llu,\"stray\":%llu,\"errors\":%llu,"
		       "\"check\":%s,\"violations\":%llu}\n",
		       o->name, o->nservers, o->threads, (unsigned long long)o->keys, o->theta,
		       o->read_pct, o->ops, o->inflight, (unsigned long long)(o->hold_ns / 1000),
		       o->holders, o->client_base, run_s, (unsigned long long)c->sent,
		       (unsigned long long)c->replies, (unsigned long long)c->packets, pkts_s,
		       per_pkt, (unsigned long long)c->ops, ops_s, (unsigned long long)c->acquires,
		       (unsigned long long)granted, (unsigned long long)c->granted_shared,
		       (unsigned long long)c->granted_excl, (unsigned long long)c->conflicts,
		       (unsigned long long)c->sharing, (unsigned long long)c->retries,
		       (unsigned long long)c->releases, (unsigned long long)c->stale,
		       (unsigned long long)c->validates, (unsigned long long)c->validate_locked,
		       (unsigned long long)c->reclaims, xtx_hist_mean(h) / 1e3,
		       xtx_hist_percentile(h, 50) / 1e3, xtx_hist_percentile(h, 99) / 1e3,
		       xtx_hist_percentile(h, 99.9) / 1e3, h->max / 1e3,
		       (unsigned long long)c->retrans, (unsigned long long)c->dups,
		       (unsigned long long)c->unanswered, (unsigned long long)c->left_held,
		       (unsigned long long)stray, (unsigned long long)c->errors,
		       o->check ? "true" : "false", (unsigned long long)c->violations);
		return;
	}
	printf("%s: servers=%u threads=%u keys=%llu zipf=%.2f read_pct=%u ops=%u inflight=%u "
	       "hold_us=%llu holders=%u client_ids=%u..%u duration=%.2fs\n",
	       o->name, o->nservers, o->threads, (unsigned long long)o->keys, o->theta,
	       o->read_pct, o->ops, o->inflight, (unsigned long long)(o->hold_ns / 1000),
	       o->holders, o->client_base, o->client_base + o->threads - 1, run_s);
	printf("sent_packets=%llu  replies=%llu\n", (unsigned long long)c->sent,
	       (unsigned long long)c->replies);
	printf("packets=%llu  packets/s=%.0f  ops_per_packet=%.2f\n",
	       (unsigned long long)c->packets, pkts_s, per_pkt);
	printf("lock_ops=%llu  lock_ops/s=%.0f\n", (unsigned long long)c->ops, ops_s);
	printf("acquires=%llu  granted=%llu (shared=%llu excl=%llu)  conflicts=%llu (%.1f%%, "
	       "sharing=%llu)  retries=%llu\n",
	       (unsigned long long)c->acquires, (unsigned long long)granted,
	       (unsigned long long)c->granted_shared, (unsigned long long)c->granted_excl,
	       (unsigned long long)c->conflicts, 100 * ratio(c->conflicts, c->acquires),
	       (unsigned long long)c->sharing, (unsigned long long)c->retries);
	printf("releases=%llu  stale_releases=%llu  lease_reclaims=%llu",
	       (unsigned long long)c->releases, (unsigned long long)c->stale,
	       (unsigned long long)c->reclaims);
	if (o->mode == LOCKS_OCC)
		printf("  validates=%llu  validate_locked=%llu", (unsigned long long)c->validates,
		       (unsigned long long)c->validate_locked);
	putchar('\n');
	printf("latency_us avg=%.1f p50=%.1f p99=%.1f p999=%.1f max=%.1f\n",
	       xtx_hist_mean(h) / 1e3, xtx_hist_percentile(h, 50) / 1e3,
	       xtx_hist_percentile(h, 99) / 1e3, xtx_hist_percentile(h, 99.9) / 1e3,
	       h->max / 1e3);
	printf("retransmits=%llu  duplicates=%llu  unanswered=%llu  left_held=%llu  stray=%llu  "
	       "errors=%llu\n",
	       (unsigned long long)c->retrans, (unsigned long long)c->dups,
	       (unsigned long long)c->unanswered, (unsigned long long)c->left_held,
	       (unsigned long long)stray, (unsigned long long)c->errors);
	if (o->check)
		printf("check: violations=%llu\n", (unsigned long long)c->violations);
}

static void free_threads(struct locks_thread *th, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		xtx_transport_close(&th[i].tr);
		xtx_reqwins_free(&th[i].win);
		free(th[i].h);
		free(th[i].sendq);
		free(th[i].opmap);
		pthread_mutex_destroy(&th[i].bt.lock);
	}
	free(th);
}

/* Returns the threads' state, or NULL after printing why (and freeing it all). */
static struct locks_thread *setup_threads(const struct locks_opts *o)
{
	struct locks_thread *th = calloc(o->threads, sizeof(*th));
	uint64_t first = xtx_req_id_start();
	unsigned int i, s;

	if (!th) {
		fprintf(stderr, "Error: allocating threads: %s\n", strerror(ENOMEM));
		return NULL;
	}
	for (i = 0; i < o->threads; i++) {
		th[i].tr.fd = -1;
		pthread_mutex_init(&th[i].bt.lock, NULL);
	}
	for (i = 0; i < o->threads; i++) {
		struct locks_thread *t = &th[i];

		t->bt.idx = i;
		t->o = o;
		t->bt.client_id = o->client_base + i;
		t->rng = first * 2654435761u + i + 1;
		/*
		 * Transactions numbered from the clock like request ids, so a
		 * rerun with the same client id never meets its old locks as
		 * its own (the server lets a txn re-enter its locks).
		 */
		t->txn_seq = first & LOCKS_TXN_SEQ_MASK;
		t->h = calloc(o->holders, sizeof(*t->h));
		t->sendq = calloc(o->nservers, sizeof(*t->sendq));
		t->opmap = calloc((size_t)o->nservers * XTX_DEDUPE_WINDOW * XTX_MAX_OPS,
				  sizeof(*t->opmap));
		if (!t->h || !t->sendq || !t->opmap ||
		    xtx_reqwins_init(&t->win, o->nservers, t->bt.client_id, first, o->inflight,
				     o->timeout_ns)) {
			fprintf(stderr, "Error: allocating thread state: %s\n", strerror(ENOMEM));
			goto fail;
		}
		for (s = 0; s < o->nservers; s++)
			t->sendq[s].head = t->sendq[s].tail = HOLDER_NONE;
		t->holdq.head = t->holdq.tail = HOLDER_NONE;
		if (xtx_transport_open(&t->tr, o->servers, o->nservers))
			goto fail;
	}
	return th;
fail:
	free_threads(th, o->threads);
	return NULL;
}

static int locks_main(int argc, char **argv, enum locks_mode mode)
{
	struct locks_counts total = {}, at_stop = {};
	struct locks_opts o = { .mode = mode, .name = argv[0] };
	struct locks_progress prog = {};
	struct locks_thread *th;
	struct xtx_run run;
	struct xtx_hist h;
	uint64_t start, stop, stray = 0;
	unsigned int i, s;
	int rc;

	rc = parse_args(argc, argv, &o);
	if (rc) {
		free(o.servers);
		return rc > 0 ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
	}
	if (o.check) {
		locks_marks = calloc(o.keys, sizeof(*locks_marks));
		if (!locks_marks) {
			fprintf(stderr, "Error: --check: allocating marks for %llu keys: %s\n",
				(unsigned long long)o.keys, strerror(ENOMEM));
			free(o.servers);
			return BENCH_EXIT_FAIL;
		}
	}
	th = setup_threads(&o);
	if (!th) {
		rc = BENCH_EXIT_FAIL;
		goto out_free;
	}
	pr_info("%s: client ids %u..%u, first request id %llu, %u requests per thread\n",
		o.name, o.client_base, o.client_base + o.threads - 1,
		(unsigned long long)th[0].win.srv[0].first_id, o.holders);

	prog.th = th;
	prog.nthreads = o.threads;
	run = (struct xtx_run){
		.nthreads = o.threads,
		.fn = locks_thread_main,
		.args = th,
		.arg_size = sizeof(*th),
		.duration_ns = o.duration_ns,
		.tick = progress_tick,
		.ctx = &prog,
	};
	if (xtx_run_threads(&run, &start, &stop)) {
		rc = BENCH_EXIT_FAIL;
		goto out;
	}

	xtx_hist_reset(&h);
	for (i = 0; i < o.threads; i++) {
		counts_add(&total, &th[i].c);
		counts_add(&at_stop, &th[i].at_stop);
		xtx_hist_merge(&h, &th[i].bt.total);
		stray += th[i].tr.stray + th[i].tr.truncated;
		pr_debug("thread %u (client %u): sent=%llu replies=%llu lock_ops=%llu\n", i,
			 th[i].bt.client_id, (unsigned long long)th[i].c.sent,
			 (unsigned long long)th[i].c.replies, (unsigned long long)th[i].c.ops);
	}
	print_summary(&o, &total, &at_stop, &h, (double)(stop - start) / 1e9, stray);
	for (s = 0; s < o.nservers; s++) {
		char addr[XTX_ADDR_STRLEN];
		uint64_t sent = 0, replies = 0;

		for (i = 0; i < o.threads; i++) {
			sent += th[i].win.srv[s].sent;
			replies += th[i].win.srv[s].replies;
		}
		pr_info("server %s: sent_packets=%llu replies=%llu\n",
			xtx_addr_str(&o.servers[s], addr, sizeof(addr)),
			(unsigned long long)sent, (unsigned long long)replies);
	}
	rc = BENCH_EXIT_OK;
	if (total.left_held)
		pr_warn("Warning: %llu grants were never released (the server's lease frees "
			"them)\n", (unsigned long long)total.left_held);
	if (total.violations) {
		fprintf(stderr, "Error: --check: %llu conflicting holds%s\n",
			(unsigned long long)total.violations,
			total.reclaims ? " (leases were reclaimed during the run: a hold outlived "
					 "the server's lease)" : "");
		rc = BENCH_EXIT_FAIL;
	}
	if (total.errors) {
		fprintf(stderr, "Error: %llu bad replies or failures\n",
			(unsigned long long)total.errors);
		rc = BENCH_EXIT_FAIL;
	}
	if (!total.replies) {
		fprintf(stderr, "Error: no reply arrived; is a server listening on port %u?\n",
			o.port);
		rc = BENCH_EXIT_FAIL;
	}
out:
	free_threads(th, o.threads);
out_free:
	free(locks_marks);
	locks_marks = NULL;
	free(o.servers);
	return rc;
}

int bench_lock2pl_main(int argc, char **argv)
{
	return locks_main(argc, argv, LOCKS_2PL);
}

int bench_lockocc_main(int argc, char **argv)
{
	return locks_main(argc, argv, LOCKS_OCC);
}
