// SPDX-License-Identifier: GPL-2.0-only
/* Value areas: the canonical tiling, their checks, and answers in slot or area. */
#include <string.h>
#include <xtx/area.h>
#include "value.h"

static struct xtx_ext ext_of(const struct xtx_op *op)
{
	struct xtx_ext e;

	memcpy(&e, op->value, sizeof(e));
	return e;
}

void udpd_val_of(void *hdr, const struct xtx_op *op, struct udpd_val *v)
{
	struct xtx_ext e;

	memset(v, 0, sizeof(*v));
	if (!(op->flags & XTX_OPF_EXT)) {
		v->len = op->vlen;
		return;
	}
	e = ext_of(op);
	v->ext = true;
	v->off = e.off;
	v->cap = e.cap;
	v->len = e.len;
	v->area = (uint8_t *)hdr + e.off;
}

uint8_t udpd_val_check(const struct xtx_op *op, unsigned int value_size)
{
	bool write = xtx_area_use_of(op->opcode) == XTX_AREA_WRITE;

	if (!(op->flags & XTX_OPF_EXT))
		return write && op->vlen > value_size ? XTX_ST_BAD_ARG : XTX_ST_OK;
	if (!xtx_ext_args_ok(op))
		return XTX_ST_BAD_ARG;
	return write && ext_of(op).len > value_size ? XTX_ST_BAD_ARG : XTX_ST_OK;
}

uint8_t udpd_val_answer(struct xtx_op *op, const struct udpd_val *room, const uint8_t *value,
			uint16_t vlen)
{
	struct xtx_ext e = { .off = room->off, .cap = room->cap, .len = vlen };

	op->flags &= ~XTX_OPF_EXT;
	if (vlen <= XTX_VALUE_INLINE) {
		memset(op->value, 0, sizeof(op->value));
		memcpy(op->value, value, vlen);
		op->vlen = vlen;
		return XTX_ST_OK;
	}
	/* value[] holds the area reference from here: the value's, or the length it needs */
	op->vlen = 0;
	memset(op->value, 0, sizeof(op->value));
	memcpy(op->value, &e, sizeof(e));
	op->flags |= XTX_OPF_EXT;
	if (!udpd_val_fits(room, vlen))
		return XTX_ST_TOO_BIG;
	memcpy(room->area, value, vlen);
	return XTX_ST_OK;
}
