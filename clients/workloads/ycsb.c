// SPDX-License-Identifier: GPL-2.0-only
/* YCSB's records and generators: layout, checksum, field contents, mixes and key choice. */
#include <stdio.h>
#include <string.h>
#include <xtx/hash.h>
#include "ycsb.h"
#include "wlbytes.h"

const char *const ycsb_type_names[YCSB_NTYPES] = { "READ", "UPDATE", "RMW" };

int ycsb_workload_mix(char workload, unsigned int *write_pct, enum ycsb_op *write_op)
{
	switch (workload) {
	case 'a':
		*write_pct = 50;
		*write_op = YCSB_UPDATE;
		return 0;
	case 'b':
		*write_pct = 5;
		*write_op = YCSB_UPDATE;
		return 0;
	case 'c':
		*write_pct = 0;
		*write_op = YCSB_UPDATE;
		return 0;
	case 'f':
		*write_pct = 50;
		*write_op = YCSB_RMW;
		return 0;
	}
	return -1;
}

int ycsb_cfg_init(struct ycsb_cfg *cfg)
{
	unsigned int pct;
	enum ycsb_op op;

	if (ycsb_workload_mix(cfg->workload, &pct, &op)) {
		fprintf(stderr, "Error: --workload: '%c' is not a, b, c or f\n", cfg->workload);
		return -1;
	}
	if (!cfg->fields || cfg->fields > YCSB_MAX_FIELDS || cfg->field_size < YCSB_STAMP ||
	    ycsb_record_len(cfg) > XTX_VALUE_MAX) {
		fprintf(stderr, "Error: records of %u fields of %u bytes: want 1..%u fields of at "
			"least %u bytes (the stamp), %u bytes in all with the %u-byte header\n",
			cfg->fields, cfg->field_size, YCSB_MAX_FIELDS, YCSB_STAMP, XTX_VALUE_MAX,
			YCSB_HDR);
		return -1;
	}
	if (cfg->ops_per_txn < 1 || cfg->ops_per_txn > YCSB_MAX_OPS ||
	    cfg->ops_per_txn > cfg->records) {
		fprintf(stderr, "Error: --ops-per-txn %u: want 1..%u, and no more than the %llu "
			"records (a transaction's keys differ)\n", cfg->ops_per_txn, YCSB_MAX_OPS,
			(unsigned long long)cfg->records);
		return -1;
	}
	if (cfg->theta > 0 && xtx_zipf_init(&cfg->zipf, cfg->records, cfg->theta)) {
		fprintf(stderr, "Error: zipf theta %g over %llu records\n", cfg->theta,
			(unsigned long long)cfg->records);
		return -1;
	}
	return 0;
}

uint64_t ycsb_pick_key(const struct ycsb_cfg *cfg, uint64_t *rng)
{
	/*
	 * Rank r is record r: hot records are not scrambled over the key space
	 * as YCSB's ScrambledZipfian does, because placement hashes every key
	 * anyway (xtx_shard_of), which is what the scrambling is for.
	 */
	if (cfg->theta > 0)
		return xtx_zipf_next(&cfg->zipf, rng);
	return xtx_rng_below(rng, cfg->records);
}

enum ycsb_op ycsb_pick_op(const struct ycsb_cfg *cfg, uint64_t *rng)
{
	unsigned int pct = 0;
	enum ycsb_op wop = YCSB_UPDATE;

	ycsb_workload_mix(cfg->workload, &pct, &wop);
	return xtx_rng_below(rng, 100) < pct ? wop : YCSB_READ;
}

void ycsb_fill(const struct ycsb_cfg *cfg, uint64_t key, unsigned int field, uint64_t stamp,
	       uint8_t *out, unsigned int len)
{
	uint64_t s = xtx_mix64(cfg->seed ^ xtx_mix64(key ^ xtx_mix64(stamp + field)));
	unsigned int i;

	for (i = 0; i < len; i++) {
		if (!(i & 7))
			s = xtx_mix64(s + i);
		/* printable, as YCSB's fields are */
		out[i] = (uint8_t)(' ' + (s >> (8 * (i & 7))) % 95);
	}
}

static uint32_t checksum(const uint8_t *rec, unsigned int len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	unsigned int i;

	/* FNV-1a over all but the checksum's own bytes */
	for (i = 0; i < len; i++) {
		if (i >= 12 && i < YCSB_HDR)
			continue;
		h = (h ^ rec[i]) * 0x100000001b3ull;
	}
	return (uint32_t)(h ^ h >> 32);
}

static uint8_t *field_at(const struct ycsb_cfg *cfg, uint8_t *rec, unsigned int f)
{
	return rec + YCSB_HDR + f * cfg->field_size;
}

void ycsb_record_init(const struct ycsb_cfg *cfg, uint64_t key, uint8_t *rec)
{
	unsigned int f;

	wl_put_le(rec, key, 8);
	wl_put_le(rec + 8, 0, 4);
	for (f = 0; f < cfg->fields; f++) {
		uint8_t *p = field_at(cfg, rec, f);

		wl_put_le(p, 0, YCSB_STAMP);
		ycsb_fill(cfg, key, f, 0, p + YCSB_STAMP, cfg->field_size - YCSB_STAMP);
	}
	wl_put_le(rec + 12, checksum(rec, ycsb_record_len(cfg)), 4);
}

void ycsb_record_write(const struct ycsb_cfg *cfg, uint8_t *rec, unsigned int f, uint64_t stamp,
		       bool bump)
{
	uint8_t *p = field_at(cfg, rec, f);

	if (bump)
		wl_put_le(rec + 8, (uint32_t)(wl_get_le(rec + 8, 4) + 1), 4);
	wl_put_le(p, stamp, YCSB_STAMP);
	ycsb_fill(cfg, wl_get_le(rec, 8), f, stamp, p + YCSB_STAMP, cfg->field_size - YCSB_STAMP);
	wl_put_le(rec + 12, checksum(rec, ycsb_record_len(cfg)), 4);
}

const char *ycsb_record_check(const struct ycsb_cfg *cfg, uint64_t key, const uint8_t *rec,
			      uint16_t vlen)
{
	uint8_t want[XTX_VALUE_MAX];
	unsigned int f, n = cfg->field_size - YCSB_STAMP;

	if (vlen != ycsb_record_len(cfg))
		return "not a record's length";
	if (wl_get_le(rec, 8) != key)
		return "carries another key";
	if (wl_get_le(rec + 12, 4) != checksum(rec, vlen))
		return "checksum does not match";
	for (f = 0; f < cfg->fields; f++) {
		const uint8_t *p = rec + YCSB_HDR + f * cfg->field_size;

		ycsb_fill(cfg, key, f, wl_get_le(p, YCSB_STAMP), want, n);
		if (memcmp(p + YCSB_STAMP, want, n))
			return "a field's bytes are not its stamp's";
	}
	return NULL;
}

uint32_t ycsb_record_counter(const uint8_t *rec)
{
	return (uint32_t)wl_get_le(rec + 8, 4);
}

uint64_t ycsb_field_stamp(const struct ycsb_cfg *cfg, const uint8_t *rec, unsigned int f)
{
	return wl_get_le(rec + YCSB_HDR + f * cfg->field_size, YCSB_STAMP);
}
