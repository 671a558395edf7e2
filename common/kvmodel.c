// SPDX-License-Identifier: GPL-2.0-only
/* The KV reference model: an open-addressing table of every key ever seen, and its checker. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/hash.h>
#include <xtx/maps.h>
#include "kvmodel.h"
#include "names.h"

#define KVM_MIN_CAP	64	/* slots; a power of two */

enum { KVM_EMPTY, KVM_DEAD, KVM_LIVE };

/*
 * Entries are never removed (a deleted key keeps its highest version), so
 * linear probing needs no tombstones and a lookup stops at the first empty
 * slot.
 */
struct kvm_entry {
	uint64_t key;
	uint64_t version;	/* live: current; dead: the delete's */
	/*
	 * Highest version ever: equal to version unless a mismatching reply
	 * was adopted, and the floor a re-insert starts above.
	 */
	uint64_t highest;
	uint8_t table;
	uint8_t state;
	uint16_t vlen;
	/* a value longer than the slot is allocated apart: small keys stay small */
	union {
		uint8_t value[XTX_VALUE_INLINE];
		uint8_t *big;
	};
};

static const uint8_t *entry_value(const struct kvm_entry *e)
{
	return e->vlen > XTX_VALUE_INLINE ? e->big : e->value;
}

struct kvmodel {
	struct kvm_entry *slot;
	uint64_t cap;		/* power of two */
	uint64_t known;		/* entries in use */
	uint64_t live;
	uint64_t max_keys;	/* 0: unlimited */
	unsigned int value_size;
};

struct kvmodel *kvmodel_new(unsigned int value_size, uint64_t max_keys)
{
	struct kvmodel *m;

	if (value_size > XTX_VALUE_MAX)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cap = KVM_MIN_CAP;
	m->slot = calloc(m->cap, sizeof(*m->slot));
	if (!m->slot) {
		free(m);
		return NULL;
	}
	m->value_size = value_size ? value_size : XTX_VALUE_INLINE;
	m->max_keys = max_keys;
	return m;
}

void kvmodel_free(struct kvmodel *m)
{
	if (!m)
		return;
	for (uint64_t i = 0; i < m->cap; i++)
		if (m->slot[i].state != KVM_EMPTY && m->slot[i].vlen > XTX_VALUE_INLINE)
			free(m->slot[i].big);
	free(m->slot);
	free(m);
}

static uint64_t home_of(const struct kvmodel *m, uint8_t table, uint64_t key)
{
	return xtx_hash(table, key) & (m->cap - 1);
}

/* The entry of (table, key), or the empty slot where it would go. */
static struct kvm_entry *probe(const struct kvmodel *m, uint8_t table, uint64_t key)
{
	uint64_t i = home_of(m, table, key);
	struct kvm_entry *e;

	for (;;) {
		e = &m->slot[i];
		if (e->state == KVM_EMPTY || (e->key == key && e->table == table))
			return e;
		i = (i + 1) & (m->cap - 1);
	}
}

static struct kvm_entry *find(const struct kvmodel *m, uint8_t table, uint64_t key)
{
	struct kvm_entry *e = probe(m, table, key);

	return e->state == KVM_EMPTY ? NULL : e;
}

/* Doubles the table; entries keep their contents.  0 or -ENOMEM (nothing changed). */
static int grow(struct kvmodel *m)
{
	struct kvm_entry *old = m->slot, *e;
	uint64_t old_cap = m->cap, i;

	m->slot = calloc(old_cap * 2, sizeof(*m->slot));
	if (!m->slot) {
		m->slot = old;
		return -ENOMEM;
	}
	m->cap = old_cap * 2;
	for (i = 0; i < old_cap; i++) {
		if (old[i].state == KVM_EMPTY)
			continue;
		e = probe(m, old[i].table, old[i].key);
		*e = old[i];
	}
	free(old);
	return 0;
}

/* The entry for a key about to become live, created dead if new; NULL on ENOMEM. */
static struct kvm_entry *claim(struct kvmodel *m, uint8_t table, uint64_t key)
{
	struct kvm_entry *e = probe(m, table, key);

	if (e->state != KVM_EMPTY)
		return e;
	/* at most half full: probe runs stay short */
	if ((m->known + 1) * 2 > m->cap) {
		if (grow(m))
			return NULL;
		e = probe(m, table, key);
	}
	memset(e, 0, sizeof(*e));
	e->key = key;
	e->table = table;
	e->state = KVM_DEAD;
	m->known++;
	return e;
}

/*
 * A long value's own buffer, allocated before anything changes so that
 * running out of memory changes nothing; NULL for a value that fits the
 * entry.  *err is set on ENOMEM.
 */
static uint8_t *big_alloc(uint16_t vlen, const uint8_t *value, bool *err)
{
	uint8_t *b;

	*err = false;
	if (vlen <= XTX_VALUE_INLINE)
		return NULL;
	b = malloc(vlen);
	if (!b) {
		*err = true;
		return NULL;
	}
	if (value)
		memcpy(b, value, vlen);
	else
		memset(b, 0, vlen);
	return b;
}

/* Takes big (from big_alloc) for a long value. */
static void set_value(struct kvm_entry *e, uint16_t vlen, const uint8_t *value, uint8_t *big)
{
	if (e->vlen > XTX_VALUE_INLINE)
		free(e->big);
	memset(e->value, 0, sizeof(e->value));
	if (vlen > XTX_VALUE_INLINE)
		e->big = big;
	else if (vlen && value)
		memcpy(e->value, value, vlen);
	e->vlen = vlen;
}

static void fill_result(struct kvmodel_result *res, uint8_t status, const struct kvm_entry *e,
			uint64_t version, bool with_value)
{
	res->status = status;
	res->version = version;
	res->vlen = 0;
	memset(res->value, 0, XTX_VALUE_INLINE);
	if (with_value && e) {
		res->vlen = e->vlen;
		memcpy(res->value, entry_value(e), e->vlen);
	}
}

/* What the server validates before running anything; XTX_ST_OK when the op may run. */
static uint8_t validate(const struct kvmodel *m, uint8_t opcode, uint8_t table, uint16_t vlen)
{
	if (vlen > XTX_VALUE_MAX || table >= XTX_MAX_TABLES)
		return XTX_ST_BAD_ARG;
	switch (opcode) {
	case XTX_OP_GET:
	case XTX_OP_DELETE:
		return XTX_ST_OK;
	case XTX_OP_INSERT:
	case XTX_OP_UPDATE:
		return vlen > m->value_size ? XTX_ST_BAD_ARG : XTX_ST_OK;
	default:
		return XTX_ST_UNKNOWN_OP;
	}
}

/*
 * The model's answer to an op, without changing anything: status and, for
 * OK, the version (an INSERT's is the deterministic highest + 1).
 */
static uint8_t predict(const struct kvmodel *m, uint8_t opcode, uint8_t table, uint64_t key,
		       uint16_t vlen, const struct kvm_entry **ep, uint64_t *version)
{
	const struct kvm_entry *e;
	uint8_t st = validate(m, opcode, table, vlen);

	*ep = NULL;
	*version = 0;
	if (st != XTX_ST_OK)
		return st;
	e = find(m, table, key);
	*ep = e;
	if (opcode == XTX_OP_INSERT) {
		if (e && e->state == KVM_LIVE)
			return XTX_ST_EXISTS;
		if (m->max_keys && m->live >= m->max_keys)
			return XTX_ST_FULL;
		*version = (e ? e->highest : 0) + 1;
		return XTX_ST_OK;
	}
	if (!e || e->state != KVM_LIVE)
		return XTX_ST_NOT_FOUND;
	*version = opcode == XTX_OP_GET ? e->version : e->version + 1;
	return XTX_ST_OK;
}

/*
 * Makes an OK write happen with the given version.  Returns false when a
 * new key could not be remembered (ENOMEM): then nothing changed.
 */
static bool commit(struct kvmodel *m, uint8_t opcode, uint8_t table, uint64_t key, uint16_t vlen,
		   const uint8_t *value, uint64_t version)
{
	bool nomem;
	uint8_t *big = big_alloc(opcode == XTX_OP_DELETE ? 0 : vlen, value, &nomem);
	struct kvm_entry *e;

	if (nomem)
		return false;
	e = claim(m, table, key);
	if (!e) {
		free(big);
		return false;
	}
	switch (opcode) {
	case XTX_OP_INSERT:
		if (e->state != KVM_LIVE)
			m->live++;
		e->state = KVM_LIVE;
		set_value(e, vlen, value, big);
		break;
	case XTX_OP_UPDATE:
		set_value(e, vlen, value, big);
		break;
	case XTX_OP_DELETE:
		if (e->state == KVM_LIVE)
			m->live--;
		e->state = KVM_DEAD;
		set_value(e, 0, NULL, NULL);
		break;
	}
	e->version = version;
	if (e->highest < version)
		e->highest = version;
	return true;
}

uint8_t kvmodel_apply(struct kvmodel *m, uint8_t opcode, uint8_t table, uint64_t key,
		      uint16_t vlen, const uint8_t *value, struct kvmodel_result *res)
{
	const struct kvm_entry *e;
	struct kvmodel_result dummy;
	uint64_t version;
	uint8_t st;

	if (!res)
		res = &dummy;
	st = predict(m, opcode, table, key, vlen, &e, &version);
	if (st == XTX_ST_OK && opcode != XTX_OP_GET &&
	    !commit(m, opcode, table, key, vlen, value, version))
		st = XTX_ST_FULL;
	/* commit may have moved entries: look the key up again for GET's value */
	fill_result(res, st, st == XTX_ST_OK ? find(m, table, key) : NULL,
		    st == XTX_ST_OK ? version : 0, opcode == XTX_OP_GET);
	return st;
}

int kvmodel_set(struct kvmodel *m, uint8_t table, uint64_t key, bool live, uint16_t vlen,
		const uint8_t *value, uint64_t version)
{
	if (vlen > XTX_VALUE_MAX)
		return -EINVAL;
	/* INSERT makes live whatever the state, DELETE dead: the commit's effect */
	if (!commit(m, live ? XTX_OP_INSERT : XTX_OP_DELETE, table, key, vlen, value, version))
		return -ENOMEM;
	return 0;
}

/* Lowercase hex of n bytes into buf (2n + 1 bytes). */
static char *hex(const uint8_t *p, unsigned int n, char *buf)
{
	static const char digits[] = "0123456789abcdef";
	unsigned int i;

	for (i = 0; i < n; i++) {
		buf[2 * i] = digits[p[i] >> 4];
		buf[2 * i + 1] = digits[p[i] & 15];
	}
	buf[2 * n] = '\0';
	return buf;
}

static void describe(char *buf, size_t len, uint8_t status, uint64_t version, bool versioned,
		     const char *vcmp, bool with_value, uint16_t vlen, const uint8_t *value)
{
	char h[2 * XTX_VALUE_INLINE + 1];
	int n;

	n = snprintf(buf, len, "%s", xtx_status_name(status));
	if (versioned && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " version %s%llu", vcmp,
			      (unsigned long long)version);
	if (with_value && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - n, " vlen %u value %s", vlen,
			 vlen <= XTX_VALUE_INLINE ? hex(value, vlen, h) : "(too long)");
}

int kvmodel_check(struct kvmodel *m, const struct xtx_op *req, const struct xtx_op *reply,
		  char *why, size_t why_len)
{
	char exp[80 + 2 * XTX_VALUE_INLINE], got[80 + 2 * XTX_VALUE_INLINE];
	uint8_t op = req->opcode, st, rst = reply->status;
	const struct kvm_entry *e;
	bool ok = true, is_get = op == XTX_OP_GET, is_insert = op == XTX_OP_INSERT;
	bool show_value;
	uint64_t version, highest;

	if (why && why_len)
		why[0] = '\0';
	if (reply->opcode != req->opcode || reply->table != req->table || reply->key != req->key) {
		if (why)
			snprintf(why, why_len, "reply is for opcode %u table %u key %llu",
				 reply->opcode, reply->table, (unsigned long long)reply->key);
		return -1;
	}
	st = predict(m, op, req->table, req->key, req->vlen, &e, &version);
	if (rst == XTX_ST_RETRY)
		return 0;
	/* a full overflow store refuses a write the model would do; nothing changed */
	if (rst == XTX_ST_FULL && st == XTX_ST_OK && (is_insert || op == XTX_OP_UPDATE))
		return 0;
	/* the model's own limit is not the server's: a server that had room is right */
	if (st == XTX_ST_FULL && is_insert && rst == XTX_ST_OK && (!e || e->state != KVM_LIVE))
		st = XTX_ST_OK;
	highest = e ? e->highest : 0;

	if (rst != st) {
		ok = false;
	} else if (st == XTX_ST_OK) {
		if (is_insert)
			ok = reply->version > highest;
		else
			ok = reply->version == version;
		if (is_get && ok)
			ok = reply->vlen == e->vlen && reply->vlen <= XTX_VALUE_INLINE &&
			     !memcmp(reply->value, e->value, reply->vlen);
	}

	if (!ok && why) {
		show_value = is_get && st == XTX_ST_OK;
		describe(exp, sizeof(exp), st, is_insert ? highest : version, st == XTX_ST_OK,
			 is_insert ? "> " : "", show_value, e ? e->vlen : 0, e ? entry_value(e) : NULL);
		describe(got, sizeof(got), rst, reply->version, rst == XTX_ST_OK, "",
			 is_get && rst == XTX_ST_OK, reply->vlen, reply->value);
		snprintf(why, why_len, "expected %s, got %s", exp, got);
	}

	/* advance: the model's prediction, with the server's version for a write both did */
	if (st == XTX_ST_OK && !is_get) {
		if (rst == XTX_ST_OK)
			version = reply->version;
		if (!commit(m, op, req->table, req->key, req->vlen, req->value, version) && why) {
			snprintf(why, why_len, "model out of memory");
			return -1;
		}
	}
	return ok ? 0 : -1;
}

static void item_of(const struct kvm_entry *e, struct kvmodel_item *it)
{
	it->key = e->key;
	it->version = e->version;
	it->table = e->table;
	it->vlen = e->vlen;
	if (e->vlen > XTX_VALUE_INLINE) {
		memset(it->value, 0, sizeof(it->value));
		it->big = e->big;
	} else {
		memcpy(it->value, e->value, sizeof(it->value));
		it->big = NULL;
	}
}

int kvmodel_lookup(const struct kvmodel *m, uint8_t table, uint64_t key,
		   struct kvmodel_item *it, uint64_t *highest)
{
	const struct kvm_entry *e = find(m, table, key);

	if (highest)
		*highest = e ? e->highest : 0;
	if (!e)
		return -1;
	if (e->state != KVM_LIVE)
		return 0;
	if (it)
		item_of(e, it);
	return 1;
}

uint64_t kvmodel_live(const struct kvmodel *m)
{
	return m->live;
}

uint64_t kvmodel_known(const struct kvmodel *m)
{
	return m->known;
}

int kvmodel_foreach(const struct kvmodel *m, int (*fn)(const struct kvmodel_item *it, void *arg),
		    void *arg)
{
	struct kvmodel_item it;
	uint64_t i;
	int ret;

	for (i = 0; i < m->cap; i++) {
		if (m->slot[i].state != KVM_LIVE)
			continue;
		item_of(&m->slot[i], &it);
		ret = fn(&it, arg);
		if (ret)
			return ret;
	}
	return 0;
}

int kvmodel_collect(const struct kvmodel *m, struct kvmodel_item **items, size_t *n)
{
	struct kvmodel_item *v;
	size_t want = *n + m->live;
	uint64_t i;

	if (!m->live)
		return 0;
	v = realloc(*items, want * sizeof(*v));
	if (!v)
		return -ENOMEM;
	*items = v;
	for (i = 0; i < m->cap; i++) {
		struct kvmodel_item *it = &v[*n];
		uint8_t *copy;

		if (m->slot[i].state != KVM_LIVE)
			continue;
		item_of(&m->slot[i], it);
		if (it->big) {
			/* the model may change once the caller lets go of it */
			copy = malloc(it->vlen);
			if (!copy)
				return -ENOMEM;
			memcpy(copy, it->big, it->vlen);
			it->big = copy;
		}
		(*n)++;
	}
	return 0;
}

void kvmodel_items_free(struct kvmodel_item *items, size_t n)
{
	size_t i;

	for (i = 0; items && i < n; i++)
		if (items[i].vlen > XTX_VALUE_INLINE)
			free((void *)items[i].big);
	free(items);
}

static int item_cmp(const void *a, const void *b)
{
	const struct kvmodel_item *x = a, *y = b;

	if (x->table != y->table)
		return x->table < y->table ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return 0;
}

void kvmodel_sort(struct kvmodel_item *items, size_t n)
{
	if (n > 1)
		qsort(items, n, sizeof(*items), item_cmp);
}

void kvmodel_format(const struct kvmodel_item *it, char *buf, size_t len)
{
	char h[2 * XTX_VALUE_MAX + 1];
	uint16_t vlen = it->vlen <= XTX_VALUE_MAX ? it->vlen : XTX_VALUE_MAX;

	snprintf(buf, len, "table=%u key=%llu version=%llu vlen=%u value=%s\n", it->table,
		 (unsigned long long)it->key, (unsigned long long)it->version, vlen,
		 hex(kvmodel_item_value(it), vlen, h));
}

int kvmodel_write_dump(FILE *f, const struct kvmodel_item *items, size_t n)
{
	char line[KVMODEL_LINE_MAX];
	size_t i;

	for (i = 0; i < n; i++) {
		kvmodel_format(&items[i], line, sizeof(line));
		if (fputs(line, f) == EOF)
			return -1;
	}
	return 0;
}
