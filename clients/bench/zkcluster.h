/* SPDX-License-Identifier: GPL-2.0-only */
/* --zk: a benchmark's servers, replication and shard map from a cluster held in ZooKeeper. */
#ifndef XTX_BENCH_ZKCLUSTER_H
#define XTX_BENCH_ZKCLUSTER_H

#include <stdint.h>
#include <netinet/in.h>
#include "cluster.h"

/*
 * Reads cluster name's configuration at the ensemble hosts: *servers
 * (calloc'ed, with port), *n, *replication and *out (calloc'ed) from it.
 * 0, or -1 after printing why.
 */
int bench_zk_cluster(const char *hosts, const char *name, uint16_t port,
		     struct sockaddr_in **servers, unsigned int *n, uint32_t *replication,
		     struct xtx_cluster **out);

/* Where a client reads its cluster's configuration again (libxtx's cfg.refresh). */
struct bench_zk_source {
	const char *hosts, *name;
};

/* libxtx's cfg.refresh over a bench_zk_source: a short session, one read. */
int bench_zk_refresh(void *source, struct xtx_cluster *out);

#endif /* XTX_BENCH_ZKCLUSTER_H */
