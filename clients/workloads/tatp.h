/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * TATP as key-value rows (workloads.md Part 1): tables, 8-byte keys, value
 * layouts, the population, NURand subscriber ids, the mix and the inputs of
 * the seven transactions.  Subscriber ids are 0-based (0..P-1).
 */
#ifndef XTX_TATP_H
#define XTX_TATP_H

#include <stdbool.h>
#include <stdint.h>

/* Table ids on the wire; SmallBank's differ, so both can share servers. */
enum tatp_table {
	TATP_SUB = 1,		/* SUBSCRIBER, key s_id */
	TATP_SEC = 2,		/* SECONDARY_SUBSCRIBER, key BCD(s_id): the sub_nbr index */
	TATP_AI = 3,		/* ACCESS_INFO, key s_id | ai_type << 32 */
	TATP_SF = 4,		/* SPECIAL_FACILITY, key s_id | sf_type << 32 */
	TATP_CF = 5,		/* CALL_FORWARDING, key s_id | sf_type << 32 | start << 40 */
};

/* Value sizes: FaSST's, every one a multiple of 8 with zeroed padding. */
#define TATP_SUB_VLEN		40
#define TATP_SEC_VLEN		8
#define TATP_AI_VLEN		16
#define TATP_SF_VLEN		8
#define TATP_CF_VLEN		16

/* Marks SECONDARY_SUBSCRIBER values, so a stray row decodes as garbage. */
#define TATP_SEC_MAGIC		0x53

/* sub_nbr as BCD fits 16 digits; FaSST's bound keeps ids below 10^9. */
#define TATP_MAX_SUBSCRIBERS	999999999u

/* Rows one subscriber has at most: SUB, SEC, 4 AI, 4 SF, 3 CF per SF. */
#define TATP_MAX_ROWS_PER_SUB	22

enum tatp_type {
	TATP_GSD,		/* GET_SUBSCRIBER_DATA */
	TATP_GND,		/* GET_NEW_DESTINATION */
	TATP_GAD,		/* GET_ACCESS_DATA */
	TATP_USD,		/* UPDATE_SUBSCRIBER_DATA */
	TATP_UL,		/* UPDATE_LOCATION */
	TATP_ICF,		/* INSERT_CALL_FORWARDING */
	TATP_DCF,		/* DELETE_CALL_FORWARDING */
	TATP_NTYPES,
};

extern const char *const tatp_type_names[TATP_NTYPES];
/* The spec mix in percent: 35/10/35/2/14/2/2. */
extern const unsigned int tatp_default_mix[TATP_NTYPES];

/* Which CALL_FORWARDING rows the population holds (§1.2). */
enum tatp_population {
	TATP_POP_SPEC,		/* m of {0,8,16} per SF row, end = start + U[1,8] */
	TATP_POP_STEADY,	/* FaSST: each start time by a coin, end = U[1,24] */
};

struct tatp_cfg {
	uint32_t subscribers;		/* P */
	bool uniform;			/* subscriber ids uniform instead of NURand */
	enum tatp_population population;
	bool end_0_23;			/* end_time inputs in [0,23] (FaSST/DINT) not [1,24] */
	unsigned int mix[TATP_NTYPES];	/* relative weights */
	uint64_t seed;			/* of the population */
};

/* ---- keys ---- */

/* s_id's decimal digits one per nibble, least significant digit lowest. */
uint64_t tatp_bcd(uint32_t s_id);
/* The inverse; -1 if a nibble is not a decimal digit or the number is too large. */
int tatp_bcd_decode(uint64_t bcd, uint32_t *s_id);

static inline uint64_t tatp_sub_key(uint32_t s)
{
	return s;
}

static inline uint64_t tatp_sec_key(uint32_t s)
{
	return tatp_bcd(s);
}

static inline uint64_t tatp_ai_key(uint32_t s, uint8_t ai_type)
{
	return s | (uint64_t)ai_type << 32;
}

static inline uint64_t tatp_sf_key(uint32_t s, uint8_t sf_type)
{
	return s | (uint64_t)sf_type << 32;
}

static inline uint64_t tatp_cf_key(uint32_t s, uint8_t sf_type, uint8_t start_time)
{
	return s | (uint64_t)sf_type << 32 | (uint64_t)start_time << 40;
}

static inline uint32_t tatp_key_sid(uint64_t key)
{
	return (uint32_t)key;
}

static inline uint8_t tatp_key_type(uint64_t key)
{
	return (uint8_t)(key >> 32);
}

static inline uint8_t tatp_key_start(uint64_t key)
{
	return (uint8_t)(key >> 40);
}

/* ---- values ---- */

struct tatp_sub {
	uint32_t s_id;			/* sub_nbr is BCD(s_id) */
	uint8_t bit[10];		/* 0..1 */
	uint8_t hex[10];		/* 0..15 */
	uint8_t byte2[10];
	uint32_t msc_location;
	uint32_t vlr_location;
};

struct tatp_ai {
	uint8_t data1, data2;
	char data3[3], data4[5];
};

struct tatp_sf {
	uint8_t is_active, error_cntrl, data_a;
	char data_b[5];
};

struct tatp_cf {
	uint8_t end_time;
	char numberx[15];		/* decimal digits */
};

/* Each encoder fills exactly its table's VLEN bytes; decoders check length and form. */
void tatp_sub_encode(const struct tatp_sub *v, uint8_t *out);
int tatp_sub_decode(const uint8_t *in, uint8_t vlen, struct tatp_sub *v);
void tatp_sec_encode(uint32_t s_id, uint8_t *out);
int tatp_sec_decode(const uint8_t *in, uint8_t vlen, uint32_t *s_id);
void tatp_ai_encode(const struct tatp_ai *v, uint8_t *out);
int tatp_ai_decode(const uint8_t *in, uint8_t vlen, struct tatp_ai *v);
void tatp_sf_encode(const struct tatp_sf *v, uint8_t *out);
int tatp_sf_decode(const uint8_t *in, uint8_t vlen, struct tatp_sf *v);
void tatp_cf_encode(const struct tatp_cf *v, uint8_t *out);
int tatp_cf_decode(const uint8_t *in, uint8_t vlen, struct tatp_cf *v);

/* Byte offsets the transactions patch in place. */
#define TATP_SUB_OFF_BITS	30	/* little-endian u16, bit_i at bit i-1 */
#define TATP_SUB_OFF_VLR	36	/* little-endian u32 */
#define TATP_SF_OFF_DATA_A	2

/* ---- population ---- */

struct tatp_row {
	uint8_t table;
	uint8_t vlen;
	uint64_t key;
	uint8_t value[40];
};

/*
 * The rows of subscriber s (SUB, SEC, then AI, SF and CF), a function of
 * (cfg->seed, s) alone, so any part of the population can be made or
 * remade independently.  Returns how many (at most TATP_MAX_ROWS_PER_SUB).
 */
unsigned int tatp_rows_of(const struct tatp_cfg *cfg, uint32_t s, struct tatp_row *rows);

/* ---- generators ---- */

/* NURand's A for a subscriber range of P ids (§1.3). */
uint32_t tatp_nurand_a(uint32_t p);
/* A subscriber id in [0, P): NURand, or uniform with cfg->uniform. */
uint32_t tatp_subscriber(const struct tatp_cfg *cfg, uint64_t *rng);
/* A transaction type by cfg->mix. */
enum tatp_type tatp_pick_type(const struct tatp_cfg *cfg, uint64_t *rng);

/* One transaction's inputs (§1.4). */
struct tatp_input {
	enum tatp_type type;
	uint32_t s_id;
	uint8_t ai_type;		/* 1..4 */
	uint8_t sf_type;		/* 1..4 */
	uint8_t start_time;		/* 0, 8 or 16 */
	uint8_t end_time;		/* 1..24, or 0..23 */
	uint8_t bit;			/* USD: the new bit_1 */
	uint8_t data_a;			/* USD: the new SF data_a */
	uint32_t vlr;			/* UL: the new vlr_location */
	char numberx[15];		/* ICF */
};

/*
 * Draws the inputs of a transaction of the given type.  UL's vlr comes
 * from the caller (vlr_tag) so every attempt can write a unique value.
 */
void tatp_draw_input(const struct tatp_cfg *cfg, enum tatp_type type, uint32_t vlr_tag,
		     uint64_t *rng, struct tatp_input *in);

/*
 * Logical success probability of each type without concurrency (§1.6),
 * for the --verify statistics; GND's is the middle of its range.
 */
extern const double tatp_expected_success[TATP_NTYPES];

#endif /* XTX_TATP_H */
