// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench tatp: the TATP mix over libxtx (OCC by default), its three rates and §1.7's checks. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"
#include "num.h"
#include "tatp.h"
#include "tatp_txn.h"
#include "wlbench.h"

struct tatp_ctx {
	struct tatp_cfg cfg;
};

/* A committed insert or delete of a CF row, for the per-key alternation check. */
struct cf_event {
	uint64_t key;
	int8_t delta;		/* +1 insert, -1 delete */
};

/* An UPDATE_LOCATION's unique value and whether it committed. */
struct ul_event {
	uint32_t s_id;
	uint32_t vlr;
	uint8_t committed;
};

struct tatp_thread {
	uint32_t client_id;
	uint32_t ul_seq;
	bool verify;
	struct cf_event *cf;
	size_t ncf, capcf;
	struct ul_event *ul;
	size_t nul, capul;
	bool oom;
};

enum {
	OPT_SUBSCRIBERS = 0x200,
	OPT_DIST,
	OPT_POPULATION,
	OPT_END_TIME,
	OPT_MIX,
};

static const struct option tatp_opts[] = {
	{ "subscribers", required_argument, NULL, OPT_SUBSCRIBERS },
	{ "dist", required_argument, NULL, OPT_DIST },
	{ "population", required_argument, NULL, OPT_POPULATION },
	{ "end-time", required_argument, NULL, OPT_END_TIME },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ NULL, 0, NULL, 0 },
};

static const uint8_t tatp_tables[] = { TATP_SUB, TATP_SEC, TATP_AI, TATP_SF, TATP_CF };

static void tatp_usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench tatp --servers IP,IP,IP [options]\n"
		"The TATP benchmark (Telecom Application Transaction Processing, v1.0) as libxtx\n"
		"transactions: 80%% reads, NURand subscribers, OCC by default.  Subscriber ids\n"
		"are 0-based.  Tables 1-5 (SUBSCRIBER, SECONDARY_SUBSCRIBER index by sub_nbr,\n"
		"ACCESS_INFO, SPECIAL_FACILITY, CALL_FORWARDING) with 8-byte keys\n"
		"(clients/workloads/tatp.h).\n"
		"\n"
		"Three rates: attempts/s; committed/s in the spec's MQTh sense (everything\n"
		"that ended without a concurrency abort, except ICF's accepted errors);\n"
		"successful/s in FaSST/DINT's sense (logically successful commits).\n"
		"A logical failure (missing or inactive rows, ICF's duplicate key or missing\n"
		"SF row, DCF with nothing to delete) ends as a user abort, counted apart\n"
		"from concurrency aborts.  Aborted transactions are not retried (--retry).\n"
		"\n"
		"TATP options:\n"
		"      --subscribers P       subscribers (default 1000000; A of NURand by P)\n"
		"      --dist nurand|uniform subscriber ids (default nurand)\n"
		"      --population spec|fasst-steady\n"
		"                            CALL_FORWARDING rows as the spec makes them\n"
		"                            (default) or in FaSST's steady state\n"
		"      --end-time 1-24|0-23  GND/ICF end_time inputs (0-23: FaSST/DINT parity)\n"
		"      --mix W,W,W,W,W,W,W   weights of GSD,GND,GAD,USD,UL,ICF,DCF\n"
		"                            (default 35,10,35,2,14,2,2)\n"
		"\n"
		"Example: xtxbench tatp --servers 10.77.0.2,10.77.1.2,10.77.2.2 --subscribers 10000\n"
		"         --ctl ns0:if0,ns1:if1,ns2:if2 --populate --duration 3 --verify\n");
}

static int parse_mix(const char *s, unsigned int *mix, unsigned int n, const char *what)
{
	char *copy = strdup(s), *save = NULL, *tok;
	unsigned int i = 0, sum = 0;
	int rc = -1;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint32_t w;

		if (i == n || xtx_parse_u32(what, tok, 0, 1000000, &w))
			goto out;
		mix[i++] = w;
		sum += w;
	}
	if (i != n || !sum)
		goto out;
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "Error: %s: want %u weights, not all 0, not '%s'\n", what, n, s);
	free(copy);
	return rc;
}

static int tatp_handle_opt(void *ctx, int c, const char *arg)
{
	struct tatp_cfg *cfg = &((struct tatp_ctx *)ctx)->cfg;

	switch (c) {
	case OPT_SUBSCRIBERS:
		return xtx_parse_u32("--subscribers", arg, 1, TATP_MAX_SUBSCRIBERS,
				     &cfg->subscribers);
	case OPT_DIST:
		if (strcmp(arg, "nurand") && strcmp(arg, "uniform")) {
			fprintf(stderr, "Error: --dist: '%s' is not nurand or uniform\n", arg);
			return -1;
		}
		cfg->uniform = !strcmp(arg, "uniform");
		return 0;
	case OPT_POPULATION:
		if (strcmp(arg, "spec") && strcmp(arg, "fasst-steady")) {
			fprintf(stderr, "Error: --population: '%s' is not spec or fasst-steady\n",
				arg);
			return -1;
		}
		cfg->population = strcmp(arg, "spec") ? TATP_POP_STEADY : TATP_POP_SPEC;
		return 0;
	case OPT_END_TIME:
		if (strcmp(arg, "1-24") && strcmp(arg, "0-23")) {
			fprintf(stderr, "Error: --end-time: '%s' is not 1-24 or 0-23\n", arg);
			return -1;
		}
		cfg->end_0_23 = !strcmp(arg, "0-23");
		return 0;
	case OPT_MIX:
		return parse_mix(arg, cfg->mix, TATP_NTYPES, "--mix");
	}
	return -1;
}

static int tatp_check_opts(void *ctx, unsigned int threads, uint64_t seed)
{
	struct tatp_cfg *cfg = &((struct tatp_ctx *)ctx)->cfg;

	(void)threads;
	cfg->seed = seed;
	return 0;
}

static void tatp_describe(const void *ctx, bool json)
{
	const struct tatp_cfg *c = &((const struct tatp_ctx *)ctx)->cfg;
	const unsigned int *m = c->mix;

	if (json) {
		printf("\"subscribers\":%u,\"dist\":\"%s\",\"nurand_a\":%u,\"population\":\"%s\","
		       "\"end_time\":\"%s\",\"mix\":\"%u,%u,%u,%u,%u,%u,%u\",", c->subscribers,
		       c->uniform ? "uniform" : "nurand", tatp_nurand_a(c->subscribers),
		       c->population == TATP_POP_SPEC ? "spec" : "fasst-steady",
		       c->end_0_23 ? "0-23" : "1-24", m[0], m[1], m[2], m[3], m[4], m[5], m[6]);
		return;
	}
	printf("subscribers=%u (0-based) dist=%s", c->subscribers,
	       c->uniform ? "uniform" : "nurand");
	if (!c->uniform)
		printf(" A=%u", tatp_nurand_a(c->subscribers));
	printf(" population=%s end_time=%s mix=%u,%u,%u,%u,%u,%u,%u\n",
	       c->population == TATP_POP_SPEC ? "spec" : "fasst-steady",
	       c->end_0_23 ? "0-23" : "1-24", m[0], m[1], m[2], m[3], m[4], m[5], m[6]);
}

static int tatp_thread_init(void *ctx, void *wt, const struct wl_tinfo *ti)
{
	struct tatp_thread *t = wt;

	(void)ctx;
	t->client_id = ti->client_id;
	t->verify = ti->verify;
	return 0;
}

static void tatp_thread_free(void *ctx, void *wt)
{
	struct tatp_thread *t = wt;

	(void)ctx;
	free(t->cf);
	free(t->ul);
}

/*
 * UL's new vlr_location: unique per run (client id in the top byte, a
 * sequence below), so the check can tell committed from aborted values.
 */
static uint32_t next_vlr(struct tatp_thread *t)
{
	return (t->client_id & 0xff) << 24 | (++t->ul_seq & 0xffffff);
}

static unsigned int tatp_begin(void *ctx, void *wt, void *txn, const struct wl_tinfo *ti)
{
	const struct tatp_cfg *cfg = &((struct tatp_ctx *)ctx)->cfg;
	struct tatp_input in;
	enum tatp_type type = tatp_pick_type(cfg, ti->rng);

	tatp_draw_input(cfg, type, type == TATP_UL ? next_vlr(wt) : 0, ti->rng, &in);
	tatp_txn_arm(txn, &in);
	return type;
}

static void tatp_rearm(void *ctx, void *wt, void *txn, const struct wl_tinfo *ti)
{
	struct tatp_txn *x = txn;
	struct tatp_input in = x->in;

	(void)ctx;
	(void)ti;
	/* a retried UL writes a value of its own, so each attempt stays traceable */
	if (in.type == TATP_UL)
		in.vlr = next_vlr(wt);
	tatp_txn_arm(x, &in);
}

static void *grow(void *p, size_t *cap, size_t n, size_t size, bool *oom)
{
	void *np;

	if (n < *cap)
		return p;
	np = realloc(p, (*cap ? 2 * *cap : 1024) * size);
	if (!np) {
		*oom = true;
		return p;
	}
	*cap = *cap ? 2 * *cap : 1024;
	return np;
}

static void log_cf(struct tatp_thread *t, uint64_t key, int8_t delta)
{
	t->cf = grow(t->cf, &t->capcf, t->ncf, sizeof(*t->cf), &t->oom);
	if (t->ncf < t->capcf)
		t->cf[t->ncf++] = (struct cf_event){ key, delta };
}

static void log_ul(struct tatp_thread *t, uint32_t s_id, uint32_t vlr, bool committed)
{
	t->ul = grow(t->ul, &t->capul, t->nul, sizeof(*t->ul), &t->oom);
	if (t->nul < t->capul)
		t->ul[t->nul++] = (struct ul_event){ s_id, vlr, committed };
}

static enum wl_verdict tatp_end(void *ctx, void *wt, void *txn, const struct xtx_txn_result *res,
				uint64_t *xc)
{
	struct tatp_thread *t = wt;
	struct tatp_txn *x = txn;
	const struct tatp_input *in = &x->in;

	(void)ctx;
	(void)xc;
	if (t->verify) {
		bool ok = res->outcome == XTX_COMMITTED;

		if (in->type == TATP_UL)
			log_ul(t, in->s_id, in->vlr, ok);
		else if (ok && in->type == TATP_ICF)
			log_cf(t, tatp_cf_key(in->s_id, in->sf_type, in->start_time), 1);
		else if (ok && in->type == TATP_DCF)
			log_cf(t, tatp_cf_key(in->s_id, in->sf_type, in->start_time), -1);
	}
	switch (res->outcome) {
	case XTX_COMMITTED:
		return WL_COMMITTED;
	case XTX_FAILED:
		return WL_FAILED;
	case XTX_IN_DOUBT:
		return WL_IN_DOUBT;
	default:
		break;
	}
	if (x->broken)
		return WL_BROKEN;
	return tatp_txn_logical(x, res) ? WL_LOGICAL : WL_ABORTED;
}

static uint64_t sum_n(const uint64_t *a, unsigned int n)
{
	uint64_t s = 0;

	while (n--)
		s += *a++;
	return s;
}

static void tatp_summary(const void *ctx, const struct wl_counts *c, double secs, bool json)
{
	uint64_t att = sum_n(c->attempted, TATP_NTYPES), ok = sum_n(c->committed, TATP_NTYPES);
	uint64_t mqth = ok + sum_n(c->logical, TATP_NTYPES) - c->logical[TATP_ICF];
	double d = secs > 0 ? secs : 1;
	unsigned int i;

	(void)ctx;
	if (json) {
		printf("\"rates\":{\"attempts_per_s\":%.1f,\"committed_mqth_per_s\":%.1f,"
		       "\"successful_per_s\":%.1f},\"success_rate\":{", att / d, mqth / d, ok / d);
		for (i = 0; i < TATP_NTYPES; i++) {
			uint64_t n = c->committed[i] + c->logical[i];

			printf("%s\"%s\":%.4f", i ? "," : "", tatp_type_names[i],
			       n ? (double)c->committed[i] / n : 0.0);
		}
		printf("},");
		return;
	}
	printf("rates: attempts/s=%.0f  committed/s=%.0f (MQTh: all but concurrency aborts and "
	       "ICF errors)  successful/s=%.0f (FaSST/DINT)\n", att / d, mqth / d, ok / d);
	printf("logical success:");
	for (i = 0; i < TATP_NTYPES; i++) {
		uint64_t n = c->committed[i] + c->logical[i];

		printf(" %s=%.3f", tatp_type_names[i], n ? (double)c->committed[i] / n : 0.0);
	}
	putchar('\n');
}

static int tatp_populate(void *ctx, wl_emit_fn emit, void *arg)
{
	const struct tatp_cfg *cfg = &((struct tatp_ctx *)ctx)->cfg;
	struct tatp_row rows[TATP_MAX_ROWS_PER_SUB];
	uint32_t s;
	unsigned int n, i;

	for (s = 0; s < cfg->subscribers; s++) {
		n = tatp_rows_of(cfg, s, rows);
		for (i = 0; i < n; i++)
			if (emit(arg, rows[i].table, rows[i].key, rows[i].value, rows[i].vlen))
				return -1;
	}
	return 0;
}

/* ---- --verify: workloads.md §1.7 ---- */

static int cf_cmp(const void *a, const void *b)
{
	const struct cf_event *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static int ul_cmp(const void *a, const void *b)
{
	const struct ul_event *x = a, *y = b;

	if (x->s_id != y->s_id)
		return x->s_id < y->s_id ? -1 : 1;
	return x->vlr < y->vlr ? -1 : x->vlr > y->vlr;
}

/* 1: immutable tables keep their rows, and only the fields the mix writes change. */
static void check_immutable(const struct wl_snap *b, const struct wl_snap *a,
			    unsigned long *v)
{
	static const uint8_t tables[] = { TATP_SUB, TATP_SEC, TATP_AI, TATP_SF };
	unsigned long before = *v;
	unsigned int ti;

	for (ti = 0; ti < sizeof(tables); ti++) {
		const struct wl_rec *rb, *ra;
		size_t nb = wl_snap_table(b, tables[ti], &rb), na = wl_snap_table(a, tables[ti], &ra);
		size_t i;

		if (na != nb)
			wl_violation(v, "table %u had %zu rows, now %zu", tables[ti], nb, na);
		for (i = 0; i < nb; i++) {
			const struct wl_rec *x = wl_snap_find(a, rb[i].table, rb[i].key);
			uint8_t vb[XTX_VALUE_INLINE], va[XTX_VALUE_INLINE];

			if (!x) {
				wl_violation(v, "table %u key %#llx vanished", rb[i].table,
					     (unsigned long long)rb[i].key);
				continue;
			}
			memcpy(vb, rb[i].value, sizeof(vb));
			memcpy(va, x->value, sizeof(va));
			if (rb[i].table == TATP_SUB && rb[i].vlen == TATP_SUB_VLEN &&
			    x->vlen == TATP_SUB_VLEN) {
				/* USD writes bit_1, UL vlr_location */
				vb[TATP_SUB_OFF_BITS] &= ~1u;
				va[TATP_SUB_OFF_BITS] &= ~1u;
				memset(vb + TATP_SUB_OFF_VLR, 0, 4);
				memset(va + TATP_SUB_OFF_VLR, 0, 4);
			}
			if (rb[i].table == TATP_SF && rb[i].vlen == TATP_SF_VLEN &&
			    x->vlen == TATP_SF_VLEN)
				vb[TATP_SF_OFF_DATA_A] = va[TATP_SF_OFF_DATA_A] = 0;
			if (x->vlen != rb[i].vlen || memcmp(va, vb, x->vlen))
				wl_violation(v, "table %u key %#llx: a field no transaction writes "
					     "changed", rb[i].table, (unsigned long long)rb[i].key);
		}
	}
	if (*v == before)
		wl_check_ok("SUB, SEC, AI, SF: row counts and unwritten fields unchanged");
}

/* 1: every subscriber's sub_nbr and index row agree. */
static void check_sub_nbr(const struct wl_snap *a, unsigned long *v)
{
	const struct wl_rec *r;
	size_t n = wl_snap_table(a, TATP_SUB, &r), i;
	unsigned long before = *v;

	for (i = 0; i < n; i++) {
		struct tatp_sub sub;
		const struct wl_rec *sec;
		uint32_t s;

		if (tatp_sub_decode(r[i].value, r[i].vlen, &sub) || sub.s_id != r[i].key) {
			wl_violation(v, "SUB %llu: malformed, or its sub_nbr is not BCD(s_id)",
				     (unsigned long long)r[i].key);
			continue;
		}
		sec = wl_snap_find(a, TATP_SEC, tatp_sec_key(sub.s_id));
		if (!sec || tatp_sec_decode(sec->value, sec->vlen, &s) || s != sub.s_id)
			wl_violation(v, "SEC[BCD(%u)] does not lead back to subscriber %u",
				     sub.s_id, sub.s_id);
	}
	if (*v == before)
		wl_check_ok("%zu subscribers: sub_nbr = BCD(s_id) and its index row leads back", n);
}

/* 2-4: CF rows: exact count, per-key alternation of inserts and deletes, foreign keys. */
static void check_cf(const struct wl_snap *b, const struct wl_snap *a, struct cf_event *ev,
		     size_t nev, unsigned long *v)
{
	const struct wl_rec *rb, *ra;
	size_t nb = wl_snap_table(b, TATP_CF, &rb), na = wl_snap_table(a, TATP_CF, &ra), i, j;
	long long ins = 0, del = 0;
	unsigned long before = *v;

	qsort(ev, nev, sizeof(*ev), cf_cmp);
	for (i = 0; i < nev; i++) {
		if (ev[i].delta > 0)
			ins++;
		else
			del++;
	}
	if ((long long)na != (long long)nb + ins - del)
		wl_violation(v, "CF rows: %zu before + %lld inserted - %lld deleted != %zu after",
			     nb, ins, del, na);
	for (i = 0; i < nev; i = j) {
		bool p0 = wl_snap_find(b, TATP_CF, ev[i].key) != NULL;
		bool p1 = wl_snap_find(a, TATP_CF, ev[i].key) != NULL;
		int net = p0;

		for (j = i; j < nev && ev[j].key == ev[i].key; j++)
			net += ev[j].delta;
		if (net != 0 && net != 1)
			wl_violation(v, "CF %#llx: present %d before, %d committed inserts and "
				     "deletes add to %d: a lost or duplicated write",
				     (unsigned long long)ev[i].key, p0, (int)(j - i), net);
		else if (net != p1)
			wl_violation(v, "CF %#llx: should be %s after its committed inserts and "
				     "deletes, is %s", (unsigned long long)ev[i].key,
				     net ? "present" : "absent", p1 ? "present" : "absent");
	}
	/* keys nobody committed a change to keep their presence and value */
	for (i = 0; i < nb; i++) {
		struct cf_event k = { .key = rb[i].key };
		const struct wl_rec *x;

		if (bsearch(&k, ev, nev, sizeof(*ev), cf_cmp))
			continue;
		x = wl_snap_find(a, TATP_CF, rb[i].key);
		if (!x || x->vlen != rb[i].vlen || memcmp(x->value, rb[i].value, x->vlen))
			wl_violation(v, "CF %#llx: changed without a committed insert or delete",
				     (unsigned long long)rb[i].key);
	}
	for (i = 0; i < na; i++) {
		struct cf_event k = { .key = ra[i].key };
		uint64_t sf = tatp_sf_key(tatp_key_sid(ra[i].key), tatp_key_type(ra[i].key));

		if (!bsearch(&k, ev, nev, sizeof(*ev), cf_cmp) &&
		    !wl_snap_find(b, TATP_CF, ra[i].key))
			wl_violation(v, "CF %#llx: appeared without a committed insert",
				     (unsigned long long)ra[i].key);
		if (!wl_snap_find(a, TATP_SF, sf))
			wl_violation(v, "CF %#llx: its SPECIAL_FACILITY row does not exist",
				     (unsigned long long)ra[i].key);
	}
	if (*v == before)
		wl_check_ok("CF: %zu rows = %zu + %lld inserts - %lld deletes; every key's "
			    "history alternates; foreign keys hold", na, nb, ins, del);
}

/* 5: a final vlr_location is the initial one or a committed UL's, never an aborted one's. */
static void check_ul(const struct wl_snap *b, const struct wl_snap *a, struct ul_event *ev,
		     size_t nev, unsigned long *v)
{
	const struct wl_rec *ra;
	size_t na = wl_snap_table(a, TATP_SUB, &ra), i, lo = 0, j;
	unsigned long before = *v;
	uint64_t changed = 0, committed = 0;

	qsort(ev, nev, sizeof(*ev), ul_cmp);
	for (i = 0; i < nev; i++)
		committed += ev[i].committed;
	for (i = 0; i < na; i++) {
		const struct wl_rec *rb = wl_snap_find(b, TATP_SUB, ra[i].key);
		struct tatp_sub sa, sb;
		bool ok = false, aborted = false;

		if (!rb || tatp_sub_decode(ra[i].value, ra[i].vlen, &sa) ||
		    tatp_sub_decode(rb->value, rb->vlen, &sb))
			continue;	/* reported by the immutable-table check */
		while (lo < nev && ev[lo].s_id < sa.s_id)
			lo++;
		if (sa.vlr_location == sb.vlr_location)
			continue;
		changed++;
		for (j = lo; j < nev && ev[j].s_id == sa.s_id; j++) {
			if (ev[j].vlr != sa.vlr_location)
				continue;
			if (ev[j].committed)
				ok = true;
			else
				aborted = true;
		}
		if (!ok)
			wl_violation(v, "SUB %u: vlr_location %#x is %s", sa.s_id,
				     sa.vlr_location, aborted ?
				     "the value of an aborted UPDATE_LOCATION (a dirty write)" :
				     "neither its initial value nor a committed one");
	}
	if (*v == before)
		wl_check_ok("UL: %llu changed vlr_locations all from the %llu committed of %zu "
			    "attempts", (unsigned long long)changed, (unsigned long long)committed,
			    nev);
}

/* The CALL_FORWARDING rows the population has: what the success rates of §1.6 assume. */
static size_t populated_cf_rows(const struct tatp_cfg *cfg)
{
	struct tatp_row rows[TATP_MAX_ROWS_PER_SUB];
	unsigned int n, j;
	size_t cf = 0;
	uint32_t s;

	for (s = 0; s < cfg->subscribers; s++) {
		n = tatp_rows_of(cfg, s, rows);
		for (j = 0; j < n; j++)
			cf += rows[j].table == TATP_CF;
	}
	return cf;
}

/* Whether a type's logical success rate depends on the CALL_FORWARDING rows. */
static bool reads_cf(unsigned int type)
{
	return type == TATP_GND || type == TATP_ICF || type == TATP_DCF;
}

/*
 * 6: mix proportions and each type's logical success rate, within
 * wl_share_tolerance (a false alarm less than once in 10^12 checks).  The
 * rates of GND, ICF and DCF hold for the population's CALL_FORWARDING
 * rows; when earlier runs left others (cf_as_populated false) they are
 * not judged.
 */
/* Hoeffding: a mean over s subscribers' shares in [0, 1] strays this far once in 10^12. */
static double population_slack(uint32_t s)
{
	double t = sqrt(log(2 / WL_FALSE_ALARM) / (2.0 * (s ? s : 1)));

	return t > 0.01 ? t : 0.01;
}

static void check_stats(const struct tatp_cfg *cfg, const struct wl_counts *c, bool cf_as_populated,
			unsigned long *v)
{
	/* the mix shapes new transactions; --retry same repeats some */
	uint64_t att = sum_n(c->attempted, TATP_NTYPES) - sum_n(c->retried, TATP_NTYPES);
	unsigned int sum = 0, i;
	unsigned long before = *v;

	for (i = 0; i < TATP_NTYPES; i++)
		sum += cfg->mix[i];
	for (i = 0; i < TATP_NTYPES; i++) {
		uint64_t n = c->committed[i] + c->logical[i], held;
		double p = (double)cfg->mix[i] / sum;
		double got = att ? (double)(c->attempted[i] - c->retried[i]) / att : 0;
		/*
		 * A success rate also varies with the population (rows drawn per
		 * subscriber), beyond the n draws of the run: under NURand a few
		 * subscribers take much of the load; uniformly it is a mean over
		 * every subscriber, whose chance Hoeffding's bound caps.
		 */
		double slack = cfg->uniform ? population_slack(cfg->subscribers) : 0.08;

		held = c->attempted[i] - c->committed[i] - c->logical[i] - c->aborted[i] -
		       c->failed[i] - c->in_doubt[i] - c->unknown[i] - c->broken[i];
		if (held)
			wl_violation(v, "%s: attempted %llu != committed + logical + aborted + "
				     "failed + in doubt + unknown", tatp_type_names[i],
				     (unsigned long long)c->attempted[i]);
		if (att >= 1000 && !wl_share_plausible(got, p, att, 0))
			wl_violation(v, "%s: %.4f of the attempts, the mix says %.4f",
				     tatp_type_names[i], got, p);
		if (n < 200 || (!cf_as_populated && reads_cf(i)))
			continue;
		got = (double)c->committed[i] / n;
		if (i == TATP_GND) {
			if (got < 0.14 - wl_share_tolerance(0.14, n) - slack ||
			    got > 0.23 + wl_share_tolerance(0.23, n) + slack)
				wl_violation(v, "GND: logical success %.3f outside [0.14, 0.23]",
					     got);
		} else if (!wl_share_plausible(got, tatp_expected_success[i], n,
					     tatp_expected_success[i] < 1 ? slack : 0)) {
			wl_violation(v, "%s: logical success %.4f of %llu, expected %.4f",
				     tatp_type_names[i], got, (unsigned long long)n,
				     tatp_expected_success[i]);
		}
	}
	if (*v == before)
		wl_check_ok("counters add up; mix and logical success rates as expected%s",
			    cf_as_populated ? "" : " (GND, ICF, DCF not judged: earlier runs changed "
			    "the CALL_FORWARDING rows)");
}

static unsigned long tatp_verify(void *ctx, const struct wl_snap *b, const struct wl_snap *a,
				 void *const *wts, unsigned int nthreads,
				 const struct wl_counts *c)
{
	const struct tatp_cfg *cfg = &((struct tatp_ctx *)ctx)->cfg;
	struct cf_event *cf = NULL;
	struct ul_event *ul = NULL;
	size_t ncf = 0, nul = 0;
	unsigned long v = 0;
	unsigned int i;

	for (i = 0; i < nthreads; i++) {
		const struct tatp_thread *t = wts[i];

		if (t->oom) {
			wl_violation(&v, "thread %u ran out of memory for its logs", i);
			return v;
		}
		ncf += t->ncf;
		nul += t->nul;
	}
	cf = malloc((ncf ? ncf : 1) * sizeof(*cf));
	ul = malloc((nul ? nul : 1) * sizeof(*ul));
	if (!cf || !ul) {
		wl_violation(&v, "no memory to merge the threads' logs");
		goto out;
	}
	ncf = nul = 0;
	for (i = 0; i < nthreads; i++) {
		const struct tatp_thread *t = wts[i];

		memcpy(cf + ncf, t->cf, t->ncf * sizeof(*cf));
		ncf += t->ncf;
		memcpy(ul + nul, t->ul, t->nul * sizeof(*ul));
		nul += t->nul;
	}
	if (!wl_snap_table(b, TATP_SUB, &(const struct wl_rec *){ NULL }))
		wl_violation(&v, "no SUBSCRIBER rows: is the data set loaded (--populate)?");
	check_immutable(b, a, &v);
	check_sub_nbr(a, &v);
	check_cf(b, a, cf, ncf, &v);
	check_ul(b, a, ul, nul, &v);
	check_stats(cfg, c, wl_snap_table(b, TATP_CF, &(const struct wl_rec *){ NULL }) ==
		    populated_cf_rows(cfg), &v);
out:
	free(cf);
	free(ul);
	return v;
}

int bench_tatp_main(int argc, char **argv)
{
	static struct tatp_ctx ctx;
	struct wl_workload w = {
		.name = "tatp",
		.ntypes = TATP_NTYPES,
		.type_names = tatp_type_names,
		.txn_size = sizeof(struct tatp_txn),
		.thread_size = sizeof(struct tatp_thread),
		.tables = tatp_tables,
		.ntables = sizeof(tatp_tables),
		.ctx = &ctx,
		.default_protocol = XTX_PROTO_OCC,
		.longopts = tatp_opts,
		.handle_opt = tatp_handle_opt,
		.check_opts = tatp_check_opts,
		.usage = tatp_usage,
		.describe = tatp_describe,
		.thread_init = tatp_thread_init,
		.thread_free = tatp_thread_free,
		.begin = tatp_begin,
		.rearm = tatp_rearm,
		.step = tatp_step,
		.end = tatp_end,
		.summary = tatp_summary,
		.populate = tatp_populate,
		.verify = tatp_verify,
	};

	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg.subscribers = 1000000;
	memcpy(ctx.cfg.mix, tatp_default_mix, sizeof(ctx.cfg.mix));
	return wl_main(&w, argc, argv);
}
