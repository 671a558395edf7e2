/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * YCSB's core workloads A, B, C and F as key-value transactions: one table
 * of records keyed by their 8-byte record number, each record a header and
 * F fields of S bytes (YCSB's 10 x 100 B by default), the read/update/
 * read-modify-write mixes, zipfian (theta 0.99) or uniform key choice, and
 * K requests per transaction (5, as HADES and RCBench run it; 1: single ops).
 *
 * Every record says what it is, so --verify can tell a torn, misplaced or
 * made-up one: it carries its key, a counter only read-modify-writes move,
 * and a checksum; each field starts with the stamp of the write that
 * produced it, the rest of the field derived from (key, field, stamp).
 */
#ifndef XTX_YCSB_H
#define XTX_YCSB_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/proto.h>
#include "zipf.h"

/* Table id on the wire, apart from TATP's 1..5, SmallBank's 8, 9 and Retwis's. */
#define YCSB_TABLE		10

/*
 * Record layout (little-endian):
 *   [0, 8)   key (the record number)
 *   [8, 12)  counter: +1 per committed read-modify-write
 *   [12, 16) checksum over the key, the counter and every field
 *   [16, ..) fields, each: [0, 8) stamp (0: the load's), then bytes of
 *            ycsb_fill(key, field, stamp)
 */
#define YCSB_HDR		16
#define YCSB_STAMP		8
#define YCSB_FIELDS_DEFAULT	10
#define YCSB_FIELD_SIZE_DEFAULT	100
#define YCSB_MAX_FIELDS		64
/* The most requests one transaction makes (libxtx allows 32 keys). */
#define YCSB_MAX_OPS		16

enum ycsb_op {
	YCSB_READ,
	YCSB_UPDATE,		/* one field replaced, the rest kept */
	YCSB_RMW,		/* read, counter + 1 and one field replaced, written back */
	YCSB_NOPS,
};

/* The transaction types the engine counts: by the strongest request in them. */
enum ycsb_type {
	YCSB_T_READ,		/* reads only */
	YCSB_T_UPDATE,		/* updates, no read-modify-write */
	YCSB_T_RMW,		/* at least one read-modify-write */
	YCSB_NTYPES,
};

extern const char *const ycsb_type_names[YCSB_NTYPES];

struct ycsb_cfg {
	uint64_t records;
	unsigned int fields, field_size;
	unsigned int ops_per_txn;
	char workload;			/* 'a', 'b', 'c' or 'f' */
	double theta;			/* 0: uniform */
	struct xtx_zipf zipf;		/* when theta > 0 */
	uint64_t seed;			/* of the loaded fields */
};

/* The share of requests that write: A 50 % updates, B 5 %, C none, F 50 % read-modify-writes. */
int ycsb_workload_mix(char workload, unsigned int *write_pct, enum ycsb_op *write_op);

/* Bytes of a record. */
static inline unsigned int ycsb_record_len(const struct ycsb_cfg *cfg)
{
	return YCSB_HDR + cfg->fields * cfg->field_size;
}

/* Checks cfg (fields and sizes, records); fills the zipf table.  0 or -1 after printing why. */
int ycsb_cfg_init(struct ycsb_cfg *cfg);

/* A record number, by the configured distribution. */
uint64_t ycsb_pick_key(const struct ycsb_cfg *cfg, uint64_t *rng);

/* What request a draw makes, by the workload's mix. */
enum ycsb_op ycsb_pick_op(const struct ycsb_cfg *cfg, uint64_t *rng);

/* The bytes after a field's stamp: a function of (seed, key, field, stamp). */
void ycsb_fill(const struct ycsb_cfg *cfg, uint64_t key, unsigned int field, uint64_t stamp,
	       uint8_t *out, unsigned int len);

/* The loaded record of key: counter 0, every field stamped 0. */
void ycsb_record_init(const struct ycsb_cfg *cfg, uint64_t key, uint8_t *rec);

/* Field f := the bytes of stamp; with bump, counter + 1; the checksum made anew. */
void ycsb_record_write(const struct ycsb_cfg *cfg, uint8_t *rec, unsigned int f, uint64_t stamp,
		       bool bump);

/*
 * Whether rec (vlen bytes) is a well-formed record of key: its length, key,
 * checksum, and every field's bytes those its stamp gives.  NULL, or what
 * is wrong.
 */
const char *ycsb_record_check(const struct ycsb_cfg *cfg, uint64_t key, const uint8_t *rec,
			      uint16_t vlen);

uint32_t ycsb_record_counter(const uint8_t *rec);
uint64_t ycsb_field_stamp(const struct ycsb_cfg *cfg, const uint8_t *rec, unsigned int f);

#endif /* XTX_YCSB_H */
