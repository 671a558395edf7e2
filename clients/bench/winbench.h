/* SPDX-License-Identifier: GPL-2.0-only */
/* The window engine shared by xtxbench ping and log: threads keep requests in flight per server. */
#ifndef XTX_WINBENCH_H
#define XTX_WINBENCH_H

#include <getopt.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <xtx/msg.h>
#include "benchthread.h"
#include "hist.h"
#include "reqwin.h"
#include "transport.h"

#define WB_MAX_THREADS		256
/* Counters a subcommand may add to the common ones. */
#define WB_NX			4

/* Only u64 fields: added and copied as an array. */
struct wb_counts {
	uint64_t sent;		/* datagrams sent, retransmissions included */
	uint64_t replies;	/* datagrams received from a server */
	uint64_t retrans;
	uint64_t dups;		/* replies to requests already answered */
	uint64_t errors;	/* replies that were wrong */
	uint64_t unanswered;	/* requests given up at the end */
	uint64_t answered;	/* replies that answered a request (its ops ran) */
	uint64_t epoch_refused;	/* replies refusing the request's configuration epoch */
	uint64_t x[WB_NX];	/* the subcommand's own, indexed by its names */
};

/* The options every window subcommand has. */
struct wb_opts {
	struct sockaddr_in *servers;
	unsigned int nservers;
	uint16_t port;
	uint32_t threads;
	uint64_t duration_ns;
	uint32_t ops;
	uint32_t inflight;
	uint32_t client_base;
	uint64_t timeout_ns;
	enum xtx_transport_kind transport;	/* --transport */
	uint16_t epoch;		/* the cluster's, with --zk; 0 (static) otherwise */
	bool json;
};

/* Above every subcommand's own option codes. */
#define WB_OPT_TRANSPORT	0x7000
#define WB_OPT_ZK		0x7001
#define WB_OPT_ZK_NAME		0x7002

struct wb_thread;

/* What makes a subcommand: everything else is the engine's. */
struct wb_bench {
	const char *name;	/* for the -v line naming the client ids */
	const void *ctx;	/* the subcommand's options, handed back to it */

	/* Seeds t->state for a thread whose request ids start at first. */
	void (*init_thread)(struct wb_thread *t, uint64_t first);
	/* Adds the request's ops to r->msg before it goes to server. */
	void (*fill)(struct wb_thread *t, unsigned int server, struct xtx_req *r);
	/*
	 * Checks the ops of an answer whose header said OK against the
	 * request sl.  Counts it in t->c and returns true, or reports it with
	 * wb_bad_reply() and returns false.
	 */
	bool (*check)(struct wb_thread *t, const struct xtx_dgram *d, const struct xtx_req *sl);
	/* Optional: a hint for a header status other than BAD_CLIENT, or "". */
	const char *(*status_hint)(uint8_t status);
	/* The progress line up to the errors (the engine ends it). */
	void (*progress)(const void *ctx, const struct wb_counts *cur,
			 const struct wb_counts *prev, const struct xtx_hist *h,
			 unsigned int sec, double dt);
	/* The subcommand's counters for a thread's -vv line. */
	void (*thread_debug)(const struct wb_counts *c, char *buf, size_t len);
	/* The summary on stdout; rates use at_stop. */
	void (*summary)(const void *ctx, const struct wb_counts *c,
			const struct wb_counts *at_stop, const struct xtx_hist *h,
			double run_s, uint64_t stray);
};

struct wb_thread {
	struct bench_thread bt;
	const struct wb_bench *b;
	const struct wb_opts *o;
	struct xtx_transport tr;
	struct xtx_reqwins win;
	uint64_t state;		/* the subcommand's: nonce seed, txn sequence */
	uint16_t server_epoch;	/* the epoch a server last refused ours for */

	/* Owned by the thread. */
	struct wb_counts c;
	struct wb_counts at_stop;	/* c when the stop was seen: rates use this */

	/* Read by the progress reporter under bt.lock. */
	struct wb_counts pub;
};

/* Every bad reply is counted in c.errors. */
#define wb_bad_reply(t, server, ...) \
	bench_bad_reply(&(t)->bt, &(t)->c.errors, &(t)->tr.servers[server], __VA_ARGS__)

/*
 * A subcommand's own options for wb_parse_args(): longopts and their
 * short letters, and a handler returning 0 or -1 after printing why.
 */
struct wb_extra_opts {
	const struct option *longopts;	/* ends with an all-zero entry */
	const char *shortopts;
	int (*handle)(void *ctx, int c, const char *arg);
	void *ctx;
};

/*
 * Parses the common options and the extra ones (may be NULL), printing
 * usage() for -h (returns 1) or a bad command line (returns -1).
 */
int wb_parse_args(int argc, char **argv, struct wb_opts *o, const struct wb_extra_opts *x,
		  void (*usage)(FILE *out));

/*
 * Ends a summary with what every window subcommand reports last: the
 * latencies and the retransmit, duplicate, unanswered, stray and error
 * counts, as the rest of a JSON object or as two lines of text.
 */
void wb_print_tail(const struct wb_counts *c, const struct xtx_hist *h, uint64_t stray,
		   bool json);

/* Runs the benchmark and prints its summary; returns a BENCH_EXIT_ code. */
int wb_run(const struct wb_bench *b, const struct wb_opts *o);

#endif /* XTX_WINBENCH_H */
