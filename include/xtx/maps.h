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

/* ---- statistics: one per-CPU element, summed by readers ---- */

enum xtx_pkt_counter {
	XTX_PKT_RX = 0,		/* xtx packets seen (well-formed or not) */
	XTX_PKT_TX,		/* replies sent with XDP_TX */
	XTX_PKT_PASS,		/* handed to the kernel stack */
	XTX_PKT_DROP,		/* dropped, any reason */
	XTX_PKT_REPLAYED,	/* duplicates answered from the dedupe record */
	XTX_PKT_TRUNCATED,	/* too short for an xtx header: dropped */
	XTX_PKT_BAD_MAGIC,	/* not xtx: dropped */
	XTX_PKT_IP_OPTIONS,	/* IPv4 options or fragments: dropped */
	XTX_PKT_BAD_VERSION,	/* error reply */
	XTX_PKT_MALFORMED,	/* error reply */
	XTX_PKT_BAD_OP,		/* error reply: an op failed validation */
	XTX_PKT_BAD_CLIENT,	/* error reply */
	XTX_PKT_STALE,		/* error reply */
	XTX_PKT_BUSY,		/* duplicate of a request still executing: RETRY */
	XTX_PKT_FAULT_DROP,	/* dropped by the fault-injection knobs */
	XTX_PKT_OPS,		/* ops executed (not replayed) */
	XTX_PKT__COUNT,
};

struct xtx_stats {
	__u64 pkt[XTX_PKT__COUNT];
	__u64 op[XTX_OP__COUNT][XTX_ST__COUNT];	/* [opcode][status] */
};

/* ---- runtime knobs: one-element array, written by xtxd/xtxctl ---- */

struct xtx_runtime {
	/* Fault injection, parts per million: lose requests / replies. */
	__u32 drop_request_ppm;
	__u32 drop_reply_ppm;
	__u64 reserved[3];
};

/* ---- what a loaded server was built and configured with ---- */

struct xtx_info {
	__u32 abi_version;	/* XTX_VERSION */
	__u32 port;
	__u32 max_clients;
	__u32 echo_mode;
	__u64 loaded_ns;	/* CLOCK_MONOTONIC at load */
	__u64 reserved[4];
};

/* ---- retransmission safety ----
 *
 * A retransmitted request must get the original answer and must not run
 * twice (a shared lock taken twice leaks, a counter added twice is wrong).
 * Each client owns XTX_DEDUPE_WINDOW slots, keyed by
 * client_id * XTX_DEDUPE_WINDOW + req_id % XTX_DEDUPE_WINDOW.  A slot holds
 * the req_id it serves, a state, and the result fields of every op that
 * changes state.  For an incoming request R and the slot's request S:
 *   R > S   new: claim the slot (CAS to BUSY), execute, record, mark DONE;
 *   R == S  duplicate: DONE -> answer from the record (state-changing ops)
 *           and by re-executing the read-only ones; BUSY -> RETRY;
 *   R < S   older than the window: STALE, nothing runs.
 * Clients number requests per server from a clock-derived start (so a
 * restarted client never reuses ids) and keep fewer than the window
 * outstanding per server.
 */
#define XTX_DEDUPE_WINDOW	16
#define XTX_DEDUPE_FREE		0ull
#define XTX_DEDUPE_BUSY		1ull
#define XTX_DEDUPE_DONE		2ull
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
	struct xtx_op_result res[XTX_MAX_OPS];
};

_Static_assert(sizeof(struct xtx_op_result) == 24, "dedupe record layout");

/* Server counters for XTX_OP_COUNTER_ADD. */
#define XTX_COUNTERS		64

/* Load-time limits. */
#define XTX_MAX_CLIENTS_DEFAULT	1024
#define XTX_MAX_CLIENTS_LIMIT	16384	/* 16 slots of 400 B each: 105 MB at most */
#define XTX_MAX_TABLES		16

#endif /* XTX_MAPS_H */
