/* SPDX-License-Identifier: GPL-2.0-only */
/* --zk: a benchmark's servers, replication and shard map from a cluster held in ZooKeeper. */
#ifndef XTX_BENCH_ZKCLUSTER_H
#define XTX_BENCH_ZKCLUSTER_H

#include <pthread.h>
#include <stdint.h>
#include <netinet/in.h>
#include "cluster.h"

/* Where a client reads its cluster's configuration again (libxtx's cfg.refresh). */
struct bench_zk_source {
	const char *hosts, *name;
	/*
	 * One session for every refresh of the process (every client thread's),
	 * opened by the first: a session per refresh would stall xtx_poll() for
	 * a connect each time a server goes silent, and churn the ensemble.
	 */
	pthread_mutex_t mu;
	struct xtx_zk *z;
	uint64_t unreached_since_ns;	/* z reaches no member since (0: it does) */
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

/* libxtx's cfg.refresh over a bench_zk_source: one read on the shared session. */
int bench_zk_refresh(void *source, struct xtx_cluster *out);
/* Ends the shared session, if a refresh opened one. */
void bench_zk_source_close(struct bench_zk_source *src);

#endif /* XTX_BENCH_ZKCLUSTER_H */
