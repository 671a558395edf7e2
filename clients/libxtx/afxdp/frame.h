/* SPDX-License-Identifier: GPL-2.0-only */
/* Ethernet/IPv4/UDP framing for the AF_XDP transport: headers built from a template, replies checked. */
#ifndef XTX_AFXDP_FRAME_H
#define XTX_AFXDP_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

/* Ethernet + IPv4 without options + UDP. */
#define XTX_FRAME_HDR_LEN	42

/* The fixed part of every frame to one server: addresses, ports, the constant IP fields. */
struct xtx_frame_tmpl {
	uint8_t hdr[XTX_FRAME_HDR_LEN];
	uint32_t ip_csum_base;	/* ones' complement sum of the IP header's constant words */
};

void xtx_frame_tmpl_init(struct xtx_frame_tmpl *t, const uint8_t src_mac[6],
			 const uint8_t dst_mac[6], struct in_addr src, uint16_t src_port_be,
			 const struct sockaddr_in *dst);

/*
 * Writes the headers for a payload of len bytes (already at frame +
 * XTX_FRAME_HDR_LEN) into frame: lengths, the IP id and checksum.  The UDP
 * checksum is left 0 ("none", as IPv4 allows and the servers' replies do).
 */
void xtx_frame_build(const struct xtx_frame_tmpl *t, void *frame, size_t len, uint16_t ip_id);

enum xtx_frame_verdict {
	XTX_FRAME_OK,
	XTX_FRAME_MALFORMED,	/* too short, lengths that disagree, a bad IP checksum, a fragment */
	XTX_FRAME_NOT_OURS,	/* well formed but not IPv4/UDP to our address and port */
};

struct xtx_frame_view {
	struct sockaddr_in from;	/* the sender's address and port */
	const uint8_t *payload;
	size_t len;
};

/*
 * Checks a received frame of len bytes against our address and port
 * (network order) and points v at its UDP payload.  Trusts nothing in it.
 */
enum xtx_frame_verdict xtx_frame_parse(const void *frame, size_t len, struct in_addr local,
				       uint16_t port_be, struct xtx_frame_view *v);

#endif /* XTX_AFXDP_FRAME_H */
