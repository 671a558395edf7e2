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
/*
 * A copier is added this long after a failure's epoch at the soonest: the
 * servers taking shards over recover, and the clients move, undisturbed
 * by another epoch change.
 */
#define COPY_AFTER_NS		(1000ull * 1000 * 1000)

static struct {
	struct xtx_zk *z;
	unsigned int self;
	uint64_t grace_ns;
	pthread_t tid;
	atomic_bool stop, leads;
	bool running;
	uint64_t missing_since[XTX_CLUSTER_MAX_SERVERS];	/* 0: live, or not joined */
	uint64_t evicted_ns;		/* when this manager last moved a failed server out */
} G;

/*
 * Moving a failed server out (xtx_cluster_drop()) is safe because a
 * promoted server does not serve before the transactions logged there with
 * the failed one among their replicas are decided with the replicas left
 * and applied (xtxd_resolve_reconfigure()), and no transaction placed by
 * the old configuration can log afterwards: XDP refuses an append naming
 * another replica set than the shard's (XTX_ST_MOVED).  All or nothing:
 * "moved out" (xtx_cluster_gone()) means a replica of no shard, which is
 * what the resolvers stop waiting for.  Two whole replicas at least: the
 * resolver tracks only writes with more than one replica, and a copy needs
 * a whole source.  Re-replication (xtx_cluster_add_copier()) brings shards
 * back to R.
 */
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
	changed = xtx_cluster_drop(&c, x);
	if (!changed) {
		if (!(xtx_cluster_gone(&c) >> x & 1))
			pr_warn("manager: server %u (%s) failed: a shard of it would keep one "
				"whole replica; they all wait for it\n", x, inet_ntoa(c.server[x]));
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
	G.evicted_ns = xtx_now_ns();
	pr_warn("manager: server %u (%s) failed: epoch %u without it in %u shards, a backup "
		"promoted in the %u it led; %u shards under-replicated\n", x,
		inet_ntoa(c.server[x]), c.epoch, changed, led, xtx_cluster_under_replicated(&c));
	xtx_zk_forget_joined(G.z, x);
	return 0;
}

/* Writes c as the next epoch over zversion ver; -EAGAIN when it changed meanwhile. */
static int next_epoch(struct xtx_cluster *c, int ver)
{
	if (c->epoch >= XTX_CLUSTER_EPOCH_MAX)
		return -ERANGE;
	c->epoch++;
	return xtx_zk_write_config(G.z, c, ver);
}

/*
 * Re-replication: a live server that is a replica of no shard (a spare, or
 * a failed one back and empty) copies every shard short of R; one whose
 * copy says done for the epoch in force counts as whole from the next.
 */
static void rereplicate(uint64_t live)
{
	static struct xtx_cluster c;
	struct xtx_zk_copy cp;
	unsigned int x, n;
	uint64_t gone;
	int ver;

	if (xtx_zk_read_config(G.z, &c, &ver, false))
		return;
	for (x = 0; x < c.nservers; x++) {
		if (!(live >> x & 1) || !xtx_cluster_copying(&c, x) ||
		    xtx_zk_get_copy(G.z, x, &cp) || !cp.done || cp.epoch != c.epoch)
			continue;
		n = xtx_cluster_copied(&c, x);
		if (!next_epoch(&c, ver))
			pr_warn("manager: server %u (%s) copied %u shards (%llu keys in %u ms): "
				"epoch %u counts it whole; %u shards under-replicated\n", x,
				inet_ntoa(c.server[x]), n, (unsigned long long)cp.keys, cp.ms,
				c.epoch, xtx_cluster_under_replicated(&c));
		return;		/* one change per tick, each on the latest */
	}
	if (!xtx_cluster_under_replicated(&c) || xtx_now_ns() - G.evicted_ns < COPY_AFTER_NS)
		return;
	gone = xtx_cluster_gone(&c);
	for (x = 0; x < c.nservers; x++) {
		if (!(live >> x & 1) || !(gone >> x & 1))
			continue;
		n = xtx_cluster_add_copier(&c, x);
		if (!n)
			return;
		if (!next_epoch(&c, ver))
			pr_warn("manager: server %u (%s) is a replica of no shard: epoch %u has it "
				"copying %u under-replicated shards\n", x, inet_ntoa(c.server[x]),
				c.epoch, n);
		return;
	}
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
	rereplicate(live);
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
