/* SPDX-License-Identifier: GPL-2.0-only */
/* The seven TATP transactions as libxtx step functions (workloads.md §1.4, §1.5). */
#ifndef XTX_TATP_TXN_H
#define XTX_TATP_TXN_H

#include <stdbool.h>
#include "libxtx.h"
#include "tatp.h"

struct tatp_txn {
	struct tatp_input in;
	/* Filled by the step function. */
	uint32_t s_id;		/* the subscriber sub_nbr resolved to (UL, ICF, DCF) */
	bool logical;		/* a user abort for a logical reason: missing or inactive rows */
	bool broken;		/* a row that must exist was missing or malformed */
	int h[4];		/* read handles */
};

/*
 * Arms txn for a run of its inputs (again, for a retry).  Then start it
 * with tatp_step as the step function and txn as its argument.
 *
 * Outcomes: COMMITTED is a logical success.  ABORTED with XTX_CAUSE_USER
 * is a logical failure when txn->logical is set (broken data when
 * txn->broken is); ICF's XTX_CAUSE_EXISTS (the CF row exists: the
 * duplicate-key error the spec accepts) and DCF's XTX_CAUSE_NOT_FOUND (no
 * row to delete) are logical failures too.  Anything else is concurrency.
 */
void tatp_txn_arm(struct tatp_txn *txn, const struct tatp_input *in);
enum xtx_step tatp_step(struct xtx_txn *t, void *txn);

/* Is an ended transaction a logical failure rather than a concurrency abort? */
bool tatp_txn_logical(const struct tatp_txn *txn, const struct xtx_txn_result *res);

#endif /* XTX_TATP_TXN_H */
