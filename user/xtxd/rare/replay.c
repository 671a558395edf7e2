// SPDX-License-Identifier: GPL-2.0-only
/* A bounded, set-associative record of rare-path answers, keyed by (client, request, op). */
#include <pthread.h>
#include <stdlib.h>
#include <xtx/hash.h>
#include "replay.h"

#define REPLAY_WAYS	4

struct replay_slot {
	uint64_t seq;		/* 0: empty; else when it was written, to find the oldest */
	struct xtxd_replay_rec rec;
};

struct xtxd_replay {
	/* one lock: the rare path runs a few thousand ops a second, not millions */
	pthread_mutex_t lock;
	uint32_t nsets;		/* a power of two */
	uint64_t seq;
	struct replay_slot *slot;	/* [nsets][REPLAY_WAYS] */
};

static uint32_t replay_set(const struct xtxd_replay *r, uint32_t client_id, uint64_t req_id,
			   uint8_t op_idx)
{
	uint64_t h = xtx_mix64(req_id ^ ((uint64_t)client_id << 40) ^ ((uint64_t)op_idx << 32));

	return (uint32_t)h & (r->nsets - 1);
}

static bool rec_is(const struct xtxd_replay_rec *rec, uint32_t client_id, uint64_t req_id,
		   uint8_t op_idx)
{
	return rec->req_id == req_id && rec->client_id == client_id && rec->op_idx == op_idx;
}

struct xtxd_replay *xtxd_replay_new(uint32_t entries)
{
	struct xtxd_replay *r = calloc(1, sizeof(*r));
	uint32_t nsets = 1;

	if (!r)
		return NULL;
	while (nsets * REPLAY_WAYS < entries && nsets < (1u << 26))
		nsets <<= 1;
	r->nsets = nsets;
	r->slot = calloc((size_t)nsets * REPLAY_WAYS, sizeof(*r->slot));
	if (!r->slot) {
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

void xtxd_replay_free(struct xtxd_replay *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r->slot);
	free(r);
}

void xtxd_replay_put(struct xtxd_replay *r, const struct xtxd_replay_rec *rec)
{
	struct replay_slot *set, *victim;
	int w;

	pthread_mutex_lock(&r->lock);
	set = &r->slot[(size_t)replay_set(r, rec->client_id, rec->req_id, rec->op_idx) *
		       REPLAY_WAYS];
	victim = &set[0];
	for (w = 0; w < REPLAY_WAYS; w++) {
		if (set[w].seq && rec_is(&set[w].rec, rec->client_id, rec->req_id, rec->op_idx)) {
			victim = &set[w];
			break;
		}
		if (set[w].seq < victim->seq)
			victim = &set[w];
	}
	victim->seq = ++r->seq;
	victim->rec = *rec;
	pthread_mutex_unlock(&r->lock);
}

bool xtxd_replay_get(struct xtxd_replay *r, uint32_t client_id, uint64_t req_id, uint8_t op_idx,
		     struct xtxd_replay_rec *out)
{
	struct replay_slot *set;
	bool found = false;
	int w;

	pthread_mutex_lock(&r->lock);
	set = &r->slot[(size_t)replay_set(r, client_id, req_id, op_idx) * REPLAY_WAYS];
	for (w = 0; w < REPLAY_WAYS; w++) {
		if (set[w].seq && rec_is(&set[w].rec, client_id, req_id, op_idx)) {
			*out = set[w].rec;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return found;
}
