// SPDX-License-Identifier: GPL-2.0-only
/* Progress of a long step on stderr (recovery, bulk load, unload): done, rate, time left. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "clock.h"
#include "progress.h"

uint64_t xtx_progress_every_ns(void)
{
	/* XTX_PROGRESS_MS: how often (tests make it short to see a line at all) */
	const char *e = getenv("XTX_PROGRESS_MS");
	char *end;
	unsigned long ms;

	if (!e || !*e)
		return 1000000000ull;
	ms = strtoul(e, &end, 10);
	return *end ? 1000000000ull : ms * 1000000ull;
}

void xtx_progress_start(struct xtx_progress *p, const char *what, const char *unit,
			uint64_t total)
{
	p->what = what;
	p->unit = unit;
	p->total = total;
	p->t0_ns = p->last_ns = xtx_now_ns();
	p->tty = isatty(STDERR_FILENO);
	p->shown = false;
	p->every_ns = xtx_progress_every_ns();
}

static void line(struct xtx_progress *p, uint64_t done, uint64_t now, bool last)
{
	double secs = (double)(now - p->t0_ns) / 1e9, rate = secs > 0 ? done / secs : 0;

	fprintf(stderr, "%s%s: %llu", p->tty ? "\r\033[K" : "", p->what, (unsigned long long)done);
	if (p->total)
		fprintf(stderr, " of %llu", (unsigned long long)p->total);
	fprintf(stderr, " %s", p->unit);
	if (p->total)
		fprintf(stderr, " (%.0f%%)", 100.0 * done / p->total);
	fprintf(stderr, ", %.0f %s/s", rate, p->unit);
	if (last)
		fprintf(stderr, ", %.1f s", secs);
	else if (p->total && rate > 0 && done < p->total)
		fprintf(stderr, ", about %.0f s left", (p->total - done) / rate);
	if (!p->tty || last)
		fputc('\n', stderr);
	fflush(stderr);
}

void xtx_progress_tick(struct xtx_progress *p, uint64_t done)
{
	uint64_t now = xtx_now_ns();

	if (now - p->last_ns < p->every_ns)
		return;
	p->last_ns = now;
	p->shown = true;
	line(p, done, now, false);
}

void xtx_progress_end(struct xtx_progress *p, uint64_t done)
{
	if (p->shown)
		line(p, done, xtx_now_ns(), true);
	p->shown = false;
}
