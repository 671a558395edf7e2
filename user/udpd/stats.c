// SPDX-License-Identifier: GPL-2.0-only
/* The STATS op: the same counter groups the XDP program serves, summed over threads. */
#include <string.h>
#include <xtx/proto.h>
#include "stats.h"

#define STATS_WORDS	(sizeof(struct xtx_stats) / sizeof(uint64_t))

_Static_assert(sizeof(struct xtx_stats) % sizeof(uint64_t) == 0, "stats are u64 words");
_Static_assert(XTX_STATS_PER_OP * 8 <= XTX_VALUE_INLINE, "stats fit one value");

/* key n < XTX_STATS_KEY_OP: counters 5n..5n+4; XTX_STATS_KEY_OP * (g + 1) + opcode: op group g */
uint8_t udpd_op_stats(const struct udpd_server *srv, struct xtx_op *op)
{
	__u64 sum[XTX_STATS_PER_OP] = {}, key = op->key;
	uint32_t first, end, i, t;

	if (key < XTX_STATS_KEY_OP && key * XTX_STATS_PER_OP < XTX_CTR__COUNT) {
		first = key * XTX_STATS_PER_OP;
		end = XTX_CTR__COUNT;
	} else if (key >= XTX_STATS_KEY_OP && key < XTX_STATS_KEY_OP * (XTX_STATS_OP_GROUPS + 1) &&
		   (key & 0xff) < XTX_OP__COUNT) {
		uint32_t group = (key >> 8) - 1, opcode = key & 0xff;

		first = XTX_CTR__COUNT + opcode * XTX_ST__COUNT + 1 + group * XTX_STATS_PER_OP;
		end = XTX_CTR__COUNT + (opcode + 1) * XTX_ST__COUNT;
	} else {
		return XTX_ST_BAD_ARG;
	}
	for (t = 0; t < srv->nworkers; t++) {
		const __u64 *words = (const __u64 *)srv->workers[t].stats;

		for (i = 0; i < XTX_STATS_PER_OP; i++)
			if (first + i < end && first + i < STATS_WORDS)
				sum[i] += __atomic_load_n(&words[first + i], __ATOMIC_RELAXED);
	}
	memcpy(op->value, sum, sizeof(sum));
	op->vlen = sizeof(sum);
	return XTX_ST_OK;
}
