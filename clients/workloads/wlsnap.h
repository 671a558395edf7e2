/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A consistent picture of a workload's tables across all servers, read
 * with `xtxctl dump` from each: every key must sit on exactly its
 * replicas with the same value and version there.
 */
#ifndef XTX_WLSNAP_H
#define XTX_WLSNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xtx/proto.h>

/*
 * Values are as long as the row's (up to XTX_VALUE_MAX), each on the heap
 * and owned by its record: a snapshot of millions of small rows stays small.
 */
struct wl_rec {
	uint8_t table;
	uint16_t vlen;
	uint16_t server;	/* while merging: which server's dump it came from */
	uint64_t key;
	uint64_t version;
	uint8_t *value;		/* vlen bytes */
};

/* Sorted by (table, key), one record per key. */
struct wl_snap {
	struct wl_rec *r;
	size_t n;
};

/* How to reach server i's control channel, or how else to read its store. */
struct wl_ctl {
	const char *xtxctl;	/* path of the xtxctl binary */
	const char *dump_cmd;	/* if set, `dump_cmd I` prints server I's dump instead */
	unsigned int nservers;
	char (*netns)[64];	/* [nservers] */
	char (*iface)[32];
};

/* Replica i (0: primary) of (table, key) among nservers, as libxtx places it. */
/* The i-th replica of a key, or WL_NO_REPLICA past its shard's replicas. */
typedef unsigned int (*wl_place_fn)(void *arg, uint8_t table, uint64_t key, unsigned int i);
#define WL_NO_REPLICA	(~0u)

/*
 * Parses one `xtxctl dump` line ("table=T key=K version=V vlen=L value=HEX").
 * Returns 0 (r->value is the caller's to free), or -1 for anything else
 * (nothing to free).
 */
int wl_parse_dump_line(const char *line, struct wl_rec *r);
/* Frees the values of n records (not the array). */
void wl_recs_free_values(struct wl_rec *recs, size_t n);

/*
 * Merges per-server records (each tagged with its server, any order) into
 * out, keeping tables in mask (bit t for table t), and checks placement:
 * a key must be on each of its `replication` replicas and nowhere else,
 * with equal value and version.  Each breach is printed and counted in
 * *violations.  Consumes recs (sorts it in place; the values of records it
 * does not keep are freed, those it keeps move to out, also on failure
 * they are freed): the caller frees only the array.  0, or -ENOMEM.
 */
int wl_snap_merge(struct wl_rec *recs, size_t n, uint32_t mask, unsigned int replication,
		  wl_place_fn place, void *place_arg, struct wl_snap *out,
		  unsigned long *violations);

/*
 * Dumps every server through xtxctl but those in skip (a bit per index:
 * moved out of the configuration, replicas of nothing) and merges them as
 * above; 0 or -1 after printing why.
 */
int wl_snapshot(const struct wl_ctl *ctl, uint64_t skip, uint32_t mask, unsigned int replication,
		wl_place_fn place, void *place_arg, struct wl_snap *out,
		unsigned long *violations);

void wl_snap_free(struct wl_snap *s);

/*
 * Prints "verify: VIOLATION: ..." to stderr and counts it; after the
 * first WL_VIOLATION_REPORTS of a run the rest are only counted.
 */
#define WL_VIOLATION_REPORTS	20
void wl_violation(unsigned long *count, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints "verify: ... OK" to stderr for a check that passed. */
void wl_check_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* |got - p| within 4 standard deviations of a share of n draws, plus slack. */
bool wl_within_4sigma(double got, double p, uint64_t n, double slack);

/* The record of (table, key), or NULL. */
const struct wl_rec *wl_snap_find(const struct wl_snap *s, uint8_t table, uint64_t key);
/* The records of one table: [*first, *first + count). */
size_t wl_snap_table(const struct wl_snap *s, uint8_t table, const struct wl_rec **first);

#endif /* XTX_WLSNAP_H */
