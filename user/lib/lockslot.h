/* SPDX-License-Identifier: GPL-2.0-only */
/* User space's hold of a lock slot's spin word, taken as XDP takes it (include/xtx/maps.h). */
#ifndef XTX_LOCKSLOT_H
#define XTX_LOCKSLOT_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/maps.h>

/* The spin word is a sequence count: odd while a CPU (or user space) updates the slot. */
static inline bool xtx_lockslot_trylock(struct xtx_lock_slot *s)
{
	uint32_t seq = __atomic_load_n(&s->spin, __ATOMIC_RELAXED);

	return !(seq & 1) && __sync_bool_compare_and_swap(&s->spin, seq, seq + 1);
}

/* To the next even value: a reader between the two loads of it sees that it moved. */
static inline void xtx_lockslot_unlock(struct xtx_lock_slot *s)
{
	__atomic_store_n(&s->spin, s->spin + 1, __ATOMIC_RELEASE);
}

#endif /* XTX_LOCKSLOT_H */
