// SPDX-License-Identifier: GPL-2.0-only
/*
 * TATP, SmallBank, YCSB and Retwis generators: encodings, population, NURand, hotspot and
 * zipf skew, mixes, YCSB's records and Retwis's lists and follow graph.
 */
/* checks: 21 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xtx/hash.h>
#include "check.h"
#include "smallbank.h"
#include "retwis.h"
#include "retwis_txn.h"
#include "tatp.h"
#include "wlload.h"
#include "wlsnap.h"
#include "ycsb.h"
#include "ycsb_txn.h"
#include "zipf.h"

/* |got - want| within 4 standard deviations of a binomial share over n draws. */
static int within_4sigma(double got, double p, uint64_t n)
{
	return fabs(got - p) <= 4 * sqrt(p * (1 - p) / (double)n);
}

static struct tatp_cfg tatp_cfg(uint32_t p)
{
	struct tatp_cfg c = { .subscribers = p, .seed = 42 };

	memcpy(c.mix, tatp_default_mix, sizeof(c.mix));
	return c;
}

static void test_bcd(void)
{
	static const uint32_t ids[] = { 0, 7, 10, 1234567, 999999999 };
	unsigned int i;
	uint32_t s;

	CHECK(tatp_bcd(1234567) == 0x1234567, "BCD(1234567) = %#llx",
	      (unsigned long long)tatp_bcd(1234567));
	CHECK(tatp_bcd(90) == 0x90, "BCD(90)");
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		CHECK(!tatp_bcd_decode(tatp_bcd(ids[i]), &s) && s == ids[i], "round trip %u",
		      ids[i]);
	CHECK(tatp_bcd_decode(0x1a, &s) == -1, "a nibble above 9 is refused");
	CHECK(tatp_bcd_decode(0x1000000000ull, &s) == -1, "10^9 is past the id range");
	/* BCD(s) = s (mod 3), so SUB and SEC rows of an id pair up under key mod 3 */
	for (s = 0; s < 1000; s++)
		CHECK(tatp_bcd(s) % 3 == s % 3, "BCD(%u) mod 3", s);
}

static void test_keys(void)
{
	uint64_t k = tatp_cf_key(123456, 3, 16);

	CHECK(tatp_ai_key(7, 3) == 0x300000007ull, "AI (7,3) = %#llx",
	      (unsigned long long)tatp_ai_key(7, 3));
	CHECK(tatp_sf_key(7, 4) == 0x400000007ull, "SF (7,4)");
	CHECK(k == (123456 | 3ull << 32 | 16ull << 40), "CF key layout");
	CHECK(tatp_key_sid(k) == 123456 && tatp_key_type(k) == 3 && tatp_key_start(k) == 16,
	      "CF key fields back");
	CHECK(tatp_sub_key(99) == 99 && tatp_sec_key(99) == 0x99, "SUB and SEC keys");
}

static void test_tatp_values(void)
{
	static const struct tatp_sub a0 = { .s_id = 4321, .msc_location = 0xdeadbeef,
					    .vlr_location = 7 };
	static const struct tatp_ai ai0 = { 200, 3, "ABC", "VWXYZ" };
	static const struct tatp_sf sf0 = { 1, 9, 250, "QRSTU" };
	static const struct tatp_cf cf0 = { 24, "012345678901234" };
	struct tatp_sub a, b;
	struct tatp_ai ai, ai2;
	struct tatp_sf sf, sf2;
	struct tatp_cf cf, cf2;
	uint8_t buf[40];
	unsigned int i;
	uint32_t s;

	/*
	 * The round trips compare whole structs, padding included: copies of
	 * static ones (zero padding) against zeroed ones, never stack garbage.
	 */
	memcpy(&a, &a0, sizeof(a));
	memcpy(&ai, &ai0, sizeof(ai));
	memcpy(&sf, &sf0, sizeof(sf));
	memcpy(&cf, &cf0, sizeof(cf));
	memset(&b, 0, sizeof(b));
	memset(&ai2, 0, sizeof(ai2));
	memset(&sf2, 0, sizeof(sf2));
	memset(&cf2, 0, sizeof(cf2));
	for (i = 0; i < 10; i++) {
		a.bit[i] = i & 1;
		a.hex[i] = (uint8_t)(15 - i);
		a.byte2[i] = (uint8_t)(i * 25);
	}
	tatp_sub_encode(&a, buf);
	CHECK(!tatp_sub_decode(buf, TATP_SUB_VLEN, &b) && !memcmp(&a, &b, sizeof(a)),
	      "SUB round trip");
	CHECK(buf[0] == 0x21 && buf[1] == 0x43, "sub_nbr BCD at offset 0");
	CHECK(buf[15] == 0xef, "hex_1 low nibble, hex_2 high nibble of byte 15: %#x", buf[15]);
	CHECK(buf[20] == 0 && buf[29] == 225, "byte2_1..10 at 20..29");
	CHECK(buf[30] == 0xaa && buf[31] == 0x02, "bit_i at bit i-1 of offset 30");
	CHECK(buf[36] == 7 && buf[32] == 0xef, "msc at 32, vlr at 36");
	CHECK(tatp_sub_decode(buf, 39, &b) == -1, "SUB of the wrong length is refused");
	buf[9] = 1;
	CHECK(tatp_sub_decode(buf, TATP_SUB_VLEN, &b) == -1, "SUB padding must be zero");

	tatp_sec_encode(77, buf);
	CHECK(!tatp_sec_decode(buf, TATP_SEC_VLEN, &s) && s == 77, "SEC round trip");
	buf[4] = 0;
	CHECK(tatp_sec_decode(buf, TATP_SEC_VLEN, &s) == -1, "SEC without its magic");

	tatp_ai_encode(&ai, buf);
	CHECK(!tatp_ai_decode(buf, TATP_AI_VLEN, &ai2) && !memcmp(&ai, &ai2, sizeof(ai)),
	      "AI round trip");
	tatp_sf_encode(&sf, buf);
	CHECK(!tatp_sf_decode(buf, TATP_SF_VLEN, &sf2) && !memcmp(&sf, &sf2, sizeof(sf)),
	      "SF round trip");
	CHECK(buf[TATP_SF_OFF_DATA_A] == 250, "SF data_a offset");
	tatp_cf_encode(&cf, buf);
	CHECK(!tatp_cf_decode(buf, TATP_CF_VLEN, &cf2) && !memcmp(&cf, &cf2, sizeof(cf)),
	      "CF round trip");
	buf[3] = 'x';
	CHECK(tatp_cf_decode(buf, TATP_CF_VLEN, &cf2) == -1, "CF numberx must be digits");
}

/* Row counts of the population against §1.2's expectations, and each row's form. */
static void population_case(enum tatp_population pop, double cf_per_sf, double cf_var)
{
	struct tatp_cfg c = tatp_cfg(20000);
	struct tatp_row rows[TATP_MAX_ROWS_PER_SUB], again[TATP_MAX_ROWS_PER_SUB];
	uint64_t cnt[6] = { 0 }, bad = 0;
	unsigned int n, i;
	uint32_t s;
	double p = c.subscribers;

	c.population = pop;
	for (s = 0; s < c.subscribers; s++) {
		n = tatp_rows_of(&c, s, rows);
		for (i = 0; i < n; i++) {
			struct tatp_sub sub;
			struct tatp_ai ai;
			struct tatp_sf sf;
			struct tatp_cf cf;
			uint32_t id;
			int err = -1;

			cnt[rows[i].table]++;
			switch (rows[i].table) {
			case TATP_SUB:
				err = tatp_sub_decode(rows[i].value, rows[i].vlen, &sub) ||
				      sub.s_id != s || !sub.vlr_location;
				break;
			case TATP_SEC:
				err = tatp_sec_decode(rows[i].value, rows[i].vlen, &id) || id != s ||
				      rows[i].key != tatp_bcd(s);
				break;
			case TATP_AI:
				err = tatp_ai_decode(rows[i].value, rows[i].vlen, &ai);
				break;
			case TATP_SF:
				err = tatp_sf_decode(rows[i].value, rows[i].vlen, &sf);
				break;
			case TATP_CF: {
				uint8_t st = tatp_key_start(rows[i].key);

				err = tatp_cf_decode(rows[i].value, rows[i].vlen, &cf);
				if (pop == TATP_POP_SPEC)
					err |= cf.end_time <= st || cf.end_time > st + 8;
				else
					err |= cf.end_time < 1 || cf.end_time > 24;
				/* its SF row comes earlier among this subscriber's rows */
				break;
			}
			}
			if (rows[i].table != TATP_SEC && tatp_key_sid(rows[i].key) != s)
				err = -1;
			bad += err != 0;
		}
		if (s < 100) {
			CHECK(tatp_rows_of(&c, s, again) == n && !memcmp(rows, again, n * sizeof(*rows)),
			      "subscriber %u's rows are a function of (seed, s)", s);
		}
	}
	CHECK(!bad, "%llu rows do not decode or break their table's rules", (unsigned long long)bad);
	CHECK(cnt[TATP_SUB] == c.subscribers && cnt[TATP_SEC] == c.subscribers,
	      "one SUB and one SEC row per subscriber");
	/* k uniform in 1..4: mean 2.5, variance 1.25 */
	CHECK(fabs(cnt[TATP_AI] - 2.5 * p) < 4 * sqrt(1.25 * p), "AI rows %llu, ~2.5 P",
	      (unsigned long long)cnt[TATP_AI]);
	CHECK(fabs(cnt[TATP_SF] - 2.5 * p) < 4 * sqrt(1.25 * p), "SF rows %llu, ~2.5 P",
	      (unsigned long long)cnt[TATP_SF]);
	CHECK(fabs(cnt[TATP_CF] - cf_per_sf * cnt[TATP_SF]) < 4 * sqrt(cf_var * cnt[TATP_SF]),
	      "CF rows %llu, ~%.2f per SF row", (unsigned long long)cnt[TATP_CF], cf_per_sf);
}

static void test_population_spec(void)
{
	/* m uniform in 0..3 per SF row */
	population_case(TATP_POP_SPEC, 1.5, 1.25);
}

static void test_population_steady(void)
{
	/* three fair coins per SF row */
	population_case(TATP_POP_STEADY, 1.5, 0.75);
}

static int cmp_desc(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Share of draws the hottest 1% of ids got, and whether the hottest has low 16 bits set. */
static double hottest_share(struct tatp_cfg *c, uint64_t draws, uint32_t *hot_id, double *ones)
{
	uint32_t *hits = calloc(c->subscribers, sizeof(*hits));
	uint64_t rng = 12345, top = 0, all_ones = 0, i;
	uint32_t best = 0;

	if (!hits)
		return -1;
	for (i = 0; i < draws; i++) {
		uint32_t s = tatp_subscriber(c, &rng);

		if (s >= c->subscribers) {
			free(hits);
			return -1;
		}
		hits[s]++;
		all_ones += (s & 0xffff) == 0xffff;
	}
	for (i = 0; i < c->subscribers; i++)
		if (hits[i] > hits[best])
			best = (uint32_t)i;
	qsort(hits, c->subscribers, sizeof(*hits), cmp_desc);
	for (i = 0; i < c->subscribers / 100; i++)
		top += hits[i];
	free(hits);
	*hot_id = best;
	*ones = (double)all_ones / (double)draws;
	return (double)top / (double)draws;
}

static void test_nurand_skew(void)
{
	struct tatp_cfg c = tatp_cfg(1000000);
	uint32_t hot;
	double share, ones;

	CHECK(tatp_nurand_a(1000000) == 65535 && tatp_nurand_a(1000001) == 1048575 &&
	      tatp_nurand_a(10000001) == 2097151, "A by population size");
	share = hottest_share(&c, 4000000, &hot, &ones);
	/* §1.3: the hottest 1% get 38.8% at P = 1M, A = 65535 */
	CHECK(share > 0.34 && share < 0.44, "NURand: hottest 1%% of ids get %.3f", share);
	CHECK((hot & 0xffff) == 0xffff, "the hottest id %#x has its low 16 bits set", hot);
	/* every low bit is set with probability 3/4 by the OR of two uniform draws */
	CHECK(ones > 0.0085 && ones < 0.0115, "ids with low 16 bits set: %.4f, ~(3/4)^16", ones);

	c.uniform = true;
	share = hottest_share(&c, 4000000, &hot, &ones);
	CHECK(share > 0 && share < 0.04, "uniform: hottest 1%% get %.3f", share);
	CHECK(ones < 0.001, "uniform: low 16 bits set %.5f", ones);
}

static void test_tatp_mix(void)
{
	struct tatp_cfg c = tatp_cfg(1000);
	uint64_t cnt[TATP_NTYPES] = { 0 }, rng = 99, n = 1000000, i;
	struct tatp_input in;

	for (i = 0; i < n; i++)
		cnt[tatp_pick_type(&c, &rng)]++;
	for (i = 0; i < TATP_NTYPES; i++)
		CHECK(within_4sigma((double)cnt[i] / n, tatp_default_mix[i] / 100.0, n),
		      "%s: %.4f of the mix, want %.2f", tatp_type_names[i], (double)cnt[i] / n,
		      tatp_default_mix[i] / 100.0);
	for (i = 0; i < 100000; i++) {
		tatp_draw_input(&c, TATP_ICF, 5, &rng, &in);
		if (in.s_id >= 1000 || in.ai_type < 1 || in.ai_type > 4 || in.sf_type < 1 ||
		    in.sf_type > 4 || in.start_time % 8 || in.start_time > 16 ||
		    in.end_time < 1 || in.end_time > 24 || in.bit > 1 || in.vlr != 5 ||
		    in.numberx[0] != '0' || in.numberx[14] < '0' || in.numberx[14] > '9')
			break;
	}
	CHECK(i == 100000, "inputs in their §1.4 ranges (draw %llu)", (unsigned long long)i);
	c.end_0_23 = true;
	for (i = 0; i < 10000; i++) {
		tatp_draw_input(&c, TATP_GND, 0, &rng, &in);
		if (in.end_time > 23)
			break;
	}
	CHECK(i == 10000, "end_time in [0,23] for FaSST parity");
}

static struct sb_cfg sb_cfg(uint32_t n);

/*
 * The client's draws as xtxbench makes them (tatp_begin: the type, then that
 * type's inputs from the same generator, so ICF's extra subscriber shifts the
 * next type's bits): the shares pooled over 10^7 transactions sit on the mix, and
 * runs of 5 * 10^5 scatter around it as a multinomial does, no wider.  A type
 * choice biased by 1% (UL at 0.1415 of a million) fails the first by 10 standard
 * deviations; one that depends on the previous transaction fails the second.
 */
static void test_client_draws(void)
{
	struct tatp_cfg c = tatp_cfg(2000);
	uint64_t total[TATP_NTYPES] = { 0 }, all = 0, runs = 20, per = 500000, r, i;
	double z2 = 0, z2_sb = 0;
	struct sb_cfg sc = sb_cfg(1000);
	struct tatp_input in;
	unsigned int t;

	for (r = 0; r < runs; r++) {
		uint64_t cnt[TATP_NTYPES] = { 0 }, rng = xtx_mix64(0x5eed0000ull + r) | 1;

		for (i = 0; i < per; i++) {
			enum tatp_type type = tatp_pick_type(&c, &rng);

			tatp_draw_input(&c, type, type == TATP_UL ? (uint32_t)i : 0, &rng, &in);
			cnt[type]++;
		}
		for (t = 0; t < TATP_NTYPES; t++) {
			double p = tatp_default_mix[t] / 100.0;
			double z = ((double)cnt[t] / per - p) / sqrt(p * (1 - p) / per);

			z2 += z * z;
			total[t] += cnt[t];
		}
		all += per;
	}
	for (t = 0; t < TATP_NTYPES; t++)
		CHECK(fabs((double)total[t] / all - tatp_default_mix[t] / 100.0) <=
		      4 * sqrt(tatp_default_mix[t] / 100.0 * (1 - tatp_default_mix[t] / 100.0) / all),
		      "%s: %.5f of %llu draws, the mix says %.2f", tatp_type_names[t],
		      (double)total[t] / all, (unsigned long long)all, tatp_default_mix[t] / 100.0);
	/* E[z^2] = 1 per share; 140 of them average within [0.6, 1.5] unless overdispersed */
	z2 /= (double)(runs * TATP_NTYPES);
	CHECK(z2 > 0.6 && z2 < 1.5, "TATP: mean z^2 %.3f over %llu runs, a multinomial gives 1",
	      z2, (unsigned long long)runs);
	for (r = 0; r < runs; r++) {
		uint64_t cnt[SB_NTYPES] = { 0 }, rng = xtx_mix64(0xabc00ull + r) | 1;
		uint32_t a0, a1;

		for (i = 0; i < per; i++) {
			enum sb_type type = sb_pick_type(&sc, &rng);

			sb_pick_accounts(&sc, type, &rng, &a0, &a1);
			cnt[type]++;
		}
		for (t = 0; t < SB_NTYPES; t++) {
			double p = sb_default_mix[t] / 100.0;
			double z = ((double)cnt[t] / per - p) / sqrt(p * (1 - p) / per);

			z2_sb += z * z;
		}
	}
	z2_sb /= (double)(runs * SB_NTYPES);
	CHECK(z2_sb > 0.6 && z2_sb < 1.5, "SmallBank: mean z^2 %.3f over %llu runs", z2_sb,
	      (unsigned long long)runs);
}

/*
 * --verify's tolerance for a share: wide enough that chance alone trips it less
 * than once in 10^12 checks (never under 7 standard deviations, where a normal
 * tail is 2.6e-12), narrow enough to catch a bias of a few tenths of a percent,
 * and exact for a share of 0 or 1.
 */
static void test_share_tolerance(void)
{
	static const double ps[] = { 0.001, 0.02, 0.14, 0.35, 0.5, 0.9 };
	uint64_t n;
	unsigned int i;

	for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
		for (n = 100; n <= 1000000000; n *= 10) {
			double sd = sqrt(ps[i] * (1 - ps[i]) / (double)n);

			CHECK(wl_share_tolerance(ps[i], n) >= 7 * sd,
			      "p %.3f n %llu: tolerance %.6f under 7 sd (%.6f)", ps[i],
			      (unsigned long long)n, wl_share_tolerance(ps[i], n), 7 * sd);
		}
	/* the false alarms met: UL at 0.1415 of 1.2M (4.7 sd), GSD at 0.3451 of 175k (4.3 sd) */
	CHECK(wl_share_plausible(0.1415, 0.14, 1200000, 0), "UL 0.1415 of 1.2M is chance");
	CHECK(wl_share_plausible(0.3451, 0.35, 175000, 0), "GSD 0.3451 of 175k is chance");
	/* a real bias: 2% more UL than drawn, or a type counted twice in a hundred */
	CHECK(!wl_share_plausible(0.1428, 0.14, 1200000, 0), "UL 2%% over at 1.2M is caught");
	CHECK(!wl_share_plausible(0.354, 0.35, 1200000, 0), "GSD 1.1%% over at 1.2M is caught");
	CHECK(wl_share_tolerance(1, 1000) == 0 && wl_share_tolerance(0, 1000) == 0,
	      "a share of 0 or 1 is exact");
	CHECK(!wl_share_plausible(0.9999, 1, 100000, 0), "one failure of a sure thing is caught");
}

static struct sb_cfg sb_cfg(uint32_t n)
{
	struct sb_cfg c = { .accounts = n, .hot = sb_default_hot(n), .hot_prob = 0.9, .seed = 7 };

	memcpy(c.mix, sb_default_mix, sizeof(c.mix));
	return c;
}

static void test_sb_mix(void)
{
	struct sb_cfg c = sb_cfg(1000);
	uint64_t cnt[SB_NTYPES] = { 0 }, rng = 5, n = 1000000, i;

	for (i = 0; i < n; i++)
		cnt[sb_pick_type(&c, &rng)]++;
	for (i = 0; i < SB_NTYPES; i++)
		CHECK(within_4sigma((double)cnt[i] / n, sb_default_mix[i] / 100.0, n),
		      "%s: %.4f of the mix, want %.2f", sb_type_names[i], (double)cnt[i] / n,
		      sb_default_mix[i] / 100.0);
}

static void hotspot_case(double hot_prob)
{
	struct sb_cfg c = sb_cfg(1000);
	uint64_t rng = 77, n = 1000000, hot = 0, i, bad = 0;
	uint32_t a0, a1;
	double want;

	c.hot_prob = hot_prob;
	CHECK(c.hot == 40, "hot set is 4%% of N: %u", c.hot);
	for (i = 0; i < n; i++) {
		enum sb_type t = (enum sb_type)(i % SB_NTYPES);

		sb_pick_accounts(&c, t, &rng, &a0, &a1);
		hot += a0 < c.hot;
		if (a0 >= c.accounts || a1 >= c.accounts ||
		    ((t == SB_AMG || t == SB_SP) ? a0 == a1 : a0 != a1))
			bad++;
		/* both accounts come from the same pool */
		if ((t == SB_AMG || t == SB_SP) && a0 < c.hot && hot_prob == 1.0 && a1 >= c.hot)
			bad++;
	}
	want = hot_prob + (1 - hot_prob) * c.hot / c.accounts;
	CHECK(within_4sigma((double)hot / n, want, n), "hot share %.4f, want %.4f (p=%.1f)",
	      (double)hot / n, want, hot_prob);
	CHECK(!bad, "%llu picks out of range or with a1 = a0", (unsigned long long)bad);
}

static void test_sb_hotspot(void)
{
	hotspot_case(0.9);
	hotspot_case(0.0);
	hotspot_case(1.0);
}

static void test_sb_balances(void)
{
	struct sb_cfg c = sb_cfg(100000);
	uint8_t buf[SB_VLEN];
	int64_t v, sum = 0;
	uint32_t a, bad = 0;

	for (a = 0; a < c.accounts; a++) {
		int64_t s = sb_initial_balance(&c, SB_SAV, a), k = sb_initial_balance(&c, SB_CHK, a);

		if (s < SB_INIT_MIN_CENTS || s > SB_INIT_MAX_CENTS || s % 100 ||
		    k < SB_INIT_MIN_CENTS || k > SB_INIT_MAX_CENTS || k % 100 ||
		    s != sb_initial_balance(&c, SB_SAV, a))
			bad++;
		sum += s;
	}
	CHECK(!bad, "%u balances outside whole dollars in [10000, 50000]", bad);
	/* mean $30,000, sd of a uniform over $40,000: ~11,547 */
	CHECK(fabs((double)sum / c.accounts / 100 - 30000) < 4 * 11547 / sqrt(c.accounts),
	      "mean savings $%.0f", (double)sum / c.accounts / 100);
	sb_encode(-60012345678ll, buf);
	CHECK(!sb_decode(buf, SB_VLEN, &v) && v == -60012345678ll, "negative cents round trip");
	CHECK(buf[7] == 0xff && sb_decode(buf, 4, &v) == -1, "int64 LE; short values refused");
}

/* Key k lives on servers k % 3 and (k + 1) % 3 of three. */
static unsigned int place_mod3(void *arg, uint8_t table, uint64_t key, unsigned int i)
{
	(void)arg;
	(void)table;
	return (unsigned int)((key + i) % 3);
}

static struct wl_rec rec(uint16_t server, uint8_t table, uint64_t key, uint8_t v)
{
	struct wl_rec r = { .table = table, .vlen = 1, .server = server, .key = key, .version = 1 };

	r.value[0] = v;
	return r;
}

static void test_dump_parse(void)
{
	struct wl_rec r;

	CHECK(!wl_parse_dump_line("table=5 key=8804682957401 version=3 vlen=2 value=0aff\n", &r) &&
	      r.table == 5 && r.key == 8804682957401ull && r.version == 3 && r.vlen == 2 &&
	      r.value[0] == 0x0a && r.value[1] == 0xff, "a dump line");
	CHECK(!wl_parse_dump_line("table=8 key=1 version=1 vlen=0 value=\n", &r) && r.vlen == 0,
	      "an empty value");
	CHECK(wl_parse_dump_line("table=8 key=1 version=1 vlen=2 value=0a\n", &r) == -1,
	      "vlen and value disagree");
	CHECK(wl_parse_dump_line("table=8 key=1 version=1 vlen=1 value=zz\n", &r) == -1,
	      "not hex");
	CHECK(wl_parse_dump_line("loaded 5 keys\n", &r) == -1, "not a record");
}

static void test_snap_merge(void)
{
	struct wl_rec good[] = {
		rec(1, 8, 1, 7), rec(2, 8, 1, 7),	/* key 1: servers 1, 2 */
		rec(0, 9, 3, 4), rec(1, 9, 3, 4),	/* key 3: servers 0, 1 */
		rec(2, 3, 5, 9),			/* table 3 is not asked for */
	};
	struct wl_rec bad[] = {
		rec(1, 8, 1, 7), rec(2, 8, 1, 6),	/* replicas differ */
		rec(0, 9, 3, 4),			/* missing on server 1 */
		rec(2, 9, 4, 1), rec(1, 9, 4, 1), rec(0, 9, 4, 1), /* also on server 0 */
	};
	const struct wl_rec *first;
	struct wl_snap s;
	unsigned long v = 0;
	int saved, devnull, err;

	CHECK(!wl_snap_merge(good, 5, 1u << 8 | 1u << 9, 2, place_mod3, NULL, &s, &v), "merge");
	CHECK(v == 0 && s.n == 2, "%lu violations, %zu keys", v, s.n);
	CHECK(wl_snap_find(&s, 8, 1) && wl_snap_find(&s, 8, 1)->value[0] == 7 &&
	      !wl_snap_find(&s, 8, 3) && !wl_snap_find(&s, 3, 5), "find by table and key");
	CHECK(wl_snap_table(&s, 9, &first) == 1 && first->key == 3, "a table's rows");
	wl_snap_free(&s);

	/* the violations it prints are the point here: keep them out of the suite's output */
	fflush(stderr);
	saved = dup(2);
	devnull = open("/dev/null", O_WRONLY);
	if (saved >= 0 && devnull >= 0)
		dup2(devnull, 2);
	err = wl_snap_merge(bad, 6, 1u << 8 | 1u << 9, 2, place_mod3, NULL, &s, &v);
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
	if (devnull >= 0)
		close(devnull);
	CHECK(!err, "merge");
	/* one each: a differing replica, a missing replica, a server that is no replica */
	CHECK(v == 3, "%lu violations, want 3", v);
	wl_snap_free(&s);
}

/* Runs fn with stderr sent to /dev/null: the errors it prints are expected. */
static int quietly(int (*fn)(void *), void *arg)
{
	int saved, devnull, rc;

	fflush(stderr);
	saved = dup(2);
	devnull = open("/dev/null", O_WRONLY);
	if (saved >= 0 && devnull >= 0)
		dup2(devnull, 2);
	rc = fn(arg);
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
	if (devnull >= 0)
		close(devnull);
	return rc;
}

static int add_oversized(void *arg)
{
	uint8_t big[XTX_VALUE_MAX + 1] = {};

	return wl_rows_add(arg, 1, 99, big, sizeof(big));
}

static int load_hades(void *arg)
{
	struct wl_load_cfg cfg = { .protocol = XTX_PROTO_HADES, .nclients = 1, .inflight = 1 };
	struct wl_load_stats st;

	return wl_load_rows(&cfg, arg, &st);
}

static void test_load_rows(void)
{
	struct wl_rows rows = {};
	uint8_t v[XTX_VALUE_INLINE];
	bool same = true;
	uint32_t i;
	size_t n;

	for (i = 0; i < 10000; i++) {
		memcpy(v, &i, sizeof(i));
		if (wl_rows_add(&rows, (uint8_t)(i % 7), 1000 + i, v, (uint8_t)(i % 41)))
			break;
	}
	CHECK(i == 10000 && rows.n == 10000, "10000 rows kept (%zu)", rows.n);
	for (i = 0; i < rows.n && same; i++)
		same = rows.r[i].table == i % 7 && rows.r[i].key == 1000 + i &&
		       rows.r[i].vlen == i % 41 &&
		       (rows.r[i].vlen < 4 || !memcmp(rows.r[i].value, &i, sizeof(i)));
	CHECK(same, "rows kept in order with their values through the growth");
	n = rows.n;
	CHECK(quietly(add_oversized, &rows) == -1 && rows.n == n,
	      "a value past XTX_VALUE_MAX refused, nothing added");
	CHECK(quietly(load_hades, &rows) == -1, "loading under hades refused");
	wl_rows_free(&rows);
	CHECK(!rows.r && !rows.n && !rows.cap, "freed");
}

static int ycsb_init(void *cfg)
{
	return ycsb_cfg_init(cfg);
}

static int rw_init(void *cfg)
{
	return rw_cfg_init(cfg);
}

static struct ycsb_cfg ycsb_cfg(char workload, unsigned int fields, unsigned int size)
{
	struct ycsb_cfg c = { .records = 1000, .fields = fields, .field_size = size,
			      .ops_per_txn = 5, .workload = workload, .theta = 0.99, .seed = 3 };

	CHECK(!ycsb_cfg_init(&c), "config %c %ux%u", workload, fields, size);
	return c;
}

static void test_ycsb_records(void)
{
	struct ycsb_cfg c = ycsb_cfg('f', 10, 100), s = ycsb_cfg('a', 3, 8);
	uint8_t rec[XTX_VALUE_MAX], old[XTX_VALUE_MAX];
	unsigned int f;

	CHECK(ycsb_record_len(&c) == 1016 && ycsb_record_len(&s) == 40,
	      "10 x 100 B in 1016 bytes, 3 x 8 B in 40");
	ycsb_record_init(&c, 777, rec);
	CHECK(!ycsb_record_check(&c, 777, rec, 1016), "a loaded record checks");
	CHECK(rec[0] == 0x09 && rec[1] == 0x03 && !rec[2], "the key first, little-endian");
	CHECK(ycsb_record_counter(rec) == 0, "counter 0 when loaded");
	for (f = 0; f < c.fields; f++)
		CHECK(ycsb_field_stamp(&c, rec, f) == 0, "field %u stamped 0", f);
	CHECK(ycsb_record_check(&c, 778, rec, 1016) != NULL, "another key's record is refused");
	CHECK(ycsb_record_check(&c, 777, rec, 1015) != NULL, "a short record is refused");
	memcpy(old, rec, sizeof(rec));
	ycsb_record_write(&c, rec, 4, 0xabcdef, true);
	CHECK(!ycsb_record_check(&c, 777, rec, 1016), "a written record checks");
	CHECK(ycsb_record_counter(rec) == 1 && ycsb_field_stamp(&c, rec, 4) == 0xabcdef,
	      "the counter bumped, field 4 stamped");
	CHECK(!memcmp(rec + 16, old + 16, 400) && !memcmp(rec + 516, old + 516, 500),
	      "the other fields kept");
	ycsb_record_write(&c, rec, 4, 0xabcdef, false);
	CHECK(ycsb_record_counter(rec) == 1, "an update leaves the counter");
	rec[600] ^= 1;
	CHECK(ycsb_record_check(&c, 777, rec, 1016) != NULL, "a flipped bit is caught");
	rec[600] ^= 1;
	/* a field that claims another stamp, checksum made good: its bytes give it away */
	memcpy(rec + 16, old + 16 + 100, 100);
	rec[12] = rec[13] = rec[14] = rec[15] = 0;
	CHECK(ycsb_record_check(&c, 777, rec, 1016) != NULL, "a field moved from another");
	/* the printable fill depends on every input */
	ycsb_fill(&c, 1, 2, 3, rec, 92);
	ycsb_fill(&c, 1, 2, 4, old, 92);
	CHECK(memcmp(rec, old, 92), "the fill follows the stamp");
	for (f = 0; f < 92 && rec[f] >= ' ' && rec[f] < 127; f++)
		;
	CHECK(f == 92, "fields are printable");
	c.field_size = 101;
	CHECK(quietly(ycsb_init, &c) == -1, "10 x 101 B does not fit 1 KiB");
}

static void test_ycsb_generators(void)
{
	static const char wl[] = "abcf";
	static const double share[] = { 0.5, 0.05, 0, 0.5 };
	uint64_t rng = 11, n = 400000, i, cnt[YCSB_NOPS], hits[1000] = { 0 }, top = 0;
	struct ycsb_cfg c;
	struct ycsb_txn x;
	unsigned int w, j, k, bad = 0;

	for (w = 0; w < 4; w++) {
		enum ycsb_op wop = wl[w] == 'f' ? YCSB_RMW : YCSB_UPDATE;

		c = ycsb_cfg(wl[w], 3, 8);
		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[ycsb_pick_op(&c, &rng)]++;
		CHECK(within_4sigma((double)cnt[wop] / n, share[w], n) || (!share[w] && !cnt[wop]),
		      "%c: %.4f of the requests write, want %.2f", wl[w], (double)cnt[wop] / n,
		      share[w]);
		CHECK(cnt[wop == YCSB_RMW ? YCSB_UPDATE : YCSB_RMW] == 0, "%c: no other writes",
		      wl[w]);
	}
	/* zipf 0.99 over 1000 records: record 0 is the hottest, about 1/zeta(1000) = 13% */
	c = ycsb_cfg('a', 3, 8);
	for (i = 0; i < n; i++)
		hits[ycsb_pick_key(&c, &rng)]++;
	for (i = 1; i < 1000; i++)
		top += hits[i] > hits[0];
	CHECK(!top && hits[0] > n / 10 && hits[0] < n / 6, "zipf: record 0 drawn %llu of %llu",
	      (unsigned long long)hits[0], (unsigned long long)n);
	c.theta = 0;
	memset(hits, 0, sizeof(hits));
	for (i = 0; i < n; i++)
		hits[ycsb_pick_key(&c, &rng)]++;
	for (i = 0; i < 1000; i++)
		bad += hits[i] < n / 1000 / 2 || hits[i] > n / 1000 * 2;
	CHECK(!bad, "uniform: %u records far from their share", bad);
	/* a transaction's keys differ and its writes' stamps are base + index */
	c.theta = 0.99;
	c.records = 5;
	CHECK(!ycsb_cfg_init(&c), "5 records");
	bad = 0;
	for (i = 0; i < 10000; i++) {
		ycsb_txn_draw(&x, &c, &rng, 1000 * YCSB_MAX_OPS);
		for (j = 0; j < x.n; j++) {
			bad += x.req[j].key >= 5 || x.req[j].field >= 3 ||
			       x.req[j].stamp != 1000 * YCSB_MAX_OPS + j;
			for (k = 0; k < j; k++)
				bad += x.req[k].key == x.req[j].key;
		}
	}
	CHECK(x.n == 5 && !bad, "5 distinct keys of 5 records, stamps in order (%u bad)", bad);
	c.ops_per_txn = 6;
	CHECK(quietly(ycsb_init, &c) == -1, "6 requests on 5 records refused");
}

static struct rw_cfg rw_cfg(uint32_t users, unsigned int value_max)
{
	struct rw_cfg c = { .users = users, .follows = 3, .value_max = value_max,
			    .tweet_size = 40, .fanout = 2, .theta = 0.5, .seed = 9 };

	memcpy(c.mix, rw_default_mix, sizeof(c.mix));
	CHECK(!rw_cfg_init(&c), "retwis config");
	return c;
}

static void test_rw_values(void)
{
	struct rw_cfg c = rw_cfg(100, 1024);
	static struct rw_list l, l2;
	struct rw_user u = { .uid = 4242, .ntweets = 17 }, u2;
	uint8_t v[XTX_VALUE_MAX];
	uint32_t n;
	unsigned int i;
	uint16_t len;

	CHECK(rw_key(RW_TWEET, rw_tweet_id(5, 3)) == (5ull << 56 | 5ull << 24 | 3),
	      "tweet key: kind 5 on top, uid above 24 bits of seq");
	CHECK(rw_key_kind(rw_key(RW_FOLLOWERS, 7)) == RW_FOLLOWERS &&
	      rw_key_payload(rw_key(RW_FOLLOWERS, 7)) == 7, "kind and payload back");
	CHECK(rw_list_max(&c, RW_FOLLOWERS) == 254 && rw_list_max(&c, RW_TIMELINE) == 127,
	      "1 KiB lists: 254 users, 127 tweets");
	c.value_max = 40;
	CHECK(rw_list_max(&c, RW_FOLLOWING) == 8 && rw_list_max(&c, RW_TIMELINE) == 4,
	      "40-byte lists: 8 users, 4 tweets");
	len = rw_user_encode(&u, v);
	CHECK(len == RW_USER_LEN && len <= XTX_VALUE_INLINE, "a user fits the slot");
	CHECK(!rw_user_decode(v, len, &u2) && u2.uid == 4242 && u2.ntweets == 17,
	      "user round trip");
	CHECK(!memcmp(v + 12, "user4242", 9), "the name at 12");
	v[8]++;
	CHECK(rw_user_decode(v, len, &u2) == -1, "a user whose count changed behind its sum");
	l = (struct rw_list){ .kind = RW_TIMELINE, .owner = 6 };
	for (i = 0; i < 6; i++)
		rw_list_push_front(&l, 100 + i, 4);
	CHECK(l.n == 4 && l.e[0] == 105 && l.e[3] == 102, "a timeline keeps the newest 4");
	len = rw_list_encode(&l, v);
	CHECK(len == 40 && !rw_list_decode(v, len, RW_TIMELINE, &l2) && l2.n == 4 &&
	      l2.owner == 6 && l2.e[3] == 102, "timeline round trip");
	CHECK(rw_list_decode(v, len, RW_FOLLOWERS, &l2) == -1, "a list of another kind");
	CHECK(rw_list_decode(v, len - 1, RW_TIMELINE, &l2) == -1, "a list cut short");
	rw_list_remove(&l, 1);
	CHECK(l.n == 3 && l.e[0] == 105 && l.e[1] == 103 && rw_list_find(&l, 104) == -1 &&
	      rw_list_find(&l, 102) == 2, "remove keeps the order");
	len = rw_tweet_encode(&c, 9, 4, v);
	CHECK(len == 40 && !rw_tweet_check(&c, 9, 4, v, len), "a tweet checks");
	CHECK(rw_tweet_check(&c, 9, 5, v, len) == -1, "... not as another's");
	len = rw_next_encode(12, v);
	CHECK(!rw_next_decode(v, len, &n) && n == 12, "counter round trip");
	v[5] ^= 1;
	CHECK(rw_next_decode(v, len, &n) == -1, "a counter without its complement");
	CHECK(rw_added_uid(&c, 3, 2) == 100 + 2 * RW_PARTS + 3, "added users past the loaded");
}

static void test_rw_graph(void)
{
	struct rw_cfg c = rw_cfg(3000, 40);
	unsigned int fmax = rw_list_max(&c, RW_FOLLOWERS), bad = 0, full = 0;
	uint64_t edges = 0, in = 0, j, k;
	struct rw_graph g;
	uint32_t a;

	/* half the bound: a few hot followees fill up, nearly every edge is kept */
	c.follows = 4;
	CHECK(!rw_graph_build(&c, &g), "built");
	for (a = 0; a < c.users; a++) {
		const uint32_t *mine = g.following + (size_t)a * c.follows;

		edges += g.nfollowing[a];
		in += g.foff[a + 1] - g.foff[a];
		full += g.foff[a + 1] - g.foff[a] == fmax;
		bad += g.foff[a + 1] - g.foff[a] > fmax || g.nfollowing[a] > c.follows;
		for (j = 0; j < g.nfollowing[a]; j++) {
			bool back = false;

			bad += mine[j] == a || mine[j] >= c.users;
			for (k = 0; k < j; k++)
				bad += mine[k] == mine[j];
			for (k = g.foff[mine[j]]; k < g.foff[mine[j] + 1]; k++)
				back |= g.followers[k] == a;
			bad += !back;
		}
	}
	CHECK(!bad && edges == in, "symmetric, bounded, no self or repeat (%u bad, %llu edges)",
	      bad, (unsigned long long)edges);
	CHECK(edges > 3.9 * c.users && full > 0, "nearly every user follows 4 (%llu), %u lists "
	      "full", (unsigned long long)edges, full);
	rw_graph_free(&g);
	c.follows = 9;
	CHECK(quietly(rw_init, &c) == -1, "9 follows do not fit 40-byte lists");
}

static void test_rw_mix(void)
{
	struct rw_cfg c = rw_cfg(1000, 1024);
	uint64_t cnt[RW_NTYPES] = { 0 }, rng = 13, n = 400000, i, bad = 0, zero = 0;
	struct rw_txn x;

	for (i = 0; i < n; i++) {
		rw_txn_draw(&x, &c, &rng);
		cnt[x.type]++;
		bad += x.a >= c.users || x.part >= RW_PARTS || x.nshow < 1 ||
		       x.nshow > RW_MAX_SHOW || (x.type == RW_FOLLOW && x.b == x.a);
		zero += x.a == 0;
	}
	for (i = 0; i < RW_NTYPES; i++)
		CHECK(within_4sigma((double)cnt[i] / n, rw_default_mix[i] / 100.0, n),
		      "%s: %.4f of the mix, want %.2f", rw_type_names[i], (double)cnt[i] / n,
		      rw_default_mix[i] / 100.0);
	CHECK(!bad, "%llu draws out of range", (unsigned long long)bad);
	/* zipf 0.5 over 1000 users: user 0 gets 1/zeta(1000, 0.5), about 1.6% */
	CHECK(zero > n / 100 && zero < n / 40, "user 0 drawn %llu of %llu",
	      (unsigned long long)zero, (unsigned long long)n);
}

/* Replicas on servers 1 and 2. */
static unsigned int place_12(void *arg, uint8_t table, uint64_t key, unsigned int i)
{
	(void)arg;
	(void)table;
	(void)key;
	return i + 1;
}

/* Rows and dump records of up to XTX_VALUE_MAX bytes: kept whole, compared whole. */
static void test_long_values(void)
{
	static const uint16_t lens[] = { 1, 40, 41, 512, 1024 };
	static char line[64 + 2 * XTX_VALUE_MAX];
	struct wl_rows rows = {};
	struct wl_rec recs[4], r;
	uint8_t v[XTX_VALUE_MAX];
	unsigned long viol = 0;
	unsigned int i, bad = 0;
	struct wl_snap s;
	int n, devnull, saved;

	for (i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)(i * 5 + 3);
	for (i = 0; i < 5; i++)
		bad += !!wl_rows_add(&rows, 1, i, v, lens[i]);
	for (i = 0; i < rows.n; i++)
		bad += rows.r[i].vlen != lens[i] || memcmp(wl_row_value(&rows.r[i]), v, lens[i]) ||
		       !!rows.r[i].big != (lens[i] > XTX_VALUE_INLINE);
	CHECK(!bad && rows.n == 5, "rows of 1..1024 bytes kept whole, long ones apart");
	wl_rows_free(&rows);

	n = snprintf(line, sizeof(line), "table=3 key=9 version=4 vlen=1024 value=");
	for (i = 0; i < XTX_VALUE_MAX; i++)
		n += snprintf(line + n, sizeof(line) - n, "%02x", v[i]);
	snprintf(line + n, sizeof(line) - n, "\n");
	CHECK(!wl_parse_dump_line(line, &r) && r.vlen == XTX_VALUE_MAX && r.big &&
	      !memcmp(wl_rec_value(&r), v, XTX_VALUE_MAX), "a 1024-byte dump line");
	line[strlen(line) - 3] = '\n';
	line[strlen(line) - 2] = '\0';
	CHECK(wl_parse_dump_line(line, &recs[0]) == -1, "a dump line one byte short");

	/* replicas 1 and 2 of key 9 equal; of key 10, they differ in the value's last byte */
	for (i = 0; i < 4; i++) {
		recs[i] = r;
		recs[i].big = malloc(XTX_VALUE_MAX);
		memcpy(recs[i].big, v, XTX_VALUE_MAX);
		recs[i].server = (uint16_t)(1 + i % 2);
		recs[i].key = i < 2 ? 9 : 10;
	}
	wl_rec_release(&r);
	recs[3].big[XTX_VALUE_MAX - 1] ^= 1;
	fflush(stderr);
	saved = dup(2);
	devnull = open("/dev/null", O_WRONLY);
	if (saved >= 0 && devnull >= 0)
		dup2(devnull, 2);
	n = wl_snap_merge(recs, 4, 1u << 3, 2, place_12, NULL, &s, &viol);
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
	if (devnull >= 0)
		close(devnull);
	CHECK(!n && s.n == 2 && viol == 1 && wl_snap_find(&s, 3, 9) &&
	      !memcmp(wl_rec_value(wl_snap_find(&s, 3, 9)), v, XTX_VALUE_MAX),
	      "long replicas compared whole (%lu violations, want 1)", viol);
	wl_snap_free(&s);
}

int main(void)
{
	RUN_CASE(test_bcd);
	RUN_CASE(test_keys);
	RUN_CASE(test_tatp_values);
	RUN_CASE(test_population_spec);
	RUN_CASE(test_population_steady);
	RUN_CASE(test_nurand_skew);
	RUN_CASE(test_tatp_mix);
	RUN_CASE(test_sb_mix);
	RUN_CASE(test_client_draws);
	RUN_CASE(test_share_tolerance);
	RUN_CASE(test_sb_hotspot);
	RUN_CASE(test_sb_balances);
	RUN_CASE(test_dump_parse);
	RUN_CASE(test_snap_merge);
	RUN_CASE(test_load_rows);
	RUN_CASE(test_ycsb_records);
	RUN_CASE(test_ycsb_generators);
	RUN_CASE(test_rw_values);
	RUN_CASE(test_rw_graph);
	RUN_CASE(test_rw_mix);
	RUN_CASE(test_long_values);
	printf("# test_workloads: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
