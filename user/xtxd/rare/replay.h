/* SPDX-License-Identifier: GPL-2.0-only */
/* xtxd's record of the rare-path ops it executed, so a retransmission is answered, not rerun. */
#ifndef XTXD_REPLAY_H
#define XTXD_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/proto.h>

/*
 * XDP marks a deferred op XTX_DEFER_REPLAY when the request is a
 * retransmission whose first answer may have been lost after xtxd applied
 * it.  Running an INSERT or UPDATE again would answer EXISTS or bump the
 * version twice, so the answer comes from here.  The table is bounded:
 * 4-way sets, the oldest record of a set overwritten; a retransmission
 * arrives within milliseconds, long before its record could age out.
 * A record keeps a value up to XTX_VALUE_INLINE in place and a longer one
 * on the heap, so the table stays small while a retransmitted read of a
 * big value is still answered with it.
 */
struct xtxd_replay;

struct xtxd_replay_rec {
	uint64_t req_id;
	uint32_t client_id;
	uint8_t op_idx;
	/* what the op was, so a record never answers a different op */
	uint8_t opcode;
	uint8_t table;
	uint8_t status;
	uint64_t key;
	/* the answer (a read's value up to XTX_VALUE_MAX: replies answer from the area too) */
	uint64_t version;
	uint64_t token;		/* a grant's, taken in XDP before the hand-off */
	uint32_t flags;
	uint16_t vlen;
	/*
	 * A plain write whose packet's log write is still going on: not an
	 * answer yet (a copy of the request that finds it is dropped, and
	 * its client asks again); re-recorded without once logged.
	 */
	uint8_t pending;
	uint8_t value[XTX_VALUE_MAX];
};

#define XTXD_REPLAY_ENTRIES	(64u << 10)

/* entries: rounded up to a power of two, at least 4.  NULL on ENOMEM. */
struct xtxd_replay *xtxd_replay_new(uint32_t entries);
void xtxd_replay_free(struct xtxd_replay *r);
/* Records (or re-records) the answer to (client_id, req_id, op_idx). */
void xtxd_replay_put(struct xtxd_replay *r, const struct xtxd_replay_rec *rec);
/* True and *out filled when (client_id, req_id, op_idx) has a record. */
bool xtxd_replay_get(struct xtxd_replay *r, uint32_t client_id, uint64_t req_id, uint8_t op_idx,
		     struct xtxd_replay_rec *out);

#endif /* XTXD_REPLAY_H */
