/* SPDX-License-Identifier: GPL-2.0-only */
/* The client-side steering program (bpf/xtx_xsk.bpf.c) on an interface: found, or attached. */
#ifndef XTX_AFXDP_STEER_H
#define XTX_AFXDP_STEER_H

#include <stddef.h>

/* The maps of the steering program on an interface (owned by the process, shared by its sockets). */
struct xtx_steer {
	int xsk_fd;	/* XTX_XSK_INDEX(port, queue) -> the AF_XDP socket */
	int addr_fd;	/* the same index -> the IPv4 address the socket's frames are for */
};

/*
 * Fills *st from the steering program on ifindex, attaching it in native
 * mode first when the interface has none, or one that passes every frame
 * and does nothing else (which it then replaces: it passes everything not
 * addressed to an xtx client too).  Any other program is left alone.
 * Returns 0, or a negative errno and why in err.
 */
int xtx_steer_maps(int ifindex, const char *ifname, struct xtx_steer *st, char *err,
		   size_t errlen);

#endif /* XTX_AFXDP_STEER_H */
