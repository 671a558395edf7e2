// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench: dispatches to the benchmark and check subcommands. */
#include <stdio.h>
#include <string.h>
#include "bench.h"
#include "history_check.h"
#include "version.h"

static const struct bench_cmd {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *summary;
} bench_cmds[] = {
	{ "ping", bench_ping_main, "PING round trips: latency and throughput of the data path" },
	{ "counter", bench_counter_main, "COUNTER_ADD sequence: retransmissions run once" },
	{ "lock2pl", bench_lock2pl_main, "2PL lock manager: shared/exclusive locks on skewed keys" },
	{ "lockocc", bench_lockocc_main, "OCC lock manager: validates and try-locks on skewed keys" },
	{ "kv", bench_kv_main, "GET/INSERT/UPDATE/DELETE packed per packet; --check against a model" },
	{ "log", bench_log_main, "LOG_APPEND packed per packet: appends/s and LOG_FULLs (drain)" },
	{ "bank", bench_bank_main, "transfers through libxtx (occ, 2pl); --check: money conserved" },
	{ "tatp", bench_tatp_main, "TATP over libxtx (occ default): rates, latency; --verify" },
	{ "smallbank", bench_smallbank_main, "SmallBank over libxtx (2pl default); --verify" },
	{ "tpcc", bench_tpcc_main, "TPC-C over libxtx (occ default): tpmC, NewOrder or the mix; "
	  "--verify" },
	{ "ycsb", bench_ycsb_main, "YCSB A/B/C/F over libxtx (occ default); --verify" },
	{ "retwis", bench_retwis_main, "Retwis over libxtx (occ default); --verify" },
	{ "check-history", history_check_main,
	  "checks --history files for serializability: Adya's G0..G2 from versions" },
	{ "op", bench_op_main, "one op to one server, the answer printed (for shell scripts)" },
	{ "resolve", bench_resolve_main, "what became of a transaction its client was told in_doubt" },
};

#define NR_CMDS (sizeof(bench_cmds) / sizeof(bench_cmds[0]))

static void usage(FILE *out)
{
	unsigned int i;

	fprintf(out,
		"Usage: xtxbench SUBCOMMAND [options]\n"
		"Load generators and end-to-end checks for xtx servers.\n"
		"\n"
		"Subcommands:\n");
	for (i = 0; i < NR_CMDS; i++)
		fprintf(out, "  %-12s %s\n", bench_cmds[i].name, bench_cmds[i].summary);
	fprintf(out,
		"\n"
		"xtxbench SUBCOMMAND -h (or xtxbench help SUBCOMMAND) shows its options;\n"
		"xtxbench --version the release and build.\n"
		"\n"
		"Example: xtxbench ping --servers 10.77.0.2,10.77.1.2 --duration 3\n");
}

static const struct bench_cmd *find_cmd(const char *name)
{
	unsigned int i;

	for (i = 0; i < NR_CMDS; i++)
		if (!strcmp(bench_cmds[i].name, name))
			return &bench_cmds[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct bench_cmd *cmd;
	const char *name;

	if (argc < 2) {
		usage(stderr);
		return BENCH_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		xtx_print_version("xtxbench");
		return BENCH_EXIT_OK;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    (!strcmp(argv[1], "help") && argc == 2)) {
		usage(stdout);
		return BENCH_EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		char *help_argv[] = { argv[2], "-h", NULL };

		name = argv[2];
		cmd = find_cmd(name);
		if (cmd)
			return cmd->main(2, help_argv);
	} else {
		name = argv[1];
		cmd = find_cmd(name);
		if (cmd)
			return cmd->main(argc - 1, argv + 1);
	}
	fprintf(stderr, "Error: unknown subcommand '%s'\n", name);
	usage(stderr);
	return BENCH_EXIT_USAGE;
}
