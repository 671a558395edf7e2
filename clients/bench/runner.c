// SPDX-License-Identifier: GPL-2.0-only
/* Thread start, per-second ticks, signal-driven early stop and join for the benchmarks. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "runner.h"

atomic_bool xtx_run_stop;
static volatile sig_atomic_t run_interrupted;

static void on_signal(int sig)
{
	(void)sig;
	run_interrupted = 1;
}

/* Sleeps until the duration is over, ticking once a second and sampling as asked. */
static void run_ticks(const struct xtx_run *r, uint64_t start)
{
	uint64_t end = start + r->duration_ns, tick = start + 1000000000ull, prev_ns = start, now;
	uint64_t sample = r->sample ? start + r->sample_ns : UINT64_MAX;
	uint64_t mark = r->mark ? start + r->mark_ns : UINT64_MAX;
	unsigned int sec = 0;

	while (!run_interrupted) {
		struct timespec ts;
		uint64_t wake = tick < sample ? tick : sample;

		if (mark < wake)
			wake = mark;
		if (wake > end)
			wake = end;
		ts.tv_sec = wake / 1000000000ull;
		ts.tv_nsec = wake % 1000000000ull;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
		       !run_interrupted)
			;
		if (run_interrupted || wake == end)
			break;
		now = xtx_now_ns();
		if (wake == mark) {
			r->mark(r->ctx);
			mark = UINT64_MAX;
		}
		if (wake == sample) {
			r->sample(r->ctx, now - start);
			sample += r->sample_ns;
		}
		if (wake == tick) {
			if (r->tick)
				r->tick(r->ctx, ++sec, (double)(now - prev_ns) / 1e9);
			prev_ns = now;
			tick += 1000000000ull;
		}
	}
}

int xtx_run_threads(const struct xtx_run *r, uint64_t *start_ns, uint64_t *stop_ns)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESETHAND };
	pthread_t *tid = calloc(r->nthreads, sizeof(*tid));
	unsigned int i, started = 0;
	sigset_t block, old;
	int err;

	if (!tid) {
		fprintf(stderr, "Error: allocating threads: %s\n", strerror(ENOMEM));
		return -1;
	}
	atomic_store(&xtx_run_stop, false);
	run_interrupted = 0;
	/* Workers inherit the mask: a signal wakes this thread's sleep, never a worker's. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	*start_ns = xtx_now_ns();
	for (i = 0; i < r->nthreads; i++) {
		err = pthread_create(&tid[i], NULL, r->fn, (char *)r->args + i * r->arg_size);
		if (err) {
			fprintf(stderr, "Error: starting thread %u: %s\n", i, strerror(err));
			break;
		}
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (started == r->nthreads)
		run_ticks(r, *start_ns);
	atomic_store(&xtx_run_stop, true);
	*stop_ns = xtx_now_ns();
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	free(tid);
	return started == r->nthreads ? 0 : -1;
}
