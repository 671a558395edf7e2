// SPDX-License-Identifier: GPL-2.0-only
/* Value areas: the canonical tiling, their checks, and answers in slot or area. */
#include <string.h>
#include "value.h"

static uint32_t round8(uint32_t x)
{
	return (x + XTX_EXT_ALIGN - 1) & ~(uint32_t)(XTX_EXT_ALIGN - 1);
}

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

bool udpd_areas_tiled(const void *hdr, const struct xtx_op *ops, uint32_t nops, int len)
{
	uint32_t end = sizeof(struct xtx_hdr) + nops * sizeof(struct xtx_op), i;
	bool any = false;
	struct xtx_ext e;

	(void)hdr;
	for (i = 0; i < nops; i++) {
		if (!(ops[i].flags & XTX_OPF_EXT))
			continue;
		e = ext_of(&ops[i]);
		/* each area where the previous one ends; none empty or past any value */
		if (e.off != round8(end) || !e.cap || e.cap > XTX_VALUE_MAX)
			return false;
		end = e.off + e.cap;
		any = true;
	}
	if (!any)
		return (uint32_t)len == end;
	return round8(end) == (uint32_t)len && len <= XTX_MAX_REQUEST;
}

uint8_t udpd_val_check(const struct xtx_op *op, bool write, bool read, unsigned int value_size)
{
	struct xtx_ext e;

	if (!(op->flags & XTX_OPF_EXT))
		return write && op->vlen > value_size ? XTX_ST_BAD_ARG : XTX_ST_OK;
	e = ext_of(op);
	if (op->vlen || e.pad)
		return XTX_ST_BAD_ARG;
	if (write)
		return e.len <= XTX_VALUE_INLINE || e.len > XTX_VALUE_MAX || e.len > e.cap ||
		       e.len > value_size ? XTX_ST_BAD_ARG : XTX_ST_OK;
	if (read)
		return e.len ? XTX_ST_BAD_ARG : XTX_ST_OK;
	return XTX_ST_BAD_ARG;
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
	op->vlen = 0;
	memset(op->value, 0, sizeof(op->value));
	if (!udpd_val_fits(room, vlen)) {
		memcpy(op->value, &e, sizeof(e));
		return XTX_ST_TOO_BIG;
	}
	memcpy(room->area, value, vlen);
	memcpy(op->value, &e, sizeof(e));
	op->flags |= XTX_OPF_EXT;
	return XTX_ST_OK;
}
