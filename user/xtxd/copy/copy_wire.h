/* SPDX-License-Identifier: GPL-2.0-only */
/* A copy of shards between two xtxd (copy.h): the request, then the reply stream. */
#ifndef XTXD_COPY_WIRE_H
#define XTXD_COPY_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xtx/kv.h>
#include "cluster.h"

/*
 * "XCP3": the request sealed, the items in frames, each sealed; "XCP2" sent
 * items of variable length unframed, "XCPY" 64-byte ones
 */
#define XTXD_COPY_MAGIC		0x33504358u

struct xtxd_copy_req {
	uint32_t magic;
	uint32_t epoch;		/* the configuration the copier copies for */
	uint32_t from;		/* the copier's server index */
	uint32_t nshards;	/* that configuration's shard count */
	uint64_t shards[XTX_CLUSTER_MAX_SHARDS / 64];	/* a bit per shard wanted */
};

/*
 * After the request: its stamp (the copier's CLOCK_REALTIME, increasing)
 * and, with the cluster's secret, the MAC of the request and the stamp
 * (0 without).  A source with a secret serves only a request whose MAC
 * checks, stamped within XTXD_COPY_SKEW_NS of its clock and after the last
 * it served that server: nobody without the secret gets a copy, and a
 * captured request cannot be sent again.
 */
struct xtxd_copy_auth {
	uint64_t stamp;
	uint64_t mac;
};

#define XTXD_COPY_SKEW_NS	(120ull * 1000 * 1000 * 1000)

/*
 * The reply: this header, then (status 0) frames of whole items, one item
 * per key (flags XTX_KVF_VALID), ended by a frame of one item whose flags
 * are 0, whose key is the number of keys sent and whose version is the
 * source's highest version floor: the copier raises its floors to it, so
 * a key deleted before the copy and created again never reuses a version.
 */
struct xtxd_copy_hdr {
	uint32_t magic;
	int32_t status;		/* 0, or a negative errno: why the copy is refused */
	uint64_t mac;		/* with a secret: of magic and status, chained to the request's */
};

/*
 * A frame: this, len bytes of whole items, then a uint64_t MAC of them
 * chained to the one before (the first to the reply's): with a secret the
 * copier installs nothing it has not checked, and a frame left out or
 * moved breaks the chain.  0 without a secret.
 */
struct xtxd_copy_frame {
	uint32_t len;
	uint32_t pad;
};

#define XTXD_COPY_FRAME_MAX	(64 * 1024 + XTXD_COPY_ITEM_MAX)

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

/* ---- the seals (copy/auth.c): 0 when there is no secret ---- */
bool xtxd_copy_sealed(void);
uint64_t xtxd_copy_req_mac(const struct xtxd_copy_req *rq, uint64_t stamp);
uint64_t xtxd_copy_reply_mac(const struct xtxd_copy_hdr *h, uint64_t req_mac);
uint64_t xtxd_copy_frame_mac(uint64_t chain, const struct xtxd_copy_frame *f, const void *bytes);
/* Compares seals in time independent of where they differ; always true without a secret. */
bool xtxd_copy_mac_ok(uint64_t want, uint64_t got);

static inline bool xtxd_copy_wants(const struct xtxd_copy_req *r, unsigned int s)
{
	return s < XTX_CLUSTER_MAX_SHARDS && (r->shards[s / 64] >> (s % 64) & 1);
}

#endif /* XTXD_COPY_WIRE_H */
