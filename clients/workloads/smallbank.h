/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * SmallBank as key-value rows (workloads.md Part 2): two tables of int64
 * cents keyed by account id, the six transactions (the five of Alomari et
 * al. plus H-Store's SendPayment, as every published mix has them), the
 * 15/15/15/25/15/15 mix, FaSST's hotspot and deterministic initial balances.
 */
#ifndef XTX_SMALLBANK_H
#define XTX_SMALLBANK_H

#include <stdbool.h>
#include <stdint.h>

/* Table ids on the wire, apart from TATP's 1..5 so both fit on one set of servers. */
enum sb_table {
	SB_SAV = 8,		/* SAVINGS, key acct_id */
	SB_CHK = 9,		/* CHECKING, key acct_id */
};

/* A balance: little-endian signed int64 cents. */
#define SB_VLEN			8

/* Amounts in cents (§2.3, Part 4). */
#define SB_DC_AMOUNT		130
#define SB_SP_AMOUNT		500
#define SB_TS_AMOUNT		2020
#define SB_WC_AMOUNT		500
#define SB_WC_PENALTY		100

/* Initial balances: whole dollars in [10,000, 50,000], as cents. */
#define SB_INIT_MIN_CENTS	(10000 * 100ll)
#define SB_INIT_MAX_CENTS	(50000 * 100ll)

#define SB_MAX_ACCOUNTS		(1u << 31)

enum sb_type {
	SB_AMG,			/* Amalgamate */
	SB_BAL,			/* Balance */
	SB_DC,			/* DepositChecking */
	SB_SP,			/* SendPayment */
	SB_TS,			/* TransactSavings */
	SB_WC,			/* WriteCheck */
	SB_NTYPES,
};

extern const char *const sb_type_names[SB_NTYPES];
/* 15/15/15/25/15/15 in the order above. */
extern const unsigned int sb_default_mix[SB_NTYPES];

struct sb_cfg {
	uint32_t accounts;		/* N */
	uint32_t hot;			/* H: accounts 0..H-1 are the hot set, >= 2 */
	double hot_prob;		/* a transaction's accounts are all hot with this probability */
	unsigned int mix[SB_NTYPES];	/* relative weights */
	uint64_t seed;			/* of the initial balances */
};

static inline void sb_encode(int64_t cents, uint8_t *out)
{
	uint64_t v = (uint64_t)cents;
	unsigned int i;

	for (i = 0; i < SB_VLEN; i++, v >>= 8)
		out[i] = (uint8_t)v;
}

static inline int sb_decode(const uint8_t *in, uint8_t vlen, int64_t *cents)
{
	uint64_t v = 0;
	int i;

	if (vlen != SB_VLEN)
		return -1;
	for (i = SB_VLEN - 1; i >= 0; i--)
		v = v << 8 | in[i];
	*cents = (int64_t)v;
	return 0;
}

/* The initial balance of account a in table (SB_SAV or SB_CHK): a function of (seed, table, a). */
int64_t sb_initial_balance(const struct sb_cfg *cfg, uint8_t table, uint32_t a);

/* A transaction type by cfg->mix. */
enum sb_type sb_pick_type(const struct sb_cfg *cfg, uint64_t *rng);

/*
 * The accounts of one transaction: decided once whether it is hot, then
 * a0 (and a1 != a0 for AMG and SP) uniform in the hot set or in all N.
 */
void sb_pick_accounts(const struct sb_cfg *cfg, enum sb_type type, uint64_t *rng,
		      uint32_t *a0, uint32_t *a1);

/* The default hot set: 4 % of N, at least 2 (two-account transactions need a pair). */
uint32_t sb_default_hot(uint32_t accounts);

#endif /* XTX_SMALLBANK_H */
