// SPDX-License-Identifier: GPL-2.0-only
/*
 * An application of libxtx in one page: move money between two accounts
 * kept on sharded, replicated xtx servers, in one serializable transaction.
 *
 *   build/examples/transfer --servers 10.0.0.1,10.0.0.2,10.0.0.3 FROM TO AMOUNT
 *
 * An account that does not exist yet is opened with 100.  The transfer is
 * refused (a user abort) when FROM cannot cover it.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libxtx.h"
#include "servers.h"

#define ACCOUNTS	12	/* table id (TATP uses 1-5, SmallBank 8-9) */
#define OPENING		100

struct transfer {
	uint64_t from, to;
	int64_t amount;
	int64_t from_after, to_after;
	int hfrom, hto;
	const char *why;	/* a user abort's reason */
};

static int64_t balance_of(struct xtx_txn *t, int h)
{
	const void *v;
	uint16_t vlen;
	int64_t b;

	if (xtx_value(t, h, &v, &vlen) == -ENOENT)
		return OPENING;
	memcpy(&b, v, sizeof(b));
	return b;
}

/* Round 0 reads both accounts for update; round 1 decides and writes. */
static enum xtx_step transfer_step(struct xtx_txn *t, void *arg)
{
	struct transfer *x = arg;
	int64_t a, b;

	if (xtx_txn_round(t) == 0) {
		x->hfrom = xtx_get(t, ACCOUNTS, x->from, XTX_GET_FOR_UPDATE);
		x->hto = xtx_get(t, ACCOUNTS, x->to, XTX_GET_FOR_UPDATE);
		return x->hfrom < 0 || x->hto < 0 ? XTX_STEP_ABORT : XTX_STEP_READ;
	}
	a = balance_of(t, x->hfrom);
	b = balance_of(t, x->hto);
	if (a < x->amount) {
		x->why = "insufficient funds";
		return XTX_STEP_ABORT;
	}
	x->from_after = a - x->amount;
	x->to_after = b + x->amount;
	if (xtx_put(t, ACCOUNTS, x->from, &x->from_after, sizeof(x->from_after)) ||
	    xtx_put(t, ACCOUNTS, x->to, &x->to_after, sizeof(x->to_after)))
		return XTX_STEP_ABORT;
	return XTX_STEP_COMMIT;
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"Usage: %s --servers IP[,IP...] [--protocol occ|2pl|hades] FROM TO AMOUNT\n"
		"Moves AMOUNT from account FROM to account TO in one serializable transaction\n"
		"(an account not there yet opens with %d).  Exits 0 when it committed.\n"
		"\n"
		"  -s, --servers LIST   the servers, in the cluster's order\n"
		"  -P, --protocol P     occ (default), 2pl or hades\n"
		"  -h, --help           this text\n"
		"\n"
		"Example: %s --servers 10.77.0.2,10.77.1.2,10.77.2.2 7 8 25\n",
		prog, OPENING, prog);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "servers", required_argument, NULL, 's' },
		{ "protocol", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct xtx_client_cfg cfg = { .protocol = XTX_PROTO_OCC };
	struct transfer x = { 0 };
	struct xtx_txn_result res;
	struct sockaddr_in *servers;
	const char *list = NULL;
	struct xtx_client *c;
	unsigned int n;
	int opt;

	while ((opt = getopt_long(argc, argv, "s:P:h", longopts, NULL)) != -1) {
		if (opt == 's') {
			list = optarg;
		} else if (opt == 'P' && !xtx_protocol_parse(optarg, &cfg.protocol)) {
			continue;
		} else if (opt == 'h') {
			usage(stdout, argv[0]);
			return 0;
		} else {
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (!list || argc - optind != 3) {
		usage(stderr, argv[0]);
		return 2;
	}
	x.from = strtoull(argv[optind], NULL, 0);
	x.to = strtoull(argv[optind + 1], NULL, 0);
	x.amount = strtoll(argv[optind + 2], NULL, 0);
	if (x.from == x.to || x.amount <= 0) {
		fprintf(stderr, "Error: two different accounts and a positive amount\n");
		return 2;
	}
	if (xtx_parse_servers("--servers", list, XTX_DEFAULT_PORT, &servers, &n))
		return 2;
	cfg.servers = servers;
	cfg.nservers = n;
	cfg.client_id = (uint32_t)getpid() % 1000;
	c = xtx_client_open(&cfg);
	if (!c)
		return 1;
	/* A conflict aborts without waiting (no-wait locks): simply run it again. */
	do {
		xtx_run(c, transfer_step, &x, &res);
	} while (res.outcome == XTX_ABORTED && xtx_cause_retryable(res.cause));
	if (res.outcome == XTX_COMMITTED)
		printf("committed: account %" PRIu64 " = %" PRId64 ", account %" PRIu64 " = %" PRId64
		       " (%u round trips, %.0f us)\n", x.from, x.from_after, x.to, x.to_after,
		       res.rounds, res.latency_ns / 1e3);
	else if (res.outcome == XTX_FAILED)
		printf("failed: no server answered before the commit point, so nothing was "
		       "written; are the servers up, and reachable from here?\n");
	else if (res.outcome == XTX_IN_DOUBT)
		printf("in doubt: the servers decide it (xtxbench resolve asks them)\n");
	else
		printf("%s: %s\n", xtx_outcome_name(res.outcome),
		       x.why ? x.why : xtx_cause_name(res.cause));
	xtx_client_close(c);
	free(servers);
	return res.outcome == XTX_COMMITTED ? 0 : 1;
}
