/* SPDX-License-Identifier: GPL-2.0-only */
/* What the log segments a snapshot removed held: transactions a peer may still ask about. */
#ifndef XTXD_HELD_H
#define XTXD_HELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A replica answers a peer's question from its log: "held" when it holds
 * the transaction's complete record.  A snapshot that removes segments
 * would make it forget, and answer "not held" for a transaction it
 * installed, so the others abort what it committed.  So the snapshot
 * writes DATADIR/held-NNNNNN.xheld (N its own number) before it removes
 * anything: the multi-replica transactions whose complete record those
 * segments held, and the transactions logged there decided (a HADES
 * validation's writes), each list sorted.  The resolver answers from these
 * as it would from the segments, for as long as a decision is kept
 * (--keep-decided: a peer asking later asks about a transaction long
 * decided); older files go.
 *
 * Layout: struct xtxd_held_hdr, then nheld and nvalid uint64_t txn ids.
 */
#define XTXD_HELD_MAGIC		"XTXHELD\n"
#define XTXD_HELD_VERSION	1

struct xtxd_held_hdr {
	char magic[8];
	uint32_t version;
	uint32_t snap;		/* the snapshot that removed the segments */
	uint64_t created_ns;	/* CLOCK_REALTIME: when it expires, after a restart too */
	uint64_t nheld;
	uint64_t nvalid;
	uint32_t crc;		/* CRC32C of the bytes before it, then of the ids */
	uint32_t pad;
};

_Static_assert(sizeof(struct xtxd_held_hdr) == 48, "held file header layout");

/*
 * How long the lists are kept (the resolver's --keep-decided); 0, the
 * default: no resolver, so no file is written and none kept.
 */
void xtxd_held_set_keep(uint64_t keep_ns);
bool xtxd_held_wanted(void);
/*
 * Writes the lists of snapshot snap (sorted, duplicates allowed) durably
 * and adds them to the index; 0 or a negative errno (nothing added).
 */
int xtxd_held_add(int dirfd, uint32_t snap, const uint64_t *held, size_t nheld,
		  const uint64_t *valid, size_t nvalid);
/*
 * Drops the files and lists older than the keep duration.  A damaged file
 * is removed with a warning: a question about what it named is answered
 * as if the log had been pruned without it.
 */
void xtxd_held_expire(int dirfd);
/* Reads every file of dirfd into the index (at start); 0 or a negative errno. */
int xtxd_held_load(int dirfd);
/* A multi-replica transaction whose complete record a removed segment held. */
bool xtxd_held_has(uint64_t txn);
/* A transaction whose decided writes a removed segment held (HADES: validated here). */
bool xtxd_held_validated(uint64_t txn);
/* Ids in the index, both kinds: for tests and stats. */
size_t xtxd_held_count(void);
/* Forgets the index (a stop). */
void xtxd_held_reset(void);

#endif /* XTXD_HELD_H */
