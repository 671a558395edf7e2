// SPDX-License-Identifier: GPL-2.0-only
/*
 * TPC-C's consistency conditions over a snapshot in one pass: the kinds
 * sort in key order so that districts and customers come before the
 * history, orders and index rows that refer to them.
 */
#include <stdlib.h>
#include <string.h>
#include "tpcc_check.h"

/* The groups of checks, each reported OK when it found nothing. */
enum {
	CK_ROWS,	/* rows decode, keys in range, the tables' sizes */
	CK_1,
	CK_2,
	CK_3,
	CK_4,
	CK_567,
	CK_89,
	CK_10,
	CK_IDX,
	CK_N,
};

static const char *const ck_names[CK_N] = {
	"every row decodes, keys in range, the population's row counts",
	"condition 1: W_YTD = sum(D_YTD)",
	"condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)",
	"condition 3: max(NO_O_ID) - min(NO_O_ID) + 1 = new-order rows",
	"condition 4: sum(O_OL_CNT) = order lines",
	"conditions 5-7: carrier null iff new-order, O_OL_CNT and delivery dates agree with "
	"the lines",
	"conditions 8-9: W_YTD and D_YTD = sum(H_AMOUNT)",
	"conditions 10, 12: C_BALANCE = delivered - paid, C_BALANCE + C_YTD_PAYMENT = "
	"delivered",
	"indexes: new-order heads, customers' last orders, name rows",
};

struct wst {
	bool have;
	int64_t ytd, hist;
	uint32_t stock;
};

struct dst {
	bool have, have_head;
	uint32_t next_o, head;
	int64_t ytd, hist;
	uint32_t max_o, n_o, min_no, max_no, n_no, ncust;
	uint64_t ol_cnt, lines;
};

struct cst {
	bool have;
	uint8_t listed;
	uint16_t last;
	char first[16];
	int64_t balance, ytd_payment, hist, delivered;
	uint32_t max_o, clast;
};

struct ck {
	const struct tpcc_cfg *cfg;
	const struct wl_snap *s;
	const char *when;
	unsigned long v[CK_N];
	struct wst *w;
	struct dst *d;
	struct cst *c;
	char names[TPCC_NAMES][16];
	struct tpcc_totals *tot;
};

static struct dst *district(struct ck *k, uint32_t w, uint32_t d)
{
	if (w < 1 || w > k->cfg->warehouses || d < 1 || d > TPCC_DISTRICTS)
		return NULL;
	return &k->d[(w - 1) * TPCC_DISTRICTS + d - 1];
}

static struct cst *customer(struct ck *k, uint32_t w, uint32_t d, uint32_t c)
{
	if (!district(k, w, d) || c < 1 || c > k->cfg->customers)
		return NULL;
	return &k->c[((size_t)(w - 1) * TPCC_DISTRICTS + d - 1) * k->cfg->customers + c - 1];
}

static void bad_row(struct ck *k, const struct wl_rec *r, const char *why)
{
	wl_violation(&k->v[CK_ROWS], "%s: key %#llx (kind %u, w %u, d %u, %u): %s (%u bytes)",
		     k->when, (unsigned long long)r->key, tpcc_key_kind(r->key),
		     tpcc_key_w(r->key), tpcc_key_d(r->key), tpcc_key_x(r->key), why, r->vlen);
}

static uint16_t name_number(const struct ck *k, const char *last)
{
	uint32_t n;

	for (n = 0; n < tpcc_names(k->cfg); n++)
		if (!memcmp(k->names[n], last, 16))
			return (uint16_t)n;
	return UINT16_MAX;
}

static const struct wl_rec *find(const struct ck *k, uint64_t key)
{
	return wl_snap_find(k->s, tpcc_table_of(key), key);
}

/* An order, with its lines and new-order row: conditions 5-7, delivered amounts. */
static void order(struct ck *k, const struct wl_rec *r, struct dst *d)
{
	uint32_t w = tpcc_key_w(r->key), dd = tpcc_key_d(r->key), o = tpcc_key_x(r->key), i;
	const struct wl_rec *lr = find(k, tpcc_key(TPCC_K_OLINES, w, dd, o));
	bool no = find(k, tpcc_key(TPCC_K_NEWORDER, w, dd, o));
	struct tpcc_olines ol;
	struct tpcc_order ord;
	struct cst *c;
	int64_t sum = 0;

	if (tpcc_dec_fixed(wl_rec_value(r), r->vlen, &ord, sizeof(ord)) || ord.o_id != o) {
		bad_row(k, r, "not an ORDER row of its id");
		return;
	}
	c = customer(k, w, dd, ord.c_id);
	if (!c || !c->have) {
		bad_row(k, r, "an order of no customer");
		return;
	}
	d->n_o++;
	d->ol_cnt += ord.ol_cnt;
	if (o > d->max_o)
		d->max_o = o;
	if (o > c->max_o)
		c->max_o = o;
	if ((ord.carrier_id == 0) != no)
		wl_violation(&k->v[CK_567], "%s: order %u/%u/%u: carrier %u, %s new-order row",
			     k->when, w, dd, o, ord.carrier_id, no ? "a" : "no");
	if (!lr || tpcc_dec_olines(wl_rec_value(lr), lr->vlen, &ol) || ol.o_id != o) {
		wl_violation(&k->v[CK_567], "%s: order %u/%u/%u: no order-lines row", k->when,
			     w, dd, o);
		return;
	}
	if (ol.cnt != ord.ol_cnt)
		wl_violation(&k->v[CK_567], "%s: order %u/%u/%u: O_OL_CNT %u, %u lines", k->when,
			     w, dd, o, ord.ol_cnt, ol.cnt);
	for (i = 0; i < ol.cnt; i++) {
		if ((ol.l[i].delivery_d == 0) != (ord.carrier_id == 0))
			wl_violation(&k->v[CK_567], "%s: order %u/%u/%u line %u: delivery date "
				     "%llu, carrier %u", k->when, w, dd, o, i + 1,
				     (unsigned long long)ol.l[i].delivery_d, ord.carrier_id);
		sum += ol.l[i].amount;
	}
	if (ord.carrier_id)
		c->delivered += sum;
}

static void history(struct ck *k, const struct wl_rec *r)
{
	struct tpcc_history h;
	struct dst *d;
	struct cst *c;

	if (tpcc_dec_fixed(wl_rec_value(r), r->vlen, &h, sizeof(h)) ||
	    !(d = district(k, h.w_id, h.d_id)) ||
	    !(c = customer(k, h.c_w_id, h.c_d_id, h.c_id)) || !c->have) {
		bad_row(k, r, "not a HISTORY row of a district and a customer");
		return;
	}
	k->tot->history++;
	k->w[h.w_id - 1].hist += h.amount;
	d->hist += h.amount;
	c->hist += h.amount;
}

static void cname(struct ck *k, const struct wl_rec *r)
{
	uint32_t w = tpcc_key_w(r->key), d = tpcc_key_d(r->key), n = tpcc_key_x(r->key), i;
	struct tpcc_cname *cn = malloc(sizeof(*cn));
	const struct cst *prev = NULL;

	if (!cn || tpcc_dec_cname(wl_rec_value(r), r->vlen, cn) || !district(k, w, d) ||
	    n >= tpcc_names(k->cfg)) {
		bad_row(k, r, "not a name index row");
		free(cn);
		return;
	}
	for (i = 0; i < cn->n; i++) {
		struct cst *c = customer(k, w, d, cn->c_id[i]);

		if (!c || !c->have || c->last != n) {
			wl_violation(&k->v[CK_IDX], "%s: name row %u/%u/%u lists customer %u, "
				     "who is not so named", k->when, w, d, n, cn->c_id[i]);
			continue;
		}
		c->listed++;
		if (prev && memcmp(prev->first, c->first, 16) > 0)
			wl_violation(&k->v[CK_IDX], "%s: name row %u/%u/%u: customer %u out of "
				     "C_FIRST order", k->when, w, d, n, cn->c_id[i]);
		prev = c;
	}
	free(cn);
}

/* One record, by its kind. */
static void record(struct ck *k, const struct wl_rec *r)
{
	uint32_t w = tpcc_key_w(r->key), dn = tpcc_key_d(r->key), x = tpcc_key_x(r->key);
	struct dst *d = district(k, w, dn);
	struct cst *c = customer(k, w, dn, x);
	struct tpcc_warehouse wh;
	struct tpcc_district dr;
	struct tpcc_customer cu;
	struct tpcc_neworder no;
	struct tpcc_olines ol;
	struct tpcc_stock st;
	struct tpcc_idx idx;
	const char *why = NULL;
	size_t tail;

	switch (tpcc_key_kind(r->key)) {
	case TPCC_K_WAREHOUSE:
		if (w < 1 || w > k->cfg->warehouses || dn || x ||
		    tpcc_dec_fixed(wl_rec_value(r), r->vlen, &wh, sizeof(wh)) || wh.w_id != w) {
			why = "not a WAREHOUSE row";
			break;
		}
		k->w[w - 1].have = true;
		k->w[w - 1].ytd = wh.ytd;
		k->tot->w_ytd += wh.ytd;
		return;
	case TPCC_K_DISTRICT:
		if (!d || x || tpcc_dec_fixed(wl_rec_value(r), r->vlen, &dr, sizeof(dr)) ||
		    dr.w_id != w || dr.d_id != dn) {
			why = "not a DISTRICT row";
			break;
		}
		d->have = true;
		d->ytd = dr.ytd;
		d->next_o = dr.next_o_id;
		return;
	case TPCC_K_CUSTOMER:
		if (!c || tpcc_dec_tail(wl_rec_value(r), r->vlen, &cu, sizeof(cu), TPCC_C_DATA_MAX, NULL,
					&tail) || cu.c_id != x) {
			why = "not a CUSTOMER row";
			break;
		}
		c->have = true;
		c->last = name_number(k, cu.last);
		memcpy(c->first, cu.first, 16);
		c->balance = cu.balance;
		c->ytd_payment = cu.ytd_payment;
		d->ncust++;
		if (c->last == UINT16_MAX)
			bad_row(k, r, "a customer of no last name the population gives");
		return;
	case TPCC_K_HISTORY:
	case TPCC_K_HISTORY_RUN:
		history(k, r);
		return;
	case TPCC_K_NEWORDER:
		if (!d || tpcc_dec_fixed(wl_rec_value(r), r->vlen, &no, sizeof(no)) || no.o_id != x) {
			why = "not a NEW-ORDER row";
			break;
		}
		k->tot->neworders++;
		if (!d->n_no++ || x < d->min_no)
			d->min_no = x;
		if (x > d->max_no)
			d->max_no = x;
		return;
	case TPCC_K_ORDER:
		if (!d) {
			why = "an order of no district";
			break;
		}
		k->tot->orders++;
		order(k, r, d);
		return;
	case TPCC_K_OLINES:
		if (!d || tpcc_dec_olines(wl_rec_value(r), r->vlen, &ol) || ol.o_id != x) {
			why = "not an ORDER-LINE row";
			break;
		}
		d->lines += ol.cnt;
		return;
	case TPCC_K_STOCK:
		if (w < 1 || w > k->cfg->warehouses || dn || x < 1 || x > k->cfg->items ||
		    tpcc_dec_tail(wl_rec_value(r), r->vlen, &st, sizeof(st), TPCC_S_DATA_MAX, NULL,
				  &tail) ||
		    st.i_id != x || st.w_id != w) {
			why = "not a STOCK row";
			break;
		}
		k->w[w - 1].stock++;
		return;
	case TPCC_K_NOHEAD:
		if (!d || x || tpcc_dec_fixed(wl_rec_value(r), r->vlen, &idx, sizeof(idx))) {
			why = "not a new-order head row";
			break;
		}
		d->have_head = true;
		d->head = idx.o_id;
		return;
	case TPCC_K_CLAST:
		if (!c || tpcc_dec_fixed(wl_rec_value(r), r->vlen, &idx, sizeof(idx))) {
			why = "not a customer's last order row";
			break;
		}
		c->clast = idx.o_id;
		return;
	case TPCC_K_CNAME:
		cname(k, r);
		return;
	default:
		break;	/* counted by the caller */
	}
	if (why)
		bad_row(k, r, why);
}

static void district_checks(struct ck *k, uint32_t w, uint32_t dn, struct dst *d)
{
	uint32_t head = d->n_no ? d->min_no : d->next_o;

	if (!d->have || !d->have_head || d->ncust != k->cfg->customers) {
		wl_violation(&k->v[CK_ROWS], "%s: district %u/%u: %s, %s, %u of %u customers",
			     k->when, w, dn, d->have ? "present" : "missing",
			     d->have_head ? "a new-order head" : "no new-order head", d->ncust,
			     k->cfg->customers);
		return;
	}
	if (d->next_o - 1 != d->max_o || (d->n_no && d->max_no != d->max_o))
		wl_violation(&k->v[CK_2], "%s: district %u/%u: D_NEXT_O_ID %u, max O_ID %u, max "
			     "NO_O_ID %u", k->when, w, dn, d->next_o, d->max_o, d->max_no);
	if (d->n_o != d->max_o)
		wl_violation(&k->v[CK_2], "%s: district %u/%u: %u orders, max O_ID %u: ids not "
			     "1..max", k->when, w, dn, d->n_o, d->max_o);
	if (d->n_no && d->max_no - d->min_no + 1 != d->n_no)
		wl_violation(&k->v[CK_3], "%s: district %u/%u: new-orders %u..%u, %u rows",
			     k->when, w, dn, d->min_no, d->max_no, d->n_no);
	if (d->ol_cnt != d->lines)
		wl_violation(&k->v[CK_4], "%s: district %u/%u: sum(O_OL_CNT) %llu, %llu lines",
			     k->when, w, dn, (unsigned long long)d->ol_cnt,
			     (unsigned long long)d->lines);
	if (d->ytd != d->hist)
		wl_violation(&k->v[CK_89], "%s: district %u/%u: D_YTD %lld, history %lld",
			     k->when, w, dn, (long long)d->ytd, (long long)d->hist);
	if (d->head != head)
		wl_violation(&k->v[CK_IDX], "%s: district %u/%u: new-order head %u, the oldest "
			     "undelivered is %u", k->when, w, dn, d->head, head);
}

static void customer_checks(struct ck *k, uint32_t w, uint32_t dn, uint32_t cn,
			    const struct cst *c)
{
	if (!c->have)
		return;
	if (c->balance != c->delivered - c->hist ||
	    c->balance + c->ytd_payment != c->delivered)
		wl_violation(&k->v[CK_10], "%s: customer %u/%u/%u: C_BALANCE %lld, "
			     "C_YTD_PAYMENT %lld, delivered %lld, paid %lld", k->when, w, dn, cn,
			     (long long)c->balance, (long long)c->ytd_payment,
			     (long long)c->delivered, (long long)c->hist);
	if (c->clast != c->max_o)
		wl_violation(&k->v[CK_IDX], "%s: customer %u/%u/%u: last order index %u, its "
			     "last order %u", k->when, w, dn, cn, c->clast, c->max_o);
	if (c->listed != 1)
		wl_violation(&k->v[CK_IDX], "%s: customer %u/%u/%u: in %u name rows, not 1",
			     k->when, w, dn, cn, c->listed);
}

unsigned long tpcc_check_snap(const struct tpcc_cfg *cfg, const struct wl_snap *s,
			      const char *when, struct tpcc_totals *tot)
{
	static const uint8_t tables[] = { TPCC_T_SMALL, TPCC_T_MID, TPCC_T_BIG };
	size_t nd = (size_t)cfg->warehouses * TPCC_DISTRICTS, n, i, t;
	enum tpcc_kind kind;
	struct ck *k = calloc(1, sizeof(*k));
	const struct wl_rec *r;
	unsigned long sum = 0;
	uint32_t w, d, c;

	memset(tot, 0, sizeof(*tot));
	if (k) {
		k->w = calloc(cfg->warehouses, sizeof(*k->w));
		k->d = calloc(nd, sizeof(*k->d));
		k->c = calloc(nd * cfg->customers, sizeof(*k->c));
	}
	if (!k || !k->w || !k->d || !k->c) {
		unsigned long v = 0;

		wl_violation(&v, "%s: no memory for the TPC-C checks", when);
		if (k) {
			free(k->w);
			free(k->d);
			free(k->c);
		}
		free(k);
		return v;
	}
	k->cfg = cfg;
	k->s = s;
	k->when = when;
	k->tot = tot;
	for (i = 0; i < tpcc_names(cfg); i++)
		tpcc_last_name((uint32_t)i, k->names[i]);
	/* kind by kind: customers before what refers to them, orders before their index */
	for (kind = 1; kind < TPCC_NKINDS; kind++) {
		n = wl_snap_table(s, tpcc_table_of(tpcc_key(kind, 0, 0, 0)), &r);
		for (i = 0; i < n; i++)
			if (tpcc_key_kind(r[i].key) == kind)
				record(k, &r[i]);
	}
	for (t = 0; t < sizeof(tables); t++) {
		n = wl_snap_table(s, tables[t], &r);
		for (i = 0; i < n; i++)
			if (!tpcc_key_kind(r[i].key) || tpcc_key_kind(r[i].key) >= TPCC_NKINDS ||
			    tpcc_table_of(r[i].key) != tables[t])
				bad_row(k, &r[i], "a key of no TPC-C table, or in another's");
	}
	for (w = 1; w <= cfg->warehouses; w++) {
		struct wst *ws = &k->w[w - 1];
		int64_t dsum = 0;

		if (!ws->have || ws->stock != cfg->items)
			wl_violation(&k->v[CK_ROWS], "%s: warehouse %u: %s, %u of %u stock rows",
				     when, w, ws->have ? "present" : "missing", ws->stock,
				     cfg->items);
		for (d = 1; d <= TPCC_DISTRICTS; d++) {
			struct dst *dd = district(k, w, d);

			dsum += dd->ytd;
			district_checks(k, w, d, dd);
			for (c = 1; c <= cfg->customers; c++)
				customer_checks(k, w, d, c, customer(k, w, d, c));
		}
		if (ws->ytd != dsum)
			wl_violation(&k->v[CK_1], "%s: warehouse %u: W_YTD %lld, sum(D_YTD) %lld",
				     when, w, (long long)ws->ytd, (long long)dsum);
		if (ws->ytd != ws->hist)
			wl_violation(&k->v[CK_89], "%s: warehouse %u: W_YTD %lld, history %lld",
				     when, w, (long long)ws->ytd, (long long)ws->hist);
	}
	for (i = 0; i < CK_N; i++) {
		if (!k->v[i])
			wl_check_ok("%s: %s", when, ck_names[i]);
		sum += k->v[i];
	}
	free(k->w);
	free(k->d);
	free(k->c);
	free(k);
	return sum;
}
