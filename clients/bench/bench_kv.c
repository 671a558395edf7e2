// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench kv: GET/INSERT/UPDATE/DELETE load, many per packet, checked against a model or timed. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
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
#include "kvmodel.h"
#include "log.h"
#include "msgbuf.h"
#include "names.h"
#include "num.h"
#include "reqwin.h"
#include "runner.h"
#include "servers.h"
#include "transport.h"
#include "zipf.h"

#define KV_MAX_THREADS		256
/* Keys per thread: indexed by 32 bits, and a model entry each under --check. */
#define KV_MAX_KEYS		(1u << 24)
#define KV_NOPS			(XTX_OP_DELETE - XTX_OP_GET + 1)
#define KV_MIX_MAX		1000000u
/* How often a thread hands its numbers to the progress reporter. */
#define KV_PUBLISH_NS		(50 * 1000 * 1000ull)
/* Longest a thread sleeps in receive, so it notices the stop flag. */
#define KV_MAX_WAIT_NS		(1000 * 1000ull)
/* Transmissions of one request before its server is declared unreachable. */
#define KV_MAX_TRIES		200
/*
 * An op answered RETRY for this long is given up.  RETRY means it did not
 * run, so giving up leaves the model exact; a bucket wedged this long is
 * a server bug worth an error.
 */
#define KV_OP_GIVEUP_NS		(10ull * 1000 * 1000 * 1000)
/* --count without --duration: the run's upper bound. */
#define KV_COUNT_MAX_NS		(24ull * 3600 * 1000 * 1000 * 1000)
/* --check mismatches printed in all; the rest are only counted. */
#define KV_MISMATCH_REPORTS	20
#define PEND_NONE		UINT32_MAX
/*
 * --check with a skewed draw: draws that hit a key with an op going are
 * redrawn this often before a random idle key is taken instead, so the
 * model's one-op-per-key rule holds at the price of some skew.
 */
#define KV_REDRAWS		8

struct kv_opts {
	struct sockaddr_in *servers;
	unsigned int nservers;
	uint16_t port;
	uint32_t threads;
	uint64_t duration_ns;	/* 0 with --count alone */
	uint64_t count;		/* ops per thread, 0: run for duration_ns */
	uint32_t keys;		/* per thread */
	uint64_t key_base;	/* thread i's keys start at key_base + i * keys */
	uint32_t tables;
	uint32_t ops;
	uint32_t inflight;
	uint32_t mix[KV_NOPS];	/* weights of GET, INSERT, UPDATE, DELETE */
	uint32_t mix_sum;
	uint32_t client_base;
	uint64_t timeout_ns;
	uint64_t drain_ns;
	uint32_t pends;		/* ops a thread keeps going at once */
	const char *dump_file;
	bool check;
	bool json;
	double theta;		/* --zipf, 0: uniform */
	uint32_t exist_pct;	/* share of requests aimed at keys that exist */
	uint32_t exist_keys;	/* per thread: indices 0 .. exist_keys-1 are the loaded ones */
	int value_size;		/* INSERT/UPDATE value bytes, -1: random 0..XTX_VALUE_INLINE */
	bool preload;
	bool preload_only;	/* stop after the preload: a script times the run on its own */
	/*
	 * --zipf or --exist-pct: keys come from the distribution, not from the
	 * idle set.  Without --check they are drawn freely, so a hot key may
	 * have several ops going (even in one packet), as with real clients.
	 */
	bool skewed;
	bool free_keys;		/* skewed && !check */
	struct xtx_zipf zipf_exist;	/* over the exist_keys loaded keys */
	struct xtx_zipf zipf_missing;	/* over the keys - exist_keys others */
};

/* Only u64 fields: added and copied as an array. */
struct kv_counts {
	uint64_t sent;		/* datagrams sent, retransmissions included */
	uint64_t replies;	/* datagrams received from a server */
	uint64_t packets;	/* requests answered OK as a packet */
	uint64_t packet_ops;	/* ops in those, RETRY answers included */
	uint64_t ops;		/* ops answered with anything but RETRY */
	uint64_t retries;	/* ops answered RETRY: sent again in a later request */
	uint64_t retrans;	/* requests sent again after --timeout */
	uint64_t dups;		/* replies to requests already answered */
	uint64_t errors;	/* replies that were wrong, failures, give-ups */
	uint64_t mismatches;	/* --check: replies the model disagrees with */
	uint64_t dropped;	/* ops never sent, or answered RETRY, when the run stopped */
	uint64_t unanswered;	/* ops in requests never answered: outcome unknown */
	uint64_t started;	/* ops started */
	uint64_t to_missing;	/* ... of which on keys --exist-pct leaves out */
	uint64_t redraws;	/* --check, skewed: draws that fell back to an idle key */
	uint64_t gave_up;	/* ops still RETRY after KV_OP_GIVEUP_NS, given up */
	uint64_t st[KV_NOPS][XTX_ST__COUNT];	/* answers by op and status */
};

#define KV_NCOUNTS	(sizeof(struct kv_counts) / sizeof(uint64_t))

/* One op on its way: queued, in flight, or queued again after RETRY. */
struct kv_pend {
	uint32_t kidx;		/* the thread's key index */
	uint32_t next;		/* queue link */
	uint64_t first_ns;	/* started: op latency includes its retries */
	uint8_t opcode;
	uint8_t vlen;
	uint8_t server;
	uint8_t value[XTX_VALUE_INLINE];
};

struct pend_queue {
	uint32_t head, tail;
};

struct kv_thread {
	struct bench_thread bt;	/* bt.total: packet round trips */
	const struct kv_opts *o;
	struct xtx_transport tr;
	struct xtx_reqwins win;
	struct kvmodel *model;	/* --check */
	uint64_t rng;
	uint64_t key_base;	/* key of index 0: the thread's keys are disjoint */
	uint64_t started;	/* ops started, for --count */
	bool preloading;	/* the --preload phase: INSERTs of keys 0..exist_keys-1 */
	uint32_t preload_next;	/* the next key index to preload */
	bool stopping;

	uint8_t *key_server;	/* [keys] */
	/* Keys with no op going, as a set with O(1) random pick and removal. */
	uint32_t *idle, *idle_pos, nidle;
	struct kv_pend *p;	/* [o->pends] */
	uint32_t busy;		/* active pends */
	struct pend_queue *sendq;	/* per server: ops ready to go */
	/* Pend of each op in flight: [server][req_id % window][op]. */
	uint32_t *opmap;

	/* Owned by the thread. */
	struct kv_counts c;
	struct kv_counts at_stop;	/* c when the stop was seen: rates use this */
	struct xtx_hist op_lat;		/* op start to final answer, retries included */

	/* Read by the progress reporter under bt.lock. */
	struct kv_counts pub;
};

static atomic_uint kv_mismatch_reports;
static atomic_uint kv_running;
static pthread_t kv_main_thread;
static bool kv_count_mode;

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench kv --servers IP[,IP...] [options]\n"
		"Runs GET, INSERT, UPDATE and DELETE on random keys, packing up to K ops\n"
		"(distinct keys, none with another op in flight; but see --zipf) into\n"
		"each packet, W packets in flight per server and thread.  Thread i owns\n"
		"keys B+i*N .. B+i*N+N-1, so every key's history is sequential; key k lives in\n"
		"table k %% T on server xtx_shard_of(xtx_hash(table, k), servers), and\n"
		"threads' keys share the servers' buckets.  An op answered RETRY is sent\n"
		"again in a later request; a lost request or reply is retransmitted\n"
		"with the same id after --timeout.  Progress goes to stderr once a\n"
		"second, the summary to stdout.\n"
		"\n"
		"With --check every answer is checked against a per-thread model of the\n"
		"store (common/kvmodel.h) that starts empty: run it against servers\n"
		"that never saw these keys (fresh ones, or another --key-base).  A mismatch\n"
		"prints op, key, expected and got.  Exits 1 on a mismatch, an op whose\n"
		"answer never came (--check), a bad reply, or no reply at all.\n"
		"\n"
		"Without --check the run measures: every answer is counted by op and\n"
		"status (OK, NOT_FOUND, RETRY, ...), and only a transport failure (no\n"
		"reply, a reply that is not the request's, a refused packet) fails it.\n"
		"--zipf and --exist-pct shape which keys are asked for; without --check\n"
		"keys are then drawn freely, so a hot key may have several ops going.\n"
		"\n"
		"Options:\n"
		"  -s, --servers IP[,IP...]  the servers (IPv4)\n"
		"  -p, --port N              server UDP port (default %u)\n"
		"  -t, --threads N           threads, each with its own socket, client id and\n"
		"                            keys (default 1, at most %u)\n"
		"  -d, --duration S          how long to start new ops (default 5s)\n"
		"  -n, --count N             instead: ops per thread, then stop\n"
		"  -K, --keys N              keys per thread, 1..%u (default 1000)\n"
		"  -b, --key-base B          the first thread's first key (default 0)\n"
		"      --tables T            spread keys over tables 0..T-1, 1..%u (default 1)\n"
		"  -k, --ops K               ops per packet at most, 1..%u (default 8)\n"
		"  -w, --inflight W          packets outstanding per server and thread,\n"
		"                            1..%u (default 8)\n"
		"  -m, --mix G:I:U:D         relative weights of get, insert, update and\n"
		"                            delete (default 50:20:20:10)\n"
		"  -c, --client-id BASE      thread i uses client id BASE+i (default derived\n"
		"                            from the pid, below %u)\n"
		"  -T, --timeout DUR         retransmit after this long without a reply\n"
		"                            (default 20ms; %u tries at most)\n"
		"  -z, --zipf THETA          key skew within each thread's keys, 0 (uniform)\n"
		"                            to %.3f (default 0); rank 0 is the hottest\n"
		"  -e, --exist-pct P         only E = N*P/100 keys of each thread's N exist\n"
		"                            (the first E: what --preload loads); an op aims\n"
		"                            at one of them with probability P%%, else at one\n"
		"                            of the others, skewed within each (default 100)\n"
		"      --preload             before the run, INSERT every key that should\n"
		"                            exist, K per packet, and report keys/s\n"
		"      --preload-only        the same, then stop without a run (so a script\n"
		"                            can read the server's counters around the run)\n"
		"      --value-size B        INSERT and UPDATE values of B bytes, 0..%u\n"
		"                            (default: random lengths)\n"
		"  -C, --check               check every answer against the model\n"
		"  -f, --dump-file PATH      with --check: write the model's live keys at\n"
		"                            the end as `xtxctl dump` prints them, sorted\n"
		"  -j, --json                one JSON object on stdout instead of text\n"
		"  -v, --verbose             more output\n"
		"  -h, --help                this text\n"
		"\n"
		"Examples: xtxbench kv --servers 10.77.0.2,10.77.1.2 --threads 4 --keys 200 "
		"--count 5000 --check --dump-file /tmp/kv.dump\n"
		"          xtxbench kv --servers 10.77.0.2 --threads 2 --keys 100000 --preload "
		"--zipf 0.99 --exist-pct 31 --mix 80:0:20:0 --value-size 40 --ops 16\n",
		XTX_DEFAULT_PORT, KV_MAX_THREADS, KV_MAX_KEYS, XTX_MAX_TABLES, XTX_MAX_OPS,
		XTX_REQWIN_MAX_INFLIGHT, XTX_MAX_CLIENTS_DEFAULT, KV_MAX_TRIES, XTX_ZIPF_THETA_MAX,
		XTX_VALUE_INLINE);
}

static const char *op_name(uint8_t opcode)
{
	static __thread char buf[16];
	const char *n = xtx_op_name(opcode);

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "op%u", opcode);
	return buf;
}

static void counts_add(struct kv_counts *a, const struct kv_counts *b)
{
	bench_counts_add((uint64_t *)a, (const uint64_t *)b, KV_NCOUNTS);
}

static void publish(struct kv_thread *t)
{
	bench_publish(&t->bt, &t->pub, &t->c, sizeof(t->c));
}

/* Every bad reply is counted in c.errors. */
#define bad_reply(t, server, ...) \
	bench_bad_reply(&(t)->bt, &(t)->c.errors, &(t)->tr.servers[server], __VA_ARGS__)

/* ---- keys and pends ---- */

static uint64_t key_of(const struct kv_thread *t, uint32_t kidx)
{
	return t->key_base + kidx;
}

static uint8_t table_of(const struct kv_thread *t, uint64_t key)
{
	return (uint8_t)(key % t->o->tables);
}

static void idle_put(struct kv_thread *t, uint32_t kidx)
{
	t->idle_pos[kidx] = t->nidle;
	t->idle[t->nidle++] = kidx;
}

/* Takes idle key kidx out of the set. */
static void idle_remove(struct kv_thread *t, uint32_t kidx)
{
	uint32_t i = t->idle_pos[kidx], last = t->idle[--t->nidle];

	t->idle[i] = last;
	t->idle_pos[last] = i;
	t->idle_pos[kidx] = PEND_NONE;
}

/* A random idle key, taken out of the set. */
static uint32_t idle_take(struct kv_thread *t)
{
	uint32_t kidx = t->idle[xtx_rng_below(&t->rng, t->nidle)];

	idle_remove(t, kidx);
	return kidx;
}

/*
 * A key index from the --zipf / --exist-pct distribution.  The loaded and
 * the missing keys are drawn from separately, so exactly P% of the ops aim
 * at loaded keys however skewed the draw: with one Zipf over the whole
 * range, whether the few hottest keys happen to exist would decide it.
 */
static uint32_t draw_key(struct kv_thread *t)
{
	const struct kv_opts *o = t->o;
	bool exist;

	if (o->exist_keys == o->keys)
		exist = true;
	else if (!o->exist_keys)
		exist = false;
	else
		exist = xtx_rng_below(&t->rng, 100) < o->exist_pct;
	if (exist)
		return (uint32_t)xtx_zipf_next(&o->zipf_exist, &t->rng);
	return o->exist_keys + (uint32_t)xtx_zipf_next(&o->zipf_missing, &t->rng);
}

/* The key of the next op, out of the idle set unless keys are drawn freely. */
static uint32_t pick_key(struct kv_thread *t)
{
	const struct kv_opts *o = t->o;
	uint32_t kidx, i;

	if (t->preloading) {
		kidx = t->preload_next++;
		if (!o->free_keys)
			idle_remove(t, kidx);
		return kidx;
	}
	if (!o->skewed)
		return idle_take(t);
	if (o->free_keys)
		return draw_key(t);
	for (i = 0; i < KV_REDRAWS; i++) {
		kidx = draw_key(t);
		if (t->idle_pos[kidx] != PEND_NONE) {
			idle_remove(t, kidx);
			return kidx;
		}
	}
	t->c.redraws++;
	return idle_take(t);
}

static void enqueue(struct kv_thread *t, struct pend_queue *q, uint32_t pi)
{
	t->p[pi].next = PEND_NONE;
	if (q->head == PEND_NONE)
		q->head = pi;
	else
		t->p[q->tail].next = pi;
	q->tail = pi;
}

static uint32_t dequeue(struct kv_thread *t, struct pend_queue *q)
{
	uint32_t pi = q->head;

	if (pi != PEND_NONE)
		q->head = t->p[pi].next;
	return pi;
}

static uint8_t pick_op(struct kv_thread *t)
{
	const struct kv_opts *o = t->o;
	uint32_t r = (uint32_t)xtx_rng_below(&t->rng, o->mix_sum), i;

	for (i = 0; i < KV_NOPS - 1; i++) {
		if (r < o->mix[i])
			break;
		r -= o->mix[i];
	}
	return XTX_OP_GET + i;
}

static bool may_start(const struct kv_thread *t)
{
	const struct kv_opts *o = t->o;

	if (t->stopping || (!o->free_keys && !t->nidle))
		return false;
	if (t->preloading)
		return t->preload_next < o->exist_keys;
	return !o->count || t->started < o->count;
}

/* Starts a new op on the next key and queues it for its server, if it may. */
static void pend_start(struct kv_thread *t, uint32_t pi, uint64_t now)
{
	struct kv_pend *p = &t->p[pi];
	uint64_t r = 0;
	unsigned int i;

	if (!may_start(t))
		return;
	p->kidx = pick_key(t);
	p->opcode = t->preloading ? XTX_OP_INSERT : pick_op(t);
	p->server = t->key_server[p->kidx];
	p->first_ns = now;
	p->vlen = 0;
	memset(p->value, 0, sizeof(p->value));
	t->c.started++;
	if (p->kidx >= t->o->exist_keys)
		t->c.to_missing++;
	if (p->opcode == XTX_OP_INSERT || p->opcode == XTX_OP_UPDATE) {
		/* empty values included: they are values too */
		if (t->o->value_size >= 0)
			p->vlen = (uint8_t)t->o->value_size;
		else
			p->vlen = (uint8_t)xtx_rng_below(&t->rng, XTX_VALUE_INLINE + 1);
		for (i = 0; i < p->vlen; i++) {
			if (!(i % 8))
				r = xtx_rng_next(&t->rng);
			p->value[i] = (uint8_t)(r >> (8 * (i % 8)));
		}
	}
	t->busy++;
	t->started++;
	enqueue(t, &t->sendq[p->server], pi);
}

/* The op is over (or never ran): its key is free again, and the pend takes the next. */
static void pend_done(struct kv_thread *t, uint32_t pi, uint64_t now)
{
	struct kv_pend *p = &t->p[pi];

	t->busy--;
	if (!t->o->free_keys)
		idle_put(t, p->kidx);
	pend_start(t, pi, now);
}

static uint32_t *opmap_of(struct kv_thread *t, unsigned int s, const struct xtx_req *r)
{
	unsigned int slot = r - t->win.srv[s].slot;

	return &t->opmap[(s * XTX_DEDUPE_WINDOW + slot) * XTX_MAX_OPS];
}

/* Packs queued ops into packets, up to --ops each, while windows have room. */
static void pack(struct kv_thread *t, uint64_t now)
{
	const struct kv_opts *o = t->o;
	unsigned int s, n;
	struct xtx_req *r;
	uint32_t pi, *map;

	for (s = 0; s < o->nservers; s++) {
		struct pend_queue *q = &t->sendq[s];

		while (q->head != PEND_NONE && (r = xtx_reqwin_next(&t->win, s))) {
			map = opmap_of(t, s, r);
			n = 0;
			while (n < o->ops && (pi = dequeue(t, q)) != PEND_NONE) {
				struct kv_pend *p = &t->p[pi];
				struct xtx_op *op;
				uint64_t key;

				/* nothing of it ran yet: a stopping run just drops it */
				if (t->stopping) {
					t->c.dropped++;
					pend_done(t, pi, now);
					continue;
				}
				key = key_of(t, p->kidx);
				op = xtx_msg_add(&r->msg, p->opcode, table_of(t, key), key);
				op->vlen = p->vlen;
				memcpy(op->value, p->value, sizeof(op->value));
				map[n++] = pi;
			}
			if (!n)
				break;
			xtx_reqwin_submit(&t->win, s, r);
		}
	}
}

/*
 * The packet was refused as a whole (or its reply makes no sense): its ops
 * end here.  A refusal ran nothing; after a reply that is not the
 * request's, --check can no longer vouch for these keys, which the error
 * already fails.
 */
static void abandon(struct kv_thread *t, unsigned int s, const struct xtx_req *r, uint64_t now)
{
	const uint32_t *map = opmap_of(t, s, r);
	unsigned int i;

	for (i = 0; i < r->msg.hdr.nops; i++)
		pend_done(t, map[i], now);
}

static void mismatch(struct kv_thread *t, unsigned int s, uint64_t req_id, const struct xtx_op *q,
		     const char *why)
{
	char addr[XTX_ADDR_STRLEN];

	t->c.mismatches++;
	if (atomic_fetch_add(&kv_mismatch_reports, 1) >= KV_MISMATCH_REPORTS)
		return;
	fprintf(stderr,
		"Error: --check: %s table %u key %llu (vlen %u) on %s, client %u request %llu: "
		"%s\n",
		op_name(q->opcode), q->table, (unsigned long long)q->key, q->vlen,
		xtx_addr_str(&t->tr.servers[s], addr, sizeof(addr)), t->bt.client_id,
		(unsigned long long)req_id, why);
}

/* One op's answer in a packet the server executed. */
static void handle_op(struct kv_thread *t, unsigned int s, uint32_t pi, const struct xtx_op *q,
		      const struct xtx_op *a, uint64_t req_id, uint64_t now)
{
	struct kv_pend *p = &t->p[pi];
	char why[KVMODEL_WHY_MAX];
	uint8_t st = a->status;

	if (a->opcode != q->opcode || a->key != q->key || a->table != q->table) {
		bad_reply(t, s, "request %llu: op %s table %u key %llu is not the %s of key %llu "
			  "sent", (unsigned long long)req_id, op_name(a->opcode), a->table,
			  (unsigned long long)a->key, op_name(q->opcode),
			  (unsigned long long)q->key);
		pend_done(t, pi, now);
		return;
	}
	if (st < XTX_ST__COUNT)
		t->c.st[q->opcode - XTX_OP_GET][st]++;
	if (st == XTX_ST_RETRY) {
		/* nothing ran: the same op again, in a new request */
		t->c.retries++;
		if (t->stopping) {
			t->c.dropped++;
			pend_done(t, pi, now);
		} else if (now - p->first_ns > KV_OP_GIVEUP_NS) {
			t->c.gave_up++;
			/* a measuring run counts it: the server answered, just never OK */
			if (t->o->check)
				bad_reply(t, s, "%s table %u key %llu: still RETRY after %llus, "
					  "given up", op_name(q->opcode), q->table,
					  (unsigned long long)q->key,
					  (unsigned long long)(KV_OP_GIVEUP_NS / 1000000000ull));
			pend_done(t, pi, now);
		} else {
			enqueue(t, &t->sendq[s], pi);
		}
		return;
	}
	t->c.ops++;
	xtx_hist_add(&t->op_lat, now - p->first_ns);
	/* without --check every status is a result, counted above */
	if (t->model && kvmodel_check(t->model, q, a, why, sizeof(why)))
		mismatch(t, s, req_id, q, why);
	pend_done(t, pi, now);
}

static void handle_reply(struct kv_thread *t, const struct xtx_dgram *d, uint64_t now)
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
		abandon(t, d->server, r, now);
		goto done;
	case XTX_RW_ANSWER:
		break;
	}
	if (h->status != XTX_ST_OK) {
		/* refused as a whole: no op ran, and the same request would be refused again */
		bad_reply(t, d->server, "request %llu: status %s%s", (unsigned long long)h->req_id,
			  xtx_status_name(h->status),
			  h->status == XTX_ST_BAD_CLIENT ?
				  " (is --client-id below the server's max clients?)" : "");
		abandon(t, d->server, r, now);
		goto done;
	}
	t->c.packets++;
	t->c.packet_ops += h->nops;
	xtx_hist_add(&t->bt.recent, now - r->first_ns);
	map = opmap_of(t, d->server, r);
	for (i = 0; i < h->nops; i++)
		handle_op(t, d->server, map[i], &r->msg.ops[i], &m->ops[i], h->req_id, now);
done:
	xtx_reqwin_done(&t->win, d->server, r);
}

/* A request retransmitted KV_MAX_TRIES times: its server is not answering. */
static bool unreachable(struct kv_thread *t)
{
	unsigned int s, i;
	char addr[XTX_ADDR_STRLEN];

	for (s = 0; s < t->win.nservers; s++) {
		if (!t->win.srv[s].outstanding)
			continue;
		for (i = 0; i < XTX_DEDUPE_WINDOW; i++) {
			const struct xtx_req *r = &t->win.srv[s].slot[i];

			if (r->req_id && r->pending && r->tx >= KV_MAX_TRIES) {
				fprintf(stderr, "Error: thread %u: %s did not answer request %llu "
					"in %u tries; giving up\n", t->bt.idx,
					xtx_addr_str(&t->tr.servers[s], addr, sizeof(addr)),
					(unsigned long long)r->req_id, r->tx);
				return true;
			}
		}
	}
	return false;
}

/* Ops inside requests still unanswered: whether they ran is unknown. */
static uint64_t ops_outstanding(const struct kv_thread *t)
{
	uint64_t n = 0;
	unsigned int s, i;

	for (s = 0; s < t->win.nservers; s++)
		for (i = 0; i < XTX_DEDUPE_WINDOW; i++)
			if (t->win.srv[s].slot[i].req_id)
				n += t->win.srv[s].slot[i].msg.hdr.nops;
	return n;
}

/* The last thread of a --count run ends the run: the runner waits for its duration else. */
static void thread_exit_notify(void)
{
	/* once stopping, the runner no longer sleeps, and may have used up its handler */
	if (atomic_fetch_sub(&kv_running, 1) == 1 && kv_count_mode && !xtx_run_stopping())
		pthread_kill(kv_main_thread, SIGTERM);
}

static void *kv_thread_main(void *arg)
{
	struct kv_thread *t = arg;
	const struct kv_opts *o = t->o;
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
	now = xtx_now_ns();
	for (i = 0; i < o->pends; i++)
		pend_start(t, i, now);
	last_pub = now;
	for (;;) {
		now = xtx_now_ns();
		if (!t->stopping && xtx_run_stopping()) {
			t->stopping = true;
			t->at_stop = t->c;
			drain_end = now + o->drain_ns;
		}
		pack(t, now);
		next = xtx_reqwins_expire(&t->win, now, KV_MAX_WAIT_NS);
		if (!t->busy || (t->stopping && now >= drain_end))
			break;
		if (unreachable(t)) {
			t->c.errors++;
			break;
		}
		n = xtx_reqwins_step(&t->win, &t->tr, &t->c.sent, &t->c.retrans, recvv, next,
				     t->bt.idx);
		if (n < 0) {
			t->c.errors++;
			break;
		}
		now = xtx_now_ns();
		for (i = 0; i < (unsigned int)n; i++)
			handle_reply(t, &recvv[i], now);
		if (now - last_pub >= KV_PUBLISH_NS) {
			publish(t);
			last_pub = now;
		}
	}
	if (!t->stopping)
		t->at_stop = t->c;
	t->c.unanswered = ops_outstanding(t);
out:
	publish(t);
	free(rbuf);
	thread_exit_notify();
	return NULL;
}

/* ---- options ---- */

/* "G:I:U:D": four weights, not all zero. */
static int parse_mix(const char *s, struct kv_opts *o)
{
	char buf[64], *part, *save = NULL;
	unsigned int n = 0;

	if (strlen(s) >= sizeof(buf)) {
		fprintf(stderr, "Error: --mix: '%s' is too long\n", s);
		return -1;
	}
	strcpy(buf, s);
	o->mix_sum = 0;
	for (part = strtok_r(buf, ":", &save); part; part = strtok_r(NULL, ":", &save)) {
		if (n == KV_NOPS) {
			n++;
			break;
		}
		if (xtx_parse_u32("--mix", part, 0, KV_MIX_MAX, &o->mix[n]))
			return -1;
		o->mix_sum += o->mix[n++];
	}
	/* strtok would also take "1::2:3:4" or a trailing ':' */
	if (n != KV_NOPS || strstr(s, "::") || s[0] == ':' || s[strlen(s) - 1] == ':') {
		fprintf(stderr, "Error: --mix: '%s' is not GET:INSERT:UPDATE:DELETE\n", s);
		return -1;
	}
	if (!o->mix_sum) {
		fprintf(stderr, "Error: --mix: the weights are all zero\n");
		return -1;
	}
	return 0;
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

static int parse_args(int argc, char **argv, struct kv_opts *o)
{
	enum { OPT_TABLES = 256, OPT_PRELOAD, OPT_PRELOAD_ONLY, OPT_VALUE_SIZE };
	static const struct option longopts[] = {
		{ "servers", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'n' },
		{ "keys", required_argument, NULL, 'K' },
		{ "key-base", required_argument, NULL, 'b' },
		{ "tables", required_argument, NULL, OPT_TABLES },
		{ "ops", required_argument, NULL, 'k' },
		{ "inflight", required_argument, NULL, 'w' },
		{ "mix", required_argument, NULL, 'm' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "zipf", required_argument, NULL, 'z' },
		{ "exist-pct", required_argument, NULL, 'e' },
		{ "preload", no_argument, NULL, OPT_PRELOAD },
		{ "preload-only", no_argument, NULL, OPT_PRELOAD_ONLY },
		{ "value-size", required_argument, NULL, OPT_VALUE_SIZE },
		{ "check", no_argument, NULL, 'C' },
		{ "dump-file", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *servers = NULL;
	uint32_t port = XTX_DEFAULT_PORT;
	bool base_given = false, duration_given = false;
	uint32_t value_size;
	uint64_t drain;
	int c;

	o->threads = 1;
	o->duration_ns = 5000000000ull;
	o->keys = 1000;
	o->tables = 1;
	o->ops = 8;
	o->inflight = 8;
	o->timeout_ns = 20000000ull;
	o->exist_pct = 100;
	o->value_size = -1;
	if (parse_mix("50:20:20:10", o))
		return -1;
	while ((c = getopt_long(argc, argv, "s:p:t:d:n:K:b:k:w:m:c:T:z:e:Cf:jvh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			servers = optarg;
			break;
		case 'p':
			if (xtx_parse_u32("--port", optarg, 1, 65535, &port))
				return -1;
			break;
		case 't':
			if (xtx_parse_u32("--threads", optarg, 1, KV_MAX_THREADS, &o->threads))
				return -1;
			break;
		case 'd':
			if (xtx_parse_duration("--duration", optarg, &o->duration_ns))
				return -1;
			duration_given = true;
			break;
		case 'n':
			if (xtx_parse_u64("--count", optarg, 1, UINT64_MAX, &o->count))
				return -1;
			break;
		case 'K':
			if (xtx_parse_u32("--keys", optarg, 1, KV_MAX_KEYS, &o->keys))
				return -1;
			break;
		case 'b':
			if (xtx_parse_u64("--key-base", optarg, 0, UINT64_MAX, &o->key_base))
				return -1;
			break;
		case OPT_TABLES:
			if (xtx_parse_u32("--tables", optarg, 1, XTX_MAX_TABLES, &o->tables))
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
		case 'm':
			if (parse_mix(optarg, o))
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
		case 'z':
			if (parse_theta("--zipf", optarg, XTX_ZIPF_THETA_MAX, &o->theta))
				return -1;
			break;
		case 'e':
			if (xtx_parse_u32("--exist-pct", optarg, 0, 100, &o->exist_pct))
				return -1;
			break;
		case OPT_PRELOAD:
			o->preload = true;
			break;
		case OPT_PRELOAD_ONLY:
			o->preload = o->preload_only = true;
			break;
		case OPT_VALUE_SIZE:
			if (xtx_parse_u32("--value-size", optarg, 0, XTX_VALUE_INLINE, &value_size))
				return -1;
			o->value_size = (int)value_size;
			break;
		case 'C':
			o->check = true;
			break;
		case 'f':
			o->dump_file = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'v':
			xtx_log_level++;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "Error: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!servers) {
		fprintf(stderr, "Error: --servers is required\n");
		usage(stderr);
		return -1;
	}
	if (duration_given && o->count) {
		fprintf(stderr, "Error: --duration and --count exclude each other\n");
		return -1;
	}
	if (o->preload_only && (duration_given || o->count)) {
		fprintf(stderr, "Error: --preload-only runs nothing to give a --%s\n",
			o->count ? "count" : "duration");
		return -1;
	}
	if (o->count)
		o->duration_ns = 0;
	else if (!o->duration_ns) {
		fprintf(stderr, "Error: --duration must be above 0\n");
		return -1;
	}
	if (o->timeout_ns < 1000) {
		fprintf(stderr, "Error: --timeout must be at least 1us\n");
		return -1;
	}
	if (o->key_base > UINT64_MAX - (uint64_t)o->threads * o->keys) {
		fprintf(stderr, "Error: --key-base: %u threads of %u keys from %llu pass 2^64\n",
			o->threads, o->keys, (unsigned long long)o->key_base);
		return -1;
	}
	if (o->dump_file && !o->check) {
		fprintf(stderr, "Error: --dump-file needs --check: the dump is the model's\n");
		return -1;
	}
	if (base_given && o->client_base + o->threads > XTX_MAX_CLIENTS_LIMIT) {
		fprintf(stderr, "Error: --client-id: %u + %u threads exceeds the limit of %u\n",
			o->client_base, o->threads, XTX_MAX_CLIENTS_LIMIT);
		return -1;
	}
	if (!base_given)
		o->client_base = xtx_client_base_default(o->threads);
	o->exist_keys = (uint32_t)((uint64_t)o->keys * o->exist_pct / 100);
	if (o->exist_pct && o->exist_pct < 100 && (!o->exist_keys || o->exist_keys == o->keys)) {
		fprintf(stderr, "Error: --exist-pct %u of %u keys leaves no key %s\n", o->exist_pct,
			o->keys, o->exist_keys ? "missing" : "loaded");
		return -1;
	}
	if (o->preload && !o->exist_keys) {
		fprintf(stderr, "Error: --preload with --exist-pct 0 has no key to load\n");
		return -1;
	}
	o->skewed = o->theta > 0 || o->exist_pct < 100;
	o->free_keys = o->skewed && !o->check;
	if ((o->exist_keys && xtx_zipf_init(&o->zipf_exist, o->exist_keys, o->theta)) ||
	    (o->exist_keys < o->keys &&
	     xtx_zipf_init(&o->zipf_missing, o->keys - o->exist_keys, o->theta))) {
		fprintf(stderr, "Error: --zipf %g over %u keys\n", o->theta, o->keys);
		return -1;
	}
	/*
	 * Stopping gives lost requests some retransmissions; --check more,
	 * since an op whose answer never came leaves its key unknown.
	 */
	drain = o->timeout_ns * (o->check ? 100 : 10);
	o->drain_ns = drain > (o->check ? 2000000000ull : 200000000ull) ?
			      drain : (o->check ? 2000000000ull : 200000000ull);
	o->port = port;
	if (xtx_parse_servers("--servers", servers, port, &o->servers, &o->nservers))
		return -1;
	/* enough ops going to fill every window with full packets, one per key at most */
	o->pends = o->nservers * o->inflight * o->ops;
	if (o->pends > o->keys)
		o->pends = o->keys;
	return 0;
}

/* ---- reporting ---- */

/* Collects what the threads published since the last call. */
static void gather(struct kv_thread *th, unsigned int n, struct kv_counts *sum,
		   struct xtx_hist *h)
{
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	xtx_hist_reset(h);
	for (i = 0; i < n; i++) {
		bench_gather(&th[i].bt, (uint64_t *)sum, (const uint64_t *)&th[i].pub,
			     KV_NCOUNTS, h);
	}
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

struct kv_progress {
	struct kv_thread *th;
	unsigned int nthreads;
	const char *phase;	/* prefix of the lines: "" or "preload " */
	struct kv_counts prev;
};

/* A progress line on stderr for the second just over. */
static void progress_tick(void *ctx, unsigned int sec, double dt)
{
	struct kv_progress *p = ctx;
	struct kv_counts cur;
	struct xtx_hist h;

	gather(p->th, p->nthreads, &cur, &h);
	fprintf(stderr,
		"%st=%us  kv_ops/s=%.0f  pkts/s=%.0f  ops/pkt=%.1f  p50=%.1fus p99=%.1fus  "
		"retries=%llu  retrans=%llu",
		p->phase, sec, (double)(cur.ops - p->prev.ops) / dt,
		(double)(cur.packets - p->prev.packets) / dt,
		ratio(cur.packet_ops - p->prev.packet_ops, cur.packets - p->prev.packets),
		(double)xtx_hist_percentile(&h, 50) / 1e3,
		(double)xtx_hist_percentile(&h, 99) / 1e3,
		(unsigned long long)(cur.retries - p->prev.retries),
		(unsigned long long)(cur.retrans - p->prev.retrans));
	if (cur.mismatches)
		fprintf(stderr, "  MISMATCHES=%llu", (unsigned long long)cur.mismatches);
	if (cur.errors)
		fprintf(stderr, "  errors=%llu", (unsigned long long)cur.errors);
	fputc('\n', stderr);
	p->prev = cur;
}

static void print_op_counts_json(const char *name, const struct kv_counts *c)
{
	unsigned int op, st;

	printf("\"%s\":{", name);
	for (op = 0; op < KV_NOPS; op++) {
		const char *sep = "";

		printf("%s\"%s\":{", op ? "," : "", op_name(XTX_OP_GET + op));
		for (st = 0; st < XTX_ST__COUNT; st++) {
			/* ok always, so a reader finds the field even when it is 0 */
			if (!c->st[op][st] && st != XTX_ST_OK)
				continue;
			printf("%s\"%s\":%llu", sep, xtx_status_name(st),
			       (unsigned long long)c->st[op][st]);
			sep = ",";
		}
		printf("}");
	}
	printf("},");
}

static void print_hist_json(const char *name, const struct xtx_hist *h)
{
	printf("\"%s\":{\"avg\":%.2f,\"p50\":%.2f,\"p99\":%.2f,\"p999\":%.2f,\"max\":%.2f},", name,
	       xtx_hist_mean(h) / 1e3, xtx_hist_percentile(h, 50) / 1e3,
	       xtx_hist_percentile(h, 99) / 1e3, xtx_hist_percentile(h, 99.9) / 1e3,
	       h->max / 1e3);
}

static void print_hist_text(const char *name, const struct xtx_hist *h)
{
	printf("%s avg=%.1f p50=%.1f p99=%.1f p999=%.1f max=%.1f\n", name, xtx_hist_mean(h) / 1e3,
	       xtx_hist_percentile(h, 50) / 1e3, xtx_hist_percentile(h, 99) / 1e3,
	       xtx_hist_percentile(h, 99.9) / 1e3, h->max / 1e3);
}

/* What the --preload phase did, summed over the threads. */
struct kv_preload {
	bool ran;
	double secs;
	struct kv_counts c;
};

/* Last in the object: flat readers that take a name's first match find the run's own fields. */
static void print_preload_json(const struct kv_opts *o, const struct kv_preload *pl)
{
	if (!pl->ran) {
		printf("\"preload\":null");
		return;
	}
	printf("\"preload\":{\"keys\":%llu,\"duration_s\":%.3f,\"keys_per_s\":%.1f,"
	       "\"packets\":%llu,\"retries\":%llu,\"retransmits\":%llu,\"errors\":%llu,",
	       (unsigned long long)o->exist_keys * o->threads, pl->secs,
	       pl->secs > 0 ? pl->c.ops / pl->secs : 0.0, (unsigned long long)pl->c.packets,
	       (unsigned long long)pl->c.retries, (unsigned long long)pl->c.retrans,
	       (unsigned long long)pl->c.errors);
	print_op_counts_json("statuses", &pl->c);
	printf("\"kv_ops\":%llu}", (unsigned long long)pl->c.ops);
}

static void print_summary(const struct kv_opts *o, const struct kv_counts *c,
			  const struct kv_counts *at_stop, const struct xtx_hist *h,
			  const struct xtx_hist *oph, double run_s, uint64_t stray, uint64_t live,
			  const struct kv_preload *pl)
{
	/* --preload-only: no run, and rates of 0 rather than NaN, which JSON lacks */
	double ops_s = run_s > 0 ? at_stop->ops / run_s : 0;
	double pkts_s = run_s > 0 ? at_stop->packets / run_s : 0;
	double per_pkt = ratio(c->packet_ops, c->packets);
	unsigned int op, st;

	if (o->json) {
		printf("{\"bench\":\"kv\",\"servers\":%u,\"threads\":%u,\"keys_per_thread\":%u,"
		       "\"key_base\":%llu,\"tables\":%u,\"max_ops_per_packet\":%u,\"inflight\":%u,"
		       "\"mix\":\"%u:%u:%u:%u\",\"count_per_thread\":%llu,\"client_id_base\":%u,"
		       "\"duration_s\":%.3f,\"sent_packets\":%llu,\"replies\":%llu,"
		       "\"packets\":%llu,\"packets_per_s\":%.1f,\"ops_per_packet\":%.2f,"
		       "\"kv_ops\":%llu,\"kv_ops_per_s\":%.1f,",
		       o->nservers, o->threads, o->keys, (unsigned long long)o->key_base, o->tables,
		       o->ops, o->inflight, o->mix[0], o->mix[1], o->mix[2], o->mix[3],
		       (unsigned long long)o->count,
		       o->client_base, run_s, (unsigned long long)c->sent,
		       (unsigned long long)c->replies, (unsigned long long)c->packets, pkts_s,
		       per_pkt, (unsigned long long)c->ops, ops_s);
		printf("\"zipf\":%.3f,\"exist_pct\":%u,\"exist_keys_per_thread\":%u,"
		       "\"value_size\":%d,\"key_choice\":\"%s\",\"to_missing\":%llu,"
		       "\"missing_share\":%.4f,\"redraws\":%llu,\"gave_up\":%llu,",
		       o->theta, o->exist_pct, o->exist_keys, o->value_size,
		       o->free_keys ? "free" : "idle", (unsigned long long)c->to_missing,
		       ratio(c->to_missing, c->started),
		       (unsigned long long)c->redraws, (unsigned long long)c->gave_up);
		print_op_counts_json("ops", c);
		print_hist_json("latency_us", h);
		print_hist_json("op_latency_us", oph);
		printf("\"retries\":%llu,\"retransmits\":%llu,\"duplicates\":%llu,"
		       "\"dropped\":%llu,\"unanswered\":%llu,\"stray\":%llu,\"errors\":%llu,"
		       "\"check\":%s,\"mismatches\":%llu,\"live_keys\":%llu,",
		       (unsigned long long)c->retries, (unsigned long long)c->retrans,
		       (unsigned long long)c->dups, (unsigned long long)c->dropped,
		       (unsigned long long)c->unanswered, (unsigned long long)stray,
		       (unsigned long long)c->errors, o->check ? "true" : "false",
		       (unsigned long long)c->mismatches, (unsigned long long)live);
		print_preload_json(o, pl);
		printf("}\n");
		return;
	}
	printf("kv: servers=%u threads=%u keys=%u tables=%u ops=%u inflight=%u mix=%u:%u:%u:%u "
	       "client_ids=%u..%u duration=%.2fs\n",
	       o->nservers, o->threads, o->keys, o->tables, o->ops, o->inflight, o->mix[0],
	       o->mix[1], o->mix[2], o->mix[3], o->client_base, o->client_base + o->threads - 1,
	       run_s);
	if (o->skewed || o->value_size >= 0)
		printf("zipf=%.3f  exist_pct=%u (%u keys per thread)  value_size=%d  keys=%s  "
		       "to_missing=%llu  redraws=%llu\n",
		       o->theta, o->exist_pct, o->exist_keys, o->value_size,
		       o->free_keys ? "free" : "idle", (unsigned long long)c->to_missing,
		       (unsigned long long)c->redraws);
	if (pl->ran) {
		const uint64_t *ins = pl->c.st[XTX_OP_INSERT - XTX_OP_GET];

		printf("preload: keys=%llu  %.2fs  keys/s=%.0f  retries=%llu  errors=%llu",
		       (unsigned long long)o->exist_keys * o->threads, pl->secs,
		       pl->secs > 0 ? pl->c.ops / pl->secs : 0.0,
		       (unsigned long long)pl->c.retries, (unsigned long long)pl->c.errors);
		for (st = 0; st < XTX_ST__COUNT; st++)
			if (ins[st])
				printf(" %s=%llu", xtx_status_name(st), (unsigned long long)ins[st]);
		putchar('\n');
	}
	printf("sent_packets=%llu  replies=%llu\n", (unsigned long long)c->sent,
	       (unsigned long long)c->replies);
	printf("packets=%llu  packets/s=%.0f  ops_per_packet=%.2f\n",
	       (unsigned long long)c->packets, pkts_s, per_pkt);
	printf("kv_ops=%llu  kv_ops/s=%.0f\n", (unsigned long long)c->ops, ops_s);
	for (op = 0; op < KV_NOPS; op++) {
		printf("  %-8s", op_name(XTX_OP_GET + op));
		for (st = 0; st < XTX_ST__COUNT; st++)
			if (c->st[op][st] || st == XTX_ST_OK)
				printf(" %s=%llu", xtx_status_name(st),
				       (unsigned long long)c->st[op][st]);
		putchar('\n');
	}
	print_hist_text("latency_us", h);
	print_hist_text("op_latency_us", oph);
	printf("retries=%llu  retransmits=%llu  duplicates=%llu  dropped=%llu  unanswered=%llu  "
	       "stray=%llu  errors=%llu\n",
	       (unsigned long long)c->retries, (unsigned long long)c->retrans,
	       (unsigned long long)c->dups, (unsigned long long)c->dropped,
	       (unsigned long long)c->unanswered, (unsigned long long)stray,
	       (unsigned long long)c->errors);
	if (c->gave_up)
		printf("gave_up=%llu (still RETRY after %llus)\n", (unsigned long long)c->gave_up,
		       (unsigned long long)(KV_OP_GIVEUP_NS / 1000000000ull));
	if (o->check)
		printf("check: mismatches=%llu  live_keys=%llu\n",
		       (unsigned long long)c->mismatches, (unsigned long long)live);
}

/* The models' live keys, merged and sorted, to o->dump_file.  0 or -1 after printing why. */
static int write_dump(const struct kv_opts *o, struct kv_thread *th)
{
	struct kvmodel_item *items = NULL;
	size_t n = 0;
	unsigned int i;
	FILE *f;
	int err = 0;

	for (i = 0; i < o->threads && !err; i++)
		err = kvmodel_collect(th[i].model, &items, &n);
	if (err) {
		fprintf(stderr, "Error: --dump-file: %s\n", strerror(-err));
		free(items);
		return -1;
	}
	kvmodel_sort(items, n);
	f = fopen(o->dump_file, "w");
	if (!f || kvmodel_write_dump(f, items, n) || fclose(f)) {
		fprintf(stderr, "Error: --dump-file %s: %s\n", o->dump_file, strerror(errno));
		if (f)
			fclose(f);
		free(items);
		return -1;
	}
	pr_info("kv: %zu live keys written to %s\n", n, o->dump_file);
	free(items);
	return 0;
}

/* ---- setup ---- */

static void free_threads(struct kv_thread *th, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		xtx_transport_close(&th[i].tr);
		xtx_reqwins_free(&th[i].win);
		kvmodel_free(th[i].model);
		free(th[i].key_server);
		free(th[i].idle);
		free(th[i].idle_pos);
		free(th[i].p);
		free(th[i].sendq);
		free(th[i].opmap);
		pthread_mutex_destroy(&th[i].bt.lock);
	}
	free(th);
}

/* Returns the threads' state, or NULL after printing why (and freeing it all). */
static struct kv_thread *setup_threads(const struct kv_opts *o)
{
	struct kv_thread *th = calloc(o->threads, sizeof(*th));
	uint64_t first = xtx_req_id_start();
	unsigned int i, s;
	uint32_t k;

	if (!th) {
		fprintf(stderr, "Error: allocating threads: %s\n", strerror(ENOMEM));
		return NULL;
	}
	for (i = 0; i < o->threads; i++) {
		th[i].tr.fd = -1;
		pthread_mutex_init(&th[i].bt.lock, NULL);
	}
	for (i = 0; i < o->threads; i++) {
		struct kv_thread *t = &th[i];

		t->bt.idx = i;
		t->o = o;
		t->bt.client_id = o->client_base + i;
		t->rng = first * 2654435761u + i + 1;
		t->key_base = o->key_base + (uint64_t)i * o->keys;
		t->key_server = calloc(o->keys, sizeof(*t->key_server));
		t->idle = calloc(o->keys, sizeof(*t->idle));
		t->idle_pos = calloc(o->keys, sizeof(*t->idle_pos));
		t->p = calloc(o->pends, sizeof(*t->p));
		t->sendq = calloc(o->nservers, sizeof(*t->sendq));
		t->opmap = calloc((size_t)o->nservers * XTX_DEDUPE_WINDOW * XTX_MAX_OPS,
				  sizeof(*t->opmap));
		if (o->check)
			t->model = kvmodel_new(0, 0);
		if (!t->key_server || !t->idle || !t->idle_pos || !t->p || !t->sendq ||
		    !t->opmap || (o->check && !t->model) ||
		    xtx_reqwins_init(&t->win, o->nservers, t->bt.client_id, first, o->inflight,
				     o->timeout_ns)) {
			fprintf(stderr, "Error: allocating thread state: %s\n", strerror(ENOMEM));
			goto fail;
		}
		for (k = 0; k < o->keys; k++) {
			uint64_t key = key_of(t, k);

			t->key_server[k] = xtx_shard_of(xtx_hash(table_of(t, key), key),
							o->nservers);
			idle_put(t, k);
		}
		for (s = 0; s < o->nservers; s++)
			t->sendq[s].head = t->sendq[s].tail = PEND_NONE;
		if (xtx_transport_open(&t->tr, o->servers, o->nservers))
			goto fail;
	}
	return th;
fail:
	free_threads(th, o->threads);
	return NULL;
}

/* Everything a phase counted, so the next one starts from zero. */
static void thread_reset(struct kv_thread *t)
{
	memset(&t->c, 0, sizeof(t->c));
	memset(&t->at_stop, 0, sizeof(t->at_stop));
	xtx_hist_reset(&t->bt.total);
	xtx_hist_reset(&t->bt.recent);
	xtx_hist_reset(&t->op_lat);
	pthread_mutex_lock(&t->bt.lock);
	memset(&t->pub, 0, sizeof(t->pub));
	xtx_hist_reset(&t->bt.interval);
	pthread_mutex_unlock(&t->bt.lock);
	t->started = 0;
	t->stopping = false;
}

/*
 * --preload: every thread INSERTs its keys 0..exist_keys-1, K per packet,
 * through the same machinery as the run (so --check's model learns them),
 * then the counters start afresh for the run.  Returns 0, or -1 after
 * printing why the load is incomplete.
 */
static int preload(const struct kv_opts *o, struct kv_thread *th, struct kv_progress *prog,
		   struct kv_preload *pl)
{
	struct xtx_run run = {
		.nthreads = o->threads,
		.fn = kv_thread_main,
		.args = th,
		.arg_size = sizeof(*th),
		/* the threads end when their keys are in, the last one signals */
		.duration_ns = KV_COUNT_MAX_NS,
		.tick = progress_tick,
		.ctx = prog,
	};
	uint64_t start, stop, want = (uint64_t)o->exist_keys * o->threads;
	unsigned int i;

	for (i = 0; i < o->threads; i++) {
		th[i].preloading = true;
		th[i].preload_next = 0;
	}
	prog->phase = "preload ";
	memset(&prog->prev, 0, sizeof(prog->prev));
	kv_count_mode = true;
	atomic_store(&kv_running, o->threads);
	if (xtx_run_threads(&run, &start, &stop))
		return -1;
	pl->ran = true;
	pl->secs = (double)(stop - start) / 1e9;
	for (i = 0; i < o->threads; i++) {
		counts_add(&pl->c, &th[i].c);
		th[i].preloading = false;
		thread_reset(&th[i]);
	}
	pr_info("kv: preloaded %llu keys in %.2fs (%.0f keys/s)\n", (unsigned long long)pl->c.ops,
		pl->secs, pl->secs > 0 ? pl->c.ops / pl->secs : 0.0);
	if (pl->c.ops + pl->c.gave_up < want || pl->c.errors || pl->c.mismatches) {
		fprintf(stderr, "Error: --preload: %llu of %llu keys answered, %llu errors, "
			"%llu disagreeing with the model\n", (unsigned long long)pl->c.ops,
			(unsigned long long)want, (unsigned long long)pl->c.errors,
			(unsigned long long)pl->c.mismatches);
		return -1;
	}
	return 0;
}

int bench_kv_main(int argc, char **argv)
{
	struct kv_counts total = {}, at_stop = {};
	struct kv_opts o = {};
	struct kv_progress prog = {};
	struct kv_preload pl = {};
	struct kv_thread *th;
	struct xtx_run run;
	struct xtx_hist h, oph;
	uint64_t start, stop, stray = 0, live = 0;
	unsigned int i, s;
	int rc;

	rc = parse_args(argc, argv, &o);
	if (rc) {
		free(o.servers);
		return rc > 0 ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
	}
	th = setup_threads(&o);
	if (!th) {
		free(o.servers);
		return BENCH_EXIT_FAIL;
	}
	pr_info("kv: client ids %u..%u, first request id %llu, %u ops going per thread\n",
		o.client_base, o.client_base + o.threads - 1,
		(unsigned long long)th[0].win.srv[0].first_id, o.pends);

	prog.th = th;
	prog.nthreads = o.threads;
	kv_main_thread = pthread_self();
	atomic_store(&kv_mismatch_reports, 0);
	if (o.preload && preload(&o, th, &prog, &pl)) {
		rc = BENCH_EXIT_FAIL;
		goto out;
	}
	prog.phase = "";
	memset(&prog.prev, 0, sizeof(prog.prev));
	kv_count_mode = o.count != 0;
	atomic_store(&kv_running, o.threads);
	run = (struct xtx_run){
		.nthreads = o.threads,
		.fn = kv_thread_main,
		.args = th,
		.arg_size = sizeof(*th),
		/*
		 * --count: the threads end on their own and the last one ends
		 * the run with SIGTERM, which the runner takes like Ctrl-C.
		 */
		.duration_ns = o.count ? KV_COUNT_MAX_NS : o.duration_ns,
		.tick = progress_tick,
		.ctx = &prog,
	};
	start = stop = 0;
	if (!o.preload_only && xtx_run_threads(&run, &start, &stop)) {
		rc = BENCH_EXIT_FAIL;
		goto out;
	}

	xtx_hist_reset(&h);
	xtx_hist_reset(&oph);
	for (i = 0; i < o.threads; i++) {
		counts_add(&total, &th[i].c);
		counts_add(&at_stop, &th[i].at_stop);
		xtx_hist_merge(&h, &th[i].bt.total);
		xtx_hist_merge(&oph, &th[i].op_lat);
		stray += th[i].tr.stray + th[i].tr.truncated;
		if (th[i].model)
			live += kvmodel_live(th[i].model);
		pr_debug("thread %u (client %u): sent=%llu replies=%llu kv_ops=%llu\n", i,
			 th[i].bt.client_id, (unsigned long long)th[i].c.sent,
			 (unsigned long long)th[i].c.replies, (unsigned long long)th[i].c.ops);
	}
	print_summary(&o, &total, &at_stop, &h, &oph, (double)(stop - start) / 1e9, stray, live,
		      &pl);
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
	if (o.dump_file && write_dump(&o, th))
		rc = BENCH_EXIT_FAIL;
	if (total.mismatches) {
		fprintf(stderr, "Error: --check: %llu answers disagree with the model\n",
			(unsigned long long)total.mismatches);
		rc = BENCH_EXIT_FAIL;
	}
	if (o.check && total.unanswered) {
		fprintf(stderr, "Error: --check: %llu ops were never answered, so whether they "
			"ran is unknown\n", (unsigned long long)total.unanswered);
		rc = BENCH_EXIT_FAIL;
	}
	if (o.count && total.ops + total.dropped < o.count * o.threads && !total.errors)
		pr_warn("Warning: the run was interrupted: %llu of %llu ops done\n",
			(unsigned long long)total.ops,
			(unsigned long long)(o.count * o.threads));
	if (total.errors) {
		fprintf(stderr, "Error: %llu bad replies or failures\n",
			(unsigned long long)total.errors);
		rc = BENCH_EXIT_FAIL;
	}
	if (!total.replies && !(o.preload_only && pl.c.replies)) {
		fprintf(stderr, "Error: no reply arrived; is a server listening on port %u?\n",
			o.port);
		rc = BENCH_EXIT_FAIL;
	}
out:
	free_threads(th, o.threads);
	free(o.servers);
	return rc;
}
