// SPDX-License-Identifier: GPL-2.0-only
/* Shared fixtures for the XDP unit suites: load a server, run frames, read its maps. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
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

struct xtx_xdp *open_server(__u32 max_clients, __u32 lock_slots, bool echo)
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
	    bpf_map__set_max_entries(s->maps.xtx_log_cursor, libbpf_num_possible_cpus())) {
		xtx_xdp__destroy(s);
		return NULL;
	}
	return s;
}

struct xtx_xdp *load_server(__u32 max_clients, __u32 lock_slots, bool echo)
{
	struct xtx_xdp *s = open_server(max_clients, lock_slots, echo);

	if (s && xtx_xdp__load(s)) {
		xtx_xdp__destroy(s);
		return NULL;
	}
	return s;
}

struct xtx_tc *load_tc_for(struct xtx_xdp *s, bool any_sender)
{
	struct xtx_tc *tc = xtx_tc__open();
	struct bpf_map *m, *mine;

	if (!tc)
		return NULL;
	/* the same configuration as the XDP program's, as xtxd's XTX_SET_RODATA gives both */
	tc->rodata->xtx_tc_any_sender = any_sender;
	tc->rodata->xtx_port = s->rodata->xtx_port;
	tc->rodata->xtx_max_clients = s->rodata->xtx_max_clients;
	tc->rodata->xtx_nr_cpus = s->rodata->xtx_nr_cpus;
	tc->rodata->xtx_kv_buckets = s->rodata->xtx_kv_buckets;
	tc->rodata->xtx_lock_slots = s->rodata->xtx_lock_slots;
	tc->rodata->xtx_value_size = s->rodata->xtx_value_size;
	tc->rodata->xtx_log_ring = s->rodata->xtx_log_ring;
	tc->rodata->xtx_hades_slots = s->rodata->xtx_hades_slots;
	tc->rodata->xtx_hades_bf_bits = s->rodata->xtx_hades_bf_bits;
	tc->rodata->xtx_hades_hashes = s->rodata->xtx_hades_hashes;
	tc->rodata->xtx_hades_lease_ns = s->rodata->xtx_hades_lease_ns;
	tc->rodata->xtx_hades_exact_on = s->rodata->xtx_hades_exact_on;
	/* every map of s, as xtxd's pins share them (the objects' own data sections aside) */
	bpf_object__for_each_map(m, tc->obj) {
		if (bpf_map__is_internal(m))
			continue;
		mine = bpf_object__find_map_by_name(s->obj, bpf_map__name(m));
		if (!mine || bpf_map__reuse_fd(m, bpf_map__fd(mine))) {
			xtx_tc__destroy(tc);
			return NULL;
		}
	}
	if (xtx_tc__load(tc)) {
		xtx_tc__destroy(tc);
		return NULL;
	}
	return tc;
}

int run_tc_on(struct xtx_tc *tc, struct run *r)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = r->in, .data_size_in = r->in_len,
		    .data_out = r->out, .data_size_out = sizeof(r->out), .repeat = 1);
	int err;

	memset(r->out, 0, sizeof(r->out));
	err = bpf_prog_test_run_opts(bpf_program__fd(tc->progs.xtx_tc_egress), &opts);
	r->retval = opts.retval;
	r->out_len = opts.data_size_out;
	return err;
}

void xtxd_reply(const struct run *passed, struct run *reply, __u8 st, __u64 version,
		const struct xtx_fix_entry *fix)
{
	__u8 payload[PKT_MAX] __attribute__((aligned(8))) = {};
	size_t body = passed->out_len - PKT_PAYLOAD_OFF;
	struct xtx_hdr *h = (struct xtx_hdr *)payload;
	struct xtx_op *op = xtx_msg_ops(payload);
	struct xtx_fix_footer ft = { .magic = XTX_FIX_MAGIC, .count = 1, .body_len = body };
	struct pkt_addrs a = pkt_default_addrs;

	reply->in_len = 0;
	if (passed->out_len < PKT_PAYLOAD_OFF + sizeof(*h) + sizeof(*op) ||
	    body + XTX_FIX_TRAILER_LEN(1) > sizeof(payload))
		return;
	memcpy(payload, passed->out + PKT_PAYLOAD_OFF, body);
	h->flags |= XTX_F_REPLY;
	h->reserved = 0;
	h->status = XTX_ST_OK;
	op->status = st;
	op->version = version;
	memcpy(payload + body, fix, sizeof(*fix));
	memcpy(payload + body + sizeof(*fix), &ft, sizeof(ft));
	/* from the server's port, which is how TC egress tells xtxd's replies */
	a.sport = XTX_DEFAULT_PORT;
	a.dport = pkt_default_addrs.sport;
	reply->in_len = pkt_build(reply->in, &a, payload, body + XTX_FIX_TRAILER_LEN(1));
}

void set_leases(struct xtx_xdp *s, __u64 lock_lease_ns, __u64 kv_lease_ns)
{
	struct xtx_runtime rt = {};
	__u32 zero = 0;

	bpf_map_lookup_elem(bpf_map__fd(s->maps.xtx_runtime), &zero, &rt);
	rt.lock_lease_ns = lock_lease_ns;
	rt.kv_lease_ns = kv_lease_ns;
	bpf_map_update_elem(bpf_map__fd(s->maps.xtx_runtime), &zero, &rt, 0);
}

__u64 clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void *map_mmap(const struct bpf_map *m, size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	*len = ((size_t)bpf_map__max_entries(m) * bpf_map__value_size(m) + page - 1) &
	       ~(size_t)(page - 1);
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
	return p == MAP_FAILED ? NULL : p;
}

int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
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

