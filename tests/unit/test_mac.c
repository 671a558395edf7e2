// SPDX-License-Identifier: GPL-2.0-only
/* The request MAC of a shared secret: SipHash-1-3 itself, then XDP's check of every byte. */
/* checks: 8 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include <xtx/mac.h>
#include "xtx_xdp.skel.h"
#include "check.h"
#include "log.h"
#include "pkt.h"
#include "harness.h"

static const struct xtx_secret key = { 0x0123456789abcdefull, 0xfedcba9876543210ull };
static const struct xtx_secret other_key = { 0x0123456789abcdefull, 0xfedcba9876543211ull };

/* The shared secret on (key) or off, as xtxd --secret-file sets it. */
static void set_secret(bool on)
{
	int fd = bpf_map__fd(skel->maps.xtx_runtime);
	struct xtx_runtime rt;
	__u32 zero = 0;

	bpf_map_lookup_elem(fd, &zero, &rt);
	rt.flags = on ? rt.flags | XTX_RTF_SECRET : rt.flags & ~XTX_RTF_SECRET;
	rt.secret_k0 = on ? key.k0 : 0;
	rt.secret_k1 = on ? key.k1 : 0;
	bpf_map_update_elem(fd, &zero, &rt, 0);
}

static __u64 ctr(__u32 c)
{
	struct xtx_stats s;

	read_stats(&s);
	return s.ctr[c];
}

/*
 * Two GETs of keys nobody stored, with value areas filling the request to
 * len bytes (the first the largest a value may be): a length at the walk's
 * limit.
 */
static __u32 long_gets(uint8_t *payload, __u64 req, __u32 len)
{
	struct xtx_op *a, *b;

	xtx_msg_init(payload, 9, req);
	a = xtx_msg_add(payload, XTX_OP_GET, 0, 0xdead0001beefull);
	b = xtx_msg_add(payload, XTX_OP_GET, 0, 0xdead0002beefull);
	xtx_msg_set_area(a, XTX_VALUE_MAX, 0);
	xtx_msg_set_area(b, (__u16)(len - xtx_msg_len(2) - XTX_VALUE_MAX), 0);
	return (__u32)xtx_msg_finish(payload);
}

/*
 * A request that touches every part of a payload: a COUNTER_ADD of delta
 * to counter idx (a change anyone would see), then a GET of a key nobody
 * stored with a value area of 64 bytes (answered in XDP: NOT_FOUND).
 * Returns its length; not signed.
 */
static __u32 two_ops(uint8_t *payload, __u64 req, __u32 idx, __u64 delta)
{
	struct xtx_op *op;
	__u32 len;

	xtx_msg_init(payload, 9, req);
	op = xtx_msg_add(payload, XTX_OP_COUNTER_ADD, 0, idx);
	op->version = delta;
	op = xtx_msg_add(payload, XTX_OP_GET, 0, 0xdead0000beefull);
	xtx_msg_set_area(op, 64, 0);
	len = (__u32)xtx_msg_finish(payload);
	memset(xtx_msg_area(payload, op), 0x5c, 64);
	return len;
}

static void frame(struct run *r, const uint8_t *payload, __u32 len)
{
	r->in_len = pkt_build(r->in, &pkt_default_addrs, payload, len);
	run(r);
}

/* The reference SipHash-1-3 (github.com/veorq/SipHash): key 0, message 00 01 02 ... */
static void test_siphash_vectors(void)
{
	static const struct { __u32 len; __u64 h; } v[] = {
		{ 0, 0xd1fba762150c532cull },  { 1, 0x68a914128e01e473ull },
		{ 7, 0x2f098ab0c751325aull },  { 8, 0xead411e67ebe2eeaull },
		{ 15, 0xf30eb725bb91c9eaull }, { 16, 0x8972188433a5c5b7ull },
		{ 31, 0x169739443111d49bull }, { 32, 0x31ef8061c910629bull },
		{ 63, 0x385d3e39e5f37359ull },
	};
	const struct xtx_secret zero = { 0, 0 };
	uint8_t msg[64], payload[PKT_MAX], copy[PKT_MAX];
	unsigned int i;
	__u32 len;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		CHECK(xtx_siphash13_hole(&zero, msg, v[i].len, ~0u) == v[i].h,
		      "SipHash-1-3 of %u bytes: %#llx, want %#llx", v[i].len,
		      (unsigned long long)xtx_siphash13_hole(&zero, msg, v[i].len, ~0u),
		      (unsigned long long)v[i].h);
	/* the MAC: SipHash of the payload with hdr.mac read as zero, whatever it holds */
	len = two_ops(payload, 1, 0, 1);
	xtx_mac_sign(&key, payload, len);
	memcpy(copy, payload, len);
	((struct xtx_hdr *)copy)->mac = 0;
	CHECK(((struct xtx_hdr *)payload)->mac ==
	      xtx_mac_tag(xtx_siphash13_hole(&key, copy, len, ~0u)),
	      "the MAC is SipHash-1-3 of the request with its MAC field zero");
	CHECK(xtx_mac(&key, payload, len) == xtx_mac(&key, copy, len) &&
	      xtx_mac_ok(&key, payload, len) && !xtx_mac_ok(&other_key, payload, len) &&
	      !xtx_mac_ok(NULL, payload, len) && xtx_mac_ok(NULL, copy, len),
	      "user space's check: right key only; without a secret, no MAC only");
	CHECK(xtx_mac_tag(0) == 1 && xtx_mac_tag(5) == 5, "a tag is never 0");
}

/*
 * Right MAC: served, the reply carries no MAC, a retransmission is answered
 * from the dedupe record; the fullest requests (16 ops, and a value area up
 * to XTX_MAX_REQUEST) pass XDP's walk.
 */
static void test_mac_served(void)
{
	const __u32 idx = 1;
	uint8_t payload[PKT_MAX];
	__u64 c0 = counter_value(idx), bad0;
	struct run r;
	__u32 len;

	set_secret(true);
	bad0 = ctr(XTX_CTR_BAD_MAC);
	len = two_ops(payload, 100, idx, 3);
	xtx_mac_sign(&key, payload, len);
	frame(&r, payload, len);
	CHECK(r.retval == XDP_TX && out_op(&r, 0)->status == XTX_ST_OK &&
	      out_op(&r, 1)->status == XTX_ST_NOT_FOUND && counter_value(idx) == c0 + 3,
	      "a request with the right MAC is served (verdict %d, ops %u/%u)", r.retval,
	      out_op(&r, 0)->status, out_op(&r, 1)->status);
	CHECK(out_hdr(&r)->mac == 0, "the reply carries no MAC (%#llx)",
	      (unsigned long long)out_hdr(&r)->mac);
	frame(&r, payload, len);
	CHECK(r.retval == XDP_TX && (out_hdr(&r)->flags & XTX_F_REPLAYED) &&
	      out_op(&r, 0)->version == c0 + 3 && counter_value(idx) == c0 + 3,
	      "its retransmission is answered from the record, nothing runs twice");

	make_req(&r, 9, 101, XTX_MAX_OPS, XTX_OP_PING);
	xtx_mac_sign(&key, in_hdr(&r), (__u32)xtx_msg_len(XTX_MAX_OPS));
	run(&r);
	CHECK(r.retval == XDP_TX && out_op(&r, XTX_MAX_OPS - 1)->status == XTX_ST_OK,
	      "16 ops with the right MAC are served (verdict %d)", r.retval);

	len = long_gets(payload, 102, XTX_MAX_REQUEST);
	xtx_mac_sign(&key, payload, len);
	frame(&r, payload, len);
	CHECK(len == XTX_MAX_REQUEST && r.retval == XDP_TX &&
	      out_op(&r, 1)->status == XTX_ST_NOT_FOUND,
	      "a request of XTX_MAX_REQUEST bytes with the right MAC is served (%u B, "
	      "verdict %d, status %u)", len, r.retval, out_op(&r, 0)->status);
	CHECK(ctr(XTX_CTR_BAD_MAC) == bad0, "nothing counted as bad_mac");
	set_secret(false);
}

/*
 * Any one byte changed anywhere (header fields, an op's opcode, key or
 * value, the value area, the MAC itself): dropped, counted, nothing runs.
 * The magic and a flags byte with XTX_F_REPLY never reach the MAC: they
 * are dropped first, as bad_magic.
 */
static void test_mac_every_byte(void)
{
	const __u32 idx = 2;
	uint8_t payload[PKT_MAX], bad[PKT_MAX];
	__u64 c0 = counter_value(idx);
	__u32 len, i, wrong = 0, first = ~0u;
	struct xtx_stats before, after;
	struct run r;

	set_secret(true);
	len = two_ops(payload, 200, idx, 1);
	xtx_mac_sign(&key, payload, len);
	for (i = 0; i < len; i++) {
		__u32 want = i < 4 || i == __builtin_offsetof(struct xtx_hdr, flags) ?
			     XTX_CTR_BAD_MAGIC : XTX_CTR_BAD_MAC;

		memcpy(bad, payload, len);
		bad[i] ^= 0xff;
		read_stats(&before);
		frame(&r, bad, len);
		read_stats(&after);
		if (r.retval != XDP_DROP || after.ctr[want] != before.ctr[want] + 1 ||
		    after.ctr[XTX_CTR_DROP] != before.ctr[XTX_CTR_DROP] + 1) {
			wrong++;
			if (first == ~0u)
				first = i;
		}
	}
	CHECK(!wrong && counter_value(idx) == c0,
	      "each of the %u bytes flipped: dropped and counted as bad_mac (%u not, the "
	      "first at byte %d), counter %llu -> %llu", len, wrong, (int)first,
	      (unsigned long long)c0, (unsigned long long)counter_value(idx));
	frame(&r, payload, len);
	CHECK(r.retval == XDP_TX && counter_value(idx) == c0 + 1,
	      "the request as signed is still served once (verdict %d)", r.retval);
	set_secret(false);
}

/* The review's attack: a GET's header and MAC with a COUNTER_ADD in place of its op. */
static void test_mac_swapped_op(void)
{
	const __u32 idx = 3;
	uint8_t payload[PKT_MAX];
	struct xtx_op *op;
	__u64 bad0;
	struct run r;
	__u32 len;

	set_secret(true);
	bad0 = ctr(XTX_CTR_BAD_MAC);
	xtx_msg_init(payload, 9, 300);
	xtx_msg_add(payload, XTX_OP_GET, 0, 0xdead0002beefull);
	len = (__u32)xtx_msg_finish(payload);
	xtx_mac_sign(&key, payload, len);
	frame(&r, payload, len);
	CHECK(r.retval == XDP_TX && out_op(&r, 0)->status == XTX_ST_NOT_FOUND,
	      "the captured GET is served (verdict %d)", r.retval);
	/* the same header (request id too) and MAC, the op rewritten */
	op = xtx_msg_ops(payload);
	memset(op, 0, sizeof(*op));
	op->opcode = XTX_OP_COUNTER_ADD;
	op->key = idx;
	op->version = 1000000;
	frame(&r, payload, len);
	CHECK(r.retval == XDP_DROP && counter_value(idx) == 0,
	      "its header and MAC over a COUNTER_ADD of 1000000: dropped, counter %llu",
	      (unsigned long long)counter_value(idx));
	((struct xtx_hdr *)payload)->req_id = 301;
	frame(&r, payload, len);
	CHECK(r.retval == XDP_DROP && counter_value(idx) == 0 &&
	      ctr(XTX_CTR_BAD_MAC) == bad0 + 2,
	      "nor with another request id (counter %llu, bad_mac +%llu)",
	      (unsigned long long)counter_value(idx),
	      (unsigned long long)(ctr(XTX_CTR_BAD_MAC) - bad0));
	set_secret(false);
}

/*
 * Another key's MAC, none, or the right one with a bit changed in either
 * half: all dropped.  The tag is 64 bits: one that differs only in its high
 * 32 is refused.
 */
static void test_mac_wrong_tags(void)
{
	static const struct { const char *what; __u64 x; int other, zero; } c[] = {
		{ "another key's", 0, 1, 0 },
		{ "none (0)", 0, 0, 1 },
		{ "low bit flipped", 1, 0, 0 },
		{ "bit 31 flipped", 1ull << 31, 0, 0 },
		{ "bit 32 flipped", 1ull << 32, 0, 0 },
		{ "high 32 bits flipped, low 32 right", 0xffffffff00000000ull, 0, 0 },
		{ "bit 63 flipped", 1ull << 63, 0, 0 },
	};
	const __u32 idx = 4;
	uint8_t payload[PKT_MAX];
	__u64 c0 = counter_value(idx), bad0, tag;
	struct xtx_hdr *h = (struct xtx_hdr *)payload;
	unsigned int i;
	struct run r;
	__u32 len;

	set_secret(true);
	bad0 = ctr(XTX_CTR_BAD_MAC);
	len = two_ops(payload, 400, idx, 1);
	tag = xtx_mac(&key, payload, len);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		h->mac = c[i].other ? xtx_mac(&other_key, payload, len) :
			 c[i].zero ? 0 : tag ^ c[i].x;
		frame(&r, payload, len);
		CHECK(r.retval == XDP_DROP && counter_value(idx) == c0,
		      "MAC %s: dropped (verdict %d)", c[i].what, r.retval);
	}
	CHECK(ctr(XTX_CTR_BAD_MAC) == bad0 + i, "each counted as bad_mac (+%llu of %u)",
	      (unsigned long long)(ctr(XTX_CTR_BAD_MAC) - bad0), i);
	h->mac = tag;
	frame(&r, payload, len);
	CHECK(r.retval == XDP_TX && counter_value(idx) == c0 + 1,
	      "the same request with its own tag is served (verdict %d)", r.retval);
	set_secret(false);
}

/*
 * Every well-formed request is whole 8-byte words, and XDP walks only
 * those: a length that is no multiple of 8 is dropped as bad_mac even
 * with the right MAC (its shape would refuse it anyway), and so is one
 * longer than any request may be; neither runs anything.
 */
static void test_mac_lengths(void)
{
	const __u32 idx = 5;
	uint8_t payload[PKT_MAX];
	__u64 c0 = counter_value(idx), bad0;
	struct run r;
	__u32 len;

	set_secret(true);
	bad0 = ctr(XTX_CTR_BAD_MAC);
	len = two_ops(payload, 500, idx, 1) + 3;
	payload[len - 3] = 0x11;
	payload[len - 2] = 0x22;
	payload[len - 1] = 0x33;
	xtx_mac_sign(&key, payload, len);
	frame(&r, payload, len);
	CHECK(r.retval == XDP_DROP && ctr(XTX_CTR_BAD_MAC) == bad0 + 1 && counter_value(idx) == c0,
	      "%u bytes with the right MAC: not whole words, dropped as bad_mac (verdict %d)", len,
	      r.retval);
	len -= 3;
	xtx_mac_sign(&key, payload, len);
	frame(&r, payload, len);
	CHECK(r.retval == XDP_TX && counter_value(idx) == c0 + 1,
	      "the same request in whole words is served (verdict %d)", r.retval);

	len = long_gets(payload, 501, XTX_MAX_REQUEST + 8);
	xtx_mac_sign(&key, payload, len);
	frame(&r, payload, len);
	CHECK(r.retval == XDP_DROP && ctr(XTX_CTR_BAD_MAC) == bad0 + 2 &&
	      counter_value(idx) == c0 + 1,
	      "%u bytes, over XTX_MAX_REQUEST, even with the right MAC: dropped (verdict %d)",
	      len, r.retval);
	set_secret(false);
}

/* Without a secret a request carries no MAC: one that does is refused MALFORMED. */
static void test_mac_without_secret(void)
{
	const __u32 idx = 6;
	uint8_t payload[PKT_MAX];
	__u64 c0 = counter_value(idx), bad0, mal0;
	struct run r;
	__u32 len;

	set_secret(false);
	bad0 = ctr(XTX_CTR_BAD_MAC);
	mal0 = ctr(XTX_CTR_MALFORMED);
	len = two_ops(payload, 600, idx, 1);
	xtx_mac_sign(&key, payload, len);
	frame(&r, payload, len);
	CHECK(r.retval == XDP_TX && out_hdr(&r)->status == XTX_ST_MALFORMED &&
	      out_op(&r, 0)->status == XTX_ST_NOT_EXECUTED && counter_value(idx) == c0 &&
	      ctr(XTX_CTR_MALFORMED) == mal0 + 1 && ctr(XTX_CTR_BAD_MAC) == bad0,
	      "a MAC to a server without a secret: MALFORMED, nothing runs (verdict %d, "
	      "status %u)", r.retval, out_hdr(&r)->status);
	((struct xtx_hdr *)payload)->mac = 0;
	frame(&r, payload, len);
	CHECK(r.retval == XDP_TX && out_hdr(&r)->status == XTX_ST_OK &&
	      counter_value(idx) == c0 + 1, "without one it is served (status %u)",
	      out_hdr(&r)->status);
}

/* Two servers' keys: a request MACed for one is dropped by the other, whatever it asks. */
static void test_mac_two_keys(void)
{
	const __u32 idx = 7;
	uint8_t payload[PKT_MAX];
	__u64 c0 = counter_value(idx);
	__u32 len, i, served = 0;
	struct run r;

	set_secret(true);
	for (i = 0; i < 64; i++) {
		len = two_ops(payload, 700 + i, idx, 1);
		xtx_mac_sign(&other_key, payload, len);
		frame(&r, payload, len);
		served += r.retval != XDP_DROP;
	}
	CHECK(!served && counter_value(idx) == c0,
	      "64 requests MACed with another key: none served (%u), counter unchanged", served);
	set_secret(false);
}

int main(void)
{
	xtx_log_libbpf();
	skel = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
	if (!skel) {
		printf("FAIL: load_server (%s)\n", strerror(errno));
		return 1;
	}
	RUN_CASE(test_siphash_vectors);
	RUN_CASE(test_mac_served);
	RUN_CASE(test_mac_every_byte);
	RUN_CASE(test_mac_swapped_op);
	RUN_CASE(test_mac_wrong_tags);
	RUN_CASE(test_mac_lengths);
	RUN_CASE(test_mac_without_secret);
	RUN_CASE(test_mac_two_keys);
	xtx_xdp__destroy(skel);
	printf("# test_mac: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
