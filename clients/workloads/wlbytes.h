/* SPDX-License-Identifier: GPL-2.0-only */
/* Little-endian fields of n bytes in the workloads' rows, at any alignment. */
#ifndef XTX_WLBYTES_H
#define XTX_WLBYTES_H

#include <stdint.h>

static inline void wl_put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t wl_get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

#endif /* XTX_WLBYTES_H */
