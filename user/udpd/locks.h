/* SPDX-License-Identifier: GPL-2.0-only */
/* No-wait shared/exclusive and OCC locks, one per key, with the XDP lock table's rules. */
#ifndef XTX_UDPD_LOCKS_H
#define XTX_UDPD_LOCKS_H

#include <stdint.h>
#include <stdio.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "store.h"

/*
 * The fields and rules of struct xtx_lock_slot (include/xtx/maps.h) for
 * a single key, so there is no lock sharing between keys.  A lock exists
 * only while held; its gen comes from the stripe's counter, so a token
 * never matches a later hold of the same key.  Every function runs under
 * the stripe's mutex.
 */
struct udpd_lock {
	struct udpd_lock *next;
	uint64_t key;
	uint64_t owner;		/* exclusive holder's txn id, 0 when none */
	uint64_t gen;		/* grant token */
	uint64_t granted_ns;	/* last grant: the lease runs from here */
	uint16_t shared;	/* shared holds: sharer[0, shared) */
	uint16_t excl;
	uint64_t sharer[XTX_LOCK_SHARERS];	/* txn id of each shared hold */
	uint32_t flags;		/* XTX_LOCKF_LOGGED */
	uint8_t table;
};

/*
 * Runs a lock op (LOCK_*, UNLOCK_*, OCC_LOCK, OCC_UNLOCK, OCC_VALIDATE's
 * lock half): fills op->flags, op->token on a grant, and counts conflicts,
 * reclaims and stale releases in stats.  Returns the op's status.
 */
uint8_t udpd_lock_op(struct udpd_stripe *s, uint64_t hash, struct xtx_op *op, uint64_t now,
		     uint64_t lease_ns, struct xtx_stats *stats);
/* The XTX_LOCKF_* state bits of (table, key) as seen by txn. */
uint32_t udpd_lock_state(struct udpd_stripe *s, uint64_t hash, uint8_t table, uint64_t key,
			 uint64_t txn);
/* A commit's unlock: txn's exclusive hold with token, if it is still there. */
void udpd_lock_release_excl(struct udpd_stripe *s, uint64_t hash, uint8_t table, uint64_t key,
			    uint64_t txn, uint64_t token);
/*
 * The primary's proof before a log append (include/xtx/log.h): txn holds the
 * key's exclusive lock under grant (the token's low 32 bits): mark it logged
 * and answer XTX_ST_OK, else XTX_ST_NOT_HELD.
 */
uint8_t udpd_lock_claim_grant(struct udpd_stripe *s, uint64_t hash, uint8_t table, uint64_t key,
			      uint64_t txn, uint32_t grant);
/* A logged write: txn's exclusive lock on the key is never reclaimed by lease. */
void udpd_lock_mark_logged(struct udpd_stripe *s, uint64_t hash, uint8_t table, uint64_t key,
			   uint64_t txn);
/* Prints the stripe's held locks, one line each; returns how many. */
uint64_t udpd_lock_print(struct udpd_stripe *s, FILE *f);
void udpd_lock_free_all(struct udpd_stripe *s);

#endif /* XTX_UDPD_LOCKS_H */
