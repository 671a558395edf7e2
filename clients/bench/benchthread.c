// SPDX-License-Identifier: GPL-2.0-only
/* Counters, progress publishing and bad-reply reports shared by xtxbench's load threads. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "benchthread.h"
#include "log.h"
#include "servers.h"

void bench_counts_add(uint64_t *a, const uint64_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		a[i] += b[i];
}

void bench_publish(struct bench_thread *b, void *pub, const void *c, size_t size)
{
	pthread_mutex_lock(&b->lock);
	memcpy(pub, c, size);
	xtx_hist_merge(&b->interval, &b->recent);
	pthread_mutex_unlock(&b->lock);
	/* Outside the lock: only this thread touches total and recent. */
	xtx_hist_merge(&b->total, &b->recent);
	xtx_hist_reset(&b->recent);
}

void bench_gather(struct bench_thread *b, uint64_t *sum, const uint64_t *pub, size_t n,
		  struct xtx_hist *h)
{
	pthread_mutex_lock(&b->lock);
	bench_counts_add(sum, pub, n);
	xtx_hist_merge(h, &b->interval);
	xtx_hist_reset(&b->interval);
	pthread_mutex_unlock(&b->lock);
}

void bench_bad_reply(struct bench_thread *b, uint64_t *errors, const struct sockaddr_in *server,
		     const char *fmt, ...)
{
	/* Room for the longest message any subcommand formats (kv's). */
	char addr[XTX_ADDR_STRLEN], msg[200];
	va_list ap;

	(*errors)++;
	if (b->err_reports >= BENCH_ERR_REPORTS && xtx_log_level < XTX_LOG_DEBUG)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_warn("Error: bad reply from %s to client %u: %s\n",
		xtx_addr_str(server, addr, sizeof(addr)), b->client_id, msg);
	if (++b->err_reports == BENCH_ERR_REPORTS && xtx_log_level < XTX_LOG_DEBUG)
		pr_warn("thread %u: further bad replies are only counted (-vv shows them)\n",
			b->idx);
}
