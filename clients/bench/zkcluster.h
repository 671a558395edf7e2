/* SPDX-License-Identifier: GPL-2.0-only */
/* --zk: a benchmark's servers, replication and shard map from a cluster held in ZooKeeper. */
#ifndef XTX_BENCH_ZKCLUSTER_H
#define XTX_BENCH_ZKCLUSTER_H

#include <stdint.h>
#include <netinet/in.h>
#include "cluster.h"

/* Where a client reads its cluster's configuration again (libxtx's cfg.refresh). */
struct bench_zk_source {
	const char *hosts, *name;
};

/*
 * The servers of a command that takes --servers LIST or --zk HOSTS (one of
 * them): *out (calloc'ed, with port) and *n; with --zk also *replication,
 * *cluster and *src (where to read it again).  0; -2 when neither or both
 * were given; -1 otherwise; after printing why.
 */
int bench_pick_servers(const char *servers, const char *zk, const char *zk_name, uint16_t port,
		       struct sockaddr_in **out, unsigned int *n, uint32_t *replication,
		       struct xtx_cluster **cluster, struct bench_zk_source *src);

/* libxtx's cfg.refresh over a bench_zk_source: a short session, one read. */
int bench_zk_refresh(void *source, struct xtx_cluster *out);

#endif /* XTX_BENCH_ZKCLUSTER_H */
