/* SPDX-License-Identifier: GPL-2.0-only */
/* Where an op's value is: its slot, or its area after the op array (struct xtx_ext). */
#ifndef XTX_UDPD_VALUE_H
#define XTX_UDPD_VALUE_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/proto.h>

/*
 * An op's value as the request placed it, taken before the op runs: the
 * reply rewrites value[] and flags, and a replayed op needs the request's
 * room again.
 */
struct udpd_val {
	bool ext;		/* the request set XTX_OPF_EXT */
	uint16_t off, cap;	/* ext: the area, from the start of the header */
	uint16_t len;		/* the value's bytes: ext.len, or the slot's vlen */
	uint8_t *area;		/* ext: the area's first byte in the packet */
};

/* The request's view of op, in the packet that starts at hdr. */
void udpd_val_of(void *hdr, const struct xtx_op *op, struct udpd_val *v);

/* A write's bytes: the area or the slot. */
static inline const uint8_t *udpd_val_bytes(const struct udpd_val *v, const struct xtx_op *op)
{
	return v->ext ? v->area : op->value;
}

/*
 * XTX_ST_OK, or BAD_ARG for a value op refuses: an area whose arguments
 * include/xtx/area.h does not take (a write of len <= XTX_VALUE_INLINE or
 * len > cap, a read with len or a room the slot has, a delete, an op that
 * carries no value), or a write longer than value_size (the longest value
 * a write may carry here).  The tiling is the packet's (xtx_areas_tile()).
 */
uint8_t udpd_val_check(const struct xtx_op *op, unsigned int value_size);

/*
 * Answers a read's value into op as the reply carries it: up to
 * XTX_VALUE_INLINE bytes in the slot (EXT clear), longer in the request's
 * area (EXT set, ext.len), and XTX_ST_TOO_BIG (EXT set, its length in
 * ext.len, nothing written to the packet's areas) when the area is missing
 * or short.  Returns XTX_ST_OK or XTX_ST_TOO_BIG.
 */
uint8_t udpd_val_answer(struct xtx_op *op, const struct udpd_val *room, const uint8_t *value,
			uint16_t vlen);
/* The room a read left: would a value of vlen bytes be answered? */
static inline bool udpd_val_fits(const struct udpd_val *room, uint16_t vlen)
{
	return vlen <= XTX_VALUE_INLINE || (room->ext && vlen <= room->cap);
}

#endif /* XTX_UDPD_VALUE_H */
