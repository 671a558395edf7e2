/* SPDX-License-Identifier: GPL-2.0-only */
/* SmallBank's six transactions as libxtx step functions (workloads.md §2.3). */
#ifndef XTX_SMALLBANK_TXN_H
#define XTX_SMALLBANK_TXN_H

#include <stdbool.h>
#include "libxtx.h"
#include "smallbank.h"

struct sb_txn {
	enum sb_type type;
	uint32_t a0, a1;	/* a1 != a0 for AMG and SP, else a1 = a0 */
	/* Filled by the step function. */
	bool logical;		/* SP with insufficient funds: a user abort */
	bool broken;		/* an account row missing or malformed */
	bool penalty;		/* WC took the overdraft branch */
	bool moved_debt;	/* AMG moved a negative sum (an overdraft) to a1 */
	int64_t delta;		/* cents the transaction adds to the bank's total if it commits */
	int64_t balance;	/* BAL's answer */
	int h[3];
};

/*
 * Arms txn (again, for a retry).  COMMITTED means done; ABORTED with
 * XTX_CAUSE_USER is SP's insufficient funds when txn->logical is set,
 * broken data when txn->broken is; any other abort is concurrency.
 */
void sb_txn_arm(struct sb_txn *txn, enum sb_type type, uint32_t a0, uint32_t a1);
enum xtx_step sb_step(struct xtx_txn *t, void *txn);

#endif /* XTX_SMALLBANK_TXN_H */
