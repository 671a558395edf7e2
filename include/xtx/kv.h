/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The key-value store: kernel bucket layout and the rare-path trailers between XDP, xtxd and TC. */
#ifndef XTX_KV_H
#define XTX_KV_H

#include <linux/types.h>
#include "proto.h"

/*
 * The kernel cache (DINT §3.2) is an ARRAY of set-associative buckets
 * indexed by xtx_bucket_of(xtx_hash(table, key), nbuckets).  What does not
 * fit lives in xtxd's overflow store.  Each bucket keeps a 64-bit Bloom
 * filter of the keys of that bucket the overflow store holds
 * (xtx_bloom_bit_of), so a miss whose bit is clear is answered in XDP.
 *
 * Slot states (flags):
 *   free                      !VALID && !TOMB
 *   VALID                     a live key; DIRTY: newer than the overflow
 *                             store's copy (write-back), so it is written
 *                             back before its slot is reused
 *   TOMB|DIRTY                deleted in the kernel while the overflow store
 *                             still holds the key: kept (key and version)
 *                             until the delete is written back
 *   IN_USER                   the overflow store holds a copy of the key
 *   EVICTING                  (with VALID or TOMB) a write of a value over
 *                             the slot went to xtxd: the store takes the
 *                             key, and no op is answered from this copy or
 *                             writes it any more, also after a lease
 *                             takeover; each goes to xtxd with the way as
 *                             its victim (XTX_DEFER_EVICT) until TC frees it
 *
 * Versions never repeat for a key.  An UPDATE adds one; a DELETE adds one
 * (the tombstone's version); a new key starts above the bucket's version
 * floor, which rises to every version that leaves the bucket for good (a
 * tombstone written back, a kernel-only key deleted).  So no tombstone has
 * to be kept forever, and a re-inserted key never reuses a version its
 * readers may have validated against (ABA).
 */
/*
 * Eight ways: at DINT's 1.5x provisioning (buckets two thirds full on
 * average) a bucket of 4 spills about 6% of its keys to the overflow store
 * and one of 8 about 2% (Poisson bucket loads), and the rare path is what
 * costs a round trip through xtxd.  Eight 8-byte keys still fill exactly
 * one cache line, so finding a way costs no more misses than with 4.
 */
#define XTX_KV_WAYS		8

#define XTX_KVF_VALID		0x01
#define XTX_KVF_DIRTY		0x02
#define XTX_KVF_TOMB		0x04
#define XTX_KVF_IN_USER		0x08
#define XTX_KVF_EVICTING	0x10

/*
 * 512 bytes, eight cache lines; the map is page-aligned (mmapable), so
 * every bucket starts a line.  An op reads line 0 (lock, Bloom bits, slot
 * states), line 1 (the keys) and line 2 (the versions), then its value:
 * three header lines it can load at once (bpf/lib/warm.h) and one or two
 * value lines once it knows its way.
 */
struct xtx_kv_bucket {
	/*
	 * Bucket lock (DINT): 0 free, else a token (the acquisition time,
	 * low bit set).  A rare-path op keeps it across the round trip to
	 * xtxd; TC egress releases it if it still holds that token.  Past
	 * xtx_runtime.kv_lease_ns it is taken over, so a lost packet never
	 * wedges the bucket.
	 */
	__u64 lock;
	__u64 bloom;
	__u64 vfloor;		/* versions of new keys start above it */
	__u8 table[XTX_KV_WAYS];
	__u8 flags[XTX_KV_WAYS];
	__u8 vlen[XTX_KV_WAYS];
	__u8 pad[16];
	__u64 key[XTX_KV_WAYS];	/* keys together: one compare loop, one cache line */
	__u64 version[XTX_KV_WAYS];
	__u8 value[XTX_KV_WAYS][XTX_VALUE_INLINE];
};

_Static_assert(sizeof(struct xtx_kv_bucket) == 512, "bucket layout");
_Static_assert(__builtin_offsetof(struct xtx_kv_bucket, key) == 64, "keys fill line 1");
_Static_assert(__builtin_offsetof(struct xtx_kv_bucket, version) == 128, "versions fill line 2");

/*
 * The value store (XTX_MAP_BIGVAL): copies of the values over
 * XTX_VALUE_INLINE the overflow store holds, in a hash map XDP reads, so a
 * read of a big value is answered in XDP in one pass instead of a round
 * trip through xtxd.  xtxd keeps them in step with the overflow store
 * (user/xtxd/store/overflow.c), holding the store's bucket lock: a change
 * of a big value takes its copy away before the store's node changes, and
 * the new value is copied only once it is durable (at once for the
 * resolver, loads and recovery; after the packet's writes are logged for
 * the rare path, and only if the store still holds that version).  So a
 * copy is never ahead of the log nor behind the store, whatever a lease
 * takeover let run meanwhile.  A key without a copy (not durable yet, the
 * map full, --value-store 0) is looked up in xtxd as before: a miss is
 * always safe.  XDP answers GET, READ, the grants' reads and OCC_VALIDATE
 * from it, holding the key's kernel bucket; writes of big values still go
 * to xtxd.  Elements are replaced whole, never written in place; a freed
 * element may be reused at once, so a reader checks key and version again
 * after copying (x86 keeps the writer's stores in order).
 */
struct xtx_bigval_key {
	__u64 key;
	__u32 table;
	__u32 pad;
};

struct xtx_bigval {
	__u64 key;
	__u64 version;
	__u32 table;
	__u16 len;		/* XTX_VALUE_INLINE + 1 .. XTX_VALUE_MAX */
	__u16 pad;
	__u8 data[XTX_VALUE_MAX];	/* zero past len: a copy of cap bytes zeroes the rest */
};

#define XTX_BIGVAL_DEFAULT	(1u << 20)
#define XTX_BIGVAL_MAX		(1u << 22)

#define XTX_KV_BUCKETS_DEFAULT	(1u << 17)
#define XTX_KV_BUCKETS_MAX	(1u << 24)

/* Bucket lock word of a frequent-path holder: never taken over. */
#define XTX_KV_LOCK_FAST	1ull

/* A whole key-value slot as it travels between kernel and user space. */
struct xtx_kv_item {
	__u64 key;
	__u64 version;
	__u8 table;
	__u8 flags;		/* XTX_KVF_* as in the bucket */
	__u8 vlen;
	__u8 pad[5];
	__u8 value[XTX_VALUE_INLINE];
};

_Static_assert(sizeof(struct xtx_kv_item) == 64, "item layout");

/*
 * The rare path of a multi-op packet (design §3):
 *
 * 1. XDP runs every op it can.  An op that needs the overflow store gets
 *    status XTX_ST_DEFERRED; its bucket is locked and stays locked.  At
 *    most XTX_MAX_DEFERRED ops per packet and one per bucket: the excess
 *    answers RETRY.  XDP writes a struct xtx_defer_trailer (with the dirty
 *    victims to write back) into a struct xtx_defer_record of the
 *    mmap-able ring XTX_MAP_DEFER, puts the record's ticket + 1 in the
 *    header's reserved field, and passes the packet, unchanged in size, to
 *    the stack; xtxd receives it on its socket and reads the record.
 *    (DINT grows the packet instead; on veth, and on NICs whose frames have
 *    no tailroom, bpf_xdp_adjust_tail cannot grow it.)
 * 2. xtxd executes the deferred ops in order against the overflow store
 *    (and writes back the dirty victims), fills their results, and sends
 *    the reply (header, ops, value area, then fix entries and a struct
 *    xtx_fix_footer) to the client from its socket.
 * 3. TC egress sees that reply, applies each fix to its bucket if it still
 *    holds the lock token, releases the lock, completes the dedupe record,
 *    and cuts the entries and footer off: the client sees an ordinary reply.
 */
#define XTX_MAX_DEFERRED	4
/*
 * UDP payload that fits a 1500 B MTU: xtxd's reply (ops plus fix trailer)
 * must not be fragmented, or TC egress would see pieces.  XDP defers no
 * more ops than leave room for their fix entries.
 */
#define XTX_MAX_PAYLOAD		1472
#define XTX_DEFER_MAGIC		0x46454458u	/* "XDEF" */
#define XTX_FIX_MAGIC		0x58494658u	/* "XFIX" */

/* Deferred-op entry flags. */
#define XTX_DEFER_HAS_VICTIM	0x01	/* victim holds a dirty slot to write back */
#define XTX_DEFER_REPLAY	0x02	/* a retransmission: answer from xtxd's own record */
/*
 * A write of a value over XTX_VALUE_INLINE to a key the kernel caches in
 * fill_way: the store takes the key (the way, when dirty, rides along as
 * the victim and is saved first) and TC frees the way afterwards.
 */
#define XTX_DEFER_EVICT		0x04

struct xtx_defer_entry {
	__u8 op_idx;		/* which op of the packet */
	__u8 flags;		/* XTX_DEFER_* */
	__u8 fill_way;		/* way TC fills with the op's key, XTX_KV_NO_WAY: none */
	__u8 victim_way;	/* way of victim, when HAS_VICTIM */
	__u32 bucket;		/* bucket index */
	__u64 token;		/* bucket lock token */
	__u64 vfloor;		/* the bucket's version floor */
	struct xtx_kv_item victim;
};

#define XTX_KV_NO_WAY		0xff

struct xtx_defer_trailer {
	__u32 magic;		/* XTX_DEFER_MAGIC */
	__u8 count;
	__u8 pad[3];
	struct xtx_defer_entry e[XTX_MAX_DEFERRED];
};

/* What TC egress does with one bucket. */
#define XTX_FIX_FILL		0x01	/* install the op's key, value, version clean */
#define XTX_FIX_VICTIM_SAVED	0x02	/* victim written back: clean it, or free a tombstone */
#define XTX_FIX_RAISE_FLOOR	0x04	/* floor = max(floor, floor_to) */
/* free fill_way if it still holds the op's key: the store holds its value now */
#define XTX_FIX_EVICT		0x08
/*
 * Release the transaction lock op.token names: a grant answered anything
 * but OK (XDP's lock half took it, the op took nothing), or a COMMIT_PRIMARY
 * xtxd answered with anything but RETRY (XDP kept the lock while it was away).
 */
#define XTX_FIX_RELEASE		0x10
/* an eviction whose victim the store could not take (FULL): fill_way serves again */
#define XTX_FIX_UNEVICT		0x20

struct xtx_fix_entry {
	__u8 op_idx;
	__u8 action;		/* XTX_FIX_* */
	__u8 fill_way;
	__u8 victim_way;
	__u32 bucket;
	__u64 token;
	__u64 bloom;		/* the bucket's filter after this op, exact */
	__u64 floor_to;
	__u64 victim_key;	/* identifies the victim slot that was saved */
	__u64 victim_version;
};

/*
 * xtxd's rare-path reply on the wire (format of the fix trailer):
 *
 *   reply body (hdr, ops, value area) | struct xtx_fix_entry[count] | struct xtx_fix_footer
 *
 * The footer comes last so TC egress finds it from the packet's end
 * whatever the body's length; every reply xtxd sends from the xtx port
 * carries one (count may be 0), so the last bytes are never a value's.
 */
struct xtx_fix_footer {
	__u32 magic;		/* XTX_FIX_MAGIC */
	__u8 count;
	__u8 pad;
	__u16 body_len;		/* UDP payload bytes before the entries: what the client gets */
};

_Static_assert(sizeof(struct xtx_fix_footer) == 8, "fix footer layout");

/* Bytes before a trailer's entries: a trailer of n entries is this + n entries. */
#define XTX_TRAILER_HDR_LEN	8
#define XTX_DEFER_TRAILER_LEN(n) (XTX_TRAILER_HDR_LEN + (n) * sizeof(struct xtx_defer_entry))
/* The bytes xtxd appends to a reply body: n fix entries and the footer. */
#define XTX_FIX_TRAILER_LEN(n)	\
	((n) * sizeof(struct xtx_fix_entry) + sizeof(struct xtx_fix_footer))

_Static_assert(__builtin_offsetof(struct xtx_defer_trailer, e) == XTX_TRAILER_HDR_LEN, "trailer");
/* The MTU arithmetic of proto.h: any request leaves xtxd room for at least one fix entry. */
_Static_assert(XTX_MAX_REQUEST + XTX_FIX_TRAILER_LEN(1) <= XTX_MAX_PAYLOAD &&
	       sizeof(struct xtx_hdr) + XTX_MAX_OPS * sizeof(struct xtx_op) <= XTX_MAX_REQUEST,
	       "a request and its rare-path fix trailer fit the MTU");
_Static_assert(sizeof(struct xtx_defer_entry) == 88, "defer entry layout");

/*
 * One slot of the defer ring: XTX_DEFER_RING records per CPU, reused in
 * turn.  client_id and req_id name the packet the record belongs to, so a
 * reader that finds them changed knows the slot was reused under it.
 */
#define XTX_DEFER_RING		1024

struct xtx_defer_record {
	__u32 client_id;
	__u32 body_len;		/* the request's UDP payload: header, ops and value area */
	__u64 req_id;
	struct xtx_defer_trailer t;
};
_Static_assert(sizeof(struct xtx_fix_entry) == 48, "fix entry layout");

#endif /* XTX_KV_H */
