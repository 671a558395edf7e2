// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench log: LOG_APPEND requests kept in flight per server; counts appends and LOG_FULLs. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/proto.h>
#include <xtx/log.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include "bench.h"
#include "hist.h"
#include "msgbuf.h"
#include "names.h"
#include "num.h"
#include "reqwin.h"
#include "winbench.h"

/* SmallBank's row size; also within xtxd's default --value-size. */
#define LOGB_VALUE_DEFAULT	8

/* log's counters in wb_counts.x. */
enum {
	LOGB_PACKETS,		/* requests answered */
	LOGB_APPENDS,		/* ops answered OK: entries in a server's log */
	LOGB_LOG_FULL,		/* ops answered LOG_FULL: the drain fell behind */
};

/* The common options and log's own, handed to the callbacks as their ctx. */
struct logb_opts {
	struct wb_opts w;
	uint32_t value_size;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench log --servers IP[,IP...] | --zk HOSTS [options]\n"
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
		"      --zk HOST:PORT[,...]  instead: every server of the cluster held in this\n"
		"                            ZooKeeper ensemble, at the epoch it serves\n"
		"      --zk-name NAME        the cluster's name there (default xtx)\n"		"  -p, --port N              server UDP port (default %u)\n"
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
		XTX_DEFAULT_PORT, WB_MAX_THREADS, XTX_MAX_OPS, XTX_REQWIN_MAX_INFLIGHT,
		XTX_VALUE_INLINE, LOGB_VALUE_DEFAULT, XTX_MAX_CLIENTS_DEFAULT);
}

static void logb_init_thread(struct wb_thread *t, uint64_t first)
{
	/*
	 * Txn ids start where request ids do (the clock), so a rerun
	 * with the same client id does not repeat its predecessor's.
	 */
	t->state = first;
}

static void logb_fill(struct wb_thread *t, unsigned int server, struct xtx_req *r)
{
	const struct logb_opts *lo = t->b->ctx;
	/* The write's replica set: just the server it goes to. */
	__u16 replica = server;
	__u64 token = xtx_log_replicas_pack(&replica, 1);
	unsigned int i;

	for (i = 0; i < t->o->ops; i++) {
		uint64_t seq = ++t->state;
		/* Keys differ across threads too, so no two entries alias. */
		uint64_t key = ((uint64_t)t->bt.idx << XTX_TXN_SEQ_BITS) |
			       (seq & ((1ull << XTX_TXN_SEQ_BITS) - 1));
		struct xtx_op *op = xtx_msg_add(&r->msg, XTX_OP_LOG_APPEND, 0, key);

		/* A txn per op: distinct ids keep the entries independent. */
		op->txn = xtx_txn_make(t->bt.client_id, seq);
		op->version = seq;
		op->flags = XTX_OPF_LOG_LAST;
		op->token = token;
		op->vlen = lo->value_size;
		memset(op->value, (int)(seq & 0xff), lo->value_size);
	}
}

static const char *logb_status_hint(uint8_t status)
{
	return status == XTX_ST_BAD_ARG ? " (is --value-size within the server's?)" : "";
}

static bool logb_check(struct wb_thread *t, const struct xtx_dgram *d, const struct xtx_req *sl)
{
	const struct xtx_msgbuf *m = d->buf;
	const struct xtx_hdr *h = &m->hdr;
	uint64_t ok = 0, full = 0;
	unsigned int i;

	(void)sl;	/* the ops carry no nonce to compare */
	for (i = 0; i < h->nops; i++) {
		const struct xtx_op *rop = &m->ops[i];

		if (rop->opcode != XTX_OP_LOG_APPEND ||
		    (rop->status != XTX_ST_OK && rop->status != XTX_ST_LOG_FULL)) {
			wb_bad_reply(t, d->server, "request %llu op %u: opcode %u, status %s",
				     (unsigned long long)h->req_id, i, rop->opcode,
				     xtx_status_name(rop->status));
			return false;
		}
		if (rop->status == XTX_ST_OK)
			ok++;
		else
			full++;
	}
	/* Counted only once the whole reply checked out. */
	t->c.x[LOGB_PACKETS]++;
	t->c.x[LOGB_APPENDS] += ok;
	t->c.x[LOGB_LOG_FULL] += full;
	return true;
}

static void logb_progress(const void *ctx, const struct wb_counts *cur,
			  const struct wb_counts *prev, const struct xtx_hist *h,
			  unsigned int sec, double dt)
{
	(void)ctx;
	fprintf(stderr,
		"t=%us  appends/s=%.0f  pkts/s=%.0f  p50=%.1fus p99=%.1fus  log_full=%llu  "
		"retrans=%llu", sec,
		(double)(cur->x[LOGB_APPENDS] - prev->x[LOGB_APPENDS]) / dt,
		(double)(cur->x[LOGB_PACKETS] - prev->x[LOGB_PACKETS]) / dt,
		(double)xtx_hist_percentile(h, 50) / 1e3,
		(double)xtx_hist_percentile(h, 99) / 1e3,
		(unsigned long long)cur->x[LOGB_LOG_FULL],
		(unsigned long long)(cur->retrans - prev->retrans));
}

static void logb_thread_debug(const struct wb_counts *c, char *buf, size_t len)
{
	snprintf(buf, len, "appends=%llu log_full=%llu",
		 (unsigned long long)c->x[LOGB_APPENDS], (unsigned long long)c->x[LOGB_LOG_FULL]);
}

static void logb_summary(const void *ctx, const struct wb_counts *c,
			 const struct wb_counts *at_stop, const struct xtx_hist *h,
			 double run_s, uint64_t stray)
{
	const struct logb_opts *lo = ctx;
	const struct wb_opts *o = &lo->w;
	uint64_t packets = c->x[LOGB_PACKETS], appends = c->x[LOGB_APPENDS];
	uint64_t log_full = c->x[LOGB_LOG_FULL];
	double pk_s = at_stop->x[LOGB_PACKETS] / run_s, ap_s = at_stop->x[LOGB_APPENDS] / run_s;
	uint64_t answered = appends + log_full;
	double full_share = answered ? (double)log_full / answered : 0;

	if (o->json) {
		printf("{\"servers\":%u,\"threads\":%u,\"ops_per_request\":%u,\"inflight\":%u,"
		       "\"value_size\":%u,\"client_id_base\":%u,\"duration_s\":%.3f,"
		       "\"sent_packets\":%llu,\"replies\":%llu,\"packets\":%llu,"
		       "\"appends\":%llu,\"log_full\":%llu,\"log_full_share\":%.4f,"
		       "\"packets_per_s\":%.1f,\"appends_per_s\":%.1f,",
		       o->nservers, o->threads, o->ops, o->inflight, lo->value_size,
		       o->client_base, run_s, (unsigned long long)c->sent,
		       (unsigned long long)c->replies, (unsigned long long)packets,
		       (unsigned long long)appends, (unsigned long long)log_full,
		       full_share, pk_s, ap_s);
	} else {
		printf("log: servers=%u threads=%u ops_per_request=%u inflight=%u value_size=%u "
		       "client_ids=%u..%u duration=%.2fs\n",
		       o->nservers, o->threads, o->ops, o->inflight, lo->value_size,
		       o->client_base, o->client_base + o->threads - 1, run_s);
		printf("sent_packets=%llu\n", (unsigned long long)c->sent);
		printf("replies=%llu\n", (unsigned long long)c->replies);
		printf("packets=%llu  packets/s=%.0f\n", (unsigned long long)packets, pk_s);
		printf("appends=%llu  appends/s=%.0f\n", (unsigned long long)appends, ap_s);
		printf("log_full=%llu  (%.2f%% of answered ops)\n", (unsigned long long)log_full,
		       full_share * 100);
	}
	wb_print_tail(c, h, stray, o->json);
}

static int logb_opt(void *ctx, int c, const char *arg)
{
	struct logb_opts *lo = ctx;

	if (c != 'b')
		return -1;
	return xtx_parse_u32("--value-size", arg, 0, XTX_VALUE_INLINE, &lo->value_size);
}

int bench_log_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "value-size", required_argument, NULL, 'b' },
		{}
	};
	struct logb_opts lo = { .value_size = LOGB_VALUE_DEFAULT };
	struct wb_extra_opts x = {
		.longopts = longopts,
		.shortopts = "b:",
		.handle = logb_opt,
		.ctx = &lo,
	};
	struct wb_bench b = {
		.name = "log",
		.ctx = &lo,
		.init_thread = logb_init_thread,
		.fill = logb_fill,
		.check = logb_check,
		.status_hint = logb_status_hint,
		.progress = logb_progress,
		.thread_debug = logb_thread_debug,
		.summary = logb_summary,
	};
	int rc;

	rc = wb_parse_args(argc, argv, &lo.w, &x, usage);
	if (rc)
		return rc > 0 ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
	rc = wb_run(&b, &lo.w);
	free(lo.w.servers);
	return rc;
}
