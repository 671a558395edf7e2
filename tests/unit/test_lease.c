// SPDX-License-Identifier: GPL-2.0-only
/*
 * A member's lease across a suspend: the clocks are this file's own
 * (clock_gettime is defined here, so every object linked in reads them),
 * and a suspend moves the boot clock without the monotonic one, as the
 * kernel does.  The lease a heartbeat earned before a suspend must not
 * last past the suspend: ZooKeeper's session timer ran on meanwhile.
 */
/* checks: 2 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "check.h"
#include "clock.h"
#include "member.h"
#include "zk.h"

static uint64_t suspended_ns;	/* boot time gained in suspends so far */

int clock_gettime(clockid_t id, struct timespec *ts)
{
	long r = syscall(SYS_clock_gettime, id, ts);
	uint64_t ns;

	if (r || id != CLOCK_BOOTTIME)
		return (int)r;
	ns = (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec + suspended_ns;
	ts->tv_sec = (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
	return 0;
}

#define MS	1000000ull

/* A heartbeat, answered; then a suspend of 10 s; then the lease it earned is written. */
static void test_suspend_after_heartbeat(void)
{
	uint64_t lease = 2000 * MS * 2 / 3;	/* two thirds of a 2 s session */
	uint64_t sent = xtx_zk_clock(), until, now;

	suspended_ns += 10000 * MS;
	until = xtxd_lease_until(sent, lease);
	now = xtx_boot_ns();
	CHECK((int64_t)(until - now) < 0,
	      "a lease earned before a 10 s suspend still runs %lld ms after it",
	      (long long)((int64_t)(until - now) / (int64_t)MS));
}

/* Without a suspend the lease runs its length from the heartbeat's sending. */
static void test_no_suspend(void)
{
	uint64_t lease = 1333 * MS, sent = xtx_zk_clock(), until = xtxd_lease_until(sent, lease);
	int64_t left = (int64_t)(until - xtx_boot_ns());

	CHECK(left > 0 && left <= (int64_t)lease, "the lease runs %lld ms of %llu",
	      (long long)(left / (int64_t)MS), (unsigned long long)(lease / MS));
}

int main(void)
{
	RUN_CASE(test_no_suspend);
	RUN_CASE(test_suspend_after_heartbeat);
	printf("# test_lease: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
