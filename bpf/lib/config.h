/* SPDX-License-Identifier: GPL-2.0-only */
/* Load-time configuration: set by xtxd through the skeleton's rodata before load. */
#ifndef XTX_BPF_CONFIG_H
#define XTX_BPF_CONFIG_H

#include <linux/types.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include <xtx/hades.h>

/*
 * const volatile so the verifier sees the loaded values and prunes the
 * branches a configuration disables (echo mode, for one).
 */
const volatile __u16 xtx_port = XTX_DEFAULT_PORT;
const volatile __u32 xtx_max_clients = XTX_MAX_CLIENTS_DEFAULT;
const volatile __u32 xtx_nr_cpus = 1;	/* possible CPUs, for STATS sums */
/* Slots in xtx_locks; xtxd sizes the map to match. */
const volatile __u32 xtx_lock_slots = XTX_LOCK_SLOTS_DEFAULT;
/* Buckets in xtx_kv; xtxd sizes the map to match. */
const volatile __u32 xtx_kv_buckets = XTX_KV_BUCKETS_DEFAULT;
/*
 * Largest value a write may carry (<= XTX_VALUE_MAX): past XTX_VALUE_INLINE
 * in the value area, to xtxd's store.  An operator who knows the workload's
 * values are short (8 for SmallBank, 40 for TATP) refuses longer ones.
 */
const volatile __u16 xtx_value_size = XTX_VALUE_MAX;
/*
 * Ablations of DINT's design (Table 1): write-through sends every write to
 * xtxd (BMC's policy), and without the Bloom filter every miss asks xtxd.
 */
const volatile __u8 xtx_kv_write_through = 0;
const volatile __u8 xtx_kv_no_bloom = 0;
/* Ablation: run a packet's ops without first loading their lines (lib/warm.h). */
const volatile __u8 xtx_no_warm = 0;
/* Log entries per CPU, a power of two; xtxd sizes xtx_log to match. */
const volatile __u32 xtx_log_ring = XTX_LOG_RING_DEFAULT;
/*
 * HADES (include/xtx/hades.h): slots in xtx_hades (xtxd sizes the map to
 * match), filter bits and hashes, the lease of an active slot, and the
 * exact key sets of the false-positive accounting (xtx_hades_exact).
 */
const volatile __u32 xtx_hades_slots = XTX_HADES_SLOTS_DEFAULT;
const volatile __u32 xtx_hades_bf_bits = XTX_HADES_BF_BITS_DEFAULT;
const volatile __u32 xtx_hades_hashes = XTX_HADES_HASHES_DEFAULT;
const volatile __u64 xtx_hades_lease_ns = XTX_HADES_LEASE_DEFAULT_NS;
const volatile __u8 xtx_hades_exact_on = 0;
/*
 * TC egress applies fix trailers only from xtxd's sockets (XTX_MAP_RARE_SOCKS).
 * BPF_PROG_TEST_RUN makes a socket for every frame it runs, so unit tests
 * of TC egress load it with this set; xtxd never does.
 */
const volatile __u8 xtx_tc_any_sender = 0;
/* Answer every op OK without touching state: the throughput ceiling. */
const volatile __u8 xtx_echo_mode = 0;

#endif /* XTX_BPF_CONFIG_H */
