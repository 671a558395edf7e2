/* SPDX-License-Identifier: GPL-2.0-only */
/* Storage for one xtx datagram, typed so header and ops are read through their own types. */
#ifndef XTX_MSGBUF_H
#define XTX_MSGBUF_H

#include <xtx/proto.h>

/*
 * The largest datagram xtx sends either way.  Pass it to the xtx_msg_*
 * helpers as the payload; as a receive buffer, anything longer arrives
 * truncated and the transport drops it.
 */
struct xtx_msgbuf {
	struct xtx_hdr hdr;
	struct xtx_op ops[XTX_MAX_OPS];
	/*
	 * Value areas follow the last op in use (include/xtx/proto.h), so a
	 * request with fewer ops has their bytes in ops[] too; this is the
	 * rest of XTX_MAX_REQUEST.
	 */
	__u8 spill[XTX_MAX_REQUEST - sizeof(struct xtx_hdr) - XTX_MAX_OPS * sizeof(struct xtx_op)];
};

_Static_assert(sizeof(struct xtx_msgbuf) == XTX_MAX_REQUEST, "a request with value areas fits");

#endif /* XTX_MSGBUF_H */
