/* SPDX-License-Identifier: GPL-2.0-only */
/* A table of logged multi-replica transactions: their writes, replica set and outcome. */
#ifndef XTXD_TXN_RECORDS_H
#define XTXD_TXN_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xtx/log.h>
#include "logrec.h"

/* What is known of a transaction's fate. */
enum xtxd_outcome {
	XTXD_OUT_NONE = 0,	/* undecided (as far as this server knows) */
	XTXD_OUT_COMMIT = 1,
	XTXD_OUT_ABORT = 2,
};

/* A peer's answer to "do you hold this transaction's complete log record?" */
enum xtxd_answer {
	XTXD_ANS_NONE = 0,	/* not asked or not answered yet */
	XTXD_ANS_HOLD = 1,	/* it holds the complete record */
	XTXD_ANS_NOT_HELD = 2,	/* it does not, and has fenced the txn: it never will */
	XTXD_ANS_COMMITTED = 3,	/* already decided */
	XTXD_ANS_ABORTED = 4,
	/*
	 * Not a peer's answer: the replica failed and the configuration
	 * moved it out, so it votes no more (Xenic's recovery decides with
	 * the replicas left).
	 */
	XTXD_ANS_GONE = 5,
};

/*
 * Servers a transaction's record here names: the union of its writes'
 * replica sets (a write names its key's) and of its participants when a
 * META entry lists them (XTX_LOGF_META), so the resolver asks every server
 * the transaction logged at.  Every server of a cluster fits.
 */
#define XTXD_TXN_MAX_REPLICAS	64

/*
 * One transaction as this server's log holds it.  last: the write the
 * coordinator flagged XTX_LOGF_LAST arrived, so this server's part of the
 * record is complete.  The resolver's bookkeeping rides along.
 */
struct xtxd_txn {
	uint64_t txn;
	uint64_t first_ns;		/* CLOCK_MONOTONIC when the first write was seen */
	uint8_t nrep;
	uint16_t rep[XTXD_TXN_MAX_REPLICAS];	/* the union, in the order first seen */
	bool last;
	bool meta;			/* its participant list (META entry) arrived */
	uint16_t last_count;		/* the LAST entry's nwrites (META counted): 0 when not told */
	uint8_t outcome;		/* enum xtxd_outcome */
	bool resolving;
	bool apply_pending;		/* decided, not yet wholly applied here */
	bool disk_searched;		/* the logs on disk were searched for its records */
	uint8_t answer[XTXD_TXN_MAX_REPLICAS];	/* enum xtxd_answer, by position in rep */
	uint8_t acked[XTXD_TXN_MAX_REPLICAS];	/* the peer took our decision */
	uint64_t sent_ns;		/* last query or decision sent */
	uint64_t decided_ns;
	uint32_t nw, cap;
	/*
	 * The writes, in log order: a big value's head (XTX_LOGF_EXT) here,
	 * its bytes in big[] at the same index (NULL for the others).
	 */
	struct xtx_log_entry *w;
	uint8_t **big;
	struct xtxd_txn *next;		/* hash chain */
};

struct xtxd_txns {
	struct xtxd_txn **b;
	size_t nb, n;
};

/* The transaction, created empty (with first_ns = now) when create; NULL if absent or ENOMEM. */
struct xtxd_txn *xtxd_txns_get(struct xtxd_txns *t, uint64_t txn, bool create, uint64_t now);
/*
 * This server's part of the record is complete: the LAST write arrived and,
 * when it counted them, every write it counted (distinct keys: a write
 * logged twice after a retransmission counts once).
 */
bool xtxd_txn_complete(const struct xtxd_txn *x);
/*
 * Adds one logged write (replica set and LAST from it), or a META entry's
 * participants (not a write: never among w); 0 or -ENOMEM.
 */
int xtxd_txns_add(struct xtxd_txns *t, const struct xtx_log_write *w, uint64_t now);
/* Write i of x with its whole value. */
void xtxd_txn_write(const struct xtxd_txn *x, uint32_t i, struct xtx_log_write *out);
/*
 * Copies of x's writes with their values (malloc'd, the caller frees), in
 * *n; NULL on ENOMEM.
 */
struct xtx_log_write *xtxd_txn_writes(const struct xtxd_txn *x, uint32_t *n);
void xtxd_txns_del(struct xtxd_txns *t, uint64_t txn);
void xtxd_txns_free(struct xtxd_txns *t);
/* Calls fn on each; fn may delete the one it is given (and no other). */
void xtxd_txns_each(struct xtxd_txns *t, void (*fn)(struct xtxd_txn *x, void *arg), void *arg);

/*
 * FaRM's rule over the replicas' answers (self included): commit when one
 * says committed or every one holds the complete record; abort when one
 * says aborted or that it does not hold it (it fenced the txn, so it never
 * will); otherwise wait for more answers.  A replica moved out of the
 * configuration (XTXD_ANS_GONE) is not waited for: every one left holding
 * the complete record commits (Xenic's rule), so at least one must be left.
 */
enum xtxd_outcome xtxd_decide(const uint8_t *answers, unsigned int n);

#endif /* XTXD_TXN_RECORDS_H */
