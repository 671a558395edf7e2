/* SPDX-License-Identifier: GPL-2.0-only */
/* Snapshots: the KV store saved in the data directory, so recovery replays only newer logs. */
#ifndef XTXD_SNAPSHOT_H
#define XTXD_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/proto.h>
#include "logrec.h"
#include "target.h"

struct xtxd_ovf;
struct xtxd_out;

/*
 * DATADIR/snapshot-NNNNNN.xsnap: a header, the per-CPU log positions it
 * covers, then one CRC-checked record per live key (host byte order), each
 * followed by the rest of a value over XTX_VALUE_INLINE bytes.
 * Each CPU's position is (seg_from, seq): segments numbered below seg_from
 * are wholly in the snapshot; in the others, records of the snapshot's ring
 * incarnation (boot_id, map_id) with seq below seq are too.  Every other
 * record (a later incarnation: the ring starts at seq 0 again, in segments
 * numbered higher) comes after it.  The positions are taken before the
 * store is read, and a write logged before them may be installed only
 * after the store was read (a transaction between its log and commit
 * round trips): version 3 carries such records after the keys
 * (log/snapcarry.h), and recovery reads them as it reads the logs.  A write
 * logged after the positions is in the store, in the log, or both: replay
 * by version makes both harmless.
 */
#define XTX_SNAP_MAGIC		"XTXSNAP\n"
#define XTX_SNAP_VERSION	3
/* No carried records: still read. */
#define XTX_SNAP_VERSION_NOCARRY	2
/* Values of up to XTX_VALUE_INLINE bytes, records of 64 bytes: still read. */
#define XTX_SNAP_VERSION_INLINE	1

struct xtx_snap_hdr {
	char magic[8];
	uint32_t version;
	uint32_t ncpu;		/* positions that follow */
	uint64_t count;		/* records */
	uint8_t boot_id[16];	/* the ring incarnation the positions' seqs belong to */
	uint32_t map_id;
	uint32_t num;		/* the number in the file name */
	uint64_t created_ns;	/* CLOCK_REALTIME: for people only */
	uint32_t rec_size;
	uint32_t crc;		/* CRC32C of the bytes before it, then of the positions */
};

_Static_assert(sizeof(struct xtx_snap_hdr) == 64, "snapshot header layout");

struct xtx_snap_pos {
	uint32_t seg_from;
	uint32_t pad;
	uint64_t seq;
};

struct xtx_snap_rec {
	uint64_t key;
	uint64_t version;
	uint8_t table;
	uint8_t vlen_inline;	/* version 1: the value's length; 0 in version 2 */
	uint16_t vlen;		/* version 2: the value's length, up to XTX_VALUE_MAX */
	uint32_t crc;		/* CRC32C of the record with crc 0, then of its tail */
	uint8_t value[XTX_VALUE_INLINE];	/* the value's first bytes */
};

_Static_assert(sizeof(struct xtx_snap_rec) == 64, "snapshot record layout");

/*
 * Version 2: the bytes of a value past its first XTX_VALUE_INLINE follow
 * the record, zero-padded to a multiple of 8 (this many).
 */
static inline size_t xtx_snap_tail_size(uint16_t vlen)
{
	return vlen > XTX_VALUE_INLINE ? ((size_t)vlen - XTX_VALUE_INLINE + 7) & ~(size_t)7 : 0;
}

/*
 * Version 3: after the records, n log entries (the carried writes, each a
 * head and its continuations, in the logs' layout), then this trailer, the
 * file's last bytes, so a reader can find them without reading the keys.
 */
#define XTX_SNAP_CARRY_MAGIC	"XTXCARY\n"

struct xtx_snap_carry {
	char magic[8];
	uint64_t n;		/* entries */
	uint64_t off;		/* where the first is */
	uint32_t crc;		/* CRC32C of the entries, then of this up to crc */
	uint32_t pad;
};

_Static_assert(sizeof(struct xtx_snap_carry) == 32, "snapshot carry trailer layout");

/*
 * The last record of a snapshot is no key: table XTX_SNAP_FLOOR_TABLE and
 * version the highest version floor of any bucket (kernel or xtxd's).
 * Recovery raises every floor to it, so a key deleted before the snapshot
 * and created again after recovery never reuses a version (no ABA).
 */
#define XTX_SNAP_FLOOR_TABLE	0xff

/* "snapshot-%06u.xsnap" -> 1 and *num, else 0. */
int xtxd_snapshot_name_num(const char *name, uint32_t *num);

/* Where snapshots go: xtxd's data directory (copied). */
void xtxd_snapshot_set_dir(const char *dir);
/*
 * Called after every snapshot that covers the logs before its positions
 * (one taken while a copier keeps the logs does not), from the thread that
 * took it: what only the logs it covers needed can go too (the resolver's
 * decisions).  Must not block.  Set before any snapshot.
 */
void xtxd_snapshot_set_after(void (*fn)(void));
/*
 * Whether the newest snapshot this xtxd took covers segment seg of CPU
 * cpu's log (XTXD_USERLOG_CPU: xtxd's own): recovery skips it, so nothing
 * it holds is needed, though each log's last segment stays on disk.
 */
bool xtxd_snapshot_covers(uint32_t cpu, uint32_t seg);
/*
 * While fn() says so, a snapshot removes no log segment: a copier (user/
 * xtxd/copy/copy.h) may have a delete of theirs decided again, and peers
 * answer from their logs.  Set before any snapshot.
 */
void xtxd_snapshot_set_keep_logs(bool (*fn)(void));

/*
 * The records the newest snapshot carries (read from its file the first
 * time): fn on each whole write (a multi-replica one, and the decided
 * ones), in the order carried.  0, or fn's nonzero return, or a negative
 * errno.  Safe from any thread.
 */
int xtxd_snapshot_carried_each(int (*fn)(const struct xtx_log_write *w, void *arg), void *arg);
/* Whether the newest snapshot carries a record of multi-replica transaction txn. */
bool xtxd_snapshot_carries(uint64_t txn);

/*
 * The control channel's "snapshot": writes the snapshot, then removes the
 * log segments and older snapshots it makes redundant, answering
 * "snapshot: N keys, log positions ..., removed M segments" then OK, or
 * ERR.  The caller is a registered RCU thread.
 */
void xtxd_snapshot_take(const struct xtx_target *t, struct xtxd_ovf *store,
			struct xtxd_out *out);
/* The same without the final OK: 0, or a negative errno after its ERR line. */
int xtxd_snapshot_save(const struct xtx_target *t, struct xtxd_ovf *store, struct xtxd_out *out);

/* Snapshots taken since the start, and those that failed (every trigger). */
void xtxd_snapshot_counts(uint64_t *taken, uint64_t *failed);

#endif /* XTXD_SNAPSHOT_H */
