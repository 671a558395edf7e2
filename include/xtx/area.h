/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The value area (proto.h): which ops use one and how, and its tiling; shared by XDP, servers and clients. */
#ifndef XTX_AREA_H
#define XTX_AREA_H

#include <linux/types.h>
#include <stdbool.h>
#include "proto.h"

/* What an op's area holds: the bytes of a write, or room for a read's answer. */
enum xtx_area_use {
	XTX_AREA_NONE,		/* the op never carries a value */
	XTX_AREA_WRITE,
	XTX_AREA_READ,
};

static inline enum xtx_area_use xtx_area_use_of(__u8 opcode)
{
	switch (opcode) {
	case XTX_OP_INSERT:
	case XTX_OP_UPDATE:
	case XTX_OP_COMMIT_BACKUP:
	case XTX_OP_COMMIT_PRIMARY:
	case XTX_OP_LOG_APPEND:
	case XTX_OP_HINTEND:
	/* the value it staged: the server's staged copy replaces it (xtx/hades.h) */
	case XTX_OP_HVALIDATE:
		return XTX_AREA_WRITE;
	case XTX_OP_GET:
	case XTX_OP_READ:
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
	case XTX_OP_HREAD:
	case XTX_OP_HWRITE:
		return XTX_AREA_READ;
	default:
		return XTX_AREA_NONE;
	}
}

static inline const struct xtx_ext *xtx_ext_of(const struct xtx_op *op)
{
	return (const struct xtx_ext *)op->value;
}

/*
 * Whether the arguments of an op with XTX_OPF_EXT are sound on their own
 * (the tiling is checked over the whole packet).  A write
 * carries more than a slot holds (a shorter value belongs in the slot), a
 * read asks for more room than the slot has, and neither is a delete.
 */
static inline bool xtx_ext_args_ok(const struct xtx_op *op)
{
	const struct xtx_ext *x = xtx_ext_of(op);

	if (op->vlen || x->pad || x->cap > XTX_VALUE_MAX || x->len > x->cap ||
	    (op->flags & (XTX_OPF_DELETE | XTX_OPF_LOG_META)))
		return 0;
	switch (xtx_area_use_of(op->opcode)) {
	case XTX_AREA_WRITE:
		return x->len > XTX_VALUE_INLINE;
	case XTX_AREA_READ:
		return x->len == 0 && x->cap > XTX_VALUE_INLINE;
	default:
		return 0;
	}
}

/* Bytes an area of cap bytes takes, its padding included. */
static inline __u32 xtx_area_span(__u16 cap)
{
	return ((__u32)cap + XTX_EXT_ALIGN - 1) & ~(__u32)(XTX_EXT_ALIGN - 1);
}

/*
 * Whether the areas of a payload of len bytes tile [end of the op array,
 * len) as proto.h says (user space: the payload is in memory, 8-aligned).
 */
static inline int xtx_areas_tile(const void *payload, __u32 len)
{
	const struct xtx_hdr *h = (const struct xtx_hdr *)payload;
	const struct xtx_op *ops = (const struct xtx_op *)(h + 1);
	__u32 next = sizeof(*h) + (__u32)h->nops * sizeof(struct xtx_op), i;

	if (len < next || h->nops > XTX_MAX_OPS)
		return 0;
	for (i = 0; i < h->nops; i++) {
		const struct xtx_ext *x = xtx_ext_of(&ops[i]);

		if (!(ops[i].flags & XTX_OPF_EXT))
			continue;
		if (x->off != next || !x->cap)
			return 0;
		next += xtx_area_span(x->cap);
	}
	return next == len && (len == sizeof(*h) + (__u32)h->nops * sizeof(struct xtx_op) ||
			       len <= XTX_MAX_REQUEST);
}

#endif /* XTX_AREA_H */
