// SPDX-License-Identifier: GPL-2.0-only
/*
 * xtxbench bank: money transfers between a few hot accounts through libxtx,
 * with audits that read every account in one transaction.
 *
 * Money is conserved by every transfer, so the total never changes: a
 * committed audit that sees another total, or a final total that differs,
 * is a serializability bug (a lost update, a torn commit, an op applied
 * twice).  Few accounts and many transactions in flight make the
 * conflicts that exercise aborts, lock releases and validation.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench.h"
#include "clock.h"
#include "benchthread.h"
#include "cpustat.h"
#include "hist.h"
#include "doubts.h"
#include "histrec.h"
#include "ids.h"
#include <xtx/maps.h>
#include "libxtx.h"
#include "num.h"
#include "secret.h"
#include "runner.h"
#include "servers.h"
#include "transport.h"
#include "zk.h"
#include "zkcluster.h"

#define BANK_MAX_THREADS	64
#define BANK_PUBLISH_NS		(50 * 1000 * 1000ull)
/* After the run: how long in-flight transactions get to finish. */
#define BANK_DRAIN_NS		(20 * 1000 * 1000 * 1000ull)
/* ... and how long the servers get to say what became of one left in doubt. */
#define BANK_RESOLVE_NS		(5 * 1000 * 1000 * 1000ull)

struct bank_opts {
	struct sockaddr_in *servers;
	unsigned int nservers;
	struct xtx_cluster *cluster;	/* --zk: the cluster's map; NULL: static */
	struct bench_zk_source zk;	/* --zk: where to read it again */
	uint16_t port;
	enum xtx_protocol protocol;
	enum xtx_transport_kind transport;
	uint32_t replication;
	uint32_t threads;
	uint32_t inflight;
	uint32_t ops_per_packet;
	uint32_t accounts;
	uint32_t table;
	uint64_t initial;
	uint32_t audit_pct;
	uint64_t duration_ns;
	uint64_t seed;
	uint32_t client_base;
	uint64_t lease_ns;
	uint64_t timeout_ns;
	bool has_secret;		/* --secret-file */
	uint32_t dup_ppm, reorder_ppm;	/* --fault-dup-ppm, --fault-reorder-ppm */
	uint32_t dup_cpu_ppm;		/* --fault-dup-cpu-ppm */
	struct xtx_secret secret;
	const char *history;	/* --history BASE */
	bool check;
	bool setup;
	bool json;
};

/* Per-thread counters: uint64_t only (see benchthread.h). */
struct bank_counts {
	uint64_t started;
	uint64_t transfers;	/* committed */
	uint64_t audits;	/* committed */
	uint64_t aborted[XTX_CAUSE__COUNT];
	uint64_t failed;
	uint64_t bad_audits;	/* committed audits with the wrong total */
	uint64_t missing;	/* transactions that found an account missing */
	uint64_t packets, ops, retransmits, rw_packets, rw_ops, rw_rounds;
	uint64_t duplicated, reordered;	/* requests the test faults sent twice, held back */
	/* --fault-dup-cpu-ppm: as struct xtx_client_stats has them */
	uint64_t dup_cpu_sent, dup_cpu_apart, dup_cpu_busy, dup_cpu_compared, dup_cpu_mismatched;
	uint64_t frames_malformed, udp_fallback;	/* AF_XDP */
	uint64_t reconfigurations;	/* newer cluster configurations taken on (--zk) */
};
#define BANK_NCOUNTS (sizeof(struct bank_counts) / sizeof(uint64_t))

struct bank_txn {
	struct bank_thread *th;
	bool audit;
	uint32_t from, to;
	int64_t amount;
	int64_t seen_total;
	bool read_bad;		/* an account was missing */
	int h[XTX_TXN_MAX_KEYS];
	uint64_t start_ns;
};

struct bank_thread {
	struct bench_thread bt;
	const struct bank_opts *o;
	struct xtx_client *cl;
	struct bank_counts cnt, pub;
	uint64_t rng;
	struct bank_txn *ctx;
	struct bank_txn **free_ctx;
	unsigned int nfree;
	int err;
	struct history_writer *hist;	/* --history, or NULL */
	bool hist_err;
	struct doubts doubts;		/* ended in doubt: asked about after the run */
};

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void put_balance(uint8_t *v, int64_t b)
{
	memcpy(v, &b, sizeof(b));
}

static int64_t get_balance(const void *v)
{
	int64_t b;

	memcpy(&b, v, sizeof(b));
	return b;
}

/* The accounts an audit reads: all of them when they fit in one transaction. */
static unsigned int audit_width(const struct bank_opts *o)
{
	return o->accounts <= XTX_TXN_MAX_KEYS ? o->accounts : 0;
}

static enum xtx_step transfer_step(struct xtx_txn *t, struct bank_txn *x)
{
	const struct bank_opts *o = x->th->o;
	const void *v;
	uint16_t vlen;
	uint8_t buf[8];
	int64_t a, b;

	if (xtx_txn_round(t) == 0) {
		x->h[0] = xtx_get(t, (uint8_t)o->table, x->from, XTX_GET_FOR_UPDATE);
		x->h[1] = xtx_get(t, (uint8_t)o->table, x->to, XTX_GET_FOR_UPDATE);
		return XTX_STEP_READ;
	}
	if (xtx_value(t, x->h[0], &v, &vlen) || vlen != 8) {
		x->read_bad = true;
		return XTX_STEP_ABORT;
	}
	a = get_balance(v);
	if (xtx_value(t, x->h[1], &v, &vlen) || vlen != 8) {
		x->read_bad = true;
		return XTX_STEP_ABORT;
	}
	b = get_balance(v);
	put_balance(buf, a - x->amount);
	xtx_put(t, (uint8_t)o->table, x->from, buf, 8);
	put_balance(buf, b + x->amount);
	xtx_put(t, (uint8_t)o->table, x->to, buf, 8);
	return XTX_STEP_COMMIT;
}

static enum xtx_step audit_step(struct xtx_txn *t, struct bank_txn *x)
{
	const struct bank_opts *o = x->th->o;
	unsigned int i, n = audit_width(o);
	const void *v;
	uint16_t vlen;

	if (xtx_txn_round(t) == 0) {
		for (i = 0; i < n; i++)
			x->h[i] = xtx_get(t, (uint8_t)o->table, i, 0);
		return XTX_STEP_READ;
	}
	x->seen_total = 0;
	for (i = 0; i < n; i++) {
		if (xtx_value(t, x->h[i], &v, &vlen) || vlen != 8) {
			x->read_bad = true;
			return XTX_STEP_ABORT;
		}
		x->seen_total += get_balance(v);
	}
	return XTX_STEP_COMMIT;
}

static enum xtx_step bank_step(struct xtx_txn *t, void *arg)
{
	struct bank_txn *x = arg;

	return x->audit ? audit_step(t, x) : transfer_step(t, x);
}

static int64_t bank_total(const struct bank_opts *o)
{
	return (int64_t)o->accounts * (int64_t)o->initial;
}

static void bank_done(struct xtx_txn *t, const struct xtx_txn_result *res, void *arg)
{
	struct bank_txn *x = arg;
	struct bank_thread *th = x->th;

	/* in doubt: recorded once the servers say what became of it */
	if (res->outcome == XTX_IN_DOUBT) {
		if (doubts_keep(&th->doubts, t, res) && th->hist)
			th->hist_err = true;	/* its record is lost */
	} else if (th->hist && !th->hist_err && histrec_txn(th->hist, t, res)) {
		th->hist_err = true;
	}
	xtx_hist_add(&th->bt.recent, res->latency_ns);
	if (x->read_bad) {
		bench_bad_reply(&th->bt, &th->cnt.missing, &th->o->servers[0],
				"an account is missing or not 8 bytes (--no-setup without accounts?)");
	}
	if (res->outcome == XTX_COMMITTED) {
		if (!x->audit) {
			th->cnt.transfers++;
		} else {
			th->cnt.audits++;
			if (x->seen_total != bank_total(th->o))
				bench_bad_reply(&th->bt, &th->cnt.bad_audits, &th->o->servers[0],
						"audit saw total %" PRId64 ", expected %" PRId64,
						x->seen_total, bank_total(th->o));
		}
	} else if (res->outcome == XTX_ABORTED) {
		th->cnt.aborted[res->cause]++;
	} else {
		th->cnt.failed++;
	}
	th->free_ctx[th->nfree++] = x;
}

static int start_one(struct bank_thread *th)
{
	const struct bank_opts *o = th->o;
	struct bank_txn *x;
	int err;

	if (!th->nfree)
		return -EBUSY;
	x = th->free_ctx[--th->nfree];
	memset(x, 0, sizeof(*x));
	x->th = th;
	x->audit = audit_width(o) && rng_next(&th->rng) % 100 < o->audit_pct;
	x->from = (uint32_t)(rng_next(&th->rng) % o->accounts);
	x->to = (uint32_t)((x->from + 1 + rng_next(&th->rng) % (o->accounts - 1)) % o->accounts);
	x->amount = (int64_t)(rng_next(&th->rng) % 100) + 1;
	err = xtx_txn_start(th->cl, bank_step, bank_done, x);
	if (err) {
		th->free_ctx[th->nfree++] = x;
		return err;
	}
	th->cnt.started++;
	return 0;
}

static void snapshot_stats(struct bank_thread *th)
{
	const struct xtx_client_stats *s = xtx_client_stats(th->cl);

	th->cnt.packets = s->packets;
	th->cnt.ops = s->ops;
	th->cnt.retransmits = s->retransmits;
	th->cnt.rw_packets = s->packets_rw_committed;
	th->cnt.rw_ops = s->ops_rw_committed;
	th->cnt.rw_rounds = s->rounds_rw_committed;
	th->cnt.duplicated = s->duplicated;
	th->cnt.reordered = s->reordered;
	th->cnt.dup_cpu_sent = s->dup_cpu_sent;
	th->cnt.dup_cpu_apart = s->dup_cpu_apart;
	th->cnt.dup_cpu_busy = s->dup_cpu_busy;
	th->cnt.dup_cpu_compared = s->dup_cpu_compared;
	th->cnt.dup_cpu_mismatched = s->dup_cpu_mismatched;
	th->cnt.frames_malformed = s->frames_malformed;
	th->cnt.udp_fallback = s->udp_fallback;
	th->cnt.reconfigurations = s->reconfigurations;
}

static void *bank_thread_main(void *arg)
{
	struct bank_thread *th = arg;
	uint64_t next_pub = 0, deadline;
	int n;

	while (!xtx_run_stopping()) {
		while (start_one(th) == 0)
			;
		n = xtx_poll(th->cl, 1000000);
		if (n < 0) {
			th->err = n;
			break;
		}
		if (xtx_now_ns() >= next_pub) {
			snapshot_stats(th);
			bench_publish(&th->bt, &th->pub, &th->cnt, sizeof(th->cnt));
			next_pub = xtx_now_ns() + BANK_PUBLISH_NS;
		}
	}
	/* every started transaction gets its outcome: none is left half-done */
	deadline = xtx_now_ns() + BANK_DRAIN_NS;
	while (xtx_inflight(th->cl) && xtx_now_ns() < deadline)
		if (xtx_poll(th->cl, 1000000) < 0)
			break;
	snapshot_stats(th);
	bench_publish(&th->bt, &th->pub, &th->cnt, sizeof(th->cnt));
	return NULL;
}

static struct xtx_client *open_client(const struct bank_opts *o, uint32_t client_id,
				      unsigned int inflight)
{
	struct xtx_client_cfg cfg = {
		.servers = o->servers,
		.nservers = o->nservers,
		.replication = o->replication,
		.protocol = o->protocol,
		.client_id = client_id,
		.max_inflight = inflight,
		.ops_per_packet = o->ops_per_packet,
		.timeout_ns = o->timeout_ns,
		.lock_lease_ns = o->lease_ns,
		.secret = o->has_secret ? &o->secret : NULL,
		.cluster = o->cluster,
		/* a newer epoch: the manager moved shards; read where they are now */
		.refresh = o->cluster ? bench_zk_refresh : NULL,
		.refresh_arg = (void *)&o->zk,
		.fault_dup_ppm = o->dup_ppm,
		.fault_reorder_ppm = o->reorder_ppm,
		.fault_dup_cpu_ppm = o->dup_cpu_ppm,
		.transport = o->transport,
	};

	return xtx_client_open(&cfg);
}

/* One transaction per group of accounts: put the initial balance. */
struct setup_arg {
	const struct bank_opts *o;
	uint32_t first, n;
};

static enum xtx_step setup_step(struct xtx_txn *t, void *arg)
{
	struct setup_arg *s = arg;
	uint8_t buf[8];
	uint32_t i;

	put_balance(buf, (int64_t)s->o->initial);
	for (i = 0; i < s->n; i++)
		xtx_put(t, (uint8_t)s->o->table, s->first + i, buf, 8);
	return XTX_STEP_COMMIT;
}

static int bank_setup(const struct bank_opts *o, struct xtx_client *cl)
{
	struct xtx_txn_result res;
	uint32_t first;

	for (first = 0; first < o->accounts;) {
		struct setup_arg s = { .o = o, .first = first, .n = o->accounts - first };
		enum xtx_outcome out;

		/* HADES stages at most 8 writes per transaction and server */
		if (s.n > 8)
			s.n = 8;
		out = xtx_run(cl, setup_step, &s, &res);
		if (out == XTX_COMMITTED) {
			first += s.n;
			continue;
		}
		if (out == XTX_FAILED) {
			fprintf(stderr, "Error: bank: creating accounts: servers unreachable\n");
			return -1;
		}
		/* a conflict with a concurrent run: try again; anything else is final */
		if (res.cause == XTX_CAUSE_MIXED)
			usleep(10000);	/* the table is switching protocols: give it time */
		if (!xtx_cause_retryable(res.cause)) {
			fprintf(stderr, "Error: bank: creating accounts: aborted (%s)\n",
				xtx_cause_name(res.cause));
			return -1;
		}
	}
	return 0;
}

/* The final check: read every account (no writers now) and sum. */
struct sum_arg {
	const struct bank_opts *o;
	uint32_t first, n;
	int h[XTX_TXN_MAX_KEYS];
	int64_t sum;
	uint32_t missing;
};

static enum xtx_step sum_step(struct xtx_txn *t, void *arg)
{
	struct sum_arg *s = arg;
	const void *v;
	uint16_t vlen;
	uint32_t i;

	if (xtx_txn_round(t) == 0) {
		for (i = 0; i < s->n; i++)
			s->h[i] = xtx_get(t, (uint8_t)s->o->table, s->first + i, 0);
		return XTX_STEP_READ;
	}
	s->sum = 0;
	s->missing = 0;
	for (i = 0; i < s->n; i++) {
		if (xtx_value(t, s->h[i], &v, &vlen) || vlen != 8)
			s->missing++;
		else
			s->sum += get_balance(v);
	}
	return XTX_STEP_COMMIT;
}

/* A read-only check that failed wrote nothing: tried again this often (a server may be moving). */
#define CHECK_TRIES	20
/*
 * ... and reads aborted by locks, for this long before the check gives up:
 * a cluster restarted whole holds the keys of transactions it left
 * undecided until every replica is back to decide them (xtxd's
 * log/undecided.h), which takes as long as the slowest one's recovery.
 */
#define CHECK_ABORTS_NS	(90ull * 1000 * 1000 * 1000)

static int bank_check(const struct bank_opts *o, struct xtx_client *cl, int64_t *total)
{
	uint32_t first, missing = 0, failed = 0, aborted = 0;
	uint64_t abort_until = 0;

	*total = 0;
	for (first = 0; first < o->accounts;) {
		struct sum_arg s = { .o = o, .first = first, .n = o->accounts - first };

		if (s.n > XTX_TXN_MAX_KEYS)
			s.n = XTX_TXN_MAX_KEYS;
		switch (xtx_run(cl, sum_step, &s, NULL)) {
		case XTX_COMMITTED:
			*total += s.sum;
			missing += s.missing;
			first += s.n;
			break;
		case XTX_ABORTED:
			/* validation failed: someone else still writes, or holds, the accounts */
			aborted++;
			if (!abort_until)
				abort_until = xtx_now_ns() + CHECK_ABORTS_NS;
			if (xtx_now_ns() < abort_until) {
				usleep(1000);
				break;
			}
			fprintf(stderr, "Error: bank: check: %u reads of the accounts aborted: "
				"another client still writes them\n", aborted);
			return -1;
		case XTX_FAILED:
			/* a cluster in ZooKeeper may be moving a failed server's shards */
			if (++failed < CHECK_TRIES) {
				usleep(100000);
				break;
			}
			/* fall through */
		default:
			fprintf(stderr, "Error: bank: check: servers unreachable\n");
			return -1;
		}
	}
	if (missing) {
		fprintf(stderr, "FAIL: bank check: %u accounts missing\n", missing);
		return -1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench bank --servers IP[,IP...] [options]\n"
		"Transfers between accounts through libxtx; money must be conserved.\n\n"
		"  -s, --servers LIST       server addresses, the same order on every client\n"
		"      --zk HOST:PORT[,...] instead: the servers, replication and shard map of the\n"
		"                           cluster held by this ZooKeeper ensemble\n"
		"      --zk-name NAME       the cluster's name there (default xtx)\n"
		"  -p, --port N             server UDP port (default %u)\n"
		"  -P, --protocol NAME      occ, 2pl or hades (default occ)\n"
		"  -R, --replication N      replicas per key (default min(3, servers))\n"
		"      --transport T        udp (default) or afxdp: AF_XDP sockets on the\n"
		"                           interfaces the routes use (root, native XDP)\n"
		"  -t, --threads N          client threads (default 1)\n"
		"  -i, --inflight N         transactions in flight per thread (default 16)\n"
		"  -k, --ops-per-packet N   1..16; 1 turns aggregation off (default 16)\n"
		"  -a, --accounts N         accounts (default 16; audits need at most %u)\n"
		"      --initial N          initial balance of each account (default 1000)\n"
		"      --audit-pct N        share of audit transactions (default 10)\n"
		"      --table N            table of the accounts (default 15)\n"
		"  -d, --duration T         run time, e.g. 5s (default 5s)\n"
		"      --seed N             random seed (default 1)\n"
		"  -c, --client-base N      first client id (default derived from the pid)\n"
		"      --secret-file PATH   the cluster's shared secret (xtxd --secret-file)\n"
		"      --fault-dup-ppm N, --fault-reorder-ppm N\n"
		"                           tests: send that share (per million) of requests\n"
		"                           twice, or hold them back behind later ones\n"
		"      --fault-dup-cpu-ppm N\n"
		"                           tests: send that share twice at once, the copy from\n"
		"                           another CPU, and compare the two answers (a mismatch\n"
		"                           fails the run; UDP, two CPUs)\n"
		"      --lease T            keep to a lock lease shorter than the servers' (default:\n"
		"                           the one they tell)\n"
		"      --timeout T          resend after this long (default 2ms)\n"
		"      --no-setup           the accounts exist already: do not create them\n"
		"  -C, --check              verify the total after the run; fail if it changed\n"
		"      --history BASE       record every transaction in BASE.<client id> for\n"
		"                           `xtxbench check-history BASE.*`\n"
		"  -j, --json               print the summary as JSON\n"
		"  -h, --help\n",
		XTX_DEFAULT_PORT, XTX_TXN_MAX_KEYS);
}

enum { OPT_INITIAL = 256, OPT_AUDIT, OPT_TABLE, OPT_SEED, OPT_LEASE, OPT_TIMEOUT, OPT_NOSETUP,
       OPT_HISTORY, OPT_SECRET_FILE, OPT_DUP, OPT_REORDER, OPT_ZK, OPT_ZK_NAME,
       OPT_TRANSPORT, OPT_DUP_CPU };

static int parse_args(int argc, char **argv, struct bank_opts *o)
{
	static const struct option longopts[] = {
		{ "servers", required_argument, NULL, 's' },
		{ "zk", required_argument, NULL, OPT_ZK },
		{ "zk-name", required_argument, NULL, OPT_ZK_NAME },
		{ "port", required_argument, NULL, 'p' },
		{ "protocol", required_argument, NULL, 'P' },
		{ "replication", required_argument, NULL, 'R' },
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "threads", required_argument, NULL, 't' },
		{ "inflight", required_argument, NULL, 'i' },
		{ "ops-per-packet", required_argument, NULL, 'k' },
		{ "accounts", required_argument, NULL, 'a' },
		{ "initial", required_argument, NULL, OPT_INITIAL },
		{ "audit-pct", required_argument, NULL, OPT_AUDIT },
		{ "table", required_argument, NULL, OPT_TABLE },
		{ "duration", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "client-base", required_argument, NULL, 'c' },
		{ "lease", required_argument, NULL, OPT_LEASE },
		{ "secret-file", required_argument, NULL, OPT_SECRET_FILE },
		{ "fault-dup-ppm", required_argument, NULL, OPT_DUP },
		{ "fault-reorder-ppm", required_argument, NULL, OPT_REORDER },
		{ "fault-dup-cpu-ppm", required_argument, NULL, OPT_DUP_CPU },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "no-setup", no_argument, NULL, OPT_NOSETUP },
		{ "check", no_argument, NULL, 'C' },
		{ "history", required_argument, NULL, OPT_HISTORY },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *servers = NULL, *zk = NULL, *zk_name = XTX_ZK_NAME_DEFAULT;
	uint32_t port = XTX_DEFAULT_PORT;
	bool base_set = false;
	int c, err = 0;

	*o = (struct bank_opts){
		.protocol = XTX_PROTO_OCC, .threads = 1, .inflight = 16,
		.ops_per_packet = XTX_MAX_OPS, .accounts = 16, .table = 15, .initial = 1000,
		.audit_pct = 10, .duration_ns = 5000000000ull, .seed = 1, .setup = true,
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:p:P:R:t:i:k:a:d:c:Cjh", longopts, NULL)) != -1) {
		switch (c) {
		case 's': servers = optarg; break;
		case OPT_ZK: zk = optarg; break;
		case OPT_ZK_NAME: zk_name = optarg; break;
		case 'p': err = xtx_parse_u32("--port", optarg, 1, 65535, &port); break;
		case 'P':
			if (xtx_protocol_parse(optarg, &o->protocol)) {
				fprintf(stderr, "Error: --protocol: occ, 2pl or hades, not '%s'\n", optarg);
				err = -1;
			}
			break;
		case 'R': err = xtx_parse_u32("--replication", optarg, 1, 3, &o->replication); break;
		case OPT_TRANSPORT:
			err = xtx_transport_parse(optarg, &o->transport);
			if (err)
				fprintf(stderr, "Error: --transport: '%s' is not udp or afxdp\n", optarg);
			break;
		case 't':
			err = xtx_parse_u32("--threads", optarg, 1, BANK_MAX_THREADS, &o->threads);
			break;
		case 'i': err = xtx_parse_u32("--inflight", optarg, 1, 4096, &o->inflight); break;
		case 'k':
			err = xtx_parse_u32("--ops-per-packet", optarg, 1, XTX_MAX_OPS,
					    &o->ops_per_packet);
			break;
		case 'a':
			err = xtx_parse_u32("--accounts", optarg, 2, 100000000, &o->accounts);
			break;
		case OPT_INITIAL:
			err = xtx_parse_u64("--initial", optarg, 0, 1ull << 40, &o->initial);
			break;
		case OPT_AUDIT: err = xtx_parse_u32("--audit-pct", optarg, 0, 100, &o->audit_pct); break;
		case OPT_TABLE:
			err = xtx_parse_u32("--table", optarg, 0, XTX_MAX_TABLES - 1, &o->table);
			break;
		case 'd': err = xtx_parse_duration("--duration", optarg, &o->duration_ns); break;
		case OPT_SEED: err = xtx_parse_u64("--seed", optarg, 1, UINT64_MAX, &o->seed); break;
		case 'c':
			err = xtx_parse_u32("--client-base", optarg, 0, (1u << XTX_CLIENT_BITS) - 1,
					    &o->client_base);
			base_set = true;
			break;
		case OPT_LEASE: err = xtx_parse_duration("--lease", optarg, &o->lease_ns); break;
		case OPT_DUP:
			err = xtx_parse_u32("--fault-dup-ppm", optarg, 0, 1000000, &o->dup_ppm);
			break;
		case OPT_REORDER:
			err = xtx_parse_u32("--fault-reorder-ppm", optarg, 0, 1000000,
					    &o->reorder_ppm);
			break;
		case OPT_DUP_CPU:
			err = xtx_parse_u32("--fault-dup-cpu-ppm", optarg, 0, 1000000,
					    &o->dup_cpu_ppm);
			break;
		case OPT_SECRET_FILE:
			err = xtx_secret_read(optarg, &o->secret);
			o->has_secret = !err;
			break;
		case OPT_TIMEOUT: err = xtx_parse_duration("--timeout", optarg, &o->timeout_ns); break;
		case OPT_NOSETUP: o->setup = false; break;
		case 'C': o->check = true; break;
		case OPT_HISTORY:
			if (!*optarg) {
				fprintf(stderr, "Error: --history: empty path\n");
				err = -1;
			}
			o->history = optarg;
			break;
		case 'j': o->json = true; break;
		case 'h': usage(stdout); exit(BENCH_EXIT_OK);
		default: usage(stderr); return -1;
		}
		if (err)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "Error: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (bench_pick_servers(servers, zk, zk_name, (uint16_t)port, &o->servers, &o->nservers,
			       &o->replication, &o->cluster, &o->zk))
		return -1;
	o->port = (uint16_t)port;
	if (!base_set)
		o->client_base = xtx_client_base_default(o->threads + 1);
	return 0;
}

struct bank_progress {
	struct bank_thread *th;
	unsigned int n;
	struct bank_counts prev;
};

static uint64_t sum_aborts(const struct bank_counts *c)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < XTX_CAUSE__COUNT; i++)
		n += c->aborted[i];
	return n;
}

static void gather(struct bank_thread *th, unsigned int n, struct bank_counts *sum,
		   struct xtx_hist *h)
{
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < n; i++)
		bench_gather(&th[i].bt, (uint64_t *)sum, (const uint64_t *)&th[i].pub,
			     BANK_NCOUNTS, h);
}

static void progress_tick(void *ctx, unsigned int sec, double dt)
{
	struct bank_progress *p = ctx;
	struct bank_counts cur;
	struct xtx_hist h;
	uint64_t done, ab;

	xtx_hist_reset(&h);
	gather(p->th, p->n, &cur, &h);
	done = cur.transfers + cur.audits - p->prev.transfers - p->prev.audits;
	ab = sum_aborts(&cur) - sum_aborts(&p->prev);
	fprintf(stderr, "t=%us  committed/s=%.0f  aborts=%.1f%%  p50=%.1fus p99=%.1fus  "
		"ops/pkt=%.1f  retrans=%" PRIu64 "\n", sec, done / dt,
		done + ab ? 100.0 * ab / (done + ab) : 0.0,
		xtx_hist_percentile(&h, 50) / 1e3, xtx_hist_percentile(&h, 99) / 1e3,
		cur.packets - p->prev.packets ?
			(double)(cur.ops - p->prev.ops) / (cur.packets - p->prev.packets) : 0.0,
		cur.retransmits - p->prev.retransmits);
	p->prev = cur;
}

static void print_summary(const struct bank_opts *o, const struct bank_counts *c,
			  const struct xtx_hist *h, double run_s, const struct xtx_cpustat *cpu0,
			  const struct xtx_cpustat *cpu1)
{
	uint64_t committed = c->transfers + c->audits, ab = sum_aborts(c);
	double ops_pkt = c->packets ? (double)c->ops / c->packets : 0;
	double pkt_txn = committed ? (double)c->packets / committed : 0;
	double rw_pkt_txn = c->transfers ? (double)c->rw_packets / c->transfers : 0;
	unsigned int i;

	if (o->json) {
		printf("{\"protocol\":\"%s\",\"ops_per_packet_max\":%u,\"threads\":%u,"
		       "\"inflight\":%u,\"seconds\":%.3f,\"committed\":%" PRIu64 ","
		       "\"committed_per_s\":%.0f,\"transfers\":%" PRIu64 ",\"audits\":%" PRIu64
		       ",\"aborted\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"bad_audits\":%" PRIu64
		       ",\"missing\":%" PRIu64
		       ",\"packets\":%" PRIu64 ",\"ops\":%" PRIu64 ",\"ops_per_packet\":%.2f,"
		       "\"packets_per_committed\":%.2f,\"packets_per_committed_rw\":%.2f,"
		       "\"ops_per_committed_rw\":%.2f,\"rounds_per_committed_rw\":%.2f,"
		       "\"retransmits\":%" PRIu64 ",\"duplicated\":%" PRIu64 ",\"reordered\":%" PRIu64
		       ",\"dup_cpu_sent\":%" PRIu64 ",\"dup_cpu_apart\":%" PRIu64 ",\"dup_cpu_busy\":%"
		       PRIu64 ",\"dup_cpu_compared\":%" PRIu64 ",\"dup_cpu_mismatched\":%" PRIu64
		       ",\"reconfigurations\":%" PRIu64 ",\"transport\":\"%s\",\"frames_malformed\":%"
		       PRIu64 ",\"udp_fallback\":%" PRIu64 ",\"lat_avg_us\":%.1f,\"p50_us\":%.1f,"
		       "\"p99_us\":%.1f,\"aborts\":{",
		       xtx_protocol_name(o->protocol), o->ops_per_packet, o->threads, o->inflight,
		       run_s, committed, committed / run_s, c->transfers, c->audits, ab, c->failed,
		       c->bad_audits, c->missing, c->packets, c->ops, ops_pkt, pkt_txn, rw_pkt_txn,
		       c->transfers ? (double)c->rw_ops / c->transfers : 0,
		       c->transfers ? (double)c->rw_rounds / c->transfers : 0,
		       c->retransmits, c->duplicated, c->reordered, c->dup_cpu_sent,
		       c->dup_cpu_apart, c->dup_cpu_busy, c->dup_cpu_compared,
		       c->dup_cpu_mismatched, c->reconfigurations,
		       xtx_transport_name(o->transport), c->frames_malformed, c->udp_fallback,
		       xtx_hist_mean(h) / 1e3, xtx_hist_percentile(h, 50) / 1e3,
		       xtx_hist_percentile(h, 99) / 1e3);
		for (i = 1; i < XTX_CAUSE__COUNT; i++)
			printf("%s\"%s\":%" PRIu64, i > 1 ? "," : "", xtx_cause_name(i),
			       c->aborted[i]);
		printf("},\"cpu_util\":");
		xtx_cpustat_print(stdout, cpu0, cpu1, 1);
		printf("}\n");
		return;
	}
	printf("bank %s: %u threads x %u in flight, %u accounts, up to %u ops/packet, %.1fs\n",
	       xtx_protocol_name(o->protocol), o->threads, o->inflight, o->accounts,
	       o->ops_per_packet, run_s);
	printf("  committed   %" PRIu64 " (%.0f/s): %" PRIu64 " transfers, %" PRIu64 " audits\n",
	       committed, committed / run_s, c->transfers, c->audits);
	printf("  aborted     %" PRIu64 " (%.1f%%):", ab,
	       committed + ab ? 100.0 * ab / (committed + ab) : 0.0);
	for (i = 1; i < XTX_CAUSE__COUNT; i++)
		if (c->aborted[i])
			printf(" %s=%" PRIu64, xtx_cause_name(i), c->aborted[i]);
	printf("\n  failed      %" PRIu64 "\n", c->failed);
	printf("  latency     avg %.1f us, p50 %.1f us, p99 %.1f us\n", xtx_hist_mean(h) / 1e3,
	       xtx_hist_percentile(h, 50) / 1e3, xtx_hist_percentile(h, 99) / 1e3);
	printf("  packets     %" PRIu64 " (%.2f ops/packet, %.2f per committed txn, %.2f per "
	       "committed transfer), %" PRIu64 " retransmitted\n", c->packets, ops_pkt, pkt_txn,
	       rw_pkt_txn, c->retransmits);
	if (o->transport == XTX_TRANSPORT_AFXDP)
		printf("  transport   afxdp: %" PRIu64 " malformed frames, %" PRIu64 " replies the "
		       "kernel's way\n", c->frames_malformed, c->udp_fallback);
	if (o->dup_cpu_ppm)
		printf("  dup-cpu     %" PRIu64 " sent twice at once (%" PRIu64 " from two CPUs), %"
		       PRIu64 " copies refused busy, %" PRIu64 " answer pairs compared, %" PRIu64
		       " mismatched\n", c->dup_cpu_sent, c->dup_cpu_apart, c->dup_cpu_busy,
		       c->dup_cpu_compared, c->dup_cpu_mismatched);
	printf("  per transfer %.2f ops, %.2f round trips\n",
	       c->transfers ? (double)c->rw_ops / c->transfers : 0,
	       c->transfers ? (double)c->rw_rounds / c->transfers : 0);
	printf("  cpu         ");
	xtx_cpustat_print(stdout, cpu0, cpu1, 0);
	printf("\n");
}

/* Asks the servers about every transaction left in doubt, and says what they answered. */
static void settle_doubts(struct bank_thread *th, unsigned int n)
{
	struct doubt_totals tot = {};
	unsigned int i;

	for (i = 0; i < n; i++)
		if (doubts_settle(&th[i].doubts, th[i].cl, th[i].hist, BANK_RESOLVE_NS, &tot,
				  NULL, NULL))
			th[i].hist_err = true;
	doubts_report("bank", &tot);
}

int bench_bank_main(int argc, char **argv)
{
	struct bank_thread *th;
	struct bank_opts o;
	struct bank_counts sum;
	struct xtx_cpustat cpu0, cpu1;
	struct xtx_client *cl;
	struct xtx_hist h;
	uint64_t start, stop;
	unsigned int i, j;
	int rc = BENCH_EXIT_OK;

	if (parse_args(argc, argv, &o))
		return BENCH_EXIT_USAGE;
	/* setup and the final check run as one more client, after the threads' ids */
	cl = open_client(&o, o.client_base + o.threads, 1);
	if (!cl)
		return BENCH_EXIT_FAIL;
	if (o.setup && bank_setup(&o, cl)) {
		xtx_client_close(cl);
		return BENCH_EXIT_FAIL;
	}
	th = calloc(o.threads, sizeof(*th));
	if (!th)
		return BENCH_EXIT_FAIL;
	for (i = 0; i < o.threads; i++) {
		struct bank_thread *t = &th[i];

		t->o = &o;
		t->bt.idx = i;
		t->bt.client_id = o.client_base + i;
		pthread_mutex_init(&t->bt.lock, NULL);
		t->rng = o.seed * 0x9e3779b97f4a7c15ull + i + 1;
		t->ctx = calloc(o.inflight + 1, sizeof(*t->ctx));
		t->free_ctx = calloc(o.inflight + 1, sizeof(*t->free_ctx));
		t->cl = open_client(&o, t->bt.client_id, o.inflight);
		if (!t->ctx || !t->free_ctx || !t->cl)
			return BENCH_EXIT_FAIL;
		if (o.history && !(t->hist = histrec_open(o.history, t->bt.client_id)))
			return BENCH_EXIT_FAIL;
		for (j = 0; j <= o.inflight; j++)
			t->free_ctx[t->nfree++] = &t->ctx[j];
	}
	{
		struct bank_progress prog = { .th = th, .n = o.threads };
		struct xtx_run run = {
			.nthreads = o.threads, .fn = bank_thread_main, .args = th,
			.arg_size = sizeof(*th), .duration_ns = o.duration_ns,
			.tick = o.json ? NULL : progress_tick, .ctx = &prog,
		};

		xtx_cpustat_read(&cpu0);
		if (xtx_run_threads(&run, &start, &stop))
			return BENCH_EXIT_FAIL;
		xtx_cpustat_read(&cpu1);
	}
	/* the counters as last published; latencies over the whole run */
	gather(th, o.threads, &sum, &h);
	xtx_hist_reset(&h);
	for (i = 0; i < o.threads; i++) {
		xtx_hist_merge(&h, &th[i].bt.total);
		if (th[i].err || xtx_inflight(th[i].cl)) {
			fprintf(stderr, "FAIL: bank: thread %u left %u transactions unresolved\n", i,
				xtx_inflight(th[i].cl));
			rc = BENCH_EXIT_FAIL;
		}
	}
	print_summary(&o, &sum, &h, (stop - start) / 1e9, &cpu0, &cpu1);
	settle_doubts(th, o.threads);
	for (i = 0; i < o.threads; i++) {
		if (histrec_close(th[i].hist, o.history) || th[i].hist_err) {
			fprintf(stderr, "FAIL: bank: --history: thread %u's file is incomplete\n", i);
			rc = BENCH_EXIT_FAIL;
		}
	}
	if (sum.missing) {
		fprintf(stderr, "FAIL: bank: %" PRIu64 " transactions found an account missing\n",
			sum.missing);
		rc = BENCH_EXIT_FAIL;
	}
	if (sum.dup_cpu_mismatched) {
		/* a request runs once, whatever number of copies arrive */
		fprintf(stderr, "FAIL: bank: %" PRIu64 " of %" PRIu64 " requests sent twice at once "
			"were answered differently\n", sum.dup_cpu_mismatched, sum.dup_cpu_compared);
		rc = BENCH_EXIT_FAIL;
	}
	if (sum.bad_audits) {
		fprintf(stderr, "FAIL: bank: %" PRIu64 " audits saw a wrong total\n", sum.bad_audits);
		rc = BENCH_EXIT_FAIL;
	}
	if (o.check) {
		int64_t total;

		if (bank_check(&o, cl, &total)) {
			rc = BENCH_EXIT_FAIL;
		} else if (total != bank_total(&o)) {
			fprintf(stderr, "FAIL: bank check: total %" PRId64 ", expected %" PRId64 "\n",
				total, bank_total(&o));
			rc = BENCH_EXIT_FAIL;
		} else {
			fprintf(stderr, "bank check: total %" PRId64 " conserved over %" PRIu64
				" committed transfers\n", total, sum.transfers);
		}
	}
	for (i = 0; i < o.threads; i++) {
		xtx_client_close(th[i].cl);
		free(th[i].ctx);
		free(th[i].free_ctx);
	}
	free(th);
	xtx_client_close(cl);
	if (o.cluster)
		bench_zk_source_close(&o.zk);
	free(o.cluster);
	free(o.servers);
	return rc;
}
