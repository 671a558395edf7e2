/* SPDX-License-Identifier: GPL-2.0-only */
/* Retransmission safety: per-client windows of request records (include/xtx/maps.h). */
#ifndef XTX_UDPD_DEDUPE_H
#define XTX_UDPD_DEDUPE_H

#include <stdint.h>
#include <xtx/maps.h>

struct udpd_dedupe;

enum udpd_dedupe_verdict {
	UDPD_DEDUPE_NEW,	/* slot claimed: execute, record, then udpd_dedupe_done() */
	UDPD_DEDUPE_DUPLICATE,	/* executed before: answer from the copied record */
	UDPD_DEDUPE_IN_FLIGHT,	/* the same request is executing on another thread: RETRY */
	UDPD_DEDUPE_STALE,	/* older than the window: refuse */
};

struct udpd_dedupe *udpd_dedupe_new(uint32_t max_clients);
void udpd_dedupe_free(struct udpd_dedupe *d);

/*
 * The window rules of include/xtx/maps.h.  A DUPLICATE copies the record's
 * results into res (XTX_MAX_OPS entries) while the slot cannot change.
 */
int udpd_dedupe_claim(struct udpd_dedupe *d, uint32_t client_id, uint64_t req_id,
		      struct xtx_op_result *res);
/* Records op idx's answer; only the claimer writes, while the slot is BUSY. */
void udpd_dedupe_record(struct udpd_dedupe *d, uint32_t client_id, uint64_t req_id,
			uint32_t idx, const struct xtx_op *op);
/* Publishes the records: duplicates from now on are answered from them. */
void udpd_dedupe_done(struct udpd_dedupe *d, uint32_t client_id, uint64_t req_id);

#endif /* XTX_UDPD_DEDUPE_H */
