// SPDX-License-Identifier: GPL-2.0-only
/* The resolver's changes to the live store and lock table (resolve_apply.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <xtx/hash.h>
#include "clock.h"
#include "lockslot.h"
#include "store/overflow.h"
#include "resolve_apply.h"

#define BUCKET_WAIT_NS		(2ull * 1000 * 1000 * 1000)
#define SLOT_TRIES		200

static void pause_ns(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

static int way_of(const struct xtx_kv_bucket *b, uint8_t table, uint64_t key)
{
	int w;

	for (w = 0; w < XTX_KV_WAYS; w++)
		if (b->key[w] == key && b->table[w] == table &&
		    (b->flags[w] & (XTX_KVF_VALID | XTX_KVF_TOMB)))
			return w;
	return -1;
}

int xtxd_live_version(struct xtxd_live *l, uint8_t table, uint64_t key, uint64_t *version)
{
	uint64_t h = xtx_hash(table, key);
	uint32_t bi = xtx_bucket_of(h, l->nbuckets);
	struct xtx_kv_bucket *b = &l->kv[bi];
	struct xtxd_ovf_item it;
	int w = way_of(b, table, key);

	if (w >= 0) {
		*version = b->version[w];
		return b->flags[w] & XTX_KVF_VALID ? 1 : 2;
	}
	if (!xtxd_ovf_get(l->store, table, key, &it)) {
		*version = it.version;
		return 1;
	}
	*version = b->vfloor;
	return 0;
}

/* The bucket lock as XDP takes it; a rare-path hold past the lease is taken over. */
static int bucket_lock(struct xtx_kv_bucket *b)
{
	uint64_t deadline = xtx_now_ns() + BUCKET_WAIT_NS, old;
	int64_t lease = XTX_KV_LEASE_DEFAULT_NS;

	for (;;) {
		old = __atomic_load_n(&b->lock, __ATOMIC_RELAXED);
		if ((!old || (old != XTX_KV_LOCK_FAST &&
			      (int64_t)(xtx_now_ns() - (old & ~1ull)) > lease)) &&
		    __atomic_compare_exchange_n(&b->lock, &old, XTX_KV_LOCK_FAST, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return 0;
		if (xtx_now_ns() > deadline)
			return -ETIMEDOUT;
		pause_ns(20 * 1000);
	}
}

/* A value of up to XTX_VALUE_INLINE bytes into way w. */
static void set_way(struct xtx_kv_bucket *b, int w, const struct xtx_log_write *wr, uint8_t keep)
{
	const struct xtx_log_entry *e = &wr->e;

	b->key[w] = e->key;
	b->table[w] = e->table;
	b->version[w] = e->version;
	b->vlen[w] = (uint8_t)wr->vlen;
	memset(b->value[w], 0, XTX_VALUE_INLINE);
	memcpy(b->value[w], wr->value, wr->vlen > XTX_VALUE_INLINE ? XTX_VALUE_INLINE : wr->vlen);
	b->flags[w] = XTX_KVF_VALID | XTX_KVF_DIRTY | keep;
}

/* Both locks held: wr into the overflow store, its filter bit set.  1, or a negative errno. */
static int store_put(struct xtxd_live *l, struct xtx_kv_bucket *b, const struct xtx_log_write *wr,
		     uint64_t h)
{
	struct xtxd_ovf_item it;
	int ret;

	memset(&it, 0, sizeof(it));
	it.key = wr->e.key;
	it.table = wr->e.table;
	it.version = wr->e.version;
	it.vlen = wr->vlen > XTX_VALUE_MAX ? XTX_VALUE_MAX : wr->vlen;
	memcpy(it.value, wr->value, it.vlen);
	ret = xtxd_ovf_put(l->store, &it);
	if (ret < 0)
		return ret;
	__atomic_fetch_or(&b->bloom, 1ull << xtx_bloom_bit_of(h), __ATOMIC_SEQ_CST);
	return ret;
}

static void raise_floor(struct xtxd_live *l, struct xtx_kv_bucket *b, uint32_t bi, uint64_t v)
{
	xtxd_ovf_raise_floor(l->store, bi, v);
	if (b->vfloor < v)
		b->vfloor = v;
}

/* Both locks held: the write against the kernel way or the store's copy. */
static int install_locked(struct xtxd_live *l, struct xtx_kv_bucket *b, uint32_t bi,
			  const struct xtx_log_write *wr, uint64_t h)
{
	const struct xtx_log_entry *e = &wr->e;
	bool del = e->flags & XTX_LOGF_DELETE, big = !del && wr->vlen > XTX_VALUE_INLINE, in_store;
	struct xtxd_ovf_item cur;
	int w = way_of(b, e->table, e->key), i;

	if (w >= 0) {
		/*
		 * A big write of this key is with xtxd (or was, its answer
		 * lost): the store may already hold a newer version than the
		 * way, and a write here would be served, and written back,
		 * over it.  The caller waits for TC to evict or restore it.
		 */
		if (b->flags[w] & XTX_KVF_EVICTING)
			return -EAGAIN;
		if (b->version[w] >= e->version)
			return 0;
		if (big) {
			/*
			 * A value the kernel cannot hold: it goes to the store
			 * (over the store's older copy, if any), and the kernel's
			 * copy, live or tombstone, is dropped, as an eviction
			 * moves a key out, both locks held: from then on the
			 * filter sends the key's ops to the rare path, which
			 * finds it in the store.  Nothing is written back: the
			 * kernel's copy is older.
			 */
			i = store_put(l, b, wr, h);
			if (i < 0)
				return i;
			b->flags[w] = 0;
			return 1;
		}
		if (!del) {
			set_way(b, w, wr, b->flags[w] & XTX_KVF_IN_USER);
		} else if (b->flags[w] & XTX_KVF_IN_USER) {
			/* the store's copy goes when this tombstone is written back */
			b->version[w] = e->version;
			b->flags[w] = XTX_KVF_TOMB | XTX_KVF_DIRTY | XTX_KVF_IN_USER;
		} else {
			b->flags[w] = 0;
			raise_floor(l, b, bi, e->version);
		}
		return 1;
	}
	in_store = !xtxd_ovf_get(l->store, e->table, e->key, &cur);
	if (in_store && cur.version >= e->version)
		return 0;
	if (del) {
		xtxd_ovf_del(l->store, e->table, e->key, e->version, NULL);
		raise_floor(l, b, bi, e->version);
		return 1;
	}
	for (i = 0; !big && i < XTX_KV_WAYS; i++) {
		if (!(b->flags[i] & (XTX_KVF_VALID | XTX_KVF_TOMB))) {
			/*
			 * A store copy, if any, is older: the dirty way is written
			 * back over it, and IN_USER makes a delete of the way leave
			 * a tombstone, or the store's copy would come back
			 */
			set_way(b, i, wr, in_store ? XTX_KVF_IN_USER : 0);
			return 1;
		}
	}
	return store_put(l, b, wr, h);
}

int xtxd_live_bucket_lock(struct xtxd_live *l, uint32_t bi)
{
	int err = bucket_lock(&l->kv[bi]);

	if (!err)
		xtxd_ovf_lock(l->store, bi);
	return err;
}

void xtxd_live_bucket_unlock(struct xtxd_live *l, uint32_t bi)
{
	xtxd_ovf_unlock(l->store, bi);
	__atomic_store_n(&l->kv[bi].lock, 0, __ATOMIC_RELEASE);
}

int xtxd_live_get_locked(struct xtxd_live *l, uint32_t bi, uint8_t table, uint64_t key,
			 struct xtxd_ovf_item *it)
{
	struct xtx_kv_bucket *b = &l->kv[bi];
	int w = way_of(b, table, key), in_store;
	struct xtxd_ovf_item st;

	if (w >= 0 && !(b->flags[w] & XTX_KVF_VALID))
		return 0;	/* a tombstone hides the store's older copy */
	in_store = !xtxd_ovf_get(l->store, table, key, &st);
	if (w >= 0 && (!in_store || b->version[w] >= st.version)) {
		memset(it, 0, sizeof(*it));
		it->key = key;
		it->table = table;
		it->version = b->version[w];
		it->vlen = b->vlen[w] > XTX_VALUE_INLINE ? XTX_VALUE_INLINE : b->vlen[w];
		memcpy(it->value, b->value[w], it->vlen);
		return 1;
	}
	if (!in_store)
		return 0;
	*it = st;
	return 1;
}

struct key_list {
	struct xtxd_ovf_item *v;	/* table and key only */
	size_t n, cap;
	bool (*keep)(uint8_t table, uint64_t key, void *arg);
	void *arg;
};

static int list_store_key(const struct xtxd_ovf_item *it, void *arg)
{
	struct key_list *k = arg;

	if (k->keep && !k->keep(it->table, it->key, k->arg))
		return 0;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 1024;
		struct xtxd_ovf_item *v = realloc(k->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		k->v = v;
		k->cap = cap;
	}
	k->v[k->n].table = it->table;
	k->v[k->n++].key = it->key;
	return 0;
}

int xtxd_live_store_keys(struct xtxd_live *l, bool (*keep)(uint8_t table, uint64_t key, void *arg),
			 void *arg, struct xtxd_ovf_item **keys, size_t *n)
{
	struct key_list k = { .keep = keep, .arg = arg };
	int err = xtxd_ovf_foreach(l->store, list_store_key, &k);

	if (err) {
		free(k.v);
		k.v = NULL;
		k.n = 0;
	}
	*keys = k.v;
	*n = k.n;
	return err;
}

long xtxd_live_wipe(struct xtxd_live *l)
{
	struct xtxd_ovf_item *keys;
	long removed = 0;
	uint32_t bi;
	size_t i, n;
	int err, w;

	/* the store first: the kernel filters are then cleared to match it */
	err = xtxd_live_store_keys(l, NULL, NULL, &keys, &n);
	for (i = 0; !err && i < n; i++) {
		bi = xtx_bucket_of(xtx_hash(keys[i].table, keys[i].key), l->nbuckets);
		err = xtxd_live_bucket_lock(l, bi);
		if (err)
			break;
		removed += xtxd_ovf_del(l->store, keys[i].table, keys[i].key, UINT64_MAX, NULL) > 0;
		xtxd_live_bucket_unlock(l, bi);
	}
	free(keys);
	for (bi = 0; !err && bi < l->nbuckets; bi++) {
		struct xtx_kv_bucket *b = &l->kv[bi];

		err = xtxd_live_bucket_lock(l, bi);
		if (err)
			break;
		for (w = 0; w < XTX_KV_WAYS; w++) {
			removed += (b->flags[w] & XTX_KVF_VALID) != 0;
			b->flags[w] = 0;
		}
		b->bloom = xtxd_ovf_bloom(l->store, bi);
		xtxd_live_bucket_unlock(l, bi);
	}
	return err ? err : removed;
}

uint64_t xtxd_live_max_floor(struct xtxd_live *l)
{
	uint64_t m = 0, f;
	uint32_t bi;

	for (bi = 0; bi < l->nbuckets; bi++) {
		f = __atomic_load_n(&l->kv[bi].vfloor, __ATOMIC_RELAXED);
		m = f > m ? f : m;
		xtxd_ovf_lock(l->store, bi);
		f = xtxd_ovf_floor(l->store, bi);
		xtxd_ovf_unlock(l->store, bi);
		m = f > m ? f : m;
	}
	return m;
}

int xtxd_live_raise_floors(struct xtxd_live *l, uint64_t v)
{
	uint32_t bi;
	int err;

	for (bi = 0; bi < l->nbuckets; bi++) {
		err = xtxd_live_bucket_lock(l, bi);
		if (err)
			return err;
		raise_floor(l, &l->kv[bi], bi, v);
		xtxd_live_bucket_unlock(l, bi);
	}
	return 0;
}

int xtxd_live_install(struct xtxd_live *l, const struct xtx_log_write *w)
{
	const struct xtx_log_entry *e = &w->e;
	uint64_t h = xtx_hash(e->table, e->key);
	uint32_t bi = xtx_bucket_of(h, l->nbuckets);
	struct xtx_kv_bucket *b = &l->kv[bi];
	uint64_t deadline = xtx_now_ns() + BUCKET_WAIT_NS;
	int err;

	for (;;) {
		err = bucket_lock(b);
		if (err)
			return err;
		xtxd_ovf_lock(l->store, bi);
		err = install_locked(l, b, bi, w, h);
		xtxd_ovf_unlock(l->store, bi);
		__atomic_store_n(&b->lock, 0, __ATOMIC_RELEASE);
		/* an eviction in flight ends with xtxd's answer: let TC have the bucket */
		if (err != -EAGAIN || xtx_now_ns() > deadline)
			return err;
		pause_ns(100 * 1000);
	}
}

/* Whether txn holds the slot: exclusively, or one of its shared holds. */
static bool held_by(const struct xtx_lock_slot *s, uint64_t txn)
{
	uint16_t shared = __atomic_load_n(&s->shared, __ATOMIC_RELAXED);
	int i;

	if (__atomic_load_n(&s->excl, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&s->owner, __ATOMIC_RELAXED) == txn)
		return true;
	for (i = 0; i < XTX_LOCK_SHARERS && i < shared; i++)
		if (__atomic_load_n(&s->sharer[i], __ATOMIC_RELAXED) == txn)
			return true;
	return false;
}

static struct xtx_lock_slot *slot_of(struct xtxd_live *l, uint8_t table, uint64_t key)
{
	return &l->locks[xtx_lock_slot_of(xtx_hash(table, key), l->lock_slots)];
}

bool xtxd_live_lock_held(struct xtxd_live *l, uint64_t txn, uint8_t table, uint64_t key)
{
	return held_by(slot_of(l, table, key), txn);
}

/*
 * Takes away txn's holds of s (its spin word held): the exclusive one and
 * each of its shared ones, never another's.  Returns the pinned tables
 * to uncount when the slot went free, else 0.
 */
static uint32_t drop_holds(struct xtx_lock_slot *s, uint64_t txn)
{
	uint32_t pins;
	int i;

	if (s->excl && s->owner == txn) {
		s->excl = 0;
		s->owner = 0;
	}
	for (i = s->shared - 1; i >= 0; i--) {
		if (i >= XTX_LOCK_SHARERS || s->sharer[i] != txn)
			continue;
		s->shared--;
		s->sharer[i] = s->sharer[s->shared];
		s->sharer[s->shared] = 0;
	}
	if (s->shared || s->excl)
		return 0;
	/* free now: a new gen, so the tokens handed out for it go stale */
	pins = s->flags >> XTX_LOCK_PIN_SHIFT;
	s->flags = 0;
	s->gen++;
	return pins;
}

int xtxd_live_unlock(struct xtxd_live *l, uint64_t txn, uint8_t table, uint64_t key)
{
	struct xtx_lock_slot *s = slot_of(l, table, key);
	uint32_t pins, t;
	int i;

	/* looked at only under the spin word: XDP moves holds about while it holds it */
	for (i = 0; i < SLOT_TRIES; i++) {
		if (!xtx_lockslot_trylock(s)) {
			pause_ns(50 * 1000);
			continue;
		}
		if (!held_by(s, txn)) {
			xtx_lockslot_unlock(s);
			return 0;
		}
		pins = drop_holds(s, txn);
		xtx_lockslot_unlock(s);
		/* as XDP does (bpf/lib/pins.h), but in user space's own row */
		for (t = 0; t < XTX_MAX_TABLES; t++)
			if (pins & (1u << t))
				__atomic_fetch_sub(&l->pins[XTX_PIN_USER_ROW * XTX_MAX_TABLES + t], 1,
						   __ATOMIC_SEQ_CST);
		return 1;
	}
	return -EBUSY;
}

uint32_t xtxd_live_slot_index(const struct xtxd_live *l, uint8_t table, uint64_t key)
{
	return xtx_lock_slot_of(xtx_hash(table, key), l->lock_slots);
}

int xtxd_live_pass(struct xtxd_live *l, uint64_t txn, uint8_t table, uint64_t key, uint64_t to,
		   uint8_t to_table, uint64_t to_key)
{
	struct xtx_lock_slot *s = slot_of(l, table, key);
	uint32_t old, pin = 1u << (XTX_LOCK_PIN_SHIFT + (to_table & (XTX_MAX_TABLES - 1))), t;
	int i;

	for (i = 0; i < SLOT_TRIES; i++) {
		if (!xtx_lockslot_trylock(s)) {
			pause_ns(50 * 1000);
			continue;
		}
		if (!s->excl || s->owner != txn || s->shared) {
			xtx_lockslot_unlock(s);
			return 0;
		}
		old = s->flags >> XTX_LOCK_PIN_SHIFT;
		s->owner = to;
		s->excl = 1;
		s->key_hash = xtx_hash(to_table, to_key);
		s->granted_ns = xtx_now_ns();
		s->flags = XTX_LOCKF_LOGGED | XTX_LOCK_RECOVERED | pin;
		s->gen++;
		xtx_lockslot_unlock(s);
		/* the pinned tables as user space counts them (pins.h): old ones out, the new in */
		for (t = 0; t < XTX_MAX_TABLES; t++)
			if (old & (1u << t))
				__atomic_fetch_sub(&l->pins[XTX_PIN_USER_ROW * XTX_MAX_TABLES + t], 1,
						   __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&l->pins[XTX_PIN_USER_ROW * XTX_MAX_TABLES +
					    (to_table & (XTX_MAX_TABLES - 1))], 1, __ATOMIC_SEQ_CST);
		return 1;
	}
	return -EBUSY;
}
