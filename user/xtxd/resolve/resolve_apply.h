/* SPDX-License-Identifier: GPL-2.0-only */
/* What the resolver does to the live store: read a key's version, install a write, free a lock. */
#ifndef XTXD_RESOLVE_APPLY_H
#define XTXD_RESOLVE_APPLY_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include <xtx/maps.h>
#include "logrec.h"

struct xtxd_ovf;

/* The kernel buckets (mapped), the overflow store and the lock table of one server. */
struct xtxd_live {
	struct xtx_kv_bucket *kv;
	uint32_t nbuckets;
	struct xtxd_ovf *store;
	struct xtx_lock_slot *locks;	/* mapped: its spin word is taken with a CAS */
	uint32_t lock_slots;
	int64_t *pins;			/* XTX_MAP_FAM_PINS, mapped (user space's row) */
};

/*
 * The version of (table, key) here: 1 live, 2 a kernel tombstone, 0
 * absent (*version is then the bucket's floor: no write at or below it
 * can still be missing).  Without locks: a hint, not a decision.  The
 * caller is a registered RCU thread.
 */
int xtxd_live_version(struct xtxd_live *l, uint8_t table, uint64_t key, uint64_t *version);

/*
 * Installs a decided write (COMMIT_BACKUP's rule: only if newer than what
 * is there) into the kernel cache or the overflow store, under the bucket
 * lock as XDP takes it.  A value over XTX_VALUE_INLINE goes to the store
 * only, dropping the kernel's older copy of the key.  1 installed, 0
 * already there or newer, or a negative errno (-ENOSPC: the store is full,
 * -ETIMEDOUT: the bucket stayed locked, -EAGAIN: the key's kernel copy
 * stayed XTX_KVF_EVICTING, a big write of it unanswered).  The caller is a
 * registered RCU thread.
 */
int xtxd_live_install(struct xtxd_live *l, const struct xtx_log_write *w);

/*
 * Kernel bucket bi and the overflow store's keys of it, locked together as
 * xtxd_live_install() locks them: 0, or -ETIMEDOUT (the bucket stayed held).
 */
int xtxd_live_bucket_lock(struct xtxd_live *l, uint32_t bi);
void xtxd_live_bucket_unlock(struct xtxd_live *l, uint32_t bi);
/*
 * With bucket bi (the key's) locked: the key's current value, the newer of
 * the kernel's and the store's copies.  1 with *it filled, 0 absent or
 * deleted.  The caller is a registered RCU thread.
 */
struct xtxd_ovf_item;
int xtxd_live_get_locked(struct xtxd_live *l, uint32_t bi, uint8_t table, uint64_t key,
			 struct xtxd_ovf_item *it);

/*
 * Empties the store (kernel cache and overflow store) of every key, each
 * bucket under its locks; the version floors stay.  For a server about to
 * copy shards whole (user/xtxd/copy/): what it held is older than its
 * sources' copy, and a key deleted since would come back.  Returns the
 * keys removed, or a negative errno.  The caller is a registered RCU thread.
 */
long xtxd_live_wipe(struct xtxd_live *l);
/*
 * The overflow store's keys (table and key of each) that keep() accepts
 * (NULL: all), listed in one walk that does not block: *keys (malloc'd,
 * the caller frees) and *n.  0 or -ENOMEM.  A registered RCU thread.
 */
int xtxd_live_store_keys(struct xtxd_live *l, bool (*keep)(uint8_t table, uint64_t key, void *arg),
			 void *arg, struct xtxd_ovf_item **keys, size_t *n);
/* The highest version floor of any bucket, kernel or store: a bound no key reuses below. */
uint64_t xtxd_live_max_floor(struct xtxd_live *l);
/* Raises every bucket's floor (kernel and store) to at least v, under its locks; 0 or -errno. */
int xtxd_live_raise_floors(struct xtxd_live *l, uint64_t v);

/* True when txn holds the lock slot of (table, key). */
bool xtxd_live_lock_held(struct xtxd_live *l, uint64_t txn, uint8_t table, uint64_t key);

/*
 * Takes away txn's holds of the lock slot of (table, key), exclusive and
 * shared, never another transaction's, under the slot's spin word taken
 * with a CAS as XDP takes it (XDP answers RETRY meanwhile).  A slot left
 * free gets a new gen, so the old tokens go stale, and its LOGGED pins
 * are uncounted.  1 done, 0 not held by txn, or a negative errno.
 */
int xtxd_live_unlock(struct xtxd_live *l, uint64_t txn, uint8_t table, uint64_t key);
/* The index of (table, key)'s lock slot. */
uint32_t xtxd_live_slot_index(const struct xtxd_live *l, uint8_t table, uint64_t key);
/*
 * Hands txn's exclusive hold of (table, key)'s slot to transaction to, for
 * its key (to_table, to_key), in one step under the spin word: LOGGED, a
 * new grant epoch, the pinned table moved along.  No other transaction
 * can be granted the slot in between.  1 when handed, 0 when txn does not
 * hold it alone, -EBUSY when the slot stayed busy.
 */
int xtxd_live_pass(struct xtxd_live *l, uint64_t txn, uint8_t table, uint64_t key, uint64_t to,
		   uint8_t to_table, uint64_t to_key);

#endif /* XTXD_RESOLVE_APPLY_H */
