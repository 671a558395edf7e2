// SPDX-License-Identifier: GPL-2.0-only
/* Undecided transactions at start: highest versions, and their keys held (undecided.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xtx/hash.h>
#include <xtx/maps.h>
#include <xtx/proto.h>
#include "clock.h"
#include "undecided.h"

struct xtxd_vmax_key {
	uint64_t key, version;
	uint8_t table, used;
};

static struct xtxd_vmax_key *vmax_slot(const struct xtxd_vmax *m, uint8_t table, uint64_t key)
{
	size_t i = xtx_hash(table, key) & (m->cap - 1);

	while (m->k[i].used && (m->k[i].key != key || m->k[i].table != table))
		i = (i + 1) & (m->cap - 1);
	return &m->k[i];
}

static int vmax_grow(struct xtxd_vmax *m)
{
	struct xtxd_vmax nm = { .cap = m->cap ? m->cap * 2 : 1024 };
	size_t i;

	nm.k = calloc(nm.cap, sizeof(*nm.k));
	if (!nm.k)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++)
		if (m->k[i].used)
			*vmax_slot(&nm, m->k[i].table, m->k[i].key) = m->k[i];
	nm.n = m->n;
	free(m->k);
	*m = nm;
	return 0;
}

int xtxd_vmax_note(struct xtxd_vmax *m, uint8_t table, uint64_t key, uint64_t version)
{
	struct xtxd_vmax_key *k;

	if ((m->n + 1) * 2 > m->cap && vmax_grow(m))
		return -ENOMEM;
	k = vmax_slot(m, table, key);
	if (!k->used) {
		k->used = 1;
		k->table = table;
		k->key = key;
		m->n++;
	}
	if (version > k->version)
		k->version = version;
	return 0;
}

uint64_t xtxd_vmax_get(const struct xtxd_vmax *m, uint8_t table, uint64_t key)
{
	const struct xtxd_vmax_key *k;

	if (!m->cap)
		return 0;
	k = vmax_slot(m, table, key);
	return k->used ? k->version : 0;
}

void xtxd_vmax_free(struct xtxd_vmax *m)
{
	free(m->k);
	memset(m, 0, sizeof(*m));
}

int xtxd_holds_add(struct xtxd_holds *h, uint64_t txn, uint8_t table, uint64_t key)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		struct xtxd_hold *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n++] = (struct xtxd_hold){ .txn = txn, .key = key, .table = table };
	return 0;
}

void xtxd_holds_free(struct xtxd_holds *h)
{
	free(h->v);
	memset(h, 0, sizeof(*h));
}

int xtxd_holds_take(const struct xtx_target *t, const struct xtxd_holds *h, size_t *taken,
		    size_t *shared)
{
	struct xtx_lock_slot *locks = NULL;
	int64_t *pins = NULL;
	size_t locks_size = 0, pins_size = 0, i;
	struct xtx_info info;
	int err;

	*taken = *shared = 0;
	if (!h->n)
		return 0;
	err = xtx_target_info(t, &info);
	if (!err)
		err = xtx_target_map_array(t, XTX_MAP_LOCKS, info.lock_slots, sizeof(*locks),
					   (void **)&locks, &locks_size);
	if (!err)
		err = xtx_target_map_array(t, XTX_MAP_FAM_PINS, XTX_PIN_ENTRIES, sizeof(*pins),
					   (void **)&pins, &pins_size);
	for (i = 0; !err && i < h->n; i++) {
		const struct xtxd_hold *d = &h->v[i];
		uint64_t hash = xtx_hash(d->table, d->key);
		struct xtx_lock_slot *s = &locks[xtx_lock_slot_of(hash, info.lock_slots)];
		uint32_t table = d->table & (XTX_MAX_TABLES - 1);
		uint32_t pin = 1u << (XTX_LOCK_PIN_SHIFT + table);

		/* requests are held: nothing else moves the slot, so no spin word */
		if (s->excl && s->owner == d->txn) {
			if (!(s->flags & pin)) {
				s->flags |= pin;
				pins[XTX_PIN_USER_ROW * XTX_MAX_TABLES + table] += 1;
			}
			continue;
		}
		if (s->excl || s->shared) {
			(*shared)++;
			continue;
		}
		s->excl = 1;
		s->owner = d->txn;
		s->granted_ns = xtx_now_ns();
		s->key_hash = hash;
		s->flags = XTX_LOCKF_LOGGED | pin;
		s->gen++;
		pins[XTX_PIN_USER_ROW * XTX_MAX_TABLES + table] += 1;
		(*taken)++;
	}
	if (locks)
		munmap(locks, locks_size);
	if (pins)
		munmap(pins, pins_size);
	return err;
}
