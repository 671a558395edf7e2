// SPDX-License-Identifier: GPL-2.0-only
/* KV ops on the reference model: the semantics of bpf/lib/kv.h and xtxd's rare path. */
#include <string.h>
#include "kv.h"

/* Live: 1 with the item; absent: 0 with the version above which it may come back. */
static int lookup(struct udpd_stripe *s, const struct xtx_op *op, struct kvmodel_item *it,
		  uint64_t *absent_version)
{
	uint64_t highest;

	if (kvmodel_lookup(s->kv, op->table, op->key, it, &highest) == 1)
		return 1;
	*absent_version = highest;
	return 0;
}

/* GET and READ: the value in slot or area, or an absent key's version as XDP answers it. */
static uint8_t get(struct udpd_stripe *s, struct xtx_op *op, const struct udpd_val *v)
{
	struct kvmodel_item it;
	uint64_t absent;
	uint8_t st;

	if (!lookup(s, op, &it, &absent)) {
		op->version = absent;
		op->flags &= ~XTX_OPF_EXT;
		return XTX_ST_NOT_FOUND;
	}
	st = udpd_val_answer(op, v, kvmodel_item_value(&it), it.vlen);
	if (st == XTX_ST_OK)
		op->version = it.version;
	return st;
}

uint8_t udpd_kv_op(struct udpd_stripe *s, struct xtx_op *op, const struct udpd_val *v)
{
	struct kvmodel_result res;
	uint8_t st;

	if (op->opcode == XTX_OP_GET || op->opcode == XTX_OP_READ)
		return get(s, op, v);
	st = kvmodel_apply(s->kv, op->opcode, op->table, op->key, v->len, udpd_val_bytes(v, op),
			   &res);
	if (st == XTX_ST_OK)
		op->version = res.version;
	return st;
}

bool udpd_kv_fits(struct udpd_stripe *s, const struct xtx_op *op, const struct udpd_val *v,
		  uint16_t *vlen)
{
	struct kvmodel_item it;
	uint64_t absent;

	if (!lookup(s, op, &it, &absent) || udpd_val_fits(v, it.vlen))
		return true;
	*vlen = it.vlen;
	return false;
}

uint8_t udpd_kv_too_big(struct xtx_op *op, const struct udpd_val *v, uint16_t vlen)
{
	/* a value that cannot fit the room: the answer writes only its length */
	return udpd_val_answer(op, v, NULL, vlen);
}

uint8_t udpd_kv_read_locked(struct udpd_stripe *s, struct xtx_op *op, const struct udpd_val *v)
{
	struct kvmodel_item it;
	uint64_t absent;
	uint8_t st;

	if (lookup(s, op, &it, &absent)) {
		st = udpd_val_answer(op, v, kvmodel_item_value(&it), it.vlen);
		op->version = it.version;
		return st;
	}
	op->version = absent;
	op->vlen = 0;
	op->flags &= ~XTX_OPF_EXT;
	op->flags |= XTX_TXF_ABSENT;
	return XTX_ST_OK;
}

uint8_t udpd_kv_validate(struct udpd_stripe *s, struct xtx_op *op)
{
	struct kvmodel_item it;
	uint64_t cur, expected = op->version;

	if (lookup(s, op, &it, &cur))
		cur = it.version;
	op->version = cur;
	return cur == expected ? XTX_ST_OK : XTX_ST_CHANGED;
}

/*
 * Idempotent: a version already there answers ALREADY_APPLIED, so a
 * retransmitted commit is harmless even without its record.  An absent
 * key is installed unchecked: its coordinator read it under its lock.
 */
uint8_t udpd_kv_commit(struct udpd_stripe *s, struct xtx_op *op, bool primary,
		       const struct udpd_val *v)
{
	bool del = op->flags & XTX_OPF_DELETE;
	struct kvmodel_item it;
	uint64_t absent, ver;

	if (lookup(s, op, &it, &absent)) {
		if (primary && it.version == op->version + 1)
			return XTX_ST_ALREADY_APPLIED;
		if (primary && it.version != op->version)
			return XTX_ST_CHANGED;
		if (!primary && it.version >= op->version)
			return XTX_ST_ALREADY_APPLIED;
	}
	ver = primary ? op->version + 1 : op->version;
	if (kvmodel_set(s->kv, op->table, op->key, !del, del ? 0 : v->len, udpd_val_bytes(v, op),
			ver))
		return XTX_ST_FULL;
	op->version = ver;
	return XTX_ST_OK;
}
