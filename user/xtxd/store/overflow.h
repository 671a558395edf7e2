/* SPDX-License-Identifier: GPL-2.0-only */
/* The overflow store: the keys the kernel cache has no room for, with exact per-bucket filters. */
#ifndef XTXD_OVERFLOW_H
#define XTXD_OVERFLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xtx/proto.h>

/*
 * A concurrent hash table (liburcu's cds_lfht) of (table, key) -> value.
 * Readers (get, foreach) are lock-free under RCU.  Every change to the keys
 * of one kernel bucket happens under that bucket's lock (xtxd_ovf_lock), so
 * the bucket's filter and version floor move with its keys, and a deferred
 * op can write back its victim, run, and read the resulting filter as one
 * step.  Every thread that touches the store must be registered with RCU
 * (rcu_register_thread).
 *
 * The filter of a bucket is exact: bit b is set iff the store holds a key
 * of that bucket whose xtx_bloom_bit_of() is b.  It counts keys per bit, so
 * a delete clears a bit when the last such key leaves (DINT's "Bloom filter
 * rebuild on delete").
 */
struct xtxd_ovf;

struct xtxd_ovf_item {
	uint64_t key;
	uint64_t version;
	uint8_t table;
	uint16_t vlen;		/* up to XTX_VALUE_MAX */
	uint8_t value[XTX_VALUE_MAX];	/* zero past vlen */
};

/* nbuckets: the kernel cache's bucket count; max: keys held at most. NULL on ENOMEM. */
struct xtxd_ovf *xtxd_ovf_new(uint32_t nbuckets, uint64_t max);
/* The caller is a registered RCU thread and the only user left. */
void xtxd_ovf_free(struct xtxd_ovf *s);

/*
 * What the store costs in memory (estimates for sizing): per key it holds
 * with a value of vlen bytes (node, value, allocator header, its share of
 * the hash table; a node holds its own value's length), per kernel bucket
 * with keys here (the counting filter), and per kernel bucket.
 */
void xtxd_ovf_cost(size_t vlen, size_t *per_key, size_t *per_spilling_bucket, size_t *per_bucket);

/*
 * Keep XDP's copies of big values (XTX_MAP_BIGVAL, store/valstore.h) in
 * step with the store from now on: every put and del of a value over
 * XTX_VALUE_INLINE changes the copy too, under the same bucket lock.
 * fd < 0: none.  Set before the store holds any key, on an empty map.
 */
void xtxd_ovf_set_valstore(struct xtxd_ovf *s, int fd);
/*
 * For the calling thread from now on: its puts are not durable yet when
 * they reach the store (xtxd's rare path logs a packet's writes after
 * running them), so a put takes the key's copy away and makes none; once
 * the write is durable, xtxd_ovf_copy_refresh() copies it.  So XDP never
 * answers from a write that a crash could still lose, nor, after a lease
 * takeover, from a copy older than the store.
 */
void xtxd_ovf_copy_later(bool on);
/*
 * For the calling thread until turned off: new keys go in past max.  For
 * writes already decided and logged elsewhere (a HADES install XDP counted
 * done), which a full store must not lose: max bounds memory, not them.
 */
void xtxd_ovf_past_max(bool on);
/*
 * Copies (table, key) into the value store if the store holds it at
 * exactly version with a value over XTX_VALUE_INLINE.  Takes the bucket's
 * lock: call it without.
 */
void xtxd_ovf_copy_refresh(struct xtxd_ovf *s, uint8_t table, uint64_t key, uint64_t version);

uint32_t xtxd_ovf_nbuckets(const struct xtxd_ovf *s);
uint64_t xtxd_ovf_max(const struct xtxd_ovf *s);
uint64_t xtxd_ovf_count(const struct xtxd_ovf *s);
/* The kernel bucket of (table, key). */
uint32_t xtxd_ovf_bucket_of(const struct xtxd_ovf *s, uint8_t table, uint64_t key);

void xtxd_ovf_lock(struct xtxd_ovf *s, uint32_t bucket);
void xtxd_ovf_unlock(struct xtxd_ovf *s, uint32_t bucket);

/* 0 and *out filled, or -ENOENT.  Needs no lock. */
int xtxd_ovf_get(struct xtxd_ovf *s, uint8_t table, uint64_t key, struct xtxd_ovf_item *out);
/*
 * Stores it unless the store holds the key with a newer version (a
 * write-back may arrive twice).  Holding the key's bucket lock.  1: stored,
 * 0: ignored as older, -ENOSPC: a new key and the store is full (nothing
 * changed), -ENOMEM.
 */
int xtxd_ovf_put(struct xtxd_ovf *s, const struct xtxd_ovf_item *it);
/*
 * Removes the key if its stored version is below `below` (UINT64_MAX: any),
 * copying what was removed into *old when old is not NULL.  Holding the
 * key's bucket lock.  1: removed, 0: absent or not older.
 */
int xtxd_ovf_del(struct xtxd_ovf *s, uint8_t table, uint64_t key, uint64_t below,
		 struct xtxd_ovf_item *old);
/* The bucket's exact filter.  Holding its lock (else a snapshot that may be stale). */
uint64_t xtxd_ovf_bloom(struct xtxd_ovf *s, uint32_t bucket);
/*
 * xtxd's own copy of the bucket's version floor: the highest version that
 * left the store for good.  The kernel's floor learns it through TC egress,
 * but that fix is skipped when the bucket lock was taken over, and a key
 * re-inserted later must still never reuse a version.  Holding its lock.
 */
uint64_t xtxd_ovf_floor(struct xtxd_ovf *s, uint32_t bucket);
void xtxd_ovf_raise_floor(struct xtxd_ovf *s, uint32_t bucket, uint64_t version);

/*
 * Calls fn on every item inside one RCU read-side section: fn must not
 * block, and sees a weakly consistent view (the item is a copy, valid
 * during the call).  Stops at fn's first nonzero return and returns it;
 * else 0 (-ENOMEM when it could not start).
 */
int xtxd_ovf_foreach(struct xtxd_ovf *s, int (*fn)(const struct xtxd_ovf_item *it, void *arg),
		     void *arg);

#endif /* XTXD_OVERFLOW_H */
