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
 * One key as a dump shows it: a value of up to XTX_VALUE_INLINE bytes in
 * value[], a longer one (up to XTX_VALUE_MAX) in an allocation of its own
 * at big, owned by the record's array (wl_snap_free(), wl_rec_release()),
 * so snapshots of millions of short rows stay small.  wl_rec_value() picks.
 */
struct wl_rec {
	uint8_t table;
	uint16_t vlen;
	uint16_t server;	/* while merging: which server's dump it came from */
	uint64_t key;
	uint64_t version;
	uint8_t value[XTX_VALUE_INLINE];
	uint8_t *big;		/* vlen > XTX_VALUE_INLINE, else NULL */
};

static inline const uint8_t *wl_rec_value(const struct wl_rec *r)
{
	return r->vlen > XTX_VALUE_INLINE ? r->big : r->value;
}

/* Frees a record's long value (one not handed to a snapshot). */
void wl_rec_release(struct wl_rec *r);

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
 * Parses one `xtxctl dump` line ("table=T key=K version=V vlen=L value=HEX"),
 * values up to XTX_VALUE_MAX bytes (a longer one allocated: wl_rec_release()).
 * Returns 0, or -1 for anything else (nothing allocated).
 */
int wl_parse_dump_line(const char *line, struct wl_rec *r);

/*
 * Merges per-server records (each tagged with its server, any order) into
 * out, keeping tables in mask (bit t for table t), and checks placement:
 * a key must be on each of its `replication` replicas and nowhere else,
 * with equal value and version.  Each breach is printed and counted in
 * *violations.  Consumes recs (sorts it in place; the long values of the
 * records kept move to out, the others are freed: the caller frees only
 * the array).  0, or -ENOMEM (recs' long values freed).
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

/*
 * The statistical checks of --verify (shares of a mix, success rates): a run makes
 * about fifty, and a demo or a test must not fail by chance.  Each check's tolerance
 * keeps its false alarms below WL_FALSE_ALARM whatever the number of draws
 * (Bernstein's inequality, not a normal approximation: about 7.5 standard
 * deviations at a million draws), so a run raises one less than once in 10^10.
 * A real bias still shows: 0.3% of the attempts at a million draws.
 */
#define WL_FALSE_ALARM	1e-12
/* How far a share of n independent draws of probability p may fall from p. */
double wl_share_tolerance(double p, uint64_t n);
/* |got - p| within wl_share_tolerance(p, n), plus slack. */
bool wl_share_plausible(double got, double p, uint64_t n, double slack);

/* The record of (table, key), or NULL. */
const struct wl_rec *wl_snap_find(const struct wl_snap *s, uint8_t table, uint64_t key);
/* The records of one table: [*first, *first + count). */
size_t wl_snap_table(const struct wl_snap *s, uint8_t table, const struct wl_rec **first);

#endif /* XTX_WLSNAP_H */
