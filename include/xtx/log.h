/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The per-CPU transaction logs: entry layout and the cursors XDP and xtxd advance. */
#ifndef XTX_TXLOG_H
#define XTX_TXLOG_H

#include <linux/types.h>
#include "proto.h"

/*
 * DINT §3.3: each CPU appends to its own circular buffer, so LOG_APPEND
 * needs no atomics.  XDP advances only tail, xtxd only head; both live in
 * a plain (mmap-able) ARRAY indexed by CPU, not a per-CPU map: a per-CPU
 * element written from user space overwrites every CPU's copy (design §7).
 * A buffer with tail - head == ring size is full: LOG_APPEND answers
 * LOG_FULL and overwrites nothing.
 */
/*
 * Entries per CPU (11 MiB each).  An entry leaves the ring only once
 * synced, so the ring must absorb the slowest fdatasync at the full append
 * rate: 64 Ki entries last ~300 ms at 220 K appends/s per CPU, against
 * fdatasync stalls of up to ~80 ms seen on a virtio disk (16 Ki filled).
 * Commit marks (XTX_LOGF_COMMITTED) take as many entries again as a
 * replicated transaction's appends, so twice that: the time a ring takes
 * to fill stays what it was (a server whose xtxd is stopped is moved out
 * before its ring refuses appends, as the failover nemesis needs).
 */
#define XTX_LOG_RING_DEFAULT	(1u << 17)
#define XTX_LOG_RING_MAX	(1u << 22)

/* Entry flags. */
#define XTX_LOGF_DELETE		0x01	/* the write deletes the key */
#define XTX_LOGF_LAST		0x02	/* the transaction's last write logged on this server */
/*
 * Logged after the transaction was decided committed (HADES validation):
 * replayed as it is, never asked about (xtx_log_append_decided()).
 */
#define XTX_LOGF_DECIDED	0x04
/*
 * Not a write: the transaction's participants (every server any write of
 * it is logged at), a bitmap of server indices in version; key 0, no
 * value.  Sent to a server whose own writes' replica sets do not name
 * them all, before its LAST write (which counts it among nwrites), so the
 * resolver there asks every participant, not only the replicas of the
 * keys it holds: two groups of servers sharing no server could otherwise
 * each decide the transaction on its own, differently.
 */
#define XTX_LOGF_META		0x08
/*
 * A value longer than XTX_VALUE_INLINE: the entry's vlen is 0, its value[]
 * holds a struct xtx_log_ext (the length), and the bytes follow in the next
 * xtx_log_cont_count(len) entries of the same log, each a struct
 * xtx_log_cont at the next seq.  The entry and its continuations are
 * appended together (one XDP run, or one write of xtxd's), so a reader
 * that finds one missing or out of sequence has a damaged log.
 */
#define XTX_LOGF_EXT		0x10
/*
 * Not a write: a commit mark.  XDP appends one after each COMMIT_BACKUP or
 * COMMIT_PRIMARY it runs (txn, table, key and version the op's, no value),
 * since a coordinator sends those only once the transaction is decided
 * committed.  Recovery replays a transaction logged on several replicas
 * when it finds a decision or a mark of it; a complete record with
 * neither is held (its keys locked) for the resolver to decide, because it
 * may still be aborted by the others.  The ring's last sixteenth is kept
 * for marks, so one is lost only when that fills too; a mark lost so, or
 * with the machine before the drain synced it, leaves its (recent)
 * transaction to the resolver.
 */
#define XTX_LOGF_COMMITTED	0x20
/*
 * The write was logged at its key's primary, proving the lock grant
 * (XTX_OPF_LOG_PRIMARY): recovery locks its key there again while its
 * transaction is undecided.
 */
#define XTX_LOGF_PRIMARY	0x40

/*
 * One logged write.  The replica set (server indices of the coordinator's
 * configuration) lets recovery ask the other replicas whether they hold the
 * transaction too, and so whether it is decided (FaRM's rule).
 */
struct xtx_log_entry {
	__u64 seq;		/* the tail value it was appended at, per CPU */
	__u64 txn;
	__u64 key;
	__u64 version;		/* the version the write installs */
	__u32 client_id;
	__u8 table;
	__u8 vlen;
	__u8 flags;		/* XTX_LOGF_* */
	__u8 nreplicas;
	__u16 replicas[3];
	/*
	 * On the LAST entry: how many writes the transaction logs at this
	 * server (its META entry counted), so a record missing one is never
	 * taken as complete (0: not told, as from HADES validation, which
	 * logs decided writes).
	 */
	__u16 nwrites;
	__u8 value[XTX_VALUE_INLINE];
};

_Static_assert(sizeof(struct xtx_log_entry) == 88, "log entry layout");

/* Whether e is a commit mark (XTX_LOGF_COMMITTED), which no reader may take for a write. */
static inline int xtx_log_is_mark(const struct xtx_log_entry *e)
{
	return (e->flags & XTX_LOGF_COMMITTED) != 0;
}

/*
 * Whether e is part of a transaction's record that its replicas decide
 * together (several replicas, or its participant list), not a write
 * decided by being logged.  Marks are neither.
 */
static inline int xtx_log_is_multi(const struct xtx_log_entry *e)
{
	return (e->nreplicas > 1 || (e->flags & XTX_LOGF_META)) &&
	       !(e->flags & (XTX_LOGF_DECIDED | XTX_LOGF_COMMITTED));
}

/* value[] of an XTX_LOGF_EXT entry. */
struct xtx_log_ext {
	__u16 len;		/* XTX_VALUE_INLINE < len <= XTX_VALUE_MAX */
	__u16 pad[3];		/* zero */
	__u64 txn;		/* the entry's txn again: a continuation names its head */
};

#define XTX_LOG_CONT_BYTES	80
/* An entry slot carrying value bytes of the XTX_LOGF_EXT entry before it. */
struct xtx_log_cont {
	__u64 seq;		/* the head's seq + 1, + 2, ... */
	__u8 bytes[XTX_LOG_CONT_BYTES];	/* zero past the value's end */
};

_Static_assert(sizeof(struct xtx_log_cont) == sizeof(struct xtx_log_entry), "a continuation fills an entry");
_Static_assert(sizeof(struct xtx_log_ext) <= XTX_VALUE_INLINE, "ext header fits a value");

/* Continuations after the entry of a value of len bytes (0 for one that fits the entry). */
static inline __u32 xtx_log_cont_count(__u32 len)
{
	return len > XTX_VALUE_INLINE ? (len + XTX_LOG_CONT_BYTES - 1) / XTX_LOG_CONT_BYTES : 0;
}

/* One cache line per CPU, so appends on one CPU do not bounce another's line. */
struct xtx_log_cursor {
	__u64 tail;		/* next append position: advanced by XDP */
	__u64 head;		/* first undrained position: advanced by xtxd */
	__u64 appended;		/* statistics */
	__u64 full;
	/*
	 * Nonzero while xtx_fence may hold entries: only then does LOG_APPEND
	 * pay for the fence lookup.  Written by xtxd, in every CPU's cursor.
	 */
	__u64 fenced;
	__u64 pad[3];
};

_Static_assert(sizeof(struct xtx_log_cursor) == 64, "cursor layout");

/*
 * LOG_APPEND's request: txn, table, key, version, vlen/value as in the
 * entry; op.flags carries XTX_OPF_DELETE / XTX_OPF_LOG_LAST; op.token packs
 * the replica set: bits 0-23 three 8-bit server indices, bits 24-31 their
 * count, and, at the key's primary, bits 32-63 the grant (the low 32 bits of
 * the token the lock was granted with).  The reply's version is the entry's
 * seq.
 *
 * At the primary (XTX_OPF_LOG_PRIMARY) the append proves the transaction
 * still holds the key's exclusive lock under that grant: it marks the lock
 * logged (never reclaimed by lease from then on) and appends, or, when the
 * lease took the lock back and the grant is gone, appends nothing and answers
 * XTX_ST_NOT_HELD: the coordinator aborts before its commit point instead of
 * overwriting what another transaction committed meanwhile.
 *
 * xtxd's resolver (user/xtxd/resolve/resolve.h) takes a server's part of the
 * record as complete once the LAST write arrived, so a coordinator sends
 * it in the same packet as, or after the answers to, the transaction's
 * other writes to that server; and every write of a transaction names the
 * same replica set, the servers that decide it together.  A FENCED answer
 * means the servers decided the transaction without this write: abort.
 */
static inline __u64 xtx_log_replicas_pack(const __u16 *r, __u8 n)
{
	__u64 v = (__u64)n << 24;
	unsigned int i;

	for (i = 0; i < n && i < 3; i++)
		v |= (__u64)(r[i] & 0xff) << (8 * i);
	return v;
}

/* The replica set of a packed token: count (at most 3) and server indices. */
static inline __u8 xtx_log_replicas_unpack(__u64 token, __u16 *r)
{
	__u8 n = (__u8)(token >> 24);

	r[0] = token & 0xff;
	r[1] = (token >> 8) & 0xff;
	r[2] = (token >> 16) & 0xff;
	return n > 3 ? 3 : n;
}

/* The grant a primary's LOG_APPEND proves (bits 32-63 of its token). */
static inline __u32 xtx_log_grant_of(__u64 token)
{
	return (__u32)(token >> 32);
}

#endif /* XTX_TXLOG_H */
