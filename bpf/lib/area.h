/* SPDX-License-Identifier: GPL-2.0-only */
/* The value area's checks in XDP (include/xtx/area.h has what user space shares). */
#ifndef XTX_BPF_AREA_H
#define XTX_BPF_AREA_H

#include <linux/bpf.h>
#include <xtx/proto.h>
#include <xtx/area.h>
#include "parse.h"

/* The ops whose values over a slot this program serves (refused BAD_ARG before anything runs). */
static __always_inline bool xtx_ext_served(__u8 opcode)
{
	switch (opcode) {
	/* kv writes and reads: served by xtxd's store (kv.h defers them) */
	case XTX_OP_INSERT:
	case XTX_OP_UPDATE:
	case XTX_OP_COMMIT_BACKUP:
	case XTX_OP_COMMIT_PRIMARY:
	case XTX_OP_GET:
	case XTX_OP_READ:
	case XTX_OP_LOCK_SHARED:
	case XTX_OP_LOCK_EXCL:
	case XTX_OP_OCC_LOCK:
	case XTX_OP_HREAD:
	case XTX_OP_HWRITE:
	/* HADES staging: copied beside the slot, and back into the area (hades_big.h) */
	case XTX_OP_HINTEND:
	case XTX_OP_HVALIDATE:
	/* a log append: copied into the log's entries (log.h) */
	case XTX_OP_LOG_APPEND:
		return true;
	default:
		return false;
	}
}

/*
 * Whether the areas tile [end of the op array, payload_len) as proto.h
 * says: one per EXT op, in op order, each at the previous one's end
 * rounded up to XTX_EXT_ALIGN, the payload ending at the last one's.  So
 * no two ops share bytes and none points outside the packet.
 */
static __always_inline bool xtx_area_tiles(struct xdp_md *ctx, __u32 nops, __u32 payload_len)
{
	__u32 next = sizeof(struct xtx_hdr) + nops * sizeof(struct xtx_op), i;

	for (i = 0; i < XTX_MAX_OPS && i < nops; i++) {
		struct xtx_op *op = xtx_op_at(ctx, i);
		const struct xtx_ext *x;

		if (!op)
			return false;
		if (!(op->flags & XTX_OPF_EXT))
			continue;
		x = xtx_ext_of(op);
		if (x->off != next || !x->cap)
			return false;
		next += xtx_area_span(x->cap);
	}
	return next == payload_len;
}

#endif /* XTX_BPF_AREA_H */
