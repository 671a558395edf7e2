// SPDX-License-Identifier: GPL-2.0-only
/* The closed-loop transaction engine of xtxbench tatp and smallbank: run, report, verify. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xtx/hash.h>
#include <xtx/kv.h>
#include <xtx/maps.h>
#include "bench.h"
#include "benchthread.h"
#include "clock.h"
#include "cpustat.h"
#include "hist.h"
#include "doubts.h"
#include "histrec.h"
#include "ids.h"
#include "log.h"
#include "num.h"
#include "secret.h"
#include "runner.h"
#include "servers.h"
#include "transport.h"
#include "wlbench.h"
#include "wlload.h"
#include "zipf.h"
#include "zk.h"
#include "zkcluster.h"

/* Longest a thread waits in xtx_poll(), so it notices the stop flag. */
#define WL_POLL_NS		(1000 * 1000ull)
/* The least counting time the first progress line after the warmup reports on. */
#define WL_FIRST_TICK_NS	(100 * 1000 * 1000ull)
/* How often a thread hands its numbers to the progress reporter (and --timeline). */
#define WL_PUBLISH_NS		(10 * 1000 * 1000ull)
/* --timeline: one line per this much of the run. */
#define WL_TIMELINE_NS		(100 * 1000 * 1000ull)
/*
 * After the run, how long a thread waits for its transactions to end.
 * libxtx ends each one (FAILED at worst) within its retry budget; what
 * is still going after this counts as unknown.
 */
#define WL_DRAIN_NS		(10ull * 1000 * 1000 * 1000)
/* ... and how long the servers get to say what became of one left in doubt. */
#define WL_RESOLVE_NS		(5ull * 1000 * 1000 * 1000)

enum wl_slot_state { SLOT_FREE, SLOT_BUSY, SLOT_RETRY };

enum wl_populate_via { WL_VIA_CTL, WL_VIA_TXN };

/* Transactions each loader keeps in flight under --populate-via txn. */
#define WL_LOAD_INFLIGHT	32

#define WL_CPU_OF_MAX		4
#define WL_CPU_OF_PIDS		64

/* Processes whose CPU time over the measured window the summary reports. */
struct wl_cpu_of {
	char name[24];
	int pids[WL_CPU_OF_PIDS];
	unsigned int npids;
};

struct wl_opts {
	struct sockaddr_in *servers;
	unsigned int nservers;
	struct xtx_cluster *cluster;	/* --zk: the cluster's map; NULL: static */
	struct bench_zk_source zk;	/* --zk: where to read it again */
	uint16_t port;
	uint32_t replication;
	enum xtx_protocol protocol;
	enum xtx_transport_kind transport;
	uint32_t threads;
	uint32_t inflight;
	uint32_t ops_per_packet;
	uint64_t duration_ns;
	uint64_t warmup_ns;
	uint64_t seed;
	uint64_t run_seed;	/* of the transaction inputs */
	bool seed_set;
	uint32_t client_base;
	bool client_base_set;
	uint64_t timeout_ns;
	uint64_t lock_lease_ns;
	bool has_secret;		/* --secret-file */
	struct xtx_secret secret;
	uint32_t dup_cpu_ppm;		/* --fault-dup-cpu-ppm */
	bool retry_same;
	bool json;
	bool populate;
	int populate_via;	/* enum wl_populate_via, or -1: by whether --ctl is given */
	bool verify;
	bool echo;		/* the servers answer without state: judge no data */
	const char *dump_cmd;
	const char *history;	/* --history BASE: BASE.<client id> per thread */
	const char *timeline;	/* --timeline FILE: committed/s per 100 ms */
	struct wl_cpu_of cpu_of[WL_CPU_OF_MAX];	/* --cpu-of NAME=PID,...: CPU time to report */
	unsigned int ncpu_of;
	struct wl_ctl ctl;
	char xtxctl_path[PATH_MAX];
};

struct wl_slot {
	struct wl_thread *th;
	uint32_t type;
	uint8_t state;
	bool measured;
	/* the workload's transaction follows, 16-byte aligned */
	_Alignas(16) uint8_t txn[];
};

struct wl_thread {
	struct bench_thread bt;		/* bt.recent/total: committed latencies */
	const struct wl_workload *w;
	const struct wl_opts *o;
	struct xtx_client *cl;
	struct wl_tinfo ti;
	uint64_t rng;
	void *wt;
	uint8_t *slots;
	size_t slot_size;
	int poll_err;
	struct history_writer *hist;	/* --history, or NULL */
	bool hist_err;
	struct doubts doubts;		/* ended in doubt: asked about after the run */
	uint64_t x_unmeasured[WL_NX];
	struct xtx_client_stats cs;	/* the client's counters at the end */
	/* Committed latencies per type, read after the run. */
	struct xtx_hist type_lat[WL_MAX_TYPES];

	/* Owned by the thread. */
	struct wl_counts c;
	/* Read by the progress reporter under bt.lock. */
	struct wl_counts pub;
};

static uint64_t wl_measure_from;

static struct wl_slot *slot_at(struct wl_thread *t, unsigned int i)
{
	return (struct wl_slot *)(t->slots + i * t->slot_size);
}

/* ---- the transactions ---- */

static enum xtx_step wl_step(struct xtx_txn *x, void *arg)
{
	struct wl_slot *s = arg;

	return s->th->w->step(x, s->txn);
}

static void wl_done(struct xtx_txn *x, const struct xtx_txn_result *res, void *arg)
{
	struct wl_slot *s = arg;
	struct wl_thread *t = s->th;
	struct wl_counts *c = &t->c;
	enum wl_verdict v;

	/*
	 * every transaction, warm-up and retries too: each one moves versions;
	 * one in doubt once the servers say what became of it
	 */
	if (res->outcome == XTX_IN_DOUBT) {
		if (doubts_keep(&t->doubts, x, res) && t->hist)
			t->hist_err = true;	/* its record is lost */
	} else if (t->hist && !t->hist_err && histrec_txn(t->hist, x, res)) {
		t->hist_err = true;
	}
	v = t->w->end(t->w->ctx, t->wt, s->txn, res, s->measured ? c->x : t->x_unmeasured);
	/* an echo server's empty reads say nothing about the data: the row is just not there */
	if (v == WL_BROKEN && t->o->echo)
		v = WL_LOGICAL;
	s->state = SLOT_FREE;
	if (!s->measured) {
		if (v == WL_ABORTED && t->o->retry_same && !xtx_run_stopping())
			s->state = SLOT_RETRY;
		return;
	}
	switch (v) {
	case WL_COMMITTED:
		c->committed[s->type]++;
		xtx_hist_add(&t->bt.recent, res->latency_ns);
		xtx_hist_add(&t->type_lat[s->type], res->latency_ns);
		break;
	case WL_LOGICAL:
		c->logical[s->type]++;
		break;
	case WL_ABORTED:
		c->aborted[s->type]++;
		c->causes[res->cause < XTX_CAUSE__COUNT ? res->cause : XTX_CAUSE_NONE]++;
		if (t->o->retry_same && !xtx_run_stopping())
			s->state = SLOT_RETRY;
		break;
	case WL_FAILED:
		c->failed[s->type]++;
		break;
	case WL_IN_DOUBT:
		c->in_doubt[s->type]++;
		break;
	case WL_BROKEN:
		c->broken[s->type]++;
		break;
	}
}

/* Starts a transaction in slot s: a fresh one, or the same inputs again. */
static int slot_start(struct wl_thread *t, struct wl_slot *s, uint64_t now)
{
	const struct wl_workload *w = t->w;
	int err;

	bool retry = s->state == SLOT_RETRY;

	if (retry)
		w->rearm(w->ctx, t->wt, s->txn, &t->ti);
	else
		s->type = w->begin(w->ctx, t->wt, s->txn, &t->ti);
	s->measured = now >= wl_measure_from;
	err = xtx_txn_start(t->cl, wl_step, wl_done, s);
	if (err)
		return err;
	s->state = SLOT_BUSY;
	if (s->measured) {
		t->c.attempted[s->type]++;
		t->c.retried[s->type] += retry;
	}
	return 0;
}

static void publish(struct wl_thread *t)
{
	bench_publish(&t->bt, &t->pub, &t->c, sizeof(t->c));
}

static void *wl_thread_main(void *arg)
{
	struct wl_thread *t = arg;
	uint64_t now = xtx_now_ns(), next_pub = now + WL_PUBLISH_NS, deadline;
	unsigned int i;
	int n;

	while (!xtx_run_stopping()) {
		for (i = 0; i < t->o->inflight; i++) {
			struct wl_slot *s = slot_at(t, i);

			if (s->state == SLOT_BUSY)
				continue;
			n = slot_start(t, s, now);
			if (n == -EBUSY)
				break;
			if (n) {
				t->poll_err = n;
				goto drain;
			}
		}
		n = xtx_poll(t->cl, WL_POLL_NS);
		if (n < 0) {
			t->poll_err = n;
			break;
		}
		now = xtx_now_ns();
		if (now >= next_pub) {
			publish(t);
			next_pub = now + WL_PUBLISH_NS;
		}
	}
drain:
	deadline = xtx_now_ns() + WL_DRAIN_NS;
	while (xtx_inflight(t->cl) && xtx_now_ns() < deadline)
		if (xtx_poll(t->cl, WL_POLL_NS) < 0)
			break;
	for (i = 0; i < t->o->inflight; i++) {
		struct wl_slot *s = slot_at(t, i);

		if (s->state == SLOT_BUSY && s->measured)
			t->c.unknown[s->type]++;
	}
	t->cs = *xtx_client_stats(t->cl);
	publish(t);
	return NULL;
}

/* ---- progress and summary ---- */

static uint64_t sum_of(const uint64_t *a, unsigned int n)
{
	uint64_t s = 0;

	while (n--)
		s += *a++;
	return s;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

struct wl_progress {
	struct wl_thread *th;
	unsigned int nthreads, ntypes;
	bool measuring;		/* a tick after the warmup has been printed */
	struct wl_counts prev;
	FILE *timeline;		/* --timeline, or NULL */
	const struct wl_opts *o;
	uint64_t cpu_of_ns0[WL_CPU_OF_MAX];	/* --cpu-of at the measured window's start */
	uint64_t tl_committed, tl_ns;	/* at the previous sample */
};

static void gather(struct wl_thread *th, unsigned int n, struct wl_counts *sum,
		   struct xtx_hist *h)
{
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	xtx_hist_reset(h);
	for (i = 0; i < n; i++)
		bench_gather(&th[i].bt, (uint64_t *)sum, (const uint64_t *)&th[i].pub,
			     WL_NCOUNTS, h);
}

/* --timeline: the committed rate since the previous sample. */
static void timeline_sample(void *ctx, uint64_t since_start_ns)
{
	struct wl_progress *p = ctx;
	struct wl_counts cur;
	struct xtx_hist h;
	struct timespec wall;
	uint64_t k;

	gather(p->th, p->nthreads, &cur, &h);
	k = sum_of(cur.committed, p->ntypes);
	/* the wall clock too, to place events timed outside (a kill) on the same axis */
	clock_gettime(CLOCK_REALTIME, &wall);
	fprintf(p->timeline, "%.3f %.0f %lld.%03ld\n", since_start_ns / 1e9,
		(double)(k - p->tl_committed) * 1e9 / (double)(since_start_ns - p->tl_ns),
		(long long)wall.tv_sec, wall.tv_nsec / 1000000);
	p->tl_committed = k;
	p->tl_ns = since_start_ns;
}

static void progress_tick(void *ctx, unsigned int sec, double dt)
{
	struct wl_progress *p = ctx;
	struct wl_counts cur;
	struct xtx_hist h;
	unsigned int k = p->ntypes;
	uint64_t now = xtx_now_ns();

	gather(p->th, p->nthreads, &cur, &h);
	/*
	 * Counting starts when the warmup ends: the first measured tick covers
	 * only the time since then, and one barely past it would be noise.
	 */
	if (!p->measuring) {
		if (now < wl_measure_from + WL_FIRST_TICK_NS) {
			fprintf(stderr, "t=%us  warming up\n", sec);
			return;
		}
		dt = (now - wl_measure_from) / 1e9;
		p->measuring = true;
	}
	fprintf(stderr,
		"t=%us  txn/s=%.0f  committed/s=%.0f  logical/s=%.0f  aborted/s=%.0f  "
		"p50=%.1fus p99=%.1fus",
		sec, (sum_of(cur.attempted, k) - sum_of(p->prev.attempted, k)) / dt,
		(sum_of(cur.committed, k) - sum_of(p->prev.committed, k)) / dt,
		(sum_of(cur.logical, k) - sum_of(p->prev.logical, k)) / dt,
		(sum_of(cur.aborted, k) - sum_of(p->prev.aborted, k)) / dt,
		xtx_hist_percentile(&h, 50) / 1e3, xtx_hist_percentile(&h, 99) / 1e3);
	if (sum_of(cur.failed, k))
		fprintf(stderr, "  failed=%llu", (unsigned long long)sum_of(cur.failed, k));
	if (sum_of(cur.in_doubt, k))
		fprintf(stderr, "  in_doubt=%llu", (unsigned long long)sum_of(cur.in_doubt, k));
	if (sum_of(cur.broken, k))
		fprintf(stderr, "  BROKEN=%llu", (unsigned long long)sum_of(cur.broken, k));
	fputc('\n', stderr);
	p->prev = cur;
}

struct wl_result {
	struct wl_counts c;
	struct xtx_hist lat;
	struct xtx_hist type_lat[WL_MAX_TYPES];
	struct xtx_client_stats cs;
	char transport[96];	/* how thread 0's client reached the servers */
	double cpu_s;		/* this process's CPU time over the run, warmup included */
	uint64_t cpu_of_ns[WL_CPU_OF_MAX];	/* --cpu-of over the measured window */
	double run_s;		/* the run, warmup included */
	double secs;		/* the measured window */
	bool ran;
	bool verified;
	unsigned long violations;
};

static void print_type_json(const char *name, const struct wl_counts *c, int i, unsigned int k,
			    const struct xtx_hist *h)
{
#define F(field) (unsigned long long)(i < 0 ? sum_of(c->field, k) : c->field[i])
	printf("\"%s\":{\"attempted\":%llu,\"committed\":%llu,\"logical\":%llu,"
	       "\"aborted\":%llu,\"failed\":%llu,\"in_doubt\":%llu,\"unknown\":%llu,"
	       "\"broken\":%llu,\"retried\":%llu,\"p50_us\":%.2f,\"p99_us\":%.2f}", name,
	       F(attempted), F(committed), F(logical), F(aborted), F(failed), F(in_doubt),
	       F(unknown), F(broken), F(retried),
	       xtx_hist_percentile(h, 50) / 1e3, xtx_hist_percentile(h, 99) / 1e3);
#undef F
}

static void print_json(const struct wl_workload *w, const struct wl_opts *o,
		       const struct wl_result *r)
{
	const struct wl_counts *c = &r->c;
	const struct xtx_hist *h = &r->lat;
	unsigned int i, k = w->ntypes;
	const char *sep = "";

	printf("{\"bench\":\"%s\",\"servers\":%u,\"echo\":%s,\"replication\":%u,"
	       "\"protocol\":\"%s\","
	       "\"threads\":%u,\"inflight\":%u,\"ops_per_packet\":%u,\"client_id_base\":%u,"
	       "\"seed\":%llu,\"run_seed\":%llu,\"retry\":\"%s\",\"warmup_s\":%.3f,"
	       "\"duration_s\":%.3f,",
	       w->name, o->nservers, o->echo ? "true" : "false", o->replication,
	       xtx_protocol_name(o->protocol), o->threads,
	       o->inflight, o->ops_per_packet, o->client_base, (unsigned long long)o->seed,
	       (unsigned long long)o->run_seed, o->retry_same ? "same" : "none",
	       o->warmup_ns / 1e9, r->secs);
	w->describe(w->ctx, true);
	printf("\"types\":{");
	for (i = 0; i < k; i++) {
		printf("%s", i ? "," : "");
		print_type_json(w->type_names[i], c, (int)i, k, &r->type_lat[i]);
	}
	printf("},");
	print_type_json("total", c, -1, k, h);
	printf(",\"aborts\":{");
	for (i = 1; i < XTX_CAUSE__COUNT; i++) {
		if (!c->causes[i])
			continue;
		printf("%s\"%s\":%llu", sep, xtx_cause_name(i), (unsigned long long)c->causes[i]);
		sep = ",";
	}
	printf("},\"attempts_per_s\":%.1f,\"committed_per_s\":%.1f,",
	       ratio(sum_of(c->attempted, k), 1) / (r->secs > 0 ? r->secs : 1),
	       ratio(sum_of(c->committed, k), 1) / (r->secs > 0 ? r->secs : 1));
	w->summary(w->ctx, c, r->secs, true);
	printf("\"latency_us\":{\"avg\":%.2f,\"p50\":%.2f,\"p99\":%.2f,\"p999\":%.2f,"
	       "\"max\":%.2f},", xtx_hist_mean(h) / 1e3, xtx_hist_percentile(h, 50) / 1e3,
	       xtx_hist_percentile(h, 99) / 1e3, xtx_hist_percentile(h, 99.9) / 1e3,
	       h->max / 1e3);
	printf("\"packets\":%llu,\"ops\":%llu,\"retransmits\":%llu,\"op_retries\":%llu,"
	       "\"ops_per_packet_avg\":%.2f,\"packets_per_committed\":%.2f,"
	       "\"packets_per_committed_writer\":%.2f,",
	       (unsigned long long)r->cs.packets, (unsigned long long)r->cs.ops,
	       (unsigned long long)r->cs.retransmits, (unsigned long long)r->cs.op_retries,
	       ratio(r->cs.ops, r->cs.packets), ratio(r->cs.packets, r->cs.committed),
	       ratio(r->cs.packets_rw_committed, r->cs.committed_rw));
	printf("\"transport\":\"%s\",\"frames_malformed\":%llu,\"udp_fallback\":%llu,"
	       "\"client_cpu_s\":%.4f,\"run_s\":%.4f,",
	       xtx_transport_name(o->transport), (unsigned long long)r->cs.frames_malformed,
	       (unsigned long long)r->cs.udp_fallback, r->cpu_s, r->run_s);
	printf("\"dup_cpu_sent\":%llu,\"dup_cpu_apart\":%llu,\"dup_cpu_busy\":%llu,"
	       "\"dup_cpu_compared\":%llu,\"dup_cpu_mismatched\":%llu,",
	       (unsigned long long)r->cs.dup_cpu_sent, (unsigned long long)r->cs.dup_cpu_apart,
	       (unsigned long long)r->cs.dup_cpu_busy, (unsigned long long)r->cs.dup_cpu_compared,
	       (unsigned long long)r->cs.dup_cpu_mismatched);
	printf("\"cpu_of\":{");
	for (i = 0; i < o->ncpu_of; i++)
		printf("%s\"%s\":%llu", i ? "," : "", o->cpu_of[i].name,
		       (unsigned long long)r->cpu_of_ns[i]);
	printf("},");
	printf("\"verify\":%s,\"violations\":%lu}\n", r->verified ? "true" : "false",
	       r->violations);
}

static void print_text(const struct wl_workload *w, const struct wl_opts *o,
		       const struct wl_result *r)
{
	const struct wl_counts *c = &r->c;
	const struct xtx_hist *h = &r->lat;
	unsigned int i, k = w->ntypes;

	printf("%s: servers=%u%s replication=%u protocol=%s threads=%u inflight=%u "
	       "ops_per_packet=%u client_ids=%u..%u seed=%llu run_seed=%llu retry=%s "
	       "warmup=%.2fs measured=%.2fs\n",
	       w->name, o->nservers, o->echo ? " (echo: no data)" : "", o->replication,
	       xtx_protocol_name(o->protocol), o->threads,
	       o->inflight, o->ops_per_packet, o->client_base, o->client_base + o->threads - 1,
	       (unsigned long long)o->seed, (unsigned long long)o->run_seed,
	       o->retry_same ? "same" : "none", o->warmup_ns / 1e9, r->secs);
	w->describe(w->ctx, false);
	if (!r->ran)
		return;
	printf("%-6s %11s %11s %11s %11s %8s %8s %9s %9s\n", "type", "attempted", "committed",
	       "logical", "aborted", "failed", "unknown", "p50_us", "p99_us");
	for (i = 0; i <= k; i++) {
		bool tot = i == k;
		const struct xtx_hist *th = tot ? h : &r->type_lat[i];
#define F(field) (unsigned long long)(tot ? sum_of(c->field, k) : c->field[i])
		printf("%-6s %11llu %11llu %11llu %11llu %8llu %8llu %9.1f %9.1f\n",
		       tot ? "total" : w->type_names[i], F(attempted), F(committed), F(logical),
		       F(aborted), F(failed), F(unknown), xtx_hist_percentile(th, 50) / 1e3,
		       xtx_hist_percentile(th, 99) / 1e3);
#undef F
	}
	printf("aborts:");
	for (i = 1; i < XTX_CAUSE__COUNT; i++)
		if (c->causes[i])
			printf(" %s=%llu", xtx_cause_name(i), (unsigned long long)c->causes[i]);
	if (!sum_of(c->causes, XTX_CAUSE__COUNT))
		printf(" none");
	putchar('\n');
	if (sum_of(c->broken, k))
		printf("BROKEN: %llu transactions saw data that breaks an invariant\n",
		       (unsigned long long)sum_of(c->broken, k));
	w->summary(w->ctx, c, r->secs, false);
	if (o->echo)
		printf("echo: the servers keep no data, so every read came back empty and the "
		       "rates above other than attempts/s describe nothing\n");
	printf("latency_us (committed) avg=%.1f p50=%.1f p99=%.1f p999=%.1f max=%.1f\n",
	       xtx_hist_mean(h) / 1e3, xtx_hist_percentile(h, 50) / 1e3,
	       xtx_hist_percentile(h, 99) / 1e3, xtx_hist_percentile(h, 99.9) / 1e3,
	       h->max / 1e3);
	printf("packets=%llu  ops=%llu  ops_per_packet=%.2f  packets_per_committed=%.2f  "
	       "packets_per_committed_writer=%.2f  retransmits=%llu  op_retries=%llu\n",
	       (unsigned long long)r->cs.packets, (unsigned long long)r->cs.ops,
	       ratio(r->cs.ops, r->cs.packets), ratio(r->cs.packets, r->cs.committed),
	       ratio(r->cs.packets_rw_committed, r->cs.committed_rw),
	       (unsigned long long)r->cs.retransmits, (unsigned long long)r->cs.op_retries);
	printf("transport: %s  frames_malformed=%llu  udp_fallback=%llu\n", r->transport,
	       (unsigned long long)r->cs.frames_malformed, (unsigned long long)r->cs.udp_fallback);
	if (o->dup_cpu_ppm)
		printf("dup-cpu: sent=%llu apart=%llu busy=%llu compared=%llu mismatched=%llu\n",
		       (unsigned long long)r->cs.dup_cpu_sent,
		       (unsigned long long)r->cs.dup_cpu_apart,
		       (unsigned long long)r->cs.dup_cpu_busy,
		       (unsigned long long)r->cs.dup_cpu_compared,
		       (unsigned long long)r->cs.dup_cpu_mismatched);
	if (r->verified)
		printf("verify: %s (%lu violations)\n", r->violations ? "FAILED" : "OK",
		       r->violations);
}

/* ---- options ---- */

enum {
	OPT_REPLICATION = 0x100,
	OPT_PROTOCOL,
	OPT_WARMUP,
	OPT_SEED,
	OPT_POPULATE,
	OPT_VERIFY,
	OPT_CTL,
	OPT_XTXCTL,
	OPT_RETRY,
	OPT_TIMEOUT,
	OPT_LEASE,
	OPT_SECRET_FILE,
	OPT_OPS,
	OPT_POPULATE_VIA,
	OPT_DUMP_CMD,
	OPT_ECHO,
	OPT_HISTORY,
	OPT_TIMELINE,
	OPT_CPU_OF,
	OPT_ZK,
	OPT_ZK_NAME,
	OPT_TRANSPORT,
	OPT_DUP_CPU,
};

static const struct option common_opts[] = {
	{ "servers", required_argument, NULL, 's' },
	{ "zk", required_argument, NULL, OPT_ZK },
	{ "zk-name", required_argument, NULL, OPT_ZK_NAME },
	{ "port", required_argument, NULL, 'p' },
	{ "replication", required_argument, NULL, OPT_REPLICATION },
	{ "protocol", required_argument, NULL, OPT_PROTOCOL },
	{ "transport", required_argument, NULL, OPT_TRANSPORT },
	{ "threads", required_argument, NULL, 't' },
	{ "inflight", required_argument, NULL, 'w' },
	{ "ops-per-packet", required_argument, NULL, OPT_OPS },
	{ "duration", required_argument, NULL, 'd' },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "client-base", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "populate", no_argument, NULL, OPT_POPULATE },
	{ "populate-via", required_argument, NULL, OPT_POPULATE_VIA },
	{ "dump-cmd", required_argument, NULL, OPT_DUMP_CMD },
	{ "echo", no_argument, NULL, OPT_ECHO },
	{ "history", required_argument, NULL, OPT_HISTORY },
	{ "timeline", required_argument, NULL, OPT_TIMELINE },
	{ "cpu-of", required_argument, NULL, OPT_CPU_OF },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "ctl", required_argument, NULL, OPT_CTL },
	{ "xtxctl", required_argument, NULL, OPT_XTXCTL },
	{ "retry", required_argument, NULL, OPT_RETRY },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "lock-lease", required_argument, NULL, OPT_LEASE },
	{ "secret-file", required_argument, NULL, OPT_SECRET_FILE },
	{ "fault-dup-cpu-ppm", required_argument, NULL, OPT_DUP_CPU },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
};

#define NCOMMON (sizeof(common_opts) / sizeof(common_opts[0]))

static void common_usage(FILE *out)
{
	fprintf(out,
		"Common options:\n"
		"  -s, --servers IP,IP,...   the servers (IPv4), in the same order on every client\n"
		"      --zk HOST:PORT[,...]  instead: the servers, replication and shard map of\n"
		"                            the cluster held by this ZooKeeper ensemble\n"
		"      --zk-name NAME        the cluster's name there (default xtx)\n"
		"  -p, --port N              server UDP port (default %u)\n"
		"      --replication R       replicas per key, 1..min(3, servers) (default: that)\n"
		"      --protocol P          occ, 2pl or hades\n"
		"      --transport T         udp (default) or afxdp: AF_XDP sockets on the\n"
		"                            interfaces the routes use (root, native XDP)\n"
		"  -t, --threads N           client threads, each its own libxtx client (1..%u,\n"
		"                            default 1)\n"
		"  -w, --inflight N          transactions each thread keeps going (default 16)\n"
		"      --ops-per-packet K    ops per request at most, 1..%u (default %u)\n"
		"  -d, --duration S          measured time (default 5s; 0: no run)\n"
		"      --warmup S            run this long first without counting (default 1s)\n"
		"      --seed S              the population (default 1); given, also the\n"
		"                            transaction inputs, which otherwise differ per run\n"
		"                            (a rerun would replay the same inserts and deletes)\n"
		"  -c, --client-base BASE    thread i uses client id BASE+i, setup BASE+threads\n"
		"                            (default derived from the pid)\n"
		"      --retry none|same     after a concurrency abort start a new transaction\n"
		"                            (none, default) or the same inputs again\n"
		"      --timeout DUR         libxtx resend timeout (default 2ms)\n"
		"      --secret-file PATH    the cluster's shared secret (xtxd --secret-file)\n"
		"      --lock-lease DUR      keep to a lock lease shorter than the one the\n"
		"                            servers tell (default: theirs)\n"
		"      --fault-dup-cpu-ppm N tests: send that share (per million) of requests\n"
		"                            twice at once, the copy from another CPU, and\n"
		"                            compare the answers (a mismatch is a violation;\n"
		"                            UDP, two CPUs)\n"
		"      --populate            first load the data set (see --populate-via)\n"
		"      --populate-via ctl|txn  ctl: each server gets the rows it is a replica of\n"
		"                            through xtxctl load (xtxd only; needs --ctl; the\n"
		"                            default with --ctl); txn: every row written with\n"
		"                            libxtx transactions of %u puts, %u in flight on each\n"
		"                            thread, under the run's protocol,\n"
		"                            so any server works, xtx-udpd too (default without\n"
		"                            --ctl). Under ctl each server is first asked what it\n"
		"                            can hold, and a data set too big stops before\n"
		"                            loading, naming the xtxd --capacity that fits;\n"
		"                            progress goes to stderr once a second\n"
		"      --verify              after the run, dump every server and check the\n"
		"                            workload's invariants against a dump taken before\n"
		"                            it, and that replicas agree (needs --ctl or\n"
		"                            --dump-cmd)\n"
		"      --ctl NS:IF,...       each server's network namespace and interface, in\n"
		"                            --servers order, for --populate and --verify\n"
		"      --dump-cmd CMD        for --verify without xtxctl: `CMD I` (run by sh)\n"
		"                            prints server I's store (0-based, --servers order)\n"
		"                            as `xtxctl dump` does, e.g. a script sending\n"
		"                            xtx-udpd SIGUSR1 and printing its --dump-file\n"
		"      --xtxctl PATH         the xtxctl to run (default: beside xtxbench, in\n"
		"                            ../sbin beside it, or on PATH)\n"
		"      --echo                the servers run with --echo (see below)\n"
		"      --history BASE        record every transaction (reads with the version\n"
		"                            seen, writes with the version installed) in\n"
		"                            BASE.<client id>, one file per thread; with\n"
		"                            --verify also BASE.final, the store afterwards.\n"
		"                            Check with `xtxbench check-history BASE.*`\n"
		"      --timeline FILE       committed transactions per second over each 100 ms\n"
		"                            of the run, one \"SECONDS RATE UNIX-TIME\" line each\n"
		"                            (warmup included), for plotting an outage\n"
		"      --cpu-of NAME=PID[,PID...]  report these processes' (or threads') CPU\n"
		"                            time over the measured window alone, warmup and\n"
		"                            populate left out, as cpu_of.NAME (ns) in --json;\n"
		"                            up to 4 times (e.g. the servers' NAPI threads and\n"
		"                            their daemons apart)\n"
		"  -j, --json                the summary as one JSON object on stdout\n"
		"  -v, --verbose             more output\n"
		"  -h, --help                this text\n"
		"\n"
		"Progress goes to stderr once a second, the summary to stdout, --verify's\n"
		"findings to stderr.  Exits 1 if a check fails, a transaction saw broken data,\n"
		"an outcome stayed unknown under --verify, or nothing committed.\n"
		"\n"
		"Against servers in --echo mode (every op answered OK, nothing kept) a run\n"
		"measures the ceiling of the clients, the network path and the servers' packet\n"
		"handling, not transactions: reads come back empty, so transactions end as\n"
		"logical failures (or aborts); attempts/s (txn/s) is the number to read.  Say\n"
		"--echo: empty reads then count as logical failures instead of broken data, and\n"
		"a run that committed nothing still exits 0 (--verify is refused).\n",
		XTX_DEFAULT_PORT, WL_MAX_THREADS, XTX_MAX_OPS, XTX_MAX_OPS, WL_LOAD_BATCH,
		WL_LOAD_INFLIGHT);
}

static bool name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n >= max)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

/* "NS:IF,NS:IF,...": one per server. */
static int parse_ctl(const char *list, struct wl_opts *o)
{
	char *copy = strdup(list), *save = NULL, *tok;
	unsigned int n = 0, cap = 0;
	int rc = -1;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');

		if (!colon) {
			fprintf(stderr, "Error: --ctl: '%s' is not NETNS:IFACE\n", tok);
			goto out;
		}
		*colon = '\0';
		if (!name_ok(tok, 64) || !name_ok(colon + 1, 16)) {
			fprintf(stderr, "Error: --ctl: bad namespace or interface name in '%s:%s'\n",
				tok, colon + 1);
			goto out;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			o->ctl.netns = realloc(o->ctl.netns, cap * sizeof(*o->ctl.netns));
			o->ctl.iface = realloc(o->ctl.iface, cap * sizeof(*o->ctl.iface));
			if (!o->ctl.netns || !o->ctl.iface) {
				fprintf(stderr, "Error: --ctl: %s\n", strerror(ENOMEM));
				goto out;
			}
		}
		snprintf(o->ctl.netns[n], sizeof(o->ctl.netns[n]), "%s", tok);
		snprintf(o->ctl.iface[n], sizeof(o->ctl.iface[n]), "%s", colon + 1);
		n++;
	}
	o->ctl.nservers = n;
	rc = 0;
out:
	free(copy);
	return rc;
}

/*
 * The xtxctl to run: the one beside this program (the build tree), else in
 * ../sbin beside it (an installed tree: xtxbench in bin/, xtxctl in sbin/),
 * else the first on PATH or in the sbin directories a user's PATH may lack.
 * "" when there is none: wl_check_opts says so if --ctl needs one.
 */
static void default_xtxctl(struct wl_opts *o)
{
	static const char *const sbins[] = { "/usr/local/sbin", "/usr/sbin", "/sbin" };
	char exe[PATH_MAX], cand[PATH_MAX + 16], *dir, *save = NULL, *path;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *env = getenv("PATH");
	unsigned int i;
	char *slash;

	o->xtxctl_path[0] = '\0';
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(cand, sizeof(cand), "%s/xtxctl", exe);
			if (!access(cand, X_OK))
				goto found;
			snprintf(cand, sizeof(cand), "%s/../sbin/xtxctl", exe);
			if (!access(cand, X_OK))
				goto found;
		}
	}
	path = strdup(env ? env : "");
	for (dir = path ? strtok_r(path, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(cand, sizeof(cand), "%s/xtxctl", *dir ? dir : ".");
		if (!access(cand, X_OK)) {
			free(path);
			goto found;
		}
	}
	free(path);
	for (i = 0; i < sizeof(sbins) / sizeof(sbins[0]); i++) {
		snprintf(cand, sizeof(cand), "%s/xtxctl", sbins[i]);
		if (!access(cand, X_OK))
			goto found;
	}
	return;
found:
	snprintf(o->xtxctl_path, sizeof(o->xtxctl_path), "%s", cand);
}

static void usage(const struct wl_workload *w, FILE *out)
{
	w->usage(out);
	fputc('\n', out);
	common_usage(out);
}

/* NAME=PID[,PID...] */
static int parse_cpu_of(struct wl_opts *o, const char *arg)
{
	const char *eq = strchr(arg, '='), *p;
	struct wl_cpu_of *g;
	uint32_t pid;
	char buf[16];
	size_t len;

	if (o->ncpu_of == WL_CPU_OF_MAX) {
		fprintf(stderr, "Error: --cpu-of: at most %d groups\n", WL_CPU_OF_MAX);
		return -1;
	}
	g = &o->cpu_of[o->ncpu_of];
	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(g->name) ||
	    strspn(arg, "abcdefghijklmnopqrstuvwxyz0123456789_-") != (size_t)(eq - arg)) {
		fprintf(stderr, "Error: --cpu-of: '%s' is not NAME=PID[,PID...] (NAME of "
			"[a-z0-9_-], under %zu characters)\n", arg, sizeof(g->name));
		return -1;
	}
	memcpy(g->name, arg, eq - arg);
	g->name[eq - arg] = '\0';
	g->npids = 0;
	/* an empty list is allowed: a group that has no process this time counts 0 */
	for (p = eq + 1; *p; p += len + (p[len] == ',')) {
		len = strcspn(p, ",");
		if (!len || len >= sizeof(buf) || g->npids == WL_CPU_OF_PIDS) {
			fprintf(stderr, "Error: --cpu-of %s: bad or too many pids (at most %d)\n",
				g->name, WL_CPU_OF_PIDS);
			return -1;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (xtx_parse_u32("--cpu-of", buf, 1, INT32_MAX, &pid))
			return -1;
		g->pids[g->npids++] = pid;
	}
	o->ncpu_of++;
	return 0;
}

/* 1 after -h, 0, or -1 after printing why. */
static int parse_args(const struct wl_workload *w, int argc, char **argv, struct wl_opts *o)
{
	struct option longopts[64];
	const char *servers = NULL, *zk = NULL, *zk_name = XTX_ZK_NAME_DEFAULT;
	uint32_t port = XTX_DEFAULT_PORT;
	unsigned int n = 0, i;
	int c;

	for (i = 0; i < NCOMMON; i++)
		longopts[n++] = common_opts[i];
	for (i = 0; w->longopts[i].name && n < 63; i++)
		longopts[n++] = w->longopts[i];
	memset(&longopts[n], 0, sizeof(longopts[n]));

	o->protocol = w->default_protocol;
	o->threads = 1;
	o->inflight = 16;
	o->ops_per_packet = XTX_MAX_OPS;
	o->duration_ns = 5000000000ull;
	o->warmup_ns = 1000000000ull;
	o->seed = 1;
	o->populate_via = -1;
	default_xtxctl(o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:p:t:w:d:c:jvh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			servers = optarg;
			break;
		case OPT_ZK:
			zk = optarg;
			break;
		case OPT_ZK_NAME:
			zk_name = optarg;
			break;
		case 'p':
			if (xtx_parse_u32("--port", optarg, 1, 65535, &port))
				return -1;
			break;
		case OPT_REPLICATION:
			if (xtx_parse_u32("--replication", optarg, 1, 3, &o->replication))
				return -1;
			break;
		case OPT_PROTOCOL:
			if (xtx_protocol_parse(optarg, &o->protocol)) {
				fprintf(stderr, "Error: --protocol: '%s' is not occ, 2pl or hades\n",
					optarg);
				return -1;
			}
			break;
		case OPT_TRANSPORT:
			if (xtx_transport_parse(optarg, &o->transport)) {
				fprintf(stderr, "Error: --transport: '%s' is not udp or afxdp\n",
					optarg);
				return -1;
			}
			break;
		case 't':
			if (xtx_parse_u32("--threads", optarg, 1, WL_MAX_THREADS, &o->threads))
				return -1;
			break;
		case 'w':
			if (xtx_parse_u32("--inflight", optarg, 1, 4096, &o->inflight))
				return -1;
			break;
		case OPT_OPS:
			if (xtx_parse_u32("--ops-per-packet", optarg, 1, XTX_MAX_OPS,
					  &o->ops_per_packet))
				return -1;
			break;
		case 'd':
			if (xtx_parse_duration("--duration", optarg, &o->duration_ns))
				return -1;
			break;
		case OPT_WARMUP:
			if (xtx_parse_duration("--warmup", optarg, &o->warmup_ns))
				return -1;
			break;
		case OPT_SEED:
			if (xtx_parse_u64("--seed", optarg, 0, UINT64_MAX, &o->seed))
				return -1;
			o->seed_set = true;
			break;
		case 'c':
			if (xtx_parse_u32("--client-base", optarg, 0, XTX_MAX_CLIENTS_LIMIT - 1,
					  &o->client_base))
				return -1;
			o->client_base_set = true;
			break;
		case 'j':
			o->json = true;
			break;
		case OPT_POPULATE:
			o->populate = true;
			break;
		case OPT_VERIFY:
			o->verify = true;
			break;
		case OPT_POPULATE_VIA:
			if (!strcmp(optarg, "ctl")) {
				o->populate_via = WL_VIA_CTL;
			} else if (!strcmp(optarg, "txn")) {
				o->populate_via = WL_VIA_TXN;
			} else {
				fprintf(stderr, "Error: --populate-via: '%s' is not ctl or txn\n",
					optarg);
				return -1;
			}
			break;
		case OPT_ECHO:
			o->echo = true;
			break;
		case OPT_HISTORY:
			if (!*optarg) {
				fprintf(stderr, "Error: --history: empty path\n");
				return -1;
			}
			o->history = optarg;
			break;
		case OPT_CPU_OF:
			if (parse_cpu_of(o, optarg))
				return -1;
			break;
		case OPT_TIMELINE:
			if (!*optarg) {
				fprintf(stderr, "Error: --timeline: empty path\n");
				return -1;
			}
			o->timeline = optarg;
			break;
		case OPT_DUMP_CMD:
			if (!*optarg) {
				fprintf(stderr, "Error: --dump-cmd: empty command\n");
				return -1;
			}
			o->dump_cmd = optarg;
			break;
		case OPT_CTL:
			if (parse_ctl(optarg, o))
				return -1;
			break;
		case OPT_XTXCTL:
			snprintf(o->xtxctl_path, sizeof(o->xtxctl_path), "%s", optarg);
			break;
		case OPT_RETRY:
			if (strcmp(optarg, "none") && strcmp(optarg, "same")) {
				fprintf(stderr, "Error: --retry: '%s' is not none or same\n", optarg);
				return -1;
			}
			o->retry_same = !strcmp(optarg, "same");
			break;
		case OPT_TIMEOUT:
			if (xtx_parse_duration("--timeout", optarg, &o->timeout_ns))
				return -1;
			break;
		case OPT_SECRET_FILE:
			if (xtx_secret_read(optarg, &o->secret))
				return -1;
			o->has_secret = true;
			break;
		case OPT_LEASE:
			if (xtx_parse_duration("--lock-lease", optarg, &o->lock_lease_ns))
				return -1;
			break;
		case OPT_DUP_CPU:
			if (xtx_parse_u32("--fault-dup-cpu-ppm", optarg, 0, 1000000,
					  &o->dup_cpu_ppm))
				return -1;
			break;
		case 'v':
			xtx_log_level++;
			break;
		case 'h':
			usage(w, stdout);
			return 1;
		case '?':
			usage(w, stderr);
			return -1;
		default:
			if (w->handle_opt(w->ctx, c, optarg))
				return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "Error: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	switch (bench_pick_servers(servers, zk, zk_name, (uint16_t)port, &o->servers,
				   &o->nservers, &o->replication, &o->cluster, &o->zk)) {
	case 0:
		break;
	case -2:
		usage(w, stderr);
		return -1;
	default:
		return -1;
	}
	o->port = (uint16_t)port;
	if (!o->replication)
		o->replication = o->nservers < 3 ? o->nservers : 3;
	if (o->replication > o->nservers) {
		fprintf(stderr, "Error: --replication %u with %u servers\n", o->replication,
			o->nservers);
		return -1;
	}
	if (o->populate_via < 0)
		o->populate_via = o->ctl.nservers ? WL_VIA_CTL : WL_VIA_TXN;
	if (o->ctl.nservers && o->ctl.nservers != o->nservers) {
		fprintf(stderr, "Error: --ctl needs one NETNS:IFACE per server (%u servers, %u "
			"given)\n", o->nservers, o->ctl.nservers);
		return -1;
	}
	if (o->populate && o->populate_via == WL_VIA_CTL && !o->ctl.nservers) {
		fprintf(stderr, "Error: --populate-via ctl needs --ctl with one NETNS:IFACE per "
			"server\n");
		return -1;
	}
	if (o->verify && o->echo) {
		fprintf(stderr, "Error: --verify with --echo: echo servers keep no data\n");
		return -1;
	}
	if (o->verify && !o->ctl.nservers && !o->dump_cmd) {
		fprintf(stderr, "Error: --verify needs --ctl with one NETNS:IFACE per server, or "
			"--dump-cmd\n");
		return -1;
	}
	if (o->ctl.nservers && !o->xtxctl_path[0]) {
		fprintf(stderr, "Error: --ctl: no xtxctl beside xtxbench, in ../sbin beside it, on "
			"PATH or in /usr/local/sbin, /usr/sbin: give --xtxctl PATH\n");
		return -1;
	}
	o->ctl.xtxctl = o->xtxctl_path;
	o->ctl.dump_cmd = o->dump_cmd;
	if (o->dump_cmd)
		o->ctl.nservers = o->nservers;
	if (!o->client_base_set)
		o->client_base = xtx_client_base_default(o->threads + 1);
	if (o->client_base + o->threads >= XTX_MAX_CLIENTS_LIMIT) {
		fprintf(stderr, "Error: --client-base %u: ids past %u\n", o->client_base,
			XTX_MAX_CLIENTS_LIMIT - 1);
		return -1;
	}
	o->run_seed = o->seed_set ? o->seed : xtx_mix64(xtx_req_id_start() ^ (uint64_t)getpid());
	if (w->check_opts(w->ctx, o->threads, o->seed))
		return -1;
	return w->check_run && w->check_run(w->ctx, o->nservers, o->protocol) ? -1 : 0;
}

/* ---- clients, populate and snapshots ---- */

/*
 * A client of the run: every table the workload says holds values past the
 * op slot gets read room for its longest ahead, so no read aborts to learn it.
 */
static struct xtx_client *open_client(const struct wl_workload *w, const struct wl_opts *o,
				      uint32_t client_id)
{
	struct xtx_client *c;
	unsigned int i;
	struct xtx_client_cfg cfg = {
		.servers = o->servers,
		.nservers = o->nservers,
		.replication = o->replication,
		.protocol = o->protocol,
		.client_id = client_id,
		.max_inflight = o->inflight,
		.ops_per_packet = o->ops_per_packet,
		.timeout_ns = o->timeout_ns,
		.lock_lease_ns = o->lock_lease_ns,
		.secret = o->has_secret ? &o->secret : NULL,
		.cluster = o->cluster,
		/* a newer epoch: the manager moved shards; read where they are now */
		.refresh = o->cluster ? bench_zk_refresh : NULL,
		.refresh_arg = (void *)&o->zk,
		.fault_dup_cpu_ppm = o->dup_cpu_ppm,
		.transport = o->transport,
	};

	c = xtx_client_open(&cfg);
	for (i = 0; c && w->value_max && i < w->ntables; i++)
		xtx_client_table_value_max(c, w->tables[i], w->value_max(w->ctx, w->tables[i]));
	return c;
}

/* --verify's placement: the replicas that hold the key whole (a copying one is last) */
static unsigned int place(void *arg, uint8_t table, uint64_t key, unsigned int i)
{
	return xtx_replica_whole(arg, table, key, i) ? xtx_replica_of(arg, table, key, i) :
						       XTX_NO_REPLICA;
}

/* Servers --verify does not dump: moved out, or still copying */
static uint64_t not_whole(struct xtx_client *c)
{
	uint64_t gone = xtx_servers_moved_out(c);

	return gone | xtx_servers_copying(c);
}

struct pop_state {
	struct xtx_client *c;
	unsigned int replication;
	FILE **f;
	uint64_t rows, lines;
	_Atomic uint64_t sent;	/* lines handed to the servers, for the progress thread */
};

/* ---- what a populate asks of each server ---- */

/* About once a second on stderr, for a populate that lasts longer than one. */
#define POP_PROGRESS_NS		(1000ull * 1000 * 1000)

struct pop_count {
	struct xtx_client *c;
	uint64_t *per_server;	/* keys each server is a replica of */
	uint64_t rows, lines;
};

static int count_emit(void *arg, uint8_t table, uint64_t key, const uint8_t *value, uint16_t vlen)
{
	struct pop_count *pc = arg;
	unsigned int i, n = xtx_replica_count(pc->c, table, key);

	(void)value;
	(void)vlen;
	for (i = 0; i < n; i++)
		pc->per_server[xtx_replica_of(pc->c, table, key, i)]++;
	pc->rows++;
	pc->lines += n;
	return 0;
}

/*
 * What the server can hold, from `xtxctl rare-stats --json` (xtxd's control
 * socket: xtxbench may run in a namespace that does not see the pinned
 * maps), or -1 when it does not say (an older xtxd).
 */
struct srv_room {
	unsigned long long kv_slots, store_max, store_keys, capacity;
};

static int server_room(const struct wl_opts *o, unsigned int s, struct srv_room *r)
{
	static char buf[65536];	/* the per-op status counts grow with use */
	char cmd[1024];
	unsigned long long buckets;
	size_t len;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' --netns '%s' --iface '%s' rare-stats --json 2>/dev/null",
		 o->ctl.xtxctl, o->ctl.netns[s], o->ctl.iface[s]);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	st = pclose(f);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	memset(r, 0, sizeof(*r));
	if (!xtx_json_u64(buf, "kv_buckets", &buckets) || !xtx_json_u64(buf, "store_max", &r->store_max))
		return -1;
	r->kv_slots = buckets * XTX_KV_WAYS;
	xtx_json_u64(buf, "capacity", &r->capacity);
	xtx_json_u64(buf, "store_keys", &r->store_keys);
	return 0;
}

/*
 * Before anything is loaded: every server can take the keys it is a
 * replica of, or the populate stops here naming the --capacity that fits.
 * The overflow store is what must take them: the kernel cache may evict
 * any key to it (and a load spills there whatever a full bucket cannot
 * hold), so a fit is every new key beside what the store holds already,
 * which is also the rule xtxd --capacity sizes the store by.  A server
 * that cannot say (an older xtxd) is not checked.  0 or -1.
 */
static int populate_fits(const struct wl_workload *w, const struct wl_opts *o,
			 struct xtx_client *c, uint64_t gone, uint64_t *lines)
{
	struct pop_count pc = { .c = c };
	uint64_t most = 0;
	unsigned int s, bad = 0;
	int rc;

	pc.per_server = calloc(o->nservers, sizeof(*pc.per_server));
	if (!pc.per_server)
		return -1;
	rc = w->populate(w->ctx, count_emit, &pc);
	*lines = pc.lines;
	for (s = 0; s < o->nservers && !rc; s++)
		if (pc.per_server[s] > most)
			most = pc.per_server[s];
	for (s = 0; s < o->nservers && !rc; s++) {
		struct srv_room r;
		char ip[INET_ADDRSTRLEN];

		if ((s < 64 && (gone >> s & 1)) || server_room(o, s, &r))
			continue;
		if (r.store_keys <= r.store_max && pc.per_server[s] <= r.store_max - r.store_keys)
			continue;
		inet_ntop(AF_INET, &o->servers[s].sin_addr, ip, sizeof(ip));
		fprintf(stderr, "Error: --populate: %s's %llu rows with R = %u need %llu keys on "
			"server %s; its overflow store, which must be able to take every key its "
			"kernel cache (%llu slots) may evict, holds at most %llu keys (%llu held); "
			"restart its xtxd with --capacity %llu or more. Nothing was loaded\n",
			w->name, (unsigned long long)pc.rows, o->replication,
			(unsigned long long)pc.per_server[s], ip, r.kv_slots, r.store_max,
			r.store_keys, (unsigned long long)(most + r.store_keys));
		bad++;
	}
	free(pc.per_server);
	return rc || bad ? -1 : 0;
}

/*
 * A populate's progress: keys sent (through xtxctl) or rows written
 * (through transactions), rate, ETA; then, through xtxctl, the servers' wait.
 */
struct pop_progress {
	_Atomic uint64_t *done;
	const char *what;	/* "keys sent", "rows written" */
	bool servers_finish;	/* done == total still leaves the servers work */
	uint64_t total, t0;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	pthread_t tid;
	bool running;
};

static void *pop_progress_main(void *arg)
{
	struct pop_progress *pp = arg;
	struct timespec ts;

	pthread_mutex_lock(&pp->mu);
	while (!pp->stop) {
		uint64_t done, now;
		double secs, rate;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&pp->cv, &pp->mu, &ts);
		if (pp->stop)
			break;
		now = xtx_now_ns();
		if (now - pp->t0 < POP_PROGRESS_NS)
			continue;
		done = atomic_load_explicit(pp->done, memory_order_relaxed);
		secs = (now - pp->t0) / 1e9;
		rate = done / secs;
		if (done < pp->total || !pp->servers_finish)
			fprintf(stderr, "populate: %llu of %llu %s (%.0f%%), %.0f/s, ETA %.0f s\n",
				(unsigned long long)done, (unsigned long long)pp->total, pp->what,
				pp->total ? 100.0 * done / pp->total : 0.0, rate,
				rate > 0 && done < pp->total ? (pp->total - done) / rate : 0.0);
		else
			fprintf(stderr, "populate: all %llu keys sent; the servers are inserting "
				"and snapshotting them (%.0f s)\n", (unsigned long long)done, secs);
	}
	pthread_mutex_unlock(&pp->mu);
	return NULL;
}

static void pop_progress_start(struct pop_progress *pp)
{
	pthread_mutex_init(&pp->mu, NULL);
	pthread_cond_init(&pp->cv, NULL);
	pp->t0 = xtx_now_ns();
	pp->running = !pthread_create(&pp->tid, NULL, pop_progress_main, pp);
}

static void pop_progress_stop(struct pop_progress *pp)
{
	if (pp->running) {
		pthread_mutex_lock(&pp->mu);
		pp->stop = true;
		pthread_cond_signal(&pp->cv);
		pthread_mutex_unlock(&pp->mu);
		pthread_join(pp->tid, NULL);
	}
	pthread_mutex_destroy(&pp->mu);
	pthread_cond_destroy(&pp->cv);
}

/* Decimal digits of v ending at end (exclusive); returns where they start. */
static char *put_dec(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

/*
 * One "table key hex" line, formatted by hand: at 32M lines (TATP's
 * 10.7M rows on 3 replicas) fprintf was most of this process's time.
 */
static int pop_emit(void *arg, uint8_t table, uint64_t key, const uint8_t *value, uint16_t vlen)
{
	static const char digits[] = "0123456789abcdef";
	struct pop_state *p = arg;
	char line[3 + 1 + 20 + 1 + 2 * XTX_VALUE_MAX + 1], num[24], *d, *o = line;
	unsigned int i, n;
	size_t len;

	d = put_dec(num + sizeof(num), table);
	memcpy(o, d, num + sizeof(num) - d);
	o += num + sizeof(num) - d;
	*o++ = ' ';
	d = put_dec(num + sizeof(num), key);
	memcpy(o, d, num + sizeof(num) - d);
	o += num + sizeof(num) - d;
	*o++ = ' ';
	for (i = 0; i < vlen; i++) {
		*o++ = digits[value[i] >> 4];
		*o++ = digits[value[i] & 15];
	}
	*o++ = '\n';
	len = (size_t)(o - line);
	n = xtx_replica_count(p->c, table, key);
	for (i = 0; i < n; i++) {
		unsigned int s = xtx_replica_of(p->c, table, key, i);

		if (fwrite_unlocked(line, 1, len, p->f[s]) != len) {
			fprintf(stderr, "Error: --populate: writing server %u's rows: %s\n", s,
				strerror(errno));
			return -1;
		}
		p->lines++;
	}
	p->rows++;
	if (!(p->rows & 1023))
		atomic_store_explicit(&p->sent, p->lines, memory_order_relaxed);
	return 0;
}

/* Streams each server its rows through `xtxctl load --file -`, all at once. */
/*
 * The version every loaded key gets on every server: above every server's
 * version mark, so replicas agree on it whatever each one's history (its
 * bucket floors differ with what it evicted), and no key's version goes back.
 */
static int load_version(const struct wl_opts *o, uint64_t skip, uint64_t *version)
{
	unsigned long long mark;
	unsigned int s;
	char cmd[1024], line[256];
	FILE *f;
	int st;

	*version = 0;
	for (s = 0; s < o->nservers; s++) {
		bool got = false;

		if (s < 64 && (skip >> s & 1))
			continue;	/* a replica of nothing: it gets no rows */
		snprintf(cmd, sizeof(cmd), "'%s' --netns '%s' --iface '%s' version-mark",
			 o->ctl.xtxctl, o->ctl.netns[s], o->ctl.iface[s]);
		f = popen(cmd, "r");
		if (!f) {
			fprintf(stderr, "Error: --populate: running %s: %s\n", cmd, strerror(errno));
			return -1;
		}
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "mark %llu", &mark) == 1) {
				got = true;
				if (mark >= *version)
					*version = mark + 1;
			}
		st = pclose(f);
		if (!got || st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			/* 127: the shell found no such program */
			if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 127)
				fprintf(stderr, "Error: --populate: cannot run %s: give --xtxctl "
					"PATH\n", o->ctl.xtxctl);
			else
				fprintf(stderr, "Error: --populate: no version mark from %s:%s (%s "
					"version-mark: exit %d)\n", o->ctl.netns[s],
					o->ctl.iface[s], o->ctl.xtxctl,
					st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			return -1;
		}
	}
	return 0;
}

/*
 * `sh -c cmd` reading what we write: as popen(cmd, "w"), but closing is
 * apart from waiting, so every server sees the end of its rows at once
 * (pclose one by one left the others without their last buffered lines
 * while the first one loaded, and xtxd gives up on a silent stream).
 */
static FILE *spawn_writer(const char *cmd, pid_t *pid)
{
	int fd[2];
	FILE *f;

	if (pipe2(fd, O_CLOEXEC))
		return NULL;
	*pid = fork();
	if (*pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return NULL;
	}
	if (!*pid) {
		if (dup2(fd[0], STDIN_FILENO) < 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(fd[0]);
	f = fdopen(fd[1], "w");
	if (!f) {
		close(fd[1]);
		waitpid(*pid, NULL, 0);
	}
	return f;
}

static int populate(const struct wl_workload *w, const struct wl_opts *o, struct xtx_client *c)
{
	struct pop_state p = { .c = c, .replication = o->replication };
	struct pop_progress pp = { .done = &p.sent, .what = "keys sent",
				   .servers_finish = true };
	void (*old)(int);
	uint64_t t0 = xtx_now_ns(), version, gone = xtx_servers_moved_out(c);
	pid_t *pid;
	unsigned int s;
	int rc;

	if (populate_fits(w, o, c, gone, &pp.total) || load_version(o, gone, &version))
		return -1;
	p.f = calloc(o->nservers, sizeof(*p.f));
	pid = calloc(o->nservers, sizeof(*pid));
	if (!p.f || !pid) {
		free(p.f);
		free(pid);
		return -1;
	}
	old = signal(SIGPIPE, SIG_IGN);
	pop_progress_start(&pp);
	rc = 0;
	for (s = 0; s < o->nservers && !rc; s++) {
		char cmd[1024];

		if (s < 64 && (gone >> s & 1))
			continue;
		/* its report goes to stderr: stdout may be carrying JSON */
		snprintf(cmd, sizeof(cmd), "'%s' --netns '%s' --iface '%s' load --file - "
			 "--version %llu >&2", o->ctl.xtxctl, o->ctl.netns[s], o->ctl.iface[s],
			 (unsigned long long)version);
		p.f[s] = spawn_writer(cmd, &pid[s]);
		if (!p.f[s]) {
			fprintf(stderr, "Error: --populate: running %s: %s\n", cmd, strerror(errno));
			rc = -1;
		}
	}
	if (!rc)
		rc = w->populate(w->ctx, pop_emit, &p);
	atomic_store_explicit(&p.sent, p.lines, memory_order_relaxed);
	/* every stream ends before any is waited for */
	for (s = 0; s < o->nservers; s++)
		if (p.f[s] && fclose(p.f[s]) && !rc) {
			fprintf(stderr, "Error: --populate: sending %s:%s its rows: %s\n",
				o->ctl.netns[s], o->ctl.iface[s], strerror(errno));
			rc = -1;
		}
	for (s = 0; s < o->nservers; s++) {
		pid_t r;
		int st = 0;

		if (!p.f[s])
			continue;
		while ((r = waitpid(pid[s], &st, 0)) < 0 && errno == EINTR)
			;
		if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "Error: --populate: xtxctl load on %s:%s failed\n",
				o->ctl.netns[s], o->ctl.iface[s]);
			rc = -1;
		}
	}
	pop_progress_stop(&pp);
	free(p.f);
	free(pid);
	signal(SIGPIPE, old);
	if (!rc)
		pr_info("%s: populated %llu rows (%llu with replicas) in %.2fs (%.0f keys/s) at "
			"version %llu\n", w->name, (unsigned long long)p.rows,
			(unsigned long long)p.lines, (xtx_now_ns() - t0) / 1e9,
			p.lines / ((xtx_now_ns() - t0) / 1e9), (unsigned long long)version);
	return rc;
}

static int row_emit(void *arg, uint8_t table, uint64_t key, const uint8_t *value, uint16_t vlen)
{
	return wl_rows_add(arg, table, key, value, vlen);
}

/*
 * A server answered FULL (or a commit ended in doubt, as one a full store
 * refused does): no server says its capacity over the wire, so the check
 * comes after the fact, naming what each server needs.
 */
static void full_hint(const struct wl_workload *w, const struct wl_opts *o, struct xtx_client *c,
		      const struct wl_rows *rows)
{
	uint64_t most = 0, *per = calloc(o->nservers, sizeof(*per));
	unsigned int i, n, s;
	size_t r;

	if (!per)
		return;
	for (r = 0; r < rows->n; r++) {
		n = xtx_replica_count(c, rows->r[r].table, rows->r[r].key);
		for (i = 0; i < n; i++)
			per[xtx_replica_of(c, rows->r[r].table, rows->r[r].key, i)]++;
	}
	for (s = 0; s < o->nservers; s++)
		if (per[s] > most)
			most = per[s];
	fprintf(stderr, "Error: --populate: if a server's store is full: %s's %zu rows with R = "
		"%u need up to %llu keys per server; restart the servers with room for them (xtxd "
		"--capacity %llu or more). The rows written stay\n", w->name, rows->n,
		o->replication, (unsigned long long)most, (unsigned long long)most);
	free(per);
}

/* Writes every row through libxtx on the run's threads' client ids, under the run's protocol. */
static int populate_txn(const struct wl_workload *w, const struct wl_opts *o,
			struct xtx_client *c)
{
	struct wl_rows rows = {};
	struct wl_load_stats st = { 0 };
	struct wl_load_cfg cfg = {
		.servers = o->servers,
		.nservers = o->nservers,
		.replication = o->replication,
		/* the run's own: a server serves one protocol family per table at a time */
		.protocol = o->protocol,
		.client_base = o->client_base,
		.nclients = o->threads,
		.inflight = WL_LOAD_INFLIGHT,
		.timeout_ns = o->timeout_ns,
		.lock_lease_ns = o->lock_lease_ns,
		.secret = o->has_secret ? &o->secret : NULL,
		.cluster = o->cluster,
		.transport = o->transport,
	};
	uint64_t t0 = xtx_now_ns();
	_Atomic uint64_t written = 0;
	int rc;

	rc = w->populate(w->ctx, row_emit, &rows);
	if (!rc) {
		struct pop_progress pp = { .done = &written, .what = "rows written",
					   .total = rows.n };

		cfg.written = &written;
		pop_progress_start(&pp);
		rc = wl_load_rows(&cfg, &rows, &st);
		pop_progress_stop(&pp);
	}
	if (rc && st.full)
		full_hint(w, o, c, &rows);
	if (!rc)
		pr_info("%s: populated %llu rows in %llu transactions (%s, %u threads, %llu "
			"retried, %llu resends) in %.2fs\n", w->name,
			(unsigned long long)st.rows, (unsigned long long)st.txns,
			xtx_protocol_name(cfg.protocol), cfg.nclients,
			(unsigned long long)st.retries, (unsigned long long)st.retransmits,
			(xtx_now_ns() - t0) / 1e9);
	wl_rows_free(&rows);
	return rc;
}

static uint32_t table_mask(const struct wl_workload *w)
{
	uint32_t m = 0;
	unsigned int i;

	for (i = 0; i < w->ntables; i++)
		m |= 1u << w->tables[i];
	return m;
}

/* ---- --history ---- */

/* Asks the servers about every transaction left in doubt, and says what they answered. */
struct settled_arg {
	const struct wl_workload *w;
	void *wt;
};

static void tell_settled(void *arg, uint64_t txn_id, enum xtx_outcome o)
{
	struct settled_arg *a = arg;

	a->w->settled(a->w->ctx, a->wt, txn_id, o);
}

static void settle_doubts(const struct wl_workload *w, struct wl_thread *th, unsigned int n)
{
	struct doubt_totals tot = {};
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct settled_arg a = { .w = w, .wt = th[i].wt };

		if (doubts_settle(&th[i].doubts, th[i].cl, th[i].hist, WL_RESOLVE_NS, &tot,
				  w->settled ? tell_settled : NULL, &a))
			th[i].hist_err = true;
	}
	doubts_report(w->name, &tot);
}

/* Closes every thread's history file: 0, or -1 when one is incomplete. */
static int close_histories(struct wl_thread *th, const struct wl_opts *o)
{
	unsigned int i;
	int rc = 0;

	for (i = 0; i < o->threads; i++) {
		if (histrec_close(th[i].hist, o->history) || th[i].hist_err)
			rc = -1;
		th[i].hist = NULL;
	}
	if (rc)
		fprintf(stderr, "Error: --history: a history file is incomplete\n");
	return rc;
}

/*
 * BASE.final: the store after the run, as the checker's --final-state
 * reads it (a key not listed is absent), so it can tell a committed write
 * that is missing.
 */
static int write_final_state(const char *base, const struct wl_snap *after)
{
	char path[PATH_MAX];
	FILE *f;
	size_t i;

	snprintf(path, sizeof(path), "%s.final", base);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "Error: --history: %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "# TABLE KEY VERSION: every key the servers held after the run\n");
	for (i = 0; i < after->n; i++)
		fprintf(f, "%u %llu %llu\n", after->r[i].table,
			(unsigned long long)after->r[i].key,
			(unsigned long long)after->r[i].version);
	if (fclose(f)) {
		fprintf(stderr, "Error: --history: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- threads ---- */

static void free_threads(const struct wl_workload *w, struct wl_thread *th, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (th[i].cl)
			xtx_client_close(th[i].cl);
		histrec_close(th[i].hist, "");
		doubts_free(&th[i].doubts);
		if (th[i].wt) {
			w->thread_free(w->ctx, th[i].wt);
			free(th[i].wt);
		}
		free(th[i].slots);
		pthread_mutex_destroy(&th[i].bt.lock);
	}
	free(th);
}

static struct wl_thread *setup_threads(const struct wl_workload *w, const struct wl_opts *o)
{
	struct wl_thread *th = calloc(o->threads, sizeof(*th));
	size_t slot_size = (sizeof(struct wl_slot) + w->txn_size + 15) & ~(size_t)15;
	unsigned int i, j;

	if (!th) {
		fprintf(stderr, "Error: allocating threads: %s\n", strerror(ENOMEM));
		return NULL;
	}
	for (i = 0; i < o->threads; i++)
		pthread_mutex_init(&th[i].bt.lock, NULL);
	for (i = 0; i < o->threads; i++) {
		struct wl_thread *t = &th[i];

		t->w = w;
		t->o = o;
		t->bt.idx = i;
		t->bt.client_id = o->client_base + i;
		t->rng = xtx_mix64(o->run_seed ^ xtx_mix64(0x5eed0000ull + i)) | 1;
		t->ti = (struct wl_tinfo){
			.idx = i, .client_id = t->bt.client_id, .rng = &t->rng, .verify = o->verify,
		};
		t->slot_size = slot_size;
		t->slots = aligned_alloc(16, slot_size * o->inflight);
		t->wt = calloc(1, w->thread_size ? w->thread_size : 1);
		if (!t->slots || !t->wt) {
			fprintf(stderr, "Error: allocating thread state: %s\n", strerror(ENOMEM));
			goto fail;
		}
		memset(t->slots, 0, slot_size * o->inflight);
		for (j = 0; j < o->inflight; j++)
			slot_at(t, j)->th = t;
		if (w->thread_init(w->ctx, t->wt, &t->ti)) {
			free(t->wt);
			t->wt = NULL;
			goto fail;
		}
		t->cl = open_client(w, o, t->bt.client_id);
		if (!t->cl)
			goto fail;
		if (o->history) {
			t->hist = histrec_open(o->history, t->bt.client_id);
			if (!t->hist)
				goto fail;
		}
	}
	return th;
fail:
	free_threads(w, th, o->threads);
	return NULL;
}

/* The start of the measured window: --cpu-of's first reading. */
static void cpu_of_mark(void *ctx)
{
	struct wl_progress *p = ctx;
	unsigned int i;

	for (i = 0; i < p->o->ncpu_of; i++)
		p->cpu_of_ns0[i] = xtx_pids_cpu_ns(p->o->cpu_of[i].pids, p->o->cpu_of[i].npids);
}

/* User and system CPU time of every thread of this process so far. */
static double process_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int run(const struct wl_workload *w, const struct wl_opts *o, struct wl_thread *th,
	       struct wl_result *r)
{
	struct wl_progress prog = { .th = th, .nthreads = o->threads, .ntypes = w->ntypes, .o = o };
	struct xtx_run rr = {
		.nthreads = o->threads,
		.fn = wl_thread_main,
		.args = th,
		.arg_size = sizeof(*th),
		.duration_ns = o->warmup_ns + o->duration_ns,
		.tick = progress_tick,
		.ctx = &prog,
	};
	uint64_t start, stop;
	unsigned int i, j;
	double cpu0;
	int rc = 0;

	if (o->timeline) {
		prog.timeline = fopen(o->timeline, "w");
		if (!prog.timeline) {
			fprintf(stderr, "Error: --timeline: %s: %s\n", o->timeline, strerror(errno));
			return -1;
		}
		rr.sample = timeline_sample;
		rr.sample_ns = WL_TIMELINE_NS;
	}
	/* --cpu-of counts the measured window only: from the warmup's end to the stop */
	if (o->ncpu_of && o->warmup_ns) {
		rr.mark = cpu_of_mark;
		rr.mark_ns = o->warmup_ns;
	} else if (o->ncpu_of) {
		cpu_of_mark(&prog);
	}
	wl_measure_from = xtx_now_ns() + o->warmup_ns;
	cpu0 = process_cpu_s();
	rc = xtx_run_threads(&rr, &start, &stop);
	for (i = 0; i < o->ncpu_of; i++)
		r->cpu_of_ns[i] = xtx_pids_cpu_ns(o->cpu_of[i].pids, o->cpu_of[i].npids) -
				  prog.cpu_of_ns0[i];
	r->cpu_s = process_cpu_s() - cpu0;
	r->run_s = (stop - start) / 1e9;
	if (prog.timeline && fclose(prog.timeline)) {
		fprintf(stderr, "Error: --timeline: %s: %s\n", o->timeline, strerror(errno));
		rc = -1;
	}
	if (rc)
		return -1;
	r->ran = true;
	r->secs = stop > wl_measure_from ? (stop - wl_measure_from) / 1e9 : 0;
	xtx_hist_reset(&r->lat);
	for (i = 0; i < o->threads; i++) {
		struct wl_thread *t = &th[i];
		const struct xtx_client_stats *s = &t->cs;

		bench_counts_add((uint64_t *)&r->c, (const uint64_t *)&t->c, WL_NCOUNTS);
		xtx_hist_merge(&r->lat, &t->bt.total);
		xtx_hist_merge(&r->lat, &t->bt.recent);
		for (j = 0; j < w->ntypes; j++)
			xtx_hist_merge(&r->type_lat[j], &t->type_lat[j]);
		r->cs.packets += s->packets;
		r->cs.ops += s->ops;
		r->cs.retransmits += s->retransmits;
		r->cs.op_retries += s->op_retries;
		r->cs.committed += s->committed;
		r->cs.committed_rw += s->committed_rw;
		r->cs.packets_rw_committed += s->packets_rw_committed;
		r->cs.frames_malformed += s->frames_malformed;
		r->cs.udp_fallback += s->udp_fallback;
		r->cs.dup_cpu_sent += s->dup_cpu_sent;
		r->cs.dup_cpu_apart += s->dup_cpu_apart;
		r->cs.dup_cpu_busy += s->dup_cpu_busy;
		r->cs.dup_cpu_compared += s->dup_cpu_compared;
		r->cs.dup_cpu_mismatched += s->dup_cpu_mismatched;
		if (!i)
			xtx_client_transport(t->cl, r->transport, sizeof(r->transport));
		if (t->poll_err) {
			fprintf(stderr, "Error: thread %u (client %u): %s\n", i, t->bt.client_id,
				strerror(-t->poll_err));
			rc = -1;
		}
	}
	return rc;
}

int wl_main(const struct wl_workload *w, int argc, char **argv)
{
	struct wl_opts o = {};
	struct wl_result *r = calloc(1, sizeof(*r));
	struct wl_snap before = {}, after = {};
	struct wl_thread *th = NULL;
	struct xtx_client *setup = NULL;
	unsigned long snap_violations = 0;
	int rc, exit_rc = BENCH_EXIT_FAIL;
	uint64_t k;

	if (!r) {
		fprintf(stderr, "Error: %s\n", strerror(ENOMEM));
		return BENCH_EXIT_FAIL;
	}
	rc = parse_args(w, argc, argv, &o);
	if (rc) {
		exit_rc = rc > 0 ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
		goto out;
	}
	/* placement for --populate and --verify, and the first contact with the servers */
	setup = open_client(w, &o, o.client_base + o.threads);
	if (!setup)
		goto out;
	if (o.populate && (o.populate_via == WL_VIA_TXN ? populate_txn(w, &o, setup) :
			   populate(w, &o, setup)))
		goto out;
	if (o.verify && wl_snapshot(&o.ctl, not_whole(setup), table_mask(w),
				    o.replication, place, setup, &before,
				    &snap_violations))
		goto out;
	if (o.verify && snap_violations) {
		fprintf(stderr, "Error: --verify: the data before the run already breaks %lu "
			"placement rules\n", snap_violations);
		goto out;
	}
	th = setup_threads(w, &o);
	if (!th)
		goto out;
	pr_info("%s: client ids %u..%u, %u in flight per thread\n", w->name, o.client_base,
		o.client_base + o.threads - 1, o.inflight);
	if (o.duration_ns && run(w, &o, th, r))
		goto out;
	settle_doubts(w, th, o.threads);
	if (o.history && close_histories(th, &o))
		goto out;
	k = sum_of(r->c.committed, w->ntypes);
	if (o.verify) {
		void **wts = calloc(o.threads, sizeof(*wts));
		unsigned int i;

		if (!wts)
			goto out;
		for (i = 0; i < o.threads; i++)
			wts[i] = th[i].wt;
		r->violations = 0;
		if (sum_of(r->c.unknown, w->ntypes))
			wl_violation(&r->violations, "%llu transactions ended with unknown outcome",
				     (unsigned long long)sum_of(r->c.unknown, w->ntypes));
		/* a request runs once: two complete answers to it must agree */
		if (r->cs.dup_cpu_mismatched)
			wl_violation(&r->violations, "%llu of %llu requests sent twice at once were "
				     "answered differently (--fault-dup-cpu-ppm)",
				     (unsigned long long)r->cs.dup_cpu_mismatched,
				     (unsigned long long)r->cs.dup_cpu_compared);
		if (wl_snapshot(&o.ctl, not_whole(setup), table_mask(w),
				o.replication, place, setup, &after,
				&r->violations) || (o.history && write_final_state(o.history, &after))) {
			free(wts);
			goto out;
		}
		if (!r->violations)
			wl_check_ok("replicas identical, every key on exactly its %u replicas",
				    o.replication);
		r->violations += w->verify(w->ctx, &before, &after, wts, o.threads, &r->c);
		r->verified = true;
		free(wts);
	}
	if (o.json)
		print_json(w, &o, r);
	else
		print_text(w, &o, r);
	exit_rc = BENCH_EXIT_OK;
	if (r->violations) {
		fprintf(stderr, "Error: --verify: %lu violations\n", r->violations);
		exit_rc = BENCH_EXIT_FAIL;
	}
	if (sum_of(r->c.broken, w->ntypes)) {
		fprintf(stderr, "Error: %llu transactions saw data that breaks an invariant%s\n",
			(unsigned long long)sum_of(r->c.broken, w->ntypes),
			k ? "" : " (servers in --echo mode? then say --echo)");
		exit_rc = BENCH_EXIT_FAIL;
	}
	if (r->ran && !k && !o.echo) {
		fprintf(stderr, "Error: no transaction committed; are the servers up and "
			"populated?\n");
		exit_rc = BENCH_EXIT_FAIL;
	}
out:
	if (th)
		free_threads(w, th, o.threads);
	if (setup)
		xtx_client_close(setup);
	if (o.cluster)
		bench_zk_source_close(&o.zk);
	free(o.cluster);
	wl_snap_free(&before);
	wl_snap_free(&after);
	free(o.servers);
	free(o.ctl.netns);
	free(o.ctl.iface);
	free(r);
	return exit_rc;
}

int wl_parse_distribution(const char *arg, const char **dist)
{
	if (strcmp(arg, "zipf") && strcmp(arg, "uniform")) {
		fprintf(stderr, "Error: --distribution: '%s' is not zipf or uniform\n", arg);
		return -1;
	}
	*dist = arg;
	return 0;
}
