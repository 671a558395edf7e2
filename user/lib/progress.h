/* SPDX-License-Identifier: GPL-2.0-only */
/* Progress of a long step on stderr (recovery, bulk load, unload): done, rate, time left. */
#ifndef XTX_PROGRESS_H
#define XTX_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct xtx_progress {
	const char *what;	/* "recovery: replaying the logs" */
	const char *unit;	/* "records" */
	uint64_t total;		/* 0: not known ahead */
	uint64_t t0_ns, last_ns, every_ns;
	bool tty;		/* stderr is a terminal: one line, redrawn in place */
	bool shown;		/* a line went out: the end says how it ended */
};

/* How often a line goes out: a second, or XTX_PROGRESS_MS from the environment. */
uint64_t xtx_progress_every_ns(void);
/* A step of total units (0: unknown) begins. */
void xtx_progress_start(struct xtx_progress *p, const char *what, const char *unit,
			uint64_t total);
/*
 * done units so far: after the first second, once a second, "WHAT: DONE of
 * TOTAL UNIT (P%), R UNIT/s, about S s left" (without the total and what is
 * left when unknown).  A step shorter than a second prints nothing.
 */
void xtx_progress_tick(struct xtx_progress *p, uint64_t done);
/* The step ended with done units: a last line, only if one was shown. */
void xtx_progress_end(struct xtx_progress *p, uint64_t done);

#endif /* XTX_PROGRESS_H */
