/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Loading a workload's initial rows through libxtx transactions, so any
 * server speaking the protocol (xtxd, xtx-udpd) can be populated: rows go
 * in blind-write transactions of at most WL_LOAD_BATCH keys, several in
 * flight on each of several clients.
 */
#ifndef XTX_WLLOAD_H
#define XTX_WLLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <xtx/proto.h>
#include "libxtx.h"

/*
 * Keys per loading transaction: HADES stages at most 8 writes per server
 * per transaction, and with R = nservers every server stages every key,
 * so a batch of 8 is accepted by every protocol's servers.
 */
#define WL_LOAD_BATCH		8
/* Concurrency aborts one batch may meet before the load gives up. */
#define WL_LOAD_MAX_RETRIES	1000
/* How long a batch waits for a table serving the other protocol to switch (XTX_CAUSE_MIXED). */
#define WL_LOAD_MIXED_WAIT_NS	(10ull * 1000 * 1000 * 1000)

/*
 * One row: a value of up to XTX_VALUE_INLINE bytes in value[], a longer
 * one (up to XTX_VALUE_MAX) in an allocation of its own at big, so tables
 * of millions of short rows stay small.  wl_row_value() picks.
 */
struct wl_row {
	uint64_t key;
	uint8_t table;
	uint16_t vlen;
	uint8_t value[XTX_VALUE_INLINE];
	uint8_t *big;		/* vlen > XTX_VALUE_INLINE, else NULL */
};

static inline const uint8_t *wl_row_value(const struct wl_row *r)
{
	return r->vlen > XTX_VALUE_INLINE ? r->big : r->value;
}

/* The rows to load, in the order the workload emitted them. */
struct wl_rows {
	struct wl_row *r;
	size_t n, cap;
};

/* Appends a row of up to XTX_VALUE_MAX bytes; 0 or -1 after printing why. */
int wl_rows_add(struct wl_rows *rows, uint8_t table, uint64_t key, const uint8_t *value,
		uint16_t vlen);
void wl_rows_free(struct wl_rows *rows);

struct wl_load_cfg {
	const struct sockaddr_in *servers;
	unsigned int nservers;
	unsigned int replication;
	enum xtx_protocol protocol;	/* the run's: a table serves one family at a time */
	uint32_t client_base;		/* loader i is client client_base + i */
	unsigned int nclients;		/* loaders, one thread each */
	unsigned int inflight;		/* transactions each keeps going */
	uint64_t timeout_ns;
	uint64_t lock_lease_ns;
	const struct xtx_secret *secret;	/* the cluster's, or NULL */
	const struct xtx_cluster *cluster;	/* held in ZooKeeper, or NULL: static */
	enum xtx_transport_kind transport;	/* the run's */
	_Atomic uint64_t *written;		/* rows committed so far, for progress; or NULL */
};

/* What a load did, summed over the loaders. */
struct wl_load_stats {
	uint64_t rows, txns, retries, retransmits;
	bool full;	/* a server's store was full (XTX_CAUSE_FULL), or maybe (in doubt) */
};

/*
 * Writes every row with xtx_put().  Retries a batch after a concurrency
 * abort (lock, validation, lease); any other end (refused, full, servers
 * unreachable) stops the load.  0, or -1 after printing why.
 */
int wl_load_rows(const struct wl_load_cfg *cfg, const struct wl_rows *rows,
		 struct wl_load_stats *st);

#endif /* XTX_WLLOAD_H */
