/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * TPC-C's consistency conditions (clause 3.3.2) on a snapshot of the
 * store, and that the index rows agree with the rows they index.
 */
#ifndef XTX_TPCC_CHECK_H
#define XTX_TPCC_CHECK_H

#include <stdint.h>
#include "tpcc.h"
#include "wlsnap.h"

/* What one snapshot holds, for the checks across the run. */
struct tpcc_totals {
	uint64_t orders, neworders, history;
	int64_t w_ytd;			/* cents, over all warehouses */
};

/*
 * Checks snapshot s (when: "before" or "after", for the messages):
 * every row decodes and is in range, each table holds what the
 * population made of it; conditions 1-4 (W_YTD = sum D_YTD; D_NEXT_O_ID - 1
 * = max O_ID = max NO_O_ID; the new-orders contiguous; sum O_OL_CNT = the
 * order lines), 5-7 (carrier null iff a new-order row; the lines' count and
 * delivery dates agree with the order), 8-9 (W_YTD and D_YTD = their history
 * amounts), 10 and 12 (C_BALANCE = delivered amounts - payments, and
 * + C_YTD_PAYMENT); the indexes: the new-order head is the oldest new-order
 * (or D_NEXT_O_ID), each customer's last order is its highest O_ID, each
 * name row lists exactly that name's customers in C_FIRST order.  Prints
 * each breach with wl_violation() and each passed group with
 * wl_check_ok(); returns the violations.
 */
unsigned long tpcc_check_snap(const struct tpcc_cfg *cfg, const struct wl_snap *s,
			      const char *when, struct tpcc_totals *tot);

#endif /* XTX_TPCC_CHECK_H */
