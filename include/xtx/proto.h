/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The xtx wire protocol: packet header, op slots, op codes and status codes. */
#ifndef XTX_PROTO_H
#define XTX_PROTO_H

#include <linux/types.h>

/*
 * An xtx request is one UDP/IPv4 datagram to XTX_DEFAULT_PORT (configurable):
 *
 *   struct xtx_hdr | struct xtx_op[nops]
 *
 * The reply is the same datagram rewritten in place: addresses and ports
 * swapped, XTX_F_REPLY set, every op's status and result fields filled,
 * hdr.mac zero.
 * Ops are fixed-size slots so the XDP program walks them with a constant
 * stride and a reply always fits in the request's bytes.  One packet carries
 * ops of many transactions (each op names its own), which is what lets a
 * client amortise the per-packet cost over many ops.
 *
 * All xtx fields are little-endian (the byte order of every supported host);
 * only the Ethernet/IP/UDP headers around them are in network order.
 */

#define XTX_MAGIC		0x31585458u	/* "XTX1" on the wire */
/* 2: hdr.mac, a 64-bit MAC of the whole request (include/xtx/mac.h) */
#define XTX_VERSION		2
#define XTX_DEFAULT_PORT	7370

/*
 * Bytes of value an op slot carries in place; 40 covers TATP's largest row,
 * 8 SmallBank.  Values up to XTX_VALUE_INLINE live in the kernel cache and
 * are served by XDP; longer ones (up to XTX_VALUE_MAX) travel in the
 * packet's value area (struct xtx_ext) and live in xtxd's overflow store.
 */
#define XTX_VALUE_INLINE	40
#define XTX_VALUE_MAX		1024
/*
 * Ops per packet: bounds the XDP loop, and 16 slots of 80 B plus headers
 * (14 + 20 + 8 + 32 + 1280 = 1354 B) stay under a 1500 B MTU.
 */
#define XTX_MAX_OPS		16

/* Header flags. */
#define XTX_F_REPLY		0x01	/* set by the server in every reply */
#define XTX_F_REPLAYED		0x02	/* reply reconstructed from the dedupe record */

struct xtx_hdr {
	__u32 magic;
	__u8 version;
	__u8 flags;
	__u8 nops;
	__u8 status;		/* reply: XTX_ST_* for the packet as a whole */
	__u16 client_id;	/* < the server's client limit; see xtx_txn_client() */
	/*
	 * The cluster configuration the client routes by (0: a static
	 * cluster, no coordination service).  A server of another epoch
	 * refuses the packet XTX_ST_EPOCH and answers with its own here.
	 */
	__u16 epoch;
	/*
	 * Zero on the wire.  Inside a server the rare path keeps its defer
	 * ticket here (include/xtx/kv.h).
	 */
	__u32 reserved;
	/*
	 * Per (client, server) request sequence number, strictly increasing;
	 * a retransmission reuses the id.  The server remembers the last
	 * XTX_DEDUPE_WINDOW ids per client (see dedupe in include/xtx/maps.h),
	 * so a client keeps at most that many requests outstanding per server.
	 */
	__u64 req_id;
	/*
	 * With a cluster secret, the MAC of the whole request: every byte of
	 * the UDP payload (header, ops, value area) with this field read as
	 * zero (include/xtx/mac.h).  Without one, zero; a server without a
	 * secret refuses any other value MALFORMED.  Zero in every reply.
	 */
	__u64 mac;
};

/* One operation.  Request fields are read, reply fields written in place. */
struct xtx_op {
	__u8 opcode;		/* XTX_OP_* */
	__u8 status;		/* reply: XTX_ST_* */
	__u8 table;		/* table id, < XTX_MAX_TABLES */
	__u8 vlen;		/* bytes of value[] in use, <= XTX_VALUE_INLINE */
	__u32 flags;		/* request modifiers / reply lock-state bits */
	__u64 key;
	/*
	 * Transaction id, globally unique: the client id in the top
	 * XTX_CLIENT_BITS bits, a per-client sequence below.  The server
	 * refuses a txn whose client part differs from the header's.
	 */
	__u64 txn;
	__u64 version;		/* expected (request) or current (reply) version */
	__u64 token;		/* grant token (reply), echoed by releases */
	__u8 value[XTX_VALUE_INLINE];
};

/*
 * PING's answer in value[]: which CPU served it (how a NIC spreads a
 * client's packets), and the leases after which the server takes back a
 * lock or an active HADES slot, so a client keeps to them without being
 * told by hand (0: never taken back).
 */
struct xtx_ping_info {
	__u32 cpu;
	__u32 pad;
	__u64 lock_lease_ns;
	__u64 hades_lease_ns;
};

/*
 * The value area: a request may carry bytes after its op array,
 *
 *   struct xtx_hdr | struct xtx_op[nops] | area of op i | area of op j | ...
 *
 * one area per op with XTX_OPF_EXT set, in op order, each starting at the
 * previous one's end rounded up to 8 bytes (the first at the end of the op
 * array), the payload ending exactly at the last one's end rounded up to 8.
 * The op's value[] then holds a struct xtx_ext instead of value bytes, and
 * its vlen is 0.
 *
 * - A write of more than XTX_VALUE_INLINE bytes (INSERT, UPDATE, the
 *   commits, LOG_APPEND, HINTEND, HVALIDATE) carries them in its area: len bytes,
 *   XTX_VALUE_INLINE < len <= cap <= XTX_VALUE_MAX.  A value that fits the
 *   slot travels in the slot: an EXT write of len <= XTX_VALUE_INLINE is
 *   refused BAD_ARG, and so is len > XTX_VALUE_MAX (never truncated).
 * - A read (GET, READ, the lock ops that read, OCC_LOCK, HREAD, HWRITE)
 *   reserves cap bytes for its answer (len 0).  The reply answers a value
 *   of up to XTX_VALUE_INLINE bytes in the slot (EXT clear, vlen), a longer
 *   one in the area (EXT set, ext.len); a value longer than the room the
 *   request left (cap, or XTX_VALUE_INLINE without EXT) answers
 *   XTX_ST_TOO_BIG with its length in ext.len, and the op took nothing
 *   (no lock, no record): ask again with room for it.
 *
 * A reply is never longer than its request, so the answer of every op fits.
 * With a value area the request stays within XTX_MAX_REQUEST, which leaves
 * room in an MTU for the rare path's fix trailer (include/xtx/kv.h).
 */
struct xtx_ext {
	__u16 off;		/* from the start of struct xtx_hdr */
	__u16 cap;		/* bytes of the area */
	__u16 len;		/* bytes of value in it */
	__u16 pad;		/* zero */
};

#define XTX_EXT_ALIGN		8
/*
 * UDP payload of a request with a value area (1472 less a fix trailer of one
 * entry).  A request without one is at most 32 + 16 * 80 = 1312 B, which
 * leaves the rare path room for three fix entries (bpf/lib/defer.h).
 */
#define XTX_MAX_REQUEST		1416

_Static_assert(sizeof(struct xtx_hdr) == 32, "xtx_hdr is wire format");
_Static_assert(sizeof(struct xtx_ext) <= XTX_VALUE_INLINE, "an area reference fits a slot");
_Static_assert(sizeof(struct xtx_ping_info) <= XTX_VALUE_INLINE, "ping info fits a value");
_Static_assert(sizeof(struct xtx_op) == 80, "xtx_op is wire format");
_Static_assert(sizeof(struct xtx_op) % 8 == 0, "op slots keep 8-byte alignment");

/*
 * hdr.epoch of a server that lost its coordination-service session: it
 * may have been replaced, so it serves no epoch until it rejoins.
 */
#define XTX_EPOCH_FENCED	0xffff

#define XTX_CLIENT_BITS		16
#define XTX_TXN_SEQ_BITS	(64 - XTX_CLIENT_BITS)

static inline __u32 xtx_txn_client(__u64 txn)
{
	return (__u32)(txn >> XTX_TXN_SEQ_BITS);
}

static inline __u64 xtx_txn_make(__u32 client_id, __u64 seq)
{
	return ((__u64)client_id << XTX_TXN_SEQ_BITS) |
	       (seq & ((1ull << XTX_TXN_SEQ_BITS) - 1));
}

/*
 * Op codes.  Numbers are ABI: never reuse one.  XTX_OP__COUNT bounds the
 * per-op statistics arrays; an opcode at or above it, or one the server was
 * built without, answers XTX_ST_UNKNOWN_OP.
 */
enum xtx_opcode {
	XTX_OP_NOP = 0,		/* invalid: a zeroed slot is never executed */
	XTX_OP_PING = 1,	/* echo version (client nonce); value: struct xtx_ping_info */
	XTX_OP_STATS = 2,	/* key selects 5 counters (xtx_stats_key_*), summed over CPUs */
	/*
	 * Add version (a signed delta) to server counter key % XTX_COUNTERS
	 * and return the new total in version.  Not idempotent, so it is how
	 * retransmission safety is observed; also usable as a sequencer.
	 */
	XTX_OP_COUNTER_ADD = 3,
	/*
	 * 2PL, no-wait (lock table, see struct xtx_lock_slot): GRANTED is
	 * XTX_ST_OK with the grant token in token; a conflict answers
	 * XTX_ST_REJECTED at once and the client aborts or retries.  Releases
	 * echo the token and always answer OK; XTX_LOCKF_STALE in flags says
	 * the release found nothing of the caller's to free.
	 */
	XTX_OP_LOCK_SHARED = 4,
	XTX_OP_LOCK_EXCL = 5,
	XTX_OP_UNLOCK_SHARED = 6,
	XTX_OP_UNLOCK_EXCL = 7,
	/*
	 * OCC version locking: OCC_LOCK try-locks a write key, OCC_UNLOCK
	 * releases it (abort), OCC_VALIDATE reports the lock state of a read
	 * key in flags (XTX_LOCKF_EXCL set and XTX_LOCKF_MINE clear: locked by
	 * another transaction).  With the KV store they also carry value and
	 * version, so validation reads lock word first, then version.
	 */
	XTX_OP_OCC_LOCK = 8,
	XTX_OP_OCC_UNLOCK = 9,
	XTX_OP_OCC_VALIDATE = 10,
	/*
	 * Key-value store (include/xtx/kv.h).  GET answers value, vlen and
	 * version or NOT_FOUND; INSERT creates (EXISTS if present); UPDATE
	 * overwrites (NOT_FOUND if absent); DELETE removes (NOT_FOUND if
	 * absent).  Every write answers the key's new version, and a key's
	 * versions never repeat, across deletes and re-inserts.
	 */
	XTX_OP_GET = 16,
	XTX_OP_INSERT = 17,
	XTX_OP_UPDATE = 18,
	XTX_OP_DELETE = 19,
	/*
	 * Transaction ops (FaSST/DINT OCC and 2PL, design §3).  The lock ops
	 * above also read: a grant answers value, vlen and version unless the
	 * request sets XTX_OPF_NO_VALUE; a key that does not exist answers
	 * XTX_TXF_ABSENT with the version a creating commit must expect.
	 *
	 * READ: value, version and the key's lock state (flags), no lock.
	 * OCC_VALIDATE (above): lock word first, then version == op.version:
	 *   OK, LOCKED (by another txn; XTX_LOCKF_MINE tells it is one's
	 *   own), or CHANGED.
	 * COMMIT_BACKUP: install value with version op.version unless the
	 *   replica already has it or newer (ALREADY_APPLIED).
	 * COMMIT_PRIMARY: if the version is still op.version, install value
	 *   with op.version + 1 and release the exclusive lock (op.token);
	 *   ALREADY_APPLIED when op.version + 1 is already there.
	 * With XTX_OPF_DELETE both commits delete instead (a tombstone at the
	 * new version).  Abort is OCC_UNLOCK / UNLOCK_*.
	 */
	XTX_OP_READ = 20,
	XTX_OP_COMMIT_BACKUP = 21,
	XTX_OP_COMMIT_PRIMARY = 22,
	/* Append one write of a transaction to this CPU's log (include/xtx/log.h). */
	XTX_OP_LOG_APPEND = 23,
	/*
	 * Between servers, on UDP port + 1 (xtxd's resolver, never XDP): is
	 * transaction op.txn's log record complete here (answer in op.flags,
	 * a server index in op.token), and its decided outcome (op.flags).
	 */
	XTX_OP_RESOLVE_QUERY = 24,
	XTX_OP_RESOLVE_DECIDE = 25,
	/*
	 * The same for a HADES transaction left committing (xtxd's
	 * resolve_hades.c): does op.txn hold a committing slot here, and its
	 * decided outcome.
	 */
	XTX_OP_HRESOLVE_QUERY = 26,
	XTX_OP_HRESOLVE_DECIDE = 27,
	/*
	 * A client to a server, on UDP port + 1 (xtxd's resolver, never
	 * XDP): what became of op.txn, a transaction of the header's client
	 * (XTX_TSF_HADES in op.flags for a HADES one)?  The reply echoes the
	 * header (client_id, req_id) and answers in op.flags (enum
	 * xtx_txn_state).  Asking decides nothing by itself, but a server that
	 * does not hold the transaction fences it first, so that answer stays
	 * true; one that holds it unfinished starts deciding it at once.  With
	 * a cluster secret the header carries its MAC (include/xtx/mac.h).
	 */
	XTX_OP_TXN_STATUS = 28,
	/*
	 * HADES (include/xtx/hades.h): per-transaction Bloom filters instead
	 * of versions and locks.  HREAD / HWRITE record the key and read it;
	 * HINTEND stages a write and, with XTX_HOPF_LAST, partially locks
	 * (Ack / NACK); HVALIDATE installs and logs a staged write; HABORT
	 * discards the transaction's state.
	 */
	XTX_OP_HREAD = 32,
	XTX_OP_HWRITE = 33,
	XTX_OP_HINTEND = 34,
	XTX_OP_HVALIDATE = 35,
	XTX_OP_HABORT = 36,
	XTX_OP__COUNT = 64,
};

/* XTX_OP_TXN_STATUS: request flag, and the answers in the reply's op.flags. */
#define XTX_TSF_HADES		0x1u
enum xtx_txn_state {
	XTX_TS_UNKNOWN = 0,	/* nothing can be said yet: ask again */
	XTX_TS_HELD = 1,	/* its complete record (HADES: its Ack) is here, undecided */
	XTX_TS_COMMITTED = 2,	/* decided, or validated here: committed */
	XTX_TS_ABORTED = 3,	/* decided aborted */
	XTX_TS_NOT_HELD = 4,	/* not here, and fenced: it can never be here */
};

/* Status codes, per op and per packet. */
enum xtx_status {
	XTX_ST_NONE = 0,	/* request: not yet executed */
	XTX_ST_OK = 1,
	XTX_ST_RETRY = 2,	/* momentarily busy: send the same request again */
	XTX_ST_MALFORMED = 3,	/* packet: op count or length inconsistent */
	XTX_ST_BAD_VERSION = 4,	/* packet: unsupported protocol version */
	XTX_ST_UNKNOWN_OP = 5,	/* op (and packet): opcode not served */
	XTX_ST_BAD_ARG = 6,	/* op (and packet): table, vlen or flags invalid */
	XTX_ST_BAD_CLIENT = 7,	/* packet: client id over the limit, or txn not its own */
	XTX_ST_STALE = 8,	/* packet: req_id older than the dedupe window */
	XTX_ST_NOT_EXECUTED = 9, /* op: packet refused before any op ran */
	XTX_ST_REJECTED = 10,	/* op: lock conflict (no-wait) */
	XTX_ST_BAD_TXN = 11,	/* op: txn missing or not the header client's */
	XTX_ST_NOT_FOUND = 12,	/* op: no such key */
	XTX_ST_EXISTS = 13,	/* op: INSERT of a key that exists */
	XTX_ST_FULL = 14,	/* op: the overflow store is full; nothing changed */
	XTX_ST_DEFERRED = 15,	/* internal: XDP handed the op to xtxd; never in a reply */
	XTX_ST_LOCKED = 16,	/* validate: locked by another transaction */
	XTX_ST_CHANGED = 17,	/* validate/commit: the version is not the expected one */
	XTX_ST_ALREADY_APPLIED = 18, /* commit: this version (or newer) is already there */
	XTX_ST_LOG_FULL = 19,	/* log append: the CPU's log is full; retry or abort */
	XTX_ST_FENCED = 24,	/* log append: the servers decided this txn without it: abort */
	XTX_ST_NOT_HELD = 25,	/* log append at the primary, or a resent grant: the grant is gone: abort */
	/*
	 * op: the table serves the other concurrency-control family (HADES vs
	 * OCC/2PL) now; nothing done: abort (bpf/lib/family.h)
	 */
	XTX_ST_MIXED = 26,
	/*
	 * packet: the server serves another configuration epoch (its own is in
	 * the reply's hdr.epoch; XTX_EPOCH_FENCED: it serves none); nothing
	 * ran: re-read the configuration and route again
	 */
	XTX_ST_EPOCH = 27,
	/*
	 * log append: the replica set it names is not the key's shard's under
	 * the served configuration (the transaction was placed by an older
	 * one); nothing logged: the coordinator must not commit by this append
	 */
	XTX_ST_MOVED = 28,
	/*
	 * op: the value is longer than the room the request left for it
	 * (struct xtx_ext: its length in ext.len); nothing done: ask again
	 * with room
	 */
	XTX_ST_TOO_BIG = 29,
	XTX_ST_SQUASHED = 20,	/* HADES: a committer squashed the transaction; abort */
	XTX_ST_NACK = 21,	/* HADES intend-to-commit refused: conflict; abort */
	XTX_ST_TXN_GONE = 22,	/* HADES validate: no such committing transaction here */
	XTX_ST_TOO_MANY = 23,	/* HADES intend: more writes than a slot stages; abort */
	XTX_ST__COUNT = 32,
};

/*
 * A STATS op returns XTX_STATS_PER_OP little-endian u64 counters in value:
 * key = n < XTX_STATS_KEY_OP: packet counters 5n..5n+4 (enum xtx_counter);
 * key = XTX_STATS_KEY_OP + opcode: that op's count per status 1..5.
 */
#define XTX_STATS_PER_OP	5
#define XTX_STATS_KEY_OP	0x100
#define XTX_STATS_OP_GROUPS	((XTX_ST__COUNT - 1 + XTX_STATS_PER_OP - 1) / XTX_STATS_PER_OP)

/* Request modifiers in op.flags (the reply reuses flags for state bits). */
#define XTX_OPF_NO_VALUE	0x1000	/* lock ops: grant only, do not read the value */
#define XTX_OPF_DELETE		0x2000	/* commits, log: delete the key at the new version */
#define XTX_OPF_LOG_LAST	0x4000	/* log: the transaction's last write on this server */
#define XTX_OPF_LOG_PRIMARY	0x8000	/* log: at the key's primary: prove the grant (log.h) */
/* log: no write: the transaction's participants, a bitmap in version (xtx/log.h) */
#define XTX_OPF_LOG_META	0x0800
/* log, with XTX_OPF_LOG_LAST: bits 16-23 count the transaction's writes at this server */
#define XTX_OPF_LOG_COUNT_SHIFT	16
#define XTX_OPF_LOG_COUNT_MASK	0xff0000u
/* Request and reply: the value is in the packet's value area (struct xtx_ext in value[]). */
#define XTX_OPF_EXT		0x0400
/* Reply: the key does not exist; version is what a creating commit expects. */
#define XTX_TXF_ABSENT		0x100

/* Lock-state bits in a lock op's reply flags. */
#define XTX_LOCKF_EXCL		0x01	/* held exclusively */
#define XTX_LOCKF_SHARED	0x02	/* held shared */
#define XTX_LOCKF_MINE		0x04	/* the exclusive holder (or sole sharer) is this txn */
#define XTX_LOCKF_STALE		0x08	/* release: nothing of the caller's was held */
#define XTX_LOCKF_RECLAIMED	0x10	/* grant: took over a lock whose lease expired */
#define XTX_LOCKF_SHARING	0x20	/* reject: the holder holds another key of the slot */
#define XTX_LOCKF_LOGGED	0x40	/* holder has logged: never reclaimed by lease */

/*
 * Lease discipline (client side): a lock is reclaimable once its lease
 * (xtxd --lock-lease) has passed since its last grant, unless its holder
 * has logged.  A coordinator that has not logged within the lease minus
 * its own clock margin since its first grant must abort, never log: its
 * locks may already belong to someone else.
 */

/* Ops whose retransmission must be answered from the dedupe record. */
#define XTX_OPS_MUTATING                                                      \
	((1ull << XTX_OP_COUNTER_ADD) | (1ull << XTX_OP_LOCK_SHARED) |         \
	 (1ull << XTX_OP_LOCK_EXCL) | (1ull << XTX_OP_UNLOCK_SHARED) |         \
	 (1ull << XTX_OP_UNLOCK_EXCL) | (1ull << XTX_OP_OCC_LOCK) |            \
	 (1ull << XTX_OP_OCC_UNLOCK) | (1ull << XTX_OP_INSERT) |               \
	 (1ull << XTX_OP_UPDATE) | (1ull << XTX_OP_DELETE) |                   \
	 (1ull << XTX_OP_COMMIT_BACKUP) | (1ull << XTX_OP_COMMIT_PRIMARY) |     \
	 (1ull << XTX_OP_LOG_APPEND) | (1ull << XTX_OP_HINTEND) |                \
	 (1ull << XTX_OP_HVALIDATE) | (1ull << XTX_OP_HABORT))

static inline int xtx_op_mutates(__u8 opcode)
{
	return opcode < 64 && ((XTX_OPS_MUTATING >> opcode) & 1);
}

#endif /* XTX_PROTO_H */
