/* SPDX-License-Identifier: GPL-2.0-only */
/* Nanosecond clocks: monotonic for timeouts and latencies, boot time for leases, wall for disk. */
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

/*
 * CLOCK_BOOTTIME: runs on through a suspend, as the rest of the world's
 * clocks do (ZooKeeper's session timers among them), and is what XDP reads
 * (bpf_ktime_get_boot_ns).  A lease is timed in it from the moment it is
 * earned: a time taken on the monotonic clock and converted later would
 * gain whatever suspend came in between.
 */
static inline uint64_t xtx_boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CLOCK_REALTIME: for times kept on disk, which outlive a boot. */
static inline uint64_t xtx_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

#endif /* XTX_CLOCK_H */
