// SPDX-License-Identifier: GPL-2.0-only
/* Sizes that follow the data: xtxd --capacity KEYS as map sizes, and what they cost in memory. */
#include <math.h>
#include <xtx/kv.h>
#include <xtx/maps.h>
#include "rare/rare.h"
#include "sizing.h"

_Static_assert(XTXD_CAPACITY_MAX <= XTXD_OVERFLOW_MAX_LIMIT, "a capacity the store can take");

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

void xtxd_size_for(uint64_t keys, struct xtxd_sizing *s)
{
	/* keys <= 2^32: the products below stay far from overflowing */
	uint64_t slots = div_up(keys * XTXD_PROVISION_NUM, XTXD_PROVISION_DEN);
	uint64_t buckets = div_up(slots, XTX_KV_WAYS);
	uint64_t ovf = keys + div_up(keys, XTXD_OVF_HEADROOM_DIV);

	s->capacity = keys;
	s->kv_capped = buckets > XTX_KV_BUCKETS_MAX;
	s->kv_buckets = s->kv_capped ? XTX_KV_BUCKETS_MAX : (uint32_t)(buckets ?: 1);
	s->lock_capped = slots > XTX_LOCK_SLOTS_MAX;
	s->lock_slots = s->lock_capped ? XTX_LOCK_SLOTS_MAX : (uint32_t)(slots ?: 1);
	s->ovf_capped = ovf > XTXD_OVERFLOW_MAX_LIMIT;
	s->overflow_max = s->ovf_capped ? XTXD_OVERFLOW_MAX_LIMIT : (ovf ?: 1);
}

void xtxd_spill_expected(uint64_t keys, uint32_t nbuckets, unsigned int ways, uint64_t *spill_keys,
			 uint64_t *spill_buckets)
{
	double lambda, p, below = 0, upto = 0, filled = 0;
	unsigned int k;

	*spill_keys = *spill_buckets = 0;
	if (!keys || !nbuckets)
		return;
	lambda = (double)keys / nbuckets;
	/* P(X = k) for k < ways: what a bucket holds when it does not spill */
	p = exp(-lambda);
	for (k = 0; k < ways; k++) {
		below += p;
		filled += k * p;
		p *= lambda / (k + 1);
	}
	upto = below + p;	/* P(X <= ways) */
	/* E[(X - ways)+] = lambda - E[min(X, ways)] */
	filled += ways * (1.0 - below);
	*spill_keys = (uint64_t)llround(fmax(0.0, lambda - filled) * nbuckets);
	*spill_buckets = (uint64_t)llround(fmax(0.0, 1.0 - upto) * nbuckets);
	if (*spill_keys > keys)
		*spill_keys = keys;
}

void xtxd_memory_estimate(uint64_t keys, const struct xtxd_sizing *s,
			  const struct xtxd_ovf_cost *c, struct xtxd_memory *m)
{
	uint64_t spill_buckets;

	m->kv_bytes = (uint64_t)s->kv_buckets * sizeof(struct xtx_kv_bucket);
	m->lock_bytes = (uint64_t)s->lock_slots * sizeof(struct xtx_lock_slot);
	xtxd_spill_expected(keys, s->kv_buckets, XTX_KV_WAYS, &m->spill_keys, &spill_buckets);
	if (m->spill_keys > s->overflow_max)
		m->spill_keys = s->overflow_max;
	m->ovf_bytes = (uint64_t)s->kv_buckets * c->per_bucket + m->spill_keys * c->per_key +
		       spill_buckets * c->per_spilling_bucket;
	m->total_bytes = m->kv_bytes + m->lock_bytes + m->ovf_bytes;
	m->per_key = keys ? (double)m->total_bytes / keys : 0.0;
}
