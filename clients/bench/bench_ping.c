// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench ping: keeps a window of PING requests in flight per server, measures round trips. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include "bench.h"
#include "hist.h"
#include "msgbuf.h"
#include "names.h"
#include "reqwin.h"
#include "winbench.h"

/* ping's counters in wb_counts.x. */
enum {
	PING_ROUND_TRIPS,	/* requests answered */
	PING_OPS,		/* ops in answered requests */
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench ping --servers IP[,IP...] | --zk HOSTS [options]\n"
		"Keeps W requests of K PING ops in flight to every server from every\n"
		"thread, checks each reply (request id, op status, echoed nonce) and\n"
		"reports round trips, ops and latency.  Lost requests are retransmitted\n"
		"with the same id after --timeout.  Progress goes to stderr once a\n"
		"second, the summary to stdout.  Exits 1 if a reply was wrong, none\n"
		"arrived, or the servers refused the request's configuration epoch.\n"
		"\n"
		"Options:\n"
		"  -s, --servers IP[,IP...]  servers to ping (IPv4)\n"
		"      --zk HOST:PORT[,...]  instead: every server of the cluster held in this\n"
		"                            ZooKeeper ensemble, at the epoch it serves\n"
		"      --zk-name NAME        the cluster's name there (default xtx)\n"		"  -p, --port N              server UDP port (default %u)\n"
		"  -t, --threads N           threads, each with its own socket and client id\n"
		"                            (default 1, at most %u)\n"
		"  -d, --duration S          how long to send new requests (default 5s)\n"
		"  -k, --ops K               PING ops per request, 1..%u (default 1)\n"
		"  -w, --inflight W          requests outstanding per server and thread,\n"
		"                            1..%u (default 8)\n"
		"  -c, --client-id BASE      thread i uses client id BASE+i (default derived\n"
		"                            from the pid, below %u)\n"
		"  -T, --timeout DUR         retransmit after this long without a reply\n"
		"                            (default 20ms)\n"
		"      --transport T         udp (default) or afxdp (AF_XDP: root, native XDP)\n"
		"  -j, --json                one JSON object on stdout instead of text\n"
		"  -v, --verbose             more output\n"
		"  -h, --help                this text\n"
		"\n"
		"Example: xtxbench ping --servers 10.77.0.2,10.77.1.2 --duration 3 --ops 16\n",
		XTX_DEFAULT_PORT, WB_MAX_THREADS, XTX_MAX_OPS, XTX_REQWIN_MAX_INFLIGHT,
		XTX_MAX_CLIENTS_DEFAULT);
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: nonces only need to differ, not to be secret. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Nonces seeded apart per thread, so threads never echo each other's. */
static void ping_init_thread(struct wb_thread *t, uint64_t first)
{
	t->state = first * 2654435761u + t->bt.idx + 1;
}

static void ping_fill(struct wb_thread *t, unsigned int server, struct xtx_req *r)
{
	unsigned int i;

	(void)server;	/* every server gets the same kind of request */
	for (i = 0; i < t->o->ops; i++) {
		struct xtx_op *op = xtx_msg_add(&r->msg, XTX_OP_PING, 0, i);

		op->version = rng_next(&t->state);
	}
}

static bool ping_check(struct wb_thread *t, const struct xtx_dgram *d, const struct xtx_req *sl)
{
	const struct xtx_msgbuf *m = d->buf;
	const struct xtx_hdr *h = &m->hdr;
	unsigned int i;

	for (i = 0; i < h->nops; i++) {
		const struct xtx_op *rop = &m->ops[i], *qop = &sl->msg.ops[i];

		if (rop->status != XTX_ST_OK || rop->opcode != XTX_OP_PING ||
		    rop->version != qop->version) {
			wb_bad_reply(t, d->server,
				     "request %llu op %u: status %s, nonce %#llx for %#llx",
				     (unsigned long long)h->req_id, i, xtx_status_name(rop->status),
				     (unsigned long long)rop->version,
				     (unsigned long long)qop->version);
			return false;
		}
	}
	t->c.x[PING_ROUND_TRIPS]++;
	t->c.x[PING_OPS] += h->nops;
	return true;
}

static void ping_progress(const void *ctx, const struct wb_counts *cur,
			  const struct wb_counts *prev, const struct xtx_hist *h,
			  unsigned int sec, double dt)
{
	(void)ctx;
	fprintf(stderr, "t=%us  rt/s=%.0f  ops/s=%.0f  p50=%.1fus p99=%.1fus  retrans=%llu", sec,
		(double)(cur->x[PING_ROUND_TRIPS] - prev->x[PING_ROUND_TRIPS]) / dt,
		(double)(cur->x[PING_OPS] - prev->x[PING_OPS]) / dt,
		(double)xtx_hist_percentile(h, 50) / 1e3,
		(double)xtx_hist_percentile(h, 99) / 1e3,
		(unsigned long long)(cur->retrans - prev->retrans));
}

static void ping_thread_debug(const struct wb_counts *c, char *buf, size_t len)
{
	snprintf(buf, len, "round_trips=%llu", (unsigned long long)c->x[PING_ROUND_TRIPS]);
}

static void ping_summary(const void *ctx, const struct wb_counts *c,
			 const struct wb_counts *at_stop, const struct xtx_hist *h,
			 double run_s, uint64_t stray)
{
	const struct wb_opts *o = ctx;
	uint64_t round_trips = c->x[PING_ROUND_TRIPS], ops = c->x[PING_OPS];
	double rt_s = at_stop->x[PING_ROUND_TRIPS] / run_s, ops_s = at_stop->x[PING_OPS] / run_s;

	if (o->json) {
		printf("{\"servers\":%u,\"threads\":%u,\"ops_per_request\":%u,\"inflight\":%u,"
		       "\"client_id_base\":%u,\"duration_s\":%.3f,\"sent_packets\":%llu,"
		       "\"replies\":%llu,\"round_trips\":%llu,\"ops\":%llu,"
		       "\"round_trips_per_s\":%.1f,\"ops_per_s\":%.1f,",
		       o->nservers, o->threads, o->ops, o->inflight, o->client_base, run_s,
		       (unsigned long long)c->sent, (unsigned long long)c->replies,
		       (unsigned long long)round_trips, (unsigned long long)ops, rt_s, ops_s);
	} else {
		printf("ping: servers=%u threads=%u ops_per_request=%u inflight=%u "
		       "client_ids=%u..%u duration=%.2fs\n",
		       o->nservers, o->threads, o->ops, o->inflight, o->client_base,
		       o->client_base + o->threads - 1, run_s);
		printf("sent_packets=%llu\n", (unsigned long long)c->sent);
		printf("replies=%llu\n", (unsigned long long)c->replies);
		printf("round_trips=%llu  round_trips/s=%.0f\n", (unsigned long long)round_trips,
		       rt_s);
		printf("ops=%llu  ops/s=%.0f\n", (unsigned long long)ops, ops_s);
	}
	wb_print_tail(c, h, stray, o->json);
}

int bench_ping_main(int argc, char **argv)
{
	struct wb_opts o = {};
	struct wb_bench b = {
		.name = "ping",
		.ctx = &o,
		.init_thread = ping_init_thread,
		.fill = ping_fill,
		.check = ping_check,
		.progress = ping_progress,
		.thread_debug = ping_thread_debug,
		.summary = ping_summary,
	};
	int rc;

	rc = wb_parse_args(argc, argv, &o, NULL, usage);
	if (rc)
		return rc > 0 ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
	rc = wb_run(&b, &o);
	free(o.servers);
	return rc;
}
