// SPDX-License-Identifier: GPL-2.0-only
/* The overflow store: an RCU hash table of the keys beyond the kernel cache, with exact filters. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <urcu.h>
#include <urcu/rculfhash.h>
#include <xtx/hash.h>
#include "overflow.h"
#include "valstore.h"

#define BLOOM_BITS	64
/* Bucket locks are striped: a rare path never holds more than one at a time. */
#define OVF_STRIPES	256
#define OVF_HT_MIN	1024	/* the hash table's buckets at first */

/*
 * A key's node holds its value's own length, not XTX_VALUE_MAX: most
 * values fit the 40-byte slot, and a store of millions of small keys must
 * not cost a kilobyte each.
 */
struct ovf_node {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	uint64_t key;
	uint64_t version;
	uint8_t table;
	uint16_t vlen;
	uint8_t value[];
};

/* Per kernel bucket, allocated with its first key and freed with its last. */
struct ovf_filter {
	uint32_t keys;
	uint32_t ctr[BLOOM_BITS];
};

struct xtxd_ovf {
	struct cds_lfht *ht;
	uint32_t nbuckets;
	uint64_t max;
	uint64_t count;			/* atomic: reserved before a new key goes in */
	struct ovf_filter **filter;	/* [nbuckets], under the bucket's lock */
	uint64_t *floor;		/* [nbuckets], under the bucket's lock */
	pthread_mutex_t stripe[OVF_STRIPES];
	/*
	 * The hash table grows when count reaches grow_at, by our own
	 * synchronous cds_lfht_resize: liburcu 0.13's lazy auto-resize
	 * queues its work before it marks it queued, and when the worker
	 * runs it first (it preempts us on our CPU) the mark stays set and
	 * the table never grows again: chains of hundreds of keys.
	 */
	uint64_t grow_at;
	int growing;
	int valstore_fd;		/* XTX_MAP_BIGVAL, or -1: valstore.h */
};

/* This thread's writes are not durable when they reach the store: xtxd_ovf_copy_later(). */
static __thread bool copy_later;
/* This thread is installing decided writes: xtxd_ovf_past_max(). */
static __thread bool past_max;

struct ovf_lookup {
	uint8_t table;
	uint64_t key;
};

/*
 * The table's own hash is mixed once more: xtx_bucket_of() already spends
 * the low word's top bits, and keys of one kernel bucket should still
 * spread over the hash table.
 */
static unsigned long ovf_hash(uint8_t table, uint64_t key)
{
	return (unsigned long)xtx_mix64(xtx_hash(table, key) ^ 0x6a09e667f3bcc909ull);
}

static int ovf_match(struct cds_lfht_node *node, const void *arg)
{
	const struct ovf_node *n = caa_container_of(node, struct ovf_node, node);
	const struct ovf_lookup *l = arg;

	return n->key == l->key && n->table == l->table;
}

static void ovf_node_free_rcu(struct rcu_head *head)
{
	free(caa_container_of(head, struct ovf_node, rcu));
}

struct xtxd_ovf *xtxd_ovf_new(uint32_t nbuckets, uint64_t max)
{
	struct xtxd_ovf *s;
	int i;

	if (!nbuckets)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->nbuckets = nbuckets;
	s->max = max;
	s->valstore_fd = -1;
	/* calloc'd pages stay untouched until a bucket is used: cheap even at 2^25 buckets */
	s->filter = calloc(nbuckets, sizeof(*s->filter));
	s->floor = calloc(nbuckets, sizeof(*s->floor));
	s->ht = cds_lfht_new(OVF_HT_MIN, OVF_HT_MIN, 0, CDS_LFHT_ACCOUNTING, NULL);
	s->grow_at = OVF_HT_MIN;
	if (!s->filter || !s->floor || !s->ht) {
		if (s->ht)
			cds_lfht_destroy(s->ht, NULL);
		free(s->filter);
		free(s->floor);
		free(s);
		return NULL;
	}
	for (i = 0; i < OVF_STRIPES; i++)
		pthread_mutex_init(&s->stripe[i], NULL);
	return s;
}

void xtxd_ovf_free(struct xtxd_ovf *s)
{
	struct cds_lfht_iter iter;
	struct ovf_node *n;
	uint32_t b;
	int i;

	if (!s)
		return;
	rcu_read_lock();
	cds_lfht_for_each_entry(s->ht, &iter, n, node) {
		if (!cds_lfht_del(s->ht, &n->node))
			call_rcu(&n->rcu, ovf_node_free_rcu);
	}
	rcu_read_unlock();
	/* every node freed before the table goes */
	rcu_barrier();
	cds_lfht_destroy(s->ht, NULL);
	for (b = 0; b < s->nbuckets; b++)
		free(s->filter[b]);
	free(s->filter);
	free(s->floor);
	for (i = 0; i < OVF_STRIPES; i++)
		pthread_mutex_destroy(&s->stripe[i]);
	free(s);
}

/* glibc's malloc: a size word per chunk, chunks in 16-byte steps */
#define OVF_MALLOC_OVERHEAD	16

/* What malloc spends on a node of vlen value bytes. */
static size_t ovf_node_bytes(size_t vlen)
{
	size_t n = sizeof(struct ovf_node) + vlen + OVF_MALLOC_OVERHEAD;

	return (n + 15) & ~(size_t)15;
}

void xtxd_ovf_cost(size_t vlen, size_t *per_key, size_t *per_spilling_bucket, size_t *per_bucket)
{
	if (vlen > XTX_VALUE_MAX)
		vlen = XTX_VALUE_MAX;
	/* the table grows to a bucket pointer per key (grow_at) */
	*per_key = ovf_node_bytes(vlen) + sizeof(void *);
	*per_spilling_bucket = sizeof(struct ovf_filter) + OVF_MALLOC_OVERHEAD;
	*per_bucket = sizeof(struct ovf_filter *) + sizeof(uint64_t);
}

void xtxd_ovf_set_valstore(struct xtxd_ovf *s, int fd)
{
	s->valstore_fd = fd;
}

void xtxd_ovf_copy_later(bool on)
{
	copy_later = on;
}

void xtxd_ovf_past_max(bool on)
{
	past_max = on;
}

uint32_t xtxd_ovf_nbuckets(const struct xtxd_ovf *s)
{
	return s->nbuckets;
}

uint64_t xtxd_ovf_max(const struct xtxd_ovf *s)
{
	return s->max;
}

uint64_t xtxd_ovf_count(const struct xtxd_ovf *s)
{
	return __atomic_load_n(&s->count, __ATOMIC_RELAXED);
}

uint32_t xtxd_ovf_bucket_of(const struct xtxd_ovf *s, uint8_t table, uint64_t key)
{
	return xtx_bucket_of(xtx_hash(table, key), s->nbuckets);
}

void xtxd_ovf_lock(struct xtxd_ovf *s, uint32_t bucket)
{
	pthread_mutex_lock(&s->stripe[bucket % OVF_STRIPES]);
}

void xtxd_ovf_unlock(struct xtxd_ovf *s, uint32_t bucket)
{
	pthread_mutex_unlock(&s->stripe[bucket % OVF_STRIPES]);
}

/*
 * The item a node holds.  Canonical: bytes past vlen are zero, so equal
 * items compare equal; dirty says how many bytes past vlen out may hold
 * from before (XTX_VALUE_MAX when unknown), so a walk zeroes no more.
 */
static void item_of_node(struct xtxd_ovf_item *out, const struct ovf_node *n, uint16_t dirty)
{
	out->key = n->key;
	out->version = n->version;
	out->table = n->table;
	out->vlen = n->vlen;
	memcpy(out->value, n->value, n->vlen);
	if (dirty > n->vlen)
		memset(out->value + n->vlen, 0, dirty - n->vlen);
}

/* Under rcu_read_lock: the node holding (table, key), or NULL. */
static struct ovf_node *ovf_find(struct xtxd_ovf *s, uint8_t table, uint64_t key,
				 struct cds_lfht_iter *iter)
{
	struct ovf_lookup l = { .table = table, .key = key };
	struct cds_lfht_node *node;

	cds_lfht_lookup(s->ht, ovf_hash(table, key), ovf_match, &l, iter);
	node = cds_lfht_iter_get_node(iter);
	return node ? caa_container_of(node, struct ovf_node, node) : NULL;
}

int xtxd_ovf_get(struct xtxd_ovf *s, uint8_t table, uint64_t key, struct xtxd_ovf_item *out)
{
	struct cds_lfht_iter iter;
	struct ovf_node *n;

	rcu_read_lock();
	n = ovf_find(s, table, key, &iter);
	if (n)
		item_of_node(out, n, XTX_VALUE_MAX);
	rcu_read_unlock();
	return n ? 0 : -ENOENT;
}

static struct ovf_node *ovf_node_new(const struct xtxd_ovf_item *it)
{
	uint16_t vlen = it->vlen > XTX_VALUE_MAX ? XTX_VALUE_MAX : it->vlen;
	struct ovf_node *n = calloc(1, sizeof(*n) + vlen);

	if (!n)
		return NULL;
	cds_lfht_node_init(&n->node);
	n->key = it->key;
	n->version = it->version;
	n->table = it->table;
	n->vlen = vlen;
	memcpy(n->value, it->value, vlen);
	return n;
}

/* Holding the bucket lock. */
static int filter_add(struct xtxd_ovf *s, uint64_t h)
{
	uint32_t b = xtx_bucket_of(h, s->nbuckets);
	struct ovf_filter *f = s->filter[b];

	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return -ENOMEM;
		s->filter[b] = f;
	}
	f->keys++;
	f->ctr[xtx_bloom_bit_of(h)]++;
	return 0;
}

static void filter_remove(struct xtxd_ovf *s, uint64_t h)
{
	uint32_t b = xtx_bucket_of(h, s->nbuckets);
	struct ovf_filter *f = s->filter[b];

	if (!f)
		return;
	f->ctr[xtx_bloom_bit_of(h)]--;
	if (!--f->keys) {
		/* only ever read under the bucket lock, so no grace period is needed */
		free(f);
		s->filter[b] = NULL;
	}
}

/*
 * Outside any RCU read-side section: at most a key a bucket, grown 2x
 * at a time.  The thread that crosses the mark resizes; others go on.
 */
static void maybe_grow(struct xtxd_ovf *s)
{
	uint64_t count = __atomic_load_n(&s->count, __ATOMIC_RELAXED), size;

	if (count < __atomic_load_n(&s->grow_at, __ATOMIC_RELAXED) ||
	    __atomic_exchange_n(&s->growing, 1, __ATOMIC_ACQUIRE))
		return;
	size = __atomic_load_n(&s->grow_at, __ATOMIC_RELAXED);
	if (count >= size) {
		while (size <= count)
			size *= 2;
		cds_lfht_resize(s->ht, size);
		__atomic_store_n(&s->grow_at, size, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&s->growing, 0, __ATOMIC_RELEASE);
}

int xtxd_ovf_put(struct xtxd_ovf *s, const struct xtxd_ovf_item *it)
{
	uint64_t h = xtx_hash(it->table, it->key);
	struct ovf_lookup l = { .table = it->table, .key = it->key };
	struct cds_lfht_iter iter;
	struct ovf_node *old, *n;
	int err = 1;

	rcu_read_lock();
	old = ovf_find(s, it->table, it->key, &iter);
	if (old && it->version < old->version) {
		err = 0;
		goto out;
	}
	n = ovf_node_new(it);
	if (!n) {
		err = -ENOMEM;
		goto out;
	}
	if (old) {
		/*
		 * The value store's copy first: from now on it is never older
		 * than the node XDP would otherwise ask xtxd for.  A write not
		 * durable yet only takes the old copy away (copy_later).
		 */
		if ((old->vlen > XTX_VALUE_INLINE || it->vlen > XTX_VALUE_INLINE) &&
		    (copy_later ? xtxd_valstore_del(s->valstore_fd, it->table, it->key) :
				  xtxd_valstore_put(s->valstore_fd, it))) {
			free(n);
			err = -EIO;
			goto out;
		}
		/* readers see the old item or the new one, never a torn mix */
		if (cds_lfht_replace(s->ht, &iter, ovf_hash(it->table, it->key), ovf_match, &l,
				     &n->node)) {
			/* only a writer without the bucket lock could have raced us */
			free(n);
			xtxd_valstore_del(s->valstore_fd, it->table, it->key);
			err = -EAGAIN;
			goto out;
		}
		call_rcu(&old->rcu, ovf_node_free_rcu);
		goto out;
	}
	/* reserve first: concurrent inserts into other buckets never overshoot max */
	if (__atomic_fetch_add(&s->count, 1, __ATOMIC_RELAXED) >= s->max && !past_max) {
		__atomic_fetch_sub(&s->count, 1, __ATOMIC_RELAXED);
		free(n);
		err = -ENOSPC;
		goto out;
	}
	if (filter_add(s, h)) {
		__atomic_fetch_sub(&s->count, 1, __ATOMIC_RELAXED);
		free(n);
		err = -ENOMEM;
		goto out;
	}
	if (cds_lfht_add_unique(s->ht, ovf_hash(it->table, it->key), ovf_match, &l, &n->node) !=
	    &n->node) {
		filter_remove(s, h);
		__atomic_fetch_sub(&s->count, 1, __ATOMIC_RELAXED);
		free(n);
		err = -EAGAIN;
	} else if (it->vlen > XTX_VALUE_INLINE && !copy_later) {
		/* a new key: the node first, as a copy it lacks only costs a trip to xtxd */
		xtxd_valstore_put(s->valstore_fd, it);
	}
out:
	rcu_read_unlock();
	if (err == 1)
		maybe_grow(s);
	return err;
}

int xtxd_ovf_del(struct xtxd_ovf *s, uint8_t table, uint64_t key, uint64_t below,
		 struct xtxd_ovf_item *old)
{
	struct cds_lfht_iter iter;
	struct ovf_node *n;
	int removed = 0;

	rcu_read_lock();
	n = ovf_find(s, table, key, &iter);
	/* the value store's copy goes first: it must never outlive the node */
	if (n && n->version < below && n->vlen > XTX_VALUE_INLINE)
		xtxd_valstore_del(s->valstore_fd, table, key);
	if (n && n->version < below && !cds_lfht_del(s->ht, &n->node)) {
		if (old)
			item_of_node(old, n, XTX_VALUE_MAX);
		filter_remove(s, xtx_hash(table, key));
		__atomic_fetch_sub(&s->count, 1, __ATOMIC_RELAXED);
		call_rcu(&n->rcu, ovf_node_free_rcu);
		removed = 1;
	}
	rcu_read_unlock();
	return removed;
}

uint64_t xtxd_ovf_bloom(struct xtxd_ovf *s, uint32_t bucket)
{
	const struct ovf_filter *f;
	uint64_t bloom = 0;
	int i;

	if (bucket >= s->nbuckets)
		return 0;
	f = s->filter[bucket];
	if (!f)
		return 0;
	for (i = 0; i < BLOOM_BITS; i++)
		if (f->ctr[i])
			bloom |= 1ull << i;
	return bloom;
}

uint64_t xtxd_ovf_floor(struct xtxd_ovf *s, uint32_t bucket)
{
	return bucket < s->nbuckets ? s->floor[bucket] : 0;
}

void xtxd_ovf_raise_floor(struct xtxd_ovf *s, uint32_t bucket, uint64_t version)
{
	if (bucket < s->nbuckets && s->floor[bucket] < version)
		s->floor[bucket] = version;
}

int xtxd_ovf_foreach(struct xtxd_ovf *s, int (*fn)(const struct xtxd_ovf_item *it, void *arg),
		     void *arg)
{
	struct xtxd_ovf_item *it = calloc(1, sizeof(*it));
	struct cds_lfht_iter iter;
	struct ovf_node *n;
	uint16_t dirty = 0;
	int ret = 0;

	if (!it)
		return -ENOMEM;
	rcu_read_lock();
	cds_lfht_for_each_entry(s->ht, &iter, n, node) {
		item_of_node(it, n, dirty);
		dirty = n->vlen;
		ret = fn(it, arg);
		if (ret)
			break;
	}
	rcu_read_unlock();
	free(it);
	return ret;
}

void xtxd_ovf_copy_refresh(struct xtxd_ovf *s, uint8_t table, uint64_t key, uint64_t version)
{
	uint32_t b = xtxd_ovf_bucket_of(s, table, key);
	struct cds_lfht_iter iter;
	struct xtxd_ovf_item it;
	struct ovf_node *n;

	if (s->valstore_fd < 0)
		return;
	xtxd_ovf_lock(s, b);
	rcu_read_lock();
	n = ovf_find(s, table, key, &iter);
	/* a later write of the key may be in, not durable yet: then its own refresh copies it */
	if (n && n->version == version && n->vlen > XTX_VALUE_INLINE) {
		item_of_node(&it, n, XTX_VALUE_MAX);
		xtxd_valstore_put(s->valstore_fd, &it);
	}
	rcu_read_unlock();
	xtxd_ovf_unlock(s, b);
}
