// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench resolve: what became of a transaction left in doubt (xtx_txn_resolve). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/proto.h>
#include "bench.h"
#include "libxtx.h"
#include "num.h"
#include "secret.h"
#include "servers.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench resolve --servers IP[,IP...] --client-id ID --txn TXN\n"
		"                        --witnesses I[,I...] --protocol NAME [options]\n"
		"Asks the servers what became of a transaction whose client was told in_doubt,\n"
		"and prints outcome=committed, aborted or in_doubt (not known yet: ask again).\n"
		"Asking fences the transaction where it is not held, so the answer stays true.\n"
		"\n"
		"  -s, --servers LIST       the cluster's servers, in the clients' order\n"
		"  -p, --port PORT          their UDP port (default %u; the resolvers listen on +1)\n"
		"  -c, --client-id ID       the transaction's client\n"
		"      --txn TXN            its id (0x...), or its sequence number of that client\n"
		"      --witnesses LIST     server indices that logged it (OCC, 2PL) or took part\n"
		"                           in its intend-to-commit (HADES)\n"
		"  -P, --protocol NAME      occ, 2pl or hades: the transaction's (asked as another\n"
		"                           protocol's, the answer would be wrong)\n"
		"  -R, --replication R      its R (default min(3, servers)); OCC/2PL need R >= 2\n"
		"      --timeout DUR        how long to wait for a decision (default 5s)\n"
		"      --secret-file PATH   the cluster's shared secret (xtxd --secret-file)\n"
		"  -h, --help\n"
		"\n"
		"Exit status: 0 decided, 1 still in doubt, 2 bad usage.\n"
		"Example: xtxbench resolve --servers 10.77.0.2,10.77.1.2,10.77.2.2 --client-id 9 \\\n"
		"             --protocol hades --txn 7 --witnesses 0,1,2\n",
		XTX_DEFAULT_PORT);
}

enum { OPT_TXN = 256, OPT_WITNESSES, OPT_TIMEOUT, OPT_SECRET_FILE };

struct resolve_opts {
	struct xtx_client_cfg cfg;
	struct xtx_secret secret;
	uint64_t txn, witnesses, timeout_ns;
};

static int parse_args(int argc, char **argv, struct resolve_opts *o)
{
	static const struct option longopts[] = {
		{ "servers", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "txn", required_argument, NULL, OPT_TXN },
		{ "witnesses", required_argument, NULL, OPT_WITNESSES },
		{ "protocol", required_argument, NULL, 'P' },
		{ "replication", required_argument, NULL, 'R' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "secret-file", required_argument, NULL, OPT_SECRET_FILE },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *servers = NULL;
	struct sockaddr_in *addrs = NULL;
	uint32_t port = XTX_DEFAULT_PORT, client = UINT32_MAX;
	bool protocol_set = false;
	int c, err = 0;

	o->timeout_ns = 5000000000ull;
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:p:c:P:R:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': servers = optarg; break;
		case 'p': err = xtx_parse_u32("--port", optarg, 1, 65534, &port); break;
		case 'c':
			err = xtx_parse_u32("--client-id", optarg, 0, (1u << XTX_CLIENT_BITS) - 1,
					    &client);
			break;
		case OPT_TXN: err = xtx_parse_u64("--txn", optarg, 1, UINT64_MAX, &o->txn); break;
		case OPT_WITNESSES:
			err = xtx_parse_index_set("--witnesses", optarg, XTX_MAX_SERVERS,
						  &o->witnesses);
			break;
		case 'P':
			protocol_set = true;
			err = xtx_protocol_parse(optarg, &o->cfg.protocol);
			if (err)
				fprintf(stderr, "Error: --protocol: occ, 2pl or hades, not '%s'\n",
					optarg);
			break;
		case 'R': err = xtx_parse_u32("--replication", optarg, 1, 3, &o->cfg.replication); break;
		case OPT_TIMEOUT: err = xtx_parse_duration("--timeout", optarg, &o->timeout_ns); break;
		case OPT_SECRET_FILE:
			err = xtx_secret_read(optarg, &o->secret);
			o->cfg.secret = err ? NULL : &o->secret;
			break;
		case 'h': usage(stdout); exit(BENCH_EXIT_OK);
		default: usage(stderr); return -1;
		}
		if (err)
			return -1;
	}
	if (optind < argc || !servers || client == UINT32_MAX || !o->txn || !o->witnesses ||
	    !protocol_set) {
		if (optind < argc)
			fprintf(stderr, "Error: unexpected argument '%s'\n", argv[optind]);
		else
			fprintf(stderr, "Error: --servers, --client-id, --txn, --witnesses and "
				"--protocol are required\n");
		return -1;
	}
	if (xtx_parse_servers("--servers", servers, (uint16_t)port, &addrs, &o->cfg.nservers))
		return -1;
	if (o->cfg.nservers < 64 && o->witnesses >> o->cfg.nservers) {
		fprintf(stderr, "Error: --witnesses: an index beyond the %u servers\n",
			o->cfg.nservers);
		return -1;
	}
	/* a sequence number names a transaction of the client */
	if (!(o->txn >> XTX_TXN_SEQ_BITS))
		o->txn = xtx_txn_make(client, o->txn);
	if (xtx_txn_client(o->txn) != client) {
		fprintf(stderr, "Error: --txn %#llx is not a transaction of client %u\n",
			(unsigned long long)o->txn, client);
		return -1;
	}
	o->cfg.servers = addrs;
	o->cfg.client_id = client;
	return 0;
}

int bench_resolve_main(int argc, char **argv)
{
	struct resolve_opts o = {};
	struct xtx_txn_result res;
	struct xtx_client *c;
	enum xtx_outcome out;

	if (parse_args(argc, argv, &o))
		return BENCH_EXIT_USAGE;
	c = xtx_client_open(&o.cfg);
	if (!c)
		return BENCH_EXIT_USAGE;
	res = (struct xtx_txn_result){ .outcome = XTX_IN_DOUBT, .txn_id = o.txn,
				       .servers = o.witnesses };
	out = xtx_txn_resolve(c, &res, o.timeout_ns);
	printf("txn=%#llx outcome=%s\n", (unsigned long long)o.txn, xtx_outcome_name(out));
	xtx_client_close(c);
	free((void *)o.cfg.servers);
	return out == XTX_IN_DOUBT ? BENCH_EXIT_FAIL : BENCH_EXIT_OK;
}
