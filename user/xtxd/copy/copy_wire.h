/* SPDX-License-Identifier: GPL-2.0-only */
/* A copy of shards between two xtxd (copy.h): the request, then the reply stream. */
#ifndef XTXD_COPY_WIRE_H
#define XTXD_COPY_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <xtx/kv.h>
#include "cluster.h"

/* "XCP2": items of variable length (values up to XTX_VALUE_MAX); "XCPY" sent 64-byte ones */
#define XTXD_COPY_MAGIC		0x32504358u

struct xtxd_copy_req {
	uint32_t magic;
	uint32_t epoch;		/* the configuration the copier copies for */
	uint32_t from;		/* the copier's server index */
	uint32_t nshards;	/* that configuration's shard count */
	uint64_t shards[XTX_CLUSTER_MAX_SHARDS / 64];	/* a bit per shard wanted */
};

/*
 * The reply: this header, then (status 0) one item per key (flags
 * XTX_KVF_VALID), ended by one whose flags are 0, whose key is the number
 * of keys sent and whose version is the source's highest version floor:
 * the copier raises its floors to it, so a key deleted before the copy and
 * created again never reuses a version.
 */
struct xtxd_copy_hdr {
	uint32_t magic;
	int32_t status;		/* 0, or a negative errno: why the copy is refused */
};

/* One key: this, then its vlen value bytes, padded with zeros to a multiple of 8. */
struct xtxd_copy_item {
	uint64_t key;
	uint64_t version;
	uint8_t table;
	uint8_t flags;		/* XTX_KVF_VALID; 0 on the last */
	uint16_t vlen;		/* up to XTX_VALUE_MAX */
	uint32_t pad;
};

_Static_assert(sizeof(struct xtxd_copy_item) == 24, "copy item layout");

/* An item's bytes on the wire, value included. */
static inline size_t xtxd_copy_item_size(uint16_t vlen)
{
	return sizeof(struct xtxd_copy_item) + (((size_t)vlen + 7) & ~(size_t)7);
}

#define XTXD_COPY_ITEM_MAX	(sizeof(struct xtxd_copy_item) + XTX_VALUE_MAX)

static inline bool xtxd_copy_wants(const struct xtxd_copy_req *r, unsigned int s)
{
	return s < XTX_CLUSTER_MAX_SHARDS && (r->shards[s / 64] >> (s % 64) & 1);
}

#endif /* XTXD_COPY_WIRE_H */
