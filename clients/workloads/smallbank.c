// SPDX-License-Identifier: GPL-2.0-only
/* SmallBank's generators: mix, hotspot account choice and initial balances. */
#include <xtx/hash.h>
#include "smallbank.h"
#include "zipf.h"

const char *const sb_type_names[SB_NTYPES] = { "AMG", "BAL", "DC", "SP", "TS", "WC" };

const unsigned int sb_default_mix[SB_NTYPES] = { 15, 15, 15, 25, 15, 15 };

int64_t sb_initial_balance(const struct sb_cfg *cfg, uint8_t table, uint32_t a)
{
	uint64_t h = xtx_mix64(cfg->seed ^ xtx_mix64(((uint64_t)table << 32) | a));
	uint64_t dollars = SB_INIT_MIN_CENTS / 100 +
			   h % ((SB_INIT_MAX_CENTS - SB_INIT_MIN_CENTS) / 100 + 1);

	return (int64_t)dollars * 100;
}

enum sb_type sb_pick_type(const struct sb_cfg *cfg, uint64_t *rng)
{
	unsigned int sum = 0, i, r;

	for (i = 0; i < SB_NTYPES; i++)
		sum += cfg->mix[i];
	r = (unsigned int)xtx_rng_below(rng, sum);
	for (i = 0; i < SB_NTYPES - 1; i++) {
		if (r < cfg->mix[i])
			break;
		r -= cfg->mix[i];
	}
	return (enum sb_type)i;
}

void sb_pick_accounts(const struct sb_cfg *cfg, enum sb_type type, uint64_t *rng,
		      uint32_t *a0, uint32_t *a1)
{
	uint32_t range = xtx_rng_unit(rng) < cfg->hot_prob ? cfg->hot : cfg->accounts;

	*a0 = (uint32_t)xtx_rng_below(rng, range);
	*a1 = *a0;
	if (type != SB_AMG && type != SB_SP)
		return;
	do
		*a1 = (uint32_t)xtx_rng_below(rng, range);
	while (*a1 == *a0);
}

uint32_t sb_default_hot(uint32_t accounts)
{
	uint32_t h = accounts / 25;

	return h < 2 ? 2 : h;
}
