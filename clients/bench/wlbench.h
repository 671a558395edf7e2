/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The transaction-workload engine behind xtxbench tatp and smallbank:
 * options, populate (xtxctl load or transactions), closed-loop threads keeping
 * --inflight libxtx transactions going each, progress, summary and JSON,
 * and the before/after snapshots --verify checks.
 */
#ifndef XTX_WLBENCH_H
#define XTX_WLBENCH_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "libxtx.h"
#include "wlsnap.h"

#define WL_MAX_TYPES		8
#define WL_MAX_THREADS		64
/* Counters a workload adds, e.g. SendPayment's insufficient funds. */
#define WL_NX			4

/* How a transaction ended, as the workload judges it. */
enum wl_verdict {
	WL_COMMITTED,		/* committed and did what it meant to */
	WL_LOGICAL,		/* a logical failure (missing row, insufficient funds, ...) */
	WL_ABORTED,		/* a concurrency abort: res->cause says why */
	WL_FAILED,		/* servers unreachable; nothing was written */
	WL_IN_DOUBT,		/* libxtx cannot tell whether it committed */
	WL_BROKEN,		/* saw data that breaks an invariant (a row that must exist) */
};

/* Only u64 fields: added and copied as an array. */
struct wl_counts {
	uint64_t attempted[WL_MAX_TYPES];	/* retries (--retry same) included */
	uint64_t retried[WL_MAX_TYPES];		/* attempts that were retries */
	uint64_t committed[WL_MAX_TYPES];
	uint64_t logical[WL_MAX_TYPES];
	uint64_t aborted[WL_MAX_TYPES];
	uint64_t failed[WL_MAX_TYPES];
	uint64_t in_doubt[WL_MAX_TYPES];
	uint64_t unknown[WL_MAX_TYPES];	/* still in flight when the run was given up */
	uint64_t broken[WL_MAX_TYPES];
	uint64_t causes[XTX_CAUSE__COUNT];	/* of the concurrency aborts */
	uint64_t x[WL_NX];
};

#define WL_NCOUNTS	(sizeof(struct wl_counts) / sizeof(uint64_t))

/* What the engine tells a workload's callbacks about the thread they run on. */
struct wl_tinfo {
	unsigned int idx;
	uint32_t client_id;
	uint64_t *rng;
	bool verify;		/* keep what the checks need */
};

/* Writes one row to every replica's load stream; 0 or -1 after printing why. */
typedef int (*wl_emit_fn)(void *arg, uint8_t table, uint64_t key, const uint8_t *value,
			  uint16_t vlen);

struct wl_workload {
	const char *name;
	unsigned int ntypes;
	const char *const *type_names;
	size_t txn_size;		/* a transaction's inputs and state */
	size_t thread_size;		/* a thread's own state (logs for --verify) */
	const uint8_t *tables;		/* the tables it uses, for snapshots */
	unsigned int ntables;
	void *ctx;			/* its options */
	enum xtx_protocol default_protocol;
	/*
	 * Its own options: longopts (ends with a zeroed entry) and a handler
	 * returning 0 or -1 after printing why; check() validates them all
	 * after parsing and fills defaults that depend on common options.
	 */
	const struct option *longopts;
	int (*handle_opt)(void *ctx, int c, const char *arg);
	int (*check_opts)(void *ctx, unsigned int threads, uint64_t seed);
	/*
	 * Optional, after check_opts: the cluster's size and the run's
	 * protocol, for options counted per server and protocols it cannot
	 * use; 0 or -1 after printing why.
	 */
	int (*check_run)(void *ctx, unsigned int nservers, enum xtx_protocol protocol);
	/*
	 * Optional: the longest value it writes to one of its tables, once its
	 * options are checked.  Every client reserves that much read room for
	 * the table ahead (xtx_client_table_value_max), and under HADES one over
	 * XTX_VALUE_INLINE is refused before anything runs.
	 */
	uint16_t (*value_max)(const void *ctx, uint8_t table);
	void (*usage)(FILE *out);
	/* A line naming its settings, for the summary, or JSON fields each ending in ','. */
	void (*describe)(const void *ctx, bool json);

	int (*thread_init)(void *ctx, void *wt, const struct wl_tinfo *ti);
	void (*thread_free)(void *ctx, void *wt);
	/* Draws a new transaction into txn; returns its type. */
	unsigned int (*begin)(void *ctx, void *wt, void *txn, const struct wl_tinfo *ti);
	/* Called again on txn before a retry of the same inputs (--retry same). */
	void (*rearm)(void *ctx, void *wt, void *txn, const struct wl_tinfo *ti);
	enum xtx_step (*step)(struct xtx_txn *t, void *txn);
	/* The verdict on an ended transaction; keeps what --verify needs in wt. */
	enum wl_verdict (*end)(void *ctx, void *wt, void *txn, const struct xtx_txn_result *res,
			       uint64_t *x);
	/*
	 * Optional: what the servers answered about a transaction that ended
	 * in doubt (its txn_id as end() was given it), once the run is over.
	 */
	void (*settled)(void *ctx, void *wt, uint64_t txn_id, enum xtx_outcome o);
	/* Rates and counts of its own after the per-type table (text or JSON fields + ','). */
	void (*summary)(const void *ctx, const struct wl_counts *c, double secs, bool json);
	/* Every row of the initial data set, handed to emit. */
	int (*populate)(void *ctx, wl_emit_fn emit, void *arg);
	/*
	 * The checks after a run: snapshots before and after, the threads'
	 * states.  Returns the number of violations (each printed with
	 * wl_violation()).
	 */
	unsigned long (*verify)(void *ctx, const struct wl_snap *before,
				const struct wl_snap *after, void *const *wts, unsigned int nthreads,
				const struct wl_counts *c);
};

/* Parses the options, populates, runs, verifies and prints; returns a BENCH_EXIT_ code. */
int wl_main(const struct wl_workload *w, int argc, char **argv);

/* --distribution zipf|uniform, shared by the workloads that pick keys either way: 0 or -1. */
int wl_parse_distribution(const char *arg, const char **dist);

#endif /* XTX_WLBENCH_H */
