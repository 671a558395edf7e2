/* SPDX-License-Identifier: GPL-2.0-only */
/* Skewed key choice: Gray et al.'s Zipfian generator over [0, n), plus a small fast PRNG. */
#ifndef XTX_ZIPF_H
#define XTX_ZIPF_H

#include <stdint.h>

/* xorshift64*: fast, and plenty for picking keys; the state must not be 0. */
static inline uint64_t xtx_rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, 1) from the top 53 bits. */
static inline double xtx_rng_unit(uint64_t *s)
{
	return (double)(xtx_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in [0, n) without a division (Lemire's multiply-shift). */
static inline uint64_t xtx_rng_below(uint64_t *s, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)xtx_rng_next(s) * n) >> 64);
}

/*
 * Rank r in [0, n) is drawn with probability proportional to 1/(r+1)^theta
 * (rank 0 hottest), by inverting an approximation of the CDF in O(1)
 * ("Quickly Generating Billion-Record Synthetic Databases", SIGMOD'94, as
 * in YCSB).  theta 0 is uniform; 0.99 is the skew DINT and YCSB use.
 */
#define XTX_ZIPF_THETA_MAX	0.999	/* the method needs theta < 1 */

struct xtx_zipf {
	uint64_t n;
	double theta;
	double alpha;		/* 1 / (1 - theta) */
	double zetan;		/* sum of 1/i^theta for i = 1..n */
	double eta;
	double two_cut;		/* 1 + 0.5^theta: draws below pick rank 1 */
};

/*
 * Precomputes the normalisation (exactly for the first 2^20 terms, the
 * tail by Euler-Maclaurin, so huge n cost no more).  Returns 0, or -1 if
 * n is 0 or theta is outside [0, XTX_ZIPF_THETA_MAX].
 */
int xtx_zipf_init(struct xtx_zipf *z, uint64_t n, double theta);

/* A rank in [0, n). */
uint64_t xtx_zipf_next(const struct xtx_zipf *z, uint64_t *rng);

#endif /* XTX_ZIPF_H */
