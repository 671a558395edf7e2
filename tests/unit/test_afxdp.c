// SPDX-License-Identifier: GPL-2.0-only
/* The AF_XDP transport's framing: headers built right, and every broken reply refused. */
/* checks: 3 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <arpa/inet.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include "afxdp/frame.h"
#include "check.h"

static const uint8_t client_mac[6] = { 2, 0, 0, 0, 0, 1 };
static const uint8_t server_mac[6] = { 2, 0, 0, 0, 0, 2 };

struct fixture {
	struct in_addr client;
	struct sockaddr_in server;
	uint16_t client_port;		/* network order */
	struct xtx_frame_tmpl to_server;
	/* as a UMEM frame is: 8-aligned, so the IP header 14 bytes in is not 4-aligned */
	uint8_t frame[2048] __attribute__((aligned(8)));
	size_t len;
};

static uint16_t ip_sum_ok(const void *ip)
{
	const uint8_t *b = ip;
	uint32_t s = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s == 0xffff;
}

/* A reply as a server sends it: the request's frame with addresses and ports swapped. */
static void make_reply(struct fixture *f, size_t payload)
{
	struct xtx_frame_tmpl back;
	struct sockaddr_in to_client = { .sin_family = AF_INET, .sin_addr = f->client,
					 .sin_port = f->client_port };
	size_t i;

	xtx_frame_tmpl_init(&back, server_mac, client_mac, f->server.sin_addr, f->server.sin_port,
			    &to_client);
	for (i = 0; i < payload; i++)
		f->frame[XTX_FRAME_HDR_LEN + i] = (uint8_t)(i * 7 + 1);
	xtx_frame_build(&back, f->frame, payload, 4242);
	f->len = XTX_FRAME_HDR_LEN + payload;
}

static void setup(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	inet_pton(AF_INET, "10.77.1.1", &f->client);
	f->server.sin_family = AF_INET;
	inet_pton(AF_INET, "10.77.1.2", &f->server.sin_addr);
	f->server.sin_port = htons(7400);
	f->client_port = htons(40001);
	xtx_frame_tmpl_init(&f->to_server, client_mac, server_mac, f->client, f->client_port,
			    &f->server);
}

/* The headers of a frame, copied out (they are not aligned in it) and back. */
#define IP_AT(f)	((f)->frame + ETH_HLEN)
#define UDP_AT(f)	((f)->frame + ETH_HLEN + sizeof(struct iphdr))
#define GET(dst, at)	memcpy(&(dst), (at), sizeof(dst))
#define PUT(at, src)	memcpy((at), &(src), sizeof(src))

static void test_build(void)
{
	struct fixture f;
	struct ethhdr e, *eth = &e;
	struct iphdr i, *ip = &i;
	struct udphdr u, *udp = &u;
	uint16_t id;

	setup(&f);
	for (id = 0; id < 3; id++) {
		/* every length and id changes the checksum: it must stay right for each */
		xtx_frame_build(&f.to_server, f.frame, 100 + id * 333, id ? 0xffff - id : 0);
		GET(e, f.frame);
		GET(i, IP_AT(&f));
		GET(u, UDP_AT(&f));
		CHECK(!memcmp(eth->h_dest, server_mac, 6) && !memcmp(eth->h_source, client_mac, 6),
		      "MAC addresses");
		CHECK(eth->h_proto == htons(ETH_P_IP), "ethertype %#x", ntohs(eth->h_proto));
		CHECK(ip->version == 4 && ip->ihl == 5 && ip->protocol == IPPROTO_UDP, "IP header");
		CHECK(ntohs(ip->tot_len) == 100 + id * 333 + 28, "IP length %u", ntohs(ip->tot_len));
		CHECK(ip_sum_ok(IP_AT(&f)), "IP checksum (length %u)", 100 + id * 333);
		CHECK(ip->saddr == f.client.s_addr && ip->daddr == f.server.sin_addr.s_addr,
		      "IP addresses");
		CHECK(udp->source == f.client_port && udp->dest == f.server.sin_port, "ports");
		CHECK(ntohs(udp->len) == 100 + id * 333 + 8 && udp->check == 0, "UDP length");
	}
}

static void test_parse_reply(void)
{
	struct fixture f;
	struct xtx_frame_view v;
	size_t i;
	int bad = 0;

	setup(&f);
	make_reply(&f, 1472);
	CHECK(xtx_frame_parse(f.frame, f.len, f.client, f.client_port, &v) == XTX_FRAME_OK,
	      "a well-formed reply");
	CHECK(v.len == 1472 && v.payload == f.frame + XTX_FRAME_HDR_LEN, "payload %zu", v.len);
	CHECK(v.from.sin_addr.s_addr == f.server.sin_addr.s_addr &&
	      v.from.sin_port == f.server.sin_port, "sender");
	for (i = 0; i < v.len; i++)
		bad += v.payload[i] != (uint8_t)(i * 7 + 1);
	CHECK(!bad, "payload bytes");
	/* Ethernet pads short frames to 60 bytes: the padding is not payload */
	make_reply(&f, 2);
	CHECK(xtx_frame_parse(f.frame, 60, f.client, f.client_port, &v) == XTX_FRAME_OK &&
	      v.len == 2, "a padded minimum frame (payload %zu)", v.len);
}

static void test_parse_refuses(void)
{
	struct fixture f;
	struct xtx_frame_view v;
	struct iphdr ip;
	struct udphdr udp;
	struct in_addr other;
	size_t cut;

	setup(&f);
	make_reply(&f, 64);
	/* every cut short of the whole datagram is malformed, none is read past its end */
	for (cut = 0; cut < f.len; cut++) {
		enum xtx_frame_verdict r = xtx_frame_parse(f.frame, cut, f.client, f.client_port,
							   &v);

		CHECK(r != XTX_FRAME_OK, "a frame cut to %zu bytes accepted", cut);
	}
	CHECK(xtx_frame_parse(f.frame, 10, f.client, f.client_port, &v) == XTX_FRAME_MALFORMED,
	      "10 bytes: malformed");

	GET(ip, IP_AT(&f));
	ip.check ^= htons(0x0100);
	PUT(IP_AT(&f), ip);
	CHECK(xtx_frame_parse(f.frame, f.len, f.client, f.client_port, &v) == XTX_FRAME_MALFORMED,
	      "a bad IP checksum");
	make_reply(&f, 64);
	GET(udp, UDP_AT(&f));
	udp.len = htons(ntohs(udp.len) + 1);
	PUT(UDP_AT(&f), udp);
	CHECK(xtx_frame_parse(f.frame, f.len, f.client, f.client_port, &v) == XTX_FRAME_MALFORMED,
	      "UDP and IP lengths disagree");
	make_reply(&f, 64);
	GET(udp, UDP_AT(&f));
	udp.len = htons(4);
	PUT(UDP_AT(&f), udp);
	CHECK(xtx_frame_parse(f.frame, f.len, f.client, f.client_port, &v) == XTX_FRAME_MALFORMED,
	      "a UDP length below its header");

	/* a fragment (more-fragments set), with its checksum made right again */
	make_reply(&f, 64);
	GET(ip, IP_AT(&f));
	ip.frag_off = htons(0x2000);
	ip.check = 0;
	{
		uint32_t s = 0;
		const uint8_t *b = (const void *)&ip;
		int i;

		for (i = 0; i < 20; i += 2)
			s += (uint32_t)b[i] << 8 | b[i + 1];
		while (s >> 16)
			s = (s & 0xffff) + (s >> 16);
		ip.check = htons((uint16_t)~s);
	}
	PUT(IP_AT(&f), ip);
	CHECK(xtx_frame_parse(f.frame, f.len, f.client, f.client_port, &v) == XTX_FRAME_MALFORMED,
	      "a fragment");

	make_reply(&f, 64);
	CHECK(xtx_frame_parse(f.frame, f.len, f.client, htons(40002), &v) == XTX_FRAME_NOT_OURS,
	      "another port");
	inet_pton(AF_INET, "10.77.1.9", &other);
	CHECK(xtx_frame_parse(f.frame, f.len, other, f.client_port, &v) == XTX_FRAME_NOT_OURS,
	      "another address");
	GET(ip, IP_AT(&f));
	ip.protocol = IPPROTO_TCP;
	PUT(IP_AT(&f), ip);
	CHECK(xtx_frame_parse(f.frame, f.len, f.client, f.client_port, &v) == XTX_FRAME_NOT_OURS,
	      "not UDP");
	make_reply(&f, 64);
	f.frame[12] = 0x86;
	f.frame[13] = 0xdd;
	CHECK(xtx_frame_parse(f.frame, f.len, f.client, f.client_port, &v) == XTX_FRAME_NOT_OURS,
	      "not IPv4");
}

int main(void)
{
	RUN_CASE(test_build);
	RUN_CASE(test_parse_reply);
	RUN_CASE(test_parse_refuses);
	printf("# test_afxdp: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
