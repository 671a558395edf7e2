// SPDX-License-Identifier: GPL-2.0-only
/* BPF_PROG_TEST_RUN tables for the XDP server: replies, pass-through, refusals, dedupe, fuzz. */
/* checks: 18 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include <xtx/hades.h>
#include <xtx/hash.h>
#include <xtx/kv.h>
#include "xtx_xdp.skel.h"
#include "check.h"
#include "log.h"
#include "pkt.h"
#include "harness.h"
#include "stats_read.h"

static void test_ping_one_op(void)
{
	struct xtx_runtime rt = {}, saved;
	struct xtx_ping_info pi;
	__u32 zero = 0;
	struct run r;

	/* the answer tells clients the lock lease in force, read at run time */
	bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_runtime), &zero, &saved);
	rt = saved;
	rt.lock_lease_ns = 123456789;
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_runtime), &zero, &rt, 0);
	make_req(&r, 1, 1, 1, XTX_OP_PING);
	CHECK(!run(&r), "test run: %s", strerror(errno));
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_runtime), &zero, &saved, 0);
	check_reply_framing(&r);
	CHECK(out_hdr(&r)->status == XTX_ST_OK, "packet status %u", out_hdr(&r)->status);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK, "op status %u", out_op(&r, 0)->status);
	CHECK(out_op(&r, 0)->version == in_op(&r, 0)->version, "nonce not echoed");
	CHECK(out_op(&r, 0)->vlen == sizeof(pi), "vlen %u", out_op(&r, 0)->vlen);
	memcpy(&pi, out_op(&r, 0)->value, sizeof(pi));
	CHECK(pi.cpu < (__u32)libbpf_num_possible_cpus(), "serving cpu %u", pi.cpu);
	CHECK(pi.lock_lease_ns == 123456789, "lock lease told: %llu",
	      (unsigned long long)pi.lock_lease_ns);
	CHECK(pi.hades_lease_ns == XTX_HADES_LEASE_DEFAULT_NS, "HADES lease told: %llu",
	      (unsigned long long)pi.hades_lease_ns);
	CHECK(!memcmp(&out_op(&r, 0)->key, &in_op(&r, 0)->key, 24), "key/txn changed");
}

static void test_ping_sixteen_ops(void)
{
	struct run r;
	int i;

	make_req(&r, 1, 1, XTX_MAX_OPS, XTX_OP_PING);
	CHECK(!run(&r), "test run");
	check_reply_framing(&r);
	for (i = 0; i < XTX_MAX_OPS; i++)
		CHECK(out_op(&r, i)->status == XTX_ST_OK &&
		      out_op(&r, i)->version == in_op(&r, i)->version, "op %d", i);
}

static void test_stats_op_matches_map(void)
{
	struct xtx_stats before;
	struct run r;
	__u64 v[5];

	read_stats(&before);
	make_req(&r, 1, 1, 1, XTX_OP_STATS);
	in_op(&r, 0)->key = 0;	/* rx, tx, pass, drop, replayed */
	run(&r);
	check_reply_framing(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK && out_op(&r, 0)->vlen == 40, "status/vlen");
	memcpy(v, out_op(&r, 0)->value, sizeof(v));
	/* its own arrival is counted before it runs, its reply after */
	CHECK(v[0] == before.ctr[XTX_CTR_RX] + 1, "rx %llu, map %llu", (unsigned long long)v[0],
	      (unsigned long long)before.ctr[XTX_CTR_RX]);
	CHECK(v[1] == before.ctr[XTX_CTR_TX], "tx %llu vs %llu", (unsigned long long)v[1],
	      (unsigned long long)before.ctr[XTX_CTR_TX]);
	CHECK(v[3] == before.ctr[XTX_CTR_DROP], "drop");

	read_stats(&before);
	make_req(&r, 1, 1, 1, XTX_OP_STATS);
	in_op(&r, 0)->key = XTX_STATS_KEY_OP + XTX_OP_PING;
	run(&r);
	memcpy(v, out_op(&r, 0)->value, sizeof(v));
	CHECK(v[0] == before.op[XTX_OP_PING][XTX_ST_OK] && v[0] > 0, "ping ok count %llu",
	      (unsigned long long)v[0]);

	/* the last group is partial: words past the counters read 0 */
	make_req(&r, 1, 1, 1, XTX_OP_STATS);
	in_op(&r, 0)->key = (XTX_CTR__COUNT - 1) / XTX_STATS_PER_OP;
	memset(in_op(&r, 0)->value, 0xff, sizeof(v));
	run(&r);
	memcpy(v, out_op(&r, 0)->value, sizeof(v));
	if (XTX_CTR__COUNT % XTX_STATS_PER_OP)
		CHECK(v[XTX_STATS_PER_OP - 1] == 0, "read past the counters: %llu",
		      (unsigned long long)v[XTX_STATS_PER_OP - 1]);

	make_req(&r, 1, 1, 1, XTX_OP_STATS);
	in_op(&r, 0)->key = 0x9999;
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_BAD_ARG, "unknown stats key answers bad_arg");
}

/* Frames that are not xtx requests must leave XDP untouched. */
static void test_pass_through(void)
{
	static const struct { const char *name; int proto, port, ethertype; } cases[] = {
		{ "udp other port", IPPROTO_UDP, 53, ETH_P_IP },
		{ "tcp to xtx port", IPPROTO_TCP, XTX_DEFAULT_PORT, ETH_P_IP },
		{ "arp", IPPROTO_UDP, XTX_DEFAULT_PORT, ETH_P_ARP },
		{ "ipv6", IPPROTO_UDP, XTX_DEFAULT_PORT, ETH_P_IPV6 },
	};
	struct xtx_stats before, after;
	unsigned int i;
	struct run r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		read_stats(&before);
		make_req(&r, 1, 1, 1, XTX_OP_PING);
		((struct ethhdr *)r.in)->h_proto = htons(cases[i].ethertype);
		((struct iphdr *)(r.in + PKT_IP_OFF))->protocol = cases[i].proto;
		((struct udphdr *)(r.in + PKT_UDP_OFF))->dest = htons(cases[i].port);
		run(&r);
		CHECK(r.retval == XDP_PASS, "%s: verdict %d", cases[i].name, r.retval);
		CHECK(r.out_len == r.in_len && !memcmp(r.in, r.out, r.in_len),
		      "%s: frame modified", cases[i].name);
		read_stats(&after);
		CHECK(after.ctr[XTX_CTR_RX] == before.ctr[XTX_CTR_RX], "%s: counted as xtx",
		      cases[i].name);
	}
	/* a runt frame */
	r.in_len = 20;
	memset(r.in, 0xab, r.in_len);
	run(&r);
	CHECK(r.retval == XDP_PASS && !memcmp(r.in, r.out, 20), "runt frame");
}

enum mangle { M_TRUNCATED, M_MAGIC, M_REPLY_FLAG, M_IP_OPTIONS, M_FRAGMENT, M_UDP_LEN };

/* Unsound xtx frames: dropped, counted, no state touched. */
static void test_drops(void)
{
	static const struct { const char *name; enum mangle m; __u32 counter; } cases[] = {
		{ "header truncated", M_TRUNCATED, XTX_CTR_TRUNCATED },
		{ "bad magic", M_MAGIC, XTX_CTR_BAD_MAGIC },
		{ "reply flag on a request", M_REPLY_FLAG, XTX_CTR_BAD_MAGIC },
		{ "ip options", M_IP_OPTIONS, XTX_CTR_IP_OPTIONS },
		{ "ip fragment", M_FRAGMENT, XTX_CTR_IP_OPTIONS },
		{ "udp length past frame", M_UDP_LEN, XTX_CTR_TRUNCATED },
	};
	struct xtx_stats before, after;
	__u64 c0 = counter_value(0);
	unsigned int i;
	struct run r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct iphdr *ip = (struct iphdr *)(r.in + PKT_IP_OFF);
		struct udphdr *udp = (struct udphdr *)(r.in + PKT_UDP_OFF);

		make_req(&r, 1, 1000 + i, 1, XTX_OP_COUNTER_ADD);
		switch (cases[i].m) {
		case M_TRUNCATED:
			r.in_len = PKT_PAYLOAD_OFF + 10;
			udp->len = htons(8 + 10);
			break;
		case M_MAGIC: in_hdr(&r)->magic ^= 1; break;
		case M_REPLY_FLAG: in_hdr(&r)->flags |= XTX_F_REPLY; break;
		case M_IP_OPTIONS: {
			/* shift the UDP header by 4 bytes of options, keep the port */
			memmove(r.in + PKT_UDP_OFF + 4, r.in + PKT_UDP_OFF, r.in_len - PKT_UDP_OFF);
			memset(r.in + PKT_UDP_OFF, 1, 4);	/* NOP options */
			ip->ihl = 6;
			r.in_len += 4;
			break;
		}
		case M_FRAGMENT: ip->frag_off = htons(0x2000); break;
		case M_UDP_LEN: udp->len = htons(ntohs(udp->len) + 100); break;
		}
		read_stats(&before);
		run(&r);
		read_stats(&after);
		CHECK(r.retval == XDP_DROP, "%s: verdict %d", cases[i].name, r.retval);
		CHECK(after.ctr[cases[i].counter] == before.ctr[cases[i].counter] + 1,
		      "%s: counter %u not bumped", cases[i].name, cases[i].counter);
		CHECK(after.ctr[XTX_CTR_DROP] == before.ctr[XTX_CTR_DROP] + 1, "%s: drop counter",
		      cases[i].name);
	}
	CHECK(counter_value(0) == c0, "a dropped frame changed state");
}

enum hmangle { H_VERSION, H_NOPS_ZERO, H_NOPS_OVER, H_NOPS_PAST, H_RESERVED, H_CLIENT, H_REQ0,
	       H_UNKNOWN_OP, H_NOP_OP, H_HIGH_OP, H_VLEN, H_TABLE };

/* Sound headers with bad content: an error reply, and nothing executed. */
static void test_error_replies(void)
{
	static const struct {
		const char *name; enum hmangle m; __u8 status; __u32 counter; int bad_op;
	} cases[] = {
		{ "bad version", H_VERSION, XTX_ST_BAD_VERSION, XTX_CTR_BAD_VERSION, -1 },
		{ "zero ops", H_NOPS_ZERO, XTX_ST_MALFORMED, XTX_CTR_MALFORMED, -1 },
		{ "17 ops", H_NOPS_OVER, XTX_ST_MALFORMED, XTX_CTR_MALFORMED, -1 },
		{ "op count past packet", H_NOPS_PAST, XTX_ST_MALFORMED, XTX_CTR_MALFORMED, -1 },
		{ "reserved bits", H_RESERVED, XTX_ST_MALFORMED, XTX_CTR_MALFORMED, -1 },
		{ "client over limit", H_CLIENT, XTX_ST_BAD_CLIENT, XTX_CTR_BAD_CLIENT, -1 },
		{ "request id 0", H_REQ0, XTX_ST_BAD_CLIENT, XTX_CTR_BAD_CLIENT, -1 },
		{ "unknown opcode", H_UNKNOWN_OP, XTX_ST_UNKNOWN_OP, XTX_CTR_BAD_OP, 2 },
		{ "nop opcode", H_NOP_OP, XTX_ST_UNKNOWN_OP, XTX_CTR_BAD_OP, 1 },
		{ "opcode 200", H_HIGH_OP, XTX_ST_UNKNOWN_OP, XTX_CTR_BAD_OP, 2 },
		{ "value too long", H_VLEN, XTX_ST_BAD_ARG, XTX_CTR_BAD_OP, 2 },
		{ "table out of range", H_TABLE, XTX_ST_BAD_ARG, XTX_CTR_BAD_OP, 1 },
	};
	struct xtx_stats before, after;
	unsigned int i;
	int nops, j;
	struct run r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u64 c0 = counter_value(0);

		/* op 0 adds to counter 0: executing anything would show */
		make_req(&r, 2, 2000 + i, 3, XTX_OP_COUNTER_ADD);
		for (j = 0; j < 3; j++)
			in_op(&r, j)->key = 0;
		nops = 3;
		switch (cases[i].m) {
		case H_VERSION: in_hdr(&r)->version = 9; break;
		case H_NOPS_ZERO: in_hdr(&r)->nops = 0; nops = 0; break;
		case H_NOPS_OVER:
			make_req(&r, 2, 2000 + i, XTX_MAX_OPS, XTX_OP_COUNTER_ADD);
			in_hdr(&r)->nops = XTX_MAX_OPS + 1;
			nops = XTX_MAX_OPS;
			break;
		case H_NOPS_PAST: in_hdr(&r)->nops = 4; break;
		case H_RESERVED: in_hdr(&r)->reserved = 1; break;
		case H_CLIENT: in_hdr(&r)->client_id = TEST_MAX_CLIENTS; break;
		case H_REQ0: in_hdr(&r)->req_id = 0; break;
		case H_UNKNOWN_OP: in_op(&r, 2)->opcode = 63; break;
		case H_NOP_OP: in_op(&r, 1)->opcode = XTX_OP_NOP; break;
		case H_HIGH_OP: in_op(&r, 2)->opcode = 200; break;
		case H_VLEN: in_op(&r, 2)->vlen = XTX_VALUE_INLINE + 1; break;
		case H_TABLE: in_op(&r, 1)->table = XTX_MAX_TABLES; break;
		}
		read_stats(&before);
		run(&r);
		read_stats(&after);
		check_reply_framing(&r);
		CHECK(out_hdr(&r)->status == cases[i].status, "%s: packet status %u, want %u",
		      cases[i].name, out_hdr(&r)->status, cases[i].status);
		for (j = 0; j < nops; j++) {
			__u8 want = j == cases[i].bad_op ? cases[i].status : XTX_ST_NOT_EXECUTED;

			CHECK(out_op(&r, j)->status == want, "%s: op %d status %u, want %u",
			      cases[i].name, j, out_op(&r, j)->status, want);
		}
		CHECK(after.ctr[cases[i].counter] == before.ctr[cases[i].counter] + 1,
		      "%s: counter", cases[i].name);
		CHECK(after.ctr[XTX_CTR_OPS] == before.ctr[XTX_CTR_OPS], "%s: ops ran",
		      cases[i].name);
		CHECK(counter_value(0) == c0, "%s: state changed", cases[i].name);
	}
}

enum amangle { A_TRAILING, A_OFF, A_SHORT_WRITE, A_CAP_OVER, A_NO_VALUE_OP, A_PAST_REQUEST,
	       A_READ_LEN, A_VLEN, A_GAP, A_DELETE };

/*
 * A value area that is not as proto.h lays it out refuses the packet
 * before anything runs (op 0 adds to a counter: running it would show).
 */
static void test_value_area_refusals(void)
{
	static const struct { const char *name; enum amangle m; __u8 status; int bad_op; } cases[] = {
		{ "bytes after the ops, no area op", A_TRAILING, XTX_ST_MALFORMED, -1 },
		{ "area not where the tiling puts it", A_OFF, XTX_ST_MALFORMED, -1 },
		{ "a gap between two areas", A_GAP, XTX_ST_MALFORMED, -1 },
		{ "request over XTX_MAX_REQUEST", A_PAST_REQUEST, XTX_ST_MALFORMED, -1 },
		{ "area write of a value that fits the slot", A_SHORT_WRITE, XTX_ST_BAD_ARG, 1 },
		{ "area over XTX_VALUE_MAX", A_CAP_OVER, XTX_ST_BAD_ARG, 1 },
		{ "area on an op without a value", A_NO_VALUE_OP, XTX_ST_BAD_ARG, 1 },
		{ "read room with a length", A_READ_LEN, XTX_ST_BAD_ARG, 1 },
		{ "area op with a slot length too", A_VLEN, XTX_ST_BAD_ARG, 1 },
		{ "area on a delete", A_DELETE, XTX_ST_BAD_ARG, 1 },
	};
	unsigned int i;
	struct run r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u8 payload[PKT_MAX] __attribute__((aligned(8))) = {};
		struct xtx_op *ops;
		__u64 c0 = counter_value(0);
		size_t len;
		int j;

		xtx_msg_init(payload, 2, 93000 + i);
		xtx_msg_add(payload, XTX_OP_COUNTER_ADD, 0, 0)->version = 1;
		xtx_msg_add(payload, XTX_OP_UPDATE, 0, 5)->txn = xtx_txn_make(2, 1);
		xtx_msg_add(payload, XTX_OP_GET, 0, 6);
		ops = xtx_msg_ops(payload);
		xtx_msg_set_area(&ops[1], 100, 100);
		xtx_msg_set_area(&ops[2], 200, 0);
		switch (cases[i].m) {
		case A_TRAILING:
			ops[1].flags = ops[2].flags = 0;
			break;
		case A_SHORT_WRITE: xtx_msg_set_area(&ops[1], 100, XTX_VALUE_INLINE); break;
		case A_CAP_OVER:
			/* alone, so the request stays under XTX_MAX_REQUEST */
			xtx_msg_set_area(&ops[1], XTX_VALUE_MAX + 1, 100);
			ops[2].flags = 0;
			break;
		case A_NO_VALUE_OP: ops[1].opcode = XTX_OP_UNLOCK_EXCL; break;
		case A_READ_LEN:
			ops[1].opcode = XTX_OP_READ;
			break;
		case A_VLEN: break;
		case A_DELETE: ops[1].opcode = XTX_OP_COMMIT_BACKUP; ops[1].flags |= XTX_OPF_DELETE; break;
		default: break;
		}
		len = xtx_msg_finish(payload);
		switch (cases[i].m) {
		case A_TRAILING: len += 8; break;
		case A_OFF: ((struct xtx_ext *)ops[1].value)->off += 8; break;
		case A_GAP:
			((struct xtx_ext *)ops[2].value)->off += 8;
			len += 8;
			break;
		case A_PAST_REQUEST:
			xtx_msg_set_area(&ops[2], XTX_VALUE_MAX, 0);
			len = xtx_msg_finish(payload) + 8 * 40;
			xtx_msg_set_area(&ops[1], 100 + 8 * 40, 100);
			len = xtx_msg_finish(payload);
			break;
		case A_VLEN: ops[1].vlen = 1; break;
		default: break;
		}
		r.in_len = pkt_build(r.in, &pkt_default_addrs, payload, len);
		run(&r);
		CHECK(r.retval == XDP_TX, "%s: verdict %d", cases[i].name, r.retval);
		CHECK(out_hdr(&r)->status == cases[i].status, "%s: packet status %u, want %u",
		      cases[i].name, out_hdr(&r)->status, cases[i].status);
		for (j = 0; j < 3; j++) {
			__u8 want = j == cases[i].bad_op ? cases[i].status : XTX_ST_NOT_EXECUTED;

			CHECK(out_op(&r, j)->status == want, "%s: op %d status %u, want %u",
			      cases[i].name, j, out_op(&r, j)->status, want);
		}
		CHECK(counter_value(0) == c0, "%s: state changed", cases[i].name);
	}
}

static struct xtx_op *counter_add(struct run *r, __u32 client, __u64 req, __u32 idx,
				  __u64 delta)
{
	make_req(r, client, req, 1, XTX_OP_COUNTER_ADD);
	in_op(r, 0)->key = idx;
	in_op(r, 0)->version = delta;
	run(r);
	return out_op(r, 0);
}

/* A retransmission gets the original answer and runs nothing twice. */
static void test_dedupe(void)
{
	const __u32 idx = 7, client = 3;
	__u64 c0 = counter_value(idx);
	struct xtx_op *op;
	struct run r;

	op = counter_add(&r, client, 100, idx, 5);
	CHECK(op->status == XTX_ST_OK && op->version == c0 + 5, "first add: %llu",
	      (unsigned long long)op->version);
	CHECK(!(out_hdr(&r)->flags & XTX_F_REPLAYED), "first answer marked replayed");

	op = counter_add(&r, client, 100, idx, 5);
	CHECK(op->status == XTX_ST_OK && op->version == c0 + 5, "duplicate answered %llu",
	      (unsigned long long)op->version);
	CHECK(out_hdr(&r)->flags & XTX_F_REPLAYED, "duplicate not marked replayed");
	CHECK(counter_value(idx) == c0 + 5, "duplicate executed again");

	op = counter_add(&r, client, 101, idx, 5);
	CHECK(op->version == c0 + 10, "next request");
	op = counter_add(&r, client, 100, idx, 5);
	CHECK(op->version == c0 + 5 && counter_value(idx) == c0 + 10, "old duplicate in window");

	/* another client's request ids are its own */
	op = counter_add(&r, client + 1, 100, idx, 1);
	CHECK(op->status == XTX_ST_OK && op->version == c0 + 11, "other client, same id");

	/* 116 reuses 100's slot: 100 is now older than the window */
	op = counter_add(&r, client, 100 + XTX_DEDUPE_WINDOW, idx, 5);
	CHECK(op->version == c0 + 16, "slot reuse");
	op = counter_add(&r, client, 100, idx, 5);
	CHECK(out_hdr(&r)->status == XTX_ST_STALE && op->status == XTX_ST_NOT_EXECUTED,
	      "stale request: packet %u op %u", out_hdr(&r)->status, op->status);
	CHECK(counter_value(idx) == c0 + 16, "stale request executed");
}

/*
 * A claim resets only the results of the request's own ops: a duplicate
 * that carries more ops than the request it repeats must not be answered
 * from an older request's results left past them, nor run anything.
 */
static void test_dedupe_longer_duplicate(void)
{
	const __u32 client = 10, idx = 14;
	const __u64 old = 700, cur = old + XTX_DEDUPE_WINDOW;
	__u64 c0 = counter_value(idx);
	struct run r;
	int i, stale = 0;

	/* an older request fills all sixteen results of the slot */
	make_req(&r, client, old, XTX_MAX_OPS, XTX_OP_COUNTER_ADD);
	for (i = 0; i < XTX_MAX_OPS; i++) {
		in_op(&r, i)->key = idx;
		in_op(&r, i)->version = 1;
	}
	run(&r);
	for (i = 0; i < XTX_MAX_OPS; i++)
		stale += out_op(&r, i)->status != XTX_ST_OK;
	CHECK(!stale && counter_value(idx) == c0 + XTX_MAX_OPS, "sixteen adds: %d not OK", stale);

	/* the slot's next request has one op */
	CHECK(counter_add(&r, client, cur, idx, 1)->status == XTX_ST_OK, "one-op request");

	/* a "duplicate" of it with sixteen ops: only the first was ever run */
	make_req(&r, client, cur, XTX_MAX_OPS, XTX_OP_COUNTER_ADD);
	for (i = 0; i < XTX_MAX_OPS; i++) {
		in_op(&r, i)->key = idx;
		in_op(&r, i)->version = 1;
	}
	run(&r);
	CHECK(out_hdr(&r)->flags & XTX_F_REPLAYED, "duplicate not marked replayed");
	CHECK(out_op(&r, 0)->status == XTX_ST_OK, "its recorded op: status %u",
	      out_op(&r, 0)->status);
	for (i = 1, stale = 0; i < XTX_MAX_OPS; i++)
		stale += out_op(&r, i)->status != XTX_ST_NONE;
	CHECK(!stale, "%d ops past the request's own answered from an older record", stale);
	CHECK(counter_value(idx) == c0 + XTX_MAX_OPS + 1, "the duplicate ran: counter %llu",
	      (unsigned long long)(counter_value(idx) - c0));
}

/* The same request still executing elsewhere answers RETRY. */
static void test_dedupe_in_flight(void)
{
	const __u32 client = 5, idx = 9;
	struct xtx_dedupe_slot slot = {};
	__u64 c0 = counter_value(idx);
	__u32 key = client * XTX_DEDUPE_WINDOW + (300 & (XTX_DEDUPE_WINDOW - 1));
	struct xtx_op *op;
	struct run r;

	slot.word = xtx_dedupe_word(300, XTX_DEDUPE_BUSY);
	CHECK(!bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_dedupe), &key, &slot, 0), "seed");
	op = counter_add(&r, client, 300, idx, 1);
	CHECK(out_hdr(&r)->status == XTX_ST_RETRY && op->status == XTX_ST_NOT_EXECUTED,
	      "busy duplicate: packet %u", out_hdr(&r)->status);
	CHECK(counter_value(idx) == c0, "busy duplicate executed");
}

/* A lost reply, then the retransmission: executed once, answered with the original. */
static void test_lost_reply_then_retransmit(void)
{
	struct xtx_runtime rt = { .drop_reply_ppm = 1000000 };
	int rt_fd = bpf_map__fd(skel->maps.xtx_runtime);
	const __u32 idx = 11;
	__u64 c0 = counter_value(idx);
	__u32 zero = 0;
	struct xtx_op *op;
	struct run r;

	bpf_map_update_elem(rt_fd, &zero, &rt, 0);
	counter_add(&r, 6, 500, idx, 3);
	CHECK(r.retval == XDP_DROP, "reply not dropped");
	CHECK(counter_value(idx) == c0 + 3, "request not executed");
	memset(&rt, 0, sizeof(rt));
	bpf_map_update_elem(rt_fd, &zero, &rt, 0);
	op = counter_add(&r, 6, 500, idx, 3);
	CHECK(r.retval == XDP_TX && op->status == XTX_ST_OK && op->version == c0 + 3,
	      "retransmission answered %llu", (unsigned long long)op->version);
	CHECK(counter_value(idx) == c0 + 3, "retransmission executed again");

	rt.drop_request_ppm = 1000000;
	bpf_map_update_elem(rt_fd, &zero, &rt, 0);
	counter_add(&r, 6, 501, idx, 3);
	CHECK(r.retval == XDP_DROP && counter_value(idx) == c0 + 3, "lost request executed");
	memset(&rt, 0, sizeof(rt));
	bpf_map_update_elem(rt_fd, &zero, &rt, 0);
}

/* Reads run again on a duplicate; only state-changing ops replay. */
static void test_mixed_packet_duplicate(void)
{
	uint8_t payload[PKT_MAX];
	struct xtx_stats s1, s2;
	struct xtx_op *op;
	struct run r;
	__u64 c0 = counter_value(12);

	xtx_msg_init(payload, 7, 600);
	xtx_msg_add(payload, XTX_OP_PING, 0, 0);
	op = xtx_msg_add(payload, XTX_OP_COUNTER_ADD, 0, 12);
	op->version = 2;
	xtx_msg_add(payload, XTX_OP_PING, 0, 0);
	r.in_len = pkt_build(r.in, &pkt_default_addrs, payload, xtx_msg_len(3));
	run(&r);
	CHECK(out_op(&r, 1)->version == c0 + 2, "add");
	read_stats(&s1);
	run(&r);
	read_stats(&s2);
	CHECK(out_op(&r, 1)->version == c0 + 2 && counter_value(12) == c0 + 2, "add replayed");
	CHECK(s2.op[XTX_OP_PING][XTX_ST_OK] == s1.op[XTX_OP_PING][XTX_ST_OK] + 2,
	      "pings not re-executed on the duplicate");
	CHECK(s2.op[XTX_OP_COUNTER_ADD][XTX_ST_OK] == s1.op[XTX_OP_COUNTER_ADD][XTX_ST_OK],
	      "the add counted as executed again");
	CHECK(out_op(&r, 2)->status == XTX_ST_OK, "third op");
}

/* Runs the same packet on both servers: same verdict, same reply, byte for byte. */
static void run_both(struct xtx_xdp *a, struct xtx_xdp *b, uint8_t *payload, int nops,
		     struct run *ra)
{
	static struct run rb;

	ra->in_len = pkt_build(ra->in, &pkt_default_addrs, payload, xtx_msg_len(nops));
	rb.in_len = pkt_build(rb.in, &pkt_default_addrs, payload, xtx_msg_len(nops));
	CHECK(run_on(a, ra) == 0 && run_on(b, &rb) == 0, "test runs");
	CHECK(ra->retval == rb.retval && ra->out_len == rb.out_len &&
	      !memcmp(ra->out, rb.out, ra->out_len), "warm and unwarmed replies differ");
}

/*
 * Both servers' KV buckets and lock slots hold the same state: every byte
 * but what is a clock read (a slot's grant time, the token of a bucket
 * held for xtxd: both or neither held so).
 */
static void check_same_tables(struct xtx_xdp *a, struct xtx_xdp *b)
{
	int kva = bpf_map__fd(a->maps.xtx_kv), kvb = bpf_map__fd(b->maps.xtx_kv);
	int la = bpf_map__fd(a->maps.xtx_locks), lb = bpf_map__fd(b->maps.xtx_locks);
	unsigned int differ = 0;
	__u32 i;

	for (i = 0; i < test_kv_buckets; i++) {
		struct xtx_kv_bucket x, y;

		if (bpf_map_lookup_elem(kva, &i, &x) || bpf_map_lookup_elem(kvb, &i, &y)) {
			differ++;
			continue;
		}
		if ((x.lock & 1) && (y.lock & 1))
			x.lock = y.lock = 1;
		differ += memcmp(&x, &y, sizeof(x)) != 0;
	}
	for (i = 0; i < TEST_LOCK_SLOTS; i++) {
		struct xtx_lock_slot x, y;

		if (bpf_map_lookup_elem(la, &i, &x) || bpf_map_lookup_elem(lb, &i, &y)) {
			differ++;
			continue;
		}
		x.granted_ns = y.granted_ns = 0;
		differ += memcmp(&x, &y, sizeof(x)) != 0;
	}
	CHECK(differ == 0, "%u buckets or lock slots differ between warm and unwarmed", differ);
}

/* The n-th key after `after` whose bucket is key's: keys that share one bucket. */
static __u64 same_bucket_key(__u64 key, __u64 after)
{
	__u32 b = xtx_bucket_of(xtx_hash(0, key), test_kv_buckets);

	while (xtx_bucket_of(xtx_hash(0, ++after), test_kv_buckets) != b)
		;
	return after;
}

/*
 * The warm pass (bpf/lib/warm.h) only loads lines: a server with it and
 * one without answer a transaction's packets identically.
 */
static void test_warm_pass_changes_nothing(void)
{
	__u64 txn = xtx_txn_make(3, 1), tok_x, tok_s, k;
	struct xtx_xdp *warm, *cold;
	uint8_t payload[PKT_MAX];
	struct xtx_op *op;
	static struct run r;
	int i;

	warm = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
	test_no_warm = true;
	cold = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
	test_no_warm = false;
	CHECK(warm && cold, "both programs load");
	if (!warm || !cold)
		goto out;
	xtx_msg_init(payload, 3, 1);
	for (i = 1; i <= 6; i++) {
		op = xtx_msg_add(payload, XTX_OP_INSERT, 0, 500 + i);
		op->vlen = 8;
		memcpy(op->value, &i, sizeof(i));
	}
	run_both(warm, cold, payload, 6, &r);
	CHECK(out_op(&r, 5)->status == XTX_ST_OK, "inserted");

	xtx_msg_init(payload, 3, 2);
	xtx_msg_add(payload, XTX_OP_LOCK_EXCL, 0, 501)->txn = txn;
	xtx_msg_add(payload, XTX_OP_LOCK_SHARED, 0, 502)->txn = txn;
	xtx_msg_add(payload, XTX_OP_READ, 0, 503)->txn = txn;
	xtx_msg_add(payload, XTX_OP_OCC_VALIDATE, 0, 504)->txn = txn;
	xtx_msg_add(payload, XTX_OP_GET, 0, 505);
	xtx_msg_add(payload, XTX_OP_READ, 0, 599)->txn = txn;
	run_both(warm, cold, payload, 6, &r);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK && out_op(&r, 1)->status == XTX_ST_OK &&
	      out_op(&r, 2)->status == XTX_ST_OK && out_op(&r, 5)->status == XTX_ST_NOT_FOUND,
	      "the transaction's ops answered");
	tok_x = out_op(&r, 0)->token;
	tok_s = out_op(&r, 1)->token;

	xtx_msg_init(payload, 3, 3);
	op = xtx_msg_add(payload, XTX_OP_UNLOCK_EXCL, 0, 501);
	op->txn = txn;
	op->token = tok_x;
	op = xtx_msg_add(payload, XTX_OP_UNLOCK_SHARED, 0, 502);
	op->txn = txn;
	op->token = tok_s;
	run_both(warm, cold, payload, 2, &r);
	CHECK(!(out_op(&r, 0)->flags & XTX_LOCKF_STALE) && !(out_op(&r, 1)->flags & XTX_LOCKF_STALE),
	      "released with the grants' tokens");
	check_same_tables(warm, cold);

	/* half the ways of 501's bucket taken first, so the packet below fills the rest */
	xtx_msg_init(payload, 3, 4);
	for (i = 0, k = 1000000; i < XTX_KV_WAYS - 4; i++) {
		k = same_bucket_key(501, k);
		xtx_msg_add(payload, XTX_OP_INSERT, 0, k)->vlen = 1;
	}
	run_both(warm, cold, payload, XTX_KV_WAYS - 4, &r);
	check_same_tables(warm, cold);

	/* a full packet on one bucket: inserts past its ways, reads, updates, deletes, locks */
	xtx_msg_init(payload, 3, 5);
	for (i = 0, k = 501; i < 6; i++) {
		k = same_bucket_key(501, k);
		op = xtx_msg_add(payload, XTX_OP_INSERT, 0, k);
		op->vlen = XTX_VALUE_INLINE;
		memset(op->value, 0x40 + i, XTX_VALUE_INLINE);
	}
	xtx_msg_add(payload, XTX_OP_GET, 0, 501);
	xtx_msg_add(payload, XTX_OP_GET, 0, same_bucket_key(501, 501));
	xtx_msg_add(payload, XTX_OP_GET, 0, 506);
	op = xtx_msg_add(payload, XTX_OP_UPDATE, 0, 503);
	op->vlen = 3;
	op = xtx_msg_add(payload, XTX_OP_UPDATE, 0, same_bucket_key(501, 501));
	op->vlen = 40;
	xtx_msg_add(payload, XTX_OP_DELETE, 0, 504);
	xtx_msg_add(payload, XTX_OP_DELETE, 0, 9999);
	op = xtx_msg_add(payload, XTX_OP_LOCK_EXCL, 0, 505);
	op->txn = txn;
	op->flags = XTX_OPF_NO_VALUE;
	xtx_msg_add(payload, XTX_OP_READ, 0, 502)->txn = txn;
	xtx_msg_add(payload, XTX_OP_READ, 0, 505)->txn = txn;
	run_both(warm, cold, payload, XTX_MAX_OPS, &r);
	/* the bucket went to xtxd (not running) at its ninth key: what followed there waits */
	for (i = 0, k = 0; i < XTX_MAX_OPS; i++)
		k += out_op(&r, i)->status == XTX_ST_DEFERRED;
	CHECK(out_op(&r, 0)->status == XTX_ST_OK && out_op(&r, 14)->status == XTX_ST_OK &&
	      (out_op(&r, 15)->flags & XTX_LOCKF_MINE) && k > 0,
	      "the full packet ran, part of it deferred: %u %u %#x, %llu deferred",
	      out_op(&r, 0)->status, out_op(&r, 14)->status, out_op(&r, 15)->flags,
	      (unsigned long long)k);
	check_same_tables(warm, cold);
out:
	xtx_xdp__destroy(warm);
	xtx_xdp__destroy(cold);
}

static void test_echo_mode(void)
{
	struct xtx_xdp *echo = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, true);
	__u32 idx = 0;
	__u64 v = 1;
	struct run r;

	CHECK(echo, "echo-mode program loads");
	if (!echo)
		return;
	make_req(&r, 1, 1, 4, XTX_OP_COUNTER_ADD);
	run_on(echo, &r);
	check_reply_framing(&r);
	CHECK(out_op(&r, 3)->status == XTX_ST_OK && out_op(&r, 3)->version == in_op(&r, 3)->version,
	      "echo answers OK untouched");
	bpf_map_lookup_elem(bpf_map__fd(echo->maps.xtx_counters), &idx, &v);
	CHECK(v == 0, "echo mode touched state");
	xtx_xdp__destroy(echo);
}

/* Complexity: every size at its maximum must still pass the verifier. */
static void test_verifier_at_limits(void)
{
	struct xtx_xdp *big = load_server(XTX_MAX_CLIENTS_LIMIT, XTX_LOCK_SLOTS_MAX, false);

	CHECK(big, "program with max_clients=%u does not load", XTX_MAX_CLIENTS_LIMIT);
	xtx_xdp__destroy(big);
}

/*
 * Random and mutated frames: the verdict is always defined, a passed frame
 * is untouched, and the counters move exactly as the replies say.
 */
static void test_fuzz(void)
{
	__u64 expect[XTX_COUNTERS];
	struct run r;
	unsigned int i, j, n = 20000, tx = 0, pass = 0, drop = 0;
	__u32 k;

	srand(42);
	for (k = 0; k < XTX_COUNTERS; k++)
		expect[k] = counter_value(k);
	for (i = 0; i < n; i++) {
		int kind = rand() % 4;

		if (kind == 0) {
			r.in_len = 14 + rand() % 200;
			for (j = 0; j < r.in_len; j++)
				r.in[j] = rand();
			if (rand() % 2) {	/* random bytes behind valid headers */
				make_req(&r, rand() % 70, rand(), 1 + rand() % 4, rand() % 5);
				for (j = PKT_PAYLOAD_OFF; j < r.in_len; j++)
					r.in[j] = rand();
			}
		} else {
			make_req(&r, rand() % (TEST_MAX_CLIENTS + 4), 1 + rand() % 64,
				 1 + rand() % XTX_MAX_OPS, 1 + rand() % 3);
			for (j = 0; j < in_hdr(&r)->nops; j++) {
				in_op(&r, j)->key = rand() % XTX_COUNTERS;
				in_op(&r, j)->version = rand() % 100;
			}
			for (j = rand() % 8; j > 0; j--)
				r.in[rand() % r.in_len] ^= 1 << (rand() % 8);
			if (kind == 3)	/* cut anywhere past the Ethernet header */
				r.in_len = ETH_HLEN + rand() % (r.in_len - ETH_HLEN + 1);
		}
		if (run(&r)) {
			CHECK(0, "fuzz case %u: test run failed: %s", i, strerror(errno));
			continue;
		}
		if (r.retval == XDP_PASS) {
			pass++;
			CHECK(!memcmp(r.in, r.out, r.in_len), "fuzz %u: passed frame modified", i);
		} else if (r.retval == XDP_DROP) {
			drop++;
		} else if (r.retval == XDP_TX) {
			struct xtx_hdr *h = out_hdr(&r);

			tx++;
			CHECK(h->flags & XTX_F_REPLY, "fuzz %u: reply flag", i);
			if (h->status != XTX_ST_OK || (h->flags & XTX_F_REPLAYED))
				continue;
			for (j = 0; j < h->nops && j < XTX_MAX_OPS; j++) {
				struct xtx_op *op = out_op(&r, j);

				if (op->opcode == XTX_OP_COUNTER_ADD && op->status == XTX_ST_OK)
					expect[op->key & (XTX_COUNTERS - 1)] = op->version;
			}
		} else {
			CHECK(0, "fuzz %u: verdict %d", i, r.retval);
		}
	}
	for (k = 0; k < XTX_COUNTERS; k++)
		CHECK(counter_value(k) == expect[k], "counter %u: %llu, replies said %llu", k,
		      (unsigned long long)counter_value(k), (unsigned long long)expect[k]);
	CHECK(tx && pass && drop, "fuzz reached every verdict (tx %u pass %u drop %u)", tx, pass,
	      drop);
}

/*
 * The allowlist: with it on, a source outside every prefix is dropped and
 * counted, and nothing it asked changes state; inside a prefix it is served.
 */
static void test_allowlist(void)
{
	int rt_fd = bpf_map__fd(skel->maps.xtx_runtime), fd = bpf_map__fd(skel->maps.xtx_allow);
	struct xtx_allow_key other = { .prefixlen = 16, .addr = htonl(0x0a4e0000) };	/* 10.78/16 */
	struct xtx_allow_key ours = { .prefixlen = 24, .addr = htonl(0x0a4d0000) };	/* 10.77.0/24 */
	struct xtx_runtime rt, saved;
	struct xtx_stats before, after;
	const __u32 idx = 13;
	__u64 c0 = counter_value(idx);
	__u32 zero = 0;
	__u8 one = 1;
	struct run r;

	bpf_map_lookup_elem(rt_fd, &zero, &saved);
	rt = saved;
	rt.flags |= XTX_RTF_ALLOWLIST;
	bpf_map_update_elem(rt_fd, &zero, &rt, 0);
	bpf_map_update_elem(fd, &other, &one, BPF_ANY);
	read_stats(&before);
	counter_add(&r, 61, 90000, idx, 5);		/* from 10.77.0.1: not listed */
	read_stats(&after);
	CHECK(r.retval == XDP_DROP, "a source outside the allowlist is dropped (verdict %d)",
	      r.retval);
	CHECK(after.ctr[XTX_CTR_NOT_ALLOWED] == before.ctr[XTX_CTR_NOT_ALLOWED] + 1,
	      "and counted as not_allowed");
	CHECK(counter_value(idx) == c0, "and changes nothing");
	CHECK(after.ctr[XTX_CTR_OPS] == before.ctr[XTX_CTR_OPS], "no op ran");

	bpf_map_update_elem(fd, &ours, &one, BPF_ANY);
	counter_add(&r, 61, 90001, idx, 5);
	CHECK(r.retval == XDP_TX && counter_value(idx) == c0 + 5,
	      "a listed prefix is served (verdict %d)", r.retval);
	/* removed as xtxctl allow del does: the prefix, then a new generation */
	bpf_map_delete_elem(fd, &ours);
	rt.flags += 1u << XTX_RTF_ALLOW_GEN_SHIFT;
	bpf_map_update_elem(rt_fd, &zero, &rt, 0);
	counter_add(&r, 61, 90003, idx, 5);
	CHECK(r.retval == XDP_DROP && counter_value(idx) == c0 + 5,
	      "once removed, the sender served a moment ago is dropped (verdict %d)", r.retval);
	bpf_map_delete_elem(fd, &other);
	bpf_map_update_elem(rt_fd, &zero, &saved, 0);
	counter_add(&r, 61, 90004, idx, 1);
	CHECK(r.retval == XDP_TX && counter_value(idx) == c0 + 6,
	      "off again: everyone is served (verdict %d, +%llu)", r.retval,
	      (unsigned long long)(counter_value(idx) - c0));
}

/* One COUNTER_ADD of 1 to counter idx naming epoch e; the reply's status and epoch. */
static void epoch_add(struct run *r, __u64 req, __u32 idx, __u16 e)
{
	make_req(r, 63, req, 1, XTX_OP_COUNTER_ADD);
	in_op(r, 0)->key = idx;
	in_op(r, 0)->version = 1;
	in_hdr(r)->epoch = e;
	run(r);
}

/* The epoch map: what a server of a cluster in ZooKeeper serves, and for how long. */
static void test_epoch_lease(void)
{
	int fd = bpf_map__fd(skel->maps.xtx_epoch);
	struct xtx_epoch_lease el = { .epoch = 5 }, none = {};
	struct xtx_stats before, after;
	const __u32 idx = 15;
	__u64 c0 = counter_value(idx);
	struct timespec ts;
	__u32 zero = 0;
	struct run r;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	el.until_ns = (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec + 60000000000ull;
	bpf_map_update_elem(fd, &zero, &el, 0);
	read_stats(&before);
	epoch_add(&r, 92000, idx, 5);
	CHECK(r.retval == XDP_TX && out_hdr(&r)->status == XTX_ST_OK &&
	      counter_value(idx) == c0 + 1, "a request of the epoch served is served");
	epoch_add(&r, 92001, idx, 0);
	CHECK(out_hdr(&r)->status == XTX_ST_EPOCH && out_hdr(&r)->epoch == 5 &&
	      out_op(&r, 0)->status == XTX_ST_NOT_EXECUTED && counter_value(idx) == c0 + 1,
	      "epoch 0 is refused EPOCH with the server's epoch (%u), nothing run",
	      out_hdr(&r)->epoch);
	epoch_add(&r, 92002, idx, 6);
	CHECK(out_hdr(&r)->status == XTX_ST_EPOCH && counter_value(idx) == c0 + 1,
	      "so is a newer epoch");
	el.until_ns = 1;	/* the lease ran out */
	bpf_map_update_elem(fd, &zero, &el, 0);
	epoch_add(&r, 92003, idx, 5);
	CHECK(out_hdr(&r)->status == XTX_ST_EPOCH && out_hdr(&r)->epoch == XTX_EPOCH_FENCED &&
	      counter_value(idx) == c0 + 1,
	      "past its lease the server serves no epoch (answers %u)", out_hdr(&r)->epoch);
	el.epoch = XTX_EPOCH_FENCED;
	el.until_ns = 0;
	bpf_map_update_elem(fd, &zero, &el, 0);
	epoch_add(&r, 92004, idx, XTX_EPOCH_FENCED);
	CHECK(out_hdr(&r)->status == XTX_ST_EPOCH && counter_value(idx) == c0 + 1,
	      "a fenced server serves nobody, even a request naming the fenced epoch");
	read_stats(&after);
	CHECK(after.ctr[XTX_CTR_WRONG_EPOCH] == before.ctr[XTX_CTR_WRONG_EPOCH] + 4,
	      "every refusal counted as wrong_epoch (%llu)",
	      (unsigned long long)(after.ctr[XTX_CTR_WRONG_EPOCH] -
				   before.ctr[XTX_CTR_WRONG_EPOCH]));
	bpf_map_update_elem(fd, &zero, &none, 0);
	epoch_add(&r, 92005, idx, 0);
	CHECK(out_hdr(&r)->status == XTX_ST_OK && counter_value(idx) == c0 + 2,
	      "a static server (epoch 0, no lease) serves epoch 0");
}

int main(void)
{
	xtx_log_libbpf();
	skel = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
	if (!skel) {
		printf("FAIL: load_server (%s)\n", strerror(errno));
		return 1;
	}
	RUN_CASE(test_ping_one_op);
	RUN_CASE(test_ping_sixteen_ops);
	RUN_CASE(test_stats_op_matches_map);
	RUN_CASE(test_pass_through);
	RUN_CASE(test_drops);
	RUN_CASE(test_error_replies);
	RUN_CASE(test_value_area_refusals);
	RUN_CASE(test_dedupe);
	RUN_CASE(test_dedupe_longer_duplicate);
	RUN_CASE(test_dedupe_in_flight);
	RUN_CASE(test_lost_reply_then_retransmit);
	RUN_CASE(test_mixed_packet_duplicate);
	RUN_CASE(test_echo_mode);
	RUN_CASE(test_warm_pass_changes_nothing);
	RUN_CASE(test_verifier_at_limits);
	RUN_CASE(test_fuzz);
	RUN_CASE(test_allowlist);
	RUN_CASE(test_epoch_lease);
	xtx_xdp__destroy(skel);
	printf("# test_xdp: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
