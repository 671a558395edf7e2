// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench ycsb: YCSB A, B, C and F as libxtx transactions (OCC by default), and their checks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"
#include "num.h"
#include "wlbench.h"
#include "ycsb.h"
#include "ycsb_txn.h"

/* x[] counters: the requests of committed transactions */
#define YX_READ			0
#define YX_UPDATE		1
#define YX_RMW			2

struct ycsb_ctx {
	struct ycsb_cfg cfg;
	const char *dist;
};

enum ycsb_wstate { W_COMMITTED, W_DOUBT, W_DEAD };

/* A write a transaction made (committed, or in doubt), for --verify. */
struct ycsb_write {
	uint64_t key;
	uint64_t stamp;
	uint16_t field;
	uint8_t rmw;
	uint8_t state;		/* enum ycsb_wstate */
};

/* An in-doubt transaction's writes: wr[first, first + n). */
struct ycsb_doubt {
	uint64_t txn_id;
	size_t first;
	unsigned int n;
};

struct ycsb_thread {
	bool verify;
	uint32_t client_id;
	uint64_t seq;			/* of the next transaction's stamps */
	uint64_t drawn[YCSB_NOPS];	/* requests drawn, retries not counted */
	struct ycsb_write *wr;
	size_t nwr, capwr;
	struct ycsb_doubt *doubt;
	size_t ndoubt, capdoubt;
	bool oom;			/* a write could not be kept: the checks would lie */
};

enum {
	OPT_WORKLOAD = 0x200,
	OPT_RECORDS,
	OPT_FIELDS,
	OPT_FIELD_SIZE,
	OPT_DISTRIBUTION,
	OPT_THETA,
	OPT_OPS_PER_TXN,
};

static const struct option ycsb_opts[] = {
	{ "workload", required_argument, NULL, OPT_WORKLOAD },
	{ "records", required_argument, NULL, OPT_RECORDS },
	{ "fields", required_argument, NULL, OPT_FIELDS },
	{ "field-size", required_argument, NULL, OPT_FIELD_SIZE },
	{ "distribution", required_argument, NULL, OPT_DISTRIBUTION },
	{ "theta", required_argument, NULL, OPT_THETA },
	{ "ops-per-txn", required_argument, NULL, OPT_OPS_PER_TXN },
	{ NULL, 0, NULL, 0 },
};

static const uint8_t ycsb_tables[] = { YCSB_TABLE };

static void ycsb_usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench ycsb --servers IP,IP,IP --workload a|b|c|f [options]\n"
		"YCSB's core workloads as libxtx transactions, OCC by default: A 50%% reads,\n"
		"50%% updates; B 95/5; C reads only; F 50%% reads, 50%% read-modify-writes.\n"
		"One table (%u) of records keyed by record number 0..N-1; a record is a\n"
		"%u-byte header (key, counter, checksum) and F fields of S bytes, each\n"
		"starting with the stamp of the write that made it.  Transactions of K\n"
		"requests on distinct keys (K = 5, as HADES and RCBench run YCSB; 1: single\n"
		"ops).  The store writes whole values: an update reads the record with its\n"
		"lock and writes it back with one field replaced; a read-modify-write also\n"
		"adds one to the counter.\n"
		"\n"
		"YCSB options:\n"
		"      --workload a|b|c|f    the mix (required)\n"
		"      --records N           records (default 100000)\n"
		"      --fields F            fields per record (default %u)\n"
		"      --field-size S        bytes per field, >= %u (default %u): %u-byte records\n"
		"      --distribution zipf|uniform  key choice (default zipf)\n"
		"      --theta T             zipf's skew, (0, %.3f] (default 0.99)\n"
		"      --ops-per-txn K       requests per transaction, 1..%u (default 5)\n"
		"\n"
		"Rates: transactions and requests (ops) per second, committed.\n"
		"--verify checks that every record is whole and its own (length, key,\n"
		"checksum, each field's bytes those of its stamp), that each field holds\n"
		"the load's bytes or a committed write's (and a written field one of this\n"
		"run's), that each record's counter moved by exactly its committed\n"
		"read-modify-writes (so the sum did too: a lost update fails), N records\n"
		"before and after, and the mix as drawn (a false alarm < 1e-12 per check).\n",
		YCSB_TABLE, YCSB_HDR, YCSB_FIELDS_DEFAULT, YCSB_STAMP,
		YCSB_FIELD_SIZE_DEFAULT, YCSB_HDR + YCSB_FIELDS_DEFAULT * YCSB_FIELD_SIZE_DEFAULT,
		XTX_ZIPF_THETA_MAX, YCSB_MAX_OPS);
}

static int ycsb_handle_opt(void *vctx, int c, const char *arg)
{
	struct ycsb_ctx *ctx = vctx;
	struct ycsb_cfg *cfg = &ctx->cfg;
	uint32_t v;

	switch (c) {
	case OPT_WORKLOAD:
		if (strlen(arg) != 1 || !strchr("abcfABCF", arg[0])) {
			fprintf(stderr, "Error: --workload: '%s' is not a, b, c or f\n", arg);
			return -1;
		}
		cfg->workload = (char)(arg[0] | 0x20);
		return 0;
	case OPT_RECORDS:
		return xtx_parse_u64("--records", arg, 1, 1ull << 40, &cfg->records);
	case OPT_FIELDS:
		if (xtx_parse_u32("--fields", arg, 1, YCSB_MAX_FIELDS, &v))
			return -1;
		cfg->fields = v;
		return 0;
	case OPT_FIELD_SIZE:
		if (xtx_parse_u32("--field-size", arg, YCSB_STAMP, XTX_VALUE_MAX, &v))
			return -1;
		cfg->field_size = v;
		return 0;
	case OPT_DISTRIBUTION:
		return wl_parse_distribution(arg, &ctx->dist);
	case OPT_THETA:
		return xtx_parse_double("--theta", arg, 0.001, XTX_ZIPF_THETA_MAX, &cfg->theta);
	case OPT_OPS_PER_TXN:
		if (xtx_parse_u32("--ops-per-txn", arg, 1, YCSB_MAX_OPS, &v))
			return -1;
		cfg->ops_per_txn = v;
		return 0;
	}
	return -1;
}

static int ycsb_check_opts(void *vctx, unsigned int threads, uint64_t seed)
{
	struct ycsb_ctx *ctx = vctx;

	(void)threads;
	if (!ctx->cfg.workload) {
		fprintf(stderr, "Error: --workload a|b|c|f is required\n");
		return -1;
	}
	if (!strcmp(ctx->dist, "uniform"))
		ctx->cfg.theta = 0;
	ctx->cfg.seed = seed;
	return ycsb_cfg_init(&ctx->cfg);
}

static uint16_t ycsb_value_max(const void *vctx, uint8_t table)
{
	(void)table;
	return (uint16_t)ycsb_record_len(&((const struct ycsb_ctx *)vctx)->cfg);
}

static void ycsb_describe(const void *vctx, bool json)
{
	const struct ycsb_ctx *ctx = vctx;
	const struct ycsb_cfg *c = &ctx->cfg;

	if (json) {
		printf("\"workload\":\"%c\",\"records\":%llu,\"fields\":%u,\"field_size\":%u,"
		       "\"record_bytes\":%u,\"distribution\":\"%s\",\"theta\":%.3f,"
		       "\"ops_per_txn\":%u,", c->workload, (unsigned long long)c->records,
		       c->fields, c->field_size, ycsb_record_len(c), ctx->dist, c->theta,
		       c->ops_per_txn);
		return;
	}
	printf("workload=%c records=%llu fields=%ux%uB (%u-byte records) distribution=%s",
	       c->workload, (unsigned long long)c->records, c->fields, c->field_size,
	       ycsb_record_len(c), ctx->dist);
	if (c->theta > 0)
		printf(" theta=%.2f", c->theta);
	printf(" ops_per_txn=%u\n", c->ops_per_txn);
}

static int ycsb_thread_init(void *vctx, void *wt, const struct wl_tinfo *ti)
{
	struct ycsb_thread *t = wt;

	(void)vctx;
	t->verify = ti->verify;
	t->client_id = ti->client_id;
	/* a fresh start per run, so a stamp from an earlier run is not taken for this one's */
	t->seq = xtx_rng_next(ti->rng) >> 24;
	return 0;
}

static void ycsb_thread_free(void *vctx, void *wt)
{
	struct ycsb_thread *t = wt;

	(void)vctx;
	free(t->wr);
	free(t->doubt);
}

/*
 * Unique per write in a run: the client id above 48 bits, then the
 * transaction's sequence, then the request's index.
 */
static uint64_t stamp_base(struct ycsb_thread *t)
{
	uint64_t s = t->seq++ & ((1ull << 44) - 1);

	return (uint64_t)(t->client_id + 1) << 48 | s * YCSB_MAX_OPS;
}

static unsigned int ycsb_begin(void *vctx, void *wt, void *txn, const struct wl_tinfo *ti)
{
	struct ycsb_thread *t = wt;
	struct ycsb_txn *x = txn;
	unsigned int i;

	ycsb_txn_draw(x, &((struct ycsb_ctx *)vctx)->cfg, ti->rng, stamp_base(t));
	for (i = 0; i < x->n; i++)
		t->drawn[x->req[i].op]++;
	return ycsb_txn_type(x);
}

static void ycsb_rearm(void *vctx, void *wt, void *txn, const struct wl_tinfo *ti)
{
	(void)vctx;
	(void)wt;
	(void)ti;
	ycsb_txn_rearm(txn);
}

static void keep_writes(struct ycsb_thread *t, const struct ycsb_txn *x, uint8_t state)
{
	unsigned int i;

	for (i = 0; i < x->n; i++) {
		const struct ycsb_req *r = &x->req[i];

		if (r->op == YCSB_READ)
			continue;
		if (t->nwr == t->capwr) {
			size_t cap = t->capwr ? 2 * t->capwr : 4096;
			struct ycsb_write *w = realloc(t->wr, cap * sizeof(*w));

			if (!w) {
				t->oom = true;
				return;
			}
			t->wr = w;
			t->capwr = cap;
		}
		t->wr[t->nwr++] = (struct ycsb_write){ .key = r->key, .stamp = r->stamp,
						      .field = r->field,
						      .rmw = r->op == YCSB_RMW, .state = state };
	}
}

static enum wl_verdict ycsb_end(void *vctx, void *wt, void *txn, const struct xtx_txn_result *res,
				uint64_t *xc)
{
	struct ycsb_thread *t = wt;
	struct ycsb_txn *x = txn;
	unsigned int i;

	(void)vctx;
	switch (res->outcome) {
	case XTX_COMMITTED:
		for (i = 0; i < x->n; i++)
			xc[x->req[i].op == YCSB_READ ? YX_READ :
			   x->req[i].op == YCSB_UPDATE ? YX_UPDATE : YX_RMW]++;
		if (t->verify)
			keep_writes(t, x, W_COMMITTED);
		return WL_COMMITTED;
	case XTX_FAILED:
		return WL_FAILED;
	case XTX_IN_DOUBT:
		if (!t->verify)
			return WL_IN_DOUBT;
		if (t->ndoubt == t->capdoubt) {
			size_t cap = t->capdoubt ? 2 * t->capdoubt : 16;
			struct ycsb_doubt *d = realloc(t->doubt, cap * sizeof(*d));

			if (!d) {
				t->oom = true;
				return WL_IN_DOUBT;
			}
			t->doubt = d;
			t->capdoubt = cap;
		}
		t->doubt[t->ndoubt] = (struct ycsb_doubt){ .txn_id = res->txn_id, .first = t->nwr };
		keep_writes(t, x, W_DOUBT);
		t->doubt[t->ndoubt].n = (unsigned int)(t->nwr - t->doubt[t->ndoubt].first);
		t->ndoubt++;
		return WL_IN_DOUBT;
	default:
		break;
	}
	if (x->broken) {
		fprintf(stderr, "ycsb: record %llu: %s\n", (unsigned long long)x->bad_key, x->why);
		return WL_BROKEN;
	}
	return WL_ABORTED;
}

/* What the servers said of an in-doubt transaction: its writes are in, or never were. */
static void ycsb_settled(void *vctx, void *wt, uint64_t txn_id, enum xtx_outcome o)
{
	struct ycsb_thread *t = wt;
	size_t i, j;

	(void)vctx;
	if (o != XTX_COMMITTED && o != XTX_ABORTED)
		return;
	for (i = 0; i < t->ndoubt; i++) {
		if (t->doubt[i].txn_id != txn_id)
			continue;
		for (j = 0; j < t->doubt[i].n; j++)
			t->wr[t->doubt[i].first + j].state =
				o == XTX_COMMITTED ? W_COMMITTED : W_DEAD;
		t->doubt[i] = t->doubt[--t->ndoubt];
		return;
	}
}

static void ycsb_summary(const void *vctx, const struct wl_counts *c, double secs, bool json)
{
	const struct ycsb_cfg *cfg = &((const struct ycsb_ctx *)vctx)->cfg;
	uint64_t ops = c->x[YX_READ] + c->x[YX_UPDATE] + c->x[YX_RMW];
	double d = secs > 0 ? secs : 1;

	if (json) {
		printf("\"ops_per_s\":%.1f,\"reads\":%llu,\"updates\":%llu,\"rmws\":%llu,", ops / d,
		       (unsigned long long)c->x[YX_READ], (unsigned long long)c->x[YX_UPDATE],
		       (unsigned long long)c->x[YX_RMW]);
		return;
	}
	printf("rates: committed ops/s=%.0f (%u per transaction)  reads=%llu updates=%llu "
	       "rmws=%llu\n", ops / d, cfg->ops_per_txn, (unsigned long long)c->x[YX_READ],
	       (unsigned long long)c->x[YX_UPDATE], (unsigned long long)c->x[YX_RMW]);
}

static int ycsb_populate(void *vctx, wl_emit_fn emit, void *arg)
{
	const struct ycsb_cfg *cfg = &((struct ycsb_ctx *)vctx)->cfg;
	uint8_t rec[XTX_VALUE_MAX];
	uint64_t k;

	for (k = 0; k < cfg->records; k++) {
		ycsb_record_init(cfg, k, rec);
		if (emit(arg, YCSB_TABLE, k, rec, (uint16_t)ycsb_record_len(cfg)))
			return -1;
	}
	return 0;
}

/* ---- --verify ---- */

static int write_cmp(const void *a, const void *b)
{
	const struct ycsb_write *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->field != y->field)
		return x->field < y->field ? -1 : 1;
	if (x->stamp != y->stamp)
		return x->stamp < y->stamp ? -1 : 1;
	return 0;
}

/* Every thread's writes but the dead ones, sorted by (key, field, stamp); NULL if none. */
static struct ycsb_write *all_writes(void *const *wts, unsigned int nthreads, size_t *n)
{
	struct ycsb_write *all;
	size_t total = 0, k = 0, j;
	unsigned int i;

	for (i = 0; i < nthreads; i++)
		total += ((const struct ycsb_thread *)wts[i])->nwr;
	all = malloc((total ? total : 1) * sizeof(*all));
	if (!all)
		return NULL;
	for (i = 0; i < nthreads; i++) {
		const struct ycsb_thread *t = wts[i];

		for (j = 0; j < t->nwr; j++)
			if (t->wr[j].state != W_DEAD)
				all[k++] = t->wr[j];
	}
	qsort(all, k, sizeof(*all), write_cmp);
	*n = k;
	return all;
}

/* Exactly records 0..N-1, each well formed; the counters' sum into *sum. */
static void check_records(const struct ycsb_cfg *cfg, const struct wl_snap *s, const char *when,
			  uint64_t *sum, unsigned long *v)
{
	const struct wl_rec *r;
	size_t n = wl_snap_table(s, YCSB_TABLE, &r), i;

	*sum = 0;
	if (n != cfg->records)
		wl_violation(v, "%s: %zu records, not %llu", when, n,
			     (unsigned long long)cfg->records);
	for (i = 0; i < n; i++) {
		const char *why = r[i].key < cfg->records ? NULL : "not a record number";

		if (!why)
			why = ycsb_record_check(cfg, r[i].key, wl_rec_value(&r[i]), r[i].vlen);
		if (why) {
			wl_violation(v, "%s: record %llu: %s", when, (unsigned long long)r[i].key,
				     why);
			continue;
		}
		*sum += ycsb_record_counter(wl_rec_value(&r[i]));
	}
}

/* The write among [w, end) (one key's) that stamped field f with stamp, or NULL. */
static const struct ycsb_write *find_write(const struct ycsb_write *w,
					   const struct ycsb_write *end, unsigned int f,
					   uint64_t stamp)
{
	for (; w < end; w++)
		if (w->field == f && w->stamp == stamp)
			return w;
	return NULL;
}

/*
 * One record against the writes made to it ([w, end)): each field holds the
 * stamp it held before if nothing wrote it, else one of those writes'; the
 * counter moved by the committed read-modify-writes (and at most the
 * in-doubt ones besides).
 */
static void check_history(const struct ycsb_cfg *cfg, const struct wl_rec *b,
			  const struct wl_rec *a, const struct ycsb_write *w,
			  const struct ycsb_write *end, unsigned long *v)
{
	uint32_t rmw = 0, maybe = 0, moved;
	const struct ycsb_write *p;
	unsigned int f;

	for (p = w; p < end; p++) {
		rmw += p->rmw && p->state == W_COMMITTED;
		maybe += p->rmw && p->state == W_DOUBT;
	}
	moved = ycsb_record_counter(wl_rec_value(a)) - ycsb_record_counter(wl_rec_value(b));
	if (moved < rmw || moved > rmw + maybe)
		wl_violation(v, "record %llu: counter %u -> %u, but %u read-modify-writes of it "
			     "committed (%u in doubt)", (unsigned long long)a->key,
			     ycsb_record_counter(wl_rec_value(b)), ycsb_record_counter(wl_rec_value(a)), rmw,
			     maybe);
	for (f = 0; f < cfg->fields; f++) {
		uint64_t sa = ycsb_field_stamp(cfg, wl_rec_value(a), f);
		uint64_t sb = ycsb_field_stamp(cfg, wl_rec_value(b), f);
		bool written = false, sure = false;

		for (p = w; p < end; p++)
			if (p->field == f) {
				written = true;
				sure |= p->state == W_COMMITTED;
			}
		if (find_write(w, end, f, sa) || (!sure && sa == sb))
			continue;
		wl_violation(v, "record %llu field %u: stamp %#llx is %s", (unsigned long long)a->key,
			     f, (unsigned long long)sa,
			     written ? "none of the writes this run committed to it" :
				       "not what it held before, and nothing wrote it");
	}
}

static unsigned long ycsb_verify(void *vctx, const struct wl_snap *b, const struct wl_snap *a,
				 void *const *wts, unsigned int nthreads,
				 const struct wl_counts *c)
{
	const struct ycsb_cfg *cfg = &((const struct ycsb_ctx *)vctx)->cfg;
	struct ycsb_write *all;
	const struct wl_rec *r;
	unsigned long v = 0, mark;
	uint64_t s0, s1, rmws = 0, doubt_rmws = 0, drawn[YCSB_NOPS] = { 0 }, ndrawn = 0;
	size_t n, nw = 0, i, j = 0;
	unsigned int pct, k;
	enum ycsb_op wop;

	check_records(cfg, b, "before", &s0, &v);
	check_records(cfg, a, "after", &s1, &v);
	if (!v)
		wl_check_ok("%llu records before and after, each whole: its key, checksum and "
			    "every field the bytes of its stamp", (unsigned long long)cfg->records);
	for (k = 0; k < nthreads; k++)
		if (((const struct ycsb_thread *)wts[k])->oom) {
			wl_violation(&v, "a thread could not keep its writes: nothing to check "
				     "against");
			return v;
		}
	all = all_writes(wts, nthreads, &nw);
	if (!all) {
		wl_violation(&v, "out of memory for the writes");
		return v;
	}
	for (i = 0; i < nw; i++) {
		rmws += all[i].rmw && all[i].state == W_COMMITTED;
		doubt_rmws += all[i].rmw && all[i].state == W_DOUBT;
	}
	if (s1 >= s0 + rmws && s1 <= s0 + rmws + doubt_rmws)
		wl_check_ok("counters: %llu before + %llu committed read-modify-writes = %llu "
			    "after", (unsigned long long)s0, (unsigned long long)rmws,
			    (unsigned long long)s1);
	else
		wl_violation(&v, "counters: %llu before + %llu committed read-modify-writes "
			     "(%llu in doubt) != %llu after: an update was lost or made up",
			     (unsigned long long)s0, (unsigned long long)rmws,
			     (unsigned long long)doubt_rmws, (unsigned long long)s1);

	mark = v;
	n = wl_snap_table(a, YCSB_TABLE, &r);
	for (i = 0; i < n; i++) {
		const struct wl_rec *old = wl_snap_find(b, YCSB_TABLE, r[i].key);
		size_t e;

		while (j < nw && all[j].key < r[i].key)
			j++;
		for (e = j; e < nw && all[e].key == r[i].key; e++)
			;
		if (old && !ycsb_record_check(cfg, r[i].key, wl_rec_value(&r[i]), r[i].vlen) &&
		    !ycsb_record_check(cfg, old->key, wl_rec_value(old), old->vlen))
			check_history(cfg, old, &r[i], all + j, all + e, &v);
		j = e;
	}
	if (v == mark)
		wl_check_ok("every field as loaded or as a committed write left it (%zu writes); "
			    "every counter moved by its own read-modify-writes", nw);
	free(all);

	mark = v;
	for (k = 0; k < nthreads; k++)
		for (i = 0; i < YCSB_NOPS; i++)
			drawn[i] += ((const struct ycsb_thread *)wts[k])->drawn[i];
	for (i = 0; i < YCSB_NOPS; i++)
		ndrawn += drawn[i];
	ycsb_workload_mix(cfg->workload, &pct, &wop);
	if (ndrawn >= 1000 && !wl_share_plausible((double)drawn[wop] / ndrawn, pct / 100.0, ndrawn, 0))
		wl_violation(&v, "%.4f of the requests wrote, the mix says %.2f",
			     (double)drawn[wop] / ndrawn, pct / 100.0);
	if (drawn[wop == YCSB_RMW ? YCSB_UPDATE : YCSB_RMW])
		wl_violation(&v, "workload %c drew requests of a kind it has not", cfg->workload);
	for (i = 0; i < YCSB_NTYPES; i++)
		if (c->attempted[i] != c->committed[i] + c->logical[i] + c->aborted[i] +
		    c->failed[i] + c->in_doubt[i] + c->unknown[i] + c->broken[i] ||
		    c->logical[i])
			wl_violation(&v, "%s: attempted %llu != committed + aborted + failed + in "
				     "doubt + unknown (YCSB has no logical failures)",
				     ycsb_type_names[i], (unsigned long long)c->attempted[i]);
	if (v == mark)
		wl_check_ok("counters add up; the mix as drawn (%.4f of %llu requests "
			    "wrote)", ndrawn ? (double)drawn[wop] / ndrawn : 0.0,
			    (unsigned long long)ndrawn);
	return v;
}

int bench_ycsb_main(int argc, char **argv)
{
	static struct ycsb_ctx ctx;
	struct wl_workload w = {
		.name = "ycsb",
		.ntypes = YCSB_NTYPES,
		.type_names = ycsb_type_names,
		.txn_size = sizeof(struct ycsb_txn),
		.thread_size = sizeof(struct ycsb_thread),
		.tables = ycsb_tables,
		.ntables = sizeof(ycsb_tables),
		.ctx = &ctx,
		.default_protocol = XTX_PROTO_OCC,
		.longopts = ycsb_opts,
		.handle_opt = ycsb_handle_opt,
		.check_opts = ycsb_check_opts,
		.value_max = ycsb_value_max,
		.usage = ycsb_usage,
		.describe = ycsb_describe,
		.thread_init = ycsb_thread_init,
		.thread_free = ycsb_thread_free,
		.begin = ycsb_begin,
		.rearm = ycsb_rearm,
		.step = ycsb_step,
		.end = ycsb_end,
		.settled = ycsb_settled,
		.summary = ycsb_summary,
		.populate = ycsb_populate,
		.verify = ycsb_verify,
	};

	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg.records = 100000;
	ctx.cfg.fields = YCSB_FIELDS_DEFAULT;
	ctx.cfg.field_size = YCSB_FIELD_SIZE_DEFAULT;
	ctx.cfg.ops_per_txn = 5;
	ctx.cfg.theta = 0.99;
	ctx.dist = "zipf";
	return wl_main(&w, argc, argv);
}
