// SPDX-License-Identifier: GPL-2.0-only
/* Shared fixtures for the XDP unit suites: load a server, run frames, read its maps. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include <xtx/kv.h>
#include "check.h"
#include "harness.h"
#include "stats_read.h"

int check_failed, cases_passed, cases_failed;
struct xtx_xdp *skel;
__u32 test_kv_buckets = 1024;
__u32 test_log_ring = 64;
bool test_no_warm;

struct xtx_xdp *load_server(__u32 max_clients, __u32 lock_slots, bool echo)
{
	struct xtx_xdp *s = xtx_xdp__open();

	if (!s)
		return NULL;
	s->rodata->xtx_max_clients = max_clients;
	s->rodata->xtx_nr_cpus = libbpf_num_possible_cpus();
	s->rodata->xtx_echo_mode = echo;
	s->rodata->xtx_lock_slots = lock_slots;
	s->rodata->xtx_kv_buckets = test_kv_buckets;
	s->rodata->xtx_log_ring = test_log_ring;
	s->rodata->xtx_no_warm = test_no_warm;
	if (bpf_map__set_max_entries(s->maps.xtx_dedupe, max_clients * XTX_DEDUPE_WINDOW) ||
	    bpf_map__set_max_entries(s->maps.xtx_locks, lock_slots) ||
	    bpf_map__set_max_entries(s->maps.xtx_kv, test_kv_buckets) ||
	    bpf_map__set_max_entries(s->maps.xtx_defer_ring,
				     XTX_DEFER_RING * libbpf_num_possible_cpus()) ||
	    bpf_map__set_max_entries(s->maps.xtx_log, test_log_ring * libbpf_num_possible_cpus()) ||
	    bpf_map__set_max_entries(s->maps.xtx_log_cursor, libbpf_num_possible_cpus()) ||
	    xtx_xdp__load(s)) {
		xtx_xdp__destroy(s);
		return NULL;
	}
	return s;
}

/* Runs one frame through prog; the output buffer is reset before every run. */
int run_on(struct xtx_xdp *s, struct run *r)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = r->in, .data_size_in = r->in_len,
		    .data_out = r->out, .data_size_out = sizeof(r->out), .repeat = 1);
	int err;

	memset(r->out, 0, sizeof(r->out));
	err = bpf_prog_test_run_opts(bpf_program__fd(s->progs.xtx_xdp), &opts);
	r->retval = opts.retval;
	r->out_len = opts.data_size_out;
	return err;
}

int run(struct run *r)
{
	return run_on(skel, r);
}

/* A request frame from client `client` with id `req` and `nops` ops of `opcode`. */
void make_req(struct run *r, __u32 client, __u64 req, int nops, __u8 opcode)
{
	uint8_t payload[PKT_MAX];
	int i;

	xtx_msg_init(payload, client, req);
	for (i = 0; i < nops; i++) {
		struct xtx_op *op = xtx_msg_add(payload, opcode, 0, i);

		op->version = 0x1122334455667700ull + i;
		op->txn = xtx_txn_make(client, 1);
	}
	r->in_len = pkt_build(r->in, &pkt_default_addrs, payload, xtx_msg_len(nops));
}

struct xtx_hdr *in_hdr(struct run *r)
{
	return (struct xtx_hdr *)(r->in + PKT_PAYLOAD_OFF);
}

struct xtx_hdr *out_hdr(struct run *r)
{
	return (struct xtx_hdr *)(r->out + PKT_PAYLOAD_OFF);
}

struct xtx_op *in_op(struct run *r, int i)
{
	return xtx_msg_ops(in_hdr(r)) + i;
}

struct xtx_op *out_op(struct run *r, int i)
{
	return xtx_msg_ops(out_hdr(r)) + i;
}

void read_stats(struct xtx_stats *st)
{
	memset(st, 0, sizeof(*st));
	CHECK(!xtx_stats_sum(bpf_map__fd(skel->maps.xtx_stats), st), "stats read");
}

__u64 counter_value(__u32 idx)
{
	__u64 v = 0;

	bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_counters), &idx, &v);
	return v;
}

/* Checks the reply frame against its request: swapped addressing, valid checksums. */
void check_reply_framing(struct run *r)
{
	struct ethhdr *ie = (struct ethhdr *)r->in, *oe = (struct ethhdr *)r->out;
	struct iphdr *ii = (struct iphdr *)(r->in + PKT_IP_OFF);
	struct iphdr *oi = (struct iphdr *)(r->out + PKT_IP_OFF);
	struct udphdr *iu = (struct udphdr *)(r->in + PKT_UDP_OFF);
	struct udphdr *ou = (struct udphdr *)(r->out + PKT_UDP_OFF);

	CHECK(r->retval == XDP_TX, "verdict %d, want XDP_TX", r->retval);
	CHECK(r->out_len == r->in_len, "reply length %u, request %u", r->out_len, r->in_len);
	CHECK(!memcmp(oe->h_dest, ie->h_source, 6) && !memcmp(oe->h_source, ie->h_dest, 6),
	      "MAC addresses not swapped");
	CHECK(oe->h_proto == ie->h_proto, "ethertype changed");
	CHECK(oi->saddr == ii->daddr && oi->daddr == ii->saddr, "IP addresses not swapped");
	CHECK(pkt_ip_csum((uint8_t *)oi, sizeof(*oi)) == 0, "IP checksum invalid");
	CHECK(oi->tot_len == ii->tot_len && oi->ttl == ii->ttl && oi->id == ii->id,
	      "IP header changed beyond addresses");
	CHECK(ou->source == iu->dest && ou->dest == iu->source, "UDP ports not swapped");
	CHECK(ou->check == 0, "UDP checksum %#x, want 0", ntohs(ou->check));
	CHECK(ou->len == iu->len, "UDP length changed");
	CHECK(out_hdr(r)->flags & XTX_F_REPLY, "reply flag not set");
	CHECK(out_hdr(r)->req_id == in_hdr(r)->req_id &&
	      out_hdr(r)->client_id == in_hdr(r)->client_id &&
	      out_hdr(r)->nops == in_hdr(r)->nops, "header identity changed");
}

