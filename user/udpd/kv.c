// SPDX-License-Identifier: GPL-2.0-only
/* KV ops on the reference model: the semantics of bpf/lib/kv.h and xtxd's rare path. */
#include <string.h>
#include "kv.h"

static int lookup(struct udpd_stripe *s, const struct xtx_op *op, struct kvmodel_item *it,
		  uint64_t *absent_version);

uint8_t udpd_kv_op(struct udpd_stripe *s, struct xtx_op *op)
{
	uint8_t opcode = op->opcode == XTX_OP_READ ? XTX_OP_GET : op->opcode;
	struct kvmodel_result res;
	struct kvmodel_item it;
	uint64_t absent;
	uint8_t st;

	st = kvmodel_apply(s->kv, opcode, op->table, op->key, op->vlen, op->value, &res);
	/* an absent key's version, as XDP answers it: what an absent read saw */
	if (st == XTX_ST_NOT_FOUND && opcode == XTX_OP_GET && !lookup(s, op, &it, &absent)) {
		op->version = absent;
		return st;
	}
	if (st != XTX_ST_OK)
		return st;
	op->version = res.version;
	if (opcode == XTX_OP_GET) {
		memcpy(op->value, res.value, XTX_VALUE_INLINE);
		op->vlen = res.vlen;
	}
	return XTX_ST_OK;
}

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

uint8_t udpd_kv_read_locked(struct udpd_stripe *s, struct xtx_op *op)
{
	struct kvmodel_item it;
	uint64_t absent;

	if (lookup(s, op, &it, &absent)) {
		memcpy(op->value, it.value, XTX_VALUE_INLINE);
		op->vlen = it.vlen;
		op->version = it.version;
		return XTX_ST_OK;
	}
	op->version = absent;
	op->vlen = 0;
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
uint8_t udpd_kv_commit(struct udpd_stripe *s, struct xtx_op *op, bool primary)
{
	bool del = op->flags & XTX_OPF_DELETE;
	struct kvmodel_item it;
	uint64_t absent, v;

	if (lookup(s, op, &it, &absent)) {
		if (primary && it.version == op->version + 1)
			return XTX_ST_ALREADY_APPLIED;
		if (primary && it.version != op->version)
			return XTX_ST_CHANGED;
		if (!primary && it.version >= op->version)
			return XTX_ST_ALREADY_APPLIED;
	}
	v = primary ? op->version + 1 : op->version;
	if (kvmodel_set(s->kv, op->table, op->key, !del, del ? 0 : op->vlen, op->value, v))
		return XTX_ST_FULL;
	op->version = v;
	return XTX_ST_OK;
}
