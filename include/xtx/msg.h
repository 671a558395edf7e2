/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Building and checking xtx payloads (header + op slots) in a byte buffer. */
#ifndef XTX_MSG_H
#define XTX_MSG_H

#include <stddef.h>
#include <string.h>
#include "proto.h"

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
