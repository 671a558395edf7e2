// SPDX-License-Identifier: GPL-2.0-only
/* Merging and reading the log-linear latency histogram. */
#include <math.h>
#include <string.h>
#include "hist.h"

void xtx_hist_reset(struct xtx_hist *h)
{
	memset(h, 0, sizeof(*h));
}

void xtx_hist_merge(struct xtx_hist *dst, const struct xtx_hist *src)
{
	int was_empty = !dst->count;
	unsigned int i;

	if (!src->count)
		return;
	for (i = 0; i < XTX_HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min || was_empty)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

/* Smallest value of bucket idx and its width. */
static void bucket_range(unsigned int idx, uint64_t *low, uint64_t *width)
{
	unsigned int pow;

	if (idx < XTX_HIST_SUB) {
		*low = idx;
		*width = 1;
		return;
	}
	pow = idx / XTX_HIST_SUB + XTX_HIST_SUB_BITS - 1;
	*width = 1ull << (pow - XTX_HIST_SUB_BITS);
	*low = (uint64_t)(XTX_HIST_SUB + idx % XTX_HIST_SUB) << (pow - XTX_HIST_SUB_BITS);
}

uint64_t xtx_hist_percentile(const struct xtx_hist *h, double p)
{
	uint64_t rank, seen = 0, low, width, v;
	unsigned int i;

	if (!h->count)
		return 0;
	if (p <= 0)
		return h->min;
	if (p >= 100)
		return h->max;
	rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
	if (rank < 1)
		rank = 1;
	for (i = 0; i < XTX_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			break;
	}
	if (i == XTX_HIST_BUCKETS)
		return h->max;
	/* The bucket's middle, but never outside what was actually seen. */
	bucket_range(i, &low, &width);
	v = low + width / 2;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

double xtx_hist_mean(const struct xtx_hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}
