/* SPDX-License-Identifier: GPL-2.0-only */
/* The client-side AF_XDP steering program's map, shared by bpf/xtx_xsk.bpf.c and libxtx. */
#ifndef XTX_XSK_H
#define XTX_XSK_H

/*
 * Receive queues per interface a client can be steered on.  Replies on a
 * higher queue reach the client's reserving UDP socket instead (slower,
 * still correct).  Eight queues of every port cost the maps 6 MiB.
 */
#define XTX_XSK_MAX_QUEUES	8
#define XTX_XSK_MAP_ENTRIES	(65536 * XTX_XSK_MAX_QUEUES)

/* The index of the socket of a client holding UDP port (host order) for a queue. */
#define XTX_XSK_INDEX(port, queue)	((port) * XTX_XSK_MAX_QUEUES + (queue))

#endif /* XTX_XSK_H */
