/* SPDX-License-Identifier: GPL-2.0-only */
/* Runs a benchmark's threads for a duration with a tick per second; Ctrl-C ends a run early. */
#ifndef XTX_RUNNER_H
#define XTX_RUNNER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xtx_run {
	unsigned int nthreads;
	void *(*fn)(void *arg);	/* thread i runs fn(args + i * arg_size) */
	void *args;
	size_t arg_size;
	uint64_t duration_ns;
	/* Called once a second of the run (not at its end); dt_s since the last call. */
	void (*tick)(void *ctx, unsigned int sec, double dt_s);
	void *ctx;
	/* Optional: called every sample_ns of the run with the time since its start. */
	void (*sample)(void *ctx, uint64_t since_start_ns);
	uint64_t sample_ns;
	/* Optional: called once, mark_ns into the run (a warmup's end), if it lasts that long. */
	void (*mark)(void *ctx);
	uint64_t mark_ns;
};

/* Raised when the threads should stop issuing new work; they poll it. */
extern atomic_bool xtx_run_stop;

static inline bool xtx_run_stopping(void)
{
	return atomic_load_explicit(&xtx_run_stop, memory_order_relaxed);
}

/*
 * Starts the threads, ticks until the duration has passed or SIGINT or
 * SIGTERM arrives (a second one kills), raises xtx_run_stop and joins
 * them.  *start_ns and *stop_ns bracket the run (CLOCK_MONOTONIC).
 * Returns 0, or -1 after printing why not every thread started (those
 * that did were stopped and joined).
 */
int xtx_run_threads(const struct xtx_run *r, uint64_t *start_ns, uint64_t *stop_ns);

#endif /* XTX_RUNNER_H */
