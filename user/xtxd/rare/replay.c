// SPDX-License-Identifier: GPL-2.0-only
/* A bounded, set-associative record of rare-path answers, keyed by (client, request, op). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/hash.h>
#include "replay.h"

#define REPLAY_WAYS	4

/* A record as kept: the first fields of struct xtxd_replay_rec, then its value. */
struct replay_slot {
	uint64_t seq;		/* 0: empty; else when it was written, to find the oldest */
	uint64_t req_id;
	uint32_t client_id;
	uint8_t op_idx, opcode, table, status;
	uint64_t key, version, token;
	uint32_t flags;
	uint16_t vlen;
	uint8_t pending;	/* xtxd_replay_rec.pending */
	uint8_t small[XTX_VALUE_INLINE];
	uint8_t *big;		/* the value when vlen > XTX_VALUE_INLINE, malloc'd */
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

static bool rec_is(const struct replay_slot *rec, uint32_t client_id, uint64_t req_id,
		   uint8_t op_idx)
{
	return rec->req_id == req_id && rec->client_id == client_id && rec->op_idx == op_idx;
}

/* Fills a slot; false (slot unchanged) when a big value finds no memory. */
static bool slot_set(struct replay_slot *sl, const struct xtxd_replay_rec *rec, uint64_t seq)
{
	uint16_t vlen = rec->vlen > XTX_VALUE_MAX ? XTX_VALUE_MAX : rec->vlen;
	uint8_t *big = NULL;

	if (vlen > XTX_VALUE_INLINE) {
		big = malloc(vlen);
		if (!big)
			return false;
		memcpy(big, rec->value, vlen);
	}
	free(sl->big);
	sl->big = big;
	sl->seq = seq;
	sl->req_id = rec->req_id;
	sl->client_id = rec->client_id;
	sl->op_idx = rec->op_idx;
	sl->opcode = rec->opcode;
	sl->table = rec->table;
	sl->status = rec->status;
	sl->key = rec->key;
	sl->version = rec->version;
	sl->token = rec->token;
	sl->pending = rec->pending;
	sl->flags = rec->flags;
	sl->vlen = vlen;
	memset(sl->small, 0, sizeof(sl->small));
	if (!big)
		memcpy(sl->small, rec->value, vlen);
	return true;
}

static void slot_get(const struct replay_slot *sl, struct xtxd_replay_rec *out)
{
	out->req_id = sl->req_id;
	out->client_id = sl->client_id;
	out->op_idx = sl->op_idx;
	out->opcode = sl->opcode;
	out->table = sl->table;
	out->status = sl->status;
	out->key = sl->key;
	out->version = sl->version;
	out->token = sl->token;
	out->flags = sl->flags;
	out->vlen = sl->vlen;
	out->pending = sl->pending;
	memcpy(out->value, sl->big ? sl->big : sl->small, sl->vlen);
	memset(out->value + sl->vlen, 0, XTX_VALUE_MAX - sl->vlen);
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
	size_t i;

	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	for (i = 0; i < (size_t)r->nsets * REPLAY_WAYS; i++)
		free(r->slot[i].big);
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
		if (set[w].seq && rec_is(&set[w], rec->client_id, rec->req_id, rec->op_idx)) {
			victim = &set[w];
			break;
		}
		if (set[w].seq < victim->seq)
			victim = &set[w];
	}
	/* without memory for its value the op goes unrecorded, as if aged out */
	if (!slot_set(victim, rec, r->seq + 1))
		victim->seq = 0;
	else
		r->seq++;
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
		if (set[w].seq && rec_is(&set[w], client_id, req_id, op_idx)) {
			slot_get(&set[w], out);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return found;
}
