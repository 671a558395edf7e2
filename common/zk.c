// SPDX-License-Identifier: GPL-2.0-only
/* A cluster's configuration and live servers in ZooKeeper (zk.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* the multi-threaded library, whose synchronous calls need this */
#define THREADED
#include <zookeeper/zookeeper.h>
#include "clock.h"
#include "zk.h"

struct xtx_zk {
	zhandle_t *zh;
	char hosts[256];
	char root[16 + XTX_ZK_NAME_MAX];	/* /xtx/NAME */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int state;				/* ZOO_*_STATE, from the watcher */
	atomic_bool changed;
	atomic_uint_fast64_t last_heard;	/* send time of the newest answered heartbeat (boot) */
	atomic_bool beat_out;			/* a heartbeat awaits its answer */
};

int xtx_zk_name_ok(const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_' || name[i] == '-'))
			break;
	if (n && n <= XTX_ZK_NAME_MAX && i == n)
		return 0;
	fprintf(stderr, "Error: cluster name '%s': 1..%d of a-z, 0-9, '_' and '-'\n", name,
		XTX_ZK_NAME_MAX);
	return -1;
}

/* Session events (connected, expired) and the watches of config and live/. */
static void on_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct xtx_zk *z = ctx;

	(void)zh;
	(void)path;
	if (type == ZOO_SESSION_EVENT) {
		pthread_mutex_lock(&z->lock);
		z->state = state;
		pthread_cond_broadcast(&z->cond);
		pthread_mutex_unlock(&z->lock);
		return;
	}
	atomic_store(&z->changed, true);
}

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;

/* The library's own chatter (every failed connect) goes nowhere: we say what matters. */
static void quiet_library(void)
{
	FILE *devnull;

	if (getenv("XTX_ZK_DEBUG"))
		return;
	devnull = fopen("/dev/null", "w");
	if (devnull)
		zoo_set_log_stream(devnull);
}

struct xtx_zk *xtx_zk_open(const char *hosts, const char *name, unsigned int session_ms,
			   unsigned int wait_ms)
{
	struct timespec until;
	struct xtx_zk *z;
	int state;

	if (xtx_zk_name_ok(name))
		return NULL;
	if (!*hosts || strlen(hosts) >= sizeof(z->hosts) || strchr(hosts, '/')) {
		fprintf(stderr, "Error: --zk '%s': HOST:PORT[,HOST:PORT...]\n", hosts);
		return NULL;
	}
	z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	snprintf(z->hosts, sizeof(z->hosts), "%s", hosts);
	snprintf(z->root, sizeof(z->root), "/xtx/%s", name);
	pthread_mutex_init(&z->lock, NULL);
	pthread_cond_init(&z->cond, NULL);
	z->state = ZOO_CONNECTING_STATE;
	/* a session's first answer proves the ensemble heard from it after this */
	atomic_store(&z->last_heard, xtx_zk_clock());
	pthread_once(&quiet_once, quiet_library);
	z->zh = zookeeper_init(hosts, on_event, (int)session_ms, NULL, z, 0);
	if (!z->zh) {
		fprintf(stderr, "Error: --zk %s: %s\n", hosts, strerror(errno));
		goto fail;
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&z->lock);
	while (z->state != ZOO_CONNECTED_STATE && z->state != ZOO_EXPIRED_SESSION_STATE &&
	       z->state != ZOO_AUTH_FAILED_STATE &&
	       pthread_cond_timedwait(&z->cond, &z->lock, &until) != ETIMEDOUT)
		;
	state = z->state;
	pthread_mutex_unlock(&z->lock);
	if (state != ZOO_CONNECTED_STATE) {
		fprintf(stderr, "Error: ZooKeeper at %s: no session within %u ms\n", hosts,
			wait_ms);
		goto fail;
	}
	return z;
fail:
	xtx_zk_close(z);
	return NULL;
}

void xtx_zk_close(struct xtx_zk *z)
{
	if (!z)
		return;
	/* ends the session: its ephemeral nodes go at once, not at its timeout */
	if (z->zh)
		zookeeper_close(z->zh);
	pthread_mutex_destroy(&z->lock);
	pthread_cond_destroy(&z->cond);
	free(z);
}

enum xtx_zk_state xtx_zk_state(struct xtx_zk *z)
{
	int s;

	pthread_mutex_lock(&z->lock);
	s = z->state;
	pthread_mutex_unlock(&z->lock);
	if (s == ZOO_CONNECTED_STATE)
		return XTX_ZK_CONNECTED;
	if (s == ZOO_EXPIRED_SESSION_STATE || s == ZOO_AUTH_FAILED_STATE)
		return XTX_ZK_EXPIRED;
	return XTX_ZK_CONNECTING;
}

unsigned int xtx_zk_session_ms(struct xtx_zk *z)
{
	return (unsigned int)zoo_recv_timeout(z->zh);
}

static int zk_errno(int rc)
{
	switch (rc) {
	case ZOK:
		return 0;
	case ZNONODE:
		return -ENOENT;
	case ZNODEEXISTS:
		return -EEXIST;
	case ZBADVERSION:
		return -EAGAIN;
	case ZCONNECTIONLOSS:
	case ZOPERATIONTIMEOUT:
		return -ETIMEDOUT;
	case ZSESSIONEXPIRED:
		return -ESTALE;
	default:
		return -EIO;
	}
}

static int fail(struct xtx_zk *z, const char *what, const char *path, int rc)
{
	fprintf(stderr, "Error: ZooKeeper at %s: %s %s: %s\n", z->hosts, what, path, zerror(rc));
	return zk_errno(rc);
}

/*
 * One sync's answer: its completion runs on the library's thread, and may
 * come after the caller gave up, which then leaves freeing it to it.
 */
struct sync_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done, abandoned;
	int rc;
};

static void sync_done(int rc, const char *value, const void *data)
{
	struct sync_wait *w = (struct sync_wait *)data;
	bool abandoned;

	(void)value;
	pthread_mutex_lock(&w->mu);
	w->rc = rc;
	w->done = true;
	abandoned = w->abandoned;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (abandoned) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
	}
}

int xtx_zk_sync(struct xtx_zk *z, unsigned int wait_ms)
{
	uint64_t until = xtx_zk_clock() + (uint64_t)wait_ms * 1000000ull;
	struct sync_wait *w = calloc(1, sizeof(*w));
	struct timespec ts;
	bool done;
	int rc;

	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	rc = zoo_async(z->zh, z->root, sync_done, w);
	if (rc != ZOK) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		return fail(z, "syncing", z->root, rc);
	}
	pthread_mutex_lock(&w->mu);
	while (!w->done && xtx_zk_clock() < until) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
	}
	done = w->done;
	rc = done ? w->rc : ZOPERATIONTIMEOUT;
	w->abandoned = !done;
	pthread_mutex_unlock(&w->mu);
	if (done) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
	}
	return rc == ZOK ? 0 : fail(z, "syncing", z->root, rc);
}

int xtx_zk_read_config(struct xtx_zk *z, struct xtx_cluster *c, int *zversion, bool watch)
{
	/* one per thread: xtxd reads from its member and manager threads */
	static __thread char text[XTX_CLUSTER_TEXT_MAX];
	char path[sizeof(z->root) + 8], err[160];
	struct Stat st;
	int len = sizeof(text) - 1, rc;

	snprintf(path, sizeof(path), "%s/config", z->root);
	rc = zoo_wget(z->zh, path, watch ? on_event : NULL, z, text, &len, &st);
	if (rc == ZNONODE)
		return -ENOENT;
	if (rc != ZOK)
		return fail(z, "reading", path, rc);
	if (st.dataLength > len) {
		/* cut short, the last shard line could still parse, and mean another map */
		fprintf(stderr, "Error: ZooKeeper at %s: %s: %d bytes, more than a configuration "
			"holds\n", z->hosts, path, st.dataLength);
		return -EINVAL;
	}
	text[len < 0 ? 0 : len] = '\0';
	if (xtx_cluster_parse(c, text, err, sizeof(err))) {
		fprintf(stderr, "Error: ZooKeeper at %s: %s: %s\n", z->hosts, path, err);
		return -EINVAL;
	}
	if (zversion)
		*zversion = st.version;
	return 0;
}

bool xtx_zk_changed(struct xtx_zk *z)
{
	return atomic_exchange(&z->changed, false);
}

int xtx_zk_create(struct xtx_zk *z, const struct xtx_cluster *c)
{
	/* one per thread: xtxd reads from its member and manager threads */
	static __thread char text[XTX_CLUSTER_TEXT_MAX];
	char config[sizeof(z->root) + 8], live[sizeof(z->root) + 8];
	char joined[sizeof(z->root) + 8];
	zoo_op_result_t res[4];
	zoo_op_t ops[4];
	int n, rc;

	n = xtx_cluster_format(c, text, sizeof(text));
	if (n < 0)
		return n;
	rc = zoo_create(z->zh, "/xtx", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	if (rc != ZOK && rc != ZNODEEXISTS)
		return fail(z, "creating", "/xtx", rc);
	snprintf(config, sizeof(config), "%s/config", z->root);
	snprintf(live, sizeof(live), "%s/live", z->root);
	/* all or nothing: a cluster half made is one nobody can init again */
	zoo_create_op_init(&ops[0], z->root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	zoo_create_op_init(&ops[1], config, text, n, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	zoo_create_op_init(&ops[2], live, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	snprintf(joined, sizeof(joined), "%s/joined", z->root);
	zoo_create_op_init(&ops[3], joined, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	rc = zoo_multi(z->zh, 4, ops, res);
	if (rc == ZNODEEXISTS)
		return -EEXIST;
	return rc == ZOK ? 0 : fail(z, "creating", z->root, rc);
}

int xtx_zk_write_config(struct xtx_zk *z, const struct xtx_cluster *c, int zversion)
{
	/* one per thread: xtxd reads from its member and manager threads */
	static __thread char text[XTX_CLUSTER_TEXT_MAX];
	char path[sizeof(z->root) + 8];
	int n, rc;

	n = xtx_cluster_format(c, text, sizeof(text));
	if (n < 0)
		return n;
	snprintf(path, sizeof(path), "%s/config", z->root);
	rc = zoo_set(z->zh, path, text, n, zversion);
	if (rc == ZBADVERSION)
		return -EAGAIN;
	return rc == ZOK ? 0 : fail(z, "writing", path, rc);
}

/* Moves last_heard forward to sent, never back (answers may come out of order). */
static void heard_since(struct xtx_zk *z, uint64_t sent)
{
	uint64_t old = atomic_load(&z->last_heard);

	while (old < sent && !atomic_compare_exchange_weak(&z->last_heard, &old, sent))
		;
}

int xtx_zk_register(struct xtx_zk *z, unsigned int index, const char *addr)
{
	char path[sizeof(z->root) + 16];
	uint64_t sent;
	int rc;

	snprintf(path, sizeof(path), "%s/live/%u", z->root, index);
	sent = xtx_zk_clock();
	rc = zoo_create(z->zh, path, addr, (int)strlen(addr), &ZOO_OPEN_ACL_UNSAFE,
			ZOO_EPHEMERAL, NULL, 0);
	if (rc == ZNODEEXISTS)
		return -EEXIST;
	if (rc != ZOK)
		return fail(z, "registering", path, rc);
	/* the ensemble answered: it heard from the session since then */
	heard_since(z, sent);
	return 0;
}


/* The children of DIR named by a server index, as a bit per index. */
static int index_children(struct xtx_zk *z, const char *dir, uint64_t *mask, bool watch)
{
	char path[sizeof(z->root) + 16], *end;
	struct String_vector v = { 0 };
	unsigned long i;
	int rc, k;

	snprintf(path, sizeof(path), "%s/%s", z->root, dir);
	rc = zoo_wget_children(z->zh, path, watch ? on_event : NULL, z, &v);
	if (rc != ZOK)
		return fail(z, "listing", path, rc);
	*mask = 0;
	for (k = 0; k < v.count; k++) {
		i = strtoul(v.data[k], &end, 10);
		if (!*end && i < 64)
			*mask |= 1ull << i;
	}
	deallocate_String_vector(&v);
	return 0;
}

int xtx_zk_live(struct xtx_zk *z, uint64_t *mask, bool watch)
{
	return index_children(z, "live", mask, watch);
}

int xtx_zk_joined(struct xtx_zk *z, uint64_t *mask)
{
	return index_children(z, "joined", mask, false);
}

int xtx_zk_mark_joined(struct xtx_zk *z, unsigned int index)
{
	char path[sizeof(z->root) + 24];
	int rc;

	snprintf(path, sizeof(path), "%s/joined/%u", z->root, index);
	rc = zoo_create(z->zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	if (rc == ZNONODE) {
		char dir[sizeof(z->root) + 8];

		/* a cluster made before servers were marked: its joined/ comes now */
		snprintf(dir, sizeof(dir), "%s/joined", z->root);
		rc = zoo_create(z->zh, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
		if (rc == ZOK || rc == ZNODEEXISTS)
			rc = zoo_create(z->zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	}
	return rc == ZOK || rc == ZNODEEXISTS ? 0 : fail(z, "creating", path, rc);
}

int xtx_zk_forget_joined(struct xtx_zk *z, unsigned int index)
{
	char path[sizeof(z->root) + 24];
	int rc;

	snprintf(path, sizeof(path), "%s/joined/%u", z->root, index);
	rc = zoo_delete(z->zh, path, -1);
	return rc == ZOK || rc == ZNONODE ? 0 : fail(z, "removing", path, rc);
}

int xtx_zk_lead(struct xtx_zk *z, unsigned int index, bool watch)
{
	char path[sizeof(z->root) + 16], data[16];
	int rc;

	snprintf(path, sizeof(path), "%s/manager", z->root);
	snprintf(data, sizeof(data), "%u", index);
	rc = zoo_create(z->zh, path, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL,
			NULL, 0);
	if (rc == ZOK)
		return 0;
	if (rc != ZNODEEXISTS)
		return fail(z, "creating", path, rc);
	/* another holds it: be told when it goes (or be told it went already) */
	if (watch) {
		rc = zoo_wexists(z->zh, path, on_event, z, NULL);
		if (rc == ZNONODE)
			atomic_store(&z->changed, true);
		else if (rc != ZOK)
			return fail(z, "watching", path, rc);
	}
	return -EEXIST;
}

int xtx_zk_manager(struct xtx_zk *z)
{
	char path[sizeof(z->root) + 16], data[16];
	int len = sizeof(data) - 1, rc;

	snprintf(path, sizeof(path), "%s/manager", z->root);
	rc = zoo_get(z->zh, path, 0, data, &len, NULL);
	if (rc == ZNONODE)
		return -ENOENT;
	if (rc != ZOK)
		return fail(z, "reading", path, rc);
	data[len < 0 ? 0 : len] = '\0';
	return atoi(data);
}

int xtx_zk_put_copy(struct xtx_zk *z, unsigned int index, const struct xtx_zk_copy *cp)
{
	char path[sizeof(z->root) + 24], dir[sizeof(z->root) + 8], data[96];
	int n, rc;

	n = snprintf(data, sizeof(data), "epoch %u keys %llu ms %u %s", cp->epoch,
		     (unsigned long long)cp->keys, cp->ms, cp->done ? "done" : "copying");
	snprintf(path, sizeof(path), "%s/copy/%u", z->root, index);
	rc = zoo_set(z->zh, path, data, n, -1);
	if (rc == ZNONODE) {
		/* the first copy of this session (and maybe of the cluster) */
		snprintf(dir, sizeof(dir), "%s/copy", z->root);
		rc = zoo_create(z->zh, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
		if (rc == ZOK || rc == ZNODEEXISTS)
			rc = zoo_create(z->zh, path, data, n, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL,
					NULL, 0);
	}
	return rc == ZOK ? 0 : fail(z, "writing", path, rc);
}

int xtx_zk_get_copy(struct xtx_zk *z, unsigned int index, struct xtx_zk_copy *cp)
{
	char path[sizeof(z->root) + 24], data[96], state[16];
	unsigned long long keys;
	int len = sizeof(data) - 1, rc;

	snprintf(path, sizeof(path), "%s/copy/%u", z->root, index);
	rc = zoo_get(z->zh, path, 0, data, &len, NULL);
	if (rc == ZNONODE)
		return -ENOENT;
	if (rc != ZOK)
		return fail(z, "reading", path, rc);
	data[len < 0 ? 0 : len] = '\0';
	if (sscanf(data, "epoch %u keys %llu ms %u %15s", &cp->epoch, &keys, &cp->ms, state) != 4)
		return -EINVAL;
	cp->keys = keys;
	cp->done = !strcmp(state, "done");
	return 0;
}

struct beat {
	struct xtx_zk *z;
	uint64_t sent_ns;
};

static void on_heartbeat(int rc, const char *value, const void *data)
{
	struct beat *b = (struct beat *)data;
	struct xtx_zk *z = b->z;

	(void)value;
	/*
	 * A sync goes through the leader, which tracks sessions: a follower
	 * cut off from it answers no sync, though it may still answer reads.
	 */
	if (rc == ZOK)
		heard_since(z, b->sent_ns);
	atomic_store(&z->beat_out, false);
	free(b);
}

void xtx_zk_heartbeat(struct xtx_zk *z)
{
	struct beat *b;

	if (atomic_exchange(&z->beat_out, true))
		return;		/* one at a time: an older question is still out */
	b = malloc(sizeof(*b));
	if (!b)
		goto none;
	b->z = z;
	/* boot time, taken now: a suspend before the answer is used counts against the lease */
	b->sent_ns = xtx_zk_clock();
	if (zoo_async(z->zh, z->root, on_heartbeat, b) == ZOK)
		return;
	free(b);
none:
	atomic_store(&z->beat_out, false);
}

uint64_t xtx_zk_clock(void)
{
	return xtx_boot_ns();
}

uint64_t xtx_zk_last_heard(struct xtx_zk *z)
{
	return atomic_load(&z->last_heard);
}
