/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * TPC-C's five transactions as libxtx step functions (clause 2.4-2.8).
 * A transaction touches at most 32 keys, so two business transactions
 * run as several: Delivery as one transaction per district (clause
 * 2.7.4.2 allows up to ten), StockLevel as one reading the district and
 * its last 20 orders' lines, then its stock rows in batches (it needs
 * only committed reads, clause 3.3.2.5 and 3.4.0.1's table).
 */
#ifndef XTX_TPCC_TXN_H
#define XTX_TPCC_TXN_H

#include <stdbool.h>
#include "libxtx.h"
#include "tpcc.h"

/* Stock rows one StockLevel batch reads. */
#define TPCC_SL_BATCH		30
/* Distinct items in 20 orders of up to 15 lines. */
#define TPCC_SL_ITEMS		(TPCC_STOCK_LEVEL_ORDERS * TPCC_MAX_LINES)

struct tpcc_txn {
	struct tpcc_input in;
	const struct tpcc_cfg *cfg;
	uint64_t now;			/* O_ENTRY_D, OL_DELIVERY_D, H_DATE */
	uint64_t hist_key;		/* Payment's new history row */
	/* StockLevel: 0 reads the orders, 1 a batch of stock rows (items[]) */
	unsigned int part;
	unsigned int nitems;
	uint32_t items[TPCC_SL_ITEMS];
	/* Filled by the step function. */
	bool logical;			/* NewOrder's rollback: a user abort */
	bool broken;			/* a row missing or malformed, an index disagreeing */
	bool empty;			/* Delivery: the district had no undelivered order */
	uint32_t c_id;			/* its customer (Payment, OrderStatus, Delivery) */
	uint32_t o_id;			/* the order it made, read or delivered */
	int64_t total;			/* NewOrder: the order's total; Delivery: paid in */
	unsigned int low;		/* StockLevel: stock rows below the threshold */
	int h[XTX_TXN_MAX_KEYS];
};

/*
 * Arms txn for its inputs (again, for a retry).  COMMITTED means done;
 * ABORTED with XTX_CAUSE_USER is NewOrder's rollback when txn->logical is
 * set, broken data when txn->broken is; any other abort is concurrency.
 */
void tpcc_txn_arm(struct tpcc_txn *txn);
enum xtx_step tpcc_step(struct xtx_txn *t, void *txn);

#endif /* XTX_TPCC_TXN_H */
