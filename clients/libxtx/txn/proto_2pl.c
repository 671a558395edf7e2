// SPDX-License-Identifier: GPL-2.0-only
/*
 * No-wait 2PL as DINT runs SmallBank: every read takes a lock that returns
 * the value (shared, or exclusive for a key read for update); a conflict
 * aborts at once.  Then the shared lock-based path logs and commits
 * (locking.c), and the shared locks are released with the primary commits.
 *
 * A lease can take a shared lock back from a slow coordinator, and a writer
 * may then commit the key: so a transaction that writes checks, once all its
 * locks are taken and before it logs, that each key it holds only shared
 * still has the version it read (its exclusive locks are proven by the log
 * appends themselves).  A read-only one learns it from its releases.
 */
#include "locking.h"

/* Keys held shared only, re-checked before the log (see above). */
static unsigned int tpl_queue_validation(struct xtx_txn *t)
{
	unsigned int i, n = 0;

	if (!txn_has_writes(t))
		return 0;
	for (i = 0; i < t->nkeys; i++) {
		struct txn_key *k = &t->keys[i];

		if (!(k->flags & KF_SHARED) || (k->flags & KF_EXCL))
			continue;
		txn_queue(t, i, k->flags & KF_ABSENT ? TOP_VALIDATE_ABSENT : TOP_VALIDATE,
			  k->replica[0]);
		n++;
	}
	return n;
}

static const struct lk_rules tpl_rules = {
	.op_lock_excl = XTX_OP_LOCK_EXCL,
	.op_unlock_excl = XTX_OP_UNLOCK_EXCL,
	.plain_read = TOP_LOCK_SHARED,
	.queue_validation = tpl_queue_validation,
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
