// SPDX-License-Identifier: GPL-2.0-only
/* Request records, XTX_DEDUPE_WINDOW per client, each client's under its own mutex. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "dedupe.h"

struct udpd_dedupe_slot {
	uint64_t word;		/* xtx_dedupe_word(req_id, state) */
	struct xtx_op_result res[XTX_MAX_OPS];
};

struct udpd_dedupe {
	uint32_t max_clients;
	pthread_mutex_t *mu;		/* one per client: clients never contend */
	struct udpd_dedupe_slot *slot;	/* max_clients * XTX_DEDUPE_WINDOW */
};

struct udpd_dedupe *udpd_dedupe_new(uint32_t max_clients)
{
	struct udpd_dedupe *d = calloc(1, sizeof(*d));
	uint32_t i;

	if (!d)
		return NULL;
	d->max_clients = max_clients;
	d->mu = calloc(max_clients, sizeof(*d->mu));
	d->slot = calloc((size_t)max_clients * XTX_DEDUPE_WINDOW, sizeof(*d->slot));
	if (!d->mu || !d->slot) {
		free(d->mu);
		free(d->slot);
		free(d);
		return NULL;
	}
	for (i = 0; i < max_clients; i++)
		pthread_mutex_init(&d->mu[i], NULL);
	return d;
}

void udpd_dedupe_free(struct udpd_dedupe *d)
{
	uint32_t i;

	if (!d)
		return;
	for (i = 0; i < d->max_clients; i++)
		pthread_mutex_destroy(&d->mu[i]);
	free(d->mu);
	free(d->slot);
	free(d);
}

static struct udpd_dedupe_slot *slot_of(struct udpd_dedupe *d, uint32_t client_id,
					uint64_t req_id)
{
	return &d->slot[(size_t)client_id * XTX_DEDUPE_WINDOW + (req_id & (XTX_DEDUPE_WINDOW - 1))];
}

int udpd_dedupe_claim(struct udpd_dedupe *d, uint32_t client_id, uint64_t req_id,
		      struct xtx_op_result *res)
{
	struct udpd_dedupe_slot *s = slot_of(d, client_id, req_id);
	uint64_t seen;
	int verdict;
	uint32_t i;

	pthread_mutex_lock(&d->mu[client_id]);
	seen = s->word >> 2;
	if (seen == req_id) {
		if ((s->word & XTX_DEDUPE_STATE_MASK) == XTX_DEDUPE_DONE) {
			memcpy(res, s->res, sizeof(s->res));
			verdict = UDPD_DEDUPE_DUPLICATE;
		} else {
			verdict = UDPD_DEDUPE_IN_FLIGHT;
		}
	} else if (seen > req_id) {
		verdict = UDPD_DEDUPE_STALE;
	} else {
		s->word = xtx_dedupe_word(req_id, XTX_DEDUPE_BUSY);
		/* a status left by the slot's previous request must not read as ours */
		for (i = 0; i < XTX_MAX_OPS; i++)
			s->res[i].status = XTX_ST_NONE;
		verdict = UDPD_DEDUPE_NEW;
	}
	pthread_mutex_unlock(&d->mu[client_id]);
	return verdict;
}

void udpd_dedupe_record(struct udpd_dedupe *d, uint32_t client_id, uint64_t req_id,
			uint32_t idx, const struct xtx_op *op)
{
	struct xtx_op_result *r;

	if (idx >= XTX_MAX_OPS)
		return;
	r = &slot_of(d, client_id, req_id)->res[idx];
	r->status = op->status;
	r->flags = op->flags;
	r->version = op->version;
	r->token = op->token;
}

void udpd_dedupe_done(struct udpd_dedupe *d, uint32_t client_id, uint64_t req_id)
{
	struct udpd_dedupe_slot *s = slot_of(d, client_id, req_id);

	/* the mutex orders the records before any duplicate's copy of them */
	pthread_mutex_lock(&d->mu[client_id]);
	s->word = xtx_dedupe_word(req_id, XTX_DEDUPE_DONE);
	pthread_mutex_unlock(&d->mu[client_id]);
}
