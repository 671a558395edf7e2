// SPDX-License-Identifier: GPL-2.0-only
/* Writes logged on this server alone whose coordinator never finished: installed as a restart would. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <urcu.h>
#include <xtx/kv.h>
#include <xtx/maps.h>
#include "clock.h"
#include "log.h"
#include "log/snapshot.h"
#include "logrec.h"
#include "logwalk.h"
#include "resolve_apply.h"
#include "settle.h"

#define SETTLE_EVERY_MS		100
/* Followed at once, at most: 2^21 writes of 112 bytes (a value's spill apart) */
#define SETTLE_MAX		(1u << 21)

/* A drained single-replica write: its head, and a value over the entry's room apart. */
struct pending {
	uint64_t seen_ns;
	struct xtx_log_entry e;
	uint16_t vlen;
	uint8_t *big;		/* vlen bytes when vlen > XTX_VALUE_INLINE, else NULL */
};

static struct {
	bool running;
	pthread_t tid;
	int stop_fd;
	uint64_t after_ns;
	struct xtxd_live live;
	size_t kv_size, locks_size, pins_size;
	pthread_mutex_t mu;	/* the queue: the drain pushes, the thread pops */
	struct pending *q;	/* a ring of cap, n from head, in the order drained */
	size_t cap, head, n;
	uint64_t installed, untracked;
	bool warned_full;
	int scan_dirfd;		/* an adopted start's data directory, walked once; -1: none */
} S = { .stop_fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER, .scan_dirfd = -1 };

/* Under mu: room for one more, growing the ring up to SETTLE_MAX. */
static bool room(void)
{
	struct pending *q;
	size_t cap, i;

	if (S.n < S.cap)
		return true;
	if (S.cap >= SETTLE_MAX)
		return false;
	cap = S.cap ? S.cap * 2 : 1024;
	q = malloc(cap * sizeof(*q));
	if (!q)
		return false;
	for (i = 0; i < S.n; i++)
		q[i] = S.q[(S.head + i) % S.cap];
	free(S.q);
	S.q = q;
	S.cap = cap;
	S.head = 0;
	return true;
}

/*
 * Under mu: queues the write whose head is e, of vlen bytes (value: the
 * whole value when vlen > XTX_VALUE_INLINE, else the head holds it), seen
 * at now.
 */
static void enqueue(const struct xtx_log_entry *e, uint16_t vlen, const uint8_t *value,
		    uint64_t now)
{
	struct pending *p;

	if (!room()) {
		S.untracked++;
		return;
	}
	p = &S.q[(S.head + S.n) % S.cap];
	memset(p, 0, sizeof(*p));
	p->seen_ns = now;
	p->e = *e;
	p->vlen = vlen;
	if (vlen > XTX_VALUE_INLINE) {
		p->big = malloc(vlen);
		if (!p->big) {
			S.untracked++;
			return;
		}
		memcpy(p->big, value, vlen);
	}
	S.n++;
}

void xtxd_settle_observe(const struct xtx_log_entry *e, size_t n)
{
	static __thread struct xtx_log_write w;
	uint64_t now = 0;
	bool locked = false;
	size_t i, span;
	const char *why;

	if (!__atomic_load_n(&S.running, __ATOMIC_ACQUIRE))
		return;
	for (i = 0; i < n; i += span) {
		span = xtx_logrec_span(&e[i]);
		/* several replicas are the resolver's; decided ones were installed before logging */
		if (e[i].nreplicas > 1 || xtx_log_is_mark(&e[i]) ||
		    (e[i].flags & (XTX_LOGF_META | XTX_LOGF_DECIDED)))
			continue;
		if (e[i].flags & XTX_LOGF_EXT &&
		    xtx_logrec_decode(&e[i], span <= n - i ? span : n - i, &w, &why))
			continue;	/* damage is recovery's to refuse */
		if (!now)
			now = xtx_now_ns();
		if (!locked) {
			pthread_mutex_lock(&S.mu);
			locked = true;
		}
		if (e[i].flags & XTX_LOGF_EXT)
			enqueue(&e[i], w.vlen, w.value, now);
		else
			enqueue(&e[i], e[i].vlen, NULL, now);
	}
	if (locked)
		pthread_mutex_unlock(&S.mu);
}

/* The write as the resolver installs it. */
static void to_write(const struct pending *p, struct xtx_log_write *w)
{
	memset(w, 0, sizeof(*w));
	w->e = p->e;
	w->vlen = p->vlen;
	if (p->big)
		memcpy(w->value, p->big, p->vlen);
	else
		memcpy(w->value, p->e.value, p->vlen <= XTX_VALUE_INLINE ? p->vlen :
					      XTX_VALUE_INLINE);
}

/*
 * Installs p unless its version (or a newer one) is there, then frees the
 * lock its transaction took on the key: 1 installed, 0 nothing to do, or a
 * negative errno to try again later.
 */
static int settle_one(const struct pending *p)
{
	static struct xtx_log_write w;
	uint64_t v = 0;
	int err;

	xtxd_live_version(&S.live, p->e.table, p->e.key, &v);
	if (v >= p->e.version)
		return 0;	/* its coordinator (or a later write) got there */
	to_write(p, &w);
	err = xtxd_live_install(&S.live, &w);
	if (err < 0)
		return err;
	xtxd_live_unlock(&S.live, p->e.txn, p->e.table, p->e.key);
	return err;
}

/* Every write older than after_ns, in drain order; one that cannot go in yet waits. */
static void scan(void)
{
	uint64_t now = xtx_now_ns(), done = 0;
	struct pending p;
	int r = 0;

	for (;;) {
		pthread_mutex_lock(&S.mu);
		if (!S.n || now - S.q[S.head].seen_ns < S.after_ns) {
			pthread_mutex_unlock(&S.mu);
			break;
		}
		p = S.q[S.head];
		pthread_mutex_unlock(&S.mu);
		r = settle_one(&p);
		if (r < 0)
			break;	/* the bucket stayed held, the store is full: next scan */
		pthread_mutex_lock(&S.mu);
		S.head = (S.head + 1) % S.cap;
		S.n--;
		pthread_mutex_unlock(&S.mu);
		free(p.big);
		done += r;
	}
	if (done) {
		__atomic_fetch_add(&S.installed, done, __ATOMIC_RELAXED);
		pr_info("settle: %llu writes logged on this server alone and not installed by "
			"their coordinators for %llu ms: installed, as a restart would\n",
			(unsigned long long)done, (unsigned long long)(S.after_ns / 1000000));
	}
	if (r < 0)
		pr_debug("settle: installing: %s (again at the next scan)\n", strerror(-r));
	pthread_mutex_lock(&S.mu);
	if (S.untracked && !S.warned_full) {
		S.warned_full = true;
		pr_warn("settle: more than %u single-replica writes at once: some are not "
			"followed, and only a restart installs those their coordinators left\n",
			SETTLE_MAX);
	}
	pthread_mutex_unlock(&S.mu);
}

/*
 * A single-replica write of the logs or of what the newest snapshot
 * carries, at an adopted start, that the store lacks: queued as the drain
 * would have queued it.  The xtxd before this one may have drained it and
 * died before its age came (a SIGKILL, a fail-stop), and an adopted start
 * recovers nothing the kernel holds, so nobody else would ever install it.
 */
static int offer(const struct xtx_log_write *w, void *arg)
{
	uint64_t v = 0;

	(void)arg;
	if (w->e.nreplicas > 1 || xtx_log_is_mark(&w->e) ||
	    (w->e.flags & (XTX_LOGF_META | XTX_LOGF_DECIDED)))
		return 0;
	xtxd_live_version(&S.live, w->e.table, w->e.key, &v);
	if (v >= w->e.version)
		return 0;
	pthread_mutex_lock(&S.mu);
	enqueue(&w->e, w->vlen, w->value, xtx_now_ns());
	pthread_mutex_unlock(&S.mu);
	return 0;
}

static void scan_adopted_logs(void)
{
	size_t n0;
	int err;

	pthread_mutex_lock(&S.mu);
	n0 = S.n;
	pthread_mutex_unlock(&S.mu);
	err = xtxd_snapshot_carried_each(offer, NULL);
	if (!err)
		err = xtx_logwalk(S.scan_dirfd, offer, NULL);
	if (err)
		pr_warn("settle: reading the logs an adopted start may have left uninstalled: %s; "
			"only a restart installs those\n", strerror(-err));
	pthread_mutex_lock(&S.mu);
	if (S.n > n0)
		pr_info("settle: %zu single-replica writes of the logs not in the store at this "
			"adopted start: followed\n", S.n - n0);
	pthread_mutex_unlock(&S.mu);
}

static void *settle_main(void *arg)
{
	struct pollfd p = { .fd = S.stop_fd, .events = POLLIN };

	(void)arg;
	rcu_register_thread();
	if (S.scan_dirfd >= 0) {
		scan_adopted_logs();
		close(S.scan_dirfd);
		S.scan_dirfd = -1;
	}
	while (poll(&p, 1, SETTLE_EVERY_MS) == 0)
		scan();
	rcu_unregister_thread();
	return NULL;
}

static void unmap(void)
{
	if (S.live.locks)
		munmap(S.live.locks, S.locks_size);
	if (S.live.pins)
		munmap(S.live.pins, S.pins_size);
	if (S.live.kv)
		munmap(S.live.kv, S.kv_size);
	S.live.locks = NULL;
	S.live.pins = NULL;
	S.live.kv = NULL;
}

int xtxd_settle_start(const struct xtx_target *t, struct xtxd_ovf *store, uint64_t after_ns,
		       const char *adopted_dir)
{
	struct xtx_info info;
	int err = 0;

	S.after_ns = after_ns;
	S.scan_dirfd = -1;
	if (adopted_dir) {
		S.scan_dirfd = open(adopted_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (S.scan_dirfd < 0)
			err = -errno;
	}
	if (!err)
		err = xtx_target_info(t, &info);
	if (!err)
		err = xtx_target_map_kv(t, info.kv_buckets, &S.live.kv, &S.kv_size);
	if (!err) {
		S.live.nbuckets = info.kv_buckets;
		S.live.store = store;
		S.live.lock_slots = info.lock_slots;
		err = xtx_target_map_array(t, XTX_MAP_LOCKS, info.lock_slots,
					   sizeof(*S.live.locks), (void **)&S.live.locks,
					   &S.locks_size);
	}
	if (!err)
		err = xtx_target_map_array(t, XTX_MAP_FAM_PINS, XTX_PIN_ENTRIES,
					   sizeof(*S.live.pins), (void **)&S.live.pins,
					   &S.pins_size);
	if (!err) {
		S.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (S.stop_fd < 0)
			err = -errno;
	}
	if (!err) {
		__atomic_store_n(&S.running, true, __ATOMIC_RELEASE);
		err = -pthread_create(&S.tid, NULL, settle_main, NULL);
		if (err)
			__atomic_store_n(&S.running, false, __ATOMIC_RELEASE);
		else
			pthread_setname_np(S.tid, "xtxd-settle");
	}
	if (err) {
		fprintf(stderr, "Error: settle: %s\n", strerror(-err));
		if (S.stop_fd >= 0)
			close(S.stop_fd);
		S.stop_fd = -1;
		unmap();
	}
	return err;
}

void xtxd_settle_stop(void)
{
	uint64_t one = 1;

	if (!__atomic_load_n(&S.running, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&S.running, false, __ATOMIC_RELEASE);
	if (write(S.stop_fd, &one, sizeof(one)) != sizeof(one))
		pr_warn("settle: cannot wake the thread to stop it\n");
	pthread_join(S.tid, NULL);
	close(S.stop_fd);
	S.stop_fd = -1;
	pthread_mutex_lock(&S.mu);
	while (S.n) {
		free(S.q[S.head].big);
		S.head = (S.head + 1) % S.cap;
		S.n--;
	}
	free(S.q);
	S.q = NULL;
	S.cap = S.head = 0;
	pthread_mutex_unlock(&S.mu);
	unmap();
}

void xtxd_settle_get_stats(struct xtxd_settle_stats *s)
{
	pthread_mutex_lock(&S.mu);
	s->tracked = S.n;
	s->untracked = S.untracked;
	pthread_mutex_unlock(&S.mu);
	s->installed = __atomic_load_n(&S.installed, __ATOMIC_RELAXED);
}
