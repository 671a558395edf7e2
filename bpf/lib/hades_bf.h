/* SPDX-License-Identifier: GPL-2.0-only */
/* HADES filters in XDP: atomic recording, membership probes and the exact key sets beside them. */
#ifndef XTX_BPF_HADES_BF_H
#define XTX_BPF_HADES_BF_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xtx/hades.h>
#include "config.h"
#include "maps.h"

#define XTX_READ_ONCE64(x)	(*(volatile __u64 *)&(x))

/*
 * Records a key with atomic ORs.  On x86 each is a locked instruction,
 * hence a full barrier: a recorder's later look at the committing filters
 * and a committer's look at this filter after its publishing CAS cannot
 * both miss each other (the record-then-check rule of design §6).
 */
static __always_inline void xtx_hades_bf_record(__u64 *bf, __u64 h)
{
	__u32 m = xtx_hades_bf_bits, i, b, w;

	for (i = 0; i < XTX_HADES_HASHES_MAX; i++) {
		if (i >= xtx_hades_hashes)
			break;
		b = xtx_hades_bf_bit(h, i, m);
		w = b >> 6;
		barrier_var(w);
		__sync_fetch_and_or(&bf[w & (XTX_HADES_BF_WORDS - 1)], 1ull << (b & 63));
	}
}

/* Empties both filters of a slot being claimed (only the words in use). */
static __always_inline void xtx_hades_bf_clear(struct xtx_hades_slot *s)
{
	__u32 i, words = xtx_hades_bf_bits / 64;

	for (i = 0; i < XTX_HADES_BF_WORDS; i++) {
		if (i >= words)
			break;
		s->rbf[i] = 0;
		s->wbf[i] = 0;
	}
}

/* ---- --hades-exact: exact key sets, to tell false-positive conflicts ---- */

static __always_inline struct xtx_hades_exact *xtx_hades_exact_of(__u32 idx)
{
	if (!xtx_hades_exact_on)
		return NULL;
	return bpf_map_lookup_elem(&xtx_hades_exact, &idx);
}

static __always_inline void xtx_hades_exact_reset(__u32 idx)
{
	struct xtx_hades_exact *e = xtx_hades_exact_of(idx);

	if (e) {
		e->nread = 0;
		e->nwrite = 0;
	}
}

static __always_inline bool xtx_hades_exact_in(const __u64 *set, __u32 n, __u64 kh)
{
	__u32 i;

	for (i = 0; i < XTX_HADES_EXACT_KEYS; i++) {
		if (i >= n)
			break;
		if (set[i] == kh)
			return true;
	}
	return false;
}

/* Adds kh (xtx_hash of the key) to a slot's exact read or write set. */
static __always_inline void xtx_hades_exact_add(__u32 idx, __u64 kh, bool write)
{
	struct xtx_hades_exact *e = xtx_hades_exact_of(idx);
	__u32 n;

	if (!e)
		return;
	if (write) {
		if (xtx_hades_exact_in(e->write, e->nwrite, kh))
			return;
		n = __sync_fetch_and_add(&e->nwrite, 1);
		if (n < XTX_HADES_EXACT_KEYS)
			e->write[n & (XTX_HADES_EXACT_KEYS - 1)] = kh;
	} else {
		if (xtx_hades_exact_in(e->read, e->nread, kh))
			return;
		n = __sync_fetch_and_add(&e->nread, 1);
		if (n < XTX_HADES_EXACT_KEYS)
			e->read[n & (XTX_HADES_EXACT_KEYS - 1)] = kh;
	}
}

/*
 * Whether slot idx really accessed kh (reads: rd, writes: wr).  An
 * incomplete or missing set answers true: only a refuted hit counts as a
 * false positive.
 */
static __always_inline bool xtx_hades_exact_has(__u32 idx, __u64 kh, bool rd, bool wr)
{
	struct xtx_hades_exact *e = xtx_hades_exact_of(idx);

	if (!e)
		return true;
	if ((rd && e->nread > XTX_HADES_EXACT_KEYS) || (wr && e->nwrite > XTX_HADES_EXACT_KEYS))
		return true;
	return (rd && xtx_hades_exact_in(e->read, e->nread, kh)) ||
	       (wr && xtx_hades_exact_in(e->write, e->nwrite, kh));
}

_Static_assert((XTX_HADES_BF_WORDS & (XTX_HADES_BF_WORDS - 1)) == 0, "word index is a mask");
_Static_assert((XTX_HADES_EXACT_KEYS & (XTX_HADES_EXACT_KEYS - 1)) == 0, "set index is a mask");

#endif /* XTX_BPF_HADES_BF_H */
