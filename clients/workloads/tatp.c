// SPDX-License-Identifier: GPL-2.0-only
/* TATP rows, keys and inputs: encodings, the population and the NURand id generator. */
#include <string.h>
#include <xtx/hash.h>
#include "tatp.h"
#include "zipf.h"

const char *const tatp_type_names[TATP_NTYPES] = {
	"GSD", "GND", "GAD", "USD", "UL", "ICF", "DCF",
};

const unsigned int tatp_default_mix[TATP_NTYPES] = { 35, 10, 35, 2, 14, 2, 2 };

/*
 * §1.6: GSD and UL always succeed; an AI or SF row exists for 10 of 16
 * (subscriber, type) pairs; ICF and DCF also need the CF row absent or
 * present, each half the time; GND lies in [0.148, 0.220].
 */
const double tatp_expected_success[TATP_NTYPES] = {
	1.0, 0.184, 0.625, 0.625, 1.0, 0.3125, 0.3125,
};

/* ---- keys ---- */

uint64_t tatp_bcd(uint32_t s_id)
{
	uint64_t bcd = 0;
	unsigned int i;

	for (i = 0; s_id; i++, s_id /= 10)
		bcd |= (uint64_t)(s_id % 10) << (4 * i);
	return bcd;
}

int tatp_bcd_decode(uint64_t bcd, uint32_t *s_id)
{
	uint64_t v = 0, mul = 1;
	unsigned int i;

	for (i = 0; i < 16; i++, bcd >>= 4, mul *= 10) {
		unsigned int d = bcd & 15;

		if (d > 9)
			return -1;
		v += d * mul;
	}
	if (v > TATP_MAX_SUBSCRIBERS)
		return -1;
	*s_id = (uint32_t)v;
	return 0;
}

/* ---- values ---- */

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	put_u16(p, (uint16_t)v);
	put_u16(p + 2, (uint16_t)(v >> 16));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t)v);
	put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_u32(const uint8_t *p)
{
	return get_u16(p) | (uint32_t)get_u16(p + 2) << 16;
}

static uint64_t get_u64(const uint8_t *p)
{
	return get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static bool all_zero(const uint8_t *p, unsigned int n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

void tatp_sub_encode(const struct tatp_sub *v, uint8_t *out)
{
	uint16_t bits = 0;
	unsigned int i;

	memset(out, 0, TATP_SUB_VLEN);
	put_u64(out, tatp_bcd(v->s_id));
	for (i = 0; i < 5; i++)
		out[15 + i] = (uint8_t)((v->hex[2 * i] & 15) | (v->hex[2 * i + 1] & 15) << 4);
	for (i = 0; i < 10; i++) {
		out[20 + i] = v->byte2[i];
		bits |= (uint16_t)((v->bit[i] & 1) << i);
	}
	put_u16(out + TATP_SUB_OFF_BITS, bits);
	put_u32(out + 32, v->msc_location);
	put_u32(out + TATP_SUB_OFF_VLR, v->vlr_location);
}

int tatp_sub_decode(const uint8_t *in, uint8_t vlen, struct tatp_sub *v)
{
	uint16_t bits;
	unsigned int i;

	if (vlen != TATP_SUB_VLEN || !all_zero(in + 8, 7))
		return -1;
	if (tatp_bcd_decode(get_u64(in), &v->s_id))
		return -1;
	bits = get_u16(in + TATP_SUB_OFF_BITS);
	if (bits >> 10)
		return -1;
	for (i = 0; i < 5; i++) {
		v->hex[2 * i] = in[15 + i] & 15;
		v->hex[2 * i + 1] = in[15 + i] >> 4;
	}
	for (i = 0; i < 10; i++) {
		v->byte2[i] = in[20 + i];
		v->bit[i] = (bits >> i) & 1;
	}
	v->msc_location = get_u32(in + 32);
	v->vlr_location = get_u32(in + TATP_SUB_OFF_VLR);
	return 0;
}

void tatp_sec_encode(uint32_t s_id, uint8_t *out)
{
	memset(out, 0, TATP_SEC_VLEN);
	put_u32(out, s_id);
	out[4] = TATP_SEC_MAGIC;
}

int tatp_sec_decode(const uint8_t *in, uint8_t vlen, uint32_t *s_id)
{
	if (vlen != TATP_SEC_VLEN || in[4] != TATP_SEC_MAGIC || !all_zero(in + 5, 3))
		return -1;
	*s_id = get_u32(in);
	return *s_id > TATP_MAX_SUBSCRIBERS ? -1 : 0;
}

static bool upper(const char *s, unsigned int n)
{
	while (n--) {
		if (*s < 'A' || *s > 'Z')
			return false;
		s++;
	}
	return true;
}

void tatp_ai_encode(const struct tatp_ai *v, uint8_t *out)
{
	memset(out, 0, TATP_AI_VLEN);
	out[0] = v->data1;
	out[1] = v->data2;
	memcpy(out + 2, v->data3, 3);
	memcpy(out + 5, v->data4, 5);
}

int tatp_ai_decode(const uint8_t *in, uint8_t vlen, struct tatp_ai *v)
{
	if (vlen != TATP_AI_VLEN || !all_zero(in + 10, TATP_AI_VLEN - 10))
		return -1;
	v->data1 = in[0];
	v->data2 = in[1];
	memcpy(v->data3, in + 2, 3);
	memcpy(v->data4, in + 5, 5);
	return upper(v->data3, 3) && upper(v->data4, 5) ? 0 : -1;
}

void tatp_sf_encode(const struct tatp_sf *v, uint8_t *out)
{
	memset(out, 0, TATP_SF_VLEN);
	out[0] = v->is_active;
	out[1] = v->error_cntrl;
	out[TATP_SF_OFF_DATA_A] = v->data_a;
	memcpy(out + 3, v->data_b, 5);
}

int tatp_sf_decode(const uint8_t *in, uint8_t vlen, struct tatp_sf *v)
{
	if (vlen != TATP_SF_VLEN || in[0] > 1)
		return -1;
	v->is_active = in[0];
	v->error_cntrl = in[1];
	v->data_a = in[TATP_SF_OFF_DATA_A];
	memcpy(v->data_b, in + 3, 5);
	return upper(v->data_b, 5) ? 0 : -1;
}

void tatp_cf_encode(const struct tatp_cf *v, uint8_t *out)
{
	memset(out, 0, TATP_CF_VLEN);
	out[0] = v->end_time;
	memcpy(out + 1, v->numberx, 15);
}

int tatp_cf_decode(const uint8_t *in, uint8_t vlen, struct tatp_cf *v)
{
	unsigned int i;

	if (vlen != TATP_CF_VLEN || in[0] > 24)
		return -1;
	v->end_time = in[0];
	memcpy(v->numberx, in + 1, 15);
	for (i = 0; i < 15; i++)
		if (v->numberx[i] < '0' || v->numberx[i] > '9')
			return -1;
	return 0;
}

/* ---- population ---- */

/* Uniform in [lo, hi]. */
static unsigned int rand_in(uint64_t *rng, unsigned int lo, unsigned int hi)
{
	return lo + (unsigned int)xtx_rng_below(rng, (uint64_t)hi - lo + 1);
}

static void rand_letters(uint64_t *rng, char *s, unsigned int n)
{
	while (n--)
		*s++ = (char)('A' + rand_in(rng, 0, 25));
}

/* The 15 digits of v, zero-padded. */
static void digits15(uint64_t v, char *s)
{
	int i;

	for (i = 14; i >= 0; i--, v /= 10)
		s[i] = (char)('0' + v % 10);
}

/* k distinct types of 1..4 with k uniform in 1..4: a shuffled prefix. */
static unsigned int pick_types(uint64_t *rng, uint8_t *types)
{
	unsigned int k = rand_in(rng, 1, 4), i;

	for (i = 0; i < 4; i++)
		types[i] = (uint8_t)(i + 1);
	for (i = 0; i < k; i++) {
		unsigned int j = rand_in(rng, i, 3);
		uint8_t t = types[i];

		types[i] = types[j];
		types[j] = t;
	}
	return k;
}

static struct tatp_row *add_row(struct tatp_row *r, uint8_t table, uint64_t key, uint8_t vlen)
{
	/* padding too: rows are compared and hashed whole */
	memset(r, 0, sizeof(*r));
	r->table = table;
	r->key = key;
	r->vlen = vlen;
	return r;
}

static unsigned int cf_rows(const struct tatp_cfg *cfg, uint64_t *rng, uint32_t s,
			    uint8_t sf_type, struct tatp_row *rows)
{
	static const uint8_t starts[3] = { 0, 8, 16 };
	bool present[3] = { false, false, false };
	unsigned int n = 0, i;

	if (cfg->population == TATP_POP_STEADY) {
		for (i = 0; i < 3; i++)
			present[i] = xtx_rng_next(rng) >> 63;
	} else {
		unsigned int m = rand_in(rng, 0, 3);

		/* m distinct of the three: drop 3 - m at random */
		for (i = 0; i < 3; i++)
			present[i] = true;
		for (i = m; i < 3; i++) {
			unsigned int j;

			do
				j = rand_in(rng, 0, 2);
			while (!present[j]);
			present[j] = false;
		}
	}
	for (i = 0; i < 3; i++) {
		struct tatp_cf cf;

		if (!present[i])
			continue;
		if (cfg->population == TATP_POP_STEADY)
			cf.end_time = (uint8_t)rand_in(rng, 1, 24);
		else
			cf.end_time = (uint8_t)(starts[i] + rand_in(rng, 1, 8));
		digits15(xtx_rng_below(rng, 1000000000000000ull), cf.numberx);
		tatp_cf_encode(&cf, add_row(&rows[n++], TATP_CF,
					    tatp_cf_key(s, sf_type, starts[i]), TATP_CF_VLEN)->value);
	}
	return n;
}

unsigned int tatp_rows_of(const struct tatp_cfg *cfg, uint32_t s, struct tatp_row *rows)
{
	uint64_t rng = xtx_mix64(cfg->seed ^ xtx_mix64(s + 0x7a7aull)) | 1;
	struct tatp_sub sub = { .s_id = s };
	uint8_t types[4];
	unsigned int n = 0, i, k;

	for (i = 0; i < 10; i++) {
		sub.bit[i] = (uint8_t)rand_in(&rng, 0, 1);
		sub.hex[i] = (uint8_t)rand_in(&rng, 0, 15);
		sub.byte2[i] = (uint8_t)rand_in(&rng, 0, 255);
	}
	sub.msc_location = rand_in(&rng, 1, UINT32_MAX);
	sub.vlr_location = rand_in(&rng, 1, UINT32_MAX);
	tatp_sub_encode(&sub, add_row(&rows[n++], TATP_SUB, tatp_sub_key(s), TATP_SUB_VLEN)->value);
	tatp_sec_encode(s, add_row(&rows[n++], TATP_SEC, tatp_sec_key(s), TATP_SEC_VLEN)->value);

	k = pick_types(&rng, types);
	for (i = 0; i < k; i++) {
		struct tatp_ai ai = {
			.data1 = (uint8_t)rand_in(&rng, 0, 255),
			.data2 = (uint8_t)rand_in(&rng, 0, 255),
		};

		rand_letters(&rng, ai.data3, 3);
		rand_letters(&rng, ai.data4, 5);
		tatp_ai_encode(&ai, add_row(&rows[n++], TATP_AI, tatp_ai_key(s, types[i]),
					    TATP_AI_VLEN)->value);
	}
	k = pick_types(&rng, types);
	for (i = 0; i < k; i++) {
		struct tatp_sf sf = {
			.is_active = rand_in(&rng, 0, 99) < 85,
			.error_cntrl = (uint8_t)rand_in(&rng, 0, 255),
			.data_a = (uint8_t)rand_in(&rng, 0, 255),
		};

		rand_letters(&rng, sf.data_b, 5);
		tatp_sf_encode(&sf, add_row(&rows[n++], TATP_SF, tatp_sf_key(s, types[i]),
					    TATP_SF_VLEN)->value);
		n += cf_rows(cfg, &rng, s, types[i], rows + n);
	}
	return n;
}

/* ---- generators ---- */

uint32_t tatp_nurand_a(uint32_t p)
{
	if (p <= 1000000)
		return 65535;
	if (p <= 10000000)
		return 1048575;
	return 2097151;
}

/* NURand(A, 0, P-1) = (rand(0, A) | rand(0, P-1)) mod P; A = 2^k - 1, so AND draws rand(0, A). */
uint32_t tatp_subscriber(const struct tatp_cfg *cfg, uint64_t *rng)
{
	uint32_t p = cfg->subscribers;
	uint64_t r;

	if (cfg->uniform)
		return (uint32_t)xtx_rng_below(rng, p);
	r = xtx_rng_next(rng);
	return (uint32_t)((((uint32_t)r & tatp_nurand_a(p)) |
			   (uint32_t)xtx_rng_below(rng, p)) % p);
}

enum tatp_type tatp_pick_type(const struct tatp_cfg *cfg, uint64_t *rng)
{
	unsigned int sum = 0, i, r;

	for (i = 0; i < TATP_NTYPES; i++)
		sum += cfg->mix[i];
	r = (unsigned int)xtx_rng_below(rng, sum);
	for (i = 0; i < TATP_NTYPES - 1; i++) {
		if (r < cfg->mix[i])
			break;
		r -= cfg->mix[i];
	}
	return (enum tatp_type)i;
}

void tatp_draw_input(const struct tatp_cfg *cfg, enum tatp_type type, uint32_t vlr_tag,
		     uint64_t *rng, struct tatp_input *in)
{
	memset(in, 0, sizeof(*in));
	in->type = type;
	in->s_id = tatp_subscriber(cfg, rng);
	in->ai_type = (uint8_t)rand_in(rng, 1, 4);
	in->sf_type = (uint8_t)rand_in(rng, 1, 4);
	in->start_time = (uint8_t)(8 * rand_in(rng, 0, 2));
	in->end_time = (uint8_t)(cfg->end_0_23 ? rand_in(rng, 0, 23) : rand_in(rng, 1, 24));
	in->bit = (uint8_t)rand_in(rng, 0, 1);
	in->data_a = (uint8_t)rand_in(rng, 0, 255);
	in->vlr = vlr_tag;
	if (type == TATP_ICF)
		digits15(tatp_subscriber(cfg, rng), in->numberx);
}
