// SPDX-License-Identifier: GPL-2.0-only
/* xtxd in a cluster held in ZooKeeper: registration, epoch and lease (member.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <xtx/log.h>
#include <xtx/maps.h>
#include "clock.h"
#include "cluster.h"
#include "cluster_record.h"
#include "copy/copy.h"
#include "log.h"
#include "log/snapshot.h"
#include "manager.h"
#include "member.h"
#include "resolve/resolve.h"
#include "zk.h"

#define TICK_NS			(50ull * 1000 * 1000)
#define CONNECT_WAIT_MS		5000

#define PUBLISH_EVERY_NS	(250ull * 1000 * 1000)

static struct {
	struct xtx_zk *z;
	struct xtx_cluster cfg;
	pthread_mutex_t cfg_mu;		/* cfg: written by the member thread, read by copies */
	uint16_t port;
	struct xtx_zk_copy published;	/* the copy's progress as last written to ZooKeeper */
	uint64_t published_ns;
	int self;
	char self_addr[INET_ADDRSTRLEN];
	char data_dir[PATH_MAX];	/* where the configuration taken up is recorded */
	uint64_t lease_ns;		/* how long past the last heard the lease runs */
	uint64_t evict_after_ns;	/* as manager: a joined server missing this long failed */
	int map_fd;
	struct xtx_epoch_lease *lease;	/* the epoch map, mmapped */
	int shards_fd;			/* XDP's copy of the shard map (xtx_shards) */
	/*
	 * Shards were taken over: closed until the transactions the failed
	 * servers replicated are decided here (xtxd_resolve_reconfigure()).
	 */
	bool recovering;
	uint64_t recover_from_ns;
	pthread_t tid;
	atomic_bool stop;
	bool running;
	atomic_uint epoch;		/* served, as written to the map */
	atomic_bool fenced;
	/*
	 * CLOCK_BOOTTIME until which the session is surely alive, renewed
	 * while XDP is closed too: the resolver speaks only within it.
	 */
	_Atomic uint64_t alive_until;
} M = { .map_fd = -1, .shards_fd = -1, .cfg_mu = PTHREAD_MUTEX_INITIALIZER };


/* The resolver's gate: this server may speak for itself (not fenced, session surely alive). */
static bool speaks(void)
{
	return !atomic_load(&M.fenced) && xtx_boot_ns() < atomic_load(&M.alive_until);
}

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

bool xtxd_member_holds_nothing(void)
{
	return M.self >= 0 && (xtx_cluster_gone(&M.cfg) >> M.self & 1);
}

/* What a copy serves from: the configuration in force, unless fenced. */
static bool serving_config(struct xtx_cluster *c, unsigned int *self)
{
	bool ok;

	pthread_mutex_lock(&M.cfg_mu);
	*c = M.cfg;
	*self = (unsigned int)M.self;
	ok = !atomic_load(&M.fenced) && atomic_load(&M.epoch) == M.cfg.epoch;
	pthread_mutex_unlock(&M.cfg_mu);
	return ok;
}

/* A shard of the cluster is being copied: the logs stay (xtxd_snapshot_set_keep_logs). */
static bool copy_under_way(void)
{
	bool any = false;
	unsigned int s;

	pthread_mutex_lock(&M.cfg_mu);
	for (s = 0; s < M.cfg.nshards && !any; s++)
		any = M.cfg.copying[s];
	pthread_mutex_unlock(&M.cfg_mu);
	return any;
}

static void set_config(const struct xtx_cluster *c)
{
	pthread_mutex_lock(&M.cfg_mu);
	M.cfg = *c;
	pthread_mutex_unlock(&M.cfg_mu);
}

/* The copy's progress into ZooKeeper, where the manager and xtxctl read it. */
static void publish_copy(void)
{
	struct xtx_zk_copy p;
	uint64_t now = xtx_now_ns();

	if (!xtxd_copy_progress(&p))
		return;
	if (p.done == M.published.done && p.epoch == M.published.epoch &&
	    (p.done || now - M.published_ns < PUBLISH_EVERY_NS))
		return;
	if (!xtx_zk_put_copy(M.z, (unsigned int)M.self, &p)) {
		M.published = p;
		M.published_ns = now;
	}
}

/*
 * ZooKeeper's configuration against the one this server recorded: an older
 * one (or the same epoch with another map) means ZooKeeper lost its data or
 * the cluster was made again by hand.  Serving it could bring back stale
 * shards, and a server listed as a spare again would wipe what may be the
 * only current copy of a shard: refuse, before anything here changes.
 */
static int check_record(const struct xtxd_member_opts *o)
{
	static struct xtx_cluster rec;
	char path[PATH_MAX], why[PATH_MAX + 160];
	unsigned int writer;
	int err;

	if (xtx_cluster_record_path(M.data_dir, path, sizeof(path))) {
		fprintf(stderr, "Error: cluster: data directory %s: name too long\n", M.data_dir);
		return -1;
	}
	err = xtx_cluster_record_read(path, &rec, &writer, why, sizeof(why));
	if (err == -ENOENT)
		return 0;
	if (err) {
		/* what it served cannot be known: serving any epoch might go backwards */
		fprintf(stderr, "Error: cluster: this server's record of the configuration it "
			"served: %s. Compare it with the other servers' (%s): if this server may "
			"hold the only current copy of a shard, rebuild ZooKeeper's configuration "
			"from theirs and this one repaired (xtxctl cluster recover); --fresh sets "
			"what it holds aside and starts over\n", why, XTX_CLUSTER_RECORD_FILE);
		return -1;
	}
	if (xtx_cluster_record_allows(&rec, &M.cfg))
		return 0;
	if (o->fresh) {
		/* said where the operator looks, not in the log alone: this wipes a store */
		fprintf(stderr, "Warning: cluster '%s': ZooKeeper holds epoch %u%s, this server "
			"recorded epoch %u: --fresh sets what it holds aside (its record with it) "
			"and takes epoch %u up\n", o->name, M.cfg.epoch,
			rec.id && M.cfg.id != rec.id ? " of another cluster" : "", rec.epoch,
			M.cfg.epoch);
		return 0;
	}
	if (rec.id && M.cfg.id != rec.id)
		snprintf(why, sizeof(why), "another cluster (id %016llx at epoch %u), not the one "
			 "this server served (id %016llx, epoch %u)", (unsigned long long)M.cfg.id,
			 M.cfg.epoch, (unsigned long long)rec.id, rec.epoch);
	else
		snprintf(why, sizeof(why), "epoch %u, %s epoch %u this server served",
			 M.cfg.epoch, M.cfg.epoch < rec.epoch ? "older than" :
			 "another configuration than the", rec.epoch);
	fprintf(stderr, "Error: cluster '%s' at %s: ZooKeeper holds %s (recorded in %s): "
		"ZooKeeper's data was lost or the cluster made again. Nothing here was changed. "
		"Rebuild ZooKeeper's configuration from the servers' records: xtxctl cluster "
		"recover --zk %s --zk-name %s RECORD... (each server's %s), then start the "
		"servers again\n", o->name, o->zk, why, path, o->zk, o->name,
		XTX_CLUSTER_RECORD_FILE);
	return -1;
}

/* The configuration about to be taken up, on disk before it is served: 0 or -1. */
static int record(const struct xtx_cluster *c)
{
	int err = xtx_cluster_record_write(M.data_dir, c, (unsigned int)M.self);

	if (err)
		pr_warn("cluster: recording epoch %u in %s: %s\n", c->epoch, M.data_dir,
			strerror(-err));
	return err ? -1 : 0;
}

int xtxd_member_join(const struct xtxd_member_opts *o, struct xtxd_peers *peers)
{
	unsigned int i;
	int err;

	M.z = xtx_zk_open(o->zk, o->name, o->session_ms, CONNECT_WAIT_MS);
	if (!M.z)
		return -1;
	/*
	 * A lagging follower's configuration could be older than this
	 * server's record, and be refused as if ZooKeeper had lost data
	 */
	err = xtx_zk_sync(M.z, CONNECT_WAIT_MS);
	if (err)
		goto fail;
	err = xtx_zk_read_config(M.z, &M.cfg, NULL, true);
	if (err == -ENOENT)
		fprintf(stderr, "Error: no cluster '%s' at %s (xtxctl cluster init creates one)\n",
			o->name, o->zk);
	if (err)
		goto fail;
	snprintf(M.data_dir, sizeof(M.data_dir), "%s", o->data_dir);
	if (check_record(o))
		goto fail;
	M.self = find_self(&M.cfg);
	if (M.self < 0)
		goto fail;
	M.port = o->port;
	xtxd_snapshot_set_keep_logs(copy_under_way);
	inet_ntop(AF_INET, &M.cfg.server[M.self], M.self_addr, sizeof(M.self_addr));
	xtxd_resolve_set_gate(speaks);
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

/*
 * The lease map, mmapped: each field is written with one atomic store, so
 * XDP never reads a renewal half done (a torn until_ns could lie far in
 * the future).  A fence writes until_ns first: from then on any epoch read
 * with it is refused.
 */
static struct xtx_epoch_lease *lease_map(const struct xtx_target *t)
{
	void *p;

	M.map_fd = xtx_target_map_fd(t, XTX_MAP_EPOCH);
	if (M.map_fd < 0) {
		fprintf(stderr, "Error: cluster: opening %s: %s\n", XTX_MAP_EPOCH,
			strerror(-M.map_fd));
		return NULL;
	}
	p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED,
		 M.map_fd, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "Error: cluster: mapping %s: %s\n", XTX_MAP_EPOCH, strerror(errno));
		return NULL;
	}
	return p;
}

uint64_t xtxd_lease_until(uint64_t heard, uint64_t lease_ns)
{
	/* both on the boot clock XDP reads: nothing to convert, no suspend to gain */
	return heard + lease_ns;
}

/* The lease earned by the newest heartbeat ZooKeeper answered. */
static uint64_t lease_end(void)
{
	return xtxd_lease_until(xtx_zk_last_heard(M.z), M.lease_ns);
}

/*
 * Serves nobody until the next write_lease(): while the shards change, and
 * while shards taken over are recovered.  Unlike a fence, not for good.
 */
static void close_xdp(void)
{
	__atomic_store_n(&M.lease->until_ns, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&M.lease->epoch, XTX_EPOCH_FENCED, __ATOMIC_SEQ_CST);
}

/*
 * XDP's copy of c's shards, for the placement check of every log append
 * (xtx_log_placed_here()).  Only while closed: the count and the sets are
 * read together.  0 or a negative errno.
 */
static int write_shards(const struct xtx_cluster *c)
{
	uint32_t s;

	for (s = 0; s < c->nshards && s < XTX_SHARDS_MAX; s++) {
		__u16 r[XTX_CLUSTER_MAX_R] = {};
		__u32 v;
		unsigned int i;

		for (i = 0; i < c->nrep[s]; i++)
			r[i] = c->rep[s][i];
		v = (__u32)xtx_log_replicas_pack(r, c->nrep[s]);
		if (bpf_map_update_elem(M.shards_fd, &s, &v, BPF_ANY))
			return -errno;
	}
	__atomic_store_n(&M.lease->nshards, c->nshards, __ATOMIC_SEQ_CST);
	return 0;
}

static void write_lease(uint32_t epoch, uint64_t until_boot_ns)
{
	if (epoch == XTX_EPOCH_FENCED) {
		__atomic_store_n(&M.lease->until_ns, until_boot_ns, __ATOMIC_SEQ_CST);
		__atomic_store_n(&M.lease->epoch, epoch, __ATOMIC_SEQ_CST);
	} else {
		__atomic_store_n(&M.lease->epoch, epoch, __ATOMIC_SEQ_CST);
		__atomic_store_n(&M.lease->until_ns, until_boot_ns, __ATOMIC_SEQ_CST);
	}
	atomic_store(&M.epoch, epoch);
	atomic_store(&M.fenced, epoch == XTX_EPOCH_FENCED);
}

/* Fenced for good: the session is gone, so may be our shards. */
static void fence(const char *why)
{
	if (!atomic_load(&M.fenced))
		pr_warn("cluster: %s: this server stops serving (fenced) until xtxd restarts\n",
			why);
	/* an until_ns of 1 is long past */
	write_lease(XTX_EPOCH_FENCED, 1);
}

/*
 * Serves c from the next lease on.  Closed meanwhile: requests of the old
 * epoch must stop before the resolver looks for what they logged, and the
 * shards change under XDP.  Shards this server now leads are recovered
 * first (member_main waits for it): 0, or -1 to try again.
 */
/* Empties the store of a server about to copy, while XDP serves nobody (copy.h). */
static void empty_for_copy(uint32_t epoch)
{
	long n = xtxd_copy_wipe();

	if (n < 0)
		pr_warn("cluster: epoch %u: emptying the store before the copy: %s\n", epoch,
			strerror((int)-n));
	else
		pr_info("cluster: epoch %u: copying shards: the store emptied first (%ld keys)\n",
			epoch, n);
}

static int adopt(const struct xtx_cluster *c)
{
	unsigned int taken = xtx_cluster_takes_over(&M.cfg, c, (unsigned int)M.self);
	uint64_t gone = xtx_cluster_gone(c);
	bool was_out = xtx_cluster_gone(&M.cfg) >> M.self & 1;
	const struct timespec grace = { 0, 5 * 1000 * 1000 };
	int err;

	/*
	 * A restart after this serves nothing older, whatever ZooKeeper says
	 * then.  A server that cannot record (its disk failing) cannot serve
	 * the new epoch, nor should it linger in the old one: fenced, it lets
	 * its session go and the manager moves it out.
	 */
	if (record(c)) {
		fence("the configuration could not be recorded");
		return 0;
	}
	close_xdp();
	/* longer than any XDP run: none still reads the shards it is about to change */
	nanosleep(&grace, NULL);
	err = write_shards(c);
	if (err) {
		pr_warn("cluster: writing epoch %u's shards for XDP: %s\n", c->epoch,
			strerror(-err));
		return -1;
	}
	pr_info("cluster: epoch %u -> %u%s\n", M.cfg.epoch, c->epoch,
		taken ? ": taking shards over, closed until recovered" : "");
	if (was_out && xtx_cluster_copying(c, (unsigned int)M.self))
		empty_for_copy(c->epoch);
	set_config(c);
	xtxd_copy_begin(c, (unsigned int)M.self, M.port);
	/* every server decides what the moved-out ones replicated, at once */
	xtxd_resolve_reconfigure(gone, 0);
	if (taken && !M.recovering) {
		M.recovering = true;
		M.recover_from_ns = xtx_now_ns();
	}
	return 0;
}

/*
 * A new configuration: its epoch, or a fence if it no longer lists us.
 * 0, or -1 when it could not be read (the caller tries again, and renews
 * no lease meanwhile: until it has read it, it does not know its epoch).
 */
static int reread_config(void)
{
	static struct xtx_cluster c;
	int err = xtx_zk_read_config(M.z, &c, NULL, true);

	if (err == -ENOENT) {
		fence("the cluster's configuration is gone from ZooKeeper");
		return 0;
	}
	if (err)
		return -1;
	if (c.id != M.cfg.id) {
		/* made again under our name: nothing of it is ours to serve */
		fence("the cluster in ZooKeeper is another one (its id changed)");
		return 0;
	}
	if (c.epoch < M.cfg.epoch || (c.epoch == M.cfg.epoch && !xtx_cluster_equal(&c, &M.cfg))) {
		/* every change comes with a newer epoch: this one did not, so serve none */
		fence("the configuration changed without a newer epoch");
		return 0;
	}
	if ((unsigned int)M.self >= c.nservers ||
	    c.server[M.self].s_addr != M.cfg.server[M.self].s_addr) {
		set_config(&c);
		fence("the configuration no longer lists this server");
		return 0;
	}
	if (c.epoch != M.cfg.epoch)
		return adopt(&c);
	return 0;
}

static void *member_main(void *arg)
{
	bool pending = false;	/* a change to read */

	(void)arg;
	while (!atomic_load(&M.stop)) {
		usleep(TICK_NS / 1000);
		if (atomic_load(&M.fenced))
			continue;
		if (xtx_zk_state(M.z) == XTX_ZK_EXPIRED) {
			fence("the ZooKeeper session expired");
			continue;
		}
		if (xtx_zk_changed(M.z))
			pending = true;
		if (pending)
			pending = reread_config() != 0;
		if (atomic_load(&M.fenced))
			continue;
		publish_copy();
		xtx_zk_heartbeat(M.z);
		atomic_store(&M.alive_until, lease_end());
		if (M.recovering && !pending) {
			if (xtxd_resolve_reconfigure(xtx_cluster_gone(&M.cfg), TICK_NS))
				continue;	/* still closed */
			M.recovering = false;
			pr_info("cluster: epoch %u: recovered in %llu ms; serving the shards taken "
				"over\n", M.cfg.epoch,
				(unsigned long long)((xtx_now_ns() - M.recover_from_ns) / 1000000));
		}
		/* only ever forward from what was heard: XDP ends it if we stop here */
		if (!pending)
			write_lease(M.cfg.epoch, lease_end());
	}
	return NULL;
}

int xtxd_member_static(const struct xtx_target *t)
{
	/* a static server serves epoch 0, whatever a cluster run left in a reused map */
	M.lease = lease_map(t);
	if (!M.lease)
		return -1;
	write_lease(0, 0);
	__atomic_store_n(&M.lease->nshards, 0, __ATOMIC_SEQ_CST);
	munmap(M.lease, (size_t)sysconf(_SC_PAGESIZE));
	M.lease = NULL;
	close(M.map_fd);
	M.map_fd = -1;
	return 0;
}

int xtxd_member_start(const struct xtx_target *t)
{
	uint64_t until;
	int err;

	M.lease = lease_map(t);
	if (!M.lease)
		return -1;
	M.shards_fd = xtx_target_map_fd(t, XTX_MAP_SHARDS);
	if (M.shards_fd < 0) {
		fprintf(stderr, "Error: cluster: opening %s: %s\n", XTX_MAP_SHARDS,
			strerror(-M.shards_fd));
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
	/* the configuration may have moved on while the store was recovered */
	if (reread_config()) {
		fprintf(stderr, "Error: cluster: reading the configuration again failed\n");
		return -1;
	}
	atomic_store(&M.alive_until, lease_end());
	close_xdp();
	if (record(&M.cfg))
		return -1;
	err = write_shards(&M.cfg);
	if (err) {
		fprintf(stderr, "Error: cluster: writing the shards for XDP: %s\n",
			strerror(-err));
		return -1;
	}
	xtxd_resolve_reconfigure(xtx_cluster_gone(&M.cfg), 0);
	if (xtxd_copy_serve_start(M.port, serving_config))
		return -1;
	xtxd_copy_set_target(t);
	/* restarted while copying: what it held, a snapshot's included, is copied again */
	if (xtx_cluster_copying(&M.cfg, (unsigned int)M.self))
		empty_for_copy(M.cfg.epoch);
	xtxd_copy_begin(&M.cfg, (unsigned int)M.self, M.port);
	if (atomic_load(&M.fenced))
		fprintf(stderr, "Warning: cluster: this server starts fenced\n");
	else if (!M.recovering)	/* else member_main opens once recovered */
		write_lease(M.cfg.epoch, lease_end());
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

void xtxd_member_fence(void)
{
	xtxd_manager_stop();
	if (M.running) {
		atomic_store(&M.stop, true);
		pthread_join(M.tid, NULL);
		M.running = false;
	}
	/* after the thread that starts copies */
	xtxd_copy_stop();
	xtxd_copy_serve_stop();
	/* --keep-state leaves XDP running: it serves nobody from here on */
	if (M.lease) {
		atomic_store(&M.fenced, false);
		write_lease(XTX_EPOCH_FENCED, 1);
	}
}

void xtxd_member_leave(void)
{
	/* the live node goes with the session, once nothing here serves or acts */
	xtxd_member_fence();
	if (M.lease)
		munmap(M.lease, (size_t)sysconf(_SC_PAGESIZE));
	M.lease = NULL;
	if (M.map_fd >= 0)
		close(M.map_fd);
	M.map_fd = -1;
	if (M.shards_fd >= 0)
		close(M.shards_fd);
	M.shards_fd = -1;
	xtx_zk_close(M.z);
	M.z = NULL;
}

bool xtxd_member_copy_under_way(void)
{
	return copy_under_way();
}

unsigned int xtxd_member_epoch(bool *fenced)
{
	*fenced = atomic_load(&M.fenced);
	return atomic_load(&M.epoch);
}

bool xtxd_member_serving(void)
{
	/* a static server serves while it runs; a member within its lease, not recovering */
	return !M.z || (speaks() && !__atomic_load_n(&M.recovering, __ATOMIC_RELAXED));
}
