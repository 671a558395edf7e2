/* SPDX-License-Identifier: GPL-2.0-only */
/* The rare path's per-packet executor: a deferred request in, its reply with fixes out. */
#ifndef XTXD_RARE_EXEC_H
#define XTXD_RARE_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include <xtx/proto.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include "store/overflow.h"
#include "replay.h"

/* Why a datagram was dropped instead of answered. */
enum xtxd_drop {
	XTXD_DROP_TRUNCATED,	/* shorter than a header, or cut by the receive buffer */
	XTXD_DROP_HEADER,	/* magic, version, nops or a reply */
	XTXD_DROP_LENGTH,	/* length is not header + ops + defer trailer */
	XTXD_DROP_TRAILER,	/* defer trailer magic or count */
	XTXD_DROP_ENTRY,	/* a defer entry names a wrong op, bucket, way or victim */
	XTXD_DROP_TOO_BIG,	/* the reply would not fit one unfragmented datagram */
	XTXD_DROP_RECORD,	/* no defer record for the packet (bad ticket, slot reused) */
	XTXD_DROP_LOG,		/* its plain writes could not be logged: not acknowledged */
	XTXD_DROP_PENDING,	/* a copy of a request whose writes are being logged: asked again */
	XTXD_DROP__COUNT,
};

/* The KV opcodes, GET..DELETE, index the per-op counters. */

/* Counters: updated with relaxed atomics by every rare-path thread. */
struct xtxd_rare_stats {
	uint64_t rx;			/* datagrams handed to the executor */
	uint64_t tx;			/* replies sent */
	uint64_t send_errors;		/* replies the socket refused */
	uint64_t fault_drops;		/* replies dropped by drop_rare_reply_ppm */
	uint64_t drop[XTXD_DROP__COUNT];
	uint64_t op[XTX_OP__COUNT][XTX_ST__COUNT];	/* deferred ops by final status */
	uint64_t victims_saved;		/* VALID victims stored */
	uint64_t victims_stale;		/* VALID victims older than the store's copy: ignored */
	uint64_t victims_full;		/* VALID victims the store had no room for: kept dirty */
	uint64_t tombs_saved;		/* TOMB victims: deleted from the store, floor raised */
	uint64_t replays;		/* REPLAY ops answered from the record */
	uint64_t replays_unrecorded;	/* REPLAY ops with no record: executed */
	uint64_t duplicates;		/* unmarked ops that had a record: answered from it */
	uint64_t fills;			/* fixes that fill a kernel way */
};

struct xtxd_exec {
	struct xtxd_ovf *store;
	struct xtxd_replay *replay;
	struct xtxd_rare_stats stats;
	/*
	 * The kernel buckets, mapped (NULL in unit tests): before answering,
	 * xtxd ORs the store's filter bits into the bucket itself, so a key
	 * it stored is never answered NOT_FOUND by XDP even when this answer,
	 * and with it TC's exact fix, is lost.
	 */
	struct xtx_kv_bucket *kv;
	uint32_t kv_buckets;
	/*
	 * Makes the plain writes a packet ran durable before its reply goes
	 * (xtxd's own log); 0 or a negative errno.  NULL: nothing is logged
	 * (unit tests).
	 */
	int (*log_writes)(struct xtx_log_entry *e, size_t n);
};

/* Largest request the executor accepts: a body with a value area and a full defer trailer. */
#define XTXD_REQ_MAX	(XTX_MAX_REQUEST + sizeof(struct xtx_defer_trailer))

/*
 * Executes the deferred ops of one datagram XDP passed (UDP payload in
 * req: header, ops, value area, then the defer trailer of its record) and
 * writes the reply payload (header, ops, value area, fix entries, struct
 * xtx_fix_footer) to out.  Returns the reply's length, or a negative errno when the
 * datagram is dropped (counted in x->stats.drop; nothing was changed).
 * The caller is a registered RCU thread.
 */
int xtxd_exec_packet(struct xtxd_exec *x, const void *req, size_t len, void *out,
		     size_t out_size);

const char *xtxd_drop_name(int drop);

static inline void xtxd_stat_inc(uint64_t *ctr)
{
	__atomic_fetch_add(ctr, 1, __ATOMIC_RELAXED);
}

static inline void xtxd_stat_add(uint64_t *ctr, uint64_t n)
{
	__atomic_fetch_add(ctr, n, __ATOMIC_RELAXED);
}

static inline uint64_t xtxd_stat_read(const uint64_t *ctr)
{
	return __atomic_load_n(ctr, __ATOMIC_RELAXED);
}

#endif /* XTXD_RARE_EXEC_H */
