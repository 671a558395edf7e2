/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Map key/value layouts shared by the BPF programs, xtxd, xtxctl and tests. */
#ifndef XTX_MAPS_H
#define XTX_MAPS_H

#include <linux/types.h>
#include "proto.h"

/* Names of the pinned maps, under XTX_PIN_ROOT/<netns>/<iface>/. */
#define XTX_PIN_ROOT		"/sys/fs/bpf/xtx"
#define XTX_MAP_STATS		"xtx_stats"
#define XTX_MAP_RUNTIME		"xtx_runtime"
#define XTX_MAP_DEDUPE		"xtx_dedupe"
#define XTX_MAP_COUNTERS	"xtx_counters"
#define XTX_MAP_INFO		"xtx_info"
#define XTX_MAP_LOCKS		"xtx_locks"
#define XTX_MAP_KV		"xtx_kv"
#define XTX_MAP_BIGVAL		"xtx_bigval"
#define XTX_MAP_DEFER		"xtx_defer_ring"
#define XTX_MAP_LOG		"xtx_log"
#define XTX_MAP_LOG_CURSOR	"xtx_log_cursor"
#define XTX_MAP_FENCE		"xtx_fence"
#define XTX_MAP_ALLOW		"xtx_allow"
/*
 * The socket cookies of xtxd's rare-path sockets (__u64 -> __u32, unused):
 * TC egress applies a fix trailer only from a packet one of them sent, so
 * a forwarded or forged packet that looks like xtxd's answer changes
 * nothing.  A socketless packet's cookie is 0, which xtxd never lists.
 */
#define XTX_MAP_RARE_SOCKS	"xtx_rare_socks"
#define XTX_RARE_SOCKS_MAX	256
/* The configuration epoch served and its lease (struct xtx_epoch_lease). */
#define XTX_MAP_EPOCH		"xtx_epoch"
/* Each shard's replica set under the served epoch (__u32, as a LOG_APPEND packs it). */
#define XTX_MAP_SHARDS		"xtx_shards"
#define XTX_SHARDS_MAX		1024

/*
 * Transactions the servers decided while their coordinator was away
 * (xtxd's resolver): txn -> CLOCK_MONOTONIC ns of the fence.  LOG_APPEND
 * of a fenced txn answers XTX_ST_FENCED, so a replica that said "I do not
 * hold it" never holds it later.
 */
#define XTX_FENCE_MAX		65536

/*
 * What a server serves: requests of hdr.epoch == epoch (0 in a static
 * cluster), and, in a cluster held in ZooKeeper, only until until_ns
 * (CLOCK_BOOTTIME, bpf_ktime_get_boot_ns()).  xtxd moves until_ns forward while
 * its ZooKeeper session is surely alive, so a server cut off from
 * ZooKeeper, or whose xtxd died, stops serving on its own before its
 * session can expire and its shards be given to others.  A map of its
 * own: xtxd's cluster thread is its only writer, so no read-modify-write
 * of other knobs can undo a fence.
 */
struct xtx_epoch_lease {
	__u32 epoch;		/* hdr.epoch served; XTX_EPOCH_FENCED: none */
	/*
	 * Shards of the served configuration (0: static, no check): a
	 * LOG_APPEND must name its key's shard's replica set (xtx_shards)
	 * exactly, so a transaction placed by an older configuration cannot
	 * log past a reconfiguration (XTX_ST_MOVED).
	 */
	__u32 nshards;
	__u64 until_ns;		/* CLOCK_BOOTTIME; 0: no lease (static cluster) */
};

/* ---- statistics: one per-CPU element, summed by readers ---- */

enum xtx_counter {
	XTX_CTR_RX = 0,		/* xtx packets seen (well-formed or not) */
	XTX_CTR_TX,		/* replies sent with XDP_TX */
	XTX_CTR_PASS,		/* handed to the kernel stack */
	XTX_CTR_DROP,		/* dropped, any reason */
	XTX_CTR_REPLAYED,	/* duplicates answered from the dedupe record */
	XTX_CTR_TRUNCATED,	/* too short for an xtx header: dropped */
	XTX_CTR_BAD_MAGIC,	/* not xtx: dropped */
	XTX_CTR_IP_OPTIONS,	/* IPv4 options or fragments: dropped */
	XTX_CTR_BAD_VERSION,	/* error reply */
	XTX_CTR_MALFORMED,	/* error reply */
	XTX_CTR_BAD_OP,		/* error reply: an op failed validation */
	XTX_CTR_BAD_CLIENT,	/* error reply */
	XTX_CTR_STALE,		/* error reply */
	XTX_CTR_BUSY,		/* duplicate of a request still executing: RETRY */
	XTX_CTR_FAULT_DROP,	/* dropped by the fault-injection knobs */
	XTX_CTR_OPS,		/* ops executed (not replayed) */
	XTX_CTR_LOCK_CONFLICT,	/* lock requests rejected */
	XTX_CTR_LOCK_SHARING,	/* ... of which against another key sharing the slot */
	XTX_CTR_LOCK_RECLAIM,	/* grants that reclaimed an expired lease */
	XTX_CTR_LOCK_STALE,	/* releases that found nothing of the caller's */
	XTX_CTR_LOCK_BUSY,	/* slot spin bit busy: answered RETRY */
	XTX_CTR_KV_BUSY,	/* bucket locked by another packet: RETRY */
	XTX_CTR_KV_DEFERRED,	/* KV ops handed to xtxd (the rare path) */
	XTX_CTR_KV_DEFER_PKTS,	/* packets passed to xtxd */
	XTX_CTR_KV_BLOOM_MISS,	/* misses answered NOT_FOUND by the Bloom filter */
	XTX_CTR_KV_TAKEOVER,	/* bucket locks taken over after their lease */
	XTX_CTR_KV_VICTIMS,	/* dirty slots piggybacked for write-back */
	XTX_CTR_KV_FIXES,	/* fixes applied by TC egress */
	XTX_CTR_KV_FIX_STALE,	/* fixes skipped: the bucket lock had been taken over */
	XTX_CTR_KV_NO_ROOM,	/* packets whose deferral could not be recorded: ops RETRY */
	XTX_CTR_HADES_SQUASH,	/* HADES: active transactions squashed by a committer */
	XTX_CTR_HADES_NACK,	/* intend-to-commits refused */
	XTX_CTR_HADES_FILTER_RETRY, /* HREAD/HWRITE answered RETRY: a committing filter hit */
	XTX_CTR_HADES_RECLAIM,	/* active slots reclaimed after their lease */
	XTX_CTR_HADES_FULL,	/* no slot (or registry entry) free: RETRY */
	XTX_CTR_HADES_COMMIT,	/* transactions validated here */
	XTX_CTR_HADES_ABORT,	/* transactions aborted here */
	XTX_CTR_HADES_PROBES,	/* filter membership probes of conflict detection */
	XTX_CTR_HADES_FP_SQUASH, /* --hades-exact: squashes the exact sets refute */
	XTX_CTR_HADES_FP_BLOCK,	/* --hades-exact: RETRYs and NACKs the exact sets refute */
	XTX_CTR_NOT_ALLOWED,	/* dropped: the source is outside the allowlist */
	XTX_CTR_BAD_MAC,	/* dropped: the shared secret's MAC is missing or wrong */
	XTX_CTR_WRONG_EPOCH,	/* refused: sent for another configuration epoch */
	XTX_CTR_KV_BIG_SERVED,	/* reads of values over the slot answered from XTX_MAP_BIGVAL */
	XTX_CTR_LOCK_SHARERS_FULL, /* shared requests refused: the slot holds XTX_LOCK_SHARERS */
	XTX_CTR_FAM_PINNED,	/* family switches refused: the table holds logged or committing state */
	XTX_CTR_TC_FOREIGN,	/* TC egress: a fix trailer not sent by xtxd's socket, ignored */
	XTX_CTR_REPLAY_LAPSED,	/* replayed grants answered NOT_HELD: the hold was gone */
	XTX_CTR__COUNT,
};

struct xtx_stats {
	__u64 ctr[XTX_CTR__COUNT];
	__u64 op[XTX_OP__COUNT][XTX_ST__COUNT];	/* [opcode][status] */
};

/* ---- runtime knobs: one-element array, written by xtxd/xtxctl ---- */

struct xtx_runtime {
	/* Fault injection, parts per million: lose requests / replies. */
	__u32 drop_request_ppm;
	__u32 drop_reply_ppm;
	/* A lock not re-granted for this long is reclaimable (0: never). */
	__u64 lock_lease_ns;
	/* A bucket held across a rare-path round trip is taken over after this. */
	__u64 kv_lease_ns;
	/* Fault injection in xtxd: lose rare-path replies after executing them. */
	__u32 drop_rare_reply_ppm;
	__u32 flags;		/* XTX_RTF_* */
	/* With XTX_RTF_SECRET: the cluster's shared secret (include/xtx/mac.h). */
	__u64 secret_k0, secret_k1;
};

/* Only sources in the allowlist (XTX_MAP_ALLOW) are served; the rest are dropped. */
#define XTX_RTF_ALLOWLIST	0x1
/* Every request must carry the MAC of the shared secret; others are dropped. */
#define XTX_RTF_SECRET		0x2
/*
 * Breaks isolation on purpose: OCC_VALIDATE answers OK over a changed
 * version or another's lock, and READ hides locks, so OCC's checks pass
 * whatever they find.  Only for proving that the history checker
 * catches what it must (xtxctl fault --break-validate); never in service.
 */
#define XTX_RTF_BREAK_VALIDATE	0x4
/* Bits 8-31 of flags: the allowlist's generation, bumped by every change of it. */
#define XTX_RTF_ALLOW_GEN_SHIFT	8

/*
 * The client allowlist: an LPM trie of IPv4 prefixes (addr in network
 * order, prefixlen 0..32, as BPF_MAP_TYPE_LPM_TRIE wants its key).
 */
struct xtx_allow_key {
	__u32 prefixlen;
	__u32 addr;
};

#define XTX_ALLOW_MAX		1024

#define XTX_KV_LEASE_DEFAULT_NS		(50ull * 1000 * 1000)

#define XTX_LOCK_LEASE_DEFAULT_NS	(500ull * 1000 * 1000)

/* ---- what a loaded server was built and configured with ---- */

struct xtx_info {
	__u32 abi_version;	/* XTX_VERSION */
	__u32 port;
	__u32 max_clients;
	__u32 echo_mode;
	__u64 loaded_ns;	/* CLOCK_MONOTONIC at load */
	__u32 lock_slots;
	__u32 kv_buckets;
	__u32 kv_flags;		/* XTX_INFO_KV_* ablations */
	__u32 value_size;	/* largest value a write may carry */
	__u32 log_ring;		/* log entries per CPU */
	__u32 bigval_max;	/* XTX_MAP_BIGVAL's copies at most; 0: xtxd keeps none */
	__u64 reserved;
};

#define XTX_INFO_KV_WRITE_THROUGH	0x1
#define XTX_INFO_KV_NO_BLOOM		0x2
#define XTX_INFO_NO_WARM		0x4	/* ablation: no warm pass (bpf/lib/warm.h) */

/* ---- lock table (DINT §3.1): an ARRAY indexed by xtx_lock_slot_of() ----
 *
 * Ids that hash together share a slot ("lock sharing": no collision
 * chains in BPF).  A slot changes only under its spin word, taken with one
 * CAS; a request never waits for it (a busy slot answers RETRY, DINT's
 * fail-and-retry), a release waits a bounded while.  The map is mmapable
 * so that xtxd's resolver takes the spin word with a real CAS too.
 *
 * The spin word is a sequence count: even when free, odd while a CPU
 * updates the slot, and each release moves it on to the next even value.
 * A check that changes nothing (OCC_VALIDATE) reads the slot between two
 * loads of it, without writing the slot's line: the same even value both
 * times means no update came between (xtx_lock_peek).
 *
 * owner is the exclusive holder; sharer[] lists the shared holds, one
 * entry per hold (a transaction holding two keys of the slot shared has
 * two), packed in [0, shared).  So a release proves its holder: a
 * transaction frees only a hold of its own.  A transaction never
 * conflicts with itself through sharing: it may re-take its exclusive
 * slot, take shared under its own exclusive, and upgrade when every
 * shared hold is its own.  A slot takes at most XTX_LOCK_SHARERS shared
 * holds at once; one more is refused REJECTED (counted, no-wait).
 *
 * gen counts how often the slot went from free to held (and reclaims);
 * a grant's token is gen, and a release whose token is not the current
 * gen is a late release by an old holder: it changes nothing.
 *
 * flags bits 16..31 name the tables whose LOG_APPENDs marked the slot
 * LOGGED, each counted once in XTX_MAP_FAM_PINS until the slot is freed.
 */
#define XTX_LOCK_SLOTS_DEFAULT	(1u << 20)
#define XTX_LOCK_SLOTS_MAX	(1u << 26)
#define XTX_LOCK_SHARERS	3

struct xtx_lock_slot {
	__u32 spin;		/* sequence: even free, odd held by a CPU mid-update */
	__u32 flags;		/* XTX_LOCKF_LOGGED, XTX_LOCK_KEYS_MIXED, XTX_LOCK_RECOVERED, pins */
	__u32 gen;		/* epoch; grant token */
	__u16 shared;		/* shared holds: sharer[0, shared) */
	__u16 excl;		/* exclusive holds (re-entrant, one owner) */
	__u64 owner;		/* exclusive holder's txn id, 0 when none */
	__u64 granted_ns;	/* last grant: the lease runs from here */
	__u64 key_hash;		/* xtx_hash of the first held key, to tell sharing conflicts */
	__u64 sharer[XTX_LOCK_SHARERS];	/* txn id of each shared hold */
};

#define XTX_LOCK_KEYS_MIXED	0x8000u	/* holders hold different keys of the slot */
/*
 * A hold xtxd's recovery took for a transaction it left undecided
 * (user/xtxd/log/undecided.h): its grant token is not the coordinator's,
 * so UNLOCK never frees it (only a decision may), while the owner's own
 * COMMIT_PRIMARY does, whatever token it brings: the commit is the decision.
 */
#define XTX_LOCK_RECOVERED	0x4000u
#define XTX_LOCK_PIN_SHIFT	16	/* flags bit 16 + table: a LOGGED hold of that table */

/* One cache line: a grant touches one line of the table. */
_Static_assert(sizeof(struct xtx_lock_slot) == 64, "lock slot layout");
_Static_assert(XTX_LOCK_PIN_SHIFT + 16 <= 32, "a pin bit per table");

/* ---- what pins a table's concurrency-control family (bpf/lib/family.h) ----
 *
 * XTX_MAP_FAM_PINS counts, per table, the LOGGED lock holds no lease takes
 * back: row c (c * XTX_MAX_TABLES + table) is CPU c's count, moved by XDP
 * and TC on that CPU only, so the hot path has no shared line; row
 * XTX_PIN_USER_ROW is user space's (xtxd's resolver frees logged locks),
 * moved with atomics through a mapping.  A table's count is the sum of
 * its column; a row alone may go negative (a hold marked on one CPU and
 * freed on another).
 */
#define XTX_MAP_FAM_PINS	"xtx_fam_pins"
#define XTX_PIN_CPUS_MAX	1024
#define XTX_PIN_USER_ROW	XTX_PIN_CPUS_MAX
#define XTX_PIN_ENTRIES		((XTX_PIN_CPUS_MAX + 1) * XTX_MAX_TABLES)

/* ---- retransmission safety ----
 *
 * A retransmitted request must get the original answer and must not run
 * twice (a shared lock taken twice leaks, a counter added twice is wrong).
 * Each client owns XTX_DEDUPE_WINDOW slots, keyed by
 * client_id * XTX_DEDUPE_WINDOW + req_id % XTX_DEDUPE_WINDOW.  A slot holds
 * the req_id it serves, a state, and the result fields of every op that
 * changes state.  For an incoming request R and the slot's request S:
 *   R > S   new: claim the slot (CAS to CLAIMING), reset the fields of R's
 *           ops and note how many R has, publish BUSY, execute, record, mark
 *           DONE;
 *   R == S  duplicate: DONE -> answer from the record (state-changing ops)
 *           and by re-executing the read-only ones; CLAIMING or BUSY -> RETRY,
 *           except a BUSY past the KV lease (its rare-path answer was lost):
 *           one duplicate takes it over and hands its deferred ops to xtxd
 *           again, with the arguments they went with the first time;
 *   R < S   older than the window: STALE, nothing runs.
 * A slot's fields are written before the state that lets another CPU act
 * on them: a duplicate racing the claim on another CPU sees CLAIMING, never
 * BUSY with the previous request's stamp and statuses.
 *
 * An op handed to xtxd is recorded DEFERRED with the flags, version and
 * token it went with; TC egress replaces that with xtxd's answer.
 * Clients number requests per server from a clock-derived start (so a
 * restarted client never reuses ids) and keep fewer than the window
 * outstanding per server.
 */
#define XTX_DEDUPE_WINDOW	16
#define XTX_DEDUPE_FREE		0ull
#define XTX_DEDUPE_BUSY		1ull
#define XTX_DEDUPE_DONE		2ull
#define XTX_DEDUPE_CLAIMING	3ull	/* claimed, fields being reset: not yet BUSY */
#define XTX_DEDUPE_STATE_MASK	3ull

static inline __u64 xtx_dedupe_word(__u64 req_id, __u64 state)
{
	return (req_id << 2) | state;
}

struct xtx_op_result {
	__u8 status;
	__u8 pad[3];
	__u32 flags;
	__u64 version;
	__u64 token;
};

struct xtx_dedupe_slot {
	__u64 word;		/* xtx_dedupe_word(req_id, state) */
	__u64 claimed_ns;	/* when the slot went BUSY */
	/*
	 * The claimed request's op count: only its results are reset, so
	 * res[] past it may hold an older request's, which a duplicate never
	 * reads (xtx_dedupe_replay).
	 */
	__u32 nops;
	__u32 pad;
	struct xtx_op_result res[XTX_MAX_OPS];
};

_Static_assert(sizeof(struct xtx_op_result) == 24, "dedupe record layout");

/* Server counters for XTX_OP_COUNTER_ADD. */
#define XTX_COUNTERS		64

/* Load-time limits. */
#define XTX_MAX_CLIENTS_DEFAULT	1024
#define XTX_MAX_CLIENTS_LIMIT	16384	/* 16 slots of 408 B each: 107 MB at most */
#define XTX_MAX_TABLES		16

#endif /* XTX_MAPS_H */
