/* SPDX-License-Identifier: GPL-2.0-only */
/* Monotonic nanosecond time: timeouts, leases, latencies. */
#ifndef XTX_CLOCK_H
#define XTX_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t xtx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

#endif /* XTX_CLOCK_H */
