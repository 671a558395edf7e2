/* SPDX-License-Identifier: GPL-2.0-only */
/* The bulk-load generator's values, which xtxd writes and xtxctl recomputes to check. */
#ifndef XTX_LOADGEN_H
#define XTX_LOADGEN_H

#include <stdint.h>
#include <xtx/hash.h>

/*
 * The generator's values (xtxctl load --count): byte i of the value of
 * (table, key) is byte i % 8, little-endian, of
 *
 *	xtx_mix64((xtx_hash(table, key) ^ xtx_mix64(seed)) + i / 8)
 *
 * so anyone can recompute any value from (seed, table, key) alone.
 */
static inline void xtxd_load_gen_value(uint64_t seed, uint8_t table, uint64_t key,
				       unsigned int vsize, uint8_t *value)
{
	uint64_t base = xtx_hash(table, key) ^ xtx_mix64(seed), w = 0;
	unsigned int i;

	for (i = 0; i < vsize; i++) {
		if (!(i % 8))
			w = xtx_mix64(base + i / 8);
		value[i] = (uint8_t)(w >> (8 * (i % 8)));
	}
}

#define XTXD_LOAD_SEED_DEFAULT	1

#endif /* XTX_LOADGEN_H */
