/* SPDX-License-Identifier: GPL-2.0-only */
/* How full the lock table and the HADES slot table are, read from the pinned maps. */
#ifndef XTX_OCCUPANCY_H
#define XTX_OCCUPANCY_H

#include <linux/types.h>
#include "target.h"

struct xtx_lock_occupancy {
	__u64 slots, held, shared, exclusive, logged;
	/*
	 * Held, not logged, and not re-granted for the lock lease: the next
	 * request for the slot takes it back (reclaim happens on contact).
	 */
	__u64 reclaimable;
};

struct xtx_kv_occupancy {
	__u64 slots;		/* buckets x ways */
	__u64 keys;		/* live keys (VALID) */
	__u64 in_user;		/* ... of which the overflow store holds a copy too */
	__u64 tombs;		/* deletes not yet written back */
};

struct xtx_hades_occupancy {
	__u64 in_use;		/* slots a transaction holds */
	__u64 committing;	/* ... of which past intend-to-commit */
};

/* Walks the lock table (batched): 0 or a negative errno. */
int xtx_lock_occupancy(const struct xtx_target *t, struct xtx_lock_occupancy *occ);
/* Reads every bucket of the kernel cache through its mapping: 0 or a negative errno. */
int xtx_kv_occupancy(const struct xtx_target *t, struct xtx_kv_occupancy *occ);
/* From the HADES registry's bitmaps: 0 or a negative errno. */
int xtx_hades_occupancy(const struct xtx_target *t, struct xtx_hades_occupancy *occ);
/*
 * Slots past intend-to-commit, at primaries and backups alike (the
 * registry counts primaries only), walking the slots in use: 0 or -errno.
 */
int xtx_hades_committing_slots(const struct xtx_target *t, __u64 *n);
/*
 * Log entries XDP appended (and so acknowledged) that no drain has written
 * to disk yet, over every CPU's ring: 0 or a negative errno.
 */
int xtx_log_undrained(const struct xtx_target *t, __u64 *n);

#endif /* XTX_OCCUPANCY_H */
