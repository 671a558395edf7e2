// SPDX-License-Identifier: GPL-2.0-only
/* Nanoseconds per packet and per op inside the XDP program, via BPF_PROG_TEST_RUN. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include <xtx/hash.h>
#include <xtx/log.h>
#include <xtx/mac.h>
#include <xtx/kv.h>
#include "check.h"
#include "harness.h"
#include "log.h"

/*
 * Each case runs one frame per BPF_PROG_TEST_RUN call (repeat = 1) so that
 * state-changing ops see a fresh request every time; the kernel's own timer
 * around the program run gives the duration, so syscall cost is excluded.
 */
#define ITERS 200000

enum kind { K_PASS, K_PING, K_LOCK_PAIRS, K_SHARED_PAIRS, K_VALIDATE, K_GET_HIT, K_UPDATE_HIT,
	    K_GET_BLOOM_MISS, K_LOG_APPEND, K_LOG_PRIMARY, K_READ_COLD, K_VALIDATE_COLD, K_EMPTY,
	    K_GET_BIG_1K, K_GET_BIG_300, K_COMMIT_BACKUP };

static __u64 bench_key(int i);

/* The big-value cases' keys and lengths: copies in the value store (include/xtx/kv.h). */
#define BIG_KEYS	4
static __u64 big_key(enum kind k, int i)
{
	return bench_key(k == K_GET_BIG_1K ? 200 + i : 300 + i);
}

static __u16 big_len(enum kind k)
{
	return k == K_GET_BIG_1K ? XTX_VALUE_MAX : 300;
}

struct bench_case {
	const char *name;
	enum kind kind;
	int ops;		/* ops per packet */
	int secret;		/* with a shared secret: every request carries its MAC */
	int allowlist;		/* 1: on, the sender among ALLOW_PREFIXES prefixes; 2: and two
				 * senders taking turns, so each packet misses the CPU's cache */
	int server;		/* enum server: which loaded program runs it */
};

/*
 * The hot cases run on small tables that stay in the caches.  The cold ones
 * run on tables of the default size (2^18 buckets, 2^20 lock slots: 120 MB,
 * as a spec-scale server's), every op on a random key, so each op's bucket
 * and lock slot miss the caches and the TLB as under load; once with the
 * warm pass (bpf/lib/warm.h) and once without, side by side.
 */
enum server { HOT, COLD, COLD_NO_WARM, EMPTY, NSERVERS };

static struct xtx_xdp *servers[NSERVERS];
static int empty_prog_fd = -1;

/* A key nobody asked for before: splitmix64 of a counter, above the stored ones. */
static __u64 cold_key(void)
{
	static __u64 n;

	return xtx_mix64(++n) >> 16 | 1ull << 48;
}

/*
 * The cold servers' stored keys: random, no bucket given more than its
 * ways (one more would go to xtxd, which is not running here).
 */
#define COLD_KEYS 300000
static __u64 cold_keys[COLD_KEYS];

static __u64 cold_stored_key(void)
{
	static __u64 x = 88172645463325252ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return cold_keys[x % COLD_KEYS];
}

#define ALLOW_PREFIXES	64

static __u64 req_id = 1;
static const struct xtx_secret bench_secret = { 0x1111222233334444ull, 0x5555666677778888ull };


/* Distinct keys in distinct lock slots, so each pair's token is predictable. */
static __u64 bench_key(int i)
{
	return 1000003ull * (i + 1);
}

static __u64 slot_gen(__u64 key)
{
	struct xtx_lock_slot s = {};
	__u32 idx = xtx_lock_slot_of(xtx_hash(0, key), skel->rodata->xtx_lock_slots);

	bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_locks), &idx, &s);
	return s.gen;
}

static void build(struct run *r, const struct bench_case *c, __u64 iter, const __u64 *gen0)
{
	uint8_t payload[PKT_MAX];
	__u64 txn = xtx_txn_make(1, 7);
	size_t len;
	int i;

	if (c->kind == K_PASS || c->kind == K_EMPTY) {
		make_req(r, 1, 1, 1, XTX_OP_PING);
		((struct ethhdr *)r->in)->h_proto = htons(ETH_P_ARP);
		return;
	}
	xtx_msg_init(payload, 1, req_id++);
	for (i = 0; i < c->ops; i++) {
		struct xtx_op *op;
		int pair = i / 2;

		switch (c->kind) {
		case K_PING:
			xtx_msg_add(payload, XTX_OP_PING, 0, i);
			break;
		case K_VALIDATE:
			op = xtx_msg_add(payload, XTX_OP_OCC_VALIDATE, 0, bench_key(i));
			op->txn = txn;
			break;
		case K_GET_HIT:
			xtx_msg_add(payload, XTX_OP_GET, 0, bench_key(i));
			break;
		case K_UPDATE_HIT:
			op = xtx_msg_add(payload, XTX_OP_UPDATE, 0, bench_key(i));
			op->vlen = XTX_VALUE_INLINE;
			break;
		case K_GET_BLOOM_MISS:
			xtx_msg_add(payload, XTX_OP_GET, 0, bench_key(i) + 1);
			break;
		case K_COMMIT_BACKUP: {
			/* each a newer version than any before: every one installs */
			static __u64 version = 1ull << 40;

			op = xtx_msg_add(payload, XTX_OP_COMMIT_BACKUP, 0, bench_key(i));
			op->txn = txn;
			op->version = ++version;
			op->vlen = XTX_VALUE_INLINE;
			break;
		}
		case K_GET_BIG_1K:
		case K_GET_BIG_300:
			op = xtx_msg_add(payload, XTX_OP_GET, 0, big_key(c->kind, i));
			xtx_msg_set_area(op, big_len(c->kind), 0);
			break;
		case K_READ_COLD:
			xtx_msg_add(payload, XTX_OP_READ, 0, cold_stored_key())->txn = txn;
			break;
		case K_VALIDATE_COLD:
			xtx_msg_add(payload, XTX_OP_OCC_VALIDATE, 0, cold_key())->txn = txn;
			break;
		case K_LOG_APPEND:
		case K_LOG_PRIMARY:
			op = xtx_msg_add(payload, XTX_OP_LOG_APPEND, 0, bench_key(i));
			op->txn = txn;
			op->version = iter + 1;
			op->vlen = XTX_VALUE_INLINE;
			if (c->kind == K_LOG_PRIMARY) {
				/* held since lock_for_log(): each append proves that grant */
				op->flags = XTX_OPF_LOG_PRIMARY;
				op->token = (gen0[i] & 0xffffffffull) << 32;
			}
			break;
		case K_LOCK_PAIRS:
		case K_SHARED_PAIRS:
			if (i % 2 == 0) {
				op = xtx_msg_add(payload, c->kind == K_LOCK_PAIRS ? XTX_OP_LOCK_EXCL :
						 XTX_OP_LOCK_SHARED, 0, bench_key(pair));
			} else {
				op = xtx_msg_add(payload, c->kind == K_LOCK_PAIRS ?
						 XTX_OP_UNLOCK_EXCL : XTX_OP_UNLOCK_SHARED, 0,
						 bench_key(pair));
				op->token = gen0[pair] + iter + 1;
			}
			op->txn = txn;
			break;
		default:
			break;
		}
	}
	len = xtx_msg_finish(payload);
	/* the MAC is the client's cost, outside the timed run; XDP's check is inside */
	if (c->secret)
		xtx_mac_sign(&bench_secret, payload, (__u32)len);
	if (c->allowlist == 2 && (iter & 1)) {
		/* the other sender of the same listed /24 */
		struct pkt_addrs a = pkt_default_addrs;

		a.saddr ^= 0x80;
		r->in_len = pkt_build(r->in, &a, payload, len);
		return;
	}
	r->in_len = pkt_build(r->in, &pkt_default_addrs, payload, len);
}

/* Every CPU's log emptied: head moved up to tail. */
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

static int measure(const struct bench_case *c, double *ns_per_pkt)
{
	static struct run r;
	__u64 gen0[XTX_MAX_OPS], total = 0, iter;
	int i, bad = 0;

	int fd;

	skel = servers[c->server == EMPTY ? HOT : c->server];
	fd = c->server == EMPTY ? empty_prog_fd : bpf_program__fd(skel->progs.xtx_xdp);
	for (i = 0; i < XTX_MAX_OPS; i++)
		gen0[i] = slot_gen(bench_key(i));
	for (iter = 0; iter < ITERS; iter++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .repeat = 1);

		build(&r, c, iter, gen0);
		opts.data_in = r.in;
		opts.data_size_in = r.in_len;
		opts.data_out = r.out;
		opts.data_size_out = sizeof(r.out);
		if (bpf_prog_test_run_opts(fd, &opts))
			return -errno;
		total += opts.duration;
		if (c->kind == K_LOCK_PAIRS || c->kind == K_SHARED_PAIRS)
			for (i = 1; i < c->ops; i += 2)
				bad += (out_op(&r, i)->flags & XTX_LOCKF_STALE) ||
				       out_op(&r, i - 1)->status != XTX_ST_OK;
		/* plain writes are logged too, and commits leave a mark (bpf/lib/log.h) */
		if (c->kind == K_LOG_APPEND || c->kind == K_LOG_PRIMARY || c->kind == K_UPDATE_HIT ||
		    c->kind == K_COMMIT_BACKUP) {
			/* what xtxd's drain does, outside the timed run: the log never fills */
			drain_log();
			if (c->kind != K_UPDATE_HIT)
				for (i = 0; i < c->ops; i++)
					bad += out_op(&r, i)->status != XTX_ST_OK;
		}
		if (c->kind == K_GET_HIT || c->kind == K_UPDATE_HIT || c->kind == K_GET_BLOOM_MISS ||
		    c->kind == K_READ_COLD || c->kind == K_COMMIT_BACKUP)
			for (i = 0; i < c->ops; i++)
				bad += out_op(&r, i)->status != (c->kind == K_GET_BLOOM_MISS ?
								 XTX_ST_NOT_FOUND : XTX_ST_OK);
		if (c->kind == K_VALIDATE_COLD)
			for (i = 0; i < c->ops; i++)
				bad += out_op(&r, i)->status != XTX_ST_OK;
		if (c->kind == K_GET_BIG_1K || c->kind == K_GET_BIG_300)
			for (i = 0; i < c->ops; i++)
				bad += out_op(&r, i)->status != XTX_ST_OK ||
				       xtx_msg_ext(out_op(&r, i)).len != big_len(c->kind);
	}
	if (bad) {
		fprintf(stderr, "Error: %s: %d ops did not answer as expected\n", c->name, bad);
		return -EINVAL;
	}
	*ns_per_pkt = (double)total / ITERS;
	return 0;
}

/* The primary-append case's locks, held by its transaction for the whole run. */
static int lock_for_log(void)
{
	static struct run r;
	uint8_t payload[PKT_MAX];
	int i;

	xtx_msg_init(payload, 1, req_id++);
	for (i = 0; i < XTX_MAX_OPS; i++)
		xtx_msg_add(payload, XTX_OP_LOCK_EXCL, 0, bench_key(i))->txn = xtx_txn_make(1, 7);
	r.in_len = pkt_build(r.in, &pkt_default_addrs, payload, xtx_msg_len(XTX_MAX_OPS));
	if (run(&r))
		return -1;
	for (i = 0; i < XTX_MAX_OPS; i++)
		if (out_op(&r, i)->status != XTX_ST_OK)
			return -1;
	return 0;
}

/* The allowlist on with n prefixes, the benchmark's sender in the last; or off. */
static void set_allowlist(int on, int n)
{
	int rt_fd = bpf_map__fd(skel->maps.xtx_runtime), fd = bpf_map__fd(skel->maps.xtx_allow);
	struct xtx_runtime rt;
	__u32 zero = 0;
	__u8 one = 1;
	int i;

	for (i = 0; i < n; i++) {
		struct xtx_allow_key k = { .prefixlen = 24,
					   .addr = htonl(0x0a000000u + ((__u32)i << 8)) };

		if (i == n - 1)
			k.addr = htonl(pkt_default_addrs.saddr & 0xffffff00u);
		if (on)
			bpf_map_update_elem(fd, &k, &one, BPF_ANY);
		else
			bpf_map_delete_elem(fd, &k);
	}
	bpf_map_lookup_elem(rt_fd, &zero, &rt);
	rt.flags = on ? rt.flags | XTX_RTF_ALLOWLIST : rt.flags & ~XTX_RTF_ALLOWLIST;
	bpf_map_update_elem(rt_fd, &zero, &rt, 0);
}

/* The shared secret on or off. */
static void set_secret(int on)
{
	int rt_fd = bpf_map__fd(skel->maps.xtx_runtime);
	struct xtx_runtime rt;
	__u32 zero = 0;

	bpf_map_lookup_elem(rt_fd, &zero, &rt);
	rt.flags = on ? rt.flags | XTX_RTF_SECRET : rt.flags & ~XTX_RTF_SECRET;
	rt.secret_k0 = bench_secret.k0;
	rt.secret_k1 = bench_secret.k1;
	bpf_map_update_elem(rt_fd, &zero, &rt, 0);
}

/* The keys the KV cases read and write, inserted once through the program itself. */
static int populate(void)
{
	static struct run r;
	int i;

	for (i = 0; i < XTX_MAX_OPS; i++) {
		uint8_t payload[PKT_MAX];
		struct xtx_op *op;

		xtx_msg_init(payload, 1, req_id++);
		op = xtx_msg_add(payload, XTX_OP_INSERT, 0, bench_key(i));
		op->vlen = XTX_VALUE_INLINE;
		r.in_len = pkt_build(r.in, &pkt_default_addrs, payload, xtx_msg_len(1));
		if (run(&r) || out_op(&r, 0)->status != XTX_ST_OK) {
			fprintf(stderr, "Error: populating key %d: status %u\n", i,
				out_op(&r, 0)->status);
			return -1;
		}
	}
	return 0;
}

/*
 * The big-value cases' keys, as xtxd leaves them: a copy in the value store
 * and the key's bit in its bucket's filter (it is in the overflow store).
 */
static int populate_big(void)
{
	static const enum kind kinds[] = { K_GET_BIG_1K, K_GET_BIG_300 };
	int vfd = bpf_map__fd(skel->maps.xtx_bigval), kfd = bpf_map__fd(skel->maps.xtx_kv);
	unsigned int k;
	int i;

	for (k = 0; k < 2; k++) {
		for (i = 0; i < BIG_KEYS; i++) {
			struct xtx_bigval_key key = { .key = big_key(kinds[k], i) };
			struct xtx_bigval v = { .key = key.key, .version = 7,
						.len = big_len(kinds[k]) };
			__u64 h = xtx_hash(0, key.key);
			__u32 b = xtx_bucket_of(h, skel->rodata->xtx_kv_buckets);
			struct xtx_kv_bucket bucket;

			memset(v.data, 0x5a, v.len);
			if (bpf_map_update_elem(vfd, &key, &v, BPF_ANY) ||
			    bpf_map_lookup_elem(kfd, &b, &bucket))
				return -1;
			bucket.bloom |= 1ull << xtx_bloom_bit_of(h);
			if (bpf_map_update_elem(kfd, &b, &bucket, BPF_ANY))
				return -1;
		}
	}
	return 0;
}

static void unload_servers(void)
{
	int i;

	for (i = 0; i < NSERVERS; i++)
		xtx_xdp__destroy(servers[i]);
	if (empty_prog_fd >= 0)
		close(empty_prog_fd);
}

/* The program that returns XDP_PASS and nothing else, built beside this binary's. */
static int load_empty(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	struct bpf_program *prog;
	struct bpf_object *obj;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s/../bpf/xdp_pass.bpf.o", dirname(exe));
	obj = bpf_object__open_file(path, NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "Error: loading %s: %s\n", path, strerror(errno));
		bpf_object__close(obj);
		return -1;
	}
	prog = bpf_object__next_program(obj, NULL);
	/* the fd outlives the object: the program stays loaded until it is closed */
	empty_prog_fd = prog ? dup(bpf_program__fd(prog)) : -1;
	bpf_object__close(obj);
	return empty_prog_fd >= 0 ? 0 : -1;
}

/* COLD_KEYS keys of 40 bytes into both cold servers, 16 per packet. */
static int populate_cold(void)
{
	static __u8 per_bucket[XTX_KV_BUCKETS_DEFAULT];
	static struct run r;
	__u64 j = 0;
	int n = 0, i, s;

	while (n < COLD_KEYS) {
		__u64 key = xtx_mix64(++j) >> 16;
		__u32 b = xtx_bucket_of(xtx_hash(0, key), XTX_KV_BUCKETS_DEFAULT);

		if (per_bucket[b] < XTX_KV_WAYS) {
			per_bucket[b]++;
			cold_keys[n++] = key;
		}
	}
	for (s = COLD; s <= COLD_NO_WARM; s++) {
		for (n = 0; n < COLD_KEYS; n += XTX_MAX_OPS) {
			uint8_t payload[PKT_MAX];
			int k = COLD_KEYS - n < XTX_MAX_OPS ? COLD_KEYS - n : XTX_MAX_OPS;

			xtx_msg_init(payload, 1, req_id++);
			for (i = 0; i < k; i++)
				xtx_msg_add(payload, XTX_OP_INSERT, 0, cold_keys[n + i])->vlen =
					XTX_VALUE_INLINE;
			r.in_len = pkt_build(r.in, &pkt_default_addrs, payload, xtx_msg_len(k));
			if (run_on(servers[s], &r))
				return -1;
			for (i = 0; i < k; i++)
				if (out_op(&r, i)->status != XTX_ST_OK) {
					fprintf(stderr, "Error: cold key %d: status %u\n", n + i,
						out_op(&r, i)->status);
					return -1;
				}
			/* plain writes are logged: what xtxd's drain does */
			skel = servers[s];
			drain_log();
		}
	}
	return 0;
}

static int load_servers(void)
{
	servers[HOT] = load_server(TEST_MAX_CLIENTS, XTX_LOCK_SLOTS_DEFAULT, false);
	test_kv_buckets = XTX_KV_BUCKETS_DEFAULT;
	servers[COLD] = load_server(TEST_MAX_CLIENTS, XTX_LOCK_SLOTS_DEFAULT, false);
	test_no_warm = true;
	servers[COLD_NO_WARM] = load_server(TEST_MAX_CLIENTS, XTX_LOCK_SLOTS_DEFAULT, false);
	if (!servers[HOT] || !servers[COLD] || !servers[COLD_NO_WARM]) {
		fprintf(stderr, "Error: loading the server: %s\n", strerror(errno));
		return -1;
	}
	return load_empty() || populate_cold();
}

int main(void)
{
	static const struct bench_case cases[] = {
		/* name, kind, ops per packet, shared secret, allowlist, server */
		{ "pass-through (not xtx)", K_PASS, 0, 0, 0, HOT },
		{ "ping", K_PING, 1, 0, 0, HOT },
		{ "ping", K_PING, 16, 0, 0, HOT },
		{ "lock_excl+unlock_excl", K_LOCK_PAIRS, 2, 0, 0, HOT },
		{ "lock_excl+unlock_excl", K_LOCK_PAIRS, 16, 0, 0, HOT },
		{ "lock_shared+unlock_shared", K_SHARED_PAIRS, 2, 0, 0, HOT },
		{ "lock_shared+unlock_shared", K_SHARED_PAIRS, 16, 0, 0, HOT },
		{ "occ_validate", K_VALIDATE, 1, 0, 0, HOT },
		{ "occ_validate", K_VALIDATE, 16, 0, 0, HOT },
		{ "get (kernel hit)", K_GET_HIT, 1, 0, 0, HOT },
		{ "get (kernel hit)", K_GET_HIT, 16, 0, 0, HOT },
		{ "update (kernel hit)", K_UPDATE_HIT, 1, 0, 0, HOT },
		{ "update (kernel hit)", K_UPDATE_HIT, 16, 0, 0, HOT },
		{ "get (miss, Bloom filter)", K_GET_BLOOM_MISS, 1, 0, 0, HOT },
		{ "get (miss, Bloom filter)", K_GET_BLOOM_MISS, 16, 0, 0, HOT },
		{ "get 1 KiB (value store)", K_GET_BIG_1K, 1, 0, 0, HOT },
		{ "get 300 B (value store)", K_GET_BIG_300, 1, 0, 0, HOT },
		{ "get 300 B (value store)", K_GET_BIG_300, 3, 0, 0, HOT },
		{ "log_append", K_LOG_APPEND, 1, 0, 0, HOT },
		{ "log_append", K_LOG_APPEND, 16, 0, 0, HOT },
		{ "log_append at primary (grant)", K_LOG_PRIMARY, 1, 0, 0, HOT },
		{ "log_append at primary (grant)", K_LOG_PRIMARY, 16, 0, 0, HOT },
		{ "commit_backup (kernel hit)", K_COMMIT_BACKUP, 1, 0, 0, HOT },
		{ "commit_backup (kernel hit)", K_COMMIT_BACKUP, 16, 0, 0, HOT },
		{ "ping, allowlist of 64 on", K_PING, 1, 0, 1, HOT },
		{ "ping, allowlist of 64 on", K_PING, 16, 0, 1, HOT },
		{ "ping, allowlist, new sender", K_PING, 1, 0, 2, HOT },
		{ "ping, allowlist, new sender", K_PING, 16, 0, 2, HOT },
		{ "ping, shared secret", K_PING, 1, 1, 0, HOT },
		{ "ping, shared secret", K_PING, 16, 1, 0, HOT },
		{ "get (kernel hit), secret", K_GET_HIT, 16, 1, 0, HOT },
		{ "update (kernel hit), secret", K_UPDATE_HIT, 16, 1, 0, HOT },
		{ "get 300 B (v. store), secret", K_GET_BIG_300, 3, 1, 0, HOT },
		{ "empty XDP program (floor)", K_EMPTY, 0, 0, 0, EMPTY },
		{ "read (hit), cold, warm pass", K_READ_COLD, 16, 0, 0, COLD },
		{ "read (hit), cold, no warm", K_READ_COLD, 16, 0, 0, COLD_NO_WARM },
		{ "occ_validate, cold, warm pass", K_VALIDATE_COLD, 16, 0, 0, COLD },
		{ "occ_validate, cold, no warm", K_VALIDATE_COLD, 16, 0, 0, COLD_NO_WARM },
		{ "read (hit), cold, warm pass", K_READ_COLD, 1, 0, 0, COLD },
		{ "read (hit), cold, no warm", K_READ_COLD, 1, 0, 0, COLD_NO_WARM },
	};
	unsigned int i;
	double ns;

	xtx_log_libbpf();
	if (load_servers()) {
		unload_servers();
		return 1;
	}
	skel = servers[HOT];
	if (populate() || populate_big()) {
		unload_servers();
		return 1;
	}
	printf("%-28s %8s %12s %10s\n", "case", "ops/pkt", "ns/packet", "ns/op");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].kind == K_LOG_PRIMARY && i && cases[i - 1].kind != K_LOG_PRIMARY &&
		    lock_for_log()) {
			fprintf(stderr, "Error: locking the keys the primary appends prove\n");
			unload_servers();
			return 1;
		}
		set_allowlist(cases[i].allowlist, ALLOW_PREFIXES);
		set_secret(cases[i].secret);
		if (measure(&cases[i], &ns)) {
			unload_servers();
			return 1;
		}
		if (cases[i].ops)
			printf("%-28s %8d %12.1f %10.1f\n", cases[i].name, cases[i].ops, ns,
			       ns / cases[i].ops);
		else
			printf("%-28s %8s %12.1f %10s\n", cases[i].name, "-", ns, "-");
	}
	unload_servers();
	return 0;
}
