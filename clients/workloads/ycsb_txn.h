/* SPDX-License-Identifier: GPL-2.0-only */
/* YCSB's transactions as a libxtx step function: K requests, read in one round, written back. */
#ifndef XTX_YCSB_TXN_H
#define XTX_YCSB_TXN_H

#include <stdbool.h>
#include "libxtx.h"
#include "ycsb.h"

struct ycsb_req {
	uint64_t key;
	uint64_t stamp;		/* what a write stamps its field with: unique per write */
	uint8_t op;		/* enum ycsb_op */
	uint8_t field;		/* the field a write replaces */
	int h;
};

struct ycsb_txn {
	const struct ycsb_cfg *cfg;
	unsigned int n;
	struct ycsb_req req[YCSB_MAX_OPS];
	/* Filled by the step function. */
	bool broken;		/* a record missing or malformed */
	const char *why;	/* ... what was wrong with it */
	uint64_t bad_key;
};

/*
 * Draws K requests on distinct keys; a write's stamp is stamp_base + its
 * index (stamp_base leaves room for YCSB_MAX_OPS), its field uniform.
 */
void ycsb_txn_draw(struct ycsb_txn *x, const struct ycsb_cfg *cfg, uint64_t *rng,
		   uint64_t stamp_base);
/* Clears what a run left, for a retry of the same requests. */
void ycsb_txn_rearm(struct ycsb_txn *x);
/* The type the engine counts it as. */
enum ycsb_type ycsb_txn_type(const struct ycsb_txn *x);
enum xtx_step ycsb_step(struct xtx_txn *t, void *txn);

#endif /* XTX_YCSB_TXN_H */
