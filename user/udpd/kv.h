/* SPDX-License-Identifier: GPL-2.0-only */
/* The KV half of every op, on a stripe's model, with the kernel cache's answers. */
#ifndef XTX_UDPD_KV_H
#define XTX_UDPD_KV_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/proto.h>
#include "store.h"
#include "value.h"

/*
 * All run under the stripe's mutex and fill the reply fields in op as
 * bpf/lib/kv.h does.  An absent key's "version a creating commit expects"
 * is the highest version the key ever had (0 for a key never seen): every
 * later incarnation gets a higher one, so versions never repeat.
 */

/*
 * v is the op's value as the request placed it (udpd_val_of()): a write's
 * bytes, or the room a read left for its answer.
 */

/* GET, READ, INSERT, UPDATE, DELETE.  A read of a value longer than its room: TOO_BIG. */
uint8_t udpd_kv_op(struct udpd_stripe *s, struct xtx_op *op, const struct udpd_val *v);
/*
 * A lock grant's read: value and version, or XTX_TXF_ABSENT with the
 * expected version.  The caller checked udpd_kv_fits() before granting.
 */
uint8_t udpd_kv_read_locked(struct udpd_stripe *s, struct xtx_op *op, const struct udpd_val *v);
/* Whether the key's value (if any) fits the room v left; else its length in *vlen. */
bool udpd_kv_fits(struct udpd_stripe *s, const struct xtx_op *op, const struct udpd_val *v,
		  uint16_t *vlen);
/* The answer of a read whose value did not fit: TOO_BIG with the length, nothing else. */
uint8_t udpd_kv_too_big(struct xtx_op *op, const struct udpd_val *v, uint16_t vlen);
/* OCC validation's second half: OK when the version is still op->version, else CHANGED. */
uint8_t udpd_kv_validate(struct udpd_stripe *s, struct xtx_op *op);
/* COMMIT_BACKUP / COMMIT_PRIMARY at the coordinator's version (XTX_OPF_DELETE: delete). */
uint8_t udpd_kv_commit(struct udpd_stripe *s, struct xtx_op *op, bool primary,
		       const struct udpd_val *v);

#endif /* XTX_UDPD_KV_H */
