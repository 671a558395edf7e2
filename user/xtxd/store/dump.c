// SPDX-License-Identifier: GPL-2.0-only
/* Dumps the KV store: kernel buckets and overflow store read, merged by (table, key), printed. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <xtx/kv.h>
#include <xtx/maps.h>
#include "dump.h"
#include "target.h"

enum { SRC_KERNEL, SRC_STORE };	/* sort order within a key: the kernel's slot first */

struct dump_rec {
	uint64_t key;
	uint64_t version;
	uint8_t table;
	uint8_t src;
	uint8_t flags;		/* kernel slot flags */
	uint16_t vlen;		/* up to XTX_VALUE_MAX */
	uint8_t value[XTX_VALUE_INLINE];
	uint64_t big;		/* vlen > XTX_VALUE_INLINE: the value's offset in the arena */
};

struct dump_vec {
	struct dump_rec *r;
	size_t n, cap;
	int table;		/* -1: all */
	/* the few values over XTX_VALUE_INLINE (the store's only): a record stays small */
	uint8_t *arena;
	size_t alen, acap;
};

/* The record's value bytes. */
static const uint8_t *rec_value(const struct dump_vec *v, const struct dump_rec *r)
{
	return r->vlen > XTX_VALUE_INLINE ? v->arena + r->big : r->value;
}

static int arena_add(struct dump_vec *v, const uint8_t *bytes, size_t len, uint64_t *off)
{
	if (v->alen + len > v->acap) {
		size_t cap = v->acap ? v->acap * 2 : 64 * 1024;
		uint8_t *a;

		while (cap < v->alen + len)
			cap *= 2;
		a = realloc(v->arena, cap);
		if (!a)
			return -ENOMEM;
		v->arena = a;
		v->acap = cap;
	}
	memcpy(v->arena + v->alen, bytes, len);
	*off = v->alen;
	v->alen += len;
	return 0;
}

static int vec_push(struct dump_vec *v, const struct dump_rec *rec)
{
	if (v->table >= 0 && rec->table != v->table)
		return 0;
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 4096;
		struct dump_rec *r = realloc(v->r, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		v->r = r;
		v->cap = cap;
	}
	v->r[v->n++] = *rec;
	return 0;
}

/* Runs inside the store's RCU read-side section: only copies. */
static int push_item(const struct xtxd_ovf_item *it, void *arg)
{
	struct dump_vec *v = arg;
	struct dump_rec rec = {
		.key = it->key,
		.version = it->version,
		.table = it->table,
		.src = SRC_STORE,
		.vlen = it->vlen > XTX_VALUE_MAX ? XTX_VALUE_MAX : it->vlen,
	};
	int err;

	if (v->table >= 0 && rec.table != v->table)
		return 0;
	memcpy(rec.value, it->value, XTX_VALUE_INLINE);
	if (rec.vlen > XTX_VALUE_INLINE) {
		err = arena_add(v, it->value, rec.vlen, &rec.big);
		if (err)
			return err;
	}
	return vec_push(v, &rec);
}

static int push_bucket(struct dump_vec *v, const struct xtx_kv_bucket *live)
{
	struct xtx_kv_bucket copy;
	const struct xtx_kv_bucket *b = &copy;
	int w, err;

	/* one copy, decided on: a way XDP changes meanwhile is never half its old state */
	memcpy(&copy, live, sizeof(copy));
	for (w = 0; w < XTX_KV_WAYS; w++) {
		struct dump_rec rec = {
			.key = b->key[w],
			.version = b->version[w],
			.table = b->table[w],
			.src = SRC_KERNEL,
			.flags = b->flags[w],
			.vlen = b->vlen[w] > XTX_VALUE_INLINE ? XTX_VALUE_INLINE : b->vlen[w],
		};

		if (!(b->flags[w] & (XTX_KVF_VALID | XTX_KVF_TOMB)))
			continue;
		memcpy(rec.value, b->value[w], XTX_VALUE_INLINE);
		err = vec_push(v, &rec);
		if (err)
			return err;
	}
	return 0;
}

static int vec_reserve(struct dump_vec *v, size_t n)
{
	struct dump_rec *r;

	if (n <= v->cap)
		return 0;
	r = realloc(v->r, n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	v->r = r;
	v->cap = n;
	return 0;
}

/*
 * Through the map's mapping (BPF_F_MMAPABLE): no copy through the syscall
 * layer, and room for every slot in use reserved first, so the records
 * are never copied again as the vector grows (a snapshot of millions).
 */
static int read_kernel(const struct xtx_target *t, uint32_t nbuckets, size_t more,
		       struct dump_vec *v, const char **why)
{
	struct xtx_kv_bucket *kv;
	size_t size, used = 0;
	uint32_t i, w;
	int err;

	*why = "mapping the kernel cache map " XTX_MAP_KV;
	err = xtx_target_map_kv(t, nbuckets, &kv, &size);
	if (err)
		return err;
	*why = "reading the kernel cache";
	for (i = 0; i < nbuckets; i++)
		for (w = 0; w < XTX_KV_WAYS; w++)
			used += !!(kv[i].flags[w] & (XTX_KVF_VALID | XTX_KVF_TOMB));
	/* a few more: XDP may fill slots while we read */
	err = vec_reserve(v, used + used / 64 + more + 1024);
	for (i = 0; i < nbuckets && !err; i++)
		err = push_bucket(v, &kv[i]);
	munmap(kv, size);
	return err;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct dump_rec *x = a, *y = b;

	if (x->table != y->table)
		return x->table < y->table ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (int)x->src - (int)y->src;
}

static void print_rec(struct xtxd_out *out, const struct dump_vec *v, const struct dump_rec *r,
		      bool json)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *value = rec_value(v, r);
	char hex[2 * XTX_VALUE_MAX + 1];
	int i;

	for (i = 0; i < r->vlen; i++) {
		hex[2 * i] = digits[value[i] >> 4];
		hex[2 * i + 1] = digits[value[i] & 15];
	}
	hex[2 * r->vlen] = '\0';
	if (json)
		xtxd_out_printf(out, "{\"table\":%u,\"key\":%llu,\"version\":%llu,\"vlen\":%u,"
				"\"value\":\"%s\",\"where\":\"%s\"}\n", r->table,
				(unsigned long long)r->key, (unsigned long long)r->version,
				r->vlen, hex, r->src == SRC_KERNEL ? "kernel" : "overflow");
	else
		xtxd_out_printf(out, "table=%u key=%llu version=%llu vlen=%u value=%s\n",
				r->table, (unsigned long long)r->key,
				(unsigned long long)r->version, r->vlen, hex);
}

/* One (table, key): its kernel slot (if any) sorts first, then the store's copy. */
static const struct dump_rec *winner(const struct dump_rec *k, const struct dump_rec *s)
{
	if (!k)
		return s;
	if (!(k->flags & XTX_KVF_VALID))
		return NULL;	/* a tombstone: deleted, whatever the store still holds */
	if (!s || (k->flags & XTX_KVF_DIRTY) || k->version >= s->version)
		return k;
	return s;
}

struct sort_ent {
	uint64_t key;
	uint32_t table;
	uint32_t idx;
};

/* Digit `pass` of (table, key), least significant first: the key's 8 bytes, then the table. */
static inline unsigned int digit(const struct sort_ent *e, unsigned int pass)
{
	return pass < 8 ? (uint8_t)(e->key >> (8 * pass)) : (uint8_t)e->table;
}

/*
 * Sorts the records by (table, key), the kernel's slot before the store's
 * copy of a key (they were read in that order, and the sort is stable).
 * An LSD radix sort of 16-byte entries, skipping digits all entries share,
 * then one gather: qsort of the 64-byte records spent more time than the
 * rest of a snapshot of millions of keys.  -ENOMEM leaves v unsorted.
 */
static int sort_recs(struct dump_vec *v)
{
	size_t n = v->n, i, cnt[256], pos;
	struct sort_ent *a, *b, *t;
	struct dump_rec *out;
	unsigned int pass, d;
	bool all_same;

	if (n < 2)
		return 0;
	if (n > UINT32_MAX)
		return -ENOMEM;
	a = malloc(n * sizeof(*a));
	b = malloc(n * sizeof(*b));
	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		a[i] = (struct sort_ent){ .key = v->r[i].key, .table = v->r[i].table,
					  .idx = (uint32_t)i };
	for (pass = 0; pass < 9; pass++) {
		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[digit(&a[i], pass)]++;
		all_same = false;
		for (d = 0; d < 256 && !all_same; d++)
			all_same = cnt[d] == n;
		if (all_same)
			continue;
		for (d = 0, pos = 0; d < 256; d++) {
			size_t c = cnt[d];

			cnt[d] = pos;
			pos += c;
		}
		for (i = 0; i < n; i++)
			b[cnt[digit(&a[i], pass)]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	free(b);
	out = malloc(n * sizeof(*out));
	if (!out) {
		free(a);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		out[i] = v->r[a[i].idx];
	free(a);
	free(v->r);
	v->r = out;
	v->cap = n;
	return 0;
}

/* Reads both sides and merges them, sorted: what dump prints and snapshot saves. */
static int collect(const struct xtx_target *t, struct xtxd_ovf *s, struct dump_vec *v,
		   const char **why)
{
	int err;

	err = read_kernel(t, xtxd_ovf_nbuckets(s), xtxd_ovf_count(s), v, why);
	if (err)
		return err;
	*why = "reading the overflow store";
	err = xtxd_ovf_foreach(s, push_item, v);
	if (err)
		return err;
	/* short of memory for the radix sort's scratch: qsort needs less */
	if (sort_recs(v))
		qsort(v->r, v->n, sizeof(*v->r), rec_cmp);
	return 0;
}

int xtxd_dump_each(const struct xtx_target *t, struct xtxd_ovf *s,
		   int (*fn)(const struct xtxd_ovf_item *it, void *arg), void *arg,
		   const char **why)
{
	struct dump_vec v = { .table = -1 };
	static __thread struct xtxd_ovf_item it;
	size_t i, j;
	int err;

	err = collect(t, s, &v, why);
	if (err)
		goto out;
	for (i = 0; i < v.n; i = j) {
		const struct dump_rec *k = NULL, *st = NULL, *w;

		for (j = i; j < v.n && v.r[j].table == v.r[i].table && v.r[j].key == v.r[i].key;
		     j++) {
			if (v.r[j].src == SRC_KERNEL && !k)
				k = &v.r[j];
			if (v.r[j].src == SRC_STORE && !st)
				st = &v.r[j];
		}
		w = winner(k, st);
		if (!w)
			continue;
		memset(&it, 0, sizeof(it));
		it.key = w->key;
		it.version = w->version;
		it.table = w->table;
		it.vlen = w->vlen;
		memcpy(it.value, rec_value(&v, w), w->vlen);
		err = fn(&it, arg);
		if (err)
			break;
	}
out:
	free(v.r);
	free(v.arena);
	return err;
}

int xtxd_dump(const struct xtx_target *t, struct xtxd_ovf *s, int table, bool json,
	      struct xtxd_out *out, const char **why)
{
	struct dump_vec v = { .table = table };
	size_t i, j;
	int err;

	err = collect(t, s, &v, why);
	if (err)
		goto out;
	for (i = 0; i < v.n; i = j) {
		const struct dump_rec *k = NULL, *st = NULL, *w;

		for (j = i; j < v.n && v.r[j].table == v.r[i].table && v.r[j].key == v.r[i].key;
		     j++) {
			if (v.r[j].src == SRC_KERNEL && !k)
				k = &v.r[j];
			if (v.r[j].src == SRC_STORE && !st)
				st = &v.r[j];
		}
		w = winner(k, st);
		if (w)
			print_rec(out, &v, w, json);
	}
out:
	free(v.r);
	free(v.arena);
	return err;
}
