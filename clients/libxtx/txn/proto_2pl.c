// SPDX-License-Identifier: GPL-2.0-only
/*
 * No-wait 2PL as DINT runs SmallBank: every read takes a lock that returns
 * the value (shared, or exclusive for a key read for update); a conflict
 * aborts at once.  The locks make the reads stable, so there is nothing to
 * validate: the shared lock-based path logs and commits (locking.c), and
 * the shared locks are released with the primary commits.
 */
#include "locking.h"

static const struct lk_rules tpl_rules = {
	.op_lock_excl = XTX_OP_LOCK_EXCL,
	.op_unlock_excl = XTX_OP_UNLOCK_EXCL,
	.plain_read = TOP_LOCK_SHARED,
	.queue_validation = NULL,
};

static unsigned int tpl_queue_reads(struct xtx_txn *t)
{
	return lk_queue_reads(t, &tpl_rules);
}

static void tpl_phases(struct xtx_txn *t)
{
	lk_phases(t, &tpl_rules);
}

static void tpl_fill_op(const struct txn_opref *ref, struct xtx_op *op)
{
	lk_fill_op(ref, op, &tpl_rules);
}

const struct txn_protocol txn_proto_2pl = {
	.name = "2pl",
	.queue_reads = tpl_queue_reads,
	.phases = tpl_phases,
	.fill_op = tpl_fill_op,
	.on_reply = lk_on_reply,
};
