// SPDX-License-Identifier: GPL-2.0-only
/* xtxd in a cluster held in ZooKeeper: registration, epoch and lease (member.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <xtx/maps.h>
#include "clock.h"
#include "cluster.h"
#include "log.h"
#include "manager.h"
#include "member.h"
#include "zk.h"

#define TICK_NS			(50ull * 1000 * 1000)
#define CONNECT_WAIT_MS		5000

static struct {
	struct xtx_zk *z;
	struct xtx_cluster cfg;
	int self;
	char self_addr[INET_ADDRSTRLEN];
	uint64_t lease_ns;		/* how long past the last heard the lease runs */
	uint64_t evict_after_ns;	/* as manager: a joined server missing this long failed */
	int map_fd;
	pthread_t tid;
	atomic_bool stop;
	bool running;
	atomic_uint epoch;		/* served, as written to the map */
	atomic_bool fenced;
} M = { .map_fd = -1 };

/* The configured server whose address is one of this namespace's. */
static int find_self(const struct xtx_cluster *c)
{
	struct ifaddrs *ifa, *a;
	int found = -1, i;

	if (getifaddrs(&ifa)) {
		fprintf(stderr, "Error: --zk: listing this namespace's addresses: %m\n");
		return -1;
	}
	for (a = ifa; a; a = a->ifa_next) {
		if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET)
			continue;
		i = xtx_cluster_index(c, ((struct sockaddr_in *)a->ifa_addr)->sin_addr);
		if (i >= 0 && found >= 0 && i != found) {
			fprintf(stderr, "Error: --zk: servers %d and %d of the cluster are both "
				"local\n", found, i);
			found = -2;
			break;
		}
		if (i >= 0)
			found = i;
	}
	freeifaddrs(ifa);
	if (found == -1)
		fprintf(stderr, "Error: --zk: none of the cluster's servers is an address of "
			"this namespace (xtxctl cluster status lists them)\n");
	return found < 0 ? -1 : found;
}

int xtxd_member_join(const struct xtxd_member_opts *o, struct xtxd_peers *peers)
{
	unsigned int i;
	int err;

	M.z = xtx_zk_open(o->zk, o->name, o->session_ms, CONNECT_WAIT_MS);
	if (!M.z)
		return -1;
	err = xtx_zk_read_config(M.z, &M.cfg, NULL, true);
	if (err == -ENOENT)
		fprintf(stderr, "Error: no cluster '%s' at %s (xtxctl cluster init creates one)\n",
			o->name, o->zk);
	if (err)
		goto fail;
	M.self = find_self(&M.cfg);
	if (M.self < 0)
		goto fail;
	inet_ntop(AF_INET, &M.cfg.server[M.self], M.self_addr, sizeof(M.self_addr));
	/* the peers are the configuration's servers, in its order */
	peers->n = M.cfg.nservers;
	for (i = 0; i < M.cfg.nservers; i++)
		peers->addr[i] = M.cfg.server[i];
	peers->self = M.self;
	/* past two thirds of it, the session may be about to expire: stop before */
	M.lease_ns = (uint64_t)xtx_zk_session_ms(M.z) * 1000000ull * 2 / 3;
	/* past its session (a crash) or at once (a stop): half a session more, for restarts */
	M.evict_after_ns = (uint64_t)xtx_zk_session_ms(M.z) * 1000000ull / 2;
	pr_info("cluster '%s' at %s: epoch %u, this is server %d (%s) of %u, session %u ms\n",
		o->name, o->zk, M.cfg.epoch, M.self, M.self_addr, M.cfg.nservers,
		xtx_zk_session_ms(M.z));
	return 0;
fail:
	xtx_zk_close(M.z);
	M.z = NULL;
	return -1;
}

static int write_lease(uint32_t epoch, uint64_t until_ns)
{
	struct xtx_epoch_lease el = { .epoch = epoch, .until_ns = until_ns };
	__u32 zero = 0;

	atomic_store(&M.epoch, epoch);
	atomic_store(&M.fenced, epoch == XTX_EPOCH_FENCED);
	return bpf_map_update_elem(M.map_fd, &zero, &el, BPF_ANY) ? -errno : 0;
}

/* Fenced for good: the session is gone, so may be our shards. */
static void fence(const char *why)
{
	if (!atomic_load(&M.fenced))
		pr_warn("cluster: %s: this server stops serving (fenced) until xtxd restarts\n",
			why);
	/* an until_ns of 1 is long past: fenced even if the epoch were read torn */
	write_lease(XTX_EPOCH_FENCED, 1);
}

/* A new configuration: its epoch, or a fence if it no longer lists us. */
static void reread_config(void)
{
	static struct xtx_cluster c;

	if (xtx_zk_read_config(M.z, &c, NULL, true))
		return;		/* said why; the lease runs out if this goes on */
	if (c.epoch != M.cfg.epoch)
		pr_info("cluster: epoch %u -> %u\n", M.cfg.epoch, c.epoch);
	if ((unsigned int)M.self >= c.nservers ||
	    c.server[M.self].s_addr != M.cfg.server[M.self].s_addr) {
		M.cfg = c;
		fence("the configuration no longer lists this server");
		return;
	}
	M.cfg = c;
}

static void *member_main(void *arg)
{
	enum xtx_zk_state st;
	uint64_t heard;

	(void)arg;
	while (!atomic_load(&M.stop)) {
		usleep(TICK_NS / 1000);
		if (atomic_load(&M.fenced))
			continue;
		st = xtx_zk_state(M.z);
		if (st == XTX_ZK_EXPIRED) {
			fence("the ZooKeeper session expired");
			continue;
		}
		if (xtx_zk_changed(M.z))
			reread_config();
		if (atomic_load(&M.fenced))
			continue;
		xtx_zk_heartbeat(M.z);
		heard = xtx_zk_last_heard(M.z);
		/* only ever forward from what was heard: XDP ends it if we stop here */
		if (write_lease(M.cfg.epoch, heard + M.lease_ns))
			pr_warn("cluster: renewing the lease: %s\n", strerror(errno));
	}
	return NULL;
}

int xtxd_member_start(const struct xtx_target *t)
{
	uint64_t until;
	int err;

	M.map_fd = xtx_target_map_fd(t, XTX_MAP_EPOCH);
	if (M.map_fd < 0) {
		fprintf(stderr, "Error: cluster: opening %s: %s\n", XTX_MAP_EPOCH,
			strerror(-M.map_fd));
		return -1;
	}
	/*
	 * The node of an xtxd that died here lives until its session times
	 * out; ours can take its place only then.
	 */
	until = xtx_now_ns() + (xtx_zk_session_ms(M.z) + 2000ull) * 1000000ull;
	while ((err = xtx_zk_register(M.z, (unsigned int)M.self, M.self_addr)) == -EEXIST &&
	       xtx_now_ns() < until)
		usleep(100 * 1000);
	if (err == -EEXIST)
		fprintf(stderr, "Error: cluster: server %d (%s) is registered by another live "
			"session: is another xtxd serving it?\n", M.self, M.self_addr);
	if (err)
		return -1;
	err = write_lease(M.cfg.epoch, xtx_zk_last_heard(M.z) + M.lease_ns);
	if (err) {
		fprintf(stderr, "Error: cluster: writing %s: %s\n", XTX_MAP_EPOCH, strerror(-err));
		return -1;
	}
	/* from now on this server's absence is a failure the manager acts on */
	if (xtx_zk_mark_joined(M.z, (unsigned int)M.self) ||
	    xtxd_manager_start(M.z, (unsigned int)M.self, M.evict_after_ns))
		return -1;
	atomic_store(&M.stop, false);
	err = pthread_create(&M.tid, NULL, member_main, NULL);
	if (err) {
		fprintf(stderr, "Error: cluster: starting its thread: %s\n", strerror(err));
		return -1;
	}
	M.running = true;
	return 0;
}

void xtxd_member_stop(const struct xtx_target *t)
{
	(void)t;
	xtxd_manager_stop();
	if (M.running) {
		atomic_store(&M.stop, true);
		pthread_join(M.tid, NULL);
		M.running = false;
	}
	/* first stop serving, then give up the lease (--keep-state leaves XDP running) */
	if (M.map_fd >= 0) {
		atomic_store(&M.fenced, false);
		write_lease(XTX_EPOCH_FENCED, 1);
		close(M.map_fd);
		M.map_fd = -1;
	}
	xtx_zk_close(M.z);
	M.z = NULL;
}

unsigned int xtxd_member_epoch(bool *fenced)
{
	*fenced = atomic_load(&M.fenced);
	return atomic_load(&M.epoch);
}
