// SPDX-License-Identifier: GPL-2.0-only
/*
 * YCSB over libxtx.  The store writes whole values, so an update of one
 * field (YCSB's default, writeallfields=false) is a read of the record with
 * its lock (XTX_GET_FOR_UPDATE: OCC's fused read-and-lock, 2PL's exclusive
 * lock) and the whole record written back with that field replaced and
 * the others as read; a read-modify-write does the same and also adds one
 * to the record's counter.  Reads read the whole record (readallfields).
 * Every request's record is read in round 0 and checked in round 1.
 */
#include <string.h>
#include "ycsb_txn.h"

void ycsb_txn_draw(struct ycsb_txn *x, const struct ycsb_cfg *cfg, uint64_t *rng,
		   uint64_t stamp_base)
{
	unsigned int i, j;

	memset(x, 0, sizeof(*x));
	x->cfg = cfg;
	x->n = cfg->ops_per_txn;
	for (i = 0; i < x->n; i++) {
		struct ycsb_req *r = &x->req[i];
		bool dup;

		/* distinct keys: a skewed draw repeats hot ones, so draw again */
		do {
			r->key = ycsb_pick_key(cfg, rng);
			for (dup = false, j = 0; j < i && !dup; j++)
				dup = x->req[j].key == r->key;
		} while (dup);
		r->op = (uint8_t)ycsb_pick_op(cfg, rng);
		r->field = (uint8_t)xtx_rng_below(rng, cfg->fields);
		r->stamp = stamp_base + i;
		r->h = -1;
	}
}

void ycsb_txn_rearm(struct ycsb_txn *x)
{
	unsigned int i;

	x->broken = false;
	x->why = NULL;
	for (i = 0; i < x->n; i++)
		x->req[i].h = -1;
}

enum ycsb_type ycsb_txn_type(const struct ycsb_txn *x)
{
	enum ycsb_type t = YCSB_T_READ;
	unsigned int i;

	for (i = 0; i < x->n; i++) {
		if (x->req[i].op == YCSB_RMW)
			return YCSB_T_RMW;
		if (x->req[i].op == YCSB_UPDATE)
			t = YCSB_T_UPDATE;
	}
	return t;
}

static enum xtx_step broken(struct ycsb_txn *x, uint64_t key, const char *why)
{
	x->broken = true;
	x->bad_key = key;
	x->why = why;
	return XTX_STEP_ABORT;
}

enum xtx_step ycsb_step(struct xtx_txn *t, void *arg)
{
	struct ycsb_txn *x = arg;
	const struct ycsb_cfg *cfg = x->cfg;
	uint8_t rec[XTX_VALUE_MAX];
	unsigned int i;

	if (xtx_txn_round(t) == 0) {
		for (i = 0; i < x->n; i++) {
			struct ycsb_req *r = &x->req[i];

			r->h = xtx_get(t, YCSB_TABLE, r->key,
				       r->op == YCSB_READ ? 0 : XTX_GET_FOR_UPDATE);
			if (r->h < 0)
				return broken(x, r->key, "the read could not be queued");
		}
		return XTX_STEP_READ;
	}
	for (i = 0; i < x->n; i++) {
		struct ycsb_req *r = &x->req[i];
		const char *why;
		const void *v;
		uint16_t vlen;

		if (xtx_value(t, r->h, &v, &vlen))
			return broken(x, r->key, "missing");
		why = ycsb_record_check(cfg, r->key, v, vlen);
		if (why)
			return broken(x, r->key, why);
		if (r->op == YCSB_READ)
			continue;
		memcpy(rec, v, vlen);
		ycsb_record_write(cfg, rec, r->field, r->stamp, r->op == YCSB_RMW);
		if (xtx_put(t, YCSB_TABLE, r->key, rec, vlen))
			return broken(x, r->key, "the write was refused by libxtx");
	}
	return XTX_STEP_COMMIT;
}
