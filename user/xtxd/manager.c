// SPDX-License-Identifier: GPL-2.0-only
/* The configuration manager: failure detection and promotion (manager.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "cluster.h"
#include "log.h"
#include "manager.h"
#include "zk.h"

#define TICK_US			(100 * 1000)
/* Not managing: how often to try for the role. */
#define CAMPAIGN_EVERY_NS	(500ull * 1000 * 1000)

static struct {
	struct xtx_zk *z;
	unsigned int self;
	uint64_t grace_ns;
	pthread_t tid;
	atomic_bool stop, leads;
	bool running;
	uint64_t missing_since[XTX_CLUSTER_MAX_SERVERS];	/* 0: live, or not joined */
} G;

/*
 * c without server x in every shard it is in, the first backup promoted
 * where it led; or, when a shard of x would keep fewer than two replicas,
 * c unchanged.  The number of shards changed.
 *
 * Promotion is safe because the promoted server does not serve before the
 * transactions logged there with x among their replicas are decided with
 * the replicas left and applied (xtxd_resolve_reconfigure()), and no
 * transaction placed by the old configuration can log afterwards: XDP
 * refuses an append naming another replica set than the shard's
 * (XTX_ST_MOVED).  All or nothing: "moved out" (xtx_cluster_gone()) means
 * a replica of no shard, which is what the resolvers stop waiting for, so
 * a server left in one shard would still be waited for by the others.
 * And two replicas at least: the resolver tracks only writes with more than
 * one replica, and a shard of one would take part in a transaction with
 * nobody to ask (until re-replication brings shards back to R).
 */
static unsigned int drop_server(struct xtx_cluster *c, unsigned int x)
{
	unsigned int s, i, j, changed = 0;

	for (s = 0; s < c->nshards; s++)
		for (i = 0; i < c->nrep[s]; i++)
			if (c->rep[s][i] == x && c->nrep[s] <= 2)
				return 0;
	for (s = 0; s < c->nshards; s++) {
		for (i = 0; i < c->nrep[s] && c->rep[s][i] != x; i++)
			;
		if (i >= c->nrep[s])
			continue;
		for (j = i; j + 1 < c->nrep[s]; j++)
			c->rep[s][j] = c->rep[s][j + 1];
		c->nrep[s]--;
		changed++;
	}
	return changed;
}

/* One failed server out of the configuration; -EAGAIN when it changed meanwhile. */
static int evict(unsigned int x)
{
	static struct xtx_cluster c;
	unsigned int led, changed;
	int ver, err;

	err = xtx_zk_read_config(G.z, &c, &ver, false);
	if (err)
		return err;
	led = xtx_cluster_leads(&c, x);
	changed = drop_server(&c, x);
	if (!changed) {
		if (!(xtx_cluster_gone(&c) >> x & 1))
			pr_warn("manager: server %u (%s) failed: a shard of it would keep one "
				"replica; they all wait for it (re-replication is not built)\n", x,
				inet_ntoa(c.server[x]));
		xtx_zk_forget_joined(G.z, x);
		return 0;
	}
	if (c.epoch >= XTX_CLUSTER_EPOCH_MAX) {
		/* said once: its failure is not acted on again */
		pr_warn("manager: epoch %u is the last: server %u stays in the configuration\n",
			c.epoch, x);
		xtx_zk_forget_joined(G.z, x);
		return 0;
	}
	c.epoch++;
	err = xtx_zk_write_config(G.z, &c, ver);
	if (err)
		return err;
	pr_warn("manager: server %u (%s) failed: epoch %u without it in %u shards, a backup "
		"promoted in the %u it led; %u shards under-replicated\n", x,
		inet_ntoa(c.server[x]), c.epoch, changed, led, xtx_cluster_under_replicated(&c));
	xtx_zk_forget_joined(G.z, x);
	return 0;
}

static void manage(void)
{
	uint64_t live, joined, now = xtx_now_ns();
	unsigned int i;

	if (xtx_zk_live(G.z, &live, false) || xtx_zk_joined(G.z, &joined))
		return;
	for (i = 0; i < XTX_CLUSTER_MAX_SERVERS; i++) {
		if (!(joined >> i & 1) || live >> i & 1) {
			G.missing_since[i] = 0;
			continue;
		}
		if (!G.missing_since[i])
			G.missing_since[i] = now;
		if (now - G.missing_since[i] >= G.grace_ns && !evict(i))
			G.missing_since[i] = 0;
	}
}

static void *manager_main(void *arg)
{
	uint64_t next_try = 0, now;
	int err;

	(void)arg;
	while (!atomic_load(&G.stop)) {
		usleep(TICK_US);
		if (xtx_zk_state(G.z) != XTX_ZK_CONNECTED)
			continue;
		now = xtx_now_ns();
		if (!atomic_load(&G.leads)) {
			if (now < next_try)
				continue;
			next_try = now + CAMPAIGN_EVERY_NS;
			err = xtx_zk_lead(G.z, G.self, false);
			if (err)
				continue;
			atomic_store(&G.leads, true);
			memset(G.missing_since, 0, sizeof(G.missing_since));
			pr_info("manager: server %u manages the configuration\n", G.self);
		}
		/*
		 * The node went with a session that expired, and someone else
		 * may manage now; a read that failed proves nothing either way
		 */
		err = xtx_zk_manager(G.z);
		if (err == -ENOENT || (err >= 0 && err != (int)G.self)) {
			atomic_store(&G.leads, false);
			pr_info("manager: server %u no longer manages\n", G.self);
			continue;
		}
		if (err < 0)
			continue;
		manage();
	}
	return NULL;
}

int xtxd_manager_start(struct xtx_zk *z, unsigned int self, uint64_t grace_ns)
{
	int err;

	G.z = z;
	G.self = self;
	G.grace_ns = grace_ns;
	atomic_store(&G.stop, false);
	atomic_store(&G.leads, false);
	err = pthread_create(&G.tid, NULL, manager_main, NULL);
	if (err) {
		pr_warn("Error: manager: starting its thread: %s\n", strerror(err));
		return -1;
	}
	G.running = true;
	return 0;
}

void xtxd_manager_stop(void)
{
	if (!G.running)
		return;
	atomic_store(&G.stop, true);
	pthread_join(G.tid, NULL);
	G.running = false;
	atomic_store(&G.leads, false);
}

bool xtxd_manager_leads(void)
{
	return atomic_load(&G.leads);
}
