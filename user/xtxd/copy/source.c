// SPDX-License-Identifier: GPL-2.0-only
/* Serving copies of shards to the servers copying them (copy.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <urcu.h>
#include <xtx/hash.h>
#include "clock.h"
#include "log.h"
#include "resolve/resolve.h"
#include "resolve/resolve_apply.h"
#include "store/overflow.h"
#include "copy.h"
#include "copy_wire.h"

/* How long a copier may wait for this server to serve its epoch. */
#define EPOCH_WAIT_NS		(5ull * 1000 * 1000 * 1000)
/* Transactions logged here settle within the resolver's after_ns and a decision. */
#define SETTLE_WAIT_NS		(20ull * 1000 * 1000 * 1000)
#define IO_TIMEOUT_S		10
#define BATCH_BYTES		(64 * 1024)	/* bytes per send, at least */

/* How long a copier has to send its whole request once connected. */
#define REQ_DEADLINE_NS		(1000ull * 1000 * 1000)

static struct {
	int sock, stop_fd;
	pthread_t tid;
	bool running;
	atomic_bool quit;
	xtxd_copy_config_fn config;
	/* the newest request stamp served, per server: a request is served once */
	uint64_t last_stamp[XTX_CLUSTER_MAX_SERVERS];
	_Atomic uint64_t strangers, refused;
} S = { .sock = -1, .stop_fd = -1 };

void xtxd_copy_serve_get_stats(struct xtxd_copy_serve_stats *st)
{
	st->strangers = atomic_load(&S.strangers);
	st->refused = atomic_load(&S.refused);
}

static bool stopping(void)
{
	return atomic_load(&S.quit);
}

/* A batch of items on its way to the copier: one frame. */
struct out {
	int fd;
	uint64_t chain;		/* the MAC of the frame before (copy_wire.h) */
	uint8_t b[BATCH_BYTES + XTXD_COPY_ITEM_MAX];
	size_t n;		/* bytes */
	uint64_t sent;
	struct xtxd_live *l;
	const struct xtx_cluster *c;
	const struct xtxd_copy_req *rq;
};

static int send_all(int fd, const void *p, size_t len)
{
	const char *c = p;
	ssize_t n;

	while (len) {
		n = send(fd, c, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The batch as a frame: its header, its items, its seal. */
static int flush(struct out *o)
{
	struct xtxd_copy_frame f = { .len = (uint32_t)o->n };
	int err;

	if (!o->n)
		return 0;
	o->chain = xtxd_copy_frame_mac(o->chain, &f, o->b);
	err = send_all(o->fd, &f, sizeof(f));
	if (!err)
		err = send_all(o->fd, o->b, o->n);
	if (!err)
		err = send_all(o->fd, &o->chain, sizeof(o->chain));
	o->n = 0;
	return err;
}

static int emit(struct out *o, const struct xtxd_ovf_item *it)
{
	struct xtxd_copy_item k;
	uint16_t vlen = it->vlen > XTX_VALUE_MAX ? XTX_VALUE_MAX : it->vlen;
	size_t size = xtxd_copy_item_size(vlen);

	if (stopping())
		return -ECANCELED;
	memset(&k, 0, sizeof(k));
	k.key = it->key;
	k.version = it->version;
	k.table = it->table;
	k.flags = XTX_KVF_VALID;
	k.vlen = vlen;
	memcpy(o->b + o->n, &k, sizeof(k));
	memset(o->b + o->n + sizeof(k), 0, size - sizeof(k));
	memcpy(o->b + o->n + sizeof(k), it->value, vlen);
	o->n += size;
	o->sent++;
	return o->n >= BATCH_BYTES ? flush(o) : 0;
}

static bool wanted(const struct out *o, uint8_t table, uint64_t key)
{
	return xtxd_copy_wants(o->rq, xtx_cluster_shard(o->c, table, key));
}

/*
 * The kernel's keys, bucket by bucket under its locks.  A bucket seen
 * empty without them is skipped: a key arriving after that is either new
 * (a write the copier takes live) or filled from the store, which still
 * holds it for the second pass.
 */
static int kernel_pass(struct out *o)
{
	struct xtxd_ovf_item it[XTX_KV_WAYS];
	uint32_t bi;
	int err, w, n;

	for (bi = 0; bi < o->l->nbuckets; bi++) {
		const struct xtx_kv_bucket *b = &o->l->kv[bi];

		for (w = 0; w < XTX_KV_WAYS && !(b->flags[w] & XTX_KVF_VALID); w++)
			;
		if (w == XTX_KV_WAYS)
			continue;
		err = xtxd_live_bucket_lock(o->l, bi);
		if (err)
			return err;
		for (w = n = 0; w < XTX_KV_WAYS; w++)
			if ((b->flags[w] & XTX_KVF_VALID) && wanted(o, b->table[w], b->key[w]))
				n += xtxd_live_get_locked(o->l, bi, b->table[w], b->key[w], &it[n]);
		xtxd_live_bucket_unlock(o->l, bi);
		for (w = 0; w < n; w++) {
			err = emit(o, &it[w]);
			if (err)
				return err;
		}
	}
	return 0;
}

static bool wanted_key(uint8_t table, uint64_t key, void *arg)
{
	return wanted(arg, table, key);
}

/*
 * The overflow store's keys: listed first (the walk must not block), then
 * each read under its bucket's locks.  A key of the store never leaves it
 * but by a delete, so none alive is missed between the two passes.
 */
static int store_pass(struct out *o)
{
	struct xtxd_ovf_item it, *keys;
	size_t i, n;
	int err;

	err = xtxd_live_store_keys(o->l, wanted_key, o, &keys, &n);
	for (i = 0; !err && i < n; i++) {
		uint32_t bi = xtx_bucket_of(xtx_hash(keys[i].table, keys[i].key), o->l->nbuckets);
		int got;

		err = xtxd_live_bucket_lock(o->l, bi);
		if (err)
			break;
		got = xtxd_live_get_locked(o->l, bi, keys[i].table, keys[i].key, &it);
		xtxd_live_bucket_unlock(o->l, bi);
		if (got)
			err = emit(o, &it);
	}
	free(keys);
	return err;
}

/* The configuration of the copier's epoch, once this server serves it; 0 or -errno. */
static int await_epoch(uint32_t epoch, struct xtx_cluster *c, unsigned int *self)
{
	uint64_t until = xtx_now_ns() + EPOCH_WAIT_NS;
	const struct timespec tick = { 0, 20 * 1000 * 1000 };

	for (;;) {
		if (S.config(c, self) && c->epoch >= epoch)
			return c->epoch == epoch ? 0 : -ESTALE;
		if (xtx_now_ns() > until)
			return -EAGAIN;
		nanosleep(&tick, NULL);
	}
}

/* Whether the request is the copier's own, for shards it copies and this server holds whole. */
static int check(const struct xtxd_copy_req *rq, const struct sockaddr_in *peer,
		 const struct xtx_cluster *c, unsigned int self)
{
	unsigned int s, last;
	bool whole;
	int i;

	if (rq->from >= c->nservers || c->server[rq->from].s_addr != peer->sin_addr.s_addr ||
	    rq->nshards != c->nshards)
		return -EPERM;
	for (s = 0; s < XTX_CLUSTER_MAX_SHARDS; s++) {
		if (!xtxd_copy_wants(rq, s))
			continue;
		if (s >= c->nshards || !c->copying[s])
			return -EINVAL;
		last = c->nrep[s] - 1u;
		whole = false;
		for (i = 0; i < (int)last; i++)
			whole |= c->rep[s][i] == self;
		if (c->rep[s][last] != rq->from || !whole)
			return -EINVAL;
	}
	return 0;
}

/* len bytes before deadline (CLOCK_MONOTONIC), however the sender dribbles them: 0 or -errno. */
static int recv_by(int fd, void *buf, size_t len, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char *c = buf;
	ssize_t n;

	while (len) {
		uint64_t now = xtx_now_ns();

		if (now >= deadline || stopping())
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			continue;
		n = recv(fd, c, len, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Whether addr is one of the configured servers' (the only ones that copy). */
static bool a_server(struct in_addr addr)
{
	static struct xtx_cluster c;
	unsigned int self, i;

	S.config(&c, &self);
	for (i = 0; i < c.nservers; i++)
		if (c.server[i].s_addr == addr.s_addr)
			return true;
	return false;
}

/*
 * The request is the sender's own, sealed with the secret, fresh and not
 * served before: 0, or -EPERM after counting it refused.
 */
static int check_seal(const struct xtxd_copy_req *rq, const struct xtxd_copy_auth *au,
		      const struct sockaddr_in *peer)
{
	struct timespec ts;
	uint64_t now;

	if (!xtxd_copy_sealed())
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (rq->from < XTX_CLUSTER_MAX_SERVERS &&
	    xtxd_copy_mac_ok(xtxd_copy_req_mac(rq, au->stamp), au->mac) &&
	    au->stamp + XTXD_COPY_SKEW_NS > now && au->stamp < now + XTXD_COPY_SKEW_NS &&
	    au->stamp > S.last_stamp[rq->from]) {
		S.last_stamp[rq->from] = au->stamp;
		return 0;
	}
	if (!atomic_fetch_add(&S.refused, 1))
		pr_warn("copy: a request from %s without the secret's seal, or sent before: "
			"refused\n", inet_ntoa(peer->sin_addr));
	return -EPERM;
}

static void serve_one(int fd, const struct sockaddr_in *peer)
{
	static struct xtx_cluster c;
	static struct out o;
	struct xtxd_copy_req rq;
	struct xtxd_copy_auth au;
	struct xtxd_copy_hdr h = { .magic = XTXD_COPY_MAGIC };
	struct xtxd_copy_item end;
	struct xtxd_copy_frame f = { .len = sizeof(end) };
	unsigned int self = 0;
	uint64_t t0 = xtx_now_ns(), t1;
	size_t left = 0;
	int err;

	/* the whole request at once: a silent or dribbling sender holds nobody up for long */
	err = recv_by(fd, &rq, sizeof(rq), t0 + REQ_DEADLINE_NS);
	if (!err)
		err = recv_by(fd, &au, sizeof(au), t0 + REQ_DEADLINE_NS);
	if (err || rq.magic != XTXD_COPY_MAGIC) {
		atomic_fetch_add(&S.refused, 1);
		pr_warn("copy: %s from %s: ignored\n", err ? "no whole request" : "a malformed "
			"request", inet_ntoa(peer->sin_addr));
		return;
	}
	/* nothing is waited for, let alone sent, before the seal checks */
	if (check_seal(&rq, &au, peer))
		return;
	err = await_epoch(rq.epoch, &c, &self);
	if (!err)
		err = check(&rq, peer, &c, self);
	/* what began under the old placement commits here, never there: it must be in the copy */
	if (!err) {
		err = xtxd_resolve_settle(SETTLE_WAIT_NS, stopping, &left);
		if (err == -ETIMEDOUT)
			pr_warn("copy: %zu transactions logged here still unsettled after %llu s\n",
				left, SETTLE_WAIT_NS / 1000000000ull);
	}
	o.l = xtxd_resolve_live();
	if (!err && !o.l)
		err = -ENOTCONN;
	h.status = err;
	h.mac = xtxd_copy_reply_mac(&h, au.mac);
	if (send_all(fd, &h, sizeof(h)) || err) {
		pr_warn("copy: server %u (%s) asked for a copy for epoch %u: refused: %s\n",
			rq.from, inet_ntoa(peer->sin_addr), rq.epoch, strerror(-err));
		return;
	}
	t1 = xtx_now_ns();
	o.fd = fd;
	o.chain = h.mac;
	o.n = 0;
	o.sent = 0;
	o.c = &c;
	o.rq = &rq;
	err = kernel_pass(&o);
	if (!err)
		err = store_pass(&o);
	if (!err)
		err = flush(&o);
	memset(&end, 0, sizeof(end));
	end.key = o.sent;
	end.version = xtxd_live_max_floor(o.l);
	/* the end in a frame of its own */
	o.chain = xtxd_copy_frame_mac(o.chain, &f, &end);
	if (!err)
		err = send_all(fd, &f, sizeof(f));
	if (!err)
		err = send_all(fd, &end, sizeof(end));
	if (!err)
		err = send_all(fd, &o.chain, sizeof(o.chain));
	if (err)
		pr_warn("copy: to server %u (%s): %s after %llu keys\n", rq.from,
			inet_ntoa(peer->sin_addr), strerror(-err), (unsigned long long)o.sent);
	else
		pr_info("copy: sent server %u (%s) %llu keys for epoch %u in %llu ms (%.0f keys/s), "
			"after %llu ms waiting for this server's epoch and transactions\n", rq.from,
			inet_ntoa(peer->sin_addr), (unsigned long long)o.sent, rq.epoch,
			(unsigned long long)((xtx_now_ns() - t1) / 1000000),
			(double)o.sent * 1e9 / (double)(xtx_now_ns() - t1 + 1),
			(unsigned long long)((t1 - t0) / 1000000));
}

static void *serve_main(void *arg)
{
	struct pollfd p[2] = { { .fd = S.sock, .events = POLLIN },
			       { .fd = S.stop_fd, .events = POLLIN } };
	const struct timeval tmo = { IO_TIMEOUT_S, 0 }, req_tmo = { 1, 0 };

	(void)arg;
	rcu_register_thread();
	for (;;) {
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept(S.sock, (struct sockaddr *)&peer, &len);
		if (fd < 0)
			continue;
		/* only servers copy: anyone else is gone before a byte is read */
		if (!a_server(peer.sin_addr)) {
			if (!atomic_fetch_add(&S.strangers, 1))
				pr_warn("copy: a connection from %s, no server of the cluster: "
					"closed\n", inet_ntoa(peer.sin_addr));
			close(fd);
			continue;
		}
		/*
		 * one copier at a time: a silent one (or a stranger) must not hold
		 * the next up for long; the request comes at once
		 */
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &req_tmo, sizeof(req_tmo));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo));
		serve_one(fd, &peer);
		close(fd);
	}
	rcu_unregister_thread();
	return NULL;
}

int xtxd_copy_serve_start(uint16_t port, xtxd_copy_config_fn config)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(port + 1)) };
	int one = 1, err;

	S.config = config;
	atomic_store(&S.quit, false);
	S.sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (S.sock < 0 || setsockopt(S.sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(S.sock, (struct sockaddr *)&a, sizeof(a)) || listen(S.sock, 8)) {
		err = -errno;
		pr_warn("Error: copy: listening on TCP port %u: %s\n", port + 1, strerror(-err));
		xtxd_copy_serve_stop();
		return err;
	}
	S.stop_fd = eventfd(0, EFD_CLOEXEC);
	if (S.stop_fd < 0) {
		err = -errno;
		xtxd_copy_serve_stop();
		return err;
	}
	err = pthread_create(&S.tid, NULL, serve_main, NULL);
	if (err) {
		pr_warn("Error: copy: starting its thread: %s\n", strerror(err));
		xtxd_copy_serve_stop();
		return -err;
	}
	S.running = true;
	return 0;
}

void xtxd_copy_serve_stop(void)
{
	uint64_t one = 1;

	atomic_store(&S.quit, true);
	if (S.running) {
		if (write(S.stop_fd, &one, sizeof(one)) != sizeof(one))
			pr_warn("copy: stopping its thread: %s\n", strerror(errno));
		pthread_join(S.tid, NULL);
		S.running = false;
	}
	if (S.sock >= 0)
		close(S.sock);
	if (S.stop_fd >= 0)
		close(S.stop_fd);
	S.sock = S.stop_fd = -1;
}
