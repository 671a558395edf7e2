/* SPDX-License-Identifier: GPL-2.0-only */
/* A log-linear latency histogram in nanoseconds, cheap enough to feed per reply. */
#ifndef XTX_HIST_H
#define XTX_HIST_H

#include <stdint.h>

/*
 * Values below 16 ns get a bucket each; above, every power of two is cut
 * into 16 equal sub-buckets, so a bucket is at most 1/16 of its value wide
 * (reported values are within ~3% of the truth).  Powers up to 2^35 ns
 * (34 s) are kept; anything longer lands in the last bucket.
 */
#define XTX_HIST_SUB_BITS	4
#define XTX_HIST_SUB		(1u << XTX_HIST_SUB_BITS)
#define XTX_HIST_MAX_POW	35
#define XTX_HIST_BUCKETS	((XTX_HIST_MAX_POW - XTX_HIST_SUB_BITS + 2) * XTX_HIST_SUB)

struct xtx_hist {
	uint64_t count;
	uint64_t sum;		/* ns; 2^64 ns is 584 years */
	uint64_t min;
	uint64_t max;
	uint64_t bucket[XTX_HIST_BUCKETS];
};

static inline unsigned int xtx_hist_bucket(uint64_t ns)
{
	unsigned int pow, idx;

	if (ns < XTX_HIST_SUB)
		return ns;
	pow = 63 - __builtin_clzll(ns);
	idx = (pow - XTX_HIST_SUB_BITS + 1) * XTX_HIST_SUB +
	      ((ns >> (pow - XTX_HIST_SUB_BITS)) & (XTX_HIST_SUB - 1));
	return idx < XTX_HIST_BUCKETS ? idx : XTX_HIST_BUCKETS - 1;
}

static inline void xtx_hist_add(struct xtx_hist *h, uint64_t ns)
{
	h->bucket[xtx_hist_bucket(ns)]++;
	if (ns < h->min || !h->count)
		h->min = ns;
	h->count++;
	h->sum += ns;
	if (ns > h->max)
		h->max = ns;
}

/* Empties h; a zeroed histogram is an empty one (min is set by the first value). */
void xtx_hist_reset(struct xtx_hist *h);
void xtx_hist_merge(struct xtx_hist *dst, const struct xtx_hist *src);
/* The value at percentile p (0..100), in ns; 0 when empty. */
uint64_t xtx_hist_percentile(const struct xtx_hist *h, double p);
/* Mean in ns; 0 when empty. */
double xtx_hist_mean(const struct xtx_hist *h);

#endif /* XTX_HIST_H */
