// SPDX-License-Identifier: GPL-2.0-only
/*
 * A do-nothing XDP program for the client-side veth peers: XDP_TX frames
 * sent to a veth are dropped unless its peer has an XDP program attached.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xtx_xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
