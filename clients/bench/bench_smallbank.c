// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench smallbank: SmallBank's six transactions over libxtx (2PL by default), §2.8's checks. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"
#include "num.h"
#include "smallbank.h"
#include "smallbank_txn.h"
#include "wlbench.h"

/* x[] counters */
#define SB_X_SP_SHORT		0	/* SendPayments without the funds */
#define SB_X_WC_PENALTY		1	/* WriteChecks that overdrew */

struct sb_ctx {
	struct sb_cfg cfg;
	bool accounts_set, hot_set;
	double hot_frac;
};

/* In-doubt transactions left unanswered whose deltas the conservation check tries in every combination. */
#define SB_DOUBT_MAX		16

/*
 * A transaction that ended in doubt: its delta counts once the servers say
 * it committed, and so does the overdraft it may have left.
 */
struct sb_doubt {
	uint64_t txn_id;
	int64_t delta;
	int64_t debited;	/* the account it may have overdrawn, or -1 */
};

/* The account a committed x may have left below zero (WriteCheck, Amalgamate's debt), or -1. */
static int64_t sb_debited(const struct sb_txn *x)
{
	if (x->type == SB_WC)
		return x->a0;
	if (x->type == SB_AMG && x->moved_debt)
		return x->a1;
	return -1;
}

struct sb_thread {
	bool verify;
	int64_t delta;		/* cents of every committed transaction, summed */
	struct sb_doubt *doubt;		/* in-doubt transactions not answered (yet) */
	unsigned int ndoubt, doubt_cap;
	bool doubt_lost;		/* one could not be kept: the check stays strict */
	uint64_t committed[SB_NTYPES];
	/*
	 * --verify, [N]: accounts whose checking a committed transaction may
	 * have made negative: a WC's debit, or an AMG moving an overdraft in.
	 */
	uint8_t *debited;
};

enum {
	OPT_ACCOUNTS = 0x200,
	OPT_HOT_FRAC,
	OPT_HOT_PROB,
	OPT_MIX,
};

static const struct option sb_opts[] = {
	{ "accounts", required_argument, NULL, OPT_ACCOUNTS },
	{ "hot-frac", required_argument, NULL, OPT_HOT_FRAC },
	{ "hot-prob", required_argument, NULL, OPT_HOT_PROB },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ NULL, 0, NULL, 0 },
};

static const uint8_t sb_tables[] = { SB_SAV, SB_CHK };

static void sb_usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench smallbank --servers IP,IP,IP [options]\n"
		"SmallBank (Alomari et al., ICDE 2008) as libxtx transactions, no-wait 2PL by\n"
		"default: the five programs of Alomari et al. plus SendPayment, mixed\n"
		"AMG 15, BAL 15, DC 15, SP 25, TS 15, WC 15.  SAVINGS is table 8 and\n"
		"CHECKING table 9, keyed by account id 0..N-1, valued in int64 cents.\n"
		"A SendPayment without the funds is a logical failure (a user abort, not\n"
		"committed); a WriteCheck that overdraws commits with a $1 penalty.\n"
		"Amounts: DC $1.30, SP $5.00, TS $20.20, WC $5.00.\n"
		"\n"
		"SmallBank options:\n"
		"      --accounts N          accounts (default 100000 per thread, as FaSST)\n"
		"      --hot-frac F          the hot set is accounts 0..F*N-1 (default 0.04)\n"
		"      --hot-prob P          a transaction's accounts are all hot with\n"
		"                            probability P, else uniform over all N (default\n"
		"                            0.9; 0: uniform)\n"
		"      --mix W,W,W,W,W,W     weights of AMG,BAL,DC,SP,TS,WC (default\n"
		"                            15,15,15,25,15,15)\n"
		"\n"
		"--verify checks money conservation exactly (the balances' sum moved by\n"
		"the acknowledged deltas: +130 DC, +2020 TS, -500/-600 WC), N rows per table,\n"
		"savings never negative, checking negative only where a WC overdrew (or an\n"
		"AMG moved such an overdraft).\n");
}

static int parse_mix(const char *s, unsigned int *mix)
{
	char *copy = strdup(s), *save = NULL, *tok;
	unsigned int i = 0, sum = 0;
	int rc = -1;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint32_t w;

		if (i == SB_NTYPES || xtx_parse_u32("--mix", tok, 0, 1000000, &w))
			goto out;
		mix[i++] = w;
		sum += w;
	}
	if (i == SB_NTYPES && sum)
		rc = 0;
out:
	if (rc)
		fprintf(stderr, "Error: --mix: want %u weights, not all 0, not '%s'\n", SB_NTYPES,
			s);
	free(copy);
	return rc;
}

static int sb_handle_opt(void *vctx, int c, const char *arg)
{
	struct sb_ctx *ctx = vctx;

	switch (c) {
	case OPT_ACCOUNTS:
		ctx->accounts_set = true;
		return xtx_parse_u32("--accounts", arg, 2, SB_MAX_ACCOUNTS, &ctx->cfg.accounts);
	case OPT_HOT_FRAC:
		ctx->hot_set = true;
		return xtx_parse_double("--hot-frac", arg, 0, 1, &ctx->hot_frac);
	case OPT_HOT_PROB:
		return xtx_parse_double("--hot-prob", arg, 0, 1, &ctx->cfg.hot_prob);
	case OPT_MIX:
		return parse_mix(arg, ctx->cfg.mix);
	}
	return -1;
}

static int sb_check_opts(void *vctx, unsigned int threads, uint64_t seed)
{
	struct sb_ctx *ctx = vctx;
	struct sb_cfg *cfg = &ctx->cfg;

	if (!ctx->accounts_set)
		cfg->accounts = 100000 * threads;
	cfg->seed = seed;
	cfg->hot = ctx->hot_set ? (uint32_t)llround(ctx->hot_frac * cfg->accounts) :
				  sb_default_hot(cfg->accounts);
	if (cfg->hot < 2)
		cfg->hot = 2;
	if (cfg->hot > cfg->accounts)
		cfg->hot = cfg->accounts;
	return 0;
}

static void sb_describe(const void *vctx, bool json)
{
	const struct sb_cfg *c = &((const struct sb_ctx *)vctx)->cfg;
	const unsigned int *m = c->mix;

	if (json) {
		printf("\"accounts\":%u,\"hot\":%u,\"hot_prob\":%.3f,\"mix\":\"%u,%u,%u,%u,%u,%u\",",
		       c->accounts, c->hot, c->hot_prob, m[0], m[1], m[2], m[3], m[4], m[5]);
		return;
	}
	printf("accounts=%u hot=%u hot_prob=%.2f mix=%u,%u,%u,%u,%u,%u (SP without funds is "
	       "not committed)\n", c->accounts, c->hot, c->hot_prob, m[0], m[1], m[2], m[3],
	       m[4], m[5]);
}

static int sb_thread_init(void *vctx, void *wt, const struct wl_tinfo *ti)
{
	const struct sb_cfg *cfg = &((struct sb_ctx *)vctx)->cfg;
	struct sb_thread *t = wt;

	t->verify = ti->verify;
	if (!t->verify)
		return 0;
	t->debited = calloc(cfg->accounts, 1);
	if (!t->debited) {
		fprintf(stderr, "Error: --verify: %u accounts: %s\n", cfg->accounts,
			strerror(ENOMEM));
		return -1;
	}
	return 0;
}

static void sb_thread_free(void *vctx, void *wt)
{
	(void)vctx;
	free(((struct sb_thread *)wt)->debited);
	free(((struct sb_thread *)wt)->doubt);
}

/* The servers' answer about an in-doubt transaction: its delta is in the accounts, or not. */
static void sb_settled(void *vctx, void *wt, uint64_t txn_id, enum xtx_outcome o)
{
	struct sb_thread *t = wt;
	unsigned int i;

	(void)vctx;
	if (o != XTX_COMMITTED && o != XTX_ABORTED)
		return;
	for (i = 0; i < t->ndoubt && t->doubt[i].txn_id != txn_id; i++)
		;
	if (i == t->ndoubt)
		return;
	if (o == XTX_COMMITTED) {
		t->delta += t->doubt[i].delta;
		if (t->debited && t->doubt[i].debited >= 0)
			t->debited[t->doubt[i].debited] = 1;
	}
	t->doubt[i] = t->doubt[--t->ndoubt];
}

static unsigned int sb_begin(void *vctx, void *wt, void *txn, const struct wl_tinfo *ti)
{
	const struct sb_cfg *cfg = &((struct sb_ctx *)vctx)->cfg;
	enum sb_type type = sb_pick_type(cfg, ti->rng);
	uint32_t a0, a1;

	(void)wt;
	sb_pick_accounts(cfg, type, ti->rng, &a0, &a1);
	sb_txn_arm(txn, type, a0, a1);
	return type;
}

static void sb_rearm(void *vctx, void *wt, void *txn, const struct wl_tinfo *ti)
{
	struct sb_txn *x = txn;

	(void)vctx;
	(void)wt;
	(void)ti;
	sb_txn_arm(x, x->type, x->a0, x->a1);
}

static enum wl_verdict sb_end(void *vctx, void *wt, void *txn, const struct xtx_txn_result *res,
			      uint64_t *xc)
{
	struct sb_thread *t = wt;
	struct sb_txn *x = txn;

	(void)vctx;
	switch (res->outcome) {
	case XTX_COMMITTED:
		/* every acknowledged commit's delta, for the conservation identity */
		t->delta += x->delta;
		t->committed[x->type]++;
		if (x->type == SB_WC)
			xc[SB_X_WC_PENALTY] += x->penalty;
		if (t->debited && sb_debited(x) >= 0)
			t->debited[sb_debited(x)] = 1;
		return WL_COMMITTED;
	case XTX_FAILED:
		return WL_FAILED;
	case XTX_IN_DOUBT:
		/* its delta is in the accounts if the servers say it committed (sb_settled) */
		if (t->ndoubt == t->doubt_cap) {
			unsigned int cap = t->doubt_cap ? 2 * t->doubt_cap : 16;
			struct sb_doubt *d = realloc(t->doubt, cap * sizeof(*d));

			if (!d) {
				t->doubt_lost = true;
				return WL_IN_DOUBT;
			}
			t->doubt = d;
			t->doubt_cap = cap;
		}
		t->doubt[t->ndoubt++] = (struct sb_doubt){ .txn_id = res->txn_id, .delta = x->delta,
							    .debited = sb_debited(x) };
		return WL_IN_DOUBT;
	default:
		break;
	}
	if (x->broken)
		return WL_BROKEN;
	if (res->cause == XTX_CAUSE_USER && x->logical) {
		xc[SB_X_SP_SHORT]++;
		return WL_LOGICAL;
	}
	return WL_ABORTED;
}

static void sb_summary(const void *vctx, const struct wl_counts *c, double secs, bool json)
{
	uint64_t att = 0, ok = 0;
	double d = secs > 0 ? secs : 1;
	unsigned int i;

	(void)vctx;
	for (i = 0; i < SB_NTYPES; i++) {
		att += c->attempted[i];
		ok += c->committed[i];
	}
	if (json) {
		printf("\"rates\":{\"attempts_per_s\":%.1f,\"committed_per_s\":%.1f},"
		       "\"sp_insufficient_funds\":%llu,\"wc_penalty\":%llu,", att / d, ok / d,
		       (unsigned long long)c->x[SB_X_SP_SHORT],
		       (unsigned long long)c->x[SB_X_WC_PENALTY]);
		return;
	}
	printf("rates: attempts/s=%.0f  committed/s=%.0f\n", att / d, ok / d);
	printf("SP without funds=%llu (%.1f%% of SP)  WC overdrafts=%llu (%.1f%% of committed "
	       "WC)\n", (unsigned long long)c->x[SB_X_SP_SHORT],
	       c->attempted[SB_SP] ? 100.0 * c->x[SB_X_SP_SHORT] / c->attempted[SB_SP] : 0.0,
	       (unsigned long long)c->x[SB_X_WC_PENALTY],
	       c->committed[SB_WC] ? 100.0 * c->x[SB_X_WC_PENALTY] / c->committed[SB_WC] : 0.0);
}

static int sb_populate(void *vctx, wl_emit_fn emit, void *arg)
{
	const struct sb_cfg *cfg = &((struct sb_ctx *)vctx)->cfg;
	uint8_t v[SB_VLEN];
	uint32_t a;
	unsigned int i;

	for (a = 0; a < cfg->accounts; a++) {
		for (i = 0; i < sizeof(sb_tables); i++) {
			sb_encode(sb_initial_balance(cfg, sb_tables[i], a), v);
			if (emit(arg, sb_tables[i], a, v, sizeof(v)))
				return -1;
		}
	}
	return 0;
}

/* ---- --verify: workloads.md §2.8 ---- */

/* Exactly accounts 0..N-1 in both tables; sums them into *total. */
static void check_rows(const struct sb_cfg *cfg, const struct wl_snap *s, const char *when,
		       __int128 *total, unsigned long *v)
{
	unsigned int i;

	*total = 0;
	for (i = 0; i < sizeof(sb_tables); i++) {
		const struct wl_rec *r;
		size_t n = wl_snap_table(s, sb_tables[i], &r), j;

		if (n != cfg->accounts) {
			wl_violation(v, "%s: table %u has %zu rows, not the %u accounts", when,
				     sb_tables[i], n, cfg->accounts);
		}
		for (j = 0; j < n; j++) {
			int64_t b;

			if (r[j].key >= cfg->accounts || sb_decode(r[j].value, r[j].vlen, &b)) {
				wl_violation(v, "%s: table %u key %llu: not an account of 0..%u "
					     "holding 8 bytes", when, sb_tables[i],
					     (unsigned long long)r[j].key, cfg->accounts - 1);
				continue;
			}
			*total += b;
		}
	}
}

/*
 * Whether the money missing from the committed deltas is the sum of some
 * in-doubt transactions' deltas (each one either committed or not).
 */
static bool doubt_explains(void *const *wts, unsigned int nthreads, __int128 diff)
{
	int64_t d[SB_DOUBT_MAX];
	unsigned int i, j, n = 0;
	uint32_t m;

	for (i = 0; i < nthreads; i++) {
		const struct sb_thread *t = wts[i];

		if (t->doubt_lost || t->ndoubt > SB_DOUBT_MAX - n)
			return false;	/* too many to try: the check stays strict */
		for (j = 0; j < t->ndoubt; j++)
			d[n++] = t->doubt[j].delta;
	}
	for (m = 1; m < (1u << n); m++) {
		__int128 s = 0;

		for (j = 0; j < n; j++)
			if (m & (1u << j))
				s += d[j];
		if (s == diff)
			return true;
	}
	return false;
}

static unsigned long sb_verify(void *vctx, const struct wl_snap *b, const struct wl_snap *a,
			       void *const *wts, unsigned int nthreads,
			       const struct wl_counts *c)
{
	const struct sb_ctx *ctx = vctx;
	const struct sb_cfg *cfg = &ctx->cfg;
	__int128 s0, s1, delta = 0;
	unsigned long v = 0, mark;
	const struct wl_rec *r;
	size_t n, j;
	uint64_t att = 0, neg = 0;
	unsigned int i, sum = 0;

	check_rows(cfg, b, "before", &s0, &v);
	check_rows(cfg, a, "after", &s1, &v);
	if (!v)
		wl_check_ok("exactly %u SAVINGS and %u CHECKING rows before and after",
			    cfg->accounts, cfg->accounts);
	for (i = 0; i < nthreads; i++)
		delta += ((const struct sb_thread *)wts[i])->delta;
	if (s1 != s0 + delta && doubt_explains(wts, nthreads, s1 - s0 - delta))
		wl_check_ok("conservation: %lld cents before + %lld committed + some of the "
			    "in-doubt deltas = %lld after", (long long)s0, (long long)delta,
			    (long long)s1);
	else if (s1 != s0 + delta)
		wl_violation(&v, "money: %lld cents before + %lld committed deltas = %lld, but "
			     "the accounts hold %lld", (long long)s0, (long long)delta,
			     (long long)(s0 + delta), (long long)s1);
	else
		wl_check_ok("conservation: %lld cents before + %lld from committed DC/TS/WC = "
			    "%lld after", (long long)s0, (long long)delta, (long long)s1);

	mark = v;
	n = wl_snap_table(a, SB_SAV, &r);
	for (j = 0; j < n; j++) {
		int64_t bal;

		if (!sb_decode(r[j].value, r[j].vlen, &bal) && bal < 0)
			wl_violation(&v, "SAVINGS[%llu] = %lld cents: savings never go negative",
				     (unsigned long long)r[j].key, (long long)bal);
	}
	n = wl_snap_table(a, SB_CHK, &r);
	for (j = 0; j < n; j++) {
		const struct wl_rec *old = wl_snap_find(b, SB_CHK, r[j].key);
		int64_t bal, was = 0;
		bool debited = false;

		if (sb_decode(r[j].value, r[j].vlen, &bal) || bal >= 0 ||
		    r[j].key >= cfg->accounts)
			continue;
		neg++;
		for (i = 0; i < nthreads && !debited; i++)
			debited = ((const struct sb_thread *)wts[i])->debited[r[j].key];
		if (old && !sb_decode(old->value, old->vlen, &was) && was < 0)
			continue;
		if (!debited)
			wl_violation(&v, "CHECKING[%llu] = %lld cents, but no committed WriteCheck "
				     "debited it nor Amalgamate moved an overdraft to it",
				     (unsigned long long)r[j].key, (long long)bal);
	}
	if (v == mark)
		wl_check_ok("savings >= 0; %llu negative checking balances, each from a "
			    "WriteCheck's overdraft", (unsigned long long)neg);

	mark = v;
	/* the mix shapes new transactions; --retry same repeats some */
	for (i = 0; i < SB_NTYPES; i++) {
		att += c->attempted[i] - c->retried[i];
		sum += cfg->mix[i];
	}
	for (i = 0; i < SB_NTYPES; i++) {
		double p = (double)cfg->mix[i] / sum;
		double got = att ? (double)(c->attempted[i] - c->retried[i]) / att : 0;

		if (c->attempted[i] != c->committed[i] + c->logical[i] + c->aborted[i] +
		    c->failed[i] + c->in_doubt[i] + c->unknown[i] + c->broken[i])
			wl_violation(&v, "%s: attempted %llu != committed + logical + aborted + "
				     "failed + in doubt + unknown", sb_type_names[i],
				     (unsigned long long)c->attempted[i]);
		if (att >= 1000 && !wl_share_plausible(got, p, att, 0))
			wl_violation(&v, "%s: %.4f of the attempts, the mix says %.4f",
				     sb_type_names[i], got, p);
		if (i != SB_SP && c->logical[i])
			wl_violation(&v, "%s: %llu logical failures; only SP has them",
				     sb_type_names[i], (unsigned long long)c->logical[i]);
	}
	if (v == mark)
		wl_check_ok("counters add up; mix as drawn");
	return v;
}

int bench_smallbank_main(int argc, char **argv)
{
	static struct sb_ctx ctx;
	struct wl_workload w = {
		.name = "smallbank",
		.ntypes = SB_NTYPES,
		.type_names = sb_type_names,
		.txn_size = sizeof(struct sb_txn),
		.thread_size = sizeof(struct sb_thread),
		.tables = sb_tables,
		.ntables = sizeof(sb_tables),
		.ctx = &ctx,
		.default_protocol = XTX_PROTO_2PL,
		.longopts = sb_opts,
		.handle_opt = sb_handle_opt,
		.check_opts = sb_check_opts,
		.usage = sb_usage,
		.describe = sb_describe,
		.thread_init = sb_thread_init,
		.thread_free = sb_thread_free,
		.begin = sb_begin,
		.rearm = sb_rearm,
		.step = sb_step,
		.end = sb_end,
		.settled = sb_settled,
		.summary = sb_summary,
		.populate = sb_populate,
		.verify = sb_verify,
	};

	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg.hot_prob = 0.9;
	memcpy(ctx.cfg.mix, sb_default_mix, sizeof(ctx.cfg.mix));
	return wl_main(&w, argc, argv);
}
