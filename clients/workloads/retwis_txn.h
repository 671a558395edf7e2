/* SPDX-License-Identifier: GPL-2.0-only */
/* Retwis's four transactions as libxtx step functions. */
#ifndef XTX_RETWIS_TXN_H
#define XTX_RETWIS_TXN_H

#include <stdbool.h>
#include "libxtx.h"
#include "retwis.h"

struct rw_txn {
	const struct rw_cfg *cfg;
	enum rw_type type;
	uint32_t a;		/* the user acting (ADD: none) */
	uint32_t b;		/* FOLLOW: whom a follows or unfollows */
	uint32_t part;		/* ADD: the counter partition */
	unsigned int nshow;	/* TLINE: tweets to fetch, 1..RW_MAX_SHOW */
	/* Filled by the step function. */
	bool logical;		/* a follow past a list's bound, a user out of tweet ids */
	bool broken;		/* data that breaks an invariant (aborted at once) */
	bool suspect;		/* read something that is wrong if the transaction commits */
	const char *why;
	bool unfollowed;	/* FOLLOW: it removed the relation */
	uint64_t new_uid;	/* ADD */
	unsigned int nfan;
	uint32_t fan[RW_MAX_FANOUT];	/* POST: the followers' timelines it reaches */
	unsigned int ntids;
	uint64_t tids[RW_MAX_SHOW];	/* TLINE: the tweets fetched */
	int h[4 + RW_MAX_FANOUT + RW_MAX_SHOW];
};

/* Arms x (again, for a retry of the same inputs). */
void rw_txn_arm(struct rw_txn *x, const struct rw_cfg *cfg, enum rw_type type, uint32_t a,
		uint32_t b, uint32_t part, unsigned int nshow);
/* Draws a transaction by the mix. */
void rw_txn_draw(struct rw_txn *x, const struct rw_cfg *cfg, uint64_t *rng);
enum xtx_step rw_step(struct xtx_txn *t, void *txn);

#endif /* XTX_RETWIS_TXN_H */
