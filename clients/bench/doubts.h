/* SPDX-License-Identifier: GPL-2.0-only */
/* Transactions a run left in doubt: kept, asked about at its end (xtx_txn_resolve), recorded. */
#ifndef XTX_DOUBTS_H
#define XTX_DOUBTS_H

#include <stdint.h>
#include "libxtx.h"

struct history_writer;

/* One transaction that ended XTX_IN_DOUBT, with what its history record needs. */
struct doubt {
	struct xtx_txn_result res;
	unsigned int n;
	struct xtx_access a[XTX_TXN_MAX_KEYS];
};

/* A client thread's transactions in doubt. */
struct doubts {
	struct doubt *v;
	unsigned int n, cap;
};

/* What asking about them found, summed over threads. */
struct doubt_totals {
	uint64_t kept, committed, aborted, unresolved;
};

/*
 * From the done callback of a transaction that ended XTX_IN_DOUBT: keeps
 * it (its history record waits for the answer).  0 or -ENOMEM.
 */
int doubts_keep(struct doubts *d, const struct xtx_txn *t, const struct xtx_txn_result *res);

/*
 * After the run, with c idle: asks the servers about each kept
 * transaction (waiting up to timeout_ns for each), adds the answers to
 * tot and, with w, records each as resolved (still in doubt if
 * unanswered), so the history checker holds the answer against the
 * versions; then forgets them.  0, or -1 when w refused a record.
 */
/* Told each kept transaction's answer (by its id), when asked for. */
typedef void (*doubt_settled_fn)(void *arg, uint64_t txn_id, enum xtx_outcome o);
int doubts_settle(struct doubts *d, struct xtx_client *c, struct history_writer *w,
		  uint64_t timeout_ns, struct doubt_totals *tot, doubt_settled_fn settled,
		  void *arg);
/* "WHO: N transactions in doubt, asked the servers: ..." on stderr, when there were any. */
void doubts_report(const char *who, const struct doubt_totals *tot);

void doubts_free(struct doubts *d);

#endif /* XTX_DOUBTS_H */
