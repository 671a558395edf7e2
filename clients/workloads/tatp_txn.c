// SPDX-License-Identifier: GPL-2.0-only
/*
 * TATP's transactions over libxtx.  Reads that only decide go in the read
 * set (validated under OCC, shared-locked under 2PL); rows that are
 * written are read for update, so their lock comes with the read.
 */
#include <errno.h>
#include <string.h>
#include "tatp_txn.h"

void tatp_txn_arm(struct tatp_txn *txn, const struct tatp_input *in)
{
	memset(txn, 0, sizeof(*txn));
	txn->in = *in;
}

static enum xtx_step logical_fail(struct tatp_txn *x)
{
	x->logical = true;
	return XTX_STEP_ABORT;
}

static enum xtx_step broken(struct tatp_txn *x)
{
	x->broken = true;
	return XTX_STEP_ABORT;
}

/* Queues a read; a refused one (never, with at most 4 keys) is broken data. */
static bool get(struct xtx_txn *t, struct tatp_txn *x, unsigned int i, uint8_t table,
		uint64_t key, unsigned int flags)
{
	x->h[i] = xtx_get(t, table, key, flags);
	return x->h[i] >= 0;
}

/* 0 with the value, -ENOENT if the row is absent, else -EINVAL. */
static int value(struct xtx_txn *t, const struct tatp_txn *x, unsigned int i,
		 const uint8_t **v, uint16_t *vlen)
{
	return xtx_value(t, x->h[i], (const void **)v, vlen);
}

/* Round 1 of UL, ICF and DCF: the subscriber behind sub_nbr, from SECONDARY_SUBSCRIBER. */
static bool resolve_sub_nbr(struct xtx_txn *t, struct tatp_txn *x)
{
	const uint8_t *v;
	uint16_t vlen;

	if (value(t, x, 0, &v, &vlen) || tatp_sec_decode(v, vlen, &x->s_id) ||
	    x->s_id != x->in.s_id)
		return false;
	return true;
}

static enum xtx_step gsd(struct xtx_txn *t, struct tatp_txn *x, unsigned int round)
{
	struct tatp_sub sub;
	const uint8_t *v;
	uint16_t vlen;

	if (round == 0)
		return get(t, x, 0, TATP_SUB, tatp_sub_key(x->in.s_id), 0) ? XTX_STEP_READ :
									     broken(x);
	if (value(t, x, 0, &v, &vlen) || tatp_sub_decode(v, vlen, &sub) ||
	    sub.s_id != x->in.s_id)
		return broken(x);
	return XTX_STEP_COMMIT;
}

static enum xtx_step gnd(struct xtx_txn *t, struct tatp_txn *x, unsigned int round)
{
	const struct tatp_input *in = &x->in;
	struct tatp_sf sf;
	const uint8_t *v;
	uint16_t vlen;
	unsigned int i;
	bool match = false;

	if (round == 0) {
		/* SF and the CF rows that can start early enough, in one round */
		if (!get(t, x, 0, TATP_SF, tatp_sf_key(in->s_id, in->sf_type), 0))
			return broken(x);
		for (i = 0; i * 8 <= in->start_time; i++)
			if (!get(t, x, 1 + i, TATP_CF,
				 tatp_cf_key(in->s_id, in->sf_type, (uint8_t)(8 * i)), 0))
				return broken(x);
		return XTX_STEP_READ;
	}
	switch (value(t, x, 0, &v, &vlen)) {
	case 0:
		break;
	case -ENOENT:
		return logical_fail(x);
	default:
		return broken(x);
	}
	if (tatp_sf_decode(v, vlen, &sf))
		return broken(x);
	if (!sf.is_active)
		return logical_fail(x);
	for (i = 0; i * 8 <= in->start_time; i++) {
		struct tatp_cf cf;
		int err = value(t, x, 1 + i, &v, &vlen);

		if (err == -ENOENT)
			continue;
		if (err || tatp_cf_decode(v, vlen, &cf))
			return broken(x);
		/* cf.start_time <= start_time by the keys read; end_time < cf.end_time */
		if (in->end_time < cf.end_time)
			match = true;
	}
	return match ? XTX_STEP_COMMIT : logical_fail(x);
}

static enum xtx_step gad(struct xtx_txn *t, struct tatp_txn *x, unsigned int round)
{
	struct tatp_ai ai;
	const uint8_t *v;
	uint16_t vlen;

	if (round == 0)
		return get(t, x, 0, TATP_AI, tatp_ai_key(x->in.s_id, x->in.ai_type), 0) ?
			XTX_STEP_READ : broken(x);
	switch (value(t, x, 0, &v, &vlen)) {
	case 0:
		return tatp_ai_decode(v, vlen, &ai) ? broken(x) : XTX_STEP_COMMIT;
	case -ENOENT:
		return logical_fail(x);
	default:
		return broken(x);
	}
}

static enum xtx_step usd(struct xtx_txn *t, struct tatp_txn *x, unsigned int round)
{
	const struct tatp_input *in = &x->in;
	uint64_t sub_key = tatp_sub_key(in->s_id), sf_key = tatp_sf_key(in->s_id, in->sf_type);
	uint8_t sub[TATP_SUB_VLEN], sf[TATP_SF_VLEN];
	uint16_t vlen;
	struct tatp_sub sv;
	struct tatp_sf sfv;
	const uint8_t *v;
	int err;

	if (round == 0) {
		if (!get(t, x, 0, TATP_SUB, sub_key, XTX_GET_FOR_UPDATE) ||
		    !get(t, x, 1, TATP_SF, sf_key, XTX_GET_FOR_UPDATE))
			return broken(x);
		return XTX_STEP_READ;
	}
	if (value(t, x, 0, &v, &vlen) || tatp_sub_decode(v, vlen, &sv))
		return broken(x);
	memcpy(sub, v, sizeof(sub));
	err = value(t, x, 1, &v, &vlen);
	if (err == -ENOENT)
		return logical_fail(x);
	if (err || tatp_sf_decode(v, vlen, &sfv))
		return broken(x);
	memcpy(sf, v, sizeof(sf));
	/* bit_1 is bit 0 of the little-endian bits field */
	sub[TATP_SUB_OFF_BITS] = (uint8_t)((sub[TATP_SUB_OFF_BITS] & ~1u) | (in->bit & 1));
	sf[TATP_SF_OFF_DATA_A] = in->data_a;
	if (xtx_put(t, TATP_SUB, sub_key, sub, sizeof(sub)) ||
	    xtx_put(t, TATP_SF, sf_key, sf, sizeof(sf)))
		return broken(x);
	return XTX_STEP_COMMIT;
}

static enum xtx_step ul(struct xtx_txn *t, struct tatp_txn *x, unsigned int round)
{
	uint8_t sub[TATP_SUB_VLEN];
	uint16_t vlen;
	struct tatp_sub sv;
	const uint8_t *v;
	unsigned int i;

	switch (round) {
	case 0:
		return get(t, x, 0, TATP_SEC, tatp_sec_key(x->in.s_id), 0) ? XTX_STEP_READ :
									       broken(x);
	case 1:
		if (!resolve_sub_nbr(t, x) ||
		    !get(t, x, 1, TATP_SUB, tatp_sub_key(x->s_id), XTX_GET_FOR_UPDATE))
			return broken(x);
		return XTX_STEP_READ;
	}
	if (value(t, x, 1, &v, &vlen) || tatp_sub_decode(v, vlen, &sv))
		return broken(x);
	memcpy(sub, v, sizeof(sub));
	for (i = 0; i < 4; i++)
		sub[TATP_SUB_OFF_VLR + i] = (uint8_t)(x->in.vlr >> (8 * i));
	if (xtx_put(t, TATP_SUB, tatp_sub_key(x->s_id), sub, sizeof(sub)))
		return broken(x);
	return XTX_STEP_COMMIT;
}

static enum xtx_step icf(struct xtx_txn *t, struct tatp_txn *x, unsigned int round)
{
	const struct tatp_input *in = &x->in;
	struct tatp_cf cf = { .end_time = in->end_time };
	uint8_t row[TATP_CF_VLEN];
	uint16_t vlen;
	struct tatp_sf sf;
	const uint8_t *v;
	int err;

	switch (round) {
	case 0:
		return get(t, x, 0, TATP_SEC, tatp_sec_key(in->s_id), 0) ? XTX_STEP_READ :
									    broken(x);
	case 1:
		/* the insert is legal only if this SF row exists (a foreign key) */
		if (!resolve_sub_nbr(t, x) ||
		    !get(t, x, 1, TATP_SF, tatp_sf_key(x->s_id, in->sf_type), 0))
			return broken(x);
		return XTX_STEP_READ;
	}
	err = value(t, x, 1, &v, &vlen);
	if (err == -ENOENT)
		return logical_fail(x);
	if (err || tatp_sf_decode(v, vlen, &sf))
		return broken(x);
	memcpy(cf.numberx, in->numberx, sizeof(cf.numberx));
	tatp_cf_encode(&cf, row);
	/* an existing row aborts it with XTX_CAUSE_EXISTS: the accepted duplicate-key error */
	if (xtx_insert(t, TATP_CF, tatp_cf_key(x->s_id, in->sf_type, in->start_time), row,
		       sizeof(row)))
		return broken(x);
	return XTX_STEP_COMMIT;
}

static enum xtx_step dcf(struct xtx_txn *t, struct tatp_txn *x, unsigned int round)
{
	const struct tatp_input *in = &x->in;

	if (round == 0)
		return get(t, x, 0, TATP_SEC, tatp_sec_key(in->s_id), 0) ? XTX_STEP_READ :
									    broken(x);
	if (!resolve_sub_nbr(t, x))
		return broken(x);
	/* no row: XTX_CAUSE_NOT_FOUND, missing data the spec does not call an error */
	if (xtx_delete(t, TATP_CF, tatp_cf_key(x->s_id, in->sf_type, in->start_time)))
		return broken(x);
	return XTX_STEP_COMMIT;
}

enum xtx_step tatp_step(struct xtx_txn *t, void *arg)
{
	struct tatp_txn *x = arg;
	unsigned int round = xtx_txn_round(t);

	switch (x->in.type) {
	case TATP_GSD:
		return gsd(t, x, round);
	case TATP_GND:
		return gnd(t, x, round);
	case TATP_GAD:
		return gad(t, x, round);
	case TATP_USD:
		return usd(t, x, round);
	case TATP_UL:
		return ul(t, x, round);
	case TATP_ICF:
		return icf(t, x, round);
	case TATP_DCF:
		return dcf(t, x, round);
	default:
		return broken(x);
	}
}

bool tatp_txn_logical(const struct tatp_txn *x, const struct xtx_txn_result *res)
{
	if (res->outcome != XTX_ABORTED)
		return false;
	switch (res->cause) {
	case XTX_CAUSE_USER:
		return x->logical;
	case XTX_CAUSE_EXISTS:
		return x->in.type == TATP_ICF;
	case XTX_CAUSE_NOT_FOUND:
		return x->in.type == TATP_DCF;
	default:
		return false;
	}
}
