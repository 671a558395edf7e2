/* SPDX-License-Identifier: GPL-2.0-only */
/* What a snapshot carries: the log records its position covers that its dump does not hold. */
#ifndef XTXD_SNAPCARRY_H
#define XTXD_SNAPCARRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xtx/log.h>
#include "logfile.h"

struct xtx_snap_pos;

/*
 * A snapshot takes its log positions, then dumps the store.  A write
 * logged before the positions is often installed only after the dump read
 * its key: a transaction between its log and commit round trips, a commit
 * a replica has not applied yet, a transaction whose coordinator vanished.
 * Recovery skips every record the positions cover, so such a write would
 * be gone after a restart.  So the records the positions newly cover (the
 * previous snapshot's carried ones, and those logged between the two
 * snapshots) are read once before the dump and once after it:
 *   - a write whose key the dump holds at its version or newer is in the
 *     snapshot (a delete: the dump lacks the key, or holds it newer);
 *   - a multi-replica transaction is carried whole (every record of it in
 *     range, its participants too) when a write of it is not in the dump,
 *     or its record here is not complete yet (the rest comes later, and
 *     recovery must see it whole), unless it was decided abort;
 *   - a write of one replica (or logged decided) is carried alone when it
 *     is not in the dump;
 *   - where a carried write's key is gone from the dump because a newer
 *     delete in range removed it, that delete is carried too, so recovery
 *     does not bring the key back (a synthetic decided delete, txn 0).
 * The carried records go into the snapshot, which recovery and the
 * resolver read as they read the logs.  What is not carried is in the
 * dump; of it, the complete multi-replica transactions and the decided
 * writes' transactions are listed for the held files (held.h).
 */
struct xtxd_carry_scope {
	uint32_t ncpu;
	const struct xtx_snap_pos *pos;		/* the new snapshot's, [ncpu] */
	struct xtx_log_epoch ep;		/* its ring incarnation */
	const struct xtx_snap_pos *prev;	/* the previous snapshot's, [prev_ncpu]; NULL: none */
	uint32_t prev_ncpu;
	struct xtx_log_epoch prev_ep;
	/* xtxd's own log: recovery reads all of it, so only segments being removed count */
	const uint32_t *user_removed;
	size_t nuser_removed;
};

struct xtxd_carry_out {
	struct xtx_log_entry *e;	/* the carried entries, whole writes (malloc'd) */
	size_t n;
	uint64_t *held, *valid;		/* for the held file (malloc'd) */
	size_t nheld, nvalid;
	uint64_t *txns;			/* carried multi-replica transactions, sorted (malloc'd) */
	size_t ntxns;
	uint64_t writes, tombs;		/* carried writes, and deletes carried for them */
	uint64_t scanned, aborted;	/* records read; of transactions decided abort */
};

struct xtxd_carry;

/*
 * Reads the records in range (prev: the previous snapshot's carried
 * entries) from the segments of dirfd.  NULL and *err on failure.
 */
struct xtxd_carry *xtxd_carry_begin(int dirfd, const struct xtxd_carry_scope *s,
				    const struct xtx_log_entry *prev, size_t nprev, int *err);
/* The dump holds (table, key) at version: call for each key it writes. */
void xtxd_carry_dumped(struct xtxd_carry *c, uint8_t table, uint64_t key, uint64_t version);
/*
 * After the dump: reads the records again and fills *out (free it with
 * xtxd_carry_out_free).  0 or a negative errno.
 */
int xtxd_carry_end(struct xtxd_carry *c, int dirfd, struct xtxd_carry_out *out);
void xtxd_carry_free(struct xtxd_carry *c);
void xtxd_carry_out_free(struct xtxd_carry_out *o);

#endif /* XTXD_SNAPCARRY_H */
