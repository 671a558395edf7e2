/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Building and checking xtx payloads (header + op slots) in a byte buffer. */
#ifndef XTX_MSG_H
#define XTX_MSG_H

#include <stddef.h>
#include <string.h>
#include "proto.h"
#include "area.h"

/* Bytes of payload for nops ops. */
static inline size_t xtx_msg_len(unsigned int nops)
{
	return sizeof(struct xtx_hdr) + (size_t)nops * sizeof(struct xtx_op);
}

static inline struct xtx_op *xtx_msg_ops(void *payload)
{
	return (struct xtx_op *)((char *)payload + sizeof(struct xtx_hdr));
}

/* Starts a request with no ops; the buffer must hold xtx_msg_len(XTX_MAX_OPS). */
static inline void xtx_msg_init(void *payload, __u32 client_id, __u64 req_id)
{
	struct xtx_hdr *h = (struct xtx_hdr *)payload;

	memset(h, 0, sizeof(*h));
	h->magic = XTX_MAGIC;
	h->version = XTX_VERSION;
	h->client_id = client_id;
	h->req_id = req_id;
}

/* Appends a zeroed op and returns it, or NULL when the packet is full. */
static inline struct xtx_op *xtx_msg_add(void *payload, __u8 opcode, __u8 table, __u64 key)
{
	struct xtx_hdr *h = (struct xtx_hdr *)payload;
	struct xtx_op *op;

	if (h->nops >= XTX_MAX_OPS)
		return NULL;
	op = xtx_msg_ops(payload) + h->nops++;
	memset(op, 0, sizeof(*op));
	op->opcode = opcode;
	op->table = table;
	op->key = key;
	return op;
}

/*
 * Gives op a value area of cap bytes holding len of them (a write: len >
 * XTX_VALUE_INLINE; a read's room: len 0).  Where it goes is decided by
 * xtx_msg_finish(), once every op is added.
 */
static inline void xtx_msg_set_area(struct xtx_op *op, __u16 cap, __u16 len)
{
	struct xtx_ext x = { .cap = cap, .len = len };

	op->flags |= XTX_OPF_EXT;
	op->vlen = 0;
	memset(op->value, 0, sizeof(op->value));
	memcpy(op->value, &x, sizeof(x));
}

/*
 * Lays the areas out after the op array, in op order (proto.h), and
 * returns the payload's length; the buffer must hold it.  Call it once
 * every op is added, then fill the areas (xtx_msg_area()).
 */
static inline size_t xtx_msg_finish(void *payload)
{
	struct xtx_hdr *h = (struct xtx_hdr *)payload;
	struct xtx_op *ops = xtx_msg_ops(payload);
	size_t next = xtx_msg_len(h->nops);
	unsigned int i;

	for (i = 0; i < h->nops; i++) {
		struct xtx_ext x;

		if (!(ops[i].flags & XTX_OPF_EXT))
			continue;
		memcpy(&x, ops[i].value, sizeof(x));
		x.off = (__u16)next;
		memcpy(ops[i].value, &x, sizeof(x));
		next += xtx_area_span(x.cap);
	}
	return next;
}

/* op's area reference (op in a payload, any alignment). */
static inline struct xtx_ext xtx_msg_ext(const struct xtx_op *op)
{
	struct xtx_ext x;

	memcpy(&x, op->value, sizeof(x));
	return x;
}

/* The bytes of op's area in a laid-out payload. */
static inline void *xtx_msg_area(void *payload, const struct xtx_op *op)
{
	return (char *)payload + xtx_msg_ext(op).off;
}

/*
 * Checks that len bytes are a reply to the request whose header is req:
 * same client, request id and op count, reply flag set.
 */
static inline int xtx_msg_is_reply_to(const void *payload, size_t len, const struct xtx_hdr *req)
{
	const struct xtx_hdr *h = (const struct xtx_hdr *)payload;

	return len >= sizeof(*h) && h->magic == XTX_MAGIC && (h->flags & XTX_F_REPLY) &&
	       h->client_id == req->client_id && h->req_id == req->req_id &&
	       h->nops == req->nops && len >= xtx_msg_len(h->nops);
}

#endif /* XTX_MSG_H */
