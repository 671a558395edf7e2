/* SPDX-License-Identifier: GPL-2.0-only */
/* The client-side steering program (bpf/xtx_xsk.bpf.c) on an interface: found, or attached. */
#ifndef XTX_AFXDP_STEER_H
#define XTX_AFXDP_STEER_H

#include <stddef.h>

/*
 * Returns a descriptor of the XSKMAP of the steering program on ifindex
 * (owned by the process, shared by its sockets), attaching the program in
 * native mode first when the interface has none, or one that passes
 * every frame and does nothing else (which it then replaces: it passes
 * everything not addressed to an xtx client too).  Any other program is
 * left alone: a negative errno and why in err.
 */
int xtx_steer_map(int ifindex, const char *ifname, char *err, size_t errlen);

#endif /* XTX_AFXDP_STEER_H */
