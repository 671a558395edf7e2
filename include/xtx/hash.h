/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The one hash of (table, key) used by servers, clients and tests alike. */
#ifndef XTX_HASH_H
#define XTX_HASH_H

#include <linux/types.h>

/*
 * A 64-bit finaliser (splitmix64) over key and table.  Every placement
 * decision derives from it through disjoint bit ranges, because with table
 * sizes divisible by the server count, taking `h mod size` and `h mod N`
 * from the same bits would confine each server to a fraction of its slots:
 *
 *   bits  0..31  KV bucket index        (xtx_bucket_of)
 *   bits 32..63  lock slot index        (xtx_lock_slot_of)
 *   bits 58..63  bucket Bloom-filter bit (xtx_bloom_bit_of; DINT reuses the
 *                top bits of the raw hash instead of hashing again)
 *   a second mix shard placement        (xtx_shard_of)
 */
static inline __u64 xtx_mix64(__u64 x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline __u64 xtx_hash(__u8 table, __u64 key)
{
	return xtx_mix64(key ^ ((__u64)table << 56) ^ ((__u64)table * 0x2545f4914f6cdd1dull));
}

/* Map 32 uniform bits onto [0, n) without a division (Lemire's reduction). */
static inline __u32 xtx_reduce32(__u32 bits, __u32 n)
{
	return (__u32)(((__u64)bits * n) >> 32);
}

static inline __u32 xtx_bucket_of(__u64 h, __u32 nbuckets)
{
	return xtx_reduce32((__u32)h, nbuckets);
}

static inline __u32 xtx_lock_slot_of(__u64 h, __u32 nslots)
{
	return xtx_reduce32((__u32)(h >> 32), nslots);
}

static inline __u32 xtx_bloom_bit_of(__u64 h)
{
	return (__u32)(h >> 58);
}

static inline __u32 xtx_shard_of(__u64 h, __u32 nservers)
{
	return xtx_reduce32((__u32)xtx_mix64(h ^ 0x5bd1e9955bd1e995ull), nservers);
}

#endif /* XTX_HASH_H */
