// SPDX-License-Identifier: GPL-2.0-only
/*
 * xtxd's Prometheus endpoint (--metrics ADDR:PORT): GET /metrics answers
 * the text exposition format, built per scrape from the pinned maps (XDP's
 * counters, the lock table, the HADES registry) and xtxd's own counters
 * (rare path, log drain, resolvers).  libmicrohttpd serves it from its own
 * thread; nothing here runs on the request path of the server.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <xtx/maps.h>
#include <xtx/proto.h>
#include "housekeeping.h"
#include "log.h"
#include "member.h"
#include "metrics.h"
#include "names.h"
#include "num.h"
#include "version.h"
#include "log/snapshot.h"
#include "occupancy.h"
#include "stats_read.h"
#include "log/logdrain.h"
#include "rare/rare.h"
#include "resolve/resolve.h"
#include "resolve/settle.h"
#include "store/overflow.h"

static struct {
	struct MHD_Daemon *d;
	struct xtx_target t;
	bool zk;		/* a ZooKeeper session exists to report */
	int state;		/* enum xtxd_serve_state, for /readyz */
} M;

/* A growing text buffer; on allocation failure it stops growing and says so. */
struct mbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void __attribute__((format(printf, 2, 3))) put(struct mbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0 || b->oom)
			return;
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 16384;
		char *p;

		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

static void family(struct mbuf *b, const char *name, const char *type, const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void xdp_metrics(struct mbuf *b, struct xtx_stats *s)
{
	unsigned int i, op, st;

	family(b, "xtx_xdp_events_total", "counter",
	       "Packets and events the XDP program counted, by kind (xtxctl stats names).");
	for (i = 0; i < XTX_CTR__COUNT; i++)
		put(b, "xtx_xdp_events_total{event=\"%s\"} %llu\n", xtx_counter_name(i),
		    (unsigned long long)s->ctr[i]);
	family(b, "xtx_ops_total", "counter", "Ops the XDP program answered, by op and status.");
	for (op = 0; op < XTX_OP__COUNT; op++)
		for (st = 0; st < XTX_ST__COUNT; st++)
			if (xtx_op_name(op) && s->op[op][st])
				put(b, "xtx_ops_total{op=\"%s\",status=\"%s\"} %llu\n",
				    xtx_op_name(op), xtx_status_name(st),
				    (unsigned long long)s->op[op][st]);
}

/*
 * Requests dropped for their MAC (xtxd --secret-file): forged or altered
 * ones, or a client with another secret.  A family of its own, so an alert
 * needs no event label; XDP's count is also event="bad_mac" above.
 */
static void mac_metrics(struct mbuf *b, const struct xtx_stats *s)
{
	struct xtxd_resolve_stats r;

	xtxd_resolve_get_stats(&r);
	family(b, "xtx_bad_mac_requests_total", "counter",
	       "Requests dropped because the cluster secret's MAC was missing or wrong, by where: "
	       "xdp (the data path), resolver (clients' questions on port + 1).");
	put(b, "xtx_bad_mac_requests_total{path=\"xdp\"} %llu\n",
	    (unsigned long long)s->ctr[XTX_CTR_BAD_MAC]);
	put(b, "xtx_bad_mac_requests_total{path=\"resolver\"} %llu\n",
	    (unsigned long long)r.client_bad_mac);
}

static void rare_metrics(struct mbuf *b, const struct xtx_stats *s)
{
	const struct xtxd_rare_stats *r = xtxd_rare_stats();
	struct xtxd_ovf *store = xtxd_rare_store();
	unsigned int op, st;
	double ops = (double)s->ctr[XTX_CTR_OPS];

	family(b, "xtx_rare_ops_total", "counter",
	       "Ops XDP handed to xtxd and xtxd completed, by op and final status.");
	for (op = 0; op < XTX_OP__COUNT; op++)
		for (st = 0; st < XTX_ST__COUNT; st++)
			if (xtx_op_name(op) && xtxd_stat_read(&r->op[op][st]))
				put(b, "xtx_rare_ops_total{op=\"%s\",status=\"%s\"} %llu\n",
				    xtx_op_name(op), xtx_status_name(st),
				    (unsigned long long)xtxd_stat_read(&r->op[op][st]));
	family(b, "xtx_rare_path_share", "gauge",
	       "Ops handed to xtxd over ops XDP executed, since the program was loaded.");
	put(b, "xtx_rare_path_share %.6f\n",
	    ops > 0 ? (double)s->ctr[XTX_CTR_KV_DEFERRED] / ops : 0.0);
	family(b, "xtx_overflow_keys", "gauge", "Keys in xtxd's overflow store.");
	put(b, "xtx_overflow_keys %llu\n", (unsigned long long)xtxd_ovf_count(store));
	family(b, "xtx_overflow_capacity_keys", "gauge", "Keys the overflow store may hold.");
	put(b, "xtx_overflow_capacity_keys %llu\n", (unsigned long long)xtxd_ovf_max(store));
}

/* A member of a cluster held in ZooKeeper (xtxd --zk): what it serves. */
static void cluster_metrics(struct mbuf *b)
{
	bool fenced;
	unsigned int epoch = xtxd_member_epoch(&fenced);

	family(b, "xtx_cluster_epoch", "gauge",
	       "Configuration epoch served (0: a static cluster, 65535: fenced).");
	put(b, "xtx_cluster_epoch %u\n", epoch);
	family(b, "xtx_cluster_fenced", "gauge",
	       "1 once the ZooKeeper session was lost: the server serves no epoch.");
	put(b, "xtx_cluster_fenced %d\n", fenced ? 1 : 0);
}

static void log_metrics(struct mbuf *b)
{
	struct xtxd_logdrain_stats l;
	uint64_t taken, failed;
	unsigned int i;

	xtxd_logdrain_get_stats(&l);
	family(b, "xtx_log_entries_total", "counter",
	       "Log entries XDP appended, and those the drain made durable and released.");
	put(b, "xtx_log_entries_total{state=\"appended\"} %llu\n",
	    (unsigned long long)l.appended);
	put(b, "xtx_log_entries_total{state=\"drained\"} %llu\n", (unsigned long long)l.drained);
	family(b, "xtx_log_lag_entries", "gauge",
	       "Entries appended but not yet on disk, over every CPU's log, at the last pass.");
	put(b, "xtx_log_lag_entries %llu\n", (unsigned long long)l.lag);
	family(b, "xtx_log_fill_max_entries", "gauge",
	       "The fullest any CPU's log was seen; at the capacity appends answer LOG_FULL.");
	put(b, "xtx_log_fill_max_entries %llu\n", (unsigned long long)l.max_lag);
	family(b, "xtx_log_capacity_entries", "gauge", "Entries each CPU's log holds.");
	put(b, "xtx_log_capacity_entries %llu\n", (unsigned long long)l.ring);
	family(b, "xtx_log_fsyncs_total", "counter", "fdatasync calls on log segments.");
	put(b, "xtx_log_fsyncs_total %llu\n", (unsigned long long)l.fsyncs);
	xtxd_snapshot_counts(&taken, &failed);
	family(b, "xtx_snapshots_total", "counter",
	       "Snapshots taken (xtxctl snapshot, --snapshot-every, a copy), and failed.");
	put(b, "xtx_snapshots_total{result=\"ok\"} %llu\n", (unsigned long long)taken);
	put(b, "xtx_snapshots_total{result=\"failed\"} %llu\n", (unsigned long long)failed);
	family(b, "xtx_log_sync_seconds", "histogram",
	       "Time of each sync round of the log drain (an fdatasync of every segment written "
	       "to): what a commit waits for at worst beyond --log-sync.");
	for (i = 0; i < XTXD_SYNC_BUCKETS; i++)
		put(b, "xtx_log_sync_seconds_bucket{le=\"%g\"} %llu\n",
		    xtxd_sync_bucket_us[i] / 1e6, (unsigned long long)l.sync_le[i]);
	put(b, "xtx_log_sync_seconds_bucket{le=\"+Inf\"} %llu\n",
	    (unsigned long long)l.sync_rounds);
	put(b, "xtx_log_sync_seconds_sum %.6f\n", l.sync_sum_ns / 1e9);
	put(b, "xtx_log_sync_seconds_count %llu\n", (unsigned long long)l.sync_rounds);
	family(b, "xtx_log_write_errors_total", "counter",
	       "Failed writes of log segments (retried; the ring fills meanwhile).");
	put(b, "xtx_log_write_errors_total %llu\n", (unsigned long long)l.write_errors);
	family(b, "xtx_log_failed", "gauge",
	       "1 once a failed fdatasync stopped the log drain: appends answer LOG_FULL from "
	       "then on; restart xtxd.");
	put(b, "xtx_log_failed %llu\n", (unsigned long long)l.failed);
	family(b, "xtx_log_written_bytes_total", "counter", "Log record bytes written.");
	put(b, "xtx_log_written_bytes_total %llu\n", (unsigned long long)l.bytes);
}

static void table_metrics(struct mbuf *b)
{
	struct xtx_lock_occupancy lo;
	struct xtx_hades_occupancy ho;

	if (!xtx_lock_occupancy(&M.t, &lo)) {
		family(b, "xtx_lock_slots", "gauge", "Slots in the lock table.");
		put(b, "xtx_lock_slots %llu\n", (unsigned long long)lo.slots);
		family(b, "xtx_locks_held", "gauge",
		       "Lock slots held, by mode (a slot may be shared and exclusive at once).");
		put(b, "xtx_locks_held{mode=\"any\"} %llu\n", (unsigned long long)lo.held);
		put(b, "xtx_locks_held{mode=\"shared\"} %llu\n", (unsigned long long)lo.shared);
		put(b, "xtx_locks_held{mode=\"exclusive\"} %llu\n",
		    (unsigned long long)lo.exclusive);
		put(b, "xtx_locks_held{mode=\"logged\"} %llu\n", (unsigned long long)lo.logged);
	}
	if (!xtx_hades_occupancy(&M.t, &ho)) {
		family(b, "xtx_hades_slots_in_use", "gauge",
		       "HADES transaction slots held, by state.");
		put(b, "xtx_hades_slots_in_use{state=\"any\"} %llu\n",
		    (unsigned long long)ho.in_use);
		put(b, "xtx_hades_slots_in_use{state=\"committing\"} %llu\n",
		    (unsigned long long)ho.committing);
	}
}

static void resolve_metrics(struct mbuf *b)
{
	struct xtxd_resolve_stats r;
	struct xtxd_settle_stats st;

	xtxd_resolve_get_stats(&r);
	family(b, "xtx_resolver_decisions_total", "counter",
	       "Transactions left unfinished that the resolver decided, by protocol and outcome.");
	put(b, "xtx_resolver_decisions_total{protocol=\"lock\",outcome=\"commit\"} %llu\n",
	    (unsigned long long)r.commits);
	put(b, "xtx_resolver_decisions_total{protocol=\"lock\",outcome=\"abort\"} %llu\n",
	    (unsigned long long)r.aborts);
	put(b, "xtx_resolver_decisions_total{protocol=\"hades\",outcome=\"commit\"} %llu\n",
	    (unsigned long long)r.hades_validated);
	put(b, "xtx_resolver_decisions_total{protocol=\"hades\",outcome=\"abort\"} %llu\n",
	    (unsigned long long)r.hades_aborted);
	family(b, "xtx_resolver_refused_total", "counter",
	       "Messages to the resolver port ignored: not from a listed server, malformed, "
	       "without the secret's seal, sent before, past a sender's ration for unknown "
	       "transactions, a client's question refused, or one without the secret's MAC.");
	put(b, "xtx_resolver_refused_total{reason=\"not_a_peer\"} %llu\n",
	    (unsigned long long)r.strangers);
	put(b, "xtx_resolver_refused_total{reason=\"malformed\"} %llu\n",
	    (unsigned long long)r.malformed);
	put(b, "xtx_resolver_refused_total{reason=\"bad_client\"} %llu\n",
	    (unsigned long long)r.client_refused);
	put(b, "xtx_resolver_refused_total{reason=\"bad_mac\"} %llu\n",
	    (unsigned long long)r.client_bad_mac);
	put(b, "xtx_resolver_refused_total{reason=\"unauthenticated\"} %llu\n",
	    (unsigned long long)r.unauthenticated);
	put(b, "xtx_resolver_refused_total{reason=\"replayed\"} %llu\n",
	    (unsigned long long)r.replayed);
	put(b, "xtx_resolver_refused_total{reason=\"throttled\"} %llu\n",
	    (unsigned long long)r.throttled);
	family(b, "xtx_resolver_client_questions_total", "counter",
	       "Clients' questions about their own transactions' outcomes, answered.");
	put(b, "xtx_resolver_client_questions_total %llu\n", (unsigned long long)r.client_asks);
	family(b, "xtx_recoveries_total", "counter",
	       "Reconfigurations that moved failed servers out, recovered here.");
	put(b, "xtx_recoveries_total %llu\n", (unsigned long long)r.reconfigurations);
	family(b, "xtx_recovered_transactions_total", "counter",
	       "Transactions a failed server replicated, decided here by those recoveries.");
	put(b, "xtx_recovered_transactions_total %llu\n", (unsigned long long)r.recovered);
	family(b, "xtx_decisions_pruned_total", "counter",
	       "Decisions dropped from decided.xdec: no log or peer can need them any more.");
	put(b, "xtx_decisions_pruned_total %llu\n", (unsigned long long)r.decisions_pruned);
	family(b, "xtx_decisions_kept", "gauge", "Decisions in decided.xdec after the last compaction.");
	put(b, "xtx_decisions_kept %llu\n", (unsigned long long)r.decisions_kept);
	family(b, "xtx_resolver_fences_total", "counter",
	       "Transactions fenced here because this server did not hold them.");
	put(b, "xtx_resolver_fences_total{protocol=\"lock\"} %llu\n",
	    (unsigned long long)r.fenced);
	put(b, "xtx_resolver_fences_total{protocol=\"hades\"} %llu\n",
	    (unsigned long long)r.hades_fenced);
	xtxd_settle_get_stats(&st);
	family(b, "xtx_settled_writes_total", "counter",
	       "Writes logged on this server alone that their coordinators never installed, "
	       "installed here after --resolve-after (as a restart's recovery would).");
	put(b, "xtx_settled_writes_total %llu\n", (unsigned long long)st.installed);
	family(b, "xtx_settle_pending", "gauge",
	       "Writes logged on this server alone, younger than --resolve-after, not yet looked at.");
	put(b, "xtx_settle_pending %llu\n", (unsigned long long)st.tracked);
}

/* The whole exposition; NULL when memory ran out. */
char *xtxd_metrics_text(size_t *len)
{
	struct mbuf b = {};
	struct xtx_stats s;
	int fd = xtx_target_map_fd(&M.t, XTX_MAP_STATS);

	family(&b, "xtx_up", "gauge", "1 while xtxd serves; the scrape itself says it is up.");
	put(&b, "xtx_up 1\n");
	family(&b, "xtx_build_info", "gauge", "The release and the commit this xtxd was built from.");
	put(&b, "xtx_build_info{version=\"%s\",build=\"%s\"} 1\n", xtx_version, xtx_build);
	if (fd >= 0 && !xtx_stats_sum(fd, &s)) {
		xdp_metrics(&b, &s);
		mac_metrics(&b, &s);
		rare_metrics(&b, &s);
	}
	if (fd >= 0)
		close(fd);
	log_metrics(&b);
	cluster_metrics(&b);
	table_metrics(&b);
	resolve_metrics(&b);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

void xtxd_metrics_set_state(enum xtxd_serve_state st)
{
	__atomic_store_n(&M.state, (int)st, __ATOMIC_RELEASE);
}

/*
 * /healthz (liveness): the process answers and its log still drains; a drain
 * stopped by a failed fdatasync (fail-stop) needs a restart.  /readyz
 * (readiness): recovered and serving, and, in a cluster, an epoch (not
 * fenced).  200 with "ok ..." or 503 with the reason.
 */
static char *health(bool ready, unsigned int *code)
{
	struct xtxd_logdrain_stats l;
	const char *why = NULL;
	unsigned int epoch;
	char *text = NULL;
	bool fenced;
	int st = __atomic_load_n(&M.state, __ATOMIC_ACQUIRE);

	xtxd_logdrain_get_stats(&l);
	epoch = xtxd_member_epoch(&fenced);
	if (l.failed)
		why = "log drain stopped: a sync of the log failed; restart xtxd";
	else if (ready && st == XTXD_STARTING)
		why = "not ready: starting (recovering the store)";
	else if (ready && st == XTXD_STOPPING)
		why = "not ready: stopping";
	else if (ready && fenced)
		why = "not ready: fenced (its ZooKeeper session was lost; restart xtxd)";
	else if (ready && !xtxd_member_serving())
		why = "not ready: out of its lease (ZooKeeper not heard from) or taking shards "
		      "over";
	*code = why ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK;
	if (why ? asprintf(&text, "%s\n", why) < 0 :
	    ready ? asprintf(&text, "ok: serving epoch %u\n", epoch) < 0 :
		    asprintf(&text, "ok: alive\n") < 0)
		return NULL;
	return text;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned int code = MHD_HTTP_OK;
	size_t len = 0;
	char *text;

	(void)cls, (void)version, (void)upload, (void)upload_len, (void)state;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		text = strdup("only GET /metrics, /healthz, /readyz\n");
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz")) {
		text = health(!strcmp(url, "/readyz"), &code);
		if (text)
			len = strlen(text);
	} else if (strcmp(url, "/metrics")) {
		text = strdup("not found: the metrics are at /metrics; /healthz is liveness, "
			      "/readyz readiness\n");
		code = MHD_HTTP_NOT_FOUND;
	} else {
		text = xtxd_metrics_text(&len);
		if (!text) {
			text = strdup("out of memory\n");
			code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		}
	}
	if (!text)
		return MHD_NO;
	if (code != MHD_HTTP_OK)
		len = strlen(text);
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type",
				code == MHD_HTTP_OK && !strcmp(url, "/metrics") ?
					"text/plain; version=0.0.4" : "text/plain");
	ret = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

int xtxd_metrics_parse(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	uint32_t port;

	memset(sa, 0, sizeof(*sa));
	if (!colon || (size_t)(colon - s) >= sizeof(host)) {
		fprintf(stderr, "Error: --metrics: '%s' is not ADDR:PORT\n", s);
		return -EINVAL;
	}
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	sa->sin_family = AF_INET;
	if (inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &sa->sin_addr) != 1) {
		fprintf(stderr, "Error: --metrics: '%s' is not an IPv4 address\n", host);
		return -EINVAL;
	}
	if (xtx_parse_u32("--metrics port", colon + 1, 1, 65535, &port))
		return -EINVAL;
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

int xtxd_metrics_start(const struct xtx_target *t, const struct sockaddr_in *sa)
{
	char a[INET_ADDRSTRLEN];

	M.t = *t;
	/* one thread of its own, bound where asked (inside the server's netns, like xtxd) */
	M.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
			       answer, NULL, MHD_OPTION_SOCK_ADDR, sa,
			       MHD_OPTION_CONNECTION_LIMIT, 16u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
			       MHD_OPTION_END);
	inet_ntop(AF_INET, &sa->sin_addr, a, sizeof(a));
	if (!M.d) {
		fprintf(stderr, "Error: --metrics: cannot serve HTTP on %s:%u (in use?)\n", a,
			ntohs(sa->sin_port));
		return -EADDRINUSE;
	}
	pr_info("metrics on http://%s:%u/metrics (and /healthz, /readyz)\n", a,
		ntohs(sa->sin_port));
	return 0;
}

void xtxd_metrics_stop(void)
{
	if (M.d)
		MHD_stop_daemon(M.d);
	M.d = NULL;
}
