// SPDX-License-Identifier: GPL-2.0-only
/* The window engine shared by xtxbench ping and log: threads keep requests in flight per server. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "bench.h"
#include "clock.h"
#include "ids.h"
#include "log.h"
#include "msgbuf.h"
#include "names.h"
#include "num.h"
#include "runner.h"
#include "servers.h"
#include "winbench.h"
#include "zkcluster.h"

/* How often a thread hands its numbers to the progress reporter. */
#define WB_PUBLISH_NS		(50 * 1000 * 1000ull)
/* Longest a thread sleeps in receive, so it notices the stop flag. */
#define WB_MAX_WAIT_NS		(1000 * 1000ull)
/* Room for the common long options, a subcommand's and the terminator. */
#define WB_MAX_LONGOPTS		32

#define WB_NCOUNTS		(sizeof(struct wb_counts) / sizeof(uint64_t))

static void counts_add(struct wb_counts *a, const struct wb_counts *b)
{
	bench_counts_add((uint64_t *)a, (const uint64_t *)b, WB_NCOUNTS);
}

static void publish(struct wb_thread *t)
{
	bench_publish(&t->bt, &t->pub, &t->c, sizeof(t->c));
}

/* Fills every server's window with new requests. */
static void issue(struct wb_thread *t)
{
	const struct wb_opts *o = t->o;
	struct xtx_req *r;
	unsigned int s;

	for (s = 0; s < o->nservers; s++) {
		while ((r = xtx_reqwin_next(&t->win, s))) {
			t->b->fill(t, s, r);
			xtx_reqwin_submit(&t->win, s, r);
		}
	}
}

static void handle_reply(struct wb_thread *t, const struct xtx_dgram *d, uint64_t now)
{
	const struct xtx_msgbuf *m = d->buf;
	const struct xtx_hdr *h = &m->hdr;
	struct xtx_req *sl;

	t->c.replies++;
	switch (xtx_reqwin_match(&t->win, d, &sl)) {
	case XTX_RW_FOREIGN:
		wb_bad_reply(t, d->server, "not an xtx reply for us (%zu bytes)", d->len);
		return;
	case XTX_RW_DUPLICATE:
		t->c.dups++;
		return;
	case XTX_RW_UNKNOWN:
		wb_bad_reply(t, d->server, "request id %llu was never sent",
			     (unsigned long long)h->req_id);
		return;
	case XTX_RW_RETRY:
		/* another configuration epoch: resent after the timeout, and counted */
		if (h->status == XTX_ST_EPOCH) {
			t->c.epoch_refused++;
			t->server_epoch = h->epoch;
		}
		return;
	case XTX_RW_MISMATCH:
		wb_bad_reply(t, d->server, "request %llu: %zu bytes, %u ops: not its reply",
			     (unsigned long long)h->req_id, d->len, h->nops);
		goto done;
	case XTX_RW_ANSWER:
		break;
	}
	if (h->status != XTX_ST_OK) {
		wb_bad_reply(t, d->server, "request %llu: status %s%s",
			     (unsigned long long)h->req_id, xtx_status_name(h->status),
			     h->status == XTX_ST_BAD_CLIENT ?
				     " (is --client-id below the server's max clients?)" :
			     t->b->status_hint ? t->b->status_hint(h->status) : "");
		goto done;
	}
	t->c.answered++;
	/* Latency only for replies that checked out, as the counts. */
	if (t->b->check(t, d, sl))
		xtx_hist_add(&t->bt.recent, now - sl->first_ns);
done:
	/* Answered, rightly or not: a wrong answer is not retried. */
	xtx_reqwin_done(&t->win, d->server, sl);
}

static void *wb_thread_main(void *arg)
{
	struct wb_thread *t = arg;
	const struct wb_opts *o = t->o;
	struct xtx_dgram recvv[XTX_RECV_BATCH];
	struct xtx_msgbuf *rbuf = calloc(XTX_RECV_BATCH, sizeof(*rbuf));
	uint64_t now, next, last_pub, drain_end = 0;
	bool stopping = false;
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
		next = xtx_reqwins_expire(&t->win, now, WB_MAX_WAIT_NS);
		if (stopping && (!xtx_reqwins_outstanding(&t->win) || now >= drain_end))
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
		if (now - last_pub >= WB_PUBLISH_NS) {
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

int wb_parse_args(int argc, char **argv, struct wb_opts *o, const struct wb_extra_opts *x,
		  void (*usage)(FILE *out))
{
	/*
	 * The extras go in after --inflight, where the subcommands had them,
	 * so getopt's ambiguity messages list the options in the same order.
	 */
	static const struct option head[] = {
		{ "servers", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "ops", required_argument, NULL, 'k' },
		{ "inflight", required_argument, NULL, 'w' },
	};
	static const struct option tail[] = {
		{ "zk", required_argument, NULL, WB_OPT_ZK },
		{ "zk-name", required_argument, NULL, WB_OPT_ZK_NAME },
		{ "transport", required_argument, NULL, WB_OPT_TRANSPORT },
		{ "client-id", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
	};
	struct option longopts[WB_MAX_LONGOPTS] = {};
	char shortopts[64];
	const char *servers = NULL, *zk = NULL, *zk_name = NULL;
	struct bench_zk_source src = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct xtx_cluster *cluster = NULL;
	uint32_t port = XTX_DEFAULT_PORT, replication = 0;
	int err;
	bool base_given = false;
	/* What the extras may fill: the tail and the terminator must still fit. */
	const unsigned int room = WB_MAX_LONGOPTS - sizeof(tail) / sizeof(tail[0]) - 1;
	unsigned int n = 0, i;
	int c;

	for (i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		longopts[n++] = head[i];
	for (i = 0; x && x->longopts[i].name && n < room; i++)
		longopts[n++] = x->longopts[i];
	for (i = 0; i < sizeof(tail) / sizeof(tail[0]); i++)
		longopts[n++] = tail[i];
	snprintf(shortopts, sizeof(shortopts), "s:p:t:d:k:w:%sc:T:jvh",
		 x ? x->shortopts : "");

	o->threads = 1;
	o->duration_ns = 5000000000ull;
	o->ops = 1;
	o->inflight = 8;
	o->timeout_ns = 20000000ull;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			servers = optarg;
			break;
		case 'p':
			if (xtx_parse_u32("--port", optarg, 1, 65535, &port))
				return -1;
			break;
		case 't':
			if (xtx_parse_u32("--threads", optarg, 1, WB_MAX_THREADS, &o->threads))
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
		case WB_OPT_ZK:
			zk = optarg;
			break;
		case WB_OPT_ZK_NAME:
			zk_name = optarg;
			break;
		case WB_OPT_TRANSPORT:
			if (xtx_transport_parse(optarg, &o->transport)) {
				fprintf(stderr, "Error: --transport: '%s' is not udp or afxdp\n",
					optarg);
				return -1;
			}
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
		case '?':
			usage(stderr);
			return -1;
		default:
			/* Only the subcommand's own letters are left. */
			if (!x || x->handle(x->ctx, c, optarg))
				return -1;
			break;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "Error: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (zk_name && !zk) {
		fprintf(stderr, "Error: --zk-name without --zk\n");
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
	/* every server of a cluster held in ZooKeeper, at the epoch it serves */
	err = bench_pick_servers(servers, zk, zk_name, (uint16_t)port, &o->servers, &o->nservers,
				 &replication, &cluster, &src);
	if (err == -2)
		usage(stderr);
	if (err)
		return -1;
	o->epoch = cluster ? (uint16_t)cluster->epoch : 0;
	free(cluster);
	bench_zk_source_close(&src);
	return 0;
}

/* Collects what the threads published since the last call. */
static void gather(struct wb_thread *th, unsigned int n, struct wb_counts *sum,
		   struct xtx_hist *h)
{
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	xtx_hist_reset(h);
	for (i = 0; i < n; i++) {
		bench_gather(&th[i].bt, (uint64_t *)sum, (const uint64_t *)&th[i].pub,
			     WB_NCOUNTS, h);
	}
}

struct wb_progress {
	const struct wb_bench *b;
	struct wb_thread *th;
	unsigned int nthreads;
	struct wb_counts prev;
};

/* A progress line on stderr for the second just over. */
static void progress_tick(void *ctx, unsigned int sec, double dt)
{
	struct wb_progress *p = ctx;
	struct wb_counts cur;
	struct xtx_hist h;

	gather(p->th, p->nthreads, &cur, &h);
	p->b->progress(p->b->ctx, &cur, &p->prev, &h, sec, dt);
	if (cur.errors)
		fprintf(stderr, "  errors=%llu", (unsigned long long)cur.errors);
	fputc('\n', stderr);
	p->prev = cur;
}

static void free_threads(struct wb_thread *th, unsigned int n)
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
static struct wb_thread *setup_threads(const struct wb_bench *b, const struct wb_opts *o)
{
	struct wb_thread *th = calloc(o->threads, sizeof(*th));
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
		struct wb_thread *t = &th[i];

		t->bt.idx = i;
		t->b = b;
		t->o = o;
		t->bt.client_id = o->client_base + i;
		b->init_thread(t, first);
		/* Each (client id, server) pair numbers its requests on its own. */
		if (xtx_reqwins_init(&t->win, o->nservers, t->bt.client_id, first, o->inflight,
				     o->timeout_ns)) {
			fprintf(stderr, "Error: allocating thread state: %s\n", strerror(ENOMEM));
			goto fail;
		}
		t->win.epoch = o->epoch;
		if (xtx_transport_open_kind(&t->tr, o->servers, o->nservers, o->transport))
			goto fail;
	}
	return th;
fail:
	free_threads(th, o->threads);
	return NULL;
}

void wb_print_tail(const struct wb_counts *c, const struct xtx_hist *h, uint64_t stray,
		   bool json)
{
	if (json) {
		printf("\"latency_us\":{\"avg\":%.2f,\"p50\":%.2f,\"p99\":%.2f,\"p999\":%.2f,"
		       "\"max\":%.2f},\"retransmits\":%llu,\"duplicates\":%llu,"
		       "\"unanswered\":%llu,\"stray\":%llu,\"errors\":%llu}\n",
		       xtx_hist_mean(h) / 1e3, xtx_hist_percentile(h, 50) / 1e3,
		       xtx_hist_percentile(h, 99) / 1e3, xtx_hist_percentile(h, 99.9) / 1e3,
		       h->max / 1e3, (unsigned long long)c->retrans, (unsigned long long)c->dups,
		       (unsigned long long)c->unanswered, (unsigned long long)stray,
		       (unsigned long long)c->errors);
		return;
	}
	printf("latency_us avg=%.1f p50=%.1f p99=%.1f p999=%.1f max=%.1f\n",
	       xtx_hist_mean(h) / 1e3, xtx_hist_percentile(h, 50) / 1e3,
	       xtx_hist_percentile(h, 99) / 1e3, xtx_hist_percentile(h, 99.9) / 1e3,
	       h->max / 1e3);
	printf("retransmits=%llu  duplicates=%llu  unanswered=%llu  stray=%llu  errors=%llu\n",
	       (unsigned long long)c->retrans, (unsigned long long)c->dups,
	       (unsigned long long)c->unanswered, (unsigned long long)stray,
	       (unsigned long long)c->errors);
}

int wb_run(const struct wb_bench *b, const struct wb_opts *o)
{
	struct wb_counts total = {}, at_stop = {};
	struct wb_progress prog = {};
	struct xtx_run run;
	struct wb_thread *th;
	struct xtx_hist h;
	uint64_t start, stop, stray = 0;
	unsigned int i, s;
	int rc;

	th = setup_threads(b, o);
	if (!th)
		return BENCH_EXIT_FAIL;
	pr_info("%s: client ids %u..%u, first request id %llu\n", b->name, o->client_base,
		o->client_base + o->threads - 1, (unsigned long long)th[0].win.srv[0].first_id);

	prog.b = b;
	prog.th = th;
	prog.nthreads = o->threads;
	run = (struct xtx_run){
		.nthreads = o->threads,
		.fn = wb_thread_main,
		.args = th,
		.arg_size = sizeof(*th),
		.duration_ns = o->duration_ns,
		.tick = progress_tick,
		.ctx = &prog,
	};
	if (xtx_run_threads(&run, &start, &stop)) {
		rc = BENCH_EXIT_FAIL;
		goto out;
	}

	xtx_hist_reset(&h);
	for (i = 0; i < o->threads; i++) {
		char extra[128];

		counts_add(&total, &th[i].c);
		counts_add(&at_stop, &th[i].at_stop);
		xtx_hist_merge(&h, &th[i].bt.total);
		stray += th[i].tr.stray + th[i].tr.truncated;
		b->thread_debug(&th[i].c, extra, sizeof(extra));
		pr_debug("thread %u (client %u): sent=%llu replies=%llu %s\n", i,
			 th[i].bt.client_id, (unsigned long long)th[i].c.sent,
			 (unsigned long long)th[i].c.replies, extra);
	}
	b->summary(b->ctx, &total, &at_stop, &h, (double)(stop - start) / 1e9, stray);
	for (s = 0; s < o->nservers; s++) {
		char addr[XTX_ADDR_STRLEN];
		uint64_t sent = 0, replies = 0;

		for (i = 0; i < o->threads; i++) {
			sent += th[i].win.srv[s].sent;
			replies += th[i].win.srv[s].replies;
		}
		pr_info("server %s: sent_packets=%llu replies=%llu\n",
			xtx_addr_str(&o->servers[s], addr, sizeof(addr)),
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
			o->port);
		rc = BENCH_EXIT_FAIL;
	} else if (total.epoch_refused) {
		uint16_t theirs = 0;

		for (i = 0; i < o->threads; i++)
			if (th[i].c.epoch_refused)
				theirs = th[i].server_epoch;
		fprintf(stderr, "Error: %llu requests refused: the servers serve configuration "
			"epoch %u%s, this client named epoch %u%s\n",
			(unsigned long long)total.epoch_refused, theirs,
			theirs == XTX_EPOCH_FENCED ? " (fenced: out of their cluster)" : "",
			o->epoch, o->epoch ? "" : " (a static cluster): they are in a cluster "
			"held in ZooKeeper, give --zk HOSTS [--zk-name NAME]");
		rc = BENCH_EXIT_FAIL;
	} else if (!total.answered) {
		fprintf(stderr, "Error: no request was answered\n");
		rc = BENCH_EXIT_FAIL;
	}
out:
	free_threads(th, o->threads);
	return rc;
}
