// SPDX-License-Identifier: GPL-2.0-only
/* Loading a workload's rows through libxtx: batches of blind writes, many in flight. */
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "wlload.h"

/* Longest a loader waits in xtx_poll() before looking at its slots again. */
#define WL_LOAD_POLL_NS		(1000 * 1000ull)

int wl_rows_add(struct wl_rows *rows, uint8_t table, uint64_t key, const uint8_t *value,
		uint16_t vlen)
{
	uint8_t *big = NULL;
	struct wl_row *r;

	if (vlen > XTX_VALUE_MAX) {
		fprintf(stderr, "Error: --populate: table %u key %llu: a %u-byte value\n", table,
			(unsigned long long)key, vlen);
		return -1;
	}
	if (vlen > XTX_VALUE_INLINE) {
		big = malloc(vlen);
		if (!big) {
			fprintf(stderr, "Error: --populate: %s\n", strerror(ENOMEM));
			return -1;
		}
		memcpy(big, value, vlen);
	}
	if (rows->n == rows->cap) {
		size_t nc = rows->cap ? 2 * rows->cap : 4096;
		struct wl_row *nr = realloc(rows->r, nc * sizeof(*nr));

		if (!nr) {
			fprintf(stderr, "Error: --populate: %s\n", strerror(ENOMEM));
			free(big);
			return -1;
		}
		rows->r = nr;
		rows->cap = nc;
	}
	r = &rows->r[rows->n++];
	r->table = table;
	r->key = key;
	r->vlen = vlen;
	memset(r->value, 0, sizeof(r->value));
	if (!big)
		memcpy(r->value, value, vlen);
	r->big = big;
	return 0;
}

void wl_rows_free(struct wl_rows *rows)
{
	size_t i;

	for (i = 0; i < rows->n; i++)
		free(rows->r[i].big);
	free(rows->r);
	memset(rows, 0, sizeof(*rows));
}

enum { LSLOT_FREE, LSLOT_BUSY, LSLOT_RETRY };

struct wl_loader;

struct wl_lslot {
	struct wl_loader *l;
	const struct wl_row *first;
	unsigned int count;
	unsigned int retries;
	uint64_t mixed_since;	/* first MIXED abort of this batch in a row, 0: none */
	int state;
};

struct wl_loader {
	const struct wl_load_cfg *cfg;
	unsigned int idx;
	const struct wl_row *next, *end;	/* rows not yet handed to a slot */
	struct wl_lslot *slots;
	struct xtx_client *cl;
	struct wl_load_stats st;
	bool failed;
	bool full;		/* it failed on a full store, or perhaps did (in doubt) */
	char why[160];
};

static enum xtx_step load_step(struct xtx_txn *t, void *arg)
{
	struct wl_lslot *s = arg;
	unsigned int i;
	int err;

	for (i = 0; i < s->count; i++) {
		const struct wl_row *r = &s->first[i];

		err = xtx_put(t, r->table, r->key, wl_row_value(r), r->vlen);
		if (err) {
			snprintf(s->l->why, sizeof(s->l->why), "xtx_put(table %u, key %llu): %s",
				 r->table, (unsigned long long)r->key, strerror(-err));
			s->l->failed = true;
			return XTX_STEP_ABORT;
		}
	}
	return XTX_STEP_COMMIT;
}


static void load_done(struct xtx_txn *t, const struct xtx_txn_result *res, void *arg)
{
	struct wl_lslot *s = arg;
	struct wl_loader *l = s->l;

	(void)t;
	if (res->outcome == XTX_COMMITTED) {
		l->st.rows += s->count;
		if (l->cfg->written)
			atomic_fetch_add_explicit(l->cfg->written, s->count, memory_order_relaxed);
		l->st.txns++;
		s->state = LSLOT_FREE;
		return;
	}
	/*
	 * A table switching protocols refuses for up to two leases, however
	 * often asked: that wait is measured in time, not in retries.
	 */
	if (res->outcome == XTX_ABORTED && res->cause == XTX_CAUSE_MIXED) {
		uint64_t now = xtx_now_ns();

		if (!s->mixed_since)
			s->mixed_since = now;
		if (now - s->mixed_since < WL_LOAD_MIXED_WAIT_NS) {
			l->st.retries++;
			s->state = LSLOT_RETRY;
			return;
		}
	}
	if (res->outcome == XTX_ABORTED && xtx_cause_retryable(res->cause) &&
	    res->cause != XTX_CAUSE_MIXED && s->retries < WL_LOAD_MAX_RETRIES) {
		s->retries++;
		s->mixed_since = 0;
		l->st.retries++;
		s->state = LSLOT_RETRY;
		return;
	}
	s->state = LSLOT_FREE;
	if (l->failed)
		return;
	l->failed = true;
	/* a commit a full store refused is in doubt to libxtx (its log was written) */
	l->full = (res->outcome == XTX_ABORTED && res->cause == XTX_CAUSE_FULL) ||
		  res->outcome == XTX_IN_DOUBT;
	if (res->outcome == XTX_ABORTED)
		snprintf(l->why, sizeof(l->why), "a batch from table %u key %llu aborted: %s%s",
			 s->first->table, (unsigned long long)s->first->key,
			 xtx_cause_name(res->cause),
			 xtx_cause_retryable(res->cause) ? " (too many times)" : "");
	else
		snprintf(l->why, sizeof(l->why), "a batch from table %u key %llu: %s (servers "
			 "unreachable?)", s->first->table, (unsigned long long)s->first->key,
			 xtx_outcome_name(res->outcome));
}

/* Starts the slot's batch again, or the next rows if any; 0 or a negative errno. */
static int slot_fill(struct wl_loader *l, struct wl_lslot *s)
{
	int err;

	if (s->state == LSLOT_FREE) {
		size_t left = (size_t)(l->end - l->next);

		if (!left)
			return 0;
		s->first = l->next;
		s->count = left < WL_LOAD_BATCH ? (unsigned int)left : WL_LOAD_BATCH;
		s->retries = 0;
		s->mixed_since = 0;
		l->next += s->count;
	}
	err = xtx_txn_start(l->cl, load_step, load_done, s);
	if (err) {
		/* -EBUSY cannot happen: one slot per transaction the client allows */
		snprintf(l->why, sizeof(l->why), "starting a transaction: %s", strerror(-err));
		l->failed = true;
		return err;
	}
	s->state = LSLOT_BUSY;
	return 0;
}

static void *loader_main(void *arg)
{
	struct wl_loader *l = arg;
	const struct wl_load_cfg *cfg = l->cfg;
	unsigned int i;
	int n;

	for (;;) {
		for (i = 0; i < cfg->inflight && !l->failed; i++) {
			struct wl_lslot *s = &l->slots[i];

			if (s->state != LSLOT_BUSY && slot_fill(l, s))
				break;
		}
		if (!xtx_inflight(l->cl))
			break;
		n = xtx_poll(l->cl, WL_LOAD_POLL_NS);
		if (n < 0) {
			snprintf(l->why, sizeof(l->why), "xtx_poll: %s", strerror(-n));
			l->failed = true;
			break;
		}
	}
	l->st.retransmits = xtx_client_stats(l->cl)->retransmits;
	return NULL;
}

int wl_load_rows(const struct wl_load_cfg *cfg, const struct wl_rows *rows,
		 struct wl_load_stats *st)
{
	struct wl_loader *l = calloc(cfg->nclients, sizeof(*l));
	pthread_t *tid = calloc(cfg->nclients, sizeof(*tid));
	unsigned int i, j, started = 0;
	int rc = -1;

	memset(st, 0, sizeof(*st));
	if (!l || !tid) {
		fprintf(stderr, "Error: --populate: %s\n", strerror(ENOMEM));
		goto out;
	}
	if (cfg->protocol == XTX_PROTO_HADES) {
		fprintf(stderr, "Error: --populate: loading wants occ or 2pl\n");
		goto out;
	}
	for (i = 0; i < cfg->nclients; i++) {
		struct xtx_client_cfg cc = {
			.servers = cfg->servers,
			.nservers = cfg->nservers,
			.replication = cfg->replication,
			.protocol = cfg->protocol,
			.client_id = cfg->client_base + i,
			.max_inflight = cfg->inflight,
			.timeout_ns = cfg->timeout_ns,
			.lock_lease_ns = cfg->lock_lease_ns,
			.secret = cfg->secret,
			.cluster = cfg->cluster,
			.transport = cfg->transport,
		};

		l[i].cfg = cfg;
		l[i].idx = i;
		l[i].next = rows->r + rows->n * i / cfg->nclients;
		l[i].end = rows->r + rows->n * (i + 1) / cfg->nclients;
		l[i].slots = calloc(cfg->inflight, sizeof(*l[i].slots));
		if (!l[i].slots) {
			fprintf(stderr, "Error: --populate: %s\n", strerror(ENOMEM));
			goto out;
		}
		for (j = 0; j < cfg->inflight; j++)
			l[i].slots[j].l = &l[i];
		l[i].cl = xtx_client_open(&cc);
		if (!l[i].cl)
			goto out;
	}
	for (i = 0; i < cfg->nclients; i++) {
		if (pthread_create(&tid[i], NULL, loader_main, &l[i])) {
			fprintf(stderr, "Error: --populate: starting a loader thread failed\n");
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	rc = started == cfg->nclients ? 0 : -1;
	for (i = 0; i < started; i++) {
		st->rows += l[i].st.rows;
		st->txns += l[i].st.txns;
		st->retries += l[i].st.retries;
		st->retransmits += l[i].st.retransmits;
		st->full |= l[i].full;
		if (l[i].failed) {
			fprintf(stderr, "Error: --populate: loader %u (client %u): %s\n", i,
				cfg->client_base + i, l[i].why);
			rc = -1;
		}
	}
	if (!rc && st->rows != rows->n) {
		fprintf(stderr, "Error: --populate: %llu of %zu rows written\n",
			(unsigned long long)st->rows, rows->n);
		rc = -1;
	}
out:
	if (l) {
		for (i = 0; i < cfg->nclients; i++) {
			if (l[i].cl)
				xtx_client_close(l[i].cl);
			free(l[i].slots);
		}
	}
	free(l);
	free(tid);
	return rc;
}
