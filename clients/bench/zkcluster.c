// SPDX-License-Identifier: GPL-2.0-only
/* A benchmark's view of a cluster held in ZooKeeper (zkcluster.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "clock.h"
#include "servers.h"
#include "zk.h"
#include "zkcluster.h"

#define CONNECT_WAIT_MS		5000

/* The configuration's servers (with port), replication and map, each calloc'ed. */
static int bench_zk_cluster(const char *hosts, const char *name, uint16_t port,
		     struct sockaddr_in **servers, unsigned int *n, uint32_t *replication,
		     struct xtx_cluster **out)
{
	struct xtx_cluster *c = calloc(1, sizeof(*c));
	struct xtx_zk *z;
	unsigned int i;
	int err;

	if (!c)
		return -1;
	z = xtx_zk_open(hosts, name, XTX_ZK_SESSION_MS_DEFAULT, CONNECT_WAIT_MS);
	if (!z)
		goto fail;
	/* the session only reads: it ends here, and with it nothing of ours */
	err = xtx_zk_read_config(z, c, NULL, false);
	xtx_zk_close(z);
	if (err == -ENOENT)
		fprintf(stderr, "Error: --zk: no cluster '%s' at %s\n", name, hosts);
	if (err)
		goto fail;
	*servers = calloc(c->nservers, sizeof(**servers));
	if (!*servers)
		goto fail;
	for (i = 0; i < c->nservers; i++) {
		(*servers)[i].sin_family = AF_INET;
		(*servers)[i].sin_addr = c->server[i];
		(*servers)[i].sin_port = htons(port);
	}
	*n = c->nservers;
	*replication = c->replication;
	*out = c;
	return 0;
fail:
	free(c);
	return -1;
}

/* It runs inside xtx_poll(): an ensemble out of reach must not hold the client long. */
#define REFRESH_WAIT_MS		1000
/*
 * A session that reaches no member this long is opened afresh.  An ensemble
 * that lost its data refuses the old session for good without expiring it
 * (the session has seen a newer state than any member now holds), and the
 * recovered configuration is only found by a new one.  Reads only: a new
 * session costs nothing here.
 */
#define REOPEN_AFTER_NS		(6ull * 1000 * 1000 * 1000)

int bench_zk_refresh(void *source, struct xtx_cluster *out)
{
	struct bench_zk_source *src = source;
	int err = -1;

	uint64_t now = xtx_now_ns();

	pthread_mutex_lock(&src->mu);
	/* a session that expired (the ensemble was out of reach for long) is opened again */
	if (src->z && (xtx_zk_state(src->z) == XTX_ZK_EXPIRED ||
		       (src->unreached_since_ns && now - src->unreached_since_ns >= REOPEN_AFTER_NS))) {
		xtx_zk_close(src->z);
		src->z = NULL;
		src->unreached_since_ns = 0;
	}
	if (!src->z)
		src->z = xtx_zk_open(src->hosts, src->name, XTX_ZK_SESSION_MS_DEFAULT,
				     REFRESH_WAIT_MS);
	if (src->z)
		err = xtx_zk_read_config(src->z, out, NULL, false);
	if (!src->z || xtx_zk_state(src->z) == XTX_ZK_CONNECTED)
		src->unreached_since_ns = 0;
	else if (!src->unreached_since_ns)
		src->unreached_since_ns = now;
	pthread_mutex_unlock(&src->mu);
	return err ? -1 : 0;
}

void bench_zk_source_close(struct bench_zk_source *src)
{
	pthread_mutex_lock(&src->mu);
	if (src->z)
		xtx_zk_close(src->z);
	src->z = NULL;
	pthread_mutex_unlock(&src->mu);
}

int bench_pick_servers(const char *servers, const char *zk, const char *zk_name, uint16_t port,
		       struct sockaddr_in **out, unsigned int *n, uint32_t *replication,
		       struct xtx_cluster **cluster, struct bench_zk_source *src)
{
	if (!servers == !zk) {
		fprintf(stderr, "Error: give the servers by --servers or by --zk, once\n");
		return -2;
	}
	if (servers)
		return xtx_parse_servers("--servers", servers, port, out, n) ? -1 : 0;
	if (*replication) {
		fprintf(stderr, "Error: --replication: the cluster in ZooKeeper sets it\n");
		return -1;
	}
	if (bench_zk_cluster(zk, zk_name, port, out, n, replication, cluster))
		return -1;
	*src = (struct bench_zk_source){ .hosts = zk, .name = zk_name };
	pthread_mutex_init(&src->mu, NULL);
	return 0;
}
