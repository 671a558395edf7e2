// SPDX-License-Identifier: GPL-2.0-only
/* TPC-C's keys, rows, generators, input rules, population and consistency checks. */
/* checks: 6 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xtx/hash.h>
#include "check.h"
#include "tpcc.h"
#include "tpcc_check.h"
#include "tpcc_txn.h"
#include "wlsnap.h"

#define TPCC_TABLES	(1u << TPCC_T_SMALL | 1u << TPCC_T_MID | 1u << TPCC_T_BIG)

static int within_4sigma(double got, double p, uint64_t n)
{
	return fabs(got - p) <= 4 * sqrt(p * (1 - p) / (double)n);
}

static struct tpcc_cfg small_cfg(uint32_t warehouses, uint64_t seed)
{
	struct tpcc_cfg c = { .warehouses = warehouses, .items = 200, .customers = 30,
			      .seed = seed };

	tpcc_cfg_init(&c);
	return c;
}

static void test_keys(void)
{
	uint64_t k = tpcc_key(TPCC_K_CUSTOMER, 513, 10, 2999), h;

	CHECK(k == (3ull << 56 | 513ull << 40 | 10ull << 32 | 2999), "CUSTOMER key %#llx",
	      (unsigned long long)k);
	CHECK(tpcc_key_kind(k) == TPCC_K_CUSTOMER && tpcc_key_w(k) == 513 && tpcc_key_d(k) == 10 &&
	      tpcc_key_x(k) == 2999, "fields back");
	CHECK(tpcc_key(TPCC_K_ORDER, 1, 1, 5) != tpcc_key(TPCC_K_NEWORDER, 1, 1, 5) &&
	      tpcc_key(TPCC_K_ORDER, 1, 1, 5) != tpcc_key(TPCC_K_OLINES, 1, 1, 5),
	      "an order's rows differ by kind");
	k = tpcc_key(TPCC_K_STOCK, TPCC_MAX_WAREHOUSES, 0, TPCC_ITEMS);
	CHECK(tpcc_key_w(k) == TPCC_MAX_WAREHOUSES && tpcc_key_x(k) == TPCC_ITEMS &&
	      tpcc_key_kind(k) == TPCC_K_STOCK, "the largest warehouse and item fit");
	h = tpcc_history_key(0x12345, 0x123456789abcull);
	CHECK(tpcc_key_kind(h) == TPCC_K_HISTORY_RUN && (h & 0xffffffffffull) == 0x3456789abcull,
	      "history key %#llx: kind, 40 bits of sequence", (unsigned long long)h);
	CHECK(tpcc_history_key(1, 7) != tpcc_history_key(2, 7) &&
	      tpcc_history_key(1, 7) != tpcc_history_key(1, 8), "history keys unique");
}

static void test_rows(void)
{
	CHECK(sizeof(struct tpcc_customer) + TPCC_C_DATA_MAX <= 1024 &&
	      sizeof(struct tpcc_customer) + TPCC_C_DATA_MAX >= 600, "CUSTOMER %zu bytes",
	      sizeof(struct tpcc_customer) + TPCC_C_DATA_MAX);
	CHECK(sizeof(struct tpcc_stock) + TPCC_S_DATA_MAX <= 1024, "STOCK");
	CHECK(TPCC_OLINES_VLEN(TPCC_MAX_LINES) <= 1024 && sizeof(struct tpcc_oline) == 44,
	      "15 order lines in one row: %zu bytes", TPCC_OLINES_VLEN(TPCC_MAX_LINES));
	CHECK(TPCC_CNAME_VLEN(TPCC_CNAME_MAX) <= 1024, "a full name row");
	/* rows every NewOrder inserts stay on XDP's frequent path */
	CHECK(sizeof(struct tpcc_order) <= 40 && sizeof(struct tpcc_neworder) <= 40 &&
	      sizeof(struct tpcc_idx) <= 40, "ORDER, NEW-ORDER and index rows fit 40 bytes");
}

static void test_generators(void)
{
	char name[16];
	uint64_t rng = 99, seed;
	uint32_t i, lo = UINT32_MAX, hi = 0;
	struct tpcc_item it;
	struct tpcc_cfg c;
	bool ok = true;

	tpcc_last_name(371, name);
	CHECK(!strcmp(name, "PRICALLYOUGHT"), "name 371 is %s (clause 4.3.2.3)", name);
	tpcc_last_name(999, name);
	CHECK(!memcmp(name, "EINGEINGEING\0\0\0", 16), "name 999 NUL-padded");
	tpcc_last_name(0, name);
	CHECK(!strcmp(name, "BARBARBAR"), "name 0");
	for (i = 0; i < 100000; i++) {
		uint32_t v = tpcc_nurand(&rng, 1023, 259, 1, 3000);

		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	CHECK(lo == 1 && hi == 3000, "NURand(1023, 1, 3000) spans [%u, %u]", lo, hi);
	for (seed = 1; seed < 2000 && ok; seed++) {
		uint32_t d;

		c = small_cfg(1, seed);
		d = c.c.c_last_run > c.c.c_last_load ? c.c.c_last_run - c.c.c_last_load :
						       c.c.c_last_load - c.c.c_last_run;
		ok = d >= 65 && d <= 119 && d != 96 && d != 112 && c.c.c_id <= 1023 &&
		     c.c.ol_i_id <= 8191;
	}
	CHECK(ok, "C_LAST run and load constants 65..119 apart, not 96 or 112 (clause 2.1.6.1)");
	c = small_cfg(1, 5);
	tpcc_item(&c, 17, &it);
	CHECK(it.i_id == 17 && it.price >= 100 && it.price <= 10000, "item price %d", it.price);
	for (i = 1, ok = true; i <= 1000 && ok; i++) {
		struct tpcc_item again;

		tpcc_item(&c, i, &it);
		tpcc_item(&c, i, &again);
		ok = it.i_id == again.i_id && it.im_id == again.im_id &&
		     it.price == again.price && it.original == again.original;
	}
	CHECK(ok, "items are a function of the seed");
}

static void test_inputs(void)
{
	struct tpcc_cfg c = small_cfg(4, 3);
	uint64_t rng = 12345, n = 200000, i, lines = 0, remote = 0, rb = 0, pay_remote = 0,
		 by_name = 0, os_name = 0, types[TPCC_NTYPES] = { 0 }, cnt_sum = 0;
	bool distinct = true, ranges = true;
	struct tpcc_input in;
	unsigned int j, k;

	c.items = 100000;
	c.customers = 3000;
	for (i = 0; i < n; i++) {
		tpcc_draw_input(&c, TPCC_NEWORDER, &rng, &in);
		rb += in.rollback;
		cnt_sum += in.ol_cnt;
		ranges &= in.ol_cnt >= 5 && in.ol_cnt <= 15 && in.w >= 1 && in.w <= 4 &&
			  in.d >= 1 && in.d <= 10 && in.c >= 1 && in.c <= 3000;
		bool any_remote = false;

		for (j = 0; j < in.ol_cnt; j++) {
			bool unused = in.rollback && j == in.ol_cnt - 1u;

			ranges &= unused ? in.i_id[j] == c.items + 1 :
					   in.i_id[j] >= 1 && in.i_id[j] <= c.items;
			ranges &= in.quantity[j] >= 1 && in.quantity[j] <= 10;
			lines++;
			remote += in.supply_w[j] != in.w;
			any_remote |= in.supply_w[j] != in.w;
			for (k = 0; k < j; k++)
				distinct &= in.i_id[k] != in.i_id[j];
		}
		ranges &= in.all_local == !any_remote;
	}
	CHECK(ranges && distinct, "NewOrder inputs in range, items distinct");
	CHECK(within_4sigma((double)rb / n, 0.01, n), "rollbacks %.4f, want 0.01", (double)rb / n);
	CHECK(within_4sigma((double)remote / lines, 0.01, lines), "remote lines %.4f, want 0.01",
	      (double)remote / lines);
	CHECK(fabs((double)cnt_sum / n - 10) < 0.05, "mean O_OL_CNT %.3f, want 10",
	      (double)cnt_sum / n);
	for (i = 0; i < n; i++) {
		tpcc_draw_input(&c, TPCC_PAYMENT, &rng, &in);
		pay_remote += in.c_w != in.w;
		by_name += in.by_name;
		ranges &= in.amount >= 100 && in.amount <= 500000 &&
			  (in.by_name ? in.name < 1000 : in.c >= 1 && in.c <= 3000);
		tpcc_draw_input(&c, TPCC_ORDERSTATUS, &rng, &in);
		os_name += in.by_name;
	}
	CHECK(ranges, "Payment inputs in range");
	CHECK(within_4sigma((double)pay_remote / n, 0.15, n), "remote Payments %.4f, want 0.15",
	      (double)pay_remote / n);
	CHECK(within_4sigma((double)by_name / n, 0.6, n) &&
	      within_4sigma((double)os_name / n, 0.6, n),
	      "customers by name: Payment %.4f, OrderStatus %.4f, want 0.6",
	      (double)by_name / n, (double)os_name / n);
	/* one warehouse: nothing can be remote */
	c.warehouses = 1;
	for (i = 0, remote = 0; i < 20000; i++) {
		tpcc_draw_input(&c, TPCC_NEWORDER, &rng, &in);
		for (j = 0; j < in.ol_cnt; j++)
			remote += in.supply_w[j] != 1;
		remote += !in.all_local;
		tpcc_draw_input(&c, TPCC_PAYMENT, &rng, &in);
		remote += in.c_w != 1;
	}
	CHECK(remote == 0, "one warehouse: %llu remote accesses", (unsigned long long)remote);
	for (i = 0; i < n; i++)
		types[tpcc_pick_type(&c, &rng)]++;
	for (j = 0; j < TPCC_NTYPES; j++)
		CHECK(within_4sigma((double)types[j] / n, tpcc_standard_mix[j] / 100.0, n),
		      "%s: %.4f of the mix, want %.2f", tpcc_type_names[j], (double)types[j] / n,
		      tpcc_standard_mix[j] / 100.0);
	c.mix = TPCC_MIX_NEWORDER;
	for (i = 0, j = 0; i < 10000; i++)
		j += tpcc_pick_type(&c, &rng) != TPCC_NEWORDER;
	CHECK(j == 0, "--mix neworder draws NewOrder alone");
}

/* ---- a population in memory, as a snapshot ---- */

struct pop {
	struct wl_rec *r;
	size_t n, cap;
	uint64_t hash;
};

/* A record's value, to fill or change in place. */
static uint8_t *bytes(struct wl_rec *r)
{
	return (uint8_t *)wl_rec_value(r);
}

static int collect(void *arg, uint64_t key, const void *value, uint16_t vlen)
{
	struct pop *p = arg;
	struct wl_rec *r;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 1024;
		struct wl_rec *nr = realloc(p->r, cap * sizeof(*nr));

		if (!nr)
			return -1;
		p->r = nr;
		p->cap = cap;
	}
	r = &p->r[p->n++];
	memset(r, 0, sizeof(*r));
	r->table = tpcc_table_of(key);
	r->key = key;
	r->version = 1;
	r->vlen = vlen;
	if (vlen > XTX_VALUE_INLINE) {
		r->big = malloc(vlen);
		if (!r->big)
			return -1;
	}
	memcpy(bytes(r), value, vlen);
	p->hash = xtx_mix64(p->hash ^ key);
	for (size_t i = 0; i < vlen; i++)
		p->hash = p->hash * 31 + bytes(r)[i];
	return 0;
}

static unsigned int place0(void *arg, uint8_t table, uint64_t key, unsigned int i)
{
	(void)arg;
	(void)table;
	(void)key;
	return i ? WL_NO_REPLICA : 0;
}

static int populate(const struct tpcc_cfg *c, struct wl_snap *s, uint64_t *hash)
{
	struct pop p = { 0 };
	unsigned long v = 0;
	uint32_t w;

	for (w = 1; w <= c->warehouses; w++)
		if (tpcc_populate_warehouse(c, w, collect, &p))
			return -1;
	if (hash)
		*hash = p.hash;
	if (wl_snap_merge(p.r, p.n, TPCC_TABLES, 1, place0, NULL, s, &v) || v)
		return -1;
	free(p.r);
	return 0;
}

/* The snapshot's record of key, to change in place. */
static struct wl_rec *rec_of(struct wl_snap *s, uint64_t key)
{
	return (struct wl_rec *)wl_snap_find(s, tpcc_table_of(key), key);
}

static unsigned long quiet_check(const struct tpcc_cfg *c, const struct wl_snap *s,
				 struct tpcc_totals *t)
{
	int saved, devnull;
	unsigned long v;

	fflush(stderr);
	saved = dup(2);
	devnull = open("/dev/null", O_WRONLY);
	if (saved >= 0 && devnull >= 0)
		dup2(devnull, 2);
	v = tpcc_check_snap(c, s, "test", t);
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
	if (devnull >= 0)
		close(devnull);
	return v;
}

static void test_population(void)
{
	struct tpcc_cfg c = small_cfg(2, 7), c2 = small_cfg(2, 8);
	uint64_t h1 = 0, h2 = 0, h3 = 0;
	uint32_t d, first_new = tpcc_first_new_order(&c);
	size_t want;
	struct wl_snap s, s2;
	struct tpcc_totals t;
	unsigned long v;

	CHECK(!populate(&c, &s, &h1), "populate");
	/* W, STOCK; D, then C, H, O, OL and CLAST per customer, NO, NOHEAD, name rows */
	want = 2 * (1 + 200 + 10 * (1 + 30 * 5 + (30 - first_new + 1) + 1 + 30));
	CHECK(s.n == want, "%zu rows, want %zu", s.n, want);
	CHECK(first_new == 22, "orders 22..30 undelivered at 30 customers (2101 of 3000)");
	v = quiet_check(&c, &s, &t);
	CHECK(v == 0, "the population passes every check (%lu violations)", v);
	CHECK(t.orders == 2 * 10 * 30 && t.neworders == 2 * 10 * 9 && t.history == 2 * 10 * 30 &&
	      t.w_ytd == 2 * 10 * 30 * 1000, "totals: %llu orders, %llu new-orders, %llu "
	      "history, %lld W_YTD", (unsigned long long)t.orders,
	      (unsigned long long)t.neworders, (unsigned long long)t.history,
	      (long long)t.w_ytd);
	CHECK(!populate(&c, &s2, &h2) && h1 == h2, "a function of the seed");
	wl_snap_free(&s2);
	CHECK(!populate(&c2, &s2, &h3) && h1 != h3, "another seed, other rows");
	wl_snap_free(&s2);
	for (d = 1; d <= 10; d++) {
		const struct wl_rec *r = rec_of(&s, tpcc_key(TPCC_K_CNAME, 1, d, 0));
		struct tpcc_cname cn;

		CHECK(r && !tpcc_dec_cname(wl_rec_value(r), r->vlen, &cn) && cn.n >= 1,
		      "district %u: name 0 has customers", d);
	}
	wl_snap_free(&s);
	/* past 1000 customers names repeat (NURand): rows of several, sorted */
	c = small_cfg(1, 9);
	c.customers = 2000;
	CHECK(!populate(&c, &s, NULL), "populate 2000 customers");
	v = quiet_check(&c, &s, &t);
	CHECK(v == 0, "2000 customers a district: every check passes (%lu violations)", v);
	for (d = 0, want = 0; d < 1000; d++) {
		const struct wl_rec *r = rec_of(&s, tpcc_key(TPCC_K_CNAME, 1, 1, d));
		struct tpcc_cname cn;

		if (r && !tpcc_dec_cname(wl_rec_value(r), r->vlen, &cn))
			want += cn.n;
	}
	CHECK(want == 2000, "district 1's name rows list its 2000 customers (%zu)", want);
	wl_snap_free(&s);
}

/* Each way of breaking the data is caught. */
static void test_checks_catch(void)
{
	struct tpcc_cfg c = small_cfg(1, 11);
	struct tpcc_district dr;
	struct tpcc_idx idx;
	struct tpcc_order o;
	struct tpcc_customer cu;
	struct tpcc_olines ol;
	struct tpcc_totals t;
	struct wl_snap s;
	struct wl_rec *r;
	size_t i;

	/* condition 1 (and 9): a district's YTD off by a cent */
	CHECK(!populate(&c, &s, NULL), "populate");
	r = rec_of(&s, tpcc_key(TPCC_K_DISTRICT, 1, 3, 0));
	memcpy(&dr, bytes(r), sizeof(dr));
	dr.ytd++;
	memcpy(bytes(r), &dr, sizeof(dr));
	CHECK(quiet_check(&c, &s, &t) >= 2, "D_YTD changed: conditions 1 and 9");
	wl_snap_free(&s);

	/* condition 2: D_NEXT_O_ID ahead of the orders */
	CHECK(!populate(&c, &s, NULL), "populate");
	r = rec_of(&s, tpcc_key(TPCC_K_DISTRICT, 1, 4, 0));
	memcpy(&dr, bytes(r), sizeof(dr));
	dr.next_o_id++;
	memcpy(bytes(r), &dr, sizeof(dr));
	CHECK(quiet_check(&c, &s, &t) >= 1, "D_NEXT_O_ID changed: condition 2");
	wl_snap_free(&s);

	/* condition 3: a new-order row in the middle gone (its order undelivered) */
	CHECK(!populate(&c, &s, NULL), "populate");
	r = rec_of(&s, tpcc_key(TPCC_K_NEWORDER, 1, 5, 25));
	/* still sorted: the district's last new-order, before district 6's rows */
	r->key = tpcc_key(TPCC_K_NEWORDER, 1, 5, 9999);
	memcpy(&idx, bytes(r), sizeof(idx));
	idx.o_id = 9999;
	memcpy(bytes(r), &idx, sizeof(idx));
	CHECK(quiet_check(&c, &s, &t) >= 1, "a new-order row moved: conditions 2, 3, 5");
	wl_snap_free(&s);

	/* condition 4 and 6: an order's O_OL_CNT off */
	CHECK(!populate(&c, &s, NULL), "populate");
	r = rec_of(&s, tpcc_key(TPCC_K_ORDER, 1, 6, 3));
	memcpy(&o, bytes(r), sizeof(o));
	o.ol_cnt++;
	memcpy(bytes(r), &o, sizeof(o));
	CHECK(quiet_check(&c, &s, &t) >= 2, "O_OL_CNT changed: conditions 4 and 6");
	wl_snap_free(&s);

	/* condition 7: a delivered order's line with no delivery date */
	CHECK(!populate(&c, &s, NULL), "populate");
	r = rec_of(&s, tpcc_key(TPCC_K_OLINES, 1, 6, 2));
	CHECK(!tpcc_dec_olines(bytes(r), r->vlen, &ol), "lines decode");
	ol.l[0].delivery_d = 0;
	memcpy(bytes(r), &ol, r->vlen);
	CHECK(quiet_check(&c, &s, &t) >= 1, "a delivered line undated: condition 7");
	wl_snap_free(&s);

	/* condition 10: a customer's balance off */
	CHECK(!populate(&c, &s, NULL), "populate");
	r = rec_of(&s, tpcc_key(TPCC_K_CUSTOMER, 1, 2, 9));
	memcpy(&cu, bytes(r), sizeof(cu));
	cu.balance -= 5;
	memcpy(bytes(r), &cu, sizeof(cu));
	CHECK(quiet_check(&c, &s, &t) >= 1, "C_BALANCE changed: condition 10");
	wl_snap_free(&s);

	/* indexes: the new-order head, a customer's last order, a name row */
	CHECK(!populate(&c, &s, NULL), "populate");
	r = rec_of(&s, tpcc_key(TPCC_K_NOHEAD, 1, 7, 0));
	memcpy(&idx, bytes(r), sizeof(idx));
	idx.o_id++;
	memcpy(bytes(r), &idx, sizeof(idx));
	CHECK(quiet_check(&c, &s, &t) == 1, "the new-order head moved: one violation");
	wl_snap_free(&s);
	CHECK(!populate(&c, &s, NULL), "populate");
	r = rec_of(&s, tpcc_key(TPCC_K_CLAST, 1, 7, 4));
	memcpy(&idx, bytes(r), sizeof(idx));
	idx.o_id = idx.o_id == 1 ? 2 : 1;
	memcpy(bytes(r), &idx, sizeof(idx));
	CHECK(quiet_check(&c, &s, &t) == 1, "a last-order index wrong: one violation");
	wl_snap_free(&s);
	CHECK(!populate(&c, &s, NULL), "populate");
	r = rec_of(&s, tpcc_key(TPCC_K_CNAME, 1, 8, 0));
	CHECK(r && r->vlen >= 4, "name row");
	if (r) {
		uint16_t id = 17;	/* named 16 at load: not name 0 */

		memcpy(bytes(r) + 2, &id, sizeof(id));
	}
	CHECK(quiet_check(&c, &s, &t) >= 2, "a name row lists the wrong customer: listed "
	      "wrongly, and the right one listed nowhere");
	/* an undecodable row */
	for (i = 0; i < s.n && tpcc_key_kind(s.r[i].key) != TPCC_K_STOCK; i++)
		;
	/* its first 3 bytes, held inline as a 3-byte value would be */
	memcpy(s.r[i].value, s.r[i].big, 3);
	s.r[i].vlen = 3;
	CHECK(quiet_check(&c, &s, &t) >= 4, "a short STOCK row: rows check too");
	wl_snap_free(&s);
}

int main(void)
{
	RUN_CASE(test_keys);
	RUN_CASE(test_rows);
	RUN_CASE(test_generators);
	RUN_CASE(test_inputs);
	RUN_CASE(test_population);
	RUN_CASE(test_checks_catch);
	printf("# test_tpcc: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
