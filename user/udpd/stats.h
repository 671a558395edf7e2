/* SPDX-License-Identifier: GPL-2.0-only */
/* Per-thread packet and op counters, and the STATS op that sums them. */
#ifndef XTX_UDPD_STATS_H
#define XTX_UDPD_STATS_H

#include <stdint.h>
#include <xtx/maps.h>
#include "udpd.h"

/*
 * Each thread writes only its own struct xtx_stats; readers sum over
 * threads.  Relaxed stores of a value only one thread changes cost no
 * locked instruction, and readers never see a torn word.
 */
static inline void udpd_bump(__u64 *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static inline void udpd_count(struct xtx_stats *s, unsigned int counter)
{
	if (counter < XTX_CTR__COUNT)
		udpd_bump(&s->ctr[counter]);
}

static inline void udpd_count_op(struct xtx_stats *s, uint8_t opcode, uint8_t status)
{
	if (opcode < XTX_OP__COUNT && status < XTX_ST__COUNT)
		udpd_bump(&s->op[opcode][status]);
}

/* XTX_OP_STATS: five counters selected by op->key, summed over the threads. */
uint8_t udpd_op_stats(const struct udpd_server *srv, struct xtx_op *op);

#endif /* XTX_UDPD_STATS_H */
