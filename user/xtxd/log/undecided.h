/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Transactions the logs leave undecided at start (recover.c), and the locks
 * that keep their keys from being read until the resolver decides them.
 *
 * A transaction logged on several replicas, complete here and with no
 * recorded decision, committed if every replica holds its complete record,
 * which this server alone cannot see.  Most such transactions committed
 * long ago (the normal commit records no decision), and one fact proves it:
 * a later write of one of its keys with a higher version, anywhere in the
 * snapshot or the logs.  A write is logged only under the key's lock at its
 * primary, at the version installed there plus one, so a higher version
 * means this one was installed there, and a write is installed only once
 * committed.  Those are replayed.  The rest (at most the last writer of a
 * key) may have lost a replica's record and be decided abort: replayed,
 * they would leave this replica ahead of the others for good.  So they are
 * not replayed, and their keys are held here by an exclusive LOGGED lock,
 * as the primary held them, until the resolver decides them (it installs a
 * commit's writes, then frees the locks).
 */
#ifndef XTXD_UNDECIDED_H
#define XTXD_UNDECIDED_H

#include <stddef.h>
#include <stdint.h>
#include "target.h"

/* The highest version logged or snapshotted for each key seen. */
struct xtxd_vmax {
	struct xtxd_vmax_key *k;
	size_t cap, n;		/* cap: a power of two */
};

/* Raises (table, key)'s highest version to version; 0 or -ENOMEM. */
int xtxd_vmax_note(struct xtxd_vmax *m, uint8_t table, uint64_t key, uint64_t version);
/* (table, key)'s highest version noted, or 0. */
uint64_t xtxd_vmax_get(const struct xtxd_vmax *m, uint8_t table, uint64_t key);
void xtxd_vmax_free(struct xtxd_vmax *m);

/* A key an undecided transaction wrote, to be held for it. */
struct xtxd_hold {
	uint64_t txn, key;
	uint8_t table;
};

struct xtxd_holds {
	struct xtxd_hold *v;
	size_t n, cap;
};

int xtxd_holds_add(struct xtxd_holds *h, uint64_t txn, uint8_t table, uint64_t key);
void xtxd_holds_free(struct xtxd_holds *h);

/*
 * Takes an exclusive LOGGED hold of each key's lock slot for its
 * transaction, with requests held (before XDP answers anyone), and counts
 * its table's pin in user space's row as the resolver uncounts it.  A slot
 * another undecided transaction holds already (two keys sharing a slot) is
 * left to that one, and counted in *shared.  0 or a negative errno.
 */
int xtxd_holds_take(const struct xtx_target *t, const struct xtxd_holds *h, size_t *taken,
		    size_t *shared);

#endif /* XTXD_UNDECIDED_H */
