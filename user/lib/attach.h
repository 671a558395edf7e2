/* SPDX-License-Identifier: GPL-2.0-only */
/* Finding, loading, attaching and detaching the xtx XDP program on an interface. */
#ifndef XTX_ATTACH_H
#define XTX_ATTACH_H

#include <stdbool.h>
#include <linux/types.h>
#include "target.h"

#define XTX_PROG_NAME "xtx_xdp"

enum xtx_xdp_mode { XTX_MODE_NATIVE, XTX_MODE_GENERIC };

struct xtx_load_opts {
	__u16 port;
	__u32 max_clients;
	__u32 lock_slots;
	__u64 lock_lease_ns;
	__u32 kv_buckets;
	__u64 kv_lease_ns;
	__u32 kv_flags;		/* XTX_INFO_KV_* */
	__u16 value_size;	/* largest value a write may carry, up to XTX_VALUE_MAX */
	__u32 bigval_max;	/* values over the slot XDP may serve (XTX_MAP_BIGVAL); 0: none */
	__u32 log_ring;		/* log entries per CPU, a power of two */
	__u32 hades_slots;	/* HADES (include/xtx/hades.h): transaction slots */
	__u32 hades_bf_bits;	/* bits per filter */
	__u32 hades_hashes;	/* hashes per key */
	__u64 hades_lease_ns;	/* an untouched active slot is reclaimable after this */
	bool hades_exact;	/* exact key sets beside the filters */
	bool echo;
	enum xtx_xdp_mode mode;
};

/* What is attached to an interface right now. */
struct xtx_attached {
	__u32 xtx_prog_id;	/* our program, 0 if none */
	bool xtx_via_libxdp;	/* in a libxdp dispatcher (else attached alone) */
	__u32 foreign_prog_id;	/* another program attached alone, 0 if none */
	char foreign_name[64];
	int nprogs;		/* programs in the dispatcher, ours included */
};

int xtx_attached_query(const struct xtx_target *t, struct xtx_attached *a);

/*
 * Loads the program with o, reusing any maps pinned for t (so state
 * survives a daemon restart), pins them, and attaches: through libxdp's
 * dispatcher when possible, alone through libbpf otherwise.
 * Returns 0 or a negative errno, after printing what went wrong.
 */
int xtx_load_attach(const struct xtx_target *t, const struct xtx_load_opts *o);
/*
 * Checks that maps pinned for t (if any) can be reused by a load with o;
 * prints every mismatch.  Returns 0 or -EEXIST.
 */
int xtx_pins_compatible(const struct xtx_target *t, const struct xtx_load_opts *o);
/* The TC egress program of the rare path: attach (replacing), query, detach. */
int xtx_tc_attach(const struct xtx_target *t, const struct xtx_load_opts *o);
bool xtx_tc_attached(const struct xtx_target *t);
int xtx_tc_detach(const struct xtx_target *t);
/* Detaches our program from t's interface, however it was attached. */
int xtx_detach(const struct xtx_target *t);
/* Removes t's pinned maps and their directory. */
int xtx_unpin(const struct xtx_target *t);
/* True when t's maps are pinned (a server was loaded and not unloaded). */
bool xtx_pins_exist(const struct xtx_target *t);
void xtx_log_libxdp(void);

#endif /* XTX_ATTACH_H */
