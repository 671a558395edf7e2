/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Transactions recovery found complete here but undecided, and the locks
 * that keep their keys from being read or written until the resolver
 * decides them.
 *
 * A transaction logged on several replicas commits once every replica
 * holds its complete record, which this server alone cannot see.  Recovery
 * replays one when the decisions file says committed, or when the log holds
 * a commit mark of it (XTX_LOGF_COMMITTED: XDP appends one for each commit
 * its coordinator sent, and a coordinator sends them only once decided).
 * A complete record with neither was in flight when the server stopped:
 * another replica may lack it, and the servers then decide abort.
 * Replayed, its write would stay here alone, for good.  So it is not
 * replayed; where it was logged at its key's primary (XTX_LOGF_PRIMARY),
 * the key's lock is taken for it again, exclusive and LOGGED, as the
 * primary held it (and XTX_LOCK_RECOVERED: no UNLOCK frees it, its own
 * COMMIT_PRIMARY does); and the resolver takes it as unfinished until decided,
 * whatever the key's version says, then installs a commit's writes and
 * frees the locks.
 *
 * Two may want one lock slot (keys share slots, and a coordinator that
 * aborts after logging frees its lock while its record stays undecided):
 * the first takes it, and when it is decided the resolver hands the slot
 * straight to the next (xtxd_undecided_next()), so no other transaction
 * is granted it in between.
 */
#ifndef XTXD_UNDECIDED_H
#define XTXD_UNDECIDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "target.h"

/*
 * Whether a resolver runs here (xtxd --peers or --zk), set before recovery.
 * Without one nothing would ever decide a held transaction, and its keys
 * would stay locked for good: recovery then replays it as complete records
 * were replayed before marks existed, and says so.  keep_ns: how long the
 * other replicas remember a transaction they decided or installed
 * (--keep-decided): one held from longer ago may be answered "not held" by
 * a replica that forgot it, which aborts it though it may have committed,
 * so recovery warns about those.
 */
void xtxd_undecided_set_resolver(bool runs, uint64_t keep_ns);
bool xtxd_undecided_resolver(void);
uint64_t xtxd_undecided_keep_ns(void);
/* Notes txn as undecided here (recovery, one thread); 0 or -ENOMEM. */
int xtxd_undecided_add_txn(uint64_t txn);
/* Notes a key txn logged at its primary here, to be locked for it; 0 or -ENOMEM. */
int xtxd_undecided_add_key(uint64_t txn, uint8_t table, uint64_t key);
/*
 * Takes the noted keys' locks, with requests held (before XDP answers
 * anyone): a slot txn holds already (an adopted program's) is kept; one
 * another holds is counted in *shared.  Counts each lock's table pin in
 * user space's row, as the resolver uncounts it.  0 or a negative errno.
 */
int xtxd_undecided_take(const struct xtx_target *t, size_t *taken, size_t *shared);
/*
 * The start's recovery is over (whatever it found): until then the
 * resolver leaves every transaction of its table alone.
 */
void xtxd_undecided_ready(void);
bool xtxd_undecided_is_ready(void);
/* Whether txn is undecided here since the start (thread-safe). */
bool xtxd_undecided_has(uint64_t txn);
/* txn is decided and applied here: no longer held for (thread-safe). */
void xtxd_undecided_done(uint64_t txn);
/*
 * Another undecided transaction than txn waiting for lock slot slot: 1 and
 * its txn, table and key, or 0.  Thread-safe.
 */
bool xtxd_undecided_next(uint64_t txn, uint32_t slot, uint64_t *next, uint8_t *table,
			 uint64_t *key);
/* txn holds slot now (handed over): it waits no more. */
void xtxd_undecided_handed(uint64_t txn, uint32_t slot);
/* How many are left (thread-safe). */
size_t xtxd_undecided_count(void);

#endif /* XTXD_UNDECIDED_H */
