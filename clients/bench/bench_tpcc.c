// SPDX-License-Identifier: GPL-2.0-only
/*
 * xtxbench tpcc: TPC-C's NewOrder alone or its standard mix over libxtx
 * (OCC by default), new orders per minute and per second, and the
 * specification's consistency conditions under --verify.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include "num.h"
#include "tpcc.h"
#include "tpcc_check.h"
#include "tpcc_txn.h"
#include "wlbench.h"

/* x[] counters */
#define TPCC_X_ROLLBACK		0	/* NewOrders rolled back on their unused item */
#define TPCC_X_DLV_EMPTY	1	/* Delivery districts without an undelivered order */
#define TPCC_X_SL_LOW		2	/* StockLevel: stock rows found below the threshold */
/* HADES: aborted transactions that had read across a commit (no invariant broken) */
#define TPCC_X_TORN_VIEW	3

struct tpcc_ctx {
	struct tpcc_cfg cfg;
	uint32_t per_server;		/* --warehouses */
	unsigned int nservers;
	/*
	 * HADES checks a transaction's reads only at its intend-to-commit: until
	 * then it may read on across a commit that squashed it (it learns so at
	 * that server's next op), and see rows of two states.  It then aborts:
	 * such a view breaks nothing unless the transaction commits.
	 */
	bool late_read_checks;
};

/* A transaction that ended in doubt: what it changes if the servers say it committed. */
struct tpcc_doubt {
	uint64_t txn_id;
	enum tpcc_type type;
	int64_t amount;
};

struct tpcc_thread {
	uint32_t client_id;
	uint64_t hist_seq;		/* Payments' history keys */
	/* parts of business transactions begun and not yet started: Delivery, StockLevel */
	struct tpcc_txn *queue;
	unsigned int qhead, qlen, qcap;
	/* business transactions drawn, by type (the mix) */
	uint64_t drawn[TPCC_NTYPES];
	/* committed, for the checks across the run */
	uint64_t new_orders, payments, delivered;
	int64_t paid;
	struct tpcc_doubt *doubt;
	unsigned int ndoubt, doubt_cap;
	bool doubt_lost;
	bool oom;
};

enum {
	OPT_WAREHOUSES = 0x200,
	OPT_MIX,
	OPT_ITEMS,
	OPT_CUSTOMERS,
};

static const struct option tpcc_opts[] = {
	{ "warehouses", required_argument, NULL, OPT_WAREHOUSES },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ "items", required_argument, NULL, OPT_ITEMS },
	{ "customers", required_argument, NULL, OPT_CUSTOMERS },
	{ NULL, 0, NULL, 0 },
};

static const uint8_t tpcc_tables[] = { TPCC_T_SMALL, TPCC_T_MID, TPCC_T_BIG };

static void tpcc_usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench tpcc --servers IP,IP,IP [options]\n"
		"TPC-C (specification 5.11) as libxtx transactions, OCC by default: NewOrder\n"
		"alone (DrTM+H's variant, as Xenic reports it) or the standard mix of\n"
		"NewOrder 45, Payment 43, OrderStatus 4, Delivery 4, StockLevel 4, with 1 %%\n"
		"of order lines from a remote warehouse, 15 %% of Payments by a remote\n"
		"customer, 60 %% of Payment and OrderStatus customers by last name, and 1 %%\n"
		"of NewOrders rolled back (a logical failure).  The home warehouse is\n"
		"uniform over all of them; no terminals, no keying or think times.\n"
		"\n"
		"A key's top byte names its TPC-C table; the rows live in wire tables %u\n"
		"(ORDER, NEW-ORDER, indexes: within 40 bytes), %u (WAREHOUSE, DISTRICT,\n"
		"STOCK up to 306 B, HISTORY, last names) and %u (CUSTOMER up to 670 B, an\n"
		"order's lines packed in one row of up to 668 B): full rows as values.  ITEM never changes and is computed by each\n"
		"client.  Index rows kept inside the transactions: each district's oldest\n"
		"undelivered order (Delivery), each customer's last order (OrderStatus),\n"
		"the customers of each last name (written at load).  Delivery runs as one\n"
		"transaction per district, StockLevel as one for its 20 orders and one per\n"
		"%u stock rows: a transaction holds at most %u keys.  The per-type table\n"
		"counts those transactions; tpmC counts committed NewOrders.\n"
		"\n"
		"A warehouse is about 270,000 rows: 100,000 STOCK, 30,000 each of CUSTOMER,\n"
		"HISTORY, ORDER, order lines and last-order index, 9,000 NEW-ORDER, up to\n"
		"10,000 name index rows.  The ~190,000 over 40 bytes live in xtxd's overflow\n"
		"store at ~1.1 KiB each: ~210 MB per warehouse on each of its replicas, and\n"
		"~1.1 KiB more per NewOrder (its lines) and per Payment (its history row).\n"
		"With R = 3 on 3 servers every server holds every warehouse: the default\n"
		"of 1 per server is ~650 MB and ~810,000 keys (xtxd --capacity) a server.\n"
		"\n"
		"TPC-C options:\n"
		"      --warehouses N        warehouses per server (default 1; Xenic runs 72)\n"
		"      --mix neworder|standard  (default standard)\n"
		"      --items N             items (default 100000); fewer for tests\n"
		"      --customers N         customers per district (default 3000); fewer for\n"
		"                            tests (the orders loaded are as many, 30 %% of them\n"
		"                            undelivered; last names number min(N, 1000))\n"
		"\n"
		"--populate writes the initial rows over whatever the servers hold: rows a\n"
		"run added (orders past the loaded ones, their lines, history) stay and\n"
		"break the conditions, so populate empty servers; a run without --populate\n"
		"goes on from where the last one left the data.\n"
		"\n"
		"--verify checks on the snapshots before and after: conditions 1-4 (W_YTD =\n"
		"sum D_YTD; D_NEXT_O_ID - 1 = max O_ID = max NO_O_ID; the new-orders\n"
		"contiguous; sum O_OL_CNT = order lines), 5-10 and 12, that the indexes\n"
		"agree with the rows, and across the run that the new orders, payments and\n"
		"deliveries committed are in the store.\n"
		"\n"
		"Example: xtxbench tpcc --servers 10.77.0.2,10.77.1.2,10.77.2.2 --warehouses 1\n"
		"         --ctl ns0:if0,ns1:if1,ns2:if2 --populate --duration 10 --verify\n",
		TPCC_T_SMALL, TPCC_T_MID, TPCC_T_BIG, TPCC_SL_BATCH, XTX_TXN_MAX_KEYS);
}

static int tpcc_handle_opt(void *vctx, int c, const char *arg)
{
	struct tpcc_ctx *ctx = vctx;

	switch (c) {
	case OPT_WAREHOUSES:
		return xtx_parse_u32("--warehouses", arg, 1, TPCC_MAX_WAREHOUSES,
				     &ctx->per_server);
	case OPT_MIX:
		if (strcmp(arg, "neworder") && strcmp(arg, "standard")) {
			fprintf(stderr, "Error: --mix: '%s' is not neworder or standard\n", arg);
			return -1;
		}
		ctx->cfg.mix = strcmp(arg, "standard") ? TPCC_MIX_NEWORDER : TPCC_MIX_STANDARD;
		return 0;
	case OPT_ITEMS:
		/* NewOrder's up to 15 distinct items need a few more to draw from */
		return xtx_parse_u32("--items", arg, 100, TPCC_ITEMS, &ctx->cfg.items);
	case OPT_CUSTOMERS:
		return xtx_parse_u32("--customers", arg, 10, TPCC_CUSTOMERS, &ctx->cfg.customers);
	}
	return -1;
}

static int tpcc_check_opts(void *vctx, unsigned int threads, uint64_t seed)
{
	struct tpcc_ctx *ctx = vctx;

	(void)threads;
	ctx->cfg.seed = seed;
	tpcc_cfg_init(&ctx->cfg);
	return 0;
}

/* Each client reserves this much read room per table ahead: no abort learns it. */
static uint16_t tpcc_value_max(const void *vctx, uint8_t table)
{
	(void)vctx;
	switch (table) {
	case TPCC_T_SMALL:
		return XTX_VALUE_INLINE;
	case TPCC_T_MID:
		return TPCC_MID_VALUE_MAX;
	default:
		return XTX_VALUE_MAX;
	}
}

static int tpcc_check_run(void *vctx, unsigned int nservers, enum xtx_protocol protocol)
{
	struct tpcc_ctx *ctx = vctx;
	uint64_t w = (uint64_t)ctx->per_server * nservers;

	ctx->late_read_checks = protocol == XTX_PROTO_HADES;
	if (w > TPCC_MAX_WAREHOUSES) {
		fprintf(stderr, "Error: --warehouses %u on %u servers: more than %u in all\n",
			ctx->per_server, nservers, TPCC_MAX_WAREHOUSES);
		return -1;
	}
	ctx->nservers = nservers;
	ctx->cfg.warehouses = (uint32_t)w;
	return 0;
}

static const char *mix_name(const struct tpcc_cfg *c)
{
	return c->mix == TPCC_MIX_NEWORDER ? "neworder" : "standard";
}

static void tpcc_describe(const void *vctx, bool json)
{
	const struct tpcc_ctx *ctx = vctx;
	const struct tpcc_cfg *c = &ctx->cfg;

	if (json) {
		printf("\"warehouses\":%u,\"warehouses_per_server\":%u,\"items\":%u,"
		       "\"customers_per_district\":%u,\"mix\":\"%s\",", c->warehouses,
		       ctx->per_server, c->items, c->customers, mix_name(c));
		return;
	}
	printf("warehouses=%u (%u per server) items=%u customers/district=%u mix=%s\n",
	       c->warehouses, ctx->per_server, c->items, c->customers, mix_name(c));
}

static uint64_t wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int tpcc_thread_init(void *vctx, void *wt, const struct wl_tinfo *ti)
{
	struct tpcc_thread *t = wt;

	(void)vctx;
	t->client_id = ti->client_id;
	/* a rerun's client ids repeat: its history keys start past the last run's */
	t->hist_seq = wall_us();
	return 0;
}

static void tpcc_thread_free(void *vctx, void *wt)
{
	struct tpcc_thread *t = wt;

	(void)vctx;
	free(t->queue);
	free(t->doubt);
}

/* Queues a part of a business transaction begun; false when out of memory. */
static bool push(struct tpcc_thread *t, const struct tpcc_txn *x)
{
	if (t->qlen == t->qcap) {
		unsigned int cap = t->qcap ? 2 * t->qcap : 16, i;
		struct tpcc_txn *q = malloc(cap * sizeof(*q));

		if (!q) {
			t->oom = true;
			return false;
		}
		for (i = 0; i < t->qlen; i++)
			q[i] = t->queue[(t->qhead + i) % t->qcap];
		free(t->queue);
		t->queue = q;
		t->qhead = 0;
		t->qcap = cap;
	}
	t->queue[(t->qhead + t->qlen++) % t->qcap] = *x;
	return true;
}

static unsigned int tpcc_begin(void *vctx, void *wt, void *txn, const struct wl_tinfo *ti)
{
	const struct tpcc_cfg *cfg = &((struct tpcc_ctx *)vctx)->cfg;
	struct tpcc_thread *t = wt;
	struct tpcc_txn *x = txn;
	enum tpcc_type type;

	if (t->qlen) {
		*x = t->queue[t->qhead];
		t->qhead = (t->qhead + 1) % t->qcap;
		t->qlen--;
	} else {
		type = tpcc_pick_type(cfg, ti->rng);
		t->drawn[type]++;
		memset(x, 0, sizeof(*x));
		x->cfg = cfg;
		tpcc_draw_input(cfg, type, ti->rng, &x->in);
		if (type == TPCC_DELIVERY) {
			/* one transaction per district, all for the same warehouse and carrier */
			unsigned int d;

			for (d = 2; d <= TPCC_DISTRICTS; d++) {
				x->in.d = d;
				push(t, x);
			}
			x->in.d = 1;
		}
		if (type == TPCC_PAYMENT)
			x->hist_key = tpcc_history_key(t->client_id, t->hist_seq++);
	}
	x->now = (uint64_t)time(NULL);
	tpcc_txn_arm(x);
	return x->in.type;
}

static void tpcc_rearm(void *vctx, void *wt, void *txn, const struct wl_tinfo *ti)
{
	struct tpcc_txn *x = txn;

	(void)vctx;
	(void)wt;
	(void)ti;
	tpcc_txn_arm(x);
}

/* StockLevel's orders read: their items' stock rows, in batches. */
static void queue_stock_batches(struct tpcc_thread *t, const struct tpcc_txn *x)
{
	struct tpcc_txn *b = malloc(sizeof(*b));
	unsigned int i;

	if (!b) {
		t->oom = true;
		return;
	}
	for (i = 0; i < x->nitems; i += TPCC_SL_BATCH) {
		*b = *x;
		b->part = 1;
		b->nitems = x->nitems - i < TPCC_SL_BATCH ? x->nitems - i : TPCC_SL_BATCH;
		memcpy(b->items, x->items + i, b->nitems * sizeof(b->items[0]));
		if (!push(t, b))
			break;
	}
	free(b);
}

static void keep_doubt(struct tpcc_thread *t, const struct tpcc_txn *x, uint64_t txn_id)
{
	if (t->ndoubt == t->doubt_cap) {
		unsigned int cap = t->doubt_cap ? 2 * t->doubt_cap : 16;
		struct tpcc_doubt *d = realloc(t->doubt, cap * sizeof(*d));

		if (!d) {
			t->doubt_lost = true;
			return;
		}
		t->doubt = d;
		t->doubt_cap = cap;
	}
	t->doubt[t->ndoubt++] = (struct tpcc_doubt){ .txn_id = txn_id, .type = x->in.type,
						      .amount = x->in.amount };
}

/* A committed transaction's effects the checks across the run count. */
static void count_committed(struct tpcc_thread *t, enum tpcc_type type, int64_t amount,
			    bool delivered)
{
	if (type == TPCC_NEWORDER)
		t->new_orders++;
	if (type == TPCC_PAYMENT) {
		t->payments++;
		t->paid += amount;
	}
	if (type == TPCC_DELIVERY && delivered)
		t->delivered++;
}

static enum wl_verdict tpcc_end(void *vctx, void *wt, void *txn, const struct xtx_txn_result *res,
				uint64_t *xc)
{
	struct tpcc_thread *t = wt;
	struct tpcc_txn *x = txn;

	switch (res->outcome) {
	case XTX_COMMITTED:
		count_committed(t, x->in.type, x->in.amount, !x->empty);
		if (x->in.type == TPCC_DELIVERY && x->empty)
			xc[TPCC_X_DLV_EMPTY]++;
		if (x->in.type == TPCC_STOCKLEVEL && !x->part)
			queue_stock_batches(t, x);
		if (x->in.type == TPCC_STOCKLEVEL && x->part)
			xc[TPCC_X_SL_LOW] += x->low;
		return WL_COMMITTED;
	case XTX_FAILED:
		return WL_FAILED;
	case XTX_IN_DOUBT:
		/* a Delivery's part in doubt may have delivered: the check allows it either way */
		keep_doubt(t, x, res->txn_id);
		return WL_IN_DOUBT;
	default:
		break;
	}
	if (x->broken && ((const struct tpcc_ctx *)vctx)->late_read_checks) {
		xc[TPCC_X_TORN_VIEW]++;
		return WL_ABORTED;
	}
	if (x->broken)
		return WL_BROKEN;
	if (res->cause == XTX_CAUSE_USER && x->logical) {
		xc[TPCC_X_ROLLBACK]++;
		return WL_LOGICAL;
	}
	return WL_ABORTED;
}

static void tpcc_settled(void *vctx, void *wt, uint64_t txn_id, enum xtx_outcome o)
{
	struct tpcc_thread *t = wt;
	unsigned int i;

	(void)vctx;
	if (o != XTX_COMMITTED && o != XTX_ABORTED)
		return;
	for (i = 0; i < t->ndoubt && t->doubt[i].txn_id != txn_id; i++)
		;
	if (i == t->ndoubt)
		return;
	/* a Delivery part's answer does not say whether it found an order: it stays open */
	if (t->doubt[i].type == TPCC_DELIVERY)
		return;
	if (o == XTX_COMMITTED)
		count_committed(t, t->doubt[i].type, t->doubt[i].amount, false);
	t->doubt[i] = t->doubt[--t->ndoubt];
}

static void tpcc_summary(const void *vctx, const struct wl_counts *c, double secs, bool json)
{
	const struct tpcc_ctx *ctx = vctx;
	double d = secs > 0 ? secs : 1, nos = c->committed[TPCC_NEWORDER] / d;
	unsigned int ns = ctx->nservers ? ctx->nservers : 1;

	if (json) {
		printf("\"rates\":{\"tpmC\":%.1f,\"tpmC_per_server\":%.1f,"
		       "\"new_orders_per_s\":%.1f,\"new_orders_per_s_per_server\":%.1f},"
		       "\"new_order_rollbacks\":%llu,"
		       "\"delivery_districts_empty\":%llu,\"stock_level_low\":%llu,"
		       "\"torn_views_aborted\":%llu,", nos * 60,
		       nos * 60 / ns, nos, nos / ns, (unsigned long long)c->x[TPCC_X_ROLLBACK],
		       (unsigned long long)c->x[TPCC_X_DLV_EMPTY],
		       (unsigned long long)c->x[TPCC_X_SL_LOW],
		       (unsigned long long)c->x[TPCC_X_TORN_VIEW]);
		return;
	}
	printf("rates: tpmC=%.0f (%.0f per server)  new orders/s=%.0f (%.0f per server)\n",
	       nos * 60, nos * 60 / ns, nos, nos / ns);
	printf("NewOrder rollbacks=%llu (%.2f%% of NO)  Delivery districts empty=%llu  "
	       "StockLevel low stock=%llu\n", (unsigned long long)c->x[TPCC_X_ROLLBACK],
	       c->attempted[TPCC_NEWORDER] ?
	       100.0 * c->x[TPCC_X_ROLLBACK] / c->attempted[TPCC_NEWORDER] : 0.0,
	       (unsigned long long)c->x[TPCC_X_DLV_EMPTY],
	       (unsigned long long)c->x[TPCC_X_SL_LOW]);
	if (ctx->late_read_checks)
		printf("Aborted after reading across a commit (HADES)=%llu\n",
		       (unsigned long long)c->x[TPCC_X_TORN_VIEW]);
}

struct emit_arg {
	wl_emit_fn emit;
	void *arg;
};

static int emit_row(void *arg, uint64_t key, const void *value, uint16_t vlen)
{
	struct emit_arg *e = arg;

	return e->emit(e->arg, tpcc_table_of(key), key, value, vlen);
}

static int tpcc_populate(void *vctx, wl_emit_fn emit, void *arg)
{
	const struct tpcc_cfg *cfg = &((struct tpcc_ctx *)vctx)->cfg;
	struct emit_arg e = { .emit = emit, .arg = arg };
	uint32_t w;

	for (w = 1; w <= cfg->warehouses; w++)
		if (tpcc_populate_warehouse(cfg, w, emit_row, &e))
			return -1;
	return 0;
}

/* ---- --verify ---- */

/* Whether got lies in [lo, lo + slack]. */
static bool within(uint64_t got, uint64_t lo, uint64_t slack)
{
	return got >= lo && got - lo <= slack;
}

static unsigned long tpcc_verify(void *vctx, const struct wl_snap *b, const struct wl_snap *a,
				 void *const *wts, unsigned int nthreads,
				 const struct wl_counts *c)
{
	const struct tpcc_cfg *cfg = &((struct tpcc_ctx *)vctx)->cfg;
	uint64_t no = 0, pay = 0, dlv = 0, open[TPCC_NTYPES] = { 0 }, drawn[TPCC_NTYPES] = { 0 };
	uint64_t ndrawn = 0;
	int64_t paid = 0, open_paid = 0, drift;
	struct tpcc_totals tb, ta;
	unsigned long v, mark;
	bool lost = false;
	unsigned int i, j;

	v = tpcc_check_snap(cfg, b, "before", &tb);
	v += tpcc_check_snap(cfg, a, "after", &ta);
	for (i = 0; i < nthreads; i++) {
		const struct tpcc_thread *t = wts[i];

		no += t->new_orders;
		pay += t->payments;
		paid += t->paid;
		dlv += t->delivered;
		lost |= t->doubt_lost || t->oom;
		for (j = 0; j < t->ndoubt; j++) {
			open[t->doubt[j].type]++;
			if (t->doubt[j].type == TPCC_PAYMENT)
				open_paid += t->doubt[j].amount;
		}
		for (j = 0; j < TPCC_NTYPES; j++)
			drawn[j] += t->drawn[j];
	}
	mark = v;
	if (lost)
		wl_violation(&v, "a thread ran out of memory for its records: the run is not "
			     "checkable");
	/* every new order committed is in the store; those in doubt may be */
	if (!within(ta.orders - tb.orders, no, open[TPCC_NEWORDER]))
		wl_violation(&v, "orders: %llu before, %llu after, but %llu NewOrders committed "
			     "(%llu in doubt)", (unsigned long long)tb.orders,
			     (unsigned long long)ta.orders, (unsigned long long)no,
			     (unsigned long long)open[TPCC_NEWORDER]);
	if (!within(ta.history - tb.history, pay, open[TPCC_PAYMENT]))
		wl_violation(&v, "history: %llu rows before, %llu after, but %llu Payments "
			     "committed (%llu in doubt)", (unsigned long long)tb.history,
			     (unsigned long long)ta.history, (unsigned long long)pay,
			     (unsigned long long)open[TPCC_PAYMENT]);
	if (ta.w_ytd - tb.w_ytd < paid || ta.w_ytd - tb.w_ytd > paid + open_paid)
		wl_violation(&v, "W_YTD: %lld cents before, %lld after, but Payments committed "
			     "%lld (%lld in doubt)", (long long)tb.w_ytd, (long long)ta.w_ytd,
			     (long long)paid, (long long)open_paid);
	/* new-order rows: made by NewOrders, taken by Deliveries, some of each in doubt */
	drift = (int64_t)(ta.neworders - tb.neworders) + (int64_t)dlv - (int64_t)no;
	if (drift < -(int64_t)open[TPCC_DELIVERY] || drift > (int64_t)open[TPCC_NEWORDER])
		wl_violation(&v, "new-order rows: %llu before, %llu after, with %llu NewOrders "
			     "and %llu deliveries committed (%llu, %llu in doubt)",
			     (unsigned long long)tb.neworders, (unsigned long long)ta.neworders,
			     (unsigned long long)no, (unsigned long long)dlv,
			     (unsigned long long)open[TPCC_NEWORDER],
			     (unsigned long long)open[TPCC_DELIVERY]);
	if (v == mark)
		wl_check_ok("across the run: %llu new orders, %llu payments (%lld cents), %llu "
			    "deliveries committed, all in the store", (unsigned long long)no,
			    (unsigned long long)pay, (long long)paid, (unsigned long long)dlv);
	mark = v;
	for (i = 0; i < TPCC_NTYPES; i++)
		ndrawn += drawn[i];
	for (i = 0; i < TPCC_NTYPES; i++) {
		double p = cfg->mix == TPCC_MIX_NEWORDER ? (i == TPCC_NEWORDER) :
			   tpcc_standard_mix[i] / 100.0;
		double got = ndrawn ? (double)drawn[i] / ndrawn : 0;

		if (c->attempted[i] != c->committed[i] + c->logical[i] + c->aborted[i] +
		    c->failed[i] + c->in_doubt[i] + c->unknown[i] + c->broken[i])
			wl_violation(&v, "%s: attempted %llu != committed + logical + aborted + "
				     "failed + in doubt + unknown", tpcc_type_names[i],
				     (unsigned long long)c->attempted[i]);
		if (ndrawn >= 1000 && !wl_share_plausible(got, p, ndrawn, 0))
			wl_violation(&v, "%s: %.4f of the business transactions, the mix says "
				     "%.4f", tpcc_type_names[i], got, p);
		if (i != TPCC_NEWORDER && c->logical[i])
			wl_violation(&v, "%s: %llu logical failures; only NewOrder rolls back",
				     tpcc_type_names[i], (unsigned long long)c->logical[i]);
	}
	if (v == mark)
		wl_check_ok("counters add up; %llu business transactions drawn, the mix as "
			    "drawn", (unsigned long long)ndrawn);
	return v;
}

int bench_tpcc_main(int argc, char **argv)
{
	static struct tpcc_ctx ctx;
	struct wl_workload w = {
		.name = "tpcc",
		.ntypes = TPCC_NTYPES,
		.type_names = tpcc_type_names,
		.txn_size = sizeof(struct tpcc_txn),
		.thread_size = sizeof(struct tpcc_thread),
		.tables = tpcc_tables,
		.ntables = sizeof(tpcc_tables),
		.ctx = &ctx,
		.default_protocol = XTX_PROTO_OCC,
		.longopts = tpcc_opts,
		.handle_opt = tpcc_handle_opt,
		.check_opts = tpcc_check_opts,
		.check_run = tpcc_check_run,
		.value_max = tpcc_value_max,
		.usage = tpcc_usage,
		.describe = tpcc_describe,
		.thread_init = tpcc_thread_init,
		.thread_free = tpcc_thread_free,
		.begin = tpcc_begin,
		.rearm = tpcc_rearm,
		.step = tpcc_step,
		.end = tpcc_end,
		.settled = tpcc_settled,
		.summary = tpcc_summary,
		.populate = tpcc_populate,
		.verify = tpcc_verify,
	};

	memset(&ctx, 0, sizeof(ctx));
	ctx.per_server = 1;
	ctx.cfg.items = TPCC_ITEMS;
	ctx.cfg.customers = TPCC_CUSTOMERS;
	ctx.cfg.mix = TPCC_MIX_STANDARD;
	return wl_main(&w, argc, argv);
}
