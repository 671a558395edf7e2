/* SPDX-License-Identifier: GPL-2.0-only */
/* What every load-generating xtxbench thread keeps for progress reports and bad replies. */
#ifndef XTX_BENCHTHREAD_H
#define XTX_BENCHTHREAD_H

#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "hist.h"

/* Detailed messages per thread about bad replies; the rest are only counted. */
#define BENCH_ERR_REPORTS	5

/*
 * Embedded in each subcommand's thread struct.  Its counters differ per
 * subcommand, so they stay there: a struct of uint64_t only, handed to
 * these helpers as an array.
 */
struct bench_thread {
	unsigned int idx;
	uint32_t client_id;
	unsigned int err_reports;

	/* Owned by the thread. */
	struct xtx_hist total;
	struct xtx_hist recent;		/* since the last publish */

	/* Read by the progress reporter under lock. */
	pthread_mutex_t lock;
	struct xtx_hist interval;
};

/* a[i] += b[i] for n counters. */
void bench_counts_add(uint64_t *a, const uint64_t *b, size_t n);

/*
 * Hands the thread's counters (size bytes at c, copied to pub) and the
 * latencies since the last call to the progress reporter.
 */
void bench_publish(struct bench_thread *b, void *pub, const void *c, size_t size);

/*
 * Takes what b published since the last call: adds its n counters at pub
 * to sum and merges its latencies into h.
 */
void bench_gather(struct bench_thread *b, uint64_t *sum, const uint64_t *pub, size_t n,
		  struct xtx_hist *h);

/*
 * Counts a wrong reply from server in *errors and prints why, the first
 * BENCH_ERR_REPORTS times per thread (every time at -vv).
 */
void bench_bad_reply(struct bench_thread *b, uint64_t *errors, const struct sockaddr_in *server,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif /* XTX_BENCHTHREAD_H */
