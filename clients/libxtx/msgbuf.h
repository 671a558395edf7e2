/* SPDX-License-Identifier: GPL-2.0-only */
/* Storage for one xtx datagram, typed so header and ops are read through their own types. */
#ifndef XTX_MSGBUF_H
#define XTX_MSGBUF_H

#include <xtx/proto.h>
#include <xtx/kv.h>

/*
 * The largest datagram xtx sends either way.  Pass it to the xtx_msg_*
 * helpers as the payload; as a receive buffer, anything longer arrives
 * truncated and the transport drops it.  ops[] is the op array; the value
 * area (proto.h) starts after the request's nops ops, inside bytes[].
 */
struct xtx_msgbuf {
	struct xtx_hdr hdr;
	union {
		struct xtx_op ops[XTX_MAX_OPS];
		__u8 bytes[XTX_MAX_PAYLOAD - sizeof(struct xtx_hdr)];
	};
};

_Static_assert(sizeof(struct xtx_msgbuf) == XTX_MAX_PAYLOAD, "a msgbuf holds any datagram");

#endif /* XTX_MSGBUF_H */
