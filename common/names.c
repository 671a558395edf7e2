// SPDX-License-Identifier: GPL-2.0-only
/* Printable names for the ABI's enums, kept next to nothing else. */
#include <stdio.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "names.h"

static const char *const op_names[XTX_OP__COUNT] = {
	[XTX_OP_PING] = "ping",
	[XTX_OP_STATS] = "stats",
	[XTX_OP_COUNTER_ADD] = "counter_add",
	[XTX_OP_LOCK_SHARED] = "lock_shared",
	[XTX_OP_LOCK_EXCL] = "lock_excl",
	[XTX_OP_UNLOCK_SHARED] = "unlock_shared",
	[XTX_OP_UNLOCK_EXCL] = "unlock_excl",
	[XTX_OP_OCC_LOCK] = "occ_lock",
	[XTX_OP_OCC_UNLOCK] = "occ_unlock",
	[XTX_OP_OCC_VALIDATE] = "occ_validate",
	[XTX_OP_GET] = "get",
	[XTX_OP_INSERT] = "insert",
	[XTX_OP_UPDATE] = "update",
	[XTX_OP_DELETE] = "delete",
	[XTX_OP_READ] = "read",
	[XTX_OP_COMMIT_BACKUP] = "commit_backup",
	[XTX_OP_COMMIT_PRIMARY] = "commit_primary",
	[XTX_OP_LOG_APPEND] = "log_append",
	[XTX_OP_HREAD] = "hread",
	[XTX_OP_HWRITE] = "hwrite",
	[XTX_OP_HINTEND] = "hintend",
	[XTX_OP_HVALIDATE] = "hvalidate",
	[XTX_OP_HABORT] = "habort",
	[XTX_OP_TXN_STATUS] = "txn_status",
};

static const char *const status_names[XTX_ST__COUNT] = {
	[XTX_ST_NONE] = "none",
	[XTX_ST_OK] = "ok",
	[XTX_ST_RETRY] = "retry",
	[XTX_ST_MALFORMED] = "malformed",
	[XTX_ST_BAD_VERSION] = "bad_version",
	[XTX_ST_UNKNOWN_OP] = "unknown_op",
	[XTX_ST_BAD_ARG] = "bad_arg",
	[XTX_ST_BAD_CLIENT] = "bad_client",
	[XTX_ST_STALE] = "stale",
	[XTX_ST_NOT_EXECUTED] = "not_executed",
	[XTX_ST_REJECTED] = "rejected",
	[XTX_ST_BAD_TXN] = "bad_txn",
	[XTX_ST_NOT_FOUND] = "not_found",
	[XTX_ST_EXISTS] = "exists",
	[XTX_ST_FULL] = "full",
	[XTX_ST_DEFERRED] = "deferred",
	[XTX_ST_LOCKED] = "locked",
	[XTX_ST_CHANGED] = "changed",
	[XTX_ST_ALREADY_APPLIED] = "already_applied",
	[XTX_ST_LOG_FULL] = "log_full",
	[XTX_ST_SQUASHED] = "squashed",
	[XTX_ST_NACK] = "nack",
	[XTX_ST_TXN_GONE] = "txn_gone",
	[XTX_ST_TOO_MANY] = "too_many",
	[XTX_ST_FENCED] = "fenced",
	[XTX_ST_NOT_HELD] = "not_held",
	[XTX_ST_MIXED] = "mixed",
	[XTX_ST_EPOCH] = "epoch",
	[XTX_ST_MOVED] = "moved",
	[XTX_ST_TOO_BIG] = "too_big",
};

static const char *const counter_names[XTX_CTR__COUNT] = {
	[XTX_CTR_RX] = "rx",
	[XTX_CTR_TX] = "tx",
	[XTX_CTR_PASS] = "pass",
	[XTX_CTR_DROP] = "drop",
	[XTX_CTR_REPLAYED] = "replayed",
	[XTX_CTR_TRUNCATED] = "truncated",
	[XTX_CTR_BAD_MAGIC] = "bad_magic",
	[XTX_CTR_IP_OPTIONS] = "ip_options",
	[XTX_CTR_BAD_VERSION] = "bad_version",
	[XTX_CTR_MALFORMED] = "malformed",
	[XTX_CTR_BAD_OP] = "bad_op",
	[XTX_CTR_BAD_CLIENT] = "bad_client",
	[XTX_CTR_STALE] = "stale",
	[XTX_CTR_BUSY] = "busy",
	[XTX_CTR_FAULT_DROP] = "fault_drop",
	[XTX_CTR_OPS] = "ops",
	[XTX_CTR_LOCK_CONFLICT] = "lock_conflict",
	[XTX_CTR_LOCK_SHARING] = "lock_sharing_conflict",
	[XTX_CTR_LOCK_RECLAIM] = "lock_lease_reclaim",
	[XTX_CTR_LOCK_STALE] = "lock_stale_release",
	[XTX_CTR_LOCK_BUSY] = "lock_busy",
	[XTX_CTR_KV_BUSY] = "kv_busy",
	[XTX_CTR_KV_DEFERRED] = "kv_deferred",
	[XTX_CTR_KV_DEFER_PKTS] = "kv_defer_packets",
	[XTX_CTR_KV_BLOOM_MISS] = "kv_bloom_miss",
	[XTX_CTR_KV_TAKEOVER] = "kv_lease_takeover",
	[XTX_CTR_KV_VICTIMS] = "kv_victims",
	[XTX_CTR_KV_FIXES] = "kv_fixes",
	[XTX_CTR_KV_FIX_STALE] = "kv_fix_stale",
	[XTX_CTR_KV_NO_ROOM] = "kv_defer_no_room",
	[XTX_CTR_HADES_SQUASH] = "hades_squash",
	[XTX_CTR_HADES_NACK] = "hades_nack",
	[XTX_CTR_HADES_FILTER_RETRY] = "hades_filter_retry",
	[XTX_CTR_HADES_RECLAIM] = "hades_lease_reclaim",
	[XTX_CTR_HADES_FULL] = "hades_full",
	[XTX_CTR_HADES_COMMIT] = "hades_commit",
	[XTX_CTR_HADES_ABORT] = "hades_abort",
	[XTX_CTR_HADES_PROBES] = "hades_probes",
	[XTX_CTR_HADES_FP_SQUASH] = "hades_fp_squash",
	[XTX_CTR_HADES_FP_BLOCK] = "hades_fp_block",
	[XTX_CTR_NOT_ALLOWED] = "not_allowed",
	[XTX_CTR_BAD_MAC] = "bad_mac",
	[XTX_CTR_WRONG_EPOCH] = "wrong_epoch",
	[XTX_CTR_KV_BIG_SERVED] = "kv_big_served",
	[XTX_CTR_LOCK_SHARERS_FULL] = "lock_sharers_full",
	[XTX_CTR_FAM_PINNED] = "family_pinned",
	[XTX_CTR_TC_FOREIGN] = "tc_foreign",
	[XTX_CTR_REPLAY_LAPSED] = "replay_lapsed",
};

const char *xtx_op_name(unsigned int opcode)
{
	return opcode < XTX_OP__COUNT ? op_names[opcode] : NULL;
}

const char *xtx_status_name(unsigned int status)
{
	static __thread char buf[16];

	if (status < XTX_ST__COUNT && status_names[status])
		return status_names[status];
	snprintf(buf, sizeof(buf), "st%u", status);
	return buf;
}

const char *xtx_counter_name(unsigned int counter)
{
	return counter < XTX_CTR__COUNT && counter_names[counter] ? counter_names[counter] : "?";
}
