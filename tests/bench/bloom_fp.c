// SPDX-License-Identifier: GPL-2.0-only
/*
 * HADES filters: false positives per membership probe by filter size and
 * keys per filter (HADES Table IV), and what HADES ops cost inside the XDP
 * program (BPF_PROG_TEST_RUN, as tests/bench/xdp_cost.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include <xtx/hash.h>
#include <xtx/log.h>
#include <xtx/hades.h>
#include "check.h"
#include "harness.h"
#include "log.h"

#define FILTERS 4000
#define PROBES 1000	/* non-member probes per filter */
#define CLIENT 1

static __u64 rng = 0xb100f11e;

static __u64 rnd(void)
{
	rng = xtx_mix64(rng);
	return rng;
}

/* False positives per probe of keys never added, over FILTERS filters of n keys. */
static double fp_rate(__u32 m, __u32 k, __u32 n)
{
	__u64 bf[XTX_HADES_BF_WORDS], hits = 0;
	__u32 f, i;

	for (f = 0; f < FILTERS; f++) {
		memset(bf, 0, sizeof(bf));
		for (i = 0; i < n; i++)
			xtx_hades_bf_add(bf, xtx_hades_bf_hash(0, rnd()), m, k);
		for (i = 0; i < PROBES; i++)
			hits += xtx_hades_bf_test(bf, xtx_hades_bf_hash(0, rnd()), m, k);
	}
	return (double)hits / ((double)FILTERS * PROBES);
}

static void fp_table(__u32 k)
{
	static const __u32 sizes[] = { 256, 512, 1024, 2048 }, keys[] = { 10, 20, 50, 100 };
	unsigned int s, j;

	printf("\nfalse positives per probe, %% (k = %u; theory (1-e^(-kn/m))^k in brackets)\n",
	       k);
	printf("%-10s", "bits");
	for (j = 0; j < 4; j++)
		printf(" %13u keys %4s", keys[j], "");
	printf("\n");
	for (s = 0; s < 4; s++) {
		printf("%-10u", sizes[s]);
		for (j = 0; j < 4; j++)
			printf(" %9.4f [%8.4f]", 100 * fp_rate(sizes[s], k, keys[j]),
			       100 * pow(1 - exp(-(double)k * keys[j] / sizes[s]), k));
		printf("\n");
	}
}

/* ---- ns per op inside XDP ---- */

static __u64 req_id = 1;

static struct xtx_op *add(void *payload, __u8 opcode, __u64 key, __u64 txn, __u32 flags)
{
	struct xtx_op *op = xtx_msg_add(payload, opcode, 0, key);

	op->txn = txn;
	op->flags = flags;
	op->vlen = 8;
	return op;
}

static void frame(struct run *r, const void *payload)
{
	r->in_len = pkt_build(r->in, &pkt_default_addrs, payload,
			      xtx_msg_len(((const struct xtx_hdr *)payload)->nops));
}

/* One timed run of r; returns its duration in ns, or 0 on a failure. */
static __u64 timed(struct run *r)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .repeat = 1);

	opts.data_in = r->in;
	opts.data_size_in = r->in_len;
	opts.data_out = r->out;
	opts.data_size_out = sizeof(r->out);
	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xtx_xdp), &opts))
		return 0;
	return opts.duration ? opts.duration : 1;
}

static __u64 last_version;

/* Sends one op and checks its answer (version in last_version); outside every measurement. */
static int op1(__u8 opcode, __u64 key, __u64 txn, __u32 flags, __u8 want)
{
	static struct run r;
	uint8_t payload[PKT_MAX];

	xtx_msg_init(payload, CLIENT, req_id++);
	add(payload, opcode, key, txn, flags);
	frame(&r, payload);
	if (run(&r) || out_op(&r, 0)->status != want) {
		if (out_op(&r, 0)->status == XTX_ST_RETRY && flags == XTX_HOPF_BEGIN)
			return -1;	/* no free slot: the caller decides */
		fprintf(stderr, "Error: op %u key %llu: status %u, want %u\n", opcode,
			(unsigned long long)key, out_op(&r, 0)->status, want);
		return -1;
	}
	last_version = out_op(&r, 0)->version;
	return 0;
}

static void drain_log(void)
{
	int fd = bpf_map__fd(skel->maps.xtx_log_cursor), ncpu = libbpf_num_possible_cpus();
	struct xtx_log_cursor cur;
	__u32 cpu;

	for (cpu = 0; cpu < (__u32)ncpu; cpu++) {
		if (bpf_map_lookup_elem(fd, &cpu, &cur))
			continue;
		cur.head = cur.tail;
		bpf_map_update_elem(fd, &cpu, &cur, 0);
	}
}

/* HREAD or HWRITE of existing keys by one active transaction, nops per packet. */
static int cost_access(__u8 opcode, int nops, double *ns)
{
	static struct run r;
	uint8_t payload[PKT_MAX];
	__u64 txn = xtx_txn_make(CLIENT, 1000 + opcode * 100 + nops), total = 0, d;
	int i, iters = 100000, bad = 0;

	if (op1(XTX_OP_HREAD, 1, txn, XTX_HOPF_BEGIN, XTX_ST_OK))
		return -1;
	xtx_msg_init(payload, CLIENT, req_id++);
	for (i = 0; i < nops; i++)
		add(payload, opcode, 1 + i, txn, 0);
	frame(&r, payload);
	/* reads and write intents are not recorded for retransmission: the same frame serves */
	for (i = 0; i < iters; i++) {
		d = timed(&r);
		if (!d)
			return -errno;
		total += d;
		bad += out_op(&r, nops - 1)->status != XTX_ST_OK;
	}
	if (bad || op1(XTX_OP_HABORT, 0, txn, 0, XTX_ST_OK)) {
		fprintf(stderr, "Error: %d runs did not answer OK\n", bad);
		return -1;
	}
	*ns = (double)total / iters;
	return 0;
}

/*
 * The commit steps of a one-write transaction while `active` other
 * transactions hold slots (each read one key of its own): the last
 * HINTEND (publish, registry check, the squash scan over every slot) and
 * HVALIDATE (install, log, release), each in its own timed packet.
 */
static int cost_commit(int active, bool readonly, double *ns_intend, double *ns_validate)
{
	static struct run r;
	uint8_t payload[PKT_MAX];
	__u64 ti = 0, tv = 0, d, base = 500000ull * (active + 1) + readonly * 100000;
	int i, iters = 20000, full = 0;

	for (i = 0; i < active; i++)
		if (op1(XTX_OP_HREAD, 100000 + i, xtx_txn_make(CLIENT, base + 50000 + i),
			XTX_HOPF_BEGIN, XTX_ST_NOT_FOUND))
			return -1;
	for (i = 0; i < iters; i++) {
		__u64 txn = xtx_txn_make(CLIENT, base + i);
		__u8 first = readonly ? XTX_OP_HREAD : XTX_OP_HWRITE;

		/* linear probing: at this load an unlucky txn finds its slots taken */
		if (op1(first, 3, txn, XTX_HOPF_BEGIN, XTX_ST_OK)) {
			if (++full > iters / 100)
				return -1;
			continue;
		}
		xtx_msg_init(payload, CLIENT, req_id++);
		if (readonly)
			add(payload, XTX_OP_HINTEND, 0, txn, XTX_HOPF_NO_WRITE | XTX_HOPF_LAST);
		else
			add(payload, XTX_OP_HINTEND, 3, txn, XTX_HOPF_LAST)->version = last_version;
		frame(&r, payload);
		d = timed(&r);
		if (!d || out_op(&r, 0)->status != XTX_ST_OK) {
			fprintf(stderr, "Error: intend %d: status %u\n", i, out_op(&r, 0)->status);
			return -1;
		}
		ti += d;
		xtx_msg_init(payload, CLIENT, req_id++);
		if (readonly)
			add(payload, XTX_OP_HVALIDATE, 0, txn, XTX_HOPF_NO_WRITE | XTX_HOPF_LAST);
		else
			add(payload, XTX_OP_HVALIDATE, 3, txn, XTX_HOPF_LAST)->version =
				last_version;
		frame(&r, payload);
		d = timed(&r);
		if (!d || out_op(&r, 0)->status != XTX_ST_OK) {
			fprintf(stderr, "Error: validate %d: status %u\n", i,
				out_op(&r, 0)->status);
			return -1;
		}
		tv += d;
		drain_log();
	}
	for (i = 0; i < active; i++)
		op1(XTX_OP_HABORT, 0, xtx_txn_make(CLIENT, base + 50000 + i), 0, XTX_ST_OK);
	*ns_intend = (double)ti / (iters - full);
	*ns_validate = (double)tv / (iters - full);
	return 0;
}

static int xdp_costs(void)
{
	static const int active[] = { 0, 16, 64, 256 };
	double ns, ni, nv;
	unsigned int i;
	int n;

	/* the keys reads and write intents find in the kernel cache */
	for (n = 1; n <= XTX_MAX_OPS; n++) {
		static struct run r;
		uint8_t payload[PKT_MAX];

		xtx_msg_init(payload, CLIENT, req_id++);
		xtx_msg_add(payload, XTX_OP_INSERT, 0, n)->vlen = 8;
		frame(&r, payload);
		if (run(&r) || out_op(&r, 0)->status != XTX_ST_OK)
			return -1;
	}
	printf("\nHADES ops in XDP (BPF_PROG_TEST_RUN; %u slots, %u-bit filters, k = %u)\n",
	       skel->rodata->xtx_hades_slots, skel->rodata->xtx_hades_bf_bits,
	       skel->rodata->xtx_hades_hashes);
	printf("%-34s %8s %12s %10s\n", "case", "ops/pkt", "ns/packet", "ns/op");
	for (n = 1; n <= 16; n += 15) {
		if (cost_access(XTX_OP_HREAD, n, &ns))
			return -1;
		printf("%-34s %8d %12.1f %10.1f\n", "hread (kernel hit)", n, ns, ns / n);
		if (cost_access(XTX_OP_HWRITE, n, &ns))
			return -1;
		printf("%-34s %8d %12.1f %10.1f\n", "hwrite (kernel hit)", n, ns, ns / n);
	}
	for (i = 0; i < sizeof(active) / sizeof(active[0]); i++) {
		char name[64];

		if (cost_commit(active[i], false, &ni, &nv))
			return -1;
		snprintf(name, sizeof(name), "hintend last, %d active", active[i]);
		printf("%-34s %8d %12.1f %10.1f\n", name, 1, ni, ni);
		snprintf(name, sizeof(name), "hvalidate last, %d active", active[i]);
		printf("%-34s %8d %12.1f %10.1f\n", name, 1, nv, nv);
	}
	if (cost_commit(0, true, &ni, &nv))
		return -1;
	printf("%-34s %8d %12.1f %10.1f\n", "hintend read-only check", 1, ni, ni);
	printf("%-34s %8d %12.1f %10.1f\n", "hvalidate read-only release", 1, nv, nv);
	return 0;
}

int main(int argc, char **argv)
{
	int err;

	fp_table(XTX_HADES_HASHES_DEFAULT);
	fp_table(2);	/* HADES' own filters: compare Table IV's 1 Kbit row */
	if (argc > 1 && !strcmp(argv[1], "--no-xdp"))
		return 0;
	xtx_log_libbpf();
	skel = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
	if (!skel) {
		fprintf(stderr, "Error: loading the server: %s\n", strerror(errno));
		return 1;
	}
	err = xdp_costs();
	xtx_xdp__destroy(skel);
	return err ? 1 : 0;
}
