/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* HADES (seed 000 §IV-V): transaction slots, Bloom filters and the wire rules of its ops. */
#ifndef XTX_HADES_H
#define XTX_HADES_H

#include <linux/types.h>
#include "proto.h"
#include "hash.h"

/*
 * Conflict detection without per-key versions or locks: each server keeps,
 * per transaction that touched it, a read and a write Bloom filter (the
 * "remote BFs" HADES puts in the NIC; here they live in BPF maps and the
 * XDP program is the NIC).  Design §6.
 *
 * ---- Client protocol (one key per op; ops of many transactions share packets) ----
 *
 * Execution, at the primary of each key:
 *   HREAD  (table, key, txn)   value, vlen, version of the key, or NOT_FOUND.
 *   HWRITE (table, key, txn)   a write intent: the current value and version,
 *                              or XTX_TXF_ABSENT with the version a creating
 *                              commit expects.  The client buffers the write.
 *   Both answer RETRY when the key hits the filters of a transaction that is
 *   committing here right now, the key's bucket is busy or no slot is free
 *   (nothing is lost: send the op again; a recorded key stays recorded),
 *   and SQUASHED once the transaction has been squashed here (abort).
 *
 * Commit, when execution is over:
 *   1. HINTEND to every server the transaction touched and to every replica
 *      of each written key: one op per key written there, carrying table,
 *      key, value, vlen, version = the version HWRITE answered (the base),
 *      XTX_OPF_DELETE to delete, XTX_HOPF_REPLICA at a replica, and in token
 *      the participant set (xtx_hades_participants: a bitmap of server
 *      indices).  The last HINTEND of the transaction at a server has
 *      XTX_HOPF_LAST; it must follow the others in the same packet or be
 *      sent after their replies.  A server the transaction only read from
 *      gets one HINTEND with XTX_HOPF_NO_WRITE | XTX_HOPF_LAST (key and
 *      value ignored): read tracking is never skipped, and this is where a
 *      reader learns it was squashed.  The LAST op answers:
 *        OK        Ack: the transaction holds its partial lock here and can
 *                  no longer be squashed here.
 *        NACK      its writes hit a committing transaction's filters (or a
 *                  reader committing concurrently): abort.  The slot is
 *                  already released.  Any HINTEND answers NACK once the
 *                  servers decided the transaction without this server
 *                  (xtxd's resolver fenced it: user/xtxd/resolve/resolve_hades.h).
 *        SQUASHED  another transaction's commit squashed it: abort.
 *        RETRY     nothing changed (no slot, or XTX_HADES_COMMITTING_MAX
 *                  transactions committing here): send it again.
 *      Non-LAST HINTENDs answer OK (staged), SQUASHED, RETRY (no slot), or
 *      TOO_MANY (more than XTX_HADES_STAGE_MAX writes at one server: nothing
 *      staged, abort).
 *      A value over XTX_VALUE_INLINE travels in the op's value area
 *      (XTX_OPF_EXT, proto.h) and is staged whole, in the server, beside
 *      the slot (XTX_MAP_HADES_BIG): from the Ack on, a resolver that finds
 *      the transaction committed installs it without its coordinator.
 *   2. After every Ack: HVALIDATE, one op per write at every server and
 *      replica that staged it, naming the same table and key (value, vlen,
 *      base version, delete and replica come from the staged copy, and the
 *      reply carries them); the last one at a server has XTX_HOPF_LAST (a
 *      server with no writes gets one with XTX_HOPF_NO_WRITE |
 *      XTX_HOPF_LAST).  token carries the key's replica set for the log
 *      (xtx_log_replicas_pack, include/xtx/log.h).  A write staged with a
 *      value over XTX_VALUE_INLINE needs an area of at least its length
 *      (the client sends the value it staged there, XTX_OPF_EXT, as
 *      HINTEND did: the server puts its staged copy over it, and a
 *      re-deferred copy of the request can still be run by xtxd): without
 *      one it answers TOO_BIG with the length in ext.len, and nothing
 *      changed.  A write staged in the slot answers in the slot (EXT
 *      cleared, the area unused).  Each write becomes
 *      visible at version base + 1 and is appended to the log; the slot is
 *      released once LAST came and every staged write is in, so a write
 *      whose HVALIDATE answered RETRY is not lost by the LAST beside it.
 *      Answers: OK (version = the installed version), TOO_BIG, ALREADY_APPLIED
 *      (done before: success), LOG_FULL or RETRY (nothing changed: send it
 *      again until it is in; the transaction is decided),
 *      TXN_GONE (no such committing transaction here: never Acked, or
 *      aborted), BAD_ARG (the key was never intended here), CHANGED (the
 *      key moved since HWRITE: only a writer outside HADES can do that).
 *   Any NACK, SQUASHED or TOO_MANY: HABORT (txn only) to every server and
 *   replica the transaction sent anything to.  HABORT discards staged
 *   writes and releases the slot; it always answers OK, with
 *   XTX_HRF_NOTHING in flags when nothing of the transaction was there.
 *
 * XTX_HOPF_BEGIN goes on every op of the first request a transaction sends
 * to a server: only such an op may take a slot.  An op without it whose
 * transaction has no slot answers SQUASHED (its slot was reclaimed by
 * lease, so its earlier reads are no longer tracked).  A full slot table
 * answers RETRY.
 *
 * A slot not touched for the lease (xtxd --hades-lease) while active or
 * squashed may be reclaimed, and so may a committing one with no staged
 * write (a reader's final check: all its reads were made before it, so a
 * late HVALIDATE answering TXN_GONE changes nothing).  A committing slot
 * with staged writes is never reclaimed by lease: it waits for HVALIDATE or
 * HABORT, or past xtxd --resolve-after for the participants named in the
 * HINTEND token to decide it together (user/xtxd/resolve/resolve_hades.h).
 *
 * HREAD and HWRITE are re-executed on retransmission (recording a key
 * twice is harmless); HINTEND, HVALIDATE and HABORT are answered from the
 * dedupe record.
 */

/* Request flags in op.flags; XTX_OPF_DELETE (proto.h) marks a delete. */
#define XTX_HOPF_BEGIN		0x00010000u	/* first request of the txn here: may take a slot */
#define XTX_HOPF_LAST		0x00020000u	/* HINTEND/HVALIDATE: the txn's last one here */
#define XTX_HOPF_REPLICA	0x00040000u	/* HINTEND/HVALIDATE: this server is a backup */
#define XTX_HOPF_NO_WRITE	0x00080000u	/* HINTEND/HVALIDATE: carries no write */
/* Reply flags. */
#define XTX_HRF_NOTHING		0x00000200u	/* HABORT: nothing of the txn was here */

#define XTX_HOPF_KNOWN		(XTX_HOPF_BEGIN | XTX_HOPF_LAST | XTX_HOPF_REPLICA | \
				 XTX_HOPF_NO_WRITE | XTX_OPF_DELETE)

/* Participant sets: bit i is server index i of the coordinator's configuration. */
#define XTX_HADES_MAX_SERVERS	64

static inline __u64 xtx_hades_participants(const __u16 *servers, unsigned int n)
{
	__u64 v = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		if (servers[i] < XTX_HADES_MAX_SERVERS)
			v |= 1ull << servers[i];
	return v;
}

/*
 * The KV half of a HADES op has the semantics of an existing op, and runs
 * as that op in XDP and in xtxd's rare path alike: HREAD as GET, HWRITE as
 * OCC_LOCK's read (value, or XTX_TXF_ABSENT and the base version), HVALIDATE
 * as COMMIT_PRIMARY from the base version, or at a replica as COMMIT_BACKUP
 * of version base + 1 (xtx_hades_kv_version).  XTX_OP_NOP: no KV half.
 */
static inline __u8 xtx_hades_kv_opcode(__u8 opcode, __u32 flags)
{
	switch (opcode) {
	case XTX_OP_HREAD:
		return XTX_OP_GET;
	case XTX_OP_HWRITE:
		return XTX_OP_OCC_LOCK;
	case XTX_OP_HVALIDATE:
		if (flags & XTX_HOPF_NO_WRITE)
			return XTX_OP_NOP;
		return (flags & XTX_HOPF_REPLICA) ? XTX_OP_COMMIT_BACKUP : XTX_OP_COMMIT_PRIMARY;
	default:
		return XTX_OP_NOP;
	}
}

/* The version field the aliased op expects, from the HADES op's. */
static inline __u64 xtx_hades_kv_version(__u8 opcode, __u32 flags, __u64 version)
{
	return xtx_hades_kv_opcode(opcode, flags) == XTX_OP_COMMIT_BACKUP ? version + 1 : version;
}

/*
 * ---- Bloom filters ----
 *
 * m bits (XTX_HADES_BF_BITS_MIN..MAX, a multiple of 64) and k hashes
 * (1..XTX_HADES_HASHES_MAX), fixed at load.  A key's bits come from its
 * filter hash h (a second mix of xtx_hash, so filter bits are independent
 * of placement: bucket, lock slot, shard), 16 independent bits per position
 * (xtx_hades_bf_bit).  Double hashing (h1 + i * h2) would be as cheap, but
 * at these sizes two keys share all k positions often enough to double the
 * false-positive rate at 20 keys in 1 Kbit; independent positions follow
 * the theory, (1 - e^(-kn/m))^k (tests/unit/test_hades.c).  Clients and
 * tests compute the same bits with these functions.
 */
#define XTX_HADES_BF_BITS_MIN		256
#define XTX_HADES_BF_BITS_MAX		2048
#define XTX_HADES_BF_BITS_DEFAULT	1024
#define XTX_HADES_BF_WORDS		(XTX_HADES_BF_BITS_MAX / 64)
#define XTX_HADES_HASHES_MAX		8
/* (1 - e^(-4*20/1024))^4 = 0.003% per probe at 20 keys; HADES' k = 2 gives 0.15%. */
#define XTX_HADES_HASHES_DEFAULT	4

static inline __u64 xtx_hades_bf_hash(__u8 table, __u64 key)
{
	return xtx_mix64(xtx_hash(table, key) ^ 0x48414445535f4246ull);
}

/*
 * Bit i of a key whose xtx_hades_bf_hash is h, in a filter of m bits: bits
 * 0..3 are the four 16-bit quarters of h scaled onto [0, m), bits 4..7 those
 * of a second mix of h.  (m <= 2048 needs 11 bits of a quarter.)
 */
static inline __u32 xtx_hades_bf_bit(__u64 h, __u32 i, __u32 m)
{
	__u64 w = i < 4 ? h : xtx_mix64(h ^ 0x4b4841534845535aull);

	return (__u32)((((w >> (16 * (i & 3))) & 0xffff) * m) >> 16);
}

static inline int xtx_hades_bf_valid(__u32 m, __u32 k)
{
	return m >= XTX_HADES_BF_BITS_MIN && m <= XTX_HADES_BF_BITS_MAX && m % 64 == 0 &&
	       k >= 1 && k <= XTX_HADES_HASHES_MAX;
}

/* Plain (non-atomic) versions for user space; XDP ORs with atomics. */
static inline void xtx_hades_bf_add(__u64 *bf, __u64 h, __u32 m, __u32 k)
{
	__u32 i, b;

	for (i = 0; i < k && i < XTX_HADES_HASHES_MAX; i++) {
		b = xtx_hades_bf_bit(h, i, m);
		bf[(b >> 6) & (XTX_HADES_BF_WORDS - 1)] |= 1ull << (b & 63);
	}
}

static inline int xtx_hades_bf_test(const __u64 *bf, __u64 h, __u32 m, __u32 k)
{
	__u32 i, b;

	for (i = 0; i < k && i < XTX_HADES_HASHES_MAX; i++) {
		b = xtx_hades_bf_bit(h, i, m);
		if (!((bf[(b >> 6) & (XTX_HADES_BF_WORDS - 1)] >> (b & 63)) & 1))
			return 0;
	}
	return 1;
}

/*
 * ---- Server state (maps XTX_MAP_HADES, XTX_MAP_HADES_REG, XTX_MAP_HADES_EXACT,
 *      XTX_MAP_HADES_BIG) ----
 *
 * The slot table is an ARRAY; a transaction's slot is one of
 * XTX_HADES_PROBES consecutive slots from xtx_hades_home(txn).  The owner
 * is claimed by CAS on owner (0: free).  ctl packs a generation (bumped on
 * every claim) above the state, so a squash or publish CAS made against
 * an earlier tenant of the slot fails.
 */
#define XTX_MAP_HADES		"xtx_hades"
#define XTX_MAP_HADES_REG	"xtx_hades_reg"
#define XTX_MAP_HADES_EXACT	"xtx_hades_exact"
#define XTX_MAP_HADES_BIG	"xtx_hades_big"

#define XTX_HADES_SLOTS_DEFAULT	1024
#define XTX_HADES_SLOTS_MAX	(1u << 16)
#define XTX_HADES_PROBES	8
#define XTX_HADES_STAGE_MAX	8
/* Transactions committing at once per server (the registry HREAD/HWRITE scan). */
#define XTX_HADES_COMMITTING_MAX 64
#define XTX_HADES_LEASE_DEFAULT_NS (500ull * 1000 * 1000)
/* Exact key sets of --hades-exact: keys per set; a fuller set stops counting. */
#define XTX_HADES_EXACT_KEYS	32

enum xtx_hades_state {
	XTX_HS_FREE = 0,
	XTX_HS_ACTIVE = 1,
	XTX_HS_COMMITTING = 2,	/* partially locked: its filters block conflicting ops */
	XTX_HS_SQUASHED = 3,
};

#define XTX_HADES_CTL_STATE_MASK	0xffull
#define XTX_HADES_CTL_GEN_SHIFT		8

static inline __u64 xtx_hades_ctl(__u64 gen, __u32 state)
{
	return (gen << XTX_HADES_CTL_GEN_SHIFT) | state;
}

static inline __u32 xtx_hades_home(__u64 txn, __u32 nslots)
{
	return xtx_reduce32((__u32)xtx_mix64(txn ^ 0x7478736c6f74ull), nslots);
}

/* How a slot's previous tenant ended (last_outcome). */
enum xtx_hades_outcome {
	XTX_HO_NONE = 0,
	XTX_HO_VALIDATED = 1,
	XTX_HO_ABORTED = 2,
	XTX_HO_NACKED = 3,
	XTX_HO_RECLAIMED = 4,
};

/* Staged-write flags. */
#define XTX_HSF_DELETE		0x01
#define XTX_HSF_REPLICA		0x02	/* staged as a backup: no conflict checks */
#define XTX_HSF_DONE		0x04	/* validated */
#define XTX_HSF_BIG		0x08	/* value over XTX_VALUE_INLINE: in XTX_MAP_HADES_BIG */
/*
 * Validated, its install handed to xtxd and not yet answered: the slot
 * stays committing (its filters keep conflicting accesses out) until TC
 * egress sees xtxd's answer, as a deferred commit keeps its lock.  Else
 * a transaction could read the key's old version from the store before
 * the install landed, stage a write at the same base, and have its own
 * install answered ALREADY_APPLIED: a lost update.
 */
#define XTX_HSF_INSTALLING	0x10

struct xtx_hades_staged {
	__u64 key;
	__u64 version;		/* base: the write installs version + 1 */
	__u64 kh;		/* xtx_hash(table, key), for the exact sets */
	/* its filter bits, computed once: the committer probes every slot with them */
	__u16 bit[XTX_HADES_HASHES_MAX];
	__u8 table;
	__u8 vlen;
	__u8 flags;		/* XTX_HSF_* */
	__u8 pad[5];
	__u8 value[XTX_VALUE_INLINE];
};

_Static_assert(sizeof(struct xtx_hades_staged) == 88, "staged write layout");

/*
 * The value of a write staged with XTX_HSF_BIG (vlen 0 and value[] zero in
 * the staged entry): XTX_MAP_HADES_BIG, an ARRAY of XTX_HADES_STAGE_MAX
 * entries per slot, entry xtx_hades_big_idx(slot, staged index).  The slot
 * owns its entries, so nothing is allocated or freed: a new tenant's
 * HINTEND overwrites one before its staged entry (nstaged) can name it,
 * and only a staged entry with XTX_HSF_BIG makes an entry's bytes a value.
 */
struct xtx_hades_big {
	__u16 len;		/* XTX_VALUE_INLINE < len <= XTX_VALUE_MAX */
	__u8 pad[6];
	__u8 data[XTX_VALUE_MAX];
};

static inline __u32 xtx_hades_big_idx(__u32 slot, __u32 j)
{
	return slot * XTX_HADES_STAGE_MAX + j;
}

/* Slot flags. */
#define XTX_HSLF_PRIMARY	0x01	/* read, wrote or intends a key as its primary */
#define XTX_HSLF_LAST		0x02	/* its last HVALIDATE came: release once all are done */
/*
 * xtxd's resolver told a peer (or itself) it holds this committing slot:
 * from then on only the decision ends it, and HABORT answers RETRY.
 */
#define XTX_HSLF_HELD		0x04

struct xtx_hades_slot {
	__u64 owner;		/* txn id, 0 when free */
	__u64 ctl;		/* xtx_hades_ctl(gen, state) */
	__u64 touched_ns;	/* last op of the owner: the lease runs from here */
	__u64 last_txn;		/* the previous tenant ... */
	__u32 last_outcome;	/* ... and how it ended (XTX_HO_*) */
	__u32 nstaged;
	__u64 participants;	/* bitmap of server indices, from HINTEND */
	__u32 reg_pos;		/* registry entry + 1 while committing, else 0 */
	__u32 flags;		/* XTX_HSLF_* */
	__u64 rbf[XTX_HADES_BF_WORDS];
	__u64 wbf[XTX_HADES_BF_WORDS];
	struct xtx_hades_staged staged[XTX_HADES_STAGE_MAX];
};

/*
 * Who to look at, so that neither an access nor a commit walks the whole
 * table: the committing transactions (slot index + 1 per entry, 0 free,
 * with a mask of the entries in use) and a bitmap of the occupied slots.
 */
struct xtx_hades_registry {
	__u64 mask;		/* bit i: slot[i] in use */
	__u32 slot[XTX_HADES_COMMITTING_MAX];
	__u64 used[XTX_HADES_SLOTS_MAX / 64];
};

/* --hades-exact: the exact key sets (xtx_hash of table and key) beside the filters. */
struct xtx_hades_exact {
	__u32 nread;		/* may exceed XTX_HADES_EXACT_KEYS: then the set is incomplete */
	__u32 nwrite;
	__u64 read[XTX_HADES_EXACT_KEYS];
	__u64 write[XTX_HADES_EXACT_KEYS];
};

#endif /* XTX_HADES_H */
