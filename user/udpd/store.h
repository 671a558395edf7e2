/* SPDX-License-Identifier: GPL-2.0-only */
/* The server's state: keys and locks in hash stripes, each stripe under one mutex. */
#ifndef XTX_UDPD_STORE_H
#define XTX_UDPD_STORE_H

#include <pthread.h>
#include <stdint.h>
#include "kvmodel.h"

/*
 * A key's value and its lock live in the same stripe, so an op that
 * touches both (a lock grant that reads the value, a commit that installs
 * and unlocks) runs as one critical section.  The stripe comes from hash
 * bits 40..49, apart from the low bits the KV model and the lock chains
 * index with.
 */
#define UDPD_STRIPES		1024
#define UDPD_LOCK_BUCKETS	256	/* lock chains per stripe */

struct udpd_lock;

struct udpd_stripe {
	pthread_mutex_t mu;
	struct kvmodel *kv;
	struct udpd_lock *locks[UDPD_LOCK_BUCKETS];
	uint64_t gen;		/* the last lock epoch handed out here: grant tokens */
} __attribute__((aligned(64)));

struct udpd_store {
	struct udpd_stripe stripe[UDPD_STRIPES];
};

/* value_size: the longest value INSERT and UPDATE take.  NULL on ENOMEM. */
struct udpd_store *udpd_store_new(unsigned int value_size);
void udpd_store_free(struct udpd_store *s);

static inline struct udpd_stripe *udpd_stripe_of(struct udpd_store *s, uint64_t hash)
{
	return &s->stripe[(hash >> 40) & (UDPD_STRIPES - 1)];
}

/*
 * Writes every live key as `xtxctl dump` prints them (sorted by table,
 * then key) to path, and the held locks to path.locks, one per line.
 * Each file appears whole (written aside, then renamed).  0 or -errno.
 */
int udpd_store_dump(struct udpd_store *s, const char *path);

#endif /* XTX_UDPD_STORE_H */
