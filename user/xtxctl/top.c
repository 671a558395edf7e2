// SPDX-License-Identifier: GPL-2.0-only
/*
 * xtxctl top: what the Prometheus endpoint exports, as a terminal view.
 * Each refresh sums XDP's per-CPU counters and walks the lock table, then
 * prints rates over the interval (packets, ops, the rare-path share, the
 * busiest op/status pairs) and the tables' occupancy.  On a terminal it
 * redraws in place; piped, it prints one block per refresh.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xtx/maps.h>
#include <xtx/proto.h>
#include "names.h"
#include "occupancy.h"
#include "stats_read.h"
#include "top.h"

#define TOP_OPS_SHOWN	10

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int read_all(const struct xtx_target *t, struct xtx_stats *s)
{
	int fd = xtx_target_map_fd(t, XTX_MAP_STATS), err;

	if (fd < 0)
		return fd;
	err = xtx_stats_sum(fd, s);
	close(fd);
	return err;
}

struct op_rate {
	unsigned int op, st;
	double rate;
};

static int by_rate(const void *a, const void *b)
{
	double x = ((const struct op_rate *)a)->rate, y = ((const struct op_rate *)b)->rate;

	return x < y ? 1 : x > y ? -1 : 0;
}

static void draw(const struct xtx_target *t, const struct xtx_stats *a,
		 const struct xtx_stats *b, double secs, bool tty)
{
	static struct op_rate r[XTX_OP__COUNT * XTX_ST__COUNT];
	struct xtx_lock_occupancy lo = {};
	struct xtx_hades_occupancy ho = {};
	double ops = (double)(b->ctr[XTX_CTR_OPS] - a->ctr[XTX_CTR_OPS]);
	double rare = (double)(b->ctr[XTX_CTR_KV_DEFERRED] - a->ctr[XTX_CTR_KV_DEFERRED]);
	unsigned int op, st, n = 0, i;
	char when[32];
	time_t now = time(NULL);

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	xtx_lock_occupancy(t, &lo);
	xtx_hades_occupancy(t, &ho);
	if (tty)
		fputs("\033[H\033[2J", stdout);
	printf("xtx on %s%s%s  %s  (every %.1fs; q: Ctrl-C)\n\n", t->iface,
	       t->netns[0] ? " in netns " : "", t->netns, when, secs);
	printf("%-24s %14.0f/s\n", "packets in",
	       (b->ctr[XTX_CTR_RX] - a->ctr[XTX_CTR_RX]) / secs);
	printf("%-24s %14.0f/s\n", "replies (XDP_TX)",
	       (b->ctr[XTX_CTR_TX] - a->ctr[XTX_CTR_TX]) / secs);
	printf("%-24s %14.0f/s\n", "ops", ops / secs);
	printf("%-24s %14.0f/s\n", "dropped",
	       (b->ctr[XTX_CTR_DROP] - a->ctr[XTX_CTR_DROP]) / secs);
	printf("%-24s %14.0f/s\n", "replayed duplicates",
	       (b->ctr[XTX_CTR_REPLAYED] - a->ctr[XTX_CTR_REPLAYED]) / secs);
	printf("%-24s %14.2f%%\n", "rare-path share", ops > 0 ? 100.0 * rare / ops : 0.0);
	printf("%-24s %14.0f/s\n", "lock conflicts",
	       (b->ctr[XTX_CTR_LOCK_CONFLICT] - a->ctr[XTX_CTR_LOCK_CONFLICT]) / secs);
	printf("%-24s %14.0f/s\n", "lease reclaims",
	       (b->ctr[XTX_CTR_LOCK_RECLAIM] - a->ctr[XTX_CTR_LOCK_RECLAIM] +
		b->ctr[XTX_CTR_HADES_RECLAIM] - a->ctr[XTX_CTR_HADES_RECLAIM]) / secs);
	printf("%-24s %8llu of %llu slots (%llu logged)\n", "locks held",
	       (unsigned long long)lo.held, (unsigned long long)lo.slots,
	       (unsigned long long)lo.logged);
	printf("%-24s %8llu (%llu committing)\n\n", "HADES slots in use",
	       (unsigned long long)ho.in_use, (unsigned long long)ho.committing);
	for (op = 0; op < XTX_OP__COUNT; op++)
		for (st = 0; st < XTX_ST__COUNT; st++)
			if (xtx_op_name(op) && b->op[op][st] > a->op[op][st])
				r[n++] = (struct op_rate){ op, st,
							   (b->op[op][st] - a->op[op][st]) / secs };
	qsort(r, n, sizeof(r[0]), by_rate);
	printf("%-16s %-14s %14s\n", "op", "status", "per second");
	for (i = 0; i < n && i < TOP_OPS_SHOWN; i++)
		printf("%-16s %-14s %14.0f\n", xtx_op_name(r[i].op), xtx_status_name(r[i].st),
		       r[i].rate);
	if (!n)
		printf("(idle)\n");
	fflush(stdout);
}

int xtxctl_top(const struct xtx_target *t, unsigned int interval_ms, unsigned int count)
{
	struct xtx_stats *a = calloc(2, sizeof(*a)), *b = a + 1;
	struct timespec d = { interval_ms / 1000, (long)(interval_ms % 1000) * 1000000 };
	bool tty = isatty(STDOUT_FILENO);
	unsigned int i;
	int err;

	if (!a) {
		fprintf(stderr, "Error: out of memory\n");
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	err = read_all(t, a);
	for (i = 0; !err && !stop && (!count || i < count); i++) {
		struct xtx_stats *tmp;

		nanosleep(&d, NULL);
		err = read_all(t, b);
		if (err)
			break;
		draw(t, a, b, interval_ms / 1000.0, tty);
		tmp = a;
		a = b;
		b = tmp;
	}
	free(a < b ? a : b);
	if (err) {
		fprintf(stderr, "Error: reading the server's counters: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
