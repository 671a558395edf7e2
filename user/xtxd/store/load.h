/* SPDX-License-Identifier: GPL-2.0-only */
/* Bulk load: many new keys into the kernel cache and the overflow store while XDP serves. */
#ifndef XTXD_LOAD_H
#define XTXD_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xtx/hash.h>
#include <xtx/kv.h>
#include <xtx/proto.h>
#include "loadgen.h"

struct xtxd_ovf;
struct xtxd_out;
struct xtx_target;

/*
 * One key to load; value is zero past vlen.  A value over XTX_VALUE_INLINE
 * bytes is in big instead (owned by whoever made the item) and goes to the
 * overflow store, never into a kernel way.
 */
struct xtxd_load_item {
	uint64_t key;
	uint8_t table;
	uint16_t vlen;		/* up to XTX_VALUE_MAX */
	uint8_t value[XTX_VALUE_INLINE];
	const uint8_t *big;	/* vlen > XTX_VALUE_INLINE: the value's bytes */
	/*
	 * 0: one above the bucket's floor (this server's history decides);
	 * else exactly this (recovery; a replicated load, where every replica
	 * must end with the same version whatever its own history)
	 */
	uint64_t version;
};

struct xtxd_load_counts {
	uint64_t kernel;	/* keys put into a free kernel way, VALID|DIRTY */
	uint64_t store;		/* keys put into the overflow store */
	uint64_t duplicates;	/* keys present already: skipped, never overwritten */
	uint64_t busy;		/* tries that found the bucket locked: retried later */
	uint64_t takeovers;	/* rare-path holds past their lease taken over */
	uint64_t stale;		/* deleted at or above the version given: skipped */
};

/*
 * The insertion engine, usable on any bucket array (the mmap-ed kernel
 * map, or plain memory in unit tests).  A key already in the bucket (live)
 * or in the store is a duplicate.  Otherwise it goes into a free way of its
 * bucket as VALID|DIRTY (the normal write-back path saves it when it is
 * evicted), or into the store with the bucket's filter bit ORed in.  A new
 * key's version is one above the bucket's floor: the larger of the kernel's
 * vfloor and xtxd's own (xtxd_ovf_floor).  A key whose kernel slot is a
 * tombstone comes back in that way, its version going on, as XDP's insert.
 *
 * Each bucket is changed under its lock word, taken as XDP takes it (CAS
 * 0 -> XTX_KV_LOCK_FAST) and then under the store's bucket lock, so XDP,
 * TC and the rare path see the bucket before or after, never in between.
 * A busy bucket is retried after the others; a rare-path hold older than
 * lease_ns is taken over as XDP would.  Keys of one call land in any
 * order, so of a key given twice either copy may win.
 *
 * Loaders may share the work: one with nshards > 1 takes only the keys
 * whose bucket % nshards == shard, so no two contend for a bucket (nor
 * for the store's bucket locks, striped by bucket too).
 */
struct xtxd_loader {
	struct xtx_kv_bucket *kv;
	uint32_t nbuckets;
	struct xtxd_ovf *store;
	uint64_t lease_ns;	/* 0: never take a bucket over */
	bool write_through;	/* the ablation: the kernel holds clean copies only */
	int stop_fd;		/* readable: give up (-ECANCELED); -1: none */
	uint64_t busy_timeout_ns; /* a bucket locked this long with no progress: -ETIMEDOUT */
	uint32_t shard, nshards;  /* nshards 0 or 1: every key */
	struct xtxd_load_counts n;
	/* scratch, grown as needed */
	uint64_t *hash;
	uint32_t *idx;
	uint32_t *retry;
	size_t cap;
};

#define XTXD_LOAD_BUSY_TIMEOUT_NS	(10ull * 1000 * 1000 * 1000)

/*
 * Loads items[0..n).  0, or the first error: -ENOSPC (the store is full),
 * -ENOMEM, -ECANCELED (stop_fd), -ETIMEDOUT; keys placed before it stay,
 * and l->n counts them.  The caller is a registered RCU thread.
 */
int xtxd_load_items(struct xtxd_loader *l, const struct xtxd_load_item *items, size_t n);
void xtxd_loader_release(struct xtxd_loader *l);

/*
 * One line of a load file: "table key hexvalue" (value may be omitted:
 * empty; up to XTX_VALUE_MAX bytes), '#' starts a comment, blank lines are
 * allowed.  Key: decimal, or hex after 0x.  1: *it filled (a value over
 * XTX_VALUE_INLINE in it->big, malloc'd: free it with
 * xtxd_load_item_free); 0: nothing on the line; -1: *why says what is
 * wrong (at most why_len bytes).
 */
int xtxd_load_parse_line(const char *line, struct xtxd_load_item *it, char *why, size_t why_len);
void xtxd_load_item_free(struct xtxd_load_item *it);

/*
 * The control channel's "load" requests.  Both write their whole answer to
 * out, flushing as they go:
 *
 *   progress DONE TOTAL      now and then (10 a second), while inserting
 *   result keys=N kernel=K store=U duplicates=D takeovers=T busy=B seconds=S stale=X
 *   snapshot: ... / file: ... (make_durable's lines)
 *   OK | ERR <why>
 *
 * keys = kernel + store: the keys loaded.  The result line comes before
 * ERR too once inserting began: what was loaded stays.  The client going
 * away stops the load; so does stop_fd turning readable (xtxd stopping).
 * The caller is a registered RCU thread.
 */
struct xtxd_load_env {
	const struct xtx_target *t;
	struct xtxd_ovf *store;
	struct xtxd_out *out;
	int stop_fd;
	/*
	 * 0: each new key one above its bucket's floor, fine for one server.
	 * Else every new key at this version ("load ... at V"): a replicated
	 * load gives all replicas one V above every replica's version mark,
	 * so they agree on each key's version whatever their histories.
	 */
	uint64_t version;
	/*
	 * Called once keys were loaded, before the answer's OK: loaded keys
	 * are in no log, so they must be made durable (a snapshot) before
	 * the load says it is done.  0, or a negative errno after an ERR line
	 * (the keys stay loaded).  NULL: not asked (unit tests).
	 */
	int (*make_durable)(const struct xtxd_load_env *env);
};

/*
 * The version mark: the highest version this server holds or has let go
 * of (live keys, tombstones, the kernel's and the store's bucket floors).
 * A version above it is above the history of every key here.  0 or a
 * negative errno.  The caller is a registered RCU thread.
 */
int xtxd_version_mark(const struct xtx_target *t, struct xtxd_ovf *store, uint64_t *mark);

/* load gen TABLE FIRST COUNT VSIZE SEED: keys FIRST..FIRST+COUNT-1 with xtxd_load_gen_value. */
void xtxd_load_gen(const struct xtxd_load_env *env, uint8_t table, uint64_t first,
		   uint64_t count, unsigned int vsize, uint64_t seed);
/*
 * load file: the lines follow on fd (pending: those already read) up to
 * the client's end of stream.  All are parsed before any is loaded, so a
 * bad line ("ERR line N: ...") loads nothing.
 */
void xtxd_load_file(const struct xtxd_load_env *env, int fd, const char *pending,
		    size_t npending);

#endif /* XTXD_LOAD_H */
