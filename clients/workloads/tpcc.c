// SPDX-License-Identifier: GPL-2.0-only
/* TPC-C's generators and population (clause 2.1, 4.3): rows as values, NURand, the inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/hash.h>
#include "tpcc.h"
#include "zipf.h"

const char *const tpcc_type_names[TPCC_NTYPES] = { "NO", "PAY", "OS", "DLV", "SL" };

const unsigned int tpcc_standard_mix[TPCC_NTYPES] = { 45, 43, 4, 4, 4 };

/* Every loaded date: a fixed instant keeps the population a function of the seed. */
#define TPCC_LOAD_DATE		1700000000ull

int tpcc_dec_fixed(const void *v, uint16_t vlen, void *out, size_t size)
{
	if (!v || vlen != size)
		return -1;
	memcpy(out, v, size);
	return 0;
}

int tpcc_dec_tail(const void *v, uint16_t vlen, void *out, size_t size, size_t tail_max,
		  char *tail, size_t *tail_len)
{
	if (!v || vlen < size || vlen - size > tail_max)
		return -1;
	memcpy(out, v, size);
	*tail_len = vlen - size;
	if (tail)
		memcpy(tail, (const uint8_t *)v + size, *tail_len);
	return 0;
}

int tpcc_dec_olines(const void *v, uint16_t vlen, struct tpcc_olines *out)
{
	uint8_t cnt;

	if (!v || vlen < offsetof(struct tpcc_olines, l))
		return -1;
	cnt = ((const uint8_t *)v)[offsetof(struct tpcc_olines, cnt)];
	if (cnt > TPCC_MAX_LINES || vlen != TPCC_OLINES_VLEN(cnt))
		return -1;
	memset(out, 0, sizeof(*out));
	memcpy(out, v, vlen);
	return 0;
}

int tpcc_dec_cname(const void *v, uint16_t vlen, struct tpcc_cname *out)
{
	uint16_t n;

	if (!v || vlen < offsetof(struct tpcc_cname, c_id))
		return -1;
	memcpy(&n, v, sizeof(n));
	if (n > TPCC_CNAME_MAX || vlen != TPCC_CNAME_VLEN(n))
		return -1;
	memcpy(out, v, vlen);
	return 0;
}

uint32_t tpcc_rand(uint64_t *rng, uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)xtx_rng_below(rng, (uint64_t)hi - lo + 1);
}

uint32_t tpcc_nurand(uint64_t *rng, uint32_t a, uint32_t c, uint32_t x, uint32_t y)
{
	return (((tpcc_rand(rng, 0, a) | tpcc_rand(rng, x, y)) + c) % (y - x + 1)) + x;
}

void tpcc_cfg_init(struct tpcc_cfg *cfg)
{
	uint64_t rng = xtx_mix64(cfg->seed ^ 0x7470636343ull) | 1;
	uint32_t delta;

	cfg->c.c_last_load = tpcc_rand(&rng, 0, 255);
	do {
		cfg->c.c_last_run = tpcc_rand(&rng, 0, 255);
		delta = cfg->c.c_last_run > cfg->c.c_last_load ?
			cfg->c.c_last_run - cfg->c.c_last_load :
			cfg->c.c_last_load - cfg->c.c_last_run;
	} while (delta < 65 || delta > 119 || delta == 96 || delta == 112);
	cfg->c.c_id = tpcc_rand(&rng, 0, 1023);
	cfg->c.ol_i_id = tpcc_rand(&rng, 0, 8191);
}

void tpcc_last_name(uint32_t n, char out[16])
{
	static const char *const syl[10] = { "BAR", "OUGHT", "ABLE", "PRI", "PRES",
					     "ESE", "ANTI", "CALLY", "ATION", "EING" };
	size_t len = 0;
	unsigned int i, digit[3] = { n / 100 % 10, n / 10 % 10, n % 10 };

	memset(out, 0, 16);
	for (i = 0; i < 3; i++) {
		size_t l = strlen(syl[digit[i]]);

		memcpy(out + len, syl[digit[i]], l);	/* 3 * 5 < 16 */
		len += l;
	}
}

static uint64_t stream(uint64_t seed, uint64_t what)
{
	return xtx_mix64(seed ^ xtx_mix64(what)) | 1;
}

void tpcc_item(const struct tpcc_cfg *cfg, uint32_t i, struct tpcc_item *out)
{
	uint64_t rng = stream(cfg->seed, 0x4954454dull << 32 | i);

	out->i_id = i;
	out->im_id = tpcc_rand(&rng, 1, 10000);
	out->price = (int32_t)tpcc_rand(&rng, 100, 10000);
	out->original = tpcc_rand(&rng, 1, 10) == 1;
}

/* ---- random strings (clause 4.3.2.2, 4.3.2.7) ---- */

static void astring(uint64_t *rng, char *out, size_t lo, size_t hi)
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t n = tpcc_rand(rng, (uint32_t)lo, (uint32_t)hi), i;

	for (i = 0; i < n; i++)
		out[i] = chars[xtx_rng_below(rng, sizeof(chars) - 1)];
	/* the fixed fields' rest is zero; callers of variable ones take the length */
	for (; i < hi; i++)
		out[i] = 0;
}

static size_t astring_len(uint64_t *rng, char *out, size_t lo, size_t hi)
{
	size_t n = tpcc_rand(rng, (uint32_t)lo, (uint32_t)hi);

	astring(rng, out, n, n);
	return n;
}

static void nstring(uint64_t *rng, char *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = (char)('0' + xtx_rng_below(rng, 10));
}

static void zip(uint64_t *rng, char out[9])
{
	nstring(rng, out, 4);
	memcpy(out + 4, "11111", 5);
}

/* S_DATA or I_DATA: 26..50 characters, "ORIGINAL" somewhere in one of ten. */
static size_t data_field(uint64_t *rng, char *out, bool original)
{
	size_t n = astring_len(rng, out, 26, 50);

	if (original)
		memcpy(out + tpcc_rand(rng, 0, (uint32_t)(n - 8)), "ORIGINAL", 8);
	return n;
}

#define ADDRESS(rng, r)                                                                  \
	do {                                                                               \
		astring(rng, (r).street1, 10, 20);                                         \
		astring(rng, (r).street2, 10, 20);                                         \
		astring(rng, (r).city, 10, 20);                                            \
		astring(rng, (r).state, 2, 2);                                             \
		zip(rng, (r).zip);                                                         \
	} while (0)

/* ---- population (clause 4.3.3.1) ---- */

static int emit_stock(const struct tpcc_cfg *cfg, uint32_t w, tpcc_emit_fn emit, void *arg)
{
	uint8_t buf[sizeof(struct tpcc_stock) + TPCC_S_DATA_MAX];
	uint64_t rng = stream(cfg->seed, 0x53ull << 40 | w);
	struct tpcc_stock s;
	uint32_t i;
	int rc;

	for (i = 1; i <= cfg->items; i++) {
		unsigned int d;
		size_t n;

		memset(&s, 0, sizeof(s));
		s.i_id = i;
		s.w_id = (uint16_t)w;
		s.quantity = (int16_t)tpcc_rand(&rng, 10, 100);
		for (d = 0; d < TPCC_DISTRICTS; d++)
			astring(&rng, s.dist[d], 24, 24);
		n = data_field(&rng, (char *)buf + sizeof(s), tpcc_rand(&rng, 1, 10) == 1);
		memcpy(buf, &s, sizeof(s));
		rc = emit(arg, tpcc_key(TPCC_K_STOCK, w, 0, i), buf, (uint16_t)(sizeof(s) + n));
		if (rc)
			return rc;
	}
	return 0;
}

struct cust_name {
	char first[16];
	uint16_t c_id;
};

static int first_cmp(const void *a, const void *b)
{
	const struct cust_name *x = a, *y = b;
	int r = memcmp(x->first, y->first, sizeof(x->first));

	return r ? r : (int)x->c_id - (int)y->c_id;
}

/*
 * The name index rows of one district: its customers of each last name,
 * sorted by first name (OrderStatus and Payment take the middle one).
 */
static int emit_names(const struct tpcc_cfg *cfg, uint32_t w, uint32_t d,
		      const uint16_t *last, struct cust_name *names, tpcc_emit_fn emit,
		      void *arg)
{
	struct tpcc_cname *row = malloc(sizeof(*row));
	uint32_t n, c;
	int rc = 0;

	if (!row)
		return -1;
	for (n = 0; n < tpcc_names(cfg) && !rc; n++) {
		struct cust_name *sel = names;
		uint16_t k = 0;

		for (c = 1; c <= cfg->customers; c++) {
			if (last[c] != n)
				continue;
			if (k == TPCC_CNAME_MAX) {
				fprintf(stderr, "Error: --populate: more than %u customers named "
					"%u in district %u/%u\n", TPCC_CNAME_MAX, n, w, d);
				rc = -1;
				break;
			}
			sel[k++] = names[cfg->customers + c];
		}
		if (rc || !k)
			break;
		qsort(sel, k, sizeof(*sel), first_cmp);
		row->n = k;
		for (c = 0; c < k; c++)
			row->c_id[c] = sel[c].c_id;
		rc = emit(arg, tpcc_key(TPCC_K_CNAME, w, d, n), row, (uint16_t)TPCC_CNAME_VLEN(k));
	}
	free(row);
	return rc;
}

/* Customers, history, the name index; last[c] gets each one's name number. */
static int emit_customers(const struct tpcc_cfg *cfg, uint32_t w, uint32_t d, uint16_t *last,
			  tpcc_emit_fn emit, void *arg)
{
	uint8_t buf[sizeof(struct tpcc_customer) + TPCC_C_DATA_MAX];
	uint64_t rng = stream(cfg->seed, 0x43ull << 40 | w << 8 | d);
	/* [0, customers]: scratch for sorting; [customers + c]: customer c's first name */
	struct cust_name *names = calloc(2 * (size_t)cfg->customers + 1, sizeof(*names));
	struct tpcc_customer c;
	struct tpcc_history h;
	uint32_t id;
	int rc = 0;

	if (!names)
		return -1;
	for (id = 1; id <= cfg->customers && !rc; id++) {
		size_t n;

		memset(&c, 0, sizeof(c));
		c.w_id = (uint16_t)w;
		c.d_id = (uint8_t)d;
		c.c_id = (uint16_t)id;
		last[id] = (uint16_t)(id <= tpcc_names(cfg) ? id - 1 :
				      tpcc_nurand(&rng, 255, cfg->c.c_last_load, 0,
						  tpcc_names(cfg) - 1));
		tpcc_last_name(last[id], c.last);
		astring(&rng, c.first, 8, 16);
		memcpy(c.middle, "OE", 2);
		ADDRESS(&rng, c);
		nstring(&rng, c.phone, 16);
		c.since = TPCC_LOAD_DATE;
		memcpy(c.credit, tpcc_rand(&rng, 1, 10) == 1 ? "BC" : "GC", 2);
		c.credit_lim = 5000000;
		c.discount = (uint16_t)tpcc_rand(&rng, 0, 5000);
		c.balance = -1000;
		c.ytd_payment = 1000;
		c.payment_cnt = 1;
		n = astring_len(&rng, (char *)buf + sizeof(c), 300, TPCC_C_DATA_MAX);
		memcpy(buf, &c, sizeof(c));
		memcpy(names[cfg->customers + id].first, c.first, sizeof(c.first));
		names[cfg->customers + id].c_id = (uint16_t)id;
		rc = emit(arg, tpcc_key(TPCC_K_CUSTOMER, w, d, id), buf, (uint16_t)(sizeof(c) + n));
		if (rc)
			break;
		memset(&h, 0, sizeof(h));
		h.c_id = (uint16_t)id;
		h.c_d_id = h.d_id = (uint8_t)d;
		h.c_w_id = h.w_id = (uint16_t)w;
		h.date = TPCC_LOAD_DATE;
		h.amount = 1000;
		astring(&rng, h.data, 12, 24);
		rc = emit(arg, tpcc_key(TPCC_K_HISTORY, w, d, id), &h, sizeof(h));
	}
	if (!rc)
		rc = emit_names(cfg, w, d, last, names, emit, arg);
	free(names);
	return rc;
}

/* Orders 1..customers (a random permutation of the customers), their lines, new-orders. */
static int emit_orders(const struct tpcc_cfg *cfg, uint32_t w, uint32_t d, tpcc_emit_fn emit,
		       void *arg)
{
	uint64_t rng = stream(cfg->seed, 0x4full << 40 | w << 8 | d);
	uint32_t *perm = malloc(((size_t)cfg->customers + 1) * sizeof(*perm));
	uint32_t o, first_new = tpcc_first_new_order(cfg), i;
	struct tpcc_olines ol;
	struct tpcc_order ord;
	int rc = 0;

	if (!perm)
		return -1;
	for (i = 1; i <= cfg->customers; i++)
		perm[i] = i;
	for (i = cfg->customers; i > 1; i--) {
		uint32_t j = tpcc_rand(&rng, 1, i), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (o = 1; o <= cfg->customers && !rc; o++) {
		bool delivered = o < first_new;
		struct tpcc_idx clast = { .o_id = o };

		memset(&ord, 0, sizeof(ord));
		ord.o_id = o;
		ord.c_id = (uint16_t)perm[o];
		ord.entry_d = TPCC_LOAD_DATE;
		ord.carrier_id = delivered ? (uint8_t)tpcc_rand(&rng, 1, 10) : 0;
		ord.ol_cnt = (uint8_t)tpcc_rand(&rng, TPCC_MIN_LINES, TPCC_MAX_LINES);
		ord.all_local = 1;
		memset(&ol, 0, sizeof(ol));
		ol.o_id = o;
		ol.cnt = ord.ol_cnt;
		for (i = 0; i < ol.cnt; i++) {
			struct tpcc_oline *l = &ol.l[i];

			l->i_id = tpcc_rand(&rng, 1, cfg->items);
			l->supply_w_id = (uint16_t)w;
			l->number = (uint8_t)(i + 1);
			l->quantity = 5;
			l->delivery_d = delivered ? ord.entry_d : 0;
			l->amount = delivered ? 0 : (int32_t)tpcc_rand(&rng, 1, 999999);
			astring(&rng, l->dist_info, 24, 24);
		}
		rc = emit(arg, tpcc_key(TPCC_K_ORDER, w, d, o), &ord, sizeof(ord));
		if (!rc)
			rc = emit(arg, tpcc_key(TPCC_K_OLINES, w, d, o), &ol,
				  (uint16_t)TPCC_OLINES_VLEN(ol.cnt));
		if (!rc)
			rc = emit(arg, tpcc_key(TPCC_K_CLAST, w, d, perm[o]), &clast,
				  sizeof(clast));
		if (!rc && !delivered) {
			struct tpcc_neworder no = { .o_id = o };

			rc = emit(arg, tpcc_key(TPCC_K_NEWORDER, w, d, o), &no, sizeof(no));
		}
	}
	if (!rc) {
		struct tpcc_idx head = { .o_id = first_new };

		rc = emit(arg, tpcc_key(TPCC_K_NOHEAD, w, d, 0), &head, sizeof(head));
	}
	free(perm);
	return rc;
}

int tpcc_populate_warehouse(const struct tpcc_cfg *cfg, uint32_t w, tpcc_emit_fn emit,
			    void *arg)
{
	uint64_t rng = stream(cfg->seed, 0x57ull << 40 | w);
	uint16_t *last = malloc(((size_t)cfg->customers + 1) * sizeof(*last));
	struct tpcc_warehouse wh;
	uint32_t d;
	int rc;

	if (!last)
		return -1;
	memset(&wh, 0, sizeof(wh));
	wh.w_id = (uint16_t)w;
	astring(&rng, wh.name, 6, 10);
	ADDRESS(&rng, wh);
	wh.tax = (uint16_t)tpcc_rand(&rng, 0, 2000);
	/* 10.00 per customer's loaded payment: conditions 8-9 hold at any scale */
	wh.ytd = (int64_t)TPCC_DISTRICTS * cfg->customers * 1000;
	rc = emit(arg, tpcc_key(TPCC_K_WAREHOUSE, w, 0, 0), &wh, sizeof(wh));
	if (!rc)
		rc = emit_stock(cfg, w, emit, arg);
	for (d = 1; d <= TPCC_DISTRICTS && !rc; d++) {
		struct tpcc_district dr;

		memset(&dr, 0, sizeof(dr));
		dr.w_id = (uint16_t)w;
		dr.d_id = (uint8_t)d;
		astring(&rng, dr.name, 6, 10);
		ADDRESS(&rng, dr);
		dr.tax = (uint16_t)tpcc_rand(&rng, 0, 2000);
		dr.ytd = (int64_t)cfg->customers * 1000;
		dr.next_o_id = cfg->customers + 1;
		rc = emit(arg, tpcc_key(TPCC_K_DISTRICT, w, d, 0), &dr, sizeof(dr));
		if (!rc)
			rc = emit_customers(cfg, w, d, last, emit, arg);
		if (!rc)
			rc = emit_orders(cfg, w, d, emit, arg);
	}
	free(last);
	return rc;
}

/* ---- inputs ---- */

enum tpcc_type tpcc_pick_type(const struct tpcc_cfg *cfg, uint64_t *rng)
{
	unsigned int r, i;

	if (cfg->mix == TPCC_MIX_NEWORDER)
		return TPCC_NEWORDER;
	r = (unsigned int)xtx_rng_below(rng, 100);
	for (i = 0; i < TPCC_NTYPES - 1; i++) {
		if (r < tpcc_standard_mix[i])
			break;
		r -= tpcc_standard_mix[i];
	}
	return (enum tpcc_type)i;
}

/* A warehouse other than w, or w when it is the only one. */
static uint32_t other_warehouse(const struct tpcc_cfg *cfg, uint32_t w, uint64_t *rng)
{
	uint32_t o;

	if (cfg->warehouses < 2)
		return w;
	o = tpcc_rand(rng, 1, cfg->warehouses - 1);
	return o >= w ? o + 1 : o;
}

static void draw_neworder(const struct tpcc_cfg *cfg, uint64_t *rng, struct tpcc_input *in)
{
	unsigned int i, j;

	in->c = tpcc_nurand(rng, 1023, cfg->c.c_id, 1, cfg->customers);
	in->ol_cnt = (uint8_t)tpcc_rand(rng, TPCC_MIN_LINES, TPCC_MAX_LINES);
	in->rollback = tpcc_rand(rng, 1, 100) == 1;
	in->all_local = true;
	for (i = 0; i < in->ol_cnt; i++) {
		/* distinct items: a line's stock row is read and written once */
		do {
			in->i_id[i] = tpcc_nurand(rng, 8191, cfg->c.ol_i_id, 1, cfg->items);
			for (j = 0; j < i && in->i_id[j] != in->i_id[i]; j++)
				;
		} while (j < i && cfg->items > TPCC_MAX_LINES);
		in->supply_w[i] = (uint16_t)in->w;
		if (tpcc_rand(rng, 1, 100) == 1)
			in->supply_w[i] = (uint16_t)other_warehouse(cfg, in->w, rng);
		if (in->supply_w[i] != in->w)
			in->all_local = false;
		in->quantity[i] = (uint8_t)tpcc_rand(rng, 1, 10);
	}
	/* an unused item number: the lookup fails and the order rolls back */
	if (in->rollback)
		in->i_id[in->ol_cnt - 1] = cfg->items + 1;
}

/* The customer of a Payment or OrderStatus: 60 % by last name. */
static void draw_customer(const struct tpcc_cfg *cfg, uint64_t *rng, struct tpcc_input *in)
{
	in->by_name = tpcc_rand(rng, 1, 100) <= 60;
	if (in->by_name)
		in->name = tpcc_nurand(rng, 255, cfg->c.c_last_run, 0, tpcc_names(cfg) - 1);
	else
		in->c = tpcc_nurand(rng, 1023, cfg->c.c_id, 1, cfg->customers);
}

void tpcc_draw_input(const struct tpcc_cfg *cfg, enum tpcc_type type, uint64_t *rng,
		     struct tpcc_input *in)
{
	memset(in, 0, sizeof(*in));
	in->type = type;
	in->w = tpcc_rand(rng, 1, cfg->warehouses);
	in->d = tpcc_rand(rng, 1, TPCC_DISTRICTS);
	switch (type) {
	case TPCC_NEWORDER:
		draw_neworder(cfg, rng, in);
		break;
	case TPCC_PAYMENT:
		in->c_w = in->w;
		in->c_d = in->d;
		if (cfg->warehouses > 1 && tpcc_rand(rng, 1, 100) <= 15) {
			in->c_w = other_warehouse(cfg, in->w, rng);
			in->c_d = tpcc_rand(rng, 1, TPCC_DISTRICTS);
		}
		draw_customer(cfg, rng, in);
		in->amount = tpcc_rand(rng, 100, 500000);
		break;
	case TPCC_ORDERSTATUS:
		in->c_w = in->w;
		in->c_d = in->d;
		draw_customer(cfg, rng, in);
		break;
	case TPCC_DELIVERY:
		in->carrier = (uint8_t)tpcc_rand(rng, 1, 10);
		break;
	case TPCC_STOCKLEVEL:
		in->threshold = tpcc_rand(rng, 10, 20);
		break;
	default:
		break;
	}
}

size_t tpcc_bc_data(const struct tpcc_input *in, uint32_t c_id, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%u %u %u %u %u %lld.%02lld|", c_id, in->c_d, in->c_w, in->d,
			 in->w, (long long)(in->amount / 100), (long long)(in->amount % 100));

	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}
