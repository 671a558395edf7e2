/* SPDX-License-Identifier: GPL-2.0-only */
/* The ops that name a key: KV, locks, transaction ops and LOG_APPEND. */
#ifndef XTX_UDPD_TXN_H
#define XTX_UDPD_TXN_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/proto.h>
#include "udpd.h"
#include "value.h"

/* Runs op under its stripe's mutex (LOG_APPEND: the worker's ring); returns its status. */
uint8_t udpd_op_keyed(struct udpd_worker *w, struct xtx_op *op, uint32_t client_id,
		      const struct udpd_val *v);
/*
 * A replayed grant: its value is not recorded, so it is read again, under
 * the lock, into the room v left (a replayed TOO_BIG answers the length again).
 */
void udpd_reread_grant(struct udpd_worker *w, struct xtx_op *op, const struct udpd_val *v);
bool udpd_is_acquire(uint8_t opcode);

#endif /* XTX_UDPD_TXN_H */
