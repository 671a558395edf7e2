/* SPDX-License-Identifier: GPL-2.0-only */
/* The decisions file: the outcome of every transaction the servers decided after a timeout. */
#ifndef XTXD_DECISIONS_H
#define XTXD_DECISIONS_H

#include <stdint.h>

/*
 * <data dir>/decided.xdec: append-only records of 16 bytes, each
 * { u64 txn, u32 outcome (enum xtxd_outcome), u32 CRC32C of the 12 bytes
 * before }, fdatasync-ed before the decision takes effect anywhere.  A torn
 * last record is ignored.  The normal commit path writes nothing here: a
 * transaction whose record is complete on every replica is committed.
 */
#define XTXD_OUTCOME_FILE	"decided.xdec"

struct xtxd_outcome_rec {
	uint64_t txn;
	uint32_t outcome;
	uint32_t crc;
};

_Static_assert(sizeof(struct xtxd_outcome_rec) == 16, "decision record layout");

/*
 * Opens (creating) the file in dirfd for appending, after cutting off a
 * torn last record (a crash mid-append: nobody acted on it), so the next
 * record follows the good ones; an fd or a negative errno.
 */
int xtxd_outcome_open(int dirfd);
/*
 * Appends one decision and syncs it; 0 or a negative errno.  After a
 * failed fdatasync the kernel may have dropped what was written since the
 * last good one, and a later fdatasync may succeed without it: every later
 * append fails too (-EIO), and the caller must stop (fail-stop) rather
 * than act on a decision that may not be on disk.
 */
int xtxd_outcome_append(int fd, uint64_t txn, uint32_t outcome);
/*
 * Calls fn for every record of the file in dirfd, in order (a later
 * record of the same txn repeats the same decision).  0 (also when there
 * is no file), or -EBADMSG when a record other than the last is damaged
 * (the file is; decisions after it would be lost) after saying so, or a
 * negative errno.  A torn last record is skipped: never synced, never
 * acted on.
 */
int xtxd_outcome_load(int dirfd, int (*fn)(uint64_t txn, uint32_t outcome, void *arg),
		      void *arg);

/*
 * Replaces the file in dirfd by one holding just recs (written aside,
 * synced, renamed over, directory synced): a crash leaves the old file or
 * the new one, never a mix.  0 or a negative errno.
 */
int xtxd_outcome_rewrite(int dirfd, const struct xtxd_outcome_rec *recs, size_t n);

#endif /* XTXD_DECISIONS_H */
