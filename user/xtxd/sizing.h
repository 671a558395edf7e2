/* SPDX-License-Identifier: GPL-2.0-only */
/* Sizes that follow the data: xtxd --capacity KEYS as map sizes, and what they cost in memory. */
#ifndef XTXD_SIZING_H
#define XTXD_SIZING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * DINT (§5) provisions the kernel cache and the lock table at 1.5x the
 * keys (as FaSST does its hash table): about 5.3 keys per 8-way bucket,
 * so few buckets spill (3% of the keys) and few locks share a slot.
 */
#define XTXD_PROVISION_NUM	3
#define XTXD_PROVISION_DEN	2
/*
 * The overflow store must be able to take every key: eviction (write-back
 * under skew) can move any key out of the kernel cache.  An eighth more
 * for the keys inserted past the plan and tombstones waiting to be written back.
 */
#define XTXD_OVF_HEADROOM_DIV	8
#define XTXD_CAPACITY_MAX	(1ull << 32)

struct xtxd_sizing {
	uint64_t capacity;	/* keys this server holds, all tables and replicas; 0: not given */
	uint32_t kv_buckets;
	uint32_t lock_slots;
	uint64_t overflow_max;
	bool kv_capped;		/* the rule wanted more than XTX_KV_BUCKETS_MAX */
	bool lock_capped;	/* ... more than XTX_LOCK_SLOTS_MAX */
	bool ovf_capped;	/* ... more than XTXD_OVERFLOW_MAX_LIMIT */
};

/* The sizes for `keys` (1..XTXD_CAPACITY_MAX) by the rules above, capped at the maps' limits. */
void xtxd_size_for(uint64_t keys, struct xtxd_sizing *s);

/*
 * Keys spilled to the overflow store, and buckets spilling, expected when
 * `keys` uniformly hashed keys go into nbuckets buckets of `ways` ways
 * (Poisson occupancy): what the bulk load leaves beyond the kernel cache.
 */
void xtxd_spill_expected(uint64_t keys, uint32_t nbuckets, unsigned int ways, uint64_t *spill_keys,
			 uint64_t *spill_buckets);

/*
 * What the overflow store costs: per key it holds (with a value of the
 * kernel's value size), per kernel bucket spilling, per kernel bucket; and
 * per key with a value of XTX_VALUE_MAX bytes.  A value over the kernel's
 * slot lives only here, whatever the cache's room, its node sized to it:
 * such keys add per_big_key (at most) each to the estimate below.
 */
struct xtxd_ovf_cost {
	size_t per_key, per_spilling_bucket, per_bucket;
	size_t per_big_key;
};

struct xtxd_memory {
	uint64_t kv_bytes, lock_bytes;		/* the kernel maps --capacity sizes */
	uint64_t spill_keys;			/* expected in the overflow store after a load */
	uint64_t ovf_bytes;			/* its expected footprint then */
	uint64_t total_bytes;
	double per_key;				/* total over keys; 0 when keys is 0 */
};

/* The memory of these sizes holding `keys` keys (0: the overflow store's fixed part only). */
void xtxd_memory_estimate(uint64_t keys, const struct xtxd_sizing *s,
			  const struct xtxd_ovf_cost *c, struct xtxd_memory *m);

#endif /* XTXD_SIZING_H */
