/* SPDX-License-Identifier: GPL-2.0-only */
/* Shared fixtures for the XDP unit suites: load a server, run frames, read its maps. */
#ifndef XTX_TEST_HARNESS_H
#define XTX_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/kv.h>
#include "xtx_xdp.skel.h"
#include "xtx_tc.skel.h"
#include "pkt.h"

#define TEST_MAX_CLIENTS 64
#define TEST_LOCK_SLOTS 4096

/* The server most cases run against; each suite's main loads it. */
extern struct xtx_xdp *skel;
/* KV buckets of servers load_server() creates from now on. */
extern __u32 test_kv_buckets;
/* Log entries per CPU of servers load_server() creates (a power of two). */
extern __u32 test_log_ring;
/* Servers load_server() creates from now on skip the warm pass (xtxd --no-warm). */
extern bool test_no_warm;

/*
 * in and out start 6 bytes past an 8-byte boundary, as a NIC's receive
 * buffer does with NET_IP_ALIGN: the IP header after the 14-byte Ethernet
 * header is 4-aligned and the xtx payload 8-aligned, so the tests read and
 * write header fields in place without misaligned accesses.
 */
struct run {
	int retval;
	uint8_t pad_in[2];
	uint8_t in[PKT_MAX];
	uint8_t out[PKT_MAX];	/* PKT_MAX is a multiple of 8: out keeps in's alignment */
	uint32_t in_len, out_len;
} __attribute__((aligned(8)));

_Static_assert(offsetof(struct run, in) % 8 == 6 && offsetof(struct run, out) % 8 == 6,
	       "packet buffers NET_IP_ALIGN-ed");

struct xtx_xdp *load_server(__u32 max_clients, __u32 lock_slots, bool echo);
/*
 * A server sized as load_server() sizes it, opened but not loaded: for a
 * case that changes rodata (HADES slots, lease) before xtx_xdp__load().
 */
struct xtx_xdp *open_server(__u32 max_clients, __u32 lock_slots, bool echo);
/*
 * TC egress on s's maps, as xtxd's pins make them shared; NULL (errno) on
 * failure.  any_sender: it takes every frame's fix trailer as xtxd's (a
 * test run's frame comes from a socket made for it, never one xtxd
 * lists); without, it applies none, as for a stranger's packet.
 */
struct xtx_tc *load_tc_for(struct xtx_xdp *s, bool any_sender);
/* Runs r->in through TC egress; the output buffer is reset first. */
int run_tc_on(struct xtx_tc *tc, struct run *r);
/*
 * xtxd's answer to a request XDP passed (passed->out): its body with op 0
 * answered st at version, then fix and the footer, from the server port;
 * into reply->in, for run_tc_on() (in_len 0 when passed holds no request).
 */
void xtxd_reply(const struct run *passed, struct run *reply, __u8 st, __u64 version,
		const struct xtx_fix_entry *fix);
/* The lock and bucket leases of s's runtime knobs (0: never), the rest kept. */
void set_leases(struct xtx_xdp *s, __u64 lock_lease_ns, __u64 kv_lease_ns);
/* CLOCK_MONOTONIC, bpf_ktime_get_ns()'s clock: for stamps written into maps. */
__u64 clock_mono_ns(void);
/*
 * An mmapable array map's values, shared with the programs (a word XDP
 * CASes can be CASed here, as TC or xtxd would); NULL on failure.
 */
void *map_mmap(const struct bpf_map *m, size_t *len);
/* Pins the calling thread: BPF_PROG_TEST_RUN runs on its caller's CPU. 0 or -errno. */
int pin_to_cpu(int cpu);
/* Runs r->in through the program; the output buffer is reset first. */
int run_on(struct xtx_xdp *s, struct run *r);
int run(struct run *r);
/* A request from `client` with id `req` and `nops` ops of `opcode`. */
void make_req(struct run *r, __u32 client, __u64 req, int nops, __u8 opcode);
struct xtx_hdr *in_hdr(struct run *r);
struct xtx_hdr *out_hdr(struct run *r);
struct xtx_op *in_op(struct run *r, int i);
struct xtx_op *out_op(struct run *r, int i);
void read_stats(struct xtx_stats *st);
__u64 counter_value(__u32 idx);
/* Checks the reply frame against its request: swapped addressing, valid checksums. */
void check_reply_framing(struct run *r);

#endif /* XTX_TEST_HARNESS_H */
