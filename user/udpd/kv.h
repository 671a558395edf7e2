/* SPDX-License-Identifier: GPL-2.0-only */
/* The KV half of every op, on a stripe's model, with the kernel cache's answers. */
#ifndef XTX_UDPD_KV_H
#define XTX_UDPD_KV_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/proto.h>
#include "store.h"

/*
 * All run under the stripe's mutex and fill the reply fields in op as
 * bpf/lib/kv.h does.  An absent key's "version a creating commit expects"
 * is the highest version the key ever had (0 for a key never seen): every
 * later incarnation gets a higher one, so versions never repeat.
 */

/* GET, READ, INSERT, UPDATE, DELETE. */
uint8_t udpd_kv_op(struct udpd_stripe *s, struct xtx_op *op);
/* A lock grant's read: value and version, or XTX_TXF_ABSENT with the expected version. */
uint8_t udpd_kv_read_locked(struct udpd_stripe *s, struct xtx_op *op);
/* OCC validation's second half: OK when the version is still op->version, else CHANGED. */
uint8_t udpd_kv_validate(struct udpd_stripe *s, struct xtx_op *op);
/* COMMIT_BACKUP / COMMIT_PRIMARY at the coordinator's version (XTX_OPF_DELETE: delete). */
uint8_t udpd_kv_commit(struct udpd_stripe *s, struct xtx_op *op, bool primary);

#endif /* XTX_UDPD_KV_H */
