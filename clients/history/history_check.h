/* SPDX-License-Identifier: GPL-2.0-only */
/* The exact serializability checker over history files: Adya's phenomena from recorded versions. */
#ifndef XTX_HISTORY_CHECK_H
#define XTX_HISTORY_CHECK_H

#include <stdint.h>
#include <stdio.h>

enum history_anomaly_kind {
	HISTORY_G0,		/* cycle of ww edges (write cycle) */
	HISTORY_G1A,		/* read a version only an aborted/failed transaction wrote */
	HISTORY_G1B,		/* read another transaction's intermediate version */
	HISTORY_G1C,		/* cycle of ww and wr edges, at least one wr */
	HISTORY_G2,		/* cycle with at least one rw anti-dependency */
	HISTORY_DUP,		/* two transactions installed one (key, version): lost update */
	HISTORY_UNKNOWN,	/* read a version nobody installed that cannot be the initial one */
	HISTORY_MISMATCH,	/* read saw present/absent unlike the installing write/delete */
	HISTORY_LOST,		/* the final state lacks a committed write's version */
	HISTORY_ANOMALY__COUNT
};

/* One anomaly as handed to opts.on_anomaly; pointers valid during the call only. */
struct history_anomaly {
	enum history_anomaly_kind kind;
	unsigned int ntxns;
	const uint64_t *txns;	/* the transactions named, cycle order for cycles */
	const char *line;	/* the printed line, without newline */
};

struct history_check_opts {
	FILE *out;		/* anomaly lines; NULL: none printed */
	unsigned int max_print;	/* lines per kind; 0: every one */
	/*
	 * Versions nobody recorded installing are the initial (bulk-loaded)
	 * state: a key has one, below every recorded version of it.  Above
	 * initial_max they are faults however low; 0 means no bound.
	 */
	uint64_t initial_max;
	/* Optional text file of "TABLE KEY VERSION [absent]" lines: the final state. */
	const char *final_state;
	void (*on_anomaly)(void *arg, const struct history_anomaly *a);
	void *arg;
};

struct history_check_report {
	uint64_t files, txns, committed, aborted, failed, in_doubt, in_doubt_included;
	uint64_t ops, reads, writes, keys, edges;
	uint64_t edges_by_kind[3];	/* ww, wr, rw */
	uint64_t unversioned;		/* included writes recorded with version 0 */
	uint64_t sccs;			/* strongly connected components of > 1 transaction */
	uint64_t count[HISTORY_ANOMALY__COUNT];
	uint64_t anomalies;		/* sum of count[] */
};

/*
 * Merges the files and checks them.  Returns 0 when the check ran (anomalies
 * are in r, not the return value), or a negative errno with a message on
 * stderr when a file cannot be read (bad header, truncated record).
 */
int history_check_files(const char **paths, int n, const struct history_check_opts *o,
			struct history_check_report *r);

const char *history_anomaly_name(enum history_anomaly_kind k);

/* The summary line: "history: N transactions, ... anomalies G0=.. G1a=.. ...". */
void history_report_print(FILE *out, const struct history_check_report *r);
void history_report_json(FILE *out, const struct history_check_report *r, double secs);

/* xtx-history-check / xtxbench check-history: exit 0 clean, 1 anomalies, 2 error. */
int history_check_main(int argc, char **argv);

#endif /* XTX_HISTORY_CHECK_H */
