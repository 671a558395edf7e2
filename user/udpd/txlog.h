/* SPDX-License-Identifier: GPL-2.0-only */
/* LOG_APPEND: a ring per serving thread, drained by a background thread. */
#ifndef XTX_UDPD_TXLOG_H
#define XTX_UDPD_TXLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/proto.h>
#include "value.h"

struct udpd_txlog;
struct udpd_txlog_drain;

/* A ring of size entries (a power of two); NULL on ENOMEM. */
struct udpd_txlog *udpd_txlog_new(uint32_t size);
void udpd_txlog_free(struct udpd_txlog *l);

/*
 * An append of a value of vlen bytes now would not be refused LOG_FULL
 * (only its own worker appends to a log, and the drain only makes room); a
 * full log counts the refusal.
 */
bool udpd_txlog_has_room(struct udpd_txlog *l, uint16_t vlen);
/*
 * Appends op's write (include/xtx/log.h's request layout, the value from v)
 * as client_id's: a value over XTX_VALUE_INLINE as an XTX_LOGF_EXT entry and
 * its continuations, all at once.  Only the ring's own thread appends.
 * XTX_ST_OK with op->version = the entry's seq, or XTX_ST_LOG_FULL when the
 * drain is behind (nothing written; a ring smaller than the entries a value
 * needs never takes it).
 */
uint8_t udpd_txlog_append(struct udpd_txlog *l, struct xtx_op *op, uint32_t client_id,
			  const struct udpd_val *v);

/*
 * Starts the thread that empties the rings into dir as xtxd does: ring i's
 * entries go to segments log-cpu<i>-NNNNNN.xlog (user/lib/logfile.h: CRC
 * per record), fdatasync-ed at most every sync_ns, and an entry leaves its
 * ring only once synced, so a full ring answers LOG_FULL.  With dir NULL
 * entries are dropped once drained.  NULL with a message on failure.
 */
struct udpd_txlog_drain *udpd_txlog_drain_start(struct udpd_txlog **rings, unsigned int n,
						const char *dir, uint64_t sync_ns);
/* Drains and syncs what is left (call it after the workers stopped), stops the thread. */
void udpd_txlog_drain_stop(struct udpd_txlog_drain *d);

#endif /* XTX_UDPD_TXLOG_H */
