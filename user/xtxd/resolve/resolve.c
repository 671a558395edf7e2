// SPDX-License-Identifier: GPL-2.0-only
/* The resolver thread: finds transactions left unfinished, asks their replicas, decides. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <urcu.h>
#include <xtx/mac.h>
#include <xtx/maps.h>
#include <xtx/proto.h>
#include "clock.h"
#include "log.h"
#include "log/logdrain.h"
#include "log/snapshot.h"
#include "logfile.h"
#include "logrec.h"
#include "logwalk.h"
#include "store/overflow.h"
#include "peer_msg.h"
#include "resolve.h"
#include "resolve_apply.h"
#include "resolve_hades.h"
#include "log/decisions.h"
#include "log/held.h"
#include "log/txn_records.h"
#include "log/undecided.h"

#define SCAN_EVERY_NS		(100ull * 1000 * 1000)
#define RESEND_EVERY_NS		(200ull * 1000 * 1000)
/* Longer than any XDP program run by orders of magnitude: see xtxd_resolve_start(). */
#define FENCE_GRACE_NS		(5ull * 1000 * 1000)
#define SEEN_TIMEOUT_NS		(2ull * 1000 * 1000 * 1000)

static struct {
	bool running;
	pthread_t tid;
	int stop_fd, sock, fence_fd, outcome_fd, dirfd;
	struct xtxd_peers peers;
	uint16_t peer_port;
	uint64_t after_ns;
	uint64_t keep_ns;		/* --keep-decided */
	struct xtxd_live live;
	size_t kv_size, locks_size, pins_size;
	pthread_mutex_t mu;	/* txns: the drain thread adds, the resolver does the rest */
	struct xtxd_txns txns;
	uint64_t last_scan;
	uint64_t commits, aborts, fenced;
	uint64_t refenced;	/* aborts decided before this start, fenced again */
	uint64_t refence_full;	/* ... not, the fence map being full */
	uint64_t strangers, malformed;	/* messages refused: not from a listed server, bad form */
	uint64_t unauthenticated;	/* ... from a listed address without the secret's MAC */
	uint64_t replayed;		/* ... sealed right, but a stamp taken before or too old */
	uint64_t throttled;		/* ... about an unknown txn, past the sender's ration */
	uint64_t fence_refused;		/* aborts not decided yet: no room to fence them */
	void (*on_fail)(int err, const char *why);	/* a decision not recorded: fail-stop */
	bool startup_loaded;		/* the logs' transactions joined the table (scan) */
	uint64_t client_asks;		/* clients' XTX_OP_TXN_STATUS answered */
	uint64_t client_refused;	/* ... refused: not its txn, bad flags */
	uint64_t client_bad_mac;	/* ... dropped: the secret's MAC missing or wrong */
	bool has_secret;
	struct xtx_secret secret;	/* clients' questions carry its MAC */
	bool compact;			/* a snapshot removed logs: compact decided.xdec */
	uint64_t pruned, kept;		/* decisions dropped by compaction, and left */
	/*
	 * Servers the configuration moved out (xtxd_resolve_reconfigure):
	 * their messages are ignored and their votes not waited for.
	 */
	uint64_t gone;
	int kick_fd;			/* wakes the thread for a reconfiguration */
	/* Reconfigurations asked for and finished (under mu); rc_cv: one finished. */
	unsigned int rc_want, rc_done;
	pthread_cond_t rc_cv;
	uint64_t *rc_ids;		/* the transactions the current one waits for */
	size_t rc_n, rc_cap;
	uint64_t recovered;		/* transactions decided by reconfigurations */
	bool rc_short;			/* the current one could not list them all */
	/* A copy into this server is under way: keep finished deletes (xtxd_resolve_hold_deletes) */
	bool hold_deletes;
	/* ... and the decided (HADES) deletes logged meanwhile, to apply again after it (under mu) */
	struct xtx_log_entry *late_del;
	size_t nlate, late_cap;
	/* Whether this server may speak for itself now (xtxd_resolve_set_gate). */
	bool (*serving)(void);
	uint64_t silenced;		/* messages ignored while it may not */
} R = { .stop_fd = -1, .sock = -1, .fence_fd = -1, .outcome_fd = -1, .dirfd = -1,
	.kick_fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER,
	};

static const char *outcome_name(int o)
{
	return o == XTXD_OUT_COMMIT ? "commit" : o == XTXD_OUT_ABORT ? "abort" : "none";
}

/* A decided delete logged while a copy comes in: applied again once it is in. */
static void note_late_delete(const struct xtx_log_entry *e)
{
	pthread_mutex_lock(&R.mu);
	if (R.nlate == R.late_cap) {
		size_t cap = R.late_cap ? R.late_cap * 2 : 256;
		struct xtx_log_entry *v = realloc(R.late_del, cap * sizeof(*v));

		if (!v) {
			pthread_mutex_unlock(&R.mu);
			pr_warn("resolve: out of memory noting a delete during a copy\n");
			return;
		}
		R.late_del = v;
		R.late_cap = cap;
	}
	R.late_del[R.nlate++] = *e;
	pthread_mutex_unlock(&R.mu);
}

/*
 * The drain shows whole writes only (logdrain.h), so each is gathered from
 * the batch alone; a damaged one is left to recovery, which refuses the log.
 */
void xtxd_resolve_observe(const struct xtx_log_entry *e, size_t n)
{
	static __thread struct xtx_logrec rec;
	bool locked = false;
	uint64_t now = 0;
	size_t i, span;

	for (i = 0; i < n; i += span) {
		struct xtxd_txn *x;
		int res;

		/* a head and its continuations: only the head's fields decide anything */
		span = xtx_logrec_span(&e[i]);
		if ((e[i].flags & (XTX_LOGF_DECIDED | XTX_LOGF_DELETE)) ==
		    (XTX_LOGF_DECIDED | XTX_LOGF_DELETE) &&
		    __atomic_load_n(&R.hold_deletes, __ATOMIC_ACQUIRE)) {
			/* takes R.mu itself: never with it held */
			if (locked) {
				pthread_mutex_unlock(&R.mu);
				locked = false;
			}
			note_late_delete(&e[i]);
		}
		/* one replica, logged once decided, or a mark: nobody to ask */
		if (!xtx_log_is_multi(&e[i]) || !__atomic_load_n(&R.running, __ATOMIC_ACQUIRE))
			continue;
		if (!now)
			now = xtx_now_ns();
		/* once per batch, not per entry: under R = 3 every write is tracked */
		if (!locked) {
			pthread_mutex_lock(&R.mu);
			locked = true;
		}
		x = xtxd_txns_get(&R.txns, e[i].txn, false, now);
		if (x && x->outcome != XTXD_OUT_NONE)
			continue;
		xtx_logrec_reset(&rec);
		res = xtx_logrec_decode(&e[i], span <= n - i ? span : n - i, &rec.w, &rec.why);
		if (res) {
			pr_warn("resolve: a damaged write of txn %#llx in the log: %s\n",
				(unsigned long long)e[i].txn, rec.why);
			continue;
		}
		if (xtxd_txns_add(&R.txns, &rec.w, now))
			pr_warn("resolve: out of memory tracking txn %#llx\n",
				(unsigned long long)e[i].txn);
	}
	if (locked)
		pthread_mutex_unlock(&R.mu);
}

/* ---- messages ---- */

static void send_msg(int peer, uint8_t opcode, uint64_t txn, uint32_t flags, bool reply,
		     const struct sockaddr_in *to)
{
	struct xtxd_peer_msg m = {};
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(R.peer_port) };
	size_t len;

	m.h.magic = XTX_MAGIC;
	m.h.version = XTX_VERSION;
	m.h.flags = reply ? XTX_F_REPLY : 0;
	m.h.nops = 1;
	m.h.status = XTX_ST_OK;
	m.h.req_id = 1;
	m.op.opcode = opcode;
	m.op.status = XTX_ST_OK;
	m.op.flags = flags;
	m.op.txn = txn;
	m.op.token = R.peers.self;
	if (to)
		dst = *to;
	else
		dst.sin_addr = R.peers.addr[peer];
	len = xtxd_peer_seal(&m, xtxd_peer_clock());
	if (sendto(R.sock, &m, len, 0, (struct sockaddr *)&dst, sizeof(dst)) < 0)
		pr_debug("resolve: sending to server %d: %s\n", peer, strerror(errno));
}

/* The position of server index idx in x's replica set, or -1. */
static int pos_of(const struct xtxd_txn *x, int idx)
{
	int i;

	for (i = 0; i < x->nrep; i++)
		if (x->rep[i] == idx)
			return i;
	return -1;
}

static uint64_t gone_mask(void)
{
	return __atomic_load_n(&R.gone, __ATOMIC_ACQUIRE);
}

static bool is_gone(int idx)
{
	return idx >= 0 && idx < 64 && (__atomic_load_n(&R.gone, __ATOMIC_ACQUIRE) >> idx & 1);
}

/* A listed server other than us, still in the configuration. */
static bool peer_ok(int idx)
{
	return idx >= 0 && (unsigned int)idx < R.peers.n && idx != R.peers.self && !is_gone(idx);
}

/* The rule over x's answers, the replicas moved out counted as gone.  Under mu. */
static enum xtxd_outcome rule(const struct xtxd_txn *x)
{
	uint8_t a[XTXD_TXN_MAX_REPLICAS];
	int i;

	for (i = 0; i < x->nrep; i++)
		a[i] = is_gone(x->rep[i]) && x->answer[i] == XTXD_ANS_NONE ? XTXD_ANS_GONE :
									     x->answer[i];
	return xtxd_decide(a, x->nrep);
}

/* Whether one of x's replicas was moved out of the configuration.  Under mu. */
static bool lost_replica(const struct xtxd_txn *x)
{
	int i;

	for (i = 0; i < x->nrep; i++)
		if (is_gone(x->rep[i]))
			return true;
	return false;
}

/* ---- the local half: fence, apply, unlock ---- */

/*
 * Refuses txn's LOG_APPEND from now on, then makes sure every append that
 * slipped past the fence is in the table: after the grace period no XDP
 * run that started before the fence is still going, and two drain passes
 * after it have shown the ring's tail to the observer.
 */
static int fence(uint64_t txn)
{
	const struct timespec grace = { 0, FENCE_GRACE_NS };
	uint64_t now = xtx_now_ns();
	int err;

	/* the flag first: a run that sees the entry must also look for it */
	err = xtxd_logdrain_arm_fence(true);
	/*
	 * A failure is an error, never 0: the caller would answer "not held"
	 * for a transaction that can still be logged here (e.g. -ENODEV from a
	 * drain not started yet, the resolver answering first after a restart).
	 */
	if (err || bpf_map_update_elem(R.fence_fd, &txn, &now, BPF_ANY)) {
		err = err ?: -errno;
		pr_warn("resolve: fencing txn %#llx: %s\n", (unsigned long long)txn,
			strerror(-err));
		return err;
	}
	R.fenced++;
	nanosleep(&grace, NULL);
	err = xtxd_logdrain_seen(SEEN_TIMEOUT_NS);
	if (err)
		pr_warn("resolve: waiting for the drain after fencing txn %#llx: %s\n",
			(unsigned long long)txn, strerror(-err));
	return err;
}

/* A copy of x's writes with their values, taken under the lock (the drain may grow them). */
static struct xtx_log_write *copy_writes(struct xtxd_txn *x, uint32_t *n)
{
	struct xtx_log_write *w;

	pthread_mutex_lock(&R.mu);
	w = xtxd_txn_writes(x, n);
	pthread_mutex_unlock(&R.mu);
	return w;
}

/* A copy of x's writes without their values: what checking versions needs. */
static struct xtx_log_entry *copy_heads(struct xtxd_txn *x, uint32_t *n)
{
	struct xtx_log_entry *w;

	pthread_mutex_lock(&R.mu);
	*n = x->nw;
	w = malloc((x->nw ? x->nw : 1) * sizeof(*w));
	if (w)
		memcpy(w, x->w, x->nw * sizeof(*w));
	pthread_mutex_unlock(&R.mu);
	return w;
}

/*
 * Frees txn's lock of (table, key), or hands it straight to a transaction
 * the start left undecided that waits for that slot (log/undecided.h).
 * As xtxd_live_unlock(): 1 freed or handed, 0 not held, or an errno.
 */
static int free_or_hand(uint64_t txn, uint8_t table, uint64_t key)
{
	uint32_t slot = xtxd_live_slot_index(&R.live, table, key);
	uint64_t next, next_key;
	uint8_t next_table;
	int r;

	if (!xtxd_undecided_next(txn, slot, &next, &next_table, &next_key))
		return xtxd_live_unlock(&R.live, txn, table, key);
	r = xtxd_live_pass(&R.live, txn, table, key, next, next_table, next_key);
	if (r <= 0)
		return r ? r : xtxd_live_unlock(&R.live, txn, table, key);
	xtxd_undecided_handed(next, slot);
	pr_info("resolve: txn %#llx: its lock slot handed to txn %#llx, undecided since the "
		"start\n", (unsigned long long)txn, (unsigned long long)next);
	return 1;
}

/*
 * Makes a recorded decision true here: commit installs every write, then
 * frees the locks (so no reader sees the old value unlocked); abort frees
 * the locks.  A write that cannot go in now (bucket held too long, store
 * full) leaves it pending, retried by the scan; the locks stay meanwhile.
 */
static int apply(struct xtxd_txn *x, const char *why)
{
	struct xtx_log_write *w;
	uint32_t n, i, installed = 0, unlocked = 0;
	bool again = x->apply_pending;	/* said why once already: retry quietly */
	int err, failed = 0;

	w = copy_writes(x, &n);
	if (!w)
		return -ENOMEM;
	for (i = 0; x->outcome == XTXD_OUT_COMMIT && i < n; i++) {
		err = xtxd_live_install(&R.live, &w[i]);
		if (err < 0) {
			if (!again)
				pr_warn("resolve: txn %#llx: installing table %u key %llu "
					"version %llu: %s (retrying)\n",
					(unsigned long long)x->txn, w[i].e.table,
					(unsigned long long)w[i].e.key,
					(unsigned long long)w[i].e.version, strerror(-err));
			failed = err;
		} else {
			installed += err;
		}
	}
	for (i = 0; !failed && i < n; i++) {
		err = free_or_hand(x->txn, w[i].e.table, w[i].e.key);
		if (err < 0) {
			if (!again)
				pr_warn("resolve: txn %#llx: freeing the lock of table %u key "
					"%llu: %s (retrying)\n", (unsigned long long)x->txn,
					w[i].e.table, (unsigned long long)w[i].e.key,
					strerror(-err));
			failed = err;
		} else {
			unlocked += err;
		}
	}
	free(w);
	pthread_mutex_lock(&R.mu);
	x->apply_pending = failed != 0;
	pthread_mutex_unlock(&R.mu);
	/* held since the start for want of a decision: it has one now, applied */
	if (!failed)
		xtxd_undecided_done(x->txn);
	if (!failed)
		pr_info("resolve: txn %#llx decided %s (%s): %u writes here, %u installed, %u "
			"locks freed\n", (unsigned long long)x->txn, outcome_name(x->outcome), why,
			n, installed, unlocked);
	return failed;
}

/*
 * Records the decision (synced), then makes it true here.  An abort is
 * fenced first: a coordinator that comes back finds its late appends
 * refused here too, so none can log what was decided aborted.  With the
 * fence map full (or no drain) it is not decided here yet: tried again.
 * A decision that cannot be recorded stops this server (fail-stop): after
 * a failed sync nothing says what the file holds.
 */
static int decide(struct xtxd_txn *x, int outcome, const char *why)
{
	int err;

	if (outcome == XTXD_OUT_ABORT) {
		uint64_t now = xtx_now_ns();

		err = xtxd_logdrain_arm_fence(true);
		if (!err && bpf_map_update_elem(R.fence_fd, &x->txn, &now, BPF_ANY))
			err = -errno;
		if (err) {
			if (!R.fence_refused++ || xtx_log_level >= XTX_LOG_DEBUG)
				pr_warn("resolve: txn %#llx: not deciding abort without a fence: "
					"%s%s (tried again)\n", (unsigned long long)x->txn,
					strerror(-err), err == -E2BIG ? ": the fence map is full" :
					"");
			return err;
		}
	}
	err = xtxd_outcome_append(R.outcome_fd, x->txn, outcome);
	if (err) {
		char what[80];

		snprintf(what, sizeof(what), "recording the decision on txn %#llx in %s",
			 (unsigned long long)x->txn, XTXD_OUTCOME_FILE);
		pr_warn("resolve: %s: %s\n", what, strerror(-err));
		if (R.on_fail)
			R.on_fail(err, what);
		return err;
	}
	pthread_mutex_lock(&R.mu);
	x->outcome = outcome;
	x->decided_ns = xtx_now_ns();
	x->sent_ns = 0;
	pthread_mutex_unlock(&R.mu);
	if (outcome == XTXD_OUT_COMMIT)
		R.commits++;
	else
		R.aborts++;
	apply(x, why);
	return 0;
}

/* A growable array of txn ids, sorted before lookups. */
struct idset {
	uint64_t *v;
	size_t n, cap;
	bool oom;
};

static void idset_add(struct idset *s, uint64_t id)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			s->oom = true;
			return;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = id;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool idset_has(const struct idset *s, uint64_t id)
{
	return bsearch(&id, s->v, s->n, sizeof(id), cmp_u64) != NULL;
}

/*
 * The table forgets a transaction once it is finished here, and starts
 * empty after a restart; the log on disk does not forget (until a snapshot
 * covers it).  So before saying "not held", the segments are searched for
 * the transaction's records: a rare path, taken only for stuck ones.  A
 * failover leaves tens of them stuck at once, and each search reads every
 * segment: so one pass looks for every undecided, incomplete transaction
 * of the table not searched for yet, and marks them searched (what is
 * appended after is observed by the drain).  0, or a negative errno.
 */
static void want_searched(struct xtxd_txn *x, void *arg)
{
	if (x->outcome == XTXD_OUT_NONE && !x->disk_searched && !xtxd_txn_complete(x))
		idset_add(arg, x->txn);
}

static void mark_searched(struct xtxd_txn *x, void *arg)
{
	if (idset_has(arg, x->txn))
		x->disk_searched = true;
}

/*
 * A write of a wanted transaction (arg NULL: of any), from the logs or what
 * the newest snapshot carries.
 */
static int found_write(const struct xtx_log_write *w, void *arg)
{
	const struct xtx_log_entry *h = &w->e;
	int err;

	if (!xtx_log_is_multi(h) || (arg && !idset_has(arg, h->txn)))
		return 0;
	pthread_mutex_lock(&R.mu);
	err = xtxd_txns_add(&R.txns, w, xtx_now_ns());
	pthread_mutex_unlock(&R.mu);
	return err;
}

static void mark_all_searched(struct xtxd_txn *x, void *arg)
{
	(void)arg;
	x->disk_searched = true;
}

/* all: every multi-replica transaction of the logs, not only the table's unsearched ones */
static int search_disk(bool all)
{
	struct idset want = {};
	int err;

	if (!all) {
		pthread_mutex_lock(&R.mu);
		xtxd_txns_each(&R.txns, want_searched, &want);
		pthread_mutex_unlock(&R.mu);
	}
	if (want.oom) {
		free(want.v);
		return -ENOMEM;
	}
	qsort(want.v, want.n, sizeof(*want.v), cmp_u64);
	/* the records a snapshot's positions cover and its keys lack, first: older */
	err = all || want.n ? xtxd_snapshot_carried_each(found_write, all ? NULL : &want) : 0;
	if (!err && (all || want.n))
		err = xtx_logwalk(R.dirfd, found_write, all ? NULL : &want);
	if (!err) {
		pthread_mutex_lock(&R.mu);
		xtxd_txns_each(&R.txns, all ? mark_all_searched : mark_searched, &want);
		pthread_mutex_unlock(&R.mu);
	}
	free(want.v);
	return err;
}

static int load_from_disk(void)
{
	return search_disk(false);
}

static void reapply_decided(struct xtxd_txn *x, void *arg)
{
	(void)arg;
	if (x->outcome != XTXD_OUT_NONE && x->nw)
		x->apply_pending = true;
}

/*
 * After a start the table knows only decisions: a transaction logged here
 * before (a SIGKILL, a fail-stop, a reload) and left unfinished, here alone
 * (committed elsewhere, its coordinator gone), would keep its logged locks
 * and miss its writes for good, since nobody else asks.  So once the drain
 * runs, every multi-replica transaction of the logs joins the table; the
 * scan forgets those finished here and decides the others.
 */
static void load_logged_once(void)
{
	int err;

	if (R.startup_loaded || xtxd_logdrain_seen(SEEN_TIMEOUT_NS))
		return;		/* no drain yet: the ring's entries would be missed */
	err = search_disk(true);
	if (err) {
		pr_warn("resolve: reading the logs for what was left unfinished before this "
			"start: %s (tried again)\n", strerror(-err));
		return;
	}
	pthread_mutex_lock(&R.mu);
	/*
	 * A decision recorded before this start may not have been applied
	 * here (the server stopped between the two), and an adopted program
	 * still holds the locks: applied again (apply() is idempotent)
	 */
	xtxd_txns_each(&R.txns, reapply_decided, NULL);
	pr_info("resolve: %zu transactions of the logs taken up since this start\n", R.txns.n);
	pthread_mutex_unlock(&R.mu);
	__atomic_store_n(&R.startup_loaded, true, __ATOMIC_RELEASE);
}

/*
 * Our own answer about x: held (the complete record: LAST and every write it
 * counted), or fenced and not held (which decides abort here).
 */
static int self_answer(struct xtxd_txn *x)
{
	bool last;
	int n;

	pthread_mutex_lock(&R.mu);
	last = xtxd_txn_complete(x);
	pthread_mutex_unlock(&R.mu);
	/* a snapshot removed the segments that held it complete: they are listed */
	if (last || xtxd_held_has(x->txn))
		return XTXD_ANS_HOLD;
	if (fence(x->txn))
		return XTXD_ANS_NONE;	/* cannot promise anything yet: ask again later */
	pthread_mutex_lock(&R.mu);
	last = xtxd_txn_complete(x);
	pthread_mutex_unlock(&R.mu);
	if (!last && !x->disk_searched) {
		n = load_from_disk();
		if (n < 0) {
			pr_warn("resolve: searching the log for txn %#llx: %s\n",
				(unsigned long long)x->txn, strerror(-n));
			return XTXD_ANS_NONE;
		}
		pthread_mutex_lock(&R.mu);
		last = xtxd_txn_complete(x);
		pthread_mutex_unlock(&R.mu);
	}
	/*
	 * A snapshot lists what it removes in the held files before it removes
	 * it: one that ran between the first look and the disk search took
	 * the record away from the search, so the list is looked at again
	 */
	if (!last && !xtxd_held_has(x->txn))
		return XTXD_ANS_NOT_HELD;
	/*
	 * Held after all: the fence is not needed, and an undecided entry
	 * leaves the table without taking its fence along
	 */
	bpf_map_delete_elem(R.fence_fd, &x->txn);
	return XTXD_ANS_HOLD;
}

/* ---- answering peers ---- */

static void on_query(uint64_t txn, int from, const struct sockaddr_in *src)
{
	uint64_t now = xtx_now_ns();
	struct xtxd_txn *x;
	int ans;

	pthread_mutex_lock(&R.mu);
	x = xtxd_txns_get(&R.txns, txn, true, now);
	pthread_mutex_unlock(&R.mu);
	if (!x)
		return;		/* no memory: the asker retries */
	if (x->outcome != XTXD_OUT_NONE) {
		ans = x->outcome == XTXD_OUT_COMMIT ? XTXD_ANS_COMMITTED : XTXD_ANS_ABORTED;
	} else {
		ans = self_answer(x);
		if (ans == XTXD_ANS_NONE)
			return;
		/* not held, and now never will be: the transaction cannot commit */
		if (ans == XTXD_ANS_NOT_HELD && decide(x, XTXD_OUT_ABORT, "not held here"))
			return;
	}
	send_msg(from, XTX_OP_RESOLVE_QUERY, txn, ans, true, src);
}

static void on_decide(uint64_t txn, int outcome, int from, const struct sockaddr_in *src)
{
	struct xtxd_txn *x;

	if (outcome != XTXD_OUT_COMMIT && outcome != XTXD_OUT_ABORT)
		return;
	pthread_mutex_lock(&R.mu);
	x = xtxd_txns_get(&R.txns, txn, true, xtx_now_ns());
	pthread_mutex_unlock(&R.mu);
	if (!x)
		return;
	if (x->outcome == XTXD_OUT_NONE) {
		char why[32];
		bool whole;

		/*
		 * Told before this table holds all of it here (a restart, or
		 * forgotten): its writes and locks here are in the ring or on
		 * disk, and a decision must apply to every one of them, or an
		 * abort leaves a logged lock nobody frees.  Not now if the drain
		 * cannot show the ring yet: the decider tells us again.
		 */
		pthread_mutex_lock(&R.mu);
		whole = xtxd_txn_complete(x) || x->disk_searched;
		pthread_mutex_unlock(&R.mu);
		if (!whole && (xtxd_logdrain_seen(SEEN_TIMEOUT_NS) || load_from_disk() < 0))
			return;
		snprintf(why, sizeof(why), "told by server %d", from);
		if (decide(x, outcome, why))
			return;
	} else if (x->outcome != outcome) {
		/* cannot happen under the rule; say so loudly rather than flip */
		pr_warn("resolve: txn %#llx: server %d says %s, this server decided %s\n",
			(unsigned long long)txn, from, outcome_name(outcome),
			outcome_name(x->outcome));
		return;
	}
	send_msg(from, XTX_OP_RESOLVE_DECIDE, txn, outcome, true, src);
}

static void on_reply(uint8_t opcode, uint64_t txn, uint32_t val, int from)
{
	struct xtxd_txn *x;
	int p, d;

	pthread_mutex_lock(&R.mu);
	x = xtxd_txns_get(&R.txns, txn, false, 0);
	p = x ? pos_of(x, from) : -1;
	if (p >= 0 && opcode == XTX_OP_RESOLVE_DECIDE)
		x->acked[p] = 1;
	if (p >= 0 && opcode == XTX_OP_RESOLVE_QUERY && x->resolving && val <= XTXD_ANS_ABORTED)
		x->answer[p] = val;
	d = p >= 0 && x->resolving && x->outcome == XTXD_OUT_NONE ? rule(x) : XTXD_OUT_NONE;
	pthread_mutex_unlock(&R.mu);
	if (d != XTXD_OUT_NONE)
		decide(x, d, "the replicas' answers");
}

/* ---- answering a client about its own transaction ---- */

static bool unfinished(struct xtxd_txn *x);
static void begin(struct xtxd_txn *x);

/*
 * What a replica would tell a peer, and the same consequences: not held
 * here means fenced and aborted here (as on_query does).  A transaction
 * held here but unfinished is taken up now, not after after_ns: its
 * coordinator has given up on it.
 */
static int client_answer(uint64_t txn)
{
	struct xtxd_txn *x;
	int ans;

	pthread_mutex_lock(&R.mu);
	x = xtxd_txns_get(&R.txns, txn, true, xtx_now_ns());
	pthread_mutex_unlock(&R.mu);
	if (!x)
		return XTX_TS_UNKNOWN;
	if (x->outcome != XTXD_OUT_NONE)
		return x->outcome == XTXD_OUT_COMMIT ? XTX_TS_COMMITTED : XTX_TS_ABORTED;
	ans = self_answer(x);
	if (ans == XTXD_ANS_NOT_HELD)
		return decide(x, XTXD_OUT_ABORT, "not held here, asked by its client") ?
		       XTX_TS_UNKNOWN : XTX_TS_ABORTED;
	if (ans != XTXD_ANS_HOLD)
		return XTX_TS_UNKNOWN;
	if (!x->resolving && x->nrep > 1 && unfinished(x))
		begin(x);
	return XTX_TS_HELD;
}

/*
 * A client's XTX_OP_TXN_STATUS whose MAC receive() checked: only about a
 * transaction of its own, so a stranger cannot fence other clients'
 * transactions.  Refused questions get no answer.
 */
static bool on_client_status(const struct xtx_hdr *h, const struct xtx_op *op,
			     const struct sockaddr_in *src)
{
	struct {
		struct xtx_hdr h;
		struct xtx_op op;
	} m = { .h = *h, .op = *op };

	if (h->flags & XTX_F_REPLY || op->flags & ~XTX_TSF_HADES || !op->txn ||
	    xtx_txn_client(op->txn) != h->client_id || h->reserved || (!R.has_secret && h->mac))
		return false;
	m.op.flags = op->flags & XTX_TSF_HADES ? xtxd_hres_client_answer(op->txn) :
		     client_answer(op->txn);
	m.h.flags = XTX_F_REPLY;
	m.h.status = XTX_ST_OK;
	m.h.mac = 0;
	m.op.status = XTX_ST_OK;
	__atomic_fetch_add(&R.client_asks, 1, __ATOMIC_RELAXED);
	if (sendto(R.sock, &m, sizeof(m), 0, (const struct sockaddr *)src, sizeof(*src)) < 0)
		pr_debug("resolve: answering client %u: %s\n", h->client_id, strerror(errno));
	return true;
}

/*
 * Whether a question or decision about txn from a peer may cost work here
 * (a fence, a sync, a decision) though nothing here knows txn yet: within
 * the sender's ration (peer_msg.h).
 */
static bool may_work_on(uint64_t txn, uint8_t opcode, int from)
{
	bool known;

	if (opcode == XTX_OP_HRESOLVE_QUERY || opcode == XTX_OP_HRESOLVE_DECIDE) {
		known = xtxd_hres_known(txn);
	} else {
		pthread_mutex_lock(&R.mu);
		known = xtxd_txns_get(&R.txns, txn, false, 0) != NULL;
		pthread_mutex_unlock(&R.mu);
	}
	return known || xtxd_peer_unknown_allowed(from, xtx_now_ns());
}

static void receive(void)
{
	struct xtxd_peer_msg m;
	struct sockaddr_in src;
	socklen_t sl = sizeof(src);
	enum xtxd_peer_verdict v;
	ssize_t len;
	int from;

	while ((len = recvfrom(R.sock, &m, sizeof(m), MSG_DONTWAIT, (struct sockaddr *)&src,
			       &sl)) >= 0) {
		sl = sizeof(src);
		/*
		 * Until the start's recovery is over, what it leaves undecided
		 * and holds is not known (log/undecided.h): a decision applied
		 * now could free a lock recovery then takes again for good.  The
		 * askers send again.
		 */
		if (!xtxd_undecided_is_ready())
			continue;
		/*
		 * Past its lease, or fenced, this server may have been moved out:
		 * its answers ("not held", "aborted") would then contradict what
		 * the servers left decide without it.  Silent, it is waited for.
		 */
		if (R.serving && !R.serving()) {
			if (!__atomic_fetch_add(&R.silenced, 1, __ATOMIC_RELAXED))
				pr_info("resolve: silent while this server's lease is out or it is "
					"fenced\n");
			continue;
		}
		if ((len != XTXD_PEER_MSG_PLAIN && len != XTXD_PEER_MSG_SEALED) ||
		    m.h.magic != XTX_MAGIC || m.h.version != XTX_VERSION || m.h.nops != 1) {
			__atomic_fetch_add(&R.malformed, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (m.op.opcode == XTX_OP_TXN_STATUS) {
			/* a question is plain; with the cluster's secret, the MAC of all of it */
			if (len != XTXD_PEER_MSG_PLAIN)
				__atomic_fetch_add(&R.client_refused, 1, __ATOMIC_RELAXED);
			else if (R.has_secret && !xtx_mac_ok(&R.secret, &m, XTXD_PEER_MSG_PLAIN))
				__atomic_fetch_add(&R.client_bad_mac, 1, __ATOMIC_RELAXED);
			else if (!on_client_status(&m.h, &m.op, &src))
				__atomic_fetch_add(&R.client_refused, 1, __ATOMIC_RELAXED);
			continue;
		}
		/*
		 * only the listed servers take part, by their address, and not
		 * one moved out of the configuration (nor any, once we are)
		 */
		from = xtxd_peers_index(&R.peers, src.sin_addr);
		if (!peer_ok(from) || m.op.token != (uint64_t)from || is_gone(R.peers.self)) {
			__atomic_fetch_add(&R.strangers, 1, __ATOMIC_RELAXED);
			continue;
		}
		/* an address is easy to forge: with a secret, the MAC and a fresh stamp */
		v = xtxd_peer_check(&m, (size_t)len, from, xtxd_peer_clock());
		if (v == XTXD_PEER_REPLAY || v == XTXD_PEER_STALE) {
			__atomic_fetch_add(&R.replayed, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (v != XTXD_PEER_OK) {
			if (!__atomic_fetch_add(&R.unauthenticated, 1, __ATOMIC_RELAXED))
				pr_warn("resolve: a message from server %d's address without %s: "
					"ignored (counted as unauthenticated)\n", from,
					xtxd_peer_sealed() ? "the secret's MAC" : "the plain form");
			continue;
		}
		if (!(m.h.flags & XTX_F_REPLY) && !may_work_on(m.op.txn, m.op.opcode, from)) {
			__atomic_fetch_add(&R.throttled, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (xtxd_hres_receive(&m.op, m.h.flags & XTX_F_REPLY, from, &src))
			continue;
		if (m.h.flags & XTX_F_REPLY)
			on_reply(m.op.opcode, m.op.txn, m.op.flags, from);
		else if (m.op.opcode == XTX_OP_RESOLVE_QUERY)
			on_query(m.op.txn, from, &src);
		else if (m.op.opcode == XTX_OP_RESOLVE_DECIDE)
			on_decide(m.op.txn, m.op.flags, from, &src);
	}
}

/* ---- finding what is left unfinished ---- */

/*
 * Unfinished here: held since the start for want of a decision
 * (log/undecided.h: its writes were not replayed, its keys are locked for
 * it, and another transaction's write of a key proves nothing of it), or
 * a write of it not installed.  No lock needs checking otherwise: a
 * transaction's exclusive lock on a key goes in the same step that
 * installs its write there (COMMIT_PRIMARY, which frees a hold recovery
 * took too, or decide()), and an abort leaves the writes uninstalled, so
 * its locks are never the only sign.  Reads mapped memory only, so the
 * scan stays cheap at any commit rate.
 */
static bool unfinished(struct xtxd_txn *x)
{
	struct xtx_log_entry *w;
	uint32_t n, i;
	uint64_t v;
	bool left = false;

	if (xtxd_undecided_has(x->txn))
		return true;
	w = copy_heads(x, &n);
	if (!w)
		return true;
	for (i = 0; i < n && !left; i++) {
		xtxd_live_version(&R.live, w[i].table, w[i].key, &v);
		left = v < w[i].version;
	}
	free(w);
	return left;
}

static void begin(struct xtxd_txn *x)
{
	int me = pos_of(x, R.peers.self), ans = XTXD_ANS_HOLD;

	if (me >= 0) {
		ans = self_answer(x);
		if (ans == XTXD_ANS_NONE)
			return;
	}
	pr_info("resolve: txn %#llx unfinished after %llu ms; asking its %u replicas\n",
		(unsigned long long)x->txn,
		(unsigned long long)((xtx_now_ns() - x->first_ns) / 1000000), x->nrep);
	pthread_mutex_lock(&R.mu);
	x->resolving = true;
	if (me >= 0)
		x->answer[me] = ans;
	x->sent_ns = 0;
	pthread_mutex_unlock(&R.mu);
	if (ans == XTXD_ANS_NOT_HELD)
		decide(x, XTXD_OUT_ABORT, "not held here");
}

/* Sends what is due: queries not answered, decisions not acknowledged. */
static void resend(struct xtxd_txn *x, uint64_t now)
{
	int i;

	if (now - x->sent_ns < RESEND_EVERY_NS)
		return;
	x->sent_ns = now;
	for (i = 0; i < x->nrep; i++) {
		if (!peer_ok(x->rep[i]))
			continue;
		if (x->outcome == XTXD_OUT_NONE && x->resolving && !x->answer[i])
			send_msg(x->rep[i], XTX_OP_RESOLVE_QUERY, x->txn, 0, false, NULL);
		else if (x->outcome != XTXD_OUT_NONE && x->resolving && !x->acked[i])
			send_msg(x->rep[i], XTX_OP_RESOLVE_DECIDE, x->txn, x->outcome, false, NULL);
	}
}

/* Under mu: whether a write of x deletes. */
static bool deletes(const struct xtxd_txn *x)
{
	uint32_t i;

	for (i = 0; i < x->nw; i++)
		if (x->w[i].flags & XTX_LOGF_DELETE)
			return true;
	return false;
}

struct scan {
	uint64_t now;
	uint64_t unfenced;	/* fences removed */
	uint64_t *due;		/* txns old enough to look at */
	size_t n, cap;
};

static void add_due(struct scan *s, uint64_t txn)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint64_t *d = realloc(s->due, cap * sizeof(*d));

		if (!d)
			return;
		s->due = d;
		s->cap = cap;
	}
	s->due[s->n++] = txn;
}

static void pick(struct xtxd_txn *x, void *arg)
{
	struct scan *s = arg;

	if (x->apply_pending || (x->resolving && x->outcome == XTXD_OUT_NONE &&
				 rule(x) != XTXD_OUT_NONE)) {
		add_due(s, x->txn);	/* an earlier try failed: again */
		return;
	}
	if (x->outcome != XTXD_OUT_NONE) {
		/* long after: the coordinator's lease is long gone, and the fence map is finite */
		if (s->now - x->decided_ns > R.keep_ns) {
			bpf_map_delete_elem(R.fence_fd, &x->txn);
			xtxd_txns_del(&R.txns, x->txn);
			s->unfenced++;
		}
		return;
	}
	if (x->resolving || s->now - x->first_ns < R.after_ns)
		return;
	add_due(s, x->txn);
}

static void do_resend(struct xtxd_txn *x, void *arg)
{
	resend(x, *(uint64_t *)arg);
}

static bool no_fences(void)
{
	__u64 key;

	return bpf_map_get_next_key(R.fence_fd, NULL, &key) && errno == ENOENT;
}

static void scan(void)
{
	struct scan s = { .now = xtx_now_ns() };
	size_t i;

	load_logged_once();

	pthread_mutex_lock(&R.mu);
	xtxd_txns_each(&R.txns, pick, &s);
	pthread_mutex_unlock(&R.mu);
	for (i = 0; i < s.n; i++) {
		struct xtxd_txn *x;

		pthread_mutex_lock(&R.mu);
		x = xtxd_txns_get(&R.txns, s.due[i], false, 0);
		pthread_mutex_unlock(&R.mu);
		if (!x)
			continue;
		if (x->apply_pending) {
			apply(x, "applied late");
			continue;
		}
		if (x->resolving) {
			int d;

			pthread_mutex_lock(&R.mu);
			d = rule(x);
			pthread_mutex_unlock(&R.mu);
			if (x->outcome == XTXD_OUT_NONE && d != XTXD_OUT_NONE)
				decide(x, d, "the replicas' answers");
			continue;
		}
		if (!unfinished(x)) {
			/* committed normally (or nothing of it left here): forget it */
			pthread_mutex_lock(&R.mu);
			if (!__atomic_load_n(&R.hold_deletes, __ATOMIC_ACQUIRE) || !deletes(x))
				xtxd_txns_del(&R.txns, x->txn);
			pthread_mutex_unlock(&R.mu);
			continue;
		}
		begin(x);
	}
	free(s.due);
	/* no fence left: appends skip the lookup again (only this thread inserts) */
	if (s.unfenced && no_fences())
		xtxd_logdrain_arm_fence(false);
	s.now = xtx_now_ns();
	pthread_mutex_lock(&R.mu);
	xtxd_txns_each(&R.txns, do_resend, &s.now);
	pthread_mutex_unlock(&R.mu);
}

/* ---- a reconfiguration: recovery with the replicas left ---- */

static void rc_add(struct xtxd_txn *x, void *arg)
{
	(void)arg;
	if (x->outcome != XTXD_OUT_NONE || !lost_replica(x))
		return;
	if (R.rc_n == R.rc_cap) {
		size_t cap = R.rc_cap ? R.rc_cap * 2 : 64;
		uint64_t *ids = realloc(R.rc_ids, cap * sizeof(*ids));

		if (!ids) {
			R.rc_short = true;	/* listed again on the next try */
			return;
		}
		R.rc_ids = ids;
		R.rc_cap = cap;
	}
	R.rc_ids[R.rc_n++] = x->txn;
}

/*
 * Servers were moved out: every transaction logged here with one of them
 * among its replicas and not finished is decided now, with the replicas
 * left (Xenic's recovery), not after after_ns.  When this server takes
 * shards over, xtxd's cluster thread closed XDP before asking, so once the
 * grace period has passed and the drain has shown the ring's tail, every
 * append the old placement will ever make here is in the table.  0, or a
 * negative errno to try again.
 */
static int rc_start(void)
{
	const struct timespec grace = { 0, FENCE_GRACE_NS };
	size_t i, kept = 0;
	int err;

	nanosleep(&grace, NULL);
	err = xtxd_logdrain_seen(SEEN_TIMEOUT_NS);
	if (err)
		return err;
	R.rc_n = 0;
	R.rc_short = false;
	pthread_mutex_lock(&R.mu);
	xtxd_txns_each(&R.txns, rc_add, NULL);
	pthread_mutex_unlock(&R.mu);
	if (R.rc_short)
		return -ENOMEM;
	for (i = 0; i < R.rc_n; i++) {
		struct xtxd_txn *x;

		pthread_mutex_lock(&R.mu);
		x = xtxd_txns_get(&R.txns, R.rc_ids[i], false, 0);
		pthread_mutex_unlock(&R.mu);
		/* installed here already: committed, by its coordinator */
		if (!x || (!x->resolving && !unfinished(x)))
			continue;
		R.rc_ids[kept++] = R.rc_ids[i];
		if (!x->resolving)
			begin(x);
	}
	R.rc_n = kept;
	pr_info("resolve: servers %#llx moved out: deciding the %zu transactions left "
		"unfinished here that they replicated\n",
		(unsigned long long)__atomic_load_n(&R.gone, __ATOMIC_ACQUIRE), kept);
	return 0;
}

/* Whether every transaction the reconfiguration took up is decided and applied here. */
static bool rc_finished(void)
{
	bool done = true;
	size_t i;

	pthread_mutex_lock(&R.mu);
	for (i = 0; i < R.rc_n && done; i++) {
		struct xtxd_txn *x = xtxd_txns_get(&R.txns, R.rc_ids[i], false, 0);

		done = !x || (x->outcome != XTXD_OUT_NONE && !x->apply_pending);
	}
	pthread_mutex_unlock(&R.mu);
	return done;
}

/* The thread's part: starts what was asked for, and says when it is done. */
static void reconfigure_step(void)
{
	static unsigned int started;
	unsigned int want;

	pthread_mutex_lock(&R.mu);
	want = R.rc_want;
	pthread_mutex_unlock(&R.mu);
	/* what the logs left unfinished (and recovery held) must be in the table first */
	if (want != started)
		load_logged_once();
	if (want != started && R.startup_loaded && !rc_start())
		started = want;
	if (started == R.rc_done || !rc_finished())
		return;
	pthread_mutex_lock(&R.mu);
	R.recovered += R.rc_n;
	R.rc_done = started;
	pthread_cond_broadcast(&R.rc_cv);
	pthread_mutex_unlock(&R.mu);
	pr_info("resolve: reconfiguration %u: %zu transactions decided\n", started, R.rc_n);
}

void xtxd_resolve_set_on_fail(void (*fn)(int err, const char *why))
{
	R.on_fail = fn;
}

void xtxd_resolve_set_gate(bool (*serving)(void))
{
	R.serving = serving;
}

int xtxd_resolve_reconfigure(uint64_t gone, uint64_t wait_ns)
{
	uint64_t old, one = 1;
	struct timespec until;
	int err = 0;

	if (!__atomic_load_n(&R.running, __ATOMIC_ACQUIRE))
		return 0;
	old = __atomic_exchange_n(&R.gone, gone, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&R.mu);
	if (gone & ~old) {
		R.rc_want++;
		if (write(R.kick_fd, &one, sizeof(one)) != sizeof(one))
			pr_warn("resolve: waking the thread: %s\n", strerror(errno));
	}
	clock_gettime(CLOCK_MONOTONIC, &until);	/* rc_cv's clock (xtxd_resolve_start) */
	until.tv_sec += (time_t)(wait_ns / 1000000000ull);
	until.tv_nsec += (long)(wait_ns % 1000000000ull);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (R.rc_done != R.rc_want && err != ETIMEDOUT)
		err = wait_ns ? pthread_cond_timedwait(&R.rc_cv, &R.mu, &until) : ETIMEDOUT;
	err = R.rc_done == R.rc_want ? 0 : -EAGAIN;
	pthread_mutex_unlock(&R.mu);
	return err;
}

/* ---- settling: what a copy waits for (user/xtxd/copy/) ---- */

/* Whether txn is done with here: forgotten, decided and applied, or every write installed. */
static bool settled(uint64_t txn)
{
	struct xtx_log_entry *w = NULL;
	struct xtxd_txn *x;
	uint32_t n = 0, i;
	bool done;
	uint64_t v;

	bool recheck;

	/* held since the start for want of a decision: versions prove nothing of it */
	if (xtxd_undecided_has(txn))
		return false;
	pthread_mutex_lock(&R.mu);
	x = xtxd_txns_get(&R.txns, txn, false, 0);
	done = !x || x->outcome == XTXD_OUT_ABORT ||
	       (x->outcome == XTXD_OUT_COMMIT && !x->apply_pending);
	/*
	 * A copy coming in may have put back a key a committed delete had
	 * already removed here: that delete is applied again
	 */
	recheck = done && x && x->outcome == XTXD_OUT_COMMIT &&
		  __atomic_load_n(&R.hold_deletes, __ATOMIC_ACQUIRE) && deletes(x);
	if (((!done && x->outcome == XTXD_OUT_NONE) || recheck) && x->nw) {
		n = x->nw;
		w = malloc(n * sizeof(*w));
		if (w)
			memcpy(w, x->w, n * sizeof(*w));
	}
	pthread_mutex_unlock(&R.mu);
	if (!w)
		return done;
	for (i = 0; i < n; i++) {
		xtxd_live_version(&R.live, w[i].table, w[i].key, &v);
		if (v < w[i].version)
			break;
	}
	free(w);
	if (recheck && i < n) {
		pthread_mutex_lock(&R.mu);
		x = xtxd_txns_get(&R.txns, txn, false, 0);
		if (x)
			x->apply_pending = true;	/* the scan applies it again */
		pthread_mutex_unlock(&R.mu);
		return false;
	}
	return i == n;
}

static void list_all(struct xtxd_txn *x, void *arg)
{
	idset_add(arg, x->txn);
}

int xtxd_resolve_settle(uint64_t timeout_ns, bool (*cancelled)(void), size_t *left)
{
	uint64_t deadline = xtx_now_ns() + timeout_ns;
	const struct timespec tick = { 0, 5 * 1000 * 1000 };
	struct idset all = {};
	size_t i, n;
	int err;

	*left = 0;
	if (!__atomic_load_n(&R.running, __ATOMIC_ACQUIRE))
		return 0;
	/*
	 * Not before the start's recovery is over and the logs' transactions
	 * are in the table: one recovery held would be missed, and go out
	 * with a copy made before it is decided (log/undecided.h)
	 */
	while (!xtxd_undecided_is_ready() || !__atomic_load_n(&R.startup_loaded, __ATOMIC_ACQUIRE)) {
		if (xtx_now_ns() > deadline || cancelled()) {
			*left = xtxd_undecided_count() + 1;
			return cancelled() ? -ECANCELED : -ETIMEDOUT;
		}
		nanosleep(&tick, NULL);
	}
	err = xtxd_logdrain_seen(SEEN_TIMEOUT_NS);
	if (err)
		return err;
	uint64_t *hades = NULL;
	size_t nh;

	pthread_mutex_lock(&R.mu);
	xtxd_txns_each(&R.txns, list_all, &all);
	pthread_mutex_unlock(&R.mu);
	/* HADES transactions past their Acks here validate (install) or abort */
	nh = xtxd_hres_committing(NULL, 0);
	if (nh) {
		hades = malloc(nh * sizeof(*hades));
		nh = hades ? xtxd_hres_committing(hades, nh) : 0;
	}
	if (all.oom) {
		free(all.v);
		free(hades);
		return -ENOMEM;
	}
	for (;;) {
		for (i = n = 0; i < all.n; i++)
			if (!settled(all.v[i]))
				all.v[n++] = all.v[i];
		all.n = n;
		for (i = n = 0; hades && i < nh; i++)
			if (xtxd_hres_still_committing(hades[i]))
				hades[n++] = hades[i];
		nh = n;
		*left = all.n + nh;
		if (!*left || xtx_now_ns() > deadline || cancelled())
			break;
		nanosleep(&tick, NULL);
	}
	free(all.v);
	free(hades);
	return !*left ? 0 : cancelled() ? -ECANCELED : -ETIMEDOUT;
}

void xtxd_resolve_hold_deletes(bool on)
{
	/* the list first: a delete noted once the flag is on must stay */
	pthread_mutex_lock(&R.mu);
	free(R.late_del);
	R.late_del = NULL;
	R.nlate = R.late_cap = 0;
	pthread_mutex_unlock(&R.mu);
	__atomic_store_n(&R.hold_deletes, on, __ATOMIC_RELEASE);
}

int xtxd_resolve_replay_deletes(size_t *n)
{
	struct xtx_log_entry *v;
	size_t i;
	int err;

	*n = 0;
	err = xtxd_logdrain_seen(SEEN_TIMEOUT_NS);
	if (err)
		return err;
	pthread_mutex_lock(&R.mu);
	v = R.late_del;
	*n = R.nlate;
	R.late_del = NULL;
	R.nlate = R.late_cap = 0;
	pthread_mutex_unlock(&R.mu);
	/* decided, so true: a copy older than the delete goes, a newer write stays */
	for (i = 0; i < *n && !err; i++) {
		struct xtx_log_write w;

		/* a delete: no value to gather */
		xtx_logrec_from_entry(&w, &v[i]);
		err = xtxd_live_install(&R.live, &w) < 0 ? -EIO : 0;
	}
	if (err) {
		/* the rest stays noted for the next try */
		for (i--; i < *n; i++)
			note_late_delete(&v[i]);
	}
	free(v);
	return err;
}

struct xtxd_live *xtxd_resolve_live(void)
{
	return __atomic_load_n(&R.running, __ATOMIC_ACQUIRE) ? &R.live : NULL;
}

/* ---- compacting the decisions file ---- */

static void keep_recent(struct xtxd_txn *x, void *arg)
{
	if (x->outcome != XTXD_OUT_NONE)
		idset_add(arg, x->txn);
}

struct decided {
	struct xtxd_outcome_rec *r;
	size_t n, cap;
};

static int collect_decision(uint64_t txn, uint32_t outcome, void *arg)
{
	struct decided *d = arg;

	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 1024;
		struct xtxd_outcome_rec *r = realloc(d->r, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		d->r = r;
		d->cap = cap;
	}
	d->r[d->n++] = (struct xtxd_outcome_rec){ .txn = txn, .outcome = outcome };
	return 0;
}

/*
 * Recovery needs a decision while a record of its transaction is in the
 * logs; a peer may ask for it while the transaction is in our table (the
 * table forgets a decision --keep-decided after it, as it forgets fences).
 * Everything else goes.  Runs on the resolver thread, the file's only writer.
 */
static void compact_decisions(void)
{
	struct idset keep = {};
	struct decided d = {};
	struct xtx_logseg *segs = NULL;
	struct xtx_log_entry e;
	struct xtx_logr r;
	size_t nsegs = 0, i, kept = 0;
	uint32_t skip = 0;
	int err, fd;

	pthread_mutex_lock(&R.mu);
	xtxd_txns_each(&R.txns, keep_recent, &keep);
	pthread_mutex_unlock(&R.mu);
	err = xtx_logfile_list(R.dirfd, &segs, &nsegs);
	for (i = 0; !err && i < nsegs; i++) {
		/* recovery skips what the snapshot covers: its records need no decision */
		if (xtxd_snapshot_covers(segs[i].cpu, segs[i].seg))
			continue;
		if (xtx_logr_open(&r, R.dirfd, segs[i].name))
			continue;
		if (i && segs[i - 1].cpu != segs[i].cpu)
			skip = 0;
		/* a big value's continuations name no txn */
		while (xtx_logr_next(&r, &e) == 1) {
			if (skip) {
				skip--;
				continue;
			}
			idset_add(&keep, e.txn);
			skip = xtx_logrec_span(&e) - 1;
		}
		xtx_logr_close(&r);
	}
	free(segs);
	if (!err)
		err = keep.oom ? -ENOMEM : xtxd_outcome_load(R.dirfd, collect_decision, &d);
	if (err)
		goto out;
	qsort(keep.v, keep.n, sizeof(*keep.v), cmp_u64);
	/* recovery applies what the snapshot carries by its decision too */
	for (i = 0; i < d.n; i++)
		if (idset_has(&keep, d.r[i].txn) || xtxd_snapshot_carries(d.r[i].txn))
			d.r[kept++] = d.r[i];
	if (kept == d.n)
		goto out;	/* nothing to drop: leave the file alone */
	err = xtxd_outcome_rewrite(R.dirfd, d.r, kept);
	if (err)
		goto out;
	/* appends go to the new file from now on */
	fd = xtxd_outcome_open(R.dirfd);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	close(R.outcome_fd);
	R.outcome_fd = fd;
	__atomic_fetch_add(&R.pruned, d.n - kept, __ATOMIC_RELAXED);
	pr_info("resolve: decisions file compacted: %zu of %zu decisions kept\n", kept, d.n);
out:
	__atomic_store_n(&R.kept, err ? d.n : kept, __ATOMIC_RELAXED);
	if (err)
		pr_warn("resolve: compacting the decisions file: %s (it stays as it was)\n",
			strerror(-err));
	free(keep.v);
	free(d.r);
}

void xtxd_resolve_compact_soon(void)
{
	__atomic_store_n(&R.compact, true, __ATOMIC_RELEASE);
}

static void *resolve_main(void *arg)
{
	struct pollfd p[3] = { { .fd = R.sock, .events = POLLIN },
			       { .fd = R.stop_fd, .events = POLLIN },
			       { .fd = R.kick_fd, .events = POLLIN } };
	uint64_t kicks;

	(void)arg;
	rcu_register_thread();
	for (;;) {
		int n = poll(p, 3, SCAN_EVERY_NS / 1000000);

		if (n < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (n > 0 && p[0].revents)
			receive();
		if (n > 0 && p[2].revents && read(R.kick_fd, &kicks, sizeof(kicks)) < 0)
			pr_debug("resolve: %s\n", strerror(errno));
		/* nothing decided here before the start's recovery is over (receive()) */
		if (!xtxd_undecided_is_ready())
			continue;
		reconfigure_step();
		if (xtx_now_ns() - R.last_scan >= SCAN_EVERY_NS) {
			R.last_scan = xtx_now_ns();
			scan();
			xtxd_hres_scan();
		}
		if (__atomic_exchange_n(&R.compact, false, __ATOMIC_ACQ_REL))
			compact_decisions();
	}
	rcu_unregister_thread();
	return NULL;
}

/* ---- start and stop ---- */

static int open_live(const struct xtx_target *t, struct xtxd_ovf *store)
{
	struct xtx_info info;
	int err = xtx_target_info(t, &info);

	if (err)
		return err;
	err = xtx_target_map_kv(t, info.kv_buckets, &R.live.kv, &R.kv_size);
	if (err)
		return err;
	R.live.nbuckets = info.kv_buckets;
	R.live.store = store;
	R.live.lock_slots = info.lock_slots;
	err = xtx_target_map_array(t, XTX_MAP_LOCKS, info.lock_slots, sizeof(*R.live.locks),
				   (void **)&R.live.locks, &R.locks_size);
	if (err)
		return err;
	err = xtx_target_map_array(t, XTX_MAP_FAM_PINS, XTX_PIN_ENTRIES, sizeof(*R.live.pins),
				   (void **)&R.live.pins, &R.pins_size);
	if (err)
		return err;
	R.fence_fd = xtx_target_map_fd(t, XTX_MAP_FENCE);
	return R.fence_fd < 0 ? R.fence_fd : 0;
}

/* Decisions taken before a restart: peers asking again get the same answer. */
static int remember_decision(uint64_t txn, uint32_t outcome, void *arg)
{
	struct xtxd_txn *x = xtxd_txns_get(&R.txns, txn, true, xtx_now_ns());

	(void)arg;
	if (!x)
		return -ENOMEM;
	x->outcome = outcome;
	x->decided_ns = xtx_now_ns();
	/*
	 * Maps created at this start hold no fence: a coordinator paused
	 * past the restart would log the aborted transaction here again,
	 * and, answered by every replica, go on to commit it
	 */
	if (outcome == XTXD_OUT_ABORT) {
		uint64_t now = xtx_now_ns();

		if (!bpf_map_update_elem(R.fence_fd, &txn, &now, BPF_ANY))
			R.refenced++;
		else if (errno != E2BIG)
			return -errno;
		else if (!R.refence_full++)
			pr_warn("resolve: the fence map is full: aborted transactions decided "
				"before this start are not all fenced again\n");
	}
	return 0;
}

int xtxd_resolve_arm_fences(void)
{
	int err;

	if (!R.refenced)
		return 0;
	err = xtxd_logdrain_arm_fence(true);
	if (err)
		fprintf(stderr, "Error: resolve: refusing the appends of %llu aborted transactions: "
			"%s\n", (unsigned long long)R.refenced, strerror(-err));
	else
		pr_info("resolve: %llu transactions decided abort before this start are fenced "
			"again\n", (unsigned long long)R.refenced);
	return err;
}

static int open_socket(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_ANY) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static void cleanup(void)
{
	xtxd_hres_stop();
	free(R.late_del);
	R.late_del = NULL;
	R.nlate = R.late_cap = 0;
	if (R.sock >= 0)
		close(R.sock);
	if (R.stop_fd >= 0)
		close(R.stop_fd);
	if (R.kick_fd >= 0)
		close(R.kick_fd);
	free(R.rc_ids);
	R.rc_ids = NULL;
	R.rc_n = R.rc_cap = 0;
	if (R.fence_fd >= 0)
		close(R.fence_fd);
	if (R.outcome_fd >= 0)
		close(R.outcome_fd);
	if (R.dirfd >= 0)
		close(R.dirfd);
	if (R.live.locks)
		munmap(R.live.locks, R.locks_size);
	if (R.live.pins)
		munmap(R.live.pins, R.pins_size);
	if (R.live.kv)
		munmap(R.live.kv, R.kv_size);
	xtxd_held_set_keep(0);
	xtxd_held_reset();
	pthread_mutex_lock(&R.mu);
	xtxd_txns_free(&R.txns);
	pthread_mutex_unlock(&R.mu);
	R.sock = R.stop_fd = R.kick_fd = R.fence_fd = R.outcome_fd = R.dirfd = -1;
	R.live.kv = NULL;
	R.live.locks = NULL;
	R.live.pins = NULL;
}

int xtxd_resolve_start(const struct xtx_target *t, struct xtxd_ovf *store,
		       const struct xtxd_resolve_opts *o)
{
	const char *step;
	int err;

	if (!o->peers.n)
		return 0;
	R.peers = o->peers;
	R.peer_port = o->port + 1;
	R.after_ns = o->after_ns;
	R.keep_ns = o->keep_ns ? o->keep_ns : XTXD_KEEP_DECIDED_DEFAULT_NS;
	R.has_secret = o->secret != NULL;
	if (o->secret)
		R.secret = *o->secret;
	xtxd_peer_set_secret(o->secret);
	step = "opening the maps";
	err = open_live(t, store);
	if (err)
		goto fail;
	step = "opening the data directory";
	if (xtx_mkdirs(o->data_dir, 0700)) {
		err = -errno;
		goto fail;
	}
	R.dirfd = open(o->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (R.dirfd < 0) {
		err = -errno;
		goto fail;
	}
	step = "opening the decisions file";
	R.outcome_fd = xtxd_outcome_open(R.dirfd);
	if (R.outcome_fd < 0) {
		err = R.outcome_fd;
		goto fail;
	}
	step = "reading the decisions file";
	err = xtxd_outcome_load(R.dirfd, remember_decision, NULL);
	if (err)
		goto fail;
	/* what the segments a snapshot removed held, for as long as decisions are kept */
	step = "reading the held files";
	xtxd_held_set_keep(R.keep_ns);
	err = xtxd_held_load(R.dirfd);
	if (err)
		goto fail;
	step = "binding the peer port";
	R.sock = open_socket(R.peer_port);
	if (R.sock < 0) {
		err = R.sock;
		goto fail;
	}
	step = "setting up the reconfiguration wait";
	{
		pthread_condattr_t ca;

		/* waited for with a timeout: the wall clock may step */
		err = -pthread_condattr_init(&ca);
		if (!err)
			err = -pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		if (!err)
			err = -pthread_cond_init(&R.rc_cv, &ca);
		pthread_condattr_destroy(&ca);
		if (err)
			goto fail;
	}
	R.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	R.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (R.stop_fd < 0 || R.kick_fd < 0) {
		err = -errno;
		goto fail;
	}
	step = "starting the HADES half";
	err = xtxd_hres_start(t, &(struct xtxd_hres_opts){
		.peers = &R.peers, .sock = R.sock, .peer_port = R.peer_port,
		.fence_fd = R.fence_fd, .after_ns = R.after_ns, .live = &R.live,
		.dirfd = R.dirfd, .grace_ns = FENCE_GRACE_NS, .gone = gone_mask });
	if (err)
		goto fail;
	__atomic_store_n(&R.running, true, __ATOMIC_RELEASE);
	err = -pthread_create(&R.tid, NULL, resolve_main, NULL);
	if (err) {
		__atomic_store_n(&R.running, false, __ATOMIC_RELEASE);
		step = "starting the thread";
		goto fail;
	}
	pthread_setname_np(R.tid, "xtxd-resolve");
	pr_info("resolve: server %d of %u, peers on UDP port %u, deciding transactions left "
		"unfinished for %llu ms\n", R.peers.self, R.peers.n, R.peer_port,
		(unsigned long long)(R.after_ns / 1000000));
	return 0;
fail:
	fprintf(stderr, "Error: resolve: %s: %s\n", step, strerror(-err));
	cleanup();
	return err;
}

void xtxd_resolve_get_stats(struct xtxd_resolve_stats *s)
{
	memset(s, 0, sizeof(*s));
	/* single-writer counters: a relaxed read is a value they had */
	s->commits = __atomic_load_n(&R.commits, __ATOMIC_RELAXED);
	s->aborts = __atomic_load_n(&R.aborts, __ATOMIC_RELAXED);
	s->fenced = __atomic_load_n(&R.fenced, __ATOMIC_RELAXED);
	s->strangers = __atomic_load_n(&R.strangers, __ATOMIC_RELAXED);
	s->unauthenticated = __atomic_load_n(&R.unauthenticated, __ATOMIC_RELAXED);
	s->replayed = __atomic_load_n(&R.replayed, __ATOMIC_RELAXED);
	s->throttled = __atomic_load_n(&R.throttled, __ATOMIC_RELAXED);
	s->malformed = __atomic_load_n(&R.malformed, __ATOMIC_RELAXED);
	s->client_asks = __atomic_load_n(&R.client_asks, __ATOMIC_RELAXED);
	s->client_refused = __atomic_load_n(&R.client_refused, __ATOMIC_RELAXED);
	s->client_bad_mac = __atomic_load_n(&R.client_bad_mac, __ATOMIC_RELAXED);
	s->decisions_pruned = __atomic_load_n(&R.pruned, __ATOMIC_RELAXED);
	s->decisions_kept = __atomic_load_n(&R.kept, __ATOMIC_RELAXED);
	pthread_mutex_lock(&R.mu);
	s->recovered = R.recovered;
	s->reconfigurations = R.rc_done;
	pthread_mutex_unlock(&R.mu);
	xtxd_hres_get_stats(&s->hades_validated, &s->hades_aborted, &s->hades_fenced);
}

void xtxd_resolve_stop(void)
{
	uint64_t one = 1;

	if (!R.running)
		return;
	if (write(R.stop_fd, &one, sizeof(one)) != sizeof(one))
		pr_warn("resolve: waking the thread: %s\n", strerror(errno));
	pthread_join(R.tid, NULL);
	__atomic_store_n(&R.running, false, __ATOMIC_RELEASE);
	pr_info("resolve: %llu transactions decided commit, %llu abort, %llu fences\n",
		(unsigned long long)R.commits, (unsigned long long)R.aborts,
		(unsigned long long)R.fenced);
	cleanup();
}
