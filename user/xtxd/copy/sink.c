// SPDX-License-Identifier: GPL-2.0-only
/* Copying the shards this server is made a copier of (copy.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <urcu.h>
#include "clock.h"
#include "log.h"
#include "ctl_out.h"
#include "log/snapshot.h"
#include "resolve/resolve.h"
#include "resolve/resolve_apply.h"
#include "copy.h"
#include "copy_wire.h"

#define IO_TIMEOUT_S		1
/* A source silent this long (settling takes seconds at most) is taken for dead: start over. */
#define IDLE_LIMIT_NS		(30ull * 1000 * 1000 * 1000)
#define RETRY_NS		(1000ull * 1000 * 1000)
#define SETTLE_WAIT_NS		(20ull * 1000 * 1000 * 1000)
#define BATCH			1024

/*
 * One worker thread, started with the first copy and kept: the member
 * thread only hands it work (xtxd_copy_begin() never waits: the member
 * thread renews the lease), and a newer epoch cancels the copy under way.
 */
static struct {
	pthread_mutex_t mu;	/* everything below but the atomics */
	pthread_cond_t cv;	/* work handed over, or quit */
	pthread_t tid;
	bool running, quit;
	unsigned int gen;		/* bumped by every hand-over */
	atomic_uint current;		/* the gen the worker is copying for */
	bool have;			/* a copy was ever started */
	struct xtx_cluster want;	/* the latest configuration handed over */
	unsigned int want_self;
	uint16_t port;
	/* the copy under way, the worker's own */
	struct xtx_cluster c;
	unsigned int self;
	uint16_t cport;
	uint64_t start_ns;
	_Atomic uint64_t keys;		/* received and installed (or older than what is here) */
	atomic_bool done;
	_Atomic uint32_t ms;		/* how long it took, once done */
	struct xtx_target t;		/* for the snapshot that makes a copy durable */
	bool has_target;
	_Atomic uint32_t epoch;		/* the epoch it copies for */
} K = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* The copy under way was replaced by a newer one, or xtxd stops. */
static bool cancelled(void)
{
	bool c;

	pthread_mutex_lock(&K.mu);
	c = K.quit || K.gen != atomic_load(&K.current);
	pthread_mutex_unlock(&K.mu);
	return c;
}

static void nap(uint64_t ns)
{
	uint64_t until = xtx_now_ns() + ns;
	const struct timespec tick = { 0, 20 * 1000 * 1000 };

	while (!cancelled() && xtx_now_ns() < until)
		nanosleep(&tick, NULL);
}

/*
 * One key as the resolver installs a decided write: only over an older
 * version (a value over XTX_VALUE_INLINE into the overflow store).
 */
static int install(struct xtxd_live *l, const struct xtxd_copy_item *k, const uint8_t *value)
{
	static struct xtx_log_write w;
	int err, tries = 0;

	memset(&w, 0, sizeof(w));
	w.e.key = k->key;
	w.e.version = k->version;
	w.e.table = k->table;
	w.vlen = k->vlen;
	memcpy(w.value, value, k->vlen);
	do
		err = xtxd_live_install(l, &w);
	while (err == -ETIMEDOUT && ++tries < 5 && !cancelled());
	return err < 0 ? err : 0;
}

static int recv_some(int fd, void *buf, size_t len, size_t *got)
{
	uint64_t idle_from = xtx_now_ns();
	ssize_t n;

	for (;;) {
		if (cancelled())
			return -ECANCELED;
		n = recv(fd, buf, len, 0);
		if (n > 0) {
			*got = (size_t)n;
			return 0;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (xtx_now_ns() - idle_from > IDLE_LIMIT_NS)
			return -ETIMEDOUT;
	}
}

static int recv_exact(int fd, void *buf, size_t len)
{
	size_t got = 0;
	int err;

	while (len) {
		err = recv_some(fd, buf, len, &got);
		if (err)
			return err;
		buf = (char *)buf + got;
		len -= got;
	}
	return 0;
}

/* The shards of rq from server src, installed here; 0 or a negative errno. */
static int pull(struct xtxd_live *l, unsigned int src, const struct xtxd_copy_req *rq)
{
	static uint8_t buf[XTXD_COPY_FRAME_MAX];
	static uint64_t last_stamp;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(K.cport + 1)),
				 .sin_addr = K.c.server[src] };
	const struct timeval tmo = { IO_TIMEOUT_S, 0 };
	struct xtxd_copy_hdr h;
	struct xtxd_copy_auth au;
	struct xtxd_copy_frame f;
	struct timespec ts;
	uint64_t count = 0, chain, mac;
	size_t off;
	int fd, err;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo));
	clock_gettime(CLOCK_REALTIME, &ts);
	/* a new stamp for every request: the source serves each once */
	au.stamp = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (au.stamp <= last_stamp)
		au.stamp = last_stamp + 1;
	last_stamp = au.stamp;
	au.mac = xtxd_copy_req_mac(rq, au.stamp);
	err = connect(fd, (struct sockaddr *)&a, sizeof(a)) ? -errno : 0;
	if (!err && (send(fd, rq, sizeof(*rq), MSG_NOSIGNAL) != (ssize_t)sizeof(*rq) ||
		     send(fd, &au, sizeof(au), MSG_NOSIGNAL) != (ssize_t)sizeof(au)))
		err = -EPIPE;
	if (!err)
		err = recv_exact(fd, &h, sizeof(h));
	if (!err && (h.magic != XTXD_COPY_MAGIC ||
		     !xtxd_copy_mac_ok(xtxd_copy_reply_mac(&h, au.mac), h.mac)))
		err = -EPROTO;
	if (!err && h.status)
		err = h.status < 0 ? h.status : -EPROTO;
	chain = h.mac;
	/* frame by frame, each checked whole before a key of it goes in */
	while (!err) {
		err = recv_exact(fd, &f, sizeof(f));
		if (!err && (f.len > sizeof(buf) || f.len < sizeof(struct xtxd_copy_item)))
			err = -EPROTO;
		if (!err)
			err = recv_exact(fd, buf, f.len);
		if (!err)
			err = recv_exact(fd, &mac, sizeof(mac));
		if (err)
			break;
		chain = xtxd_copy_frame_mac(chain, &f, buf);
		if (!xtxd_copy_mac_ok(chain, mac)) {
			pr_warn("copy: from server %u: a frame of keys fails its seal: not "
				"installed\n", src);
			err = -EPROTO;
			break;
		}
		for (off = 0; !err && off < f.len;) {
			struct xtxd_copy_item it;

			if (f.len - off < sizeof(it)) {
				err = -EPROTO;
				break;
			}
			memcpy(&it, buf + off, sizeof(it));
			if (!(it.flags & XTX_KVF_VALID)) {
				/* the end: every key sent arrived; no version below the source's floor */
				err = it.key != count || off + sizeof(it) != f.len ? -EPROTO :
				      xtxd_live_raise_floors(l, it.version) ? -ETIMEDOUT : 1;
				break;
			}
			if (it.vlen > XTX_VALUE_MAX || f.len - off < xtxd_copy_item_size(it.vlen)) {
				err = -EPROTO;
				break;
			}
			err = install(l, &it, buf + off + sizeof(it));
			off += xtxd_copy_item_size(it.vlen);
			count++;
			atomic_fetch_add(&K.keys, 1);
		}
	}
	close(fd);
	if (err == -ENOSPC)
		pr_warn("copy: the overflow store is full (xtxd --overflow-max): the copy cannot "
			"finish here\n");
	return err == 1 ? 0 : err;
}

/* Every shard this server copies from src, as one request; false when there is none. */
static bool request_for(unsigned int src, struct xtxd_copy_req *rq)
{
	unsigned int s;
	bool any = false;

	memset(rq, 0, sizeof(*rq));
	rq->magic = XTXD_COPY_MAGIC;
	rq->epoch = K.c.epoch;
	rq->from = K.self;
	rq->nshards = K.c.nshards;
	for (s = 0; s < K.c.nshards; s++) {
		if (!K.c.copying[s] || K.c.rep[s][K.c.nrep[s] - 1] != K.self ||
		    K.c.rep[s][0] != src)
			continue;
		rq->shards[s / 64] |= 1ull << (s % 64);
		any = true;
	}
	return any;
}

/* The copy into a snapshot: nothing but it holds the keys copied. */
static int persist(struct xtxd_live *l)
{
	struct xtxd_out out;
	int err;

	if (!K.has_target)
		return -ENOTCONN;
	xtxd_out_init(&out, -1);
	err = xtxd_snapshot_save(&K.t, l->store, &out);
	if (err)
		pr_warn("copy: the snapshot that keeps the copy failed: %s; trying again\n",
			strerror(-err));
	return err;
}

/* One whole copy: every source, then everything logged here settled. */
static int copy_once(struct xtxd_live *l)
{
	struct xtxd_copy_req rq;
	unsigned int src;
	size_t left;
	int err;

	for (src = 0; src < K.c.nservers; src++) {
		if (!request_for(src, &rq))
			continue;
		err = pull(l, src, &rq);
		if (err) {
			if (err != -ECANCELED)
				pr_warn("copy: from server %u (%s): %s; starting over\n", src,
					inet_ntoa(K.c.server[src]), strerror(-err));
			return err;
		}
	}
	/* a transaction that deleted a key before its older copy arrived is applied again */
	do
		err = xtxd_resolve_settle(SETTLE_WAIT_NS, cancelled, &left);
	while (err == -ETIMEDOUT);
	if (!err)
		err = xtxd_resolve_replay_deletes(&left);
	if (!err)
		err = persist(l);
	return err;
}

/* One configuration's copy, until done or cancelled. */
static void copy_for(struct xtxd_live *l)
{
	uint64_t t;

	pr_info("copy: epoch %u: copying %u shards\n", K.c.epoch,
		xtx_cluster_copying(&K.c, K.self));
	while (!cancelled()) {
		atomic_store(&K.keys, 0);
		if (!copy_once(l)) {
			t = xtx_now_ns() - K.start_ns;
			atomic_store(&K.ms, (uint32_t)(t / 1000000));
			atomic_store(&K.done, true);
			pr_info("copy: epoch %u: %u shards whole here: %llu keys in %llu ms "
				"(%.0f keys/s)\n", K.c.epoch, xtx_cluster_copying(&K.c, K.self),
				(unsigned long long)atomic_load(&K.keys),
				(unsigned long long)(t / 1000000),
				t ? (double)atomic_load(&K.keys) * 1e9 / (double)t : 0.0);
			return;
		}
		nap(RETRY_NS);
	}
}

static void *copy_main(void *arg)
{
	struct xtxd_live *l = xtxd_resolve_live();
	unsigned int seen = 0;
	/*
	 * Deletes are held from the first key of a copy until one is done: a
	 * copy cancelled for a newer epoch may have put back keys the next one
	 * no longer sends, which only the held deletes undo.
	 */
	bool holding = false;

	(void)arg;
	rcu_register_thread();
	pthread_mutex_lock(&K.mu);
	for (;;) {
		while (!K.quit && K.gen == seen)
			pthread_cond_wait(&K.cv, &K.mu);
		if (K.quit)
			break;
		seen = K.gen;
		atomic_store(&K.current, seen);
		K.c = K.want;
		K.self = K.want_self;
		K.cport = K.port;
		pthread_mutex_unlock(&K.mu);
		if (!xtx_cluster_copying(&K.c, K.self)) {
			if (holding)
				xtxd_resolve_hold_deletes(false);
			holding = false;
			pthread_mutex_lock(&K.mu);
			continue;
		}
		K.start_ns = xtx_now_ns();
		atomic_store(&K.keys, 0);
		atomic_store(&K.done, false);
		atomic_store(&K.epoch, K.c.epoch);
		pthread_mutex_lock(&K.mu);
		K.have = true;
		pthread_mutex_unlock(&K.mu);
		if (!l) {
			pr_warn("Error: copy: no resolver runs here: nothing to install with\n");
		} else {
			if (!holding)
				xtxd_resolve_hold_deletes(true);
			holding = true;
			copy_for(l);
			if (atomic_load(&K.done)) {
				xtxd_resolve_hold_deletes(false);
				holding = false;
			}
		}
		pthread_mutex_lock(&K.mu);
	}
	pthread_mutex_unlock(&K.mu);
	if (holding)
		xtxd_resolve_hold_deletes(false);
	rcu_unregister_thread();
	return NULL;
}

void xtxd_copy_stop(void)
{
	pthread_mutex_lock(&K.mu);
	K.quit = true;
	pthread_cond_broadcast(&K.cv);
	pthread_mutex_unlock(&K.mu);
	if (K.running)
		pthread_join(K.tid, NULL);
	K.running = false;
}

void xtxd_copy_begin(const struct xtx_cluster *c, unsigned int self, uint16_t port)
{
	int err;

	pthread_mutex_lock(&K.mu);
	/* the same configuration again (a restart of the member's look): nothing new */
	if (K.gen && K.want.epoch == c->epoch) {
		pthread_mutex_unlock(&K.mu);
		return;
	}
	K.want = *c;
	K.want_self = self;
	K.port = port;
	K.gen++;
	pthread_cond_broadcast(&K.cv);
	if (!K.running && !K.quit && xtx_cluster_copying(c, self)) {
		err = pthread_create(&K.tid, NULL, copy_main, NULL);
		if (err)
			pr_warn("Error: copy: starting its thread: %s\n", strerror(err));
		K.running = !err;
	}
	pthread_mutex_unlock(&K.mu);
}

void xtxd_copy_set_target(const struct xtx_target *t)
{
	pthread_mutex_lock(&K.mu);
	K.t = *t;
	K.has_target = true;
	pthread_mutex_unlock(&K.mu);
}

/* The wipe on a thread of its own: the store wants a registered RCU thread. */
static void *wipe_main(void *arg)
{
	struct xtxd_live *l = xtxd_resolve_live();
	long *n = arg;

	rcu_register_thread();
	*n = l ? xtxd_live_wipe(l) : -ENOTCONN;
	rcu_unregister_thread();
	return NULL;
}

long xtxd_copy_wipe(void)
{
	pthread_t tid;
	long n = 0;
	int err = pthread_create(&tid, NULL, wipe_main, &n);

	if (err)
		return -err;
	pthread_join(tid, NULL);
	return n;
}

bool xtxd_copy_progress(struct xtx_zk_copy *p)
{
	bool have;

	pthread_mutex_lock(&K.mu);
	have = K.have;
	pthread_mutex_unlock(&K.mu);
	p->epoch = atomic_load(&K.epoch);
	p->keys = atomic_load(&K.keys);
	p->done = atomic_load(&K.done);
	p->ms = p->done ? atomic_load(&K.ms) :
		(uint32_t)((xtx_now_ns() - K.start_ns) / 1000000);
	return have;
}
