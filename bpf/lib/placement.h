/* SPDX-License-Identifier: GPL-2.0-only */
/* Where the served configuration places a key: its shard's replica set (xtx_shards). */
#ifndef XTX_BPF_PLACEMENT_H
#define XTX_BPF_PLACEMENT_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/proto.h>
#include <xtx/hash.h>
#include "maps.h"

/*
 * The replica set of (table, key)'s shard, packed as xtx_log_replicas_pack()
 * packs it: 1 with *set filled, 0 in a static cluster (placement is the
 * clients'), -1 when it cannot be read.  xtxd closes the server (epoch
 * fenced) while it rewrites the shards, so the count and the sets are never
 * read half changed.
 */
static __always_inline int xtx_placement(__u8 table, __u64 key, __u32 *set)
{
	__u32 zero = 0, n, shard, *want;
	struct xtx_epoch_lease *el = bpf_map_lookup_elem(&xtx_epoch, &zero);

	if (!el)
		return -1;
	n = *(volatile __u32 *)&el->nshards;
	if (!n)
		return 0;
	if (n > XTX_SHARDS_MAX)
		return -1;
	shard = xtx_shard_of(xtx_hash(table, key), n);
	want = bpf_map_lookup_elem(&xtx_shards, &shard);
	if (!want)
		return -1;
	*set = *want;
	return 1;
}

/*
 * HINTEND's check (include/xtx/hades.h): every replica of the key's shard
 * is among the transaction's participants (a bitmap of server indices), so
 * a transaction placed by an older configuration never stages a write that
 * a replica taken in since (a copier) would miss.
 */
static __always_inline bool xtx_placement_covered(__u8 table, __u64 key, __u64 participants)
{
	__u32 set = 0, i, n;
	int r = xtx_placement(table, key, &set);

	if (r <= 0)
		return r == 0;
	n = set >> 24;
	for (i = 0; i < 3; i++)
		if (i < n && !(participants >> ((set >> (8 * i)) & 0xff) & 1))
			return false;
	return true;
}

#endif /* XTX_BPF_PLACEMENT_H */
