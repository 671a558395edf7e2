// SPDX-License-Identifier: GPL-2.0-only
/*
 * The client side of the AF_XDP transport: steers UDP frames addressed to
 * a port an xtx client holds to that client's AF_XDP socket for the frame's
 * receive queue, and passes everything else to the kernel untouched.
 *
 * A client reserves its UDP port with an ordinary socket, so no other
 * program on the host can hold it; the socket for (port, queue) sits at
 * index port * XTX_XSK_MAX_QUEUES + queue, and the address its frames are
 * for at the same index of a second map, so traffic this host forwards
 * to another host's port of that number passes.  An index without a socket
 * (none opened, or closed: the kernel clears the entry) makes the redirect
 * fall back to XDP_PASS, and the reply reaches the reserving socket, which
 * the client reads too.  So the program needs no state of its own, any
 * number of client processes share it, and once no client runs it behaves
 * exactly like the XDP_PASS program it may have replaced.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <xtx/xsk.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, XTX_XSK_MAP_ENTRIES);
	__type(key, __u32);
	__type(value, __u32);
} xtx_xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XTX_XSK_MAP_ENTRIES);
	__type(key, __u32);
	__type(value, __u32);		/* IPv4, network order; 0: none */
} xtx_xsk_addrs SEC(".maps");

SEC("xdp")
int xtx_xsk_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp;
	__u32 queue = ctx->rx_queue_index, idx, *addr;

	/* fragments are the kernel's to reassemble: replies never come in pieces */
	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->protocol != IPPROTO_UDP || ip->ihl != 5 || queue >= XTX_XSK_MAX_QUEUES ||
	    (ip->frag_off & bpf_htons(0x3fff)))
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return XDP_PASS;
	idx = XTX_XSK_INDEX(bpf_ntohs(udp->dest), queue);
	addr = bpf_map_lookup_elem(&xtx_xsk_addrs, &idx);
	if (!addr || *addr != ip->daddr)
		return XDP_PASS;
	return bpf_redirect_map(&xtx_xsks, idx, XDP_PASS);
}
