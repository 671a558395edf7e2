// SPDX-License-Identifier: GPL-2.0-only
/* libxtx's application calls inside a step function, and the printable names. */
#include <errno.h>
#include <string.h>
#include <xtx/maps.h>
#include "internal.h"

unsigned int xtx_txn_round(const struct xtx_txn *t)
{
	return t->round;
}

uint64_t xtx_txn_id(const struct xtx_txn *t)
{
	return t->id;
}

unsigned int xtx_txn_accesses(const struct xtx_txn *t, struct xtx_access *a, unsigned int max)
{
	unsigned int i;

	for (i = 0; i < t->nkeys && i < max; i++) {
		const struct txn_key *k = &t->keys[i];

		a[i] = (struct xtx_access){ .key = k->key, .table = k->table };
		if ((k->flags & KF_READ) && (k->flags & KF_ANSWERED)) {
			a[i].flags |= XTX_ACC_READ | (k->flags & KF_ABSENT ? XTX_ACC_ABSENT : 0);
			a[i].read_version = k->version;
		}
		if (k->flags & KF_WRITE) {
			a[i].flags |= XTX_ACC_WRITE | (k->flags & KF_DELETE ? XTX_ACC_DELETE : 0);
			a[i].write_version = k->version + 1;
		}
	}
	return t->nkeys;
}

/* The key's entry in t, created (with its replicas) when absent; -errno on failure. */
static int key_slot(struct xtx_txn *t, uint8_t table, uint64_t key)
{
	struct txn_key *k;
	unsigned int i;

	if (!t->in_step)
		return -EALREADY;
	if (table >= XTX_MAX_TABLES)
		return -EINVAL;
	for (i = 0; i < t->nkeys; i++)
		if (t->keys[i].key == key && t->keys[i].table == table)
			return (int)i;
	if (t->nkeys == XTX_TXN_MAX_KEYS)
		return -E2BIG;
	k = &t->keys[t->nkeys];
	memset(k, 0, sizeof(*k));
	k->table = table;
	k->key = key;
	k->nrep = (uint8_t)xtx_replica_count(t->c, table, key);
	for (i = 0; i < k->nrep; i++)
		k->replica[i] = (uint8_t)xtx_replica_of(t->c, table, key, i);
	return (int)t->nkeys++;
}

int xtx_get(struct xtx_txn *t, uint8_t table, uint64_t key, unsigned int flags)
{
	int h;

	if (flags & ~XTX_GET_FOR_UPDATE)
		return -EINVAL;
	h = key_slot(t, table, key);
	if (h < 0)
		return h;
	/* a second read of a key is answered from the first */
	if (!(t->keys[h].flags & KF_READ))
		t->keys[h].flags |= KF_READ | (flags & XTX_GET_FOR_UPDATE ? KF_FOR_UPDATE : 0);
	return h;
}

int xtx_value(const struct xtx_txn *t, int h, const void **value, uint16_t *vlen)
{
	const struct txn_key *k;

	if (h < 0 || (unsigned int)h >= t->nkeys)
		return -EINVAL;
	k = &t->keys[h];
	if (!(k->flags & KF_ANSWERED))
		return -EINVAL;
	if (k->flags & KF_ABSENT)
		return -ENOENT;
	if (value)
		*value = k->vlen > XTX_VALUE_INLINE ? k->value_big : k->value;
	if (vlen)
		*vlen = k->vlen;
	return 0;
}

static int buffer_write(struct xtx_txn *t, uint8_t table, uint64_t key, const void *value,
			uint16_t vlen, uint16_t kind)
{
	struct txn_key *k;
	int h;

	if (vlen > XTX_VALUE_MAX)
		return -EMSGSIZE;
	if (vlen && !value)
		return -EINVAL;
	h = key_slot(t, table, key);
	if (h < 0)
		return h;
	k = &t->keys[h];
	if (vlen > XTX_VALUE_INLINE && k->new_cap < vlen) {
		/* never realloc'd: value may point into a buffer this transaction handed out */
		uint8_t *b = txn_arena_alloc(t, vlen);

		if (!b)
			return -ENOMEM;
		k->new_big = b;
		k->new_cap = vlen;
	}
	/* the last write of a key wins; an insert after a delete is a put */
	if ((k->flags & KF_DELETE) && kind == KF_INSERT)
		kind = 0;
	k->flags = (k->flags & ~(KF_INSERT | KF_DELETE)) | KF_WRITE | kind;
	k->new_vlen = vlen;
	memset(k->new_value, 0, sizeof(k->new_value));
	if (vlen > XTX_VALUE_INLINE)
		memmove(k->new_big, value, vlen);
	else if (vlen)
		memcpy(k->new_value, value, vlen);
	return 0;
}

int xtx_client_table_value_max(struct xtx_client *c, uint8_t table, uint16_t bytes)
{
	if (table >= XTX_MAX_TABLES || bytes > XTX_VALUE_MAX)
		return -EINVAL;
	c->value_room[table] = bytes > XTX_VALUE_INLINE ? bytes : 0;
	return 0;
}

int xtx_put(struct xtx_txn *t, uint8_t table, uint64_t key, const void *value, uint16_t vlen)
{
	return buffer_write(t, table, key, value, vlen, 0);
}

int xtx_insert(struct xtx_txn *t, uint8_t table, uint64_t key, const void *value,
	       uint16_t vlen)
{
	return buffer_write(t, table, key, value, vlen, KF_INSERT);
}

int xtx_delete(struct xtx_txn *t, uint8_t table, uint64_t key)
{
	return buffer_write(t, table, key, NULL, 0, KF_DELETE);
}

const char *xtx_outcome_name(enum xtx_outcome o)
{
	switch (o) {
	case XTX_COMMITTED: return "committed";
	case XTX_ABORTED: return "aborted";
	case XTX_FAILED: return "failed";
	case XTX_IN_DOUBT: return "in_doubt";
	}
	return "?";
}

const char *xtx_cause_name(enum xtx_abort_cause c)
{
	static const char *const names[XTX_CAUSE__COUNT] = {
		[XTX_CAUSE_NONE] = "none",
		[XTX_CAUSE_LOCK] = "lock",
		[XTX_CAUSE_VALIDATION] = "validation",
		[XTX_CAUSE_LEASE] = "lease",
		[XTX_CAUSE_USER] = "user",
		[XTX_CAUSE_EXISTS] = "exists",
		[XTX_CAUSE_NOT_FOUND] = "not_found",
		[XTX_CAUSE_FULL] = "full",
		[XTX_CAUSE_SQUASHED] = "squashed",
		[XTX_CAUSE_REFUSED] = "refused",
		[XTX_CAUSE_NACK] = "nack",
		[XTX_CAUSE_MISUSE] = "misuse",
		[XTX_CAUSE_MIXED] = "mixed",
		[XTX_CAUSE_MOVED] = "moved",
		[XTX_CAUSE_VALUE_ROOM] = "value_room",
	};

	return (unsigned int)c < XTX_CAUSE__COUNT && names[c] ? names[c] : "?";
}

bool xtx_cause_retryable(enum xtx_abort_cause c)
{
	return c == XTX_CAUSE_LOCK || c == XTX_CAUSE_VALIDATION || c == XTX_CAUSE_LEASE ||
	       c == XTX_CAUSE_SQUASHED || c == XTX_CAUSE_NACK || c == XTX_CAUSE_MIXED ||
	       c == XTX_CAUSE_MOVED || c == XTX_CAUSE_VALUE_ROOM;
}

const char *xtx_protocol_name(enum xtx_protocol p)
{
	return (unsigned int)p < txn_nprotocols ? txn_protocols[p]->name : "?";
}

int xtx_protocol_parse(const char *s, enum xtx_protocol *p)
{
	unsigned int i;

	for (i = 0; i < txn_nprotocols; i++) {
		if (!strcmp(s, txn_protocols[i]->name)) {
			*p = (enum xtx_protocol)i;
			return 0;
		}
	}
	return -EINVAL;
}
