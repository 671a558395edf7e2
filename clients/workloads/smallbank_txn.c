// SPDX-License-Identifier: GPL-2.0-only
/*
 * SmallBank over libxtx, canonical semantics with integer cents: every
 * written row is read for update (an exclusive lock under 2PL, a fused
 * read-and-lock under OCC); BAL's rows and WC's savings are plain reads
 * (shared locks, or OCC's validated read set), as DINT and FaSST map them.
 */
#include <string.h>
#include "smallbank_txn.h"

void sb_txn_arm(struct sb_txn *txn, enum sb_type type, uint32_t a0, uint32_t a1)
{
	memset(txn, 0, sizeof(*txn));
	txn->type = type;
	txn->a0 = a0;
	txn->a1 = a1;
}

static enum xtx_step broken(struct sb_txn *x)
{
	x->broken = true;
	return XTX_STEP_ABORT;
}

/* Round 0: queue reads of rows (table, account); for_update marks which are written. */
static enum xtx_step read_rows(struct xtx_txn *t, struct sb_txn *x, unsigned int n,
			       const uint8_t *tables, const uint32_t *accts,
			       const bool *for_update)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		x->h[i] = xtx_get(t, tables[i], accts[i], for_update[i] ? XTX_GET_FOR_UPDATE : 0);
		if (x->h[i] < 0)
			return broken(x);
	}
	return XTX_STEP_READ;
}

/* Round 1: the balances read; false if a row is missing or malformed. */
static bool balances(struct xtx_txn *t, const struct sb_txn *x, unsigned int n, int64_t *bal)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		const void *v;
		uint16_t vlen;

		if (xtx_value(t, x->h[i], &v, &vlen) || sb_decode(v, vlen, &bal[i]))
			return false;
	}
	return true;
}

static bool put(struct xtx_txn *t, uint8_t table, uint32_t a, int64_t cents)
{
	uint8_t v[SB_VLEN];

	sb_encode(cents, v);
	return !xtx_put(t, table, a, v, sizeof(v));
}

enum xtx_step sb_step(struct xtx_txn *t, void *arg)
{
	/* rows each type reads, in order, and which of them it writes */
	static const struct {
		unsigned int n;
		uint8_t tables[3];
		bool second[3];		/* the row is a1's, not a0's */
		bool for_update[3];
	} rows[SB_NTYPES] = {
		[SB_AMG] = { 3, { SB_SAV, SB_CHK, SB_CHK }, { 0, 0, 1 }, { 1, 1, 1 } },
		[SB_BAL] = { 2, { SB_SAV, SB_CHK }, { 0, 0 }, { 0, 0 } },
		[SB_DC] = { 1, { SB_CHK }, { 0 }, { 1 } },
		[SB_SP] = { 2, { SB_CHK, SB_CHK }, { 0, 1 }, { 1, 1 } },
		[SB_TS] = { 1, { SB_SAV }, { 0 }, { 1 } },
		[SB_WC] = { 2, { SB_SAV, SB_CHK }, { 0, 0 }, { 0, 1 } },
	};
	struct sb_txn *x = arg;
	int64_t b[3];
	uint32_t accts[3];
	unsigned int i;
	bool ok = true;

	if ((unsigned int)x->type >= SB_NTYPES)
		return broken(x);
	if (xtx_txn_round(t) == 0) {
		for (i = 0; i < rows[x->type].n; i++)
			accts[i] = rows[x->type].second[i] ? x->a1 : x->a0;
		return read_rows(t, x, rows[x->type].n, rows[x->type].tables, accts,
				 rows[x->type].for_update);
	}
	if (!balances(t, x, rows[x->type].n, b))
		return broken(x);
	x->delta = 0;
	switch (x->type) {
	case SB_AMG:
		/* a0's money moves to a1's checking, an overdraft with it */
		x->moved_debt = b[0] + b[1] < 0;
		ok = put(t, SB_CHK, x->a1, b[2] + b[0] + b[1]) && put(t, SB_SAV, x->a0, 0) &&
		     put(t, SB_CHK, x->a0, 0);
		break;
	case SB_BAL:
		x->balance = b[0] + b[1];
		break;
	case SB_DC:
		ok = put(t, SB_CHK, x->a0, b[0] + SB_DC_AMOUNT);
		x->delta = SB_DC_AMOUNT;
		break;
	case SB_SP:
		if (b[0] < SB_SP_AMOUNT) {
			x->logical = true;
			return XTX_STEP_ABORT;
		}
		ok = put(t, SB_CHK, x->a0, b[0] - SB_SP_AMOUNT) &&
		     put(t, SB_CHK, x->a1, b[1] + SB_SP_AMOUNT);
		break;
	case SB_TS:
		ok = put(t, SB_SAV, x->a0, b[0] + SB_TS_AMOUNT);
		x->delta = SB_TS_AMOUNT;
		break;
	case SB_WC:
		/* the overdraft costs a dollar more; checking may go negative */
		x->penalty = b[0] + b[1] < SB_WC_AMOUNT;
		x->delta = -(SB_WC_AMOUNT + (x->penalty ? SB_WC_PENALTY : 0));
		ok = put(t, SB_CHK, x->a0, b[1] + x->delta);
		break;
	default:
		return broken(x);
	}
	return ok ? XTX_STEP_COMMIT : broken(x);
}
