// SPDX-License-Identifier: GPL-2.0-only
/* Transactions complete here but undecided at start, and their keys' locks (undecided.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <xtx/hash.h>
#include <xtx/maps.h>
#include <xtx/proto.h>
#include "clock.h"
#include "lockslot.h"
#include "undecided.h"

struct ukey {
	uint64_t txn, key;
	uint32_t slot;		/* its lock slot's index, once the take ran */
	uint8_t table;
	bool waiting;		/* the slot was another's: handed over once free (next()) */
};

static struct {
	pthread_mutex_t mu;
	uint64_t *txn;		/* sorted once ready */
	bool *done;
	size_t n, cap, left;
	struct ukey *k;
	size_t nk, kcap;
	size_t nwaiting;
	bool ready;
	bool resolver;
	uint64_t keep_ns;
} U = { .mu = PTHREAD_MUTEX_INITIALIZER };

void xtxd_undecided_set_resolver(bool runs, uint64_t keep_ns)
{
	U.resolver = runs;
	U.keep_ns = keep_ns;
}

uint64_t xtxd_undecided_keep_ns(void)
{
	return U.keep_ns;
}

bool xtxd_undecided_resolver(void)
{
	return U.resolver;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap * 2 : 64;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, c * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

int xtxd_undecided_add_txn(uint64_t txn)
{
	size_t cap = U.cap;

	if (grow((void **)&U.txn, &cap, U.n, sizeof(*U.txn)) ||
	    grow((void **)&U.done, &U.cap, U.n, sizeof(*U.done)))
		return -ENOMEM;
	U.txn[U.n] = txn;
	U.done[U.n] = false;
	U.n++;
	U.left++;
	return 0;
}

int xtxd_undecided_add_key(uint64_t txn, uint8_t table, uint64_t key)
{
	if (grow((void **)&U.k, &U.kcap, U.nk, sizeof(*U.k)))
		return -ENOMEM;
	U.k[U.nk++] = (struct ukey){ .txn = txn, .key = key, .table = table };
	return 0;
}

/* The slot's spin word, waited for a while: 0, or -EBUSY. */
static int take_spin(struct xtx_lock_slot *s)
{
	const struct timespec pause = { 0, 10 * 1000 };
	int i;

	for (i = 0; i < 100000; i++) {
		if (xtx_lockslot_trylock(s))
			return 0;
		nanosleep(&pause, NULL);
	}
	return -EBUSY;
}

int xtxd_undecided_take(const struct xtx_target *t, size_t *taken, size_t *shared)
{
	struct xtx_lock_slot *locks = NULL;
	int64_t *pins = NULL;
	size_t locks_size = 0, pins_size = 0, i;
	struct xtx_info info;
	int err;

	*taken = *shared = 0;
	if (!U.nk)
		return 0;
	err = xtx_target_info(t, &info);
	if (!err)
		err = xtx_target_map_array(t, XTX_MAP_LOCKS, info.lock_slots, sizeof(*locks),
					   (void **)&locks, &locks_size);
	if (!err)
		err = xtx_target_map_array(t, XTX_MAP_FAM_PINS, XTX_PIN_ENTRIES, sizeof(*pins),
					   (void **)&pins, &pins_size);
	for (i = 0; !err && i < U.nk; i++) {
		struct ukey *d = &U.k[i];
		uint64_t hash = xtx_hash(d->table, d->key);
		uint32_t table = d->table & (XTX_MAX_TABLES - 1);
		uint32_t pin = 1u << (XTX_LOCK_PIN_SHIFT + table);
		struct xtx_lock_slot *s;
		bool count = false;

		d->slot = xtx_lock_slot_of(hash, info.lock_slots);
		s = &locks[d->slot];
		/*
		 * Requests are held, but xtxd's own threads (an adopted
		 * start's settling) may free slots: the spin word, as XDP
		 */
		if (take_spin(s)) {
			err = -EBUSY;
			break;
		}
		if (s->excl && s->owner == d->txn) {
			/* an adopted program's hold: kept for the decision, counted once per table */
			s->flags |= XTX_LOCKF_LOGGED | XTX_LOCK_RECOVERED;
			count = !(s->flags & pin);
			s->flags |= pin;
			(*taken)++;
		} else if (s->excl || s->shared) {
			d->waiting = true;
			U.nwaiting++;
			(*shared)++;
		} else {
			s->excl = 1;
			s->owner = d->txn;
			s->granted_ns = xtx_now_ns();
			s->key_hash = hash;
			s->flags = XTX_LOCKF_LOGGED | XTX_LOCK_RECOVERED | pin;
			s->gen++;
			count = true;
			(*taken)++;
		}
		xtx_lockslot_unlock(s);
		if (count)
			__atomic_fetch_add(&pins[XTX_PIN_USER_ROW * XTX_MAX_TABLES + table], 1,
					   __ATOMIC_SEQ_CST);
	}
	if (locks)
		munmap(locks, locks_size);
	if (pins)
		munmap(pins, pins_size);
	return err;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void xtxd_undecided_ready(void)
{
	pthread_mutex_lock(&U.mu);
	if (!U.ready && U.n)
		qsort(U.txn, U.n, sizeof(*U.txn), cmp_u64);
	/* the keys were for the take: only those waiting for a slot are needed after it */
	if (!U.nwaiting) {
		free(U.k);
		U.k = NULL;
		U.nk = U.kcap = 0;
	}
	U.ready = true;
	pthread_mutex_unlock(&U.mu);
}

bool xtxd_undecided_is_ready(void)
{
	bool r;

	pthread_mutex_lock(&U.mu);
	r = U.ready;
	pthread_mutex_unlock(&U.mu);
	return r;
}

/* Under mu, once ready: txn's index, or -1. */
static ssize_t find(uint64_t txn)
{
	size_t lo = 0, hi = U.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (U.txn[mid] < txn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < U.n && U.txn[lo] == txn ? (ssize_t)lo : -1;
}

bool xtxd_undecided_has(uint64_t txn)
{
	ssize_t i;
	bool r = false;

	pthread_mutex_lock(&U.mu);
	if (U.ready && U.left) {
		i = find(txn);
		r = i >= 0 && !U.done[i];
	}
	pthread_mutex_unlock(&U.mu);
	return r;
}

void xtxd_undecided_done(uint64_t txn)
{
	ssize_t i;

	pthread_mutex_lock(&U.mu);
	if (U.ready && U.left) {
		i = find(txn);
		if (i >= 0 && !U.done[i]) {
			U.done[i] = true;
			U.left--;
		}
	}
	/* decided before the slot came to it: it waits no more */
	for (size_t k = 0; U.nwaiting && k < U.nk; k++) {
		if (U.k[k].waiting && U.k[k].txn == txn) {
			U.k[k].waiting = false;
			U.nwaiting--;
		}
	}
	pthread_mutex_unlock(&U.mu);
}

bool xtxd_undecided_next(uint64_t txn, uint32_t slot, uint64_t *next, uint8_t *table,
			 uint64_t *key)
{
	size_t i;
	bool found = false;

	pthread_mutex_lock(&U.mu);
	for (i = 0; U.ready && U.nwaiting && i < U.nk && !found; i++) {
		const struct ukey *d = &U.k[i];
		ssize_t t;

		if (!d->waiting || d->slot != slot || d->txn == txn)
			continue;
		t = find(d->txn);
		if (t < 0 || U.done[t])
			continue;
		*next = d->txn;
		*table = d->table;
		*key = d->key;
		found = true;
	}
	pthread_mutex_unlock(&U.mu);
	return found;
}

void xtxd_undecided_handed(uint64_t txn, uint32_t slot)
{
	size_t i;

	pthread_mutex_lock(&U.mu);
	for (i = 0; i < U.nk; i++) {
		struct ukey *d = &U.k[i];

		if (d->waiting && d->slot == slot && d->txn == txn) {
			d->waiting = false;
			U.nwaiting--;
		}
	}
	pthread_mutex_unlock(&U.mu);
}

size_t xtxd_undecided_count(void)
{
	size_t n;

	pthread_mutex_lock(&U.mu);
	n = U.left;
	pthread_mutex_unlock(&U.mu);
	return n;
}
