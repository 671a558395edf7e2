/* SPDX-License-Identifier: GPL-2.0-only */
/* The xtxbench subcommands: each is a main() of its own in clients/bench_<name>.c. */
#ifndef XTX_BENCH_H
#define XTX_BENCH_H

/* Exit codes every subcommand uses. */
#define BENCH_EXIT_OK		0
#define BENCH_EXIT_FAIL		1	/* ran, but a check failed or nothing worked */
#define BENCH_EXIT_USAGE	2	/* bad command line */

/*
 * argv[0] is the subcommand's name; options follow.  To add one, write
 * clients/bench_<name>.c, declare its main here and list it in
 * xtxbench.c's bench_cmds[].
 */
int bench_ping_main(int argc, char **argv);
int bench_counter_main(int argc, char **argv);
int bench_lock2pl_main(int argc, char **argv);
int bench_lockocc_main(int argc, char **argv);
int bench_kv_main(int argc, char **argv);
int bench_op_main(int argc, char **argv);
int bench_log_main(int argc, char **argv);
int bench_tatp_main(int argc, char **argv);
int bench_smallbank_main(int argc, char **argv);
int bench_tpcc_main(int argc, char **argv);
int bench_ycsb_main(int argc, char **argv);
int bench_retwis_main(int argc, char **argv);
int bench_bank_main(int argc, char **argv);
int bench_resolve_main(int argc, char **argv);

#endif /* XTX_BENCH_H */
