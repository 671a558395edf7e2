// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench op: send one op to one server and print the answer, for people and shell tests. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/proto.h>
#include <xtx/msg.h>
#include <xtx/maps.h>
#include <xtx/log.h>
#include <xtx/hades.h>
#include "bench.h"
#include "clock.h"
#include "ids.h"
#include "msgbuf.h"
#include "names.h"
#include "num.h"
#include "secret.h"
#include "servers.h"
#include "transport.h"

#define OP_MAX_TRIES	50

struct op_opts {
	struct sockaddr_in *server;
	unsigned int nservers;
	uint16_t port;
	uint32_t client_id;
	uint32_t epoch;		/* hdr.epoch: the configuration the request claims */
	uint64_t timeout_ns;
	bool json;
	bool has_secret;	/* --secret-file: the request carries its MAC */
	struct xtx_secret secret;
	struct xtx_op op;	/* what to send */
	/* a value over a slot, sent in the op's area; or room reserved there for a read's answer */
	uint8_t area_value[XTX_VALUE_MAX];
	uint16_t area_len;
	uint16_t room;
};

static const struct { const char *name; uint8_t opcode; } op_names[] = {
	{ "ping", XTX_OP_PING }, { "stats", XTX_OP_STATS }, { "counter-add", XTX_OP_COUNTER_ADD },
	{ "get", XTX_OP_GET }, { "insert", XTX_OP_INSERT }, { "update", XTX_OP_UPDATE },
	{ "delete", XTX_OP_DELETE }, { "read", XTX_OP_READ },
	{ "lock-shared", XTX_OP_LOCK_SHARED }, { "lock-excl", XTX_OP_LOCK_EXCL },
	{ "unlock-shared", XTX_OP_UNLOCK_SHARED }, { "unlock-excl", XTX_OP_UNLOCK_EXCL },
	{ "occ-lock", XTX_OP_OCC_LOCK }, { "occ-unlock", XTX_OP_OCC_UNLOCK },
	{ "validate", XTX_OP_OCC_VALIDATE }, { "commit-backup", XTX_OP_COMMIT_BACKUP },
	{ "commit-primary", XTX_OP_COMMIT_PRIMARY }, { "log-append", XTX_OP_LOG_APPEND },
	{ "hread", XTX_OP_HREAD }, { "hwrite", XTX_OP_HWRITE }, { "hintend", XTX_OP_HINTEND },
	{ "hvalidate", XTX_OP_HVALIDATE }, { "habort", XTX_OP_HABORT },
	/* to a resolver: --port of the servers + 1 */
	{ "txn-status", XTX_OP_TXN_STATUS },
};

static void usage(FILE *out)
{
	unsigned int i;

	fprintf(out,
		"Usage: xtxbench op --server IP [options] OP TABLE KEY [FIELD=VALUE...]\n"
		"Sends one op and prints the answer as key=value fields (or --json).\n"
		"\n"
		"  -s, --server IP         the server\n"
		"  -p, --port N            UDP port (default %d)\n"
		"  -c, --client-id ID      client id; txn=SEQ names transaction SEQ of it\n"
		"  -e, --epoch N           the configuration epoch the request names (default 0:\n"
		"                          a static cluster); a refusal prints the server's\n"
		"  -t, --timeout DUR       retransmit after DUR (default 20ms; %d tries)\n"
		"      --secret-file PATH  the cluster's shared secret (xtxd --secret-file)\n"
		"  -j, --json              one JSON object\n"
		"\n"
		"Fields: value=HEX version=N token=N txn=SEQ flags=FLAG[,FLAG...] room=N\n"
		"        value: up to %d bytes; over %d it travels in the value area\n"
		"        room: a read reserves N bytes of value area for its answer (%d-%d)\n"
		"        FLAG: delete, no-value, last, meta (log-append: the participants,\n"
		"        a bitmap in version), primary (log-append: at the key's primary,\n"
		"        proving grant=TOKEN); HADES ops also begin, replica, no-write\n"
		"        replicas=A[,B[,C]] (log-append: the replica set, packed into token)\n"
		"        participants=A[,B...] (hintend: the server indices, a bitmap in token)\n"
		"OP:",
		XTX_DEFAULT_PORT, OP_MAX_TRIES, XTX_VALUE_MAX, XTX_VALUE_INLINE,
		XTX_VALUE_INLINE + 1, XTX_VALUE_MAX);
	for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		fprintf(out, " %s", op_names[i].name);
	fprintf(out, "\n\nExample: xtxbench op --server 10.77.0.2 --client-id 7 occ-lock 0 42 txn=1\n");
}

/* Accepts one byte over XTX_VALUE_MAX, so the server's refusal can be shown. */
static int parse_hex(const char *s, uint8_t *out, uint16_t *len)
{
	size_t n = strlen(s), i;

	if (n % 2 || n / 2 > XTX_VALUE_MAX + 1) {
		fprintf(stderr, "Error: value: '%s' is not up to %d bytes of hex\n", s,
			XTX_VALUE_MAX + 1);
		return -1;
	}
	for (i = 0; i < n / 2; i++) {
		unsigned int b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1) {
			fprintf(stderr, "Error: value: '%s' is not hex\n", s);
			return -1;
		}
		out[i] = b;
	}
	*len = n / 2;
	return 0;
}

/* "0,1,2": up to three server indices, packed the way LOG_APPEND reads op.token. */
static int parse_replicas(const char *s, struct op_opts *o)
{
	__u16 r[3];
	__u8 n = 0;
	const char *p = s;

	while (*p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p || v > 0xffff || n == 3 || (*end && *end != ',')) {
			fprintf(stderr, "Error: replicas: '%s' is not up to three server indices "
				"(e.g. 0,1,2)\n", s);
			return -1;
		}
		r[n++] = v;
		p = *end ? end + 1 : end;
	}
	/* the grant, if given, stays in the high half */
	o->op.token = (o->op.token & ~0xffffffffull) | xtx_log_replicas_pack(r, n);
	return 0;
}

static bool is_hades(uint8_t opcode)
{
	return opcode >= XTX_OP_HREAD && opcode <= XTX_OP_HABORT;
}

/* "last,begin": the op's flags; last means the HADES LAST on a HADES op. */
static int parse_flags(const char *s, struct op_opts *o)
{
	bool hades = is_hades(o->op.opcode);
	const char *p = s;
	uint32_t flags = 0;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n == 6 && !strncmp(p, "delete", n))
			flags |= XTX_OPF_DELETE;
		else if (n == 8 && !strncmp(p, "no-value", n))
			flags |= XTX_OPF_NO_VALUE;
		else if (n == 4 && !strncmp(p, "last", n))
			flags |= hades ? XTX_HOPF_LAST : XTX_OPF_LOG_LAST;
		else if (!hades && n == 4 && !strncmp(p, "meta", n))
			flags |= XTX_OPF_LOG_META;
		else if (!hades && n == 7 && !strncmp(p, "primary", n))
			flags |= XTX_OPF_LOG_PRIMARY;
		else if (hades && n == 5 && !strncmp(p, "begin", n))
			flags |= XTX_HOPF_BEGIN;
		else if (hades && n == 7 && !strncmp(p, "replica", n))
			flags |= XTX_HOPF_REPLICA;
		else if (hades && n == 8 && !strncmp(p, "no-write", n))
			flags |= XTX_HOPF_NO_WRITE;
		else {
			fprintf(stderr, "Error: flags: '%s' is not a list of delete, no-value, last, "
				"meta, primary (and for HADES ops begin, replica, no-write)\n", s);
			return -1;
		}
		p += n;
		if (*p)
			p++;
	}
	o->op.flags |= flags;
	return 0;
}

static int parse_field(const char *arg, struct op_opts *o)
{
	const char *eq = strchr(arg, '=');
	uint64_t v;

	if (!eq) {
		fprintf(stderr, "Error: '%s' is not FIELD=VALUE\n", arg);
		return -1;
	}
	if (!strncmp(arg, "value=", 6)) {
		static uint8_t buf[XTX_VALUE_MAX + 1];
		uint16_t n;

		if (parse_hex(eq + 1, buf, &n))
			return -1;
		if (n <= XTX_VALUE_INLINE) {
			memcpy(o->op.value, buf, n);
			o->op.vlen = (uint8_t)n;
		} else {
			/* one byte over the limit goes out as is (a cap the server refuses) */
			memcpy(o->area_value, buf, n > XTX_VALUE_MAX ? XTX_VALUE_MAX : n);
			o->area_len = n;
		}
		return 0;
	}
	if (!strncmp(arg, "flags=", 6))
		return parse_flags(eq + 1, o);
	if (!strncmp(arg, "replicas=", 9))
		return parse_replicas(eq + 1, o);
	if (!strncmp(arg, "participants=", 13)) {
		if (xtx_parse_index_set("participants", eq + 1, XTX_HADES_MAX_SERVERS, &v))
			return -1;
		o->op.token = v;
		return 0;
	}
	if (xtx_parse_u64(arg, eq + 1, 0, UINT64_MAX, &v))
		return -1;
	if (!strncmp(arg, "version=", 8))
		o->op.version = v;
	else if (!strncmp(arg, "room=", 5)) {
		if (v > XTX_VALUE_MAX) {
			fprintf(stderr, "Error: room: at most %d bytes\n", XTX_VALUE_MAX);
			return -1;
		}
		o->room = (uint16_t)v;
	}
	else if (!strncmp(arg, "token=", 6))
		o->op.token = v;
	else if (!strncmp(arg, "grant=", 6))
		/* a primary's log append proves it: the lock token's low half (xtx/log.h) */
		o->op.token = (o->op.token & 0xffffffffull) | (v & 0xffffffffull) << 32;
	else if (!strncmp(arg, "txn=", 4))
		o->op.txn = xtx_txn_make(o->client_id, v);
	else {
		fprintf(stderr, "Error: unknown field in '%s'\n", arg);
		return -1;
	}
	return 0;
}

enum { OPT_SECRET_FILE = 256 };

static int parse_args(int argc, char **argv, struct op_opts *o)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "epoch", required_argument, NULL, 'e' },
		{ "timeout", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "secret-file", required_argument, NULL, OPT_SECRET_FILE },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *server = NULL;
	uint32_t port = XTX_DEFAULT_PORT;
	unsigned int i;
	uint64_t v;
	int c;

	o->client_id = xtx_client_base_default(1);
	o->timeout_ns = 20000000ull;
	while ((c = getopt_long(argc, argv, "+s:p:c:e:t:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 's': server = optarg; break;
		case 'p':
			if (xtx_parse_u32("--port", optarg, 1, 65535, &port))
				return -1;
			break;
		case 'c':
			if (xtx_parse_u32("--client-id", optarg, 0, XTX_MAX_CLIENTS_LIMIT - 1,
					  &o->client_id))
				return -1;
			break;
		case 'e':
			if (xtx_parse_u32("--epoch", optarg, 0, 0xffff, &o->epoch))
				return -1;
			break;
		case 't':
			if (xtx_parse_duration("--timeout", optarg, &o->timeout_ns))
				return -1;
			break;
		case 'j': o->json = true; break;
		case OPT_SECRET_FILE:
			if (xtx_secret_read(optarg, &o->secret))
				return -1;
			o->has_secret = true;
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (!server || argc - optind < 3) {
		fprintf(stderr, "Error: --server, OP, TABLE and KEY are required\n");
		usage(stderr);
		return -1;
	}
	for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (!strcmp(argv[optind], op_names[i].name))
			o->op.opcode = op_names[i].opcode;
	if (!o->op.opcode) {
		fprintf(stderr, "Error: unknown op '%s'\n", argv[optind]);
		return -1;
	}
	if (xtx_parse_u64("TABLE", argv[optind + 1], 0, XTX_MAX_TABLES - 1, &v))
		return -1;
	o->op.table = v;
	if (xtx_parse_u64("KEY", argv[optind + 2], 0, UINT64_MAX, &v))
		return -1;
	o->op.key = v;
	for (i = optind + 3; i < (unsigned int)argc; i++)
		if (parse_field(argv[i], o))
			return -1;
	return xtx_parse_servers("--server", server, port, &o->server, &o->nservers);
}

/* The answer's value: in the slot, or in the op's area (its length is ext.len either way). */
static void print_value(const struct xtx_msgbuf *reply, size_t len, const struct xtx_op *op)
{
	const uint8_t *v = op->value;
	unsigned int i, n = op->vlen;

	if (op->flags & XTX_OPF_EXT) {
		struct xtx_ext x = xtx_msg_ext(op);

		/* TOO_BIG says how long the value is, and carries none of it */
		if (op->status == XTX_ST_TOO_BIG || x.len > x.cap || x.off + (size_t)x.len > len)
			return;
		v = (const uint8_t *)reply + x.off;
		n = x.len;
	}
	for (i = 0; i < n && (op->flags & XTX_OPF_EXT || i < XTX_VALUE_INLINE); i++)
		printf("%02x", v[i]);
}

static void print_answer(const struct op_opts *o, const struct xtx_msgbuf *reply, size_t len,
			 uint32_t tries)
{
	const struct xtx_op *a = &reply->ops[0];
	const char *fmt = o->json ?
		"{\"op\":\"%s\",\"status\":\"%s\",\"version\":%llu,\"token\":%llu,\"flags\":%u,"
		"\"tries\":%u,\"vlen\":%u,\"value\":\"" :
		"op=%s status=%s version=%llu token=%llu flags=0x%x tries=%u vlen=%u value=";

	/* newer than the shared status names */
	const char *st = a->status == XTX_ST_FENCED ? "fenced" : xtx_status_name(a->status);

	printf(fmt, xtx_op_name(a->opcode) ?: "?", st,
	       (unsigned long long)a->version, (unsigned long long)a->token, a->flags, tries,
	       (a->flags & XTX_OPF_EXT) ? xtx_msg_ext(a).len : a->vlen);
	print_value(reply, len, a);
	printf(o->json ? "\"}\n" : "\n");
}

/* One request, the same id until answered: a retransmission is never run twice. */
static int call(struct xtx_transport *tr, const struct op_opts *o, struct xtx_msgbuf *reply,
		size_t *reply_len, uint32_t *tries)
{
	struct xtx_msgbuf req;
	struct xtx_dgram d = { .buf = &req }, in = { .buf = reply, .cap = sizeof(*reply) };
	struct xtx_op *op;
	uint64_t deadline;
	int n;

	xtx_msg_init(&req, o->client_id, xtx_req_id_start());
	req.hdr.epoch = (uint16_t)o->epoch;
	op = xtx_msg_add(&req, o->op.opcode, o->op.table, o->op.key);
	*op = o->op;
	/* over XTX_VALUE_MAX: a cap of its length anyway, for the server to refuse */
	if (o->area_len)
		xtx_msg_set_area(op, o->area_len, o->area_len);
	else if (o->room)
		xtx_msg_set_area(op, o->room, 0);
	d.len = xtx_msg_finish(&req);
	if (d.len > sizeof(req)) {
		fprintf(stderr, "Error: the request would be %zu bytes\n", d.len);
		return -1;
	}
	if (o->area_len)
		memcpy(xtx_msg_area(&req, op), o->area_value,
		       o->area_len > XTX_VALUE_MAX ? XTX_VALUE_MAX : o->area_len);
	if (o->has_secret)
		xtx_mac_sign(&o->secret, &req, (uint32_t)d.len);
	for (*tries = 1; *tries <= OP_MAX_TRIES; (*tries)++) {
		if (xtx_transport_send(tr, &d, 1) < 0)
			return -1;
		deadline = xtx_now_ns() + o->timeout_ns;
		/* a RETRY answer ends the wait early, but the resend waits for the timeout */
		bool retry = false;

		for (uint64_t now; (now = xtx_now_ns()) < deadline;) {
			n = xtx_transport_recv(tr, &in, 1, deadline - now);
			if (n < 0)
				return -1;
			if (!retry && n && xtx_msg_is_reply_to(reply, in.len, &req.hdr)) {
				if (reply->hdr.status != XTX_ST_RETRY) {
					*reply_len = in.len;
					return 0;
				}
				retry = true;
			}
		}
	}
	return -1;
}

int bench_op_main(int argc, char **argv)
{
	struct op_opts o = {};
	struct xtx_transport tr;
	struct xtx_msgbuf reply;
	size_t reply_len = 0;
	uint32_t tries;
	int rc = BENCH_EXIT_FAIL;

	if (parse_args(argc, argv, &o))
		return BENCH_EXIT_USAGE;
	if (xtx_transport_open(&tr, o.server, 1)) {
		free(o.server);
		return BENCH_EXIT_FAIL;
	}
	if (call(&tr, &o, &reply, &reply_len, &tries)) {
		fprintf(stderr, "Error: no answer from the server after %u tries\n", OP_MAX_TRIES);
	} else if (reply.hdr.status == XTX_ST_EPOCH) {
		fprintf(stderr, "Error: request refused: epoch (the server serves epoch %u%s)\n",
			reply.hdr.epoch, reply.hdr.epoch == XTX_EPOCH_FENCED ? ": fenced, none" : "");
	} else if (reply.hdr.status != XTX_ST_OK) {
		fprintf(stderr, "Error: request refused: %s\n", xtx_status_name(reply.hdr.status));
	} else {
		print_answer(&o, &reply, reply_len, tries);
		rc = BENCH_EXIT_OK;
	}
	xtx_transport_close(&tr);
	free(o.server);
	return rc;
}
