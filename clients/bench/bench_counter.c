// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench counter: checks end to end that retransmitted COUNTER_ADDs run exactly once. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include "bench.h"
#include "clock.h"
#include "ids.h"
#include "log.h"
#include "msgbuf.h"
#include "names.h"
#include "num.h"
#include "servers.h"
#include "transport.h"

/* Transmissions of one request before the server is declared unreachable. */
#define COUNTER_MAX_TRIES	200
/* One request in flight: only its reply and a few late twins ever queue up. */
#define COUNTER_RECV_BATCH	8

struct counter_opts {
	struct sockaddr_in *server;
	uint32_t count;
	uint64_t key;
	uint64_t delta;
	uint32_t client_id;
	uint64_t timeout_ns;
	bool json;
};

struct counter_result {
	uint64_t first, last, prev;
	uint32_t adds;		/* answered */
	uint64_t sent;
	uint64_t retrans;
	uint64_t replayed;	/* replies with XTX_F_REPLAYED */
	uint64_t retry;		/* RETRY answers: the request was still executing */
	uint64_t late;		/* replies to an earlier request, after its answer */
	uint64_t breaks;	/* replies that broke the +delta sequence */
	uint64_t errors;	/* bad replies, send/receive failures, give-ups */
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench counter --servers IP [options]\n"
		"Sends N COUNTER_ADD requests one at a time, each retransmitted with the\n"
		"same request id until answered, and checks that every answer is exactly\n"
		"the previous one plus DELTA: a retransmission the server executed twice\n"
		"would skip a value.  Meant to run with reply loss injected\n"
		"(xtxctl fault --drop-reply-ppm N).  No other client may add to the same\n"
		"counter meanwhile.  Exits 1 if the sequence breaks or a request is never\n"
		"answered.\n"
		"\n"
		"Options:\n"
		"  -s, --servers IP          the server (one IPv4 address)\n"
		"  -p, --port N              server UDP port (default %u)\n"
		"  -n, --count N             adds to perform (default 100)\n"
		"  -k, --key K               counter to add to, mod %u (default 0)\n"
		"  -D, --delta D             amount per add, >= 1 (default 1)\n"
		"  -c, --client-id ID        client id (default derived from the pid, below %u)\n"
		"  -T, --timeout DUR         retransmit after this long without a reply\n"
		"                            (default 20ms; %u tries at most)\n"
		"  -j, --json                one JSON object on stdout instead of text\n"
		"  -v, --verbose             more output\n"
		"  -h, --help                this text\n"
		"\n"
		"Example: xtxbench counter --servers 10.77.0.2 --count 200 --key 7\n",
		XTX_DEFAULT_PORT, XTX_COUNTERS, XTX_MAX_CLIENTS_DEFAULT, COUNTER_MAX_TRIES);
}

static int parse_args(int argc, char **argv, struct counter_opts *o)
{
	static const struct option longopts[] = {
		{ "servers", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'n' },
		{ "key", required_argument, NULL, 'k' },
		{ "delta", required_argument, NULL, 'D' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *servers = NULL;
	uint32_t port = XTX_DEFAULT_PORT;
	unsigned int n;
	bool id_given = false;
	int c;

	o->count = 100;
	o->delta = 1;
	o->timeout_ns = 20000000ull;
	while ((c = getopt_long(argc, argv, "s:p:n:k:D:c:T:jvh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			servers = optarg;
			break;
		case 'p':
			if (xtx_parse_u32("--port", optarg, 1, 65535, &port))
				return -1;
			break;
		case 'n':
			if (xtx_parse_u32("--count", optarg, 1, UINT32_MAX, &o->count))
				return -1;
			break;
		case 'k':
			if (xtx_parse_u64("--key", optarg, 0, UINT64_MAX, &o->key))
				return -1;
			break;
		case 'D':
			if (xtx_parse_u64("--delta", optarg, 1, UINT32_MAX, &o->delta))
				return -1;
			break;
		case 'c':
			if (xtx_parse_u32("--client-id", optarg, 0, XTX_MAX_CLIENTS_LIMIT - 1,
					  &o->client_id))
				return -1;
			id_given = true;
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
	if (o->timeout_ns < 1000) {
		fprintf(stderr, "Error: --timeout must be at least 1us\n");
		return -1;
	}
	if (!id_given)
		o->client_id = xtx_client_base_default(1);
	if (xtx_parse_servers("--servers", servers, port, &o->server, &n))
		return -1;
	if (n != 1) {
		fprintf(stderr, "Error: --servers: counter checks one server, got %u\n", n);
		free(o->server);
		return -1;
	}
	return 0;
}

/*
 * Waits up to timeout_ns for the reply to req and copies it to reply.
 * Returns 1 when it arrived, 0 on timeout, -1 on a failure (counted).
 */
static int await_reply(struct xtx_transport *tr, const struct counter_opts *o,
		       const struct xtx_hdr *req, uint64_t first_id, struct xtx_msgbuf *reply,
		       struct counter_result *r)
{
	uint64_t deadline = xtx_now_ns() + o->timeout_ns, now;
	struct xtx_msgbuf bufs[COUNTER_RECV_BATCH];
	struct xtx_dgram d[COUNTER_RECV_BATCH];
	const struct xtx_hdr *h;
	int n, i, found = 0;

	for (i = 0; i < COUNTER_RECV_BATCH; i++) {
		d[i].buf = &bufs[i];
		d[i].cap = sizeof(bufs[i]);
	}
	while (!found && (now = xtx_now_ns()) < deadline) {
		n = xtx_transport_recv(tr, d, COUNTER_RECV_BATCH, deadline - now);
		if (n < 0) {
			fprintf(stderr, "Error: receiving: %s\n", strerror(-n));
			r->errors++;
			return -1;
		}
		for (i = 0; i < n; i++) {
			h = &((const struct xtx_msgbuf *)d[i].buf)->hdr;
			if (xtx_msg_is_reply_to(d[i].buf, d[i].len, req)) {
				/* Later copies of the same reply are just late ones. */
				if (!found)
					memcpy(reply, d[i].buf, xtx_msg_len(1));
				else
					r->late++;
				found = 1;
			} else if (d[i].len >= sizeof(*h) && h->magic == XTX_MAGIC &&
				   (h->flags & XTX_F_REPLY) && h->client_id == req->client_id &&
				   h->req_id >= first_id && h->req_id < req->req_id) {
				/* A retransmission's twin answered after we moved on. */
				r->late++;
			} else {
				fprintf(stderr,
					"Error: unexpected datagram (%zu bytes) while waiting for "
					"request %llu\n",
					d[i].len, (unsigned long long)req->req_id);
				r->errors++;
			}
		}
	}
	return found;
}

/* Performs add number i (one request, retransmitted until answered). */
static int do_add(struct xtx_transport *tr, const struct counter_opts *o, uint64_t req_id,
		  uint64_t first_id, uint32_t i, struct counter_result *r)
{
	struct xtx_msgbuf req, reply;
	const struct xtx_hdr *rh = &reply.hdr;
	const struct xtx_op *rop = &reply.ops[0];
	struct xtx_dgram d = { .buf = &req, .len = xtx_msg_len(1), .server = 0 };
	uint64_t v;
	struct xtx_op *op;
	unsigned int tries;
	int got, sent;

	xtx_msg_init(&req, o->client_id, req_id);
	op = xtx_msg_add(&req, XTX_OP_COUNTER_ADD, 0, o->key);
	op->version = o->delta;
	for (tries = 0; tries < COUNTER_MAX_TRIES; tries++) {
		sent = xtx_transport_send(tr, &d, 1);
		if (sent < 0) {
			fprintf(stderr, "Error: sending: %s\n", strerror(-sent));
			r->errors++;
			return -1;
		}
		if (sent) {
			r->sent++;
			if (tries)
				r->retrans++;
		}
		got = await_reply(tr, o, &req.hdr, first_id, &reply, r);
		if (got < 0)
			return -1;
		if (!got)
			continue;
		if (rh->status == XTX_ST_RETRY) {
			/* Still executing on another CPU: same id again, which is safe. */
			r->retry++;
			continue;
		}
		if (rh->status != XTX_ST_OK || rop->status != XTX_ST_OK) {
			fprintf(stderr, "Error: add %u (request %llu): status %s, op status %s%s\n",
				i, (unsigned long long)req_id, xtx_status_name(rh->status),
				xtx_status_name(rop->status),
				rh->status == XTX_ST_BAD_CLIENT ?
					" (is --client-id below the server's max clients?)" : "");
			r->errors++;
			return -1;
		}
		if (rh->flags & XTX_F_REPLAYED)
			r->replayed++;
		v = rop->version;
		pr_debug("add %u: request %llu tries %u -> %llu%s\n", i,
			 (unsigned long long)req_id, tries + 1, (unsigned long long)v,
			 rh->flags & XTX_F_REPLAYED ? " (replayed)" : "");
		if (!r->adds) {
			r->first = v;
		} else if (v != r->prev + o->delta) {
			fprintf(stderr,
				"Error: add %u (request %llu): counter %llu, expected %llu; "
				"an add ran %s\n",
				i, (unsigned long long)req_id,
				(unsigned long long)v, (unsigned long long)(r->prev + o->delta),
				v > r->prev + o->delta ? "twice or someone else adds to key" :
							 "not at all or the counter was reset");
			r->breaks++;
		}
		r->prev = r->last = v;
		r->adds++;
		return 0;
	}
	fprintf(stderr, "Error: add %u (request %llu): no answer after %u tries\n", i,
		(unsigned long long)req_id, COUNTER_MAX_TRIES);
	r->errors++;
	return -1;
}

static void print_result(const struct counter_opts *o, const struct counter_result *r,
			 uint64_t expect_last, bool ok)
{
	if (o->json) {
		printf("{\"key\":%llu,\"delta\":%llu,\"client_id\":%u,\"first\":%llu,\"last\":%llu,"
		       "\"expected_last\":%llu,\"adds\":%u,\"requested\":%u,\"sent_packets\":%llu,"
		       "\"retransmits\":%llu,\"replayed\":%llu,\"retry\":%llu,\"late\":%llu,"
		       "\"breaks\":%llu,\"errors\":%llu,\"ok\":%s}\n",
		       (unsigned long long)o->key, (unsigned long long)o->delta, o->client_id,
		       (unsigned long long)r->first, (unsigned long long)r->last,
		       (unsigned long long)expect_last, r->adds, o->count,
		       (unsigned long long)r->sent, (unsigned long long)r->retrans,
		       (unsigned long long)r->replayed, (unsigned long long)r->retry,
		       (unsigned long long)r->late, (unsigned long long)r->breaks,
		       (unsigned long long)r->errors, ok ? "true" : "false");
		return;
	}
	printf("first=%llu last=%llu adds=%u retransmits=%llu replayed=%llu\n",
	       (unsigned long long)r->first, (unsigned long long)r->last, r->adds,
	       (unsigned long long)r->retrans, (unsigned long long)r->replayed);
	printf("sent_packets=%llu retry=%llu late=%llu breaks=%llu errors=%llu  %s\n",
	       (unsigned long long)r->sent, (unsigned long long)r->retry,
	       (unsigned long long)r->late, (unsigned long long)r->breaks,
	       (unsigned long long)r->errors, ok ? "OK" : "FAILED");
}

int bench_counter_main(int argc, char **argv)
{
	struct counter_opts o = {};
	struct counter_result r = {};
	struct xtx_transport tr;
	uint64_t first_id, expect_last;
	uint32_t i;
	bool ok;
	int rc;

	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc > 0 ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
	if (xtx_transport_open(&tr, o.server, 1)) {
		free(o.server);
		return BENCH_EXIT_FAIL;
	}
	first_id = xtx_req_id_start();
	pr_info("counter: client %u, requests %llu.., key %llu, delta %llu\n", o.client_id,
		(unsigned long long)first_id, (unsigned long long)o.key,
		(unsigned long long)o.delta);
	for (i = 0; i < o.count; i++)
		if (do_add(&tr, &o, first_id + i, first_id, i, &r))
			break;

	/* Modular, like the server's counter. */
	expect_last = r.first + (uint64_t)(o.count - 1) * o.delta;
	ok = r.adds == o.count && !r.breaks && !r.errors && r.last == expect_last;
	print_result(&o, &r, expect_last, ok);
	if (r.adds == o.count && r.last != expect_last)
		fprintf(stderr, "Error: last=%llu, expected first + (N-1)*delta = %llu\n",
			(unsigned long long)r.last, (unsigned long long)expect_last);
	xtx_transport_close(&tr);
	free(o.server);
	return ok ? BENCH_EXIT_OK : BENCH_EXIT_FAIL;
}
