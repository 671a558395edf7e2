/* SPDX-License-Identifier: GPL-2.0-only */
/* Every BPF map of the xtx data path, declared in one place. */
#ifndef XTX_BPF_MAPS_H
#define XTX_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/maps.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include <xtx/hades.h>

/* Per-CPU packet/op/status counters; readers sum over CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xtx_stats);
} xtx_stats SEC(".maps");

/* Runtime knobs (fault injection), written by xtxd and xtxctl. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xtx_runtime);
} xtx_runtime SEC(".maps");

/* The configuration epoch served and its lease, written by xtxd's cluster thread. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xtx_epoch_lease);
	/* xtxd stores each field atomically through a mapping (user/xtxd/member.c) */
	__uint(map_flags, BPF_F_MMAPABLE);
} xtx_epoch SEC(".maps");

/* Each shard's packed replica set under the served epoch, written by xtxd's cluster thread. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_SHARDS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} xtx_shards SEC(".maps");

/* Identity of the loaded program, so tools can check what they talk to. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xtx_info);
} xtx_info SEC(".maps");

/*
 * Retransmission records, XTX_DEDUPE_WINDOW per client; xtxd resizes it to
 * max_clients * XTX_DEDUPE_WINDOW before load.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_MAX_CLIENTS_DEFAULT * XTX_DEDUPE_WINDOW);
	__type(key, __u32);
	__type(value, struct xtx_dedupe_slot);
} xtx_dedupe SEC(".maps");

/* Per table: which concurrency-control family serves it, and since when (family.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_MAX_TABLES);
	__type(key, __u32);
	__type(value, __u64);
} xtx_table_family SEC(".maps");

/* Per CPU and table: LOGGED lock holds, which keep a table's family (include/xtx/maps.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_PIN_ENTRIES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __s64);
} xtx_fam_pins SEC(".maps");

/* xtxd's rare-path sockets: the only senders whose fix trailers TC egress applies. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XTX_RARE_SOCKS_MAX);
	__type(key, __u64);
	__type(value, __u32);
} xtx_rare_socks SEC(".maps");

/* Counters served by XTX_OP_COUNTER_ADD. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} xtx_counters SEC(".maps");

/*
 * The lock table (struct xtx_lock_slot); xtxd sizes it from --lock-slots
 * and maps it, so its resolver takes a slot's spin word with a real CAS.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_LOCK_SLOTS_DEFAULT);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xtx_lock_slot);
} xtx_locks SEC(".maps");

/*
 * The kernel KV cache (struct xtx_kv_bucket); xtxd sizes it from
 * --kv-buckets and maps it to add Bloom filter bits (see xtxd's executor).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_KV_BUCKETS_DEFAULT);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xtx_kv_bucket);
} xtx_kv SEC(".maps");

/*
 * Deferred ops on their way to xtxd, XTX_DEFER_RING slots per CPU; xtxd
 * maps it read-only.  xtxd sizes it to XTX_DEFER_RING * possible CPUs.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_DEFER_RING);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xtx_defer_record);
} xtx_defer_ring SEC(".maps");

/*
 * The transaction logs: xtx_log_ring entries per CPU, CPU c's at
 * c * xtx_log_ring; xtxd maps both maps and drains them (include/xtx/log.h).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_LOG_RING_DEFAULT);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xtx_log_entry);
} xtx_log SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xtx_log_cursor);
} xtx_log_cursor SEC(".maps");

/* Fenced transactions (XTX_MAP_FENCE): LOG_APPEND refuses them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XTX_FENCE_MAX);
	__type(key, __u64);
	__type(value, __u64);
} xtx_fence SEC(".maps");

/* Who may be served (XTX_MAP_ALLOW), when XTX_RTF_ALLOWLIST is set: see allow.h. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XTX_ALLOW_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xtx_allow_key);
	__type(value, __u8);
} xtx_allow SEC(".maps");

/* The value store of values over the slot (include/xtx/kv.h); xtxd sizes it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XTX_BIGVAL_DEFAULT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xtx_bigval_key);
	__type(value, struct xtx_bigval);
} xtx_bigval SEC(".maps");

/*
 * HADES: the transaction slots (xtxd sizes them from --hades-slots), the
 * registry of committing slots, and the exact key sets of --hades-exact
 * (one per slot then, else a single unused element).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_HADES_SLOTS_DEFAULT);
	__uint(map_flags, BPF_F_MMAPABLE);	/* xtxd's resolver CASes slots too */
	__type(key, __u32);
	__type(value, struct xtx_hades_slot);
} xtx_hades SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xtx_hades_registry);
} xtx_hades_reg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xtx_hades_exact);
} xtx_hades_exact SEC(".maps");

/* The values over a slot HINTEND staged, XTX_HADES_STAGE_MAX per slot (sized with it). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_HADES_SLOTS_DEFAULT * XTX_HADES_STAGE_MAX);
	__type(key, __u32);
	__type(value, struct xtx_hades_big);
} xtx_hades_big SEC(".maps");

/*
 * What every op of the packet being served shares (clock, knobs, dedupe
 * record), computed once per packet.  Per-CPU is safe: an XDP program runs
 * to completion on one CPU.
 */
struct xtx_pkt_ctx {
	__u64 now;		/* bpf_ktime_get_ns(), read on first use (xtx_now); 0 before */
	__u64 lock_lease_ns;
	__u64 kv_lease_ns;
	__u32 rt_flags;		/* xtx_runtime.flags (XTX_RTF_*) */
	__u32 client_id;	/* the request header's */
	/* the last table admitted for a family in this packet (family.h): table | fam << 8 */
	__u32 fam_admitted;
	__u32 rec_key;		/* dedupe slot of this request */
	__u32 mode;		/* enum xtx_exec_mode */
	__u32 ndeferred;	/* ops handed to xtxd so far */
	__u32 max_deferred;	/* what the reply's MTU leaves room for */
	__u32 ring_pos;		/* this CPU's next slot in xtx_defer_ring */
	__u32 redefer_busy;	/* a replay or re-deferral cannot answer now: retry it whole */
	__u32 payload_len;	/* the request's UDP payload: header, ops, value area */
	/*
	 * The last sender this CPU found in the allowlist, and the list's
	 * generation then + 1 (0 never matches): a client's packets mostly
	 * follow each other, and the trie lookup costs more than the rest of a
	 * PING.  Any change of the list bumps the generation (allow.h).
	 */
	__u32 allow_saddr;
	__u32 allow_gen;
	__u64 fence;		/* the target of xtx_load_fence()'s exchange: never read */
	/*
	 * xtx_hash(table, key) of each op, computed once when the op is
	 * validated: the warm pass, the lock half and the KV half all place
	 * the op from it (xtx_op_hash).
	 */
	__u64 hash[XTX_MAX_OPS];
	struct xtx_defer_entry deferred[XTX_MAX_DEFERRED];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xtx_pkt_ctx);
} xtx_pkt_ctx SEC(".maps");

#endif /* XTX_BPF_MAPS_H */
