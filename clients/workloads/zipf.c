// SPDX-License-Identifier: GPL-2.0-only
/* Gray et al.'s Zipfian generator with a precomputed, tail-approximated zeta. */
#include <math.h>
#include "zipf.h"

/* Terms summed one by one; beyond, the sum is smooth enough to integrate. */
#define ZIPF_EXACT_TERMS	(1ull << 20)

/* sum of 1/i^theta for i = 1..n */
static double zeta(uint64_t n, double theta)
{
	uint64_t m = n < ZIPF_EXACT_TERMS ? n : ZIPF_EXACT_TERMS, i;
	double sum = 0, a, b;

	for (i = 1; i <= m; i++)
		sum += pow((double)i, -theta);
	if (n == m)
		return sum;
	/*
	 * Euler-Maclaurin for terms m+1..n of f(x) = x^-theta: the integral,
	 * the endpoint correction and the first derivative term; at m = 2^20
	 * what is left is far below a double's precision of the sum.
	 */
	a = (double)m;
	b = (double)n;
	sum += (pow(b, 1 - theta) - pow(a, 1 - theta)) / (1 - theta);
	sum += (pow(b, -theta) - pow(a, -theta)) / 2;
	sum += -theta * (pow(b, -theta - 1) - pow(a, -theta - 1)) / 12;
	return sum;
}

int xtx_zipf_init(struct xtx_zipf *z, uint64_t n, double theta)
{
	if (!n || !(theta >= 0 && theta <= XTX_ZIPF_THETA_MAX))
		return -1;
	z->n = n;
	z->theta = theta;
	z->alpha = 1 / (1 - theta);
	z->two_cut = 1 + pow(0.5, theta);
	if (theta == 0) {
		z->zetan = (double)n;
		z->eta = 1;
		return 0;
	}
	z->zetan = zeta(n, theta);
	/* n <= 2 never reaches the formula that uses eta (see xtx_zipf_next()). */
	z->eta = n > 2 ? (1 - pow(2.0 / (double)n, 1 - theta)) / (1 - z->two_cut / z->zetan) : 1;
	return 0;
}

uint64_t xtx_zipf_next(const struct xtx_zipf *z, uint64_t *rng)
{
	double u, uz;
	uint64_t r;

	if (z->theta == 0)
		return xtx_rng_below(rng, z->n);
	u = xtx_rng_unit(rng);
	uz = u * z->zetan;
	/* The two hottest ranks exactly; the rest by the inverted approximation. */
	if (uz < 1)
		return 0;
	if (uz < z->two_cut)
		return z->n > 1 ? 1 : 0;
	r = (uint64_t)((double)z->n * pow(z->eta * u - z->eta + 1, z->alpha));
	return r < z->n ? r : z->n - 1;
}
