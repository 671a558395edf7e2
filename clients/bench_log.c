// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench log: LOG_APPEND requests kept in flight per server; counts appends and LOG_FULLs. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xtx/proto.h>
#include <xtx/log.h>
#include <xtx/maps.h>
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

#define LOGB_MAX_THREADS	256
/* How often a thread hands its numbers to the progress reporter. */
#define LOGB_PUBLISH_NS		(50 * 1000 * 1000ull)
/* Longest a thread sleeps in receive, so it notices the stop flag. */
#define LOGB_MAX_WAIT_NS	(1000 * 1000ull)
/* SmallBank's row size; also within xtxd's default --value-size. */
#define LOGB_VALUE_DEFAULT	8

struct logb_opts {
	struct sockaddr_in *servers;
	unsigned int nservers;
	uint16_t port;
	uint32_t threads;
	uint64_t duration_ns;
	uint32_t ops;
	uint32_t inflight;
	uint32_t value_size;
	uint32_t client_base;
	uint64_t timeout_ns;
	bool json;
};

/* Only u64 fields: added and copied as an array. */
struct logb_counts {
	uint64_t sent;		/* datagrams sent, retransmissions included */
	uint64_t replies;	/* datagrams received from a server */
	uint64_t packets;	/* requests answered */
	uint64_t appends;	/* ops answered OK: entries in a server's log */
	uint64_t log_full;	/* ops answered LOG_FULL: the drain fell behind */
	uint64_t retrans;
	uint64_t dups;		/* replies to requests already answered */
	uint64_t errors;	/* replies that were wrong */
	uint64_t unanswered;	/* requests given up at the end */
};

#define LOGB_NCOUNTS	(sizeof(struct logb_counts) / sizeof(uint64_t))

struct logb_thread {
	struct bench_thread bt;
	const struct logb_opts *o;
	struct xtx_transport tr;
	struct xtx_reqwins win;
	uint64_t seq;		/* per-thread txn sequence, also key and version */

	/* Owned by the thread. */
	struct logb_counts c;
	struct logb_counts at_stop;	/* c when the stop was seen: rates use this */

	/* Read by the progress reporter under bt.lock. */
	struct logb_counts pub;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench log --servers IP[,IP...] [options]\n"
		"Keeps W requests of K LOG_APPEND ops in flight to every server from\n"
		"every thread.  Each op is the single (last) write of a transaction of\n"
		"its own, with increasing keys and versions and a B-byte value.  Counts\n"
		"appends (OK) and LOG_FULL answers: LOG_FULL is not an error, it says\n"
		"xtxd's drain fell behind, which is what this measures.  Lost requests\n"
		"are retransmitted with the same id after --timeout.  Progress goes to\n"
		"stderr once a second, the summary to stdout.  Exits 1 if a reply was\n"
		"wrong or none arrived.\n"
		"\n"
		"Options:\n"
		"  -s, --servers IP[,IP...]  servers to log to (IPv4)\n"
		"  -p, --port N              server UDP port (default %u)\n"
		"  -t, --threads N           threads, each with its own socket and client id\n"
		"                            (default 1, at most %u)\n"
		"  -d, --duration S          how long to send new requests (default 5s)\n"
		"  -k, --ops K               LOG_APPEND ops per request, 1..%u (default 1)\n"
		"  -w, --inflight W          requests outstanding per server and thread,\n"
		"                            1..%u (default 8)\n"
		"  -b, --value-size B        bytes of value per append, 0..%u (default %u;\n"
		"                            at most the server's --value-size)\n"
		"  -c, --client-id BASE      thread i uses client id BASE+i (default derived\n"
		"                            from the pid, below %u)\n"
		"  -T, --timeout DUR         retransmit after this long without a reply\n"
		"                            (default 20ms)\n"
		"  -j, --json                one JSON object on stdout instead of text\n"
		"  -v, --verbose             more output\n"
		"  -h, --help                this text\n"
		"\n"
		"Example: xtxbench log --servers 10.77.0.2 --ops 16 --duration 5\n",
		XTX_DEFAULT_PORT, LOGB_MAX_THREADS, XTX_MAX_OPS, XTX_REQWIN_MAX_INFLIGHT,
		XTX_VALUE_MAX, LOGB_VALUE_DEFAULT, XTX_MAX_CLIENTS_DEFAULT);
}

static void counts_add(struct logb_counts *a, const struct logb_counts *b)
{
	bench_counts_add((uint64_t *)a, (const uint64_t *)b, LOGB_NCOUNTS);
}

static void publish(struct logb_thread *t)
{
	bench_publish(&t->bt, &t->pub, &t->c, sizeof(t->c));
}

/* Every bad reply is counted in c.errors. */
#define bad_reply(t, server, ...) \
	bench_bad_reply(&(t)->bt, &(t)->c.errors, &(t)->tr.servers[server], __VA_ARGS__)

/* Fills every server's window with new requests. */
static void issue(struct logb_thread *t)
{
	const struct logb_opts *o = t->o;
	struct xtx_req *r;
	unsigned int s, i;

	for (s = 0; s < o->nservers; s++) {
		/* The write's replica set: just the server it goes to. */
		__u16 replica = s;
		__u64 token = xtx_log_replicas_pack(&replica, 1);

		while ((r = xtx_reqwin_next(&t->win, s))) {
			for (i = 0; i < o->ops; i++) {
				uint64_t seq = ++t->seq;
				/* Keys differ across threads too, so no two entries alias. */
				uint64_t key = ((uint64_t)t->bt.idx << XTX_TXN_SEQ_BITS) |
					       (seq & ((1ull << XTX_TXN_SEQ_BITS) - 1));
				struct xtx_op *op = xtx_msg_add(&r->msg, XTX_OP_LOG_APPEND, 0, key);

				/* A txn per op: distinct ids keep the entries independent. */
				op->txn = xtx_txn_make(t->bt.client_id, seq);
				op->version = seq;
				op->flags = XTX_OPF_LOG_LAST;
				op->token = token;
				op->vlen = o->value_size;
				memset(op->value, (int)(seq & 0xff), o->value_size);
			}
			xtx_reqwin_submit(&t->win, s, r);
		}
	}
}

static void handle_reply(struct logb_thread *t, const struct xtx_dgram *d, uint64_t now)
{
	const struct xtx_msgbuf *m = d->buf;
	const struct xtx_hdr *h = &m->hdr;
	uint64_t ok = 0, full = 0;
	struct xtx_req *sl;
	unsigned int i;

	t->c.replies++;
	switch (xtx_reqwin_match(&t->win, d, &sl)) {
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
		goto done;
	case XTX_RW_ANSWER:
		break;
	}
	if (h->status != XTX_ST_OK) {
		bad_reply(t, d->server, "request %llu: status %s%s", (unsigned long long)h->req_id,
			  xtx_status_name(h->status),
			  h->status == XTX_ST_BAD_CLIENT ?
				  " (is --client-id below the server's max clients?)" :
			  h->status == XTX_ST_BAD_ARG ?
				  " (is --value-size within the server's?)" : "");
		goto done;
	}
	for (i = 0; i < h->nops; i++) {
		const struct xtx_op *rop = &m->ops[i];

		if (rop->opcode != XTX_OP_LOG_APPEND ||
		    (rop->status != XTX_ST_OK && rop->status != XTX_ST_LOG_FULL)) {
			bad_reply(t, d->server, "request %llu op %u: opcode %u, status %s",
				  (unsigned long long)h->req_id, i, rop->opcode,
				  xtx_status_name(rop->status));
			goto done;
		}
		if (rop->status == XTX_ST_OK)
			ok++;
		else
			full++;
	}
	/* Counted only once the whole reply checked out. */
	t->c.packets++;
	t->c.appends += ok;
	t->c.log_full += full;
	xtx_hist_add(&t->bt.recent, now - sl->first_ns);
done:
	/* Answered, rightly or not: a wrong answer is not retried. */
	xtx_reqwin_done(&t->win, d->server, sl);
}

static void *logb_thread_main(void *arg)
{
	struct logb_thread *t = arg;
	const struct logb_opts *o = t->o;
	struct xtx_dgram recvv[XTX_RECV_BATCH];
	struct xtx_msgbuf *rbuf = calloc(XTX_RECV_BATCH, sizeof(*rbuf));
	uint64_t now, next, last_pub, drain_end = 0;
	bool stopping = false;
	unsigned int i;
	int n, err;

	if (!rbuf) {
		fprintf(stderr, "Error: thread %u: %s\n", t->bt.idx, strerror(ENOMEM));
		t->c.errors++;
		goto out;
	}
	for (i = 0; i < XTX_RECV_BATCH; i++) {
		recvv[i].buf = &rbuf[i];
		recvv[i].cap = sizeof(rbuf[i]);
	}
	last_pub = xtx_now_ns();
	for (;;) {
		now = xtx_now_ns();
		if (!stopping && xtx_run_stopping()) {
			stopping = true;
			t->at_stop = t->c;
			/* Give lost requests a few retransmissions before giving up. */
			drain_end = now + (o->timeout_ns * 10 > 200000000ull ?
					   o->timeout_ns * 10 : 200000000ull);
		}
		if (!stopping)
			issue(t);
		next = xtx_reqwins_expire(&t->win, now, LOGB_MAX_WAIT_NS);
		if (stopping && (!xtx_reqwins_outstanding(&t->win) || now >= drain_end))
			break;
		err = xtx_reqwins_send(&t->win, &t->tr, &t->c.sent, &t->c.retrans);
		if (err) {
			fprintf(stderr, "Error: thread %u: sending: %s\n",
				t->bt.idx, strerror(-err));
			t->c.errors++;
			break;
		}
		now = xtx_now_ns();
		n = xtx_transport_recv(&t->tr, recvv, XTX_RECV_BATCH, next > now ? next - now : 0);
		if (n < 0) {
			fprintf(stderr, "Error: thread %u: receiving: %s\n",
				t->bt.idx, strerror(-n));
			t->c.errors++;
			break;
		}
		now = xtx_now_ns();
		for (i = 0; i < (unsigned int)n; i++)
			handle_reply(t, &recvv[i], now);
		if (now - last_pub >= LOGB_PUBLISH_NS) {
			publish(t);
			last_pub = now;
		}
	}
	if (!stopping)
		t->at_stop = t->c;
	t->c.unanswered = xtx_reqwins_outstanding(&t->win);
out:
	publish(t);
	free(rbuf);
	return NULL;
}

static int parse_args(int argc, char **argv, struct logb_opts *o)
{
	static const struct option longopts[] = {
		{ "servers", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "ops", required_argument, NULL, 'k' },
		{ "inflight", required_argument, NULL, 'w' },
		{ "value-size", required_argument, NULL, 'b' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *servers = NULL;
	uint32_t port = XTX_DEFAULT_PORT;
	bool base_given = false;
	int c;

	o->threads = 1;
	o->duration_ns = 5000000000ull;
	o->ops = 1;
	o->inflight = 8;
	o->value_size = LOGB_VALUE_DEFAULT;
	o->timeout_ns = 20000000ull;
	while ((c = getopt_long(argc, argv, "s:p:t:d:k:w:b:c:T:jvh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			servers = optarg;
			break;
		case 'p':
			if (xtx_parse_u32("--port", optarg, 1, 65535, &port))
				return -1;
			break;
		case 't':
			if (xtx_parse_u32("--threads", optarg, 1, LOGB_MAX_THREADS, &o->threads))
				return -1;
			break;
		case 'd':
			if (xtx_parse_duration("--duration", optarg, &o->duration_ns))
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
		case 'b':
			if (xtx_parse_u32("--value-size", optarg, 0, XTX_VALUE_MAX, &o->value_size))
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
	if (!o->duration_ns || o->timeout_ns < 1000) {
		fprintf(stderr, "Error: --duration must be above 0 and --timeout at least 1us\n");
		return -1;
	}
	if (base_given && o->client_base + o->threads > XTX_MAX_CLIENTS_LIMIT) {
		fprintf(stderr, "Error: --client-id: %u + %u threads exceeds the limit of %u\n",
			o->client_base, o->threads, XTX_MAX_CLIENTS_LIMIT);
		return -1;
	}
	if (!base_given)
		o->client_base = xtx_client_base_default(o->threads);
	o->port = port;
	return xtx_parse_servers("--servers", servers, port, &o->servers, &o->nservers);
}

/* Collects what the threads published since the last call. */
static void gather(struct logb_thread *th, unsigned int n, struct logb_counts *sum,
		   struct xtx_hist *h)
{
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	xtx_hist_reset(h);
	for (i = 0; i < n; i++) {
		bench_gather(&th[i].bt, (uint64_t *)sum, (const uint64_t *)&th[i].pub,
			     LOGB_NCOUNTS, h);
	}
}

struct logb_progress {
	struct logb_thread *th;
	unsigned int nthreads;
	struct logb_counts prev;
};

/* A progress line on stderr for the second just over. */
static void progress_tick(void *ctx, unsigned int sec, double dt)
{
	struct logb_progress *p = ctx;
	struct logb_counts cur;
	struct xtx_hist h;

	gather(p->th, p->nthreads, &cur, &h);
	fprintf(stderr,
		"t=%us  appends/s=%.0f  pkts/s=%.0f  p50=%.1fus p99=%.1fus  log_full=%llu  "
		"retrans=%llu", sec, (double)(cur.appends - p->prev.appends) / dt,
		(double)(cur.packets - p->prev.packets) / dt,
		(double)xtx_hist_percentile(&h, 50) / 1e3,
		(double)xtx_hist_percentile(&h, 99) / 1e3, (unsigned long long)cur.log_full,
		(unsigned long long)(cur.retrans - p->prev.retrans));
	if (cur.errors)
		fprintf(stderr, "  errors=%llu", (unsigned long long)cur.errors);
	fputc('\n', stderr);
	p->prev = cur;
}

static void print_summary(const struct logb_opts *o, const struct logb_counts *c,
			  const struct logb_counts *at_stop, const struct xtx_hist *h,
			  double run_s, uint64_t stray)
{
	double pk_s = at_stop->packets / run_s, ap_s = at_stop->appends / run_s;
	uint64_t answered = c->appends + c->log_full;
	double full_share = answered ? (double)c->log_full / answered : 0;

	if (o->json) {
		printf("{\"servers\":%u,\"threads\":%u,\"ops_per_request\":%u,\"inflight\":%u,"
		       "\"value_size\":%u,\"client_id_base\":%u,\"duration_s\":%.3f,"
		       "\"sent_packets\":%llu,\"replies\":%llu,\"packets\":%llu,"
		       "\"appends\":%llu,\"log_full\":%llu,\"log_full_share\":%.4f,"
		       "\"packets_per_s\":%.1f,\"appends_per_s\":%.1f,"
		       "\"latency_us\":{\"avg\":%.2f,\"p50\":%.2f,\"p99\":%.2f,\"p999\":%.2f,"
		       "\"max\":%.2f},\"retransmits\":%llu,\"duplicates\":%llu,"
		       "\"unanswered\":%llu,\"stray\":%llu,\"errors\":%llu}\n",
		       o->nservers, o->threads, o->ops, o->inflight, o->value_size,
		       o->client_base, run_s, (unsigned long long)c->sent,
		       (unsigned long long)c->replies, (unsigned long long)c->packets,
		       (unsigned long long)c->appends, (unsigned long long)c->log_full,
		       full_share, pk_s, ap_s, xtx_hist_mean(h) / 1e3,
		       xtx_hist_percentile(h, 50) / 1e3, xtx_hist_percentile(h, 99) / 1e3,
		       xtx_hist_percentile(h, 99.9) / 1e3, h->max / 1e3,
		       (unsigned long long)c->retrans, (unsigned long long)c->dups,
		       (unsigned long long)c->unanswered, (unsigned long long)stray,
		       (unsigned long long)c->errors);
		return;
	}
	printf("log: servers=%u threads=%u ops_per_request=%u inflight=%u value_size=%u "
	       "client_ids=%u..%u duration=%.2fs\n",
	       o->nservers, o->threads, o->ops, o->inflight, o->value_size, o->client_base,
	       o->client_base + o->threads - 1, run_s);
	printf("sent_packets=%llu\n", (unsigned long long)c->sent);
	printf("replies=%llu\n", (unsigned long long)c->replies);
	printf("packets=%llu  packets/s=%.0f\n", (unsigned long long)c->packets, pk_s);
	printf("appends=%llu  appends/s=%.0f\n", (unsigned long long)c->appends, ap_s);
	printf("log_full=%llu  (%.2f%% of answered ops)\n", (unsigned long long)c->log_full,
	       full_share * 100);
	printf("latency_us avg=%.1f p50=%.1f p99=%.1f p999=%.1f max=%.1f\n",
	       xtx_hist_mean(h) / 1e3, xtx_hist_percentile(h, 50) / 1e3,
	       xtx_hist_percentile(h, 99) / 1e3, xtx_hist_percentile(h, 99.9) / 1e3,
	       h->max / 1e3);
	printf("retransmits=%llu  duplicates=%llu  unanswered=%llu  stray=%llu  errors=%llu\n",
	       (unsigned long long)c->retrans, (unsigned long long)c->dups,
	       (unsigned long long)c->unanswered, (unsigned long long)stray,
	       (unsigned long long)c->errors);
}

static void free_threads(struct logb_thread *th, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		xtx_transport_close(&th[i].tr);
		xtx_reqwins_free(&th[i].win);
		pthread_mutex_destroy(&th[i].bt.lock);
	}
	free(th);
}

/* Returns the threads' state, or NULL after printing why (and freeing it all). */
static struct logb_thread *setup_threads(const struct logb_opts *o)
{
	struct logb_thread *th = calloc(o->threads, sizeof(*th));
	uint64_t first = xtx_req_id_start();
	unsigned int i;

	if (!th) {
		fprintf(stderr, "Error: allocating threads: %s\n", strerror(ENOMEM));
		return NULL;
	}
	for (i = 0; i < o->threads; i++) {
		th[i].tr.fd = -1;
		pthread_mutex_init(&th[i].bt.lock, NULL);
	}
	for (i = 0; i < o->threads; i++) {
		struct logb_thread *t = &th[i];

		t->bt.idx = i;
		t->o = o;
		t->bt.client_id = o->client_base + i;
		/*
		 * Txn ids start where request ids do (the clock), so a rerun
		 * with the same client id does not repeat its predecessor's.
		 */
		t->seq = first;
		/* Each (client id, server) pair numbers its requests on its own. */
		if (xtx_reqwins_init(&t->win, o->nservers, t->bt.client_id, first, o->inflight,
				     o->timeout_ns)) {
			fprintf(stderr, "Error: allocating thread state: %s\n", strerror(ENOMEM));
			goto fail;
		}
		if (xtx_transport_open(&t->tr, o->servers, o->nservers))
			goto fail;
	}
	return th;
fail:
	free_threads(th, o->threads);
	return NULL;
}

int bench_log_main(int argc, char **argv)
{
	struct logb_counts total = {}, at_stop = {};
	struct logb_opts o = {};
	struct logb_progress prog = {};
	struct xtx_run run;
	struct logb_thread *th;
	struct xtx_hist h;
	uint64_t start, stop, stray = 0;
	unsigned int i, s;
	int rc;

	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc > 0 ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;

	th = setup_threads(&o);
	if (!th) {
		free(o.servers);
		return BENCH_EXIT_FAIL;
	}
	pr_info("log: client ids %u..%u, first request id %llu\n", o.client_base,
		o.client_base + o.threads - 1, (unsigned long long)th[0].win.srv[0].first_id);

	prog.th = th;
	prog.nthreads = o.threads;
	run = (struct xtx_run){
		.nthreads = o.threads,
		.fn = logb_thread_main,
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
		pr_debug("thread %u (client %u): sent=%llu replies=%llu appends=%llu "
			 "log_full=%llu\n", i, th[i].bt.client_id,
			 (unsigned long long)th[i].c.sent, (unsigned long long)th[i].c.replies,
			 (unsigned long long)th[i].c.appends,
			 (unsigned long long)th[i].c.log_full);
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
	free(o.servers);
	return rc;
}
