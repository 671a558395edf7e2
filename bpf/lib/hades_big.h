/* SPDX-License-Identifier: GPL-2.0-only */
/* HADES writes of values over a slot: staged whole beside the slot, given back at validation. */
#ifndef XTX_BPF_HADES_BIG_H
#define XTX_BPF_HADES_BIG_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/area.h>
#include <xtx/hades.h>
#include "maps.h"
#include "parse.h"

static __always_inline struct xtx_hades_big *xtx_hades_big_at(__u32 slot, __u32 j)
{
	__u32 k = xtx_hades_big_idx(slot, j & (XTX_HADES_STAGE_MAX - 1));

	return bpf_map_lookup_elem(&xtx_hades_big, &k);
}

/*
 * Whether len bytes at area offset off lie in this frame, after the op
 * array.  The tiling was checked with every op; this op's own reference is
 * checked again against the frame, as the log's copy does (log.h).
 */
static __always_inline bool xtx_hades_area_ok(struct xdp_md *ctx, __u32 off, __u32 len)
{
	struct xtx_hdr *h = xtx_hdr_of(ctx);

	return h && len > XTX_VALUE_INLINE && len <= XTX_VALUE_MAX &&
	       off >= sizeof(struct xtx_hdr) + (__u32)h->nops * sizeof(struct xtx_op) &&
	       (long)XTX_HDR_OFF + off + len <= (long)(ctx->data_end - ctx->data);
}

/*
 * HINTEND of a value over a slot: the op's area into the entry of staged
 * write j of slot.  XTX_ST_OK, or why not (the staged write must not count).
 * Global: verified once.
 */
__noinline int xtx_hades_stage_big(struct xdp_md *ctx, __u32 idx, __u32 slot, __u32 j)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_hades_big *b = xtx_hades_big_at(slot, j);
	__u32 off, len;

	if (!op)
		return XTX_ST_MALFORMED;
	if (!b)
		return XTX_ST_BAD_ARG;
	off = xtx_ext_of(op)->off;
	len = xtx_ext_of(op)->len;
	if (!xtx_hades_area_ok(ctx, off, len) || len > XTX_VALUE_MAX)
		return XTX_ST_MALFORMED;
	if (bpf_xdp_load_bytes(ctx, XTX_HDR_OFF + off, b->data, len))
		return XTX_ST_MALFORMED;
	b->len = len;
	return XTX_ST_OK;
}

/*
 * HVALIDATE of a write staged with XTX_HSF_BIG: its staged bytes into the
 * op's area and its length into ext.len, so the KV half runs as a big write
 * (kv.h: xtxd installs it from the area) and the log copies it from there.
 * An op without an area, or a smaller one, answers TOO_BIG with the length
 * in ext.len: nothing changed.  Global: verified once.
 */
__noinline int xtx_hades_unstage_big(struct xdp_md *ctx, __u32 idx, __u32 slot, __u32 j)
{
	struct xtx_op *op = xtx_op_at(ctx, idx);
	struct xtx_hades_big *b = xtx_hades_big_at(slot, j);
	struct xtx_ext *x;
	__u32 off, len;

	if (!op)
		return XTX_ST_MALFORMED;
	if (!b)
		return XTX_ST_BAD_ARG;
	len = b->len;
	if (len <= XTX_VALUE_INLINE || len > XTX_VALUE_MAX)
		return XTX_ST_BAD_ARG;
	x = (struct xtx_ext *)op->value;
	if (!(op->flags & XTX_OPF_EXT) || x->cap < len) {
		if (!(op->flags & XTX_OPF_EXT)) {
			__builtin_memset(op->value, 0, XTX_VALUE_INLINE);
			op->vlen = 0;
			op->flags |= XTX_OPF_EXT;
		}
		x->len = len;
		x->pad = 0;
		return XTX_ST_TOO_BIG;
	}
	off = x->off;
	if (!xtx_hades_area_ok(ctx, off, len))
		return XTX_ST_MALFORMED;
	if (bpf_xdp_store_bytes(ctx, XTX_HDR_OFF + off, b->data, len))
		return XTX_ST_MALFORMED;
	/* the store may move the frame's pointers: the op is looked up again */
	op = xtx_op_at(ctx, idx);
	if (!op)
		return XTX_ST_MALFORMED;
	((struct xtx_ext *)op->value)->len = len;
	return XTX_ST_OK;
}

#endif /* XTX_BPF_HADES_BIG_H */
