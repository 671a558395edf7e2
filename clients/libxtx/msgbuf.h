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
};

#endif /* XTX_MSGBUF_H */
