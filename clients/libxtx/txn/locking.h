/* SPDX-License-Identifier: GPL-2.0-only */
/* The lock-based commit path OCC and 2PL share (FaSST/DINT): lock, log, commit backups, commit primaries. */
#ifndef XTX_TXN_LOCKING_H
#define XTX_TXN_LOCKING_H

#include <stdbool.h>
#include <stdint.h>
#include "internal.h"

/* Where OCC and 2PL differ inside the shared path. */
struct lk_rules {
	uint8_t op_lock_excl;		/* XTX_OP_OCC_LOCK or XTX_OP_LOCK_EXCL */
	uint8_t op_unlock_excl;		/* XTX_OP_OCC_UNLOCK or XTX_OP_UNLOCK_EXCL */
	enum txn_op_kind plain_read;	/* a read not for update: TOP_READ or TOP_LOCK_SHARED */
	/* Queues the check of the read set once the write keys are locked; NULL: none. */
	unsigned int (*queue_validation)(struct xtx_txn *t);
};

/* Queues the reads the step function asked for in this round; returns the ops queued. */
unsigned int lk_queue_reads(struct xtx_txn *t, const struct lk_rules *r);
/* Moves from phase to phase until one has ops to wait for, or the end. */
void lk_phases(struct xtx_txn *t, const struct lk_rules *r);
/* Fills the op's header fields, and the rest for the kinds of the shared path. */
void lk_fill_op(const struct txn_opref *ref, struct xtx_op *op, const struct lk_rules *r);
/* Takes the answer to an op of the shared path's kinds. */
void lk_on_reply(struct txn_opref *ref, const struct xtx_op *op);
/* The answer says another transaction holds the key exclusively. */
bool lk_locked_by_other(const struct xtx_op *op);

#endif /* XTX_TXN_LOCKING_H */
