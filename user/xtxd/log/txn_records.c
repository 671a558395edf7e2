// SPDX-License-Identifier: GPL-2.0-only
/* The transaction table the resolver and recovery share, and the decision rule. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/hash.h>
#include "txn_records.h"

static size_t slot_of(const struct xtxd_txns *t, uint64_t txn)
{
	return xtx_mix64(txn) & (t->nb - 1);
}

static int grow(struct xtxd_txns *t)
{
	size_t nb = t->nb ? t->nb * 2 : 256, i;
	struct xtxd_txn **b = calloc(nb, sizeof(*b)), *x, *next;

	if (!b)
		return -ENOMEM;
	for (i = 0; i < t->nb; i++) {
		for (x = t->b[i]; x; x = next) {
			size_t s = xtx_mix64(x->txn) & (nb - 1);

			next = x->next;
			x->next = b[s];
			b[s] = x;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
	return 0;
}

struct xtxd_txn *xtxd_txns_get(struct xtxd_txns *t, uint64_t txn, bool create, uint64_t now)
{
	struct xtxd_txn *x;
	size_t s;

	if (t->nb) {
		for (x = t->b[slot_of(t, txn)]; x; x = x->next)
			if (x->txn == txn)
				return x;
	}
	if (!create)
		return NULL;
	if ((t->n + 1) > t->nb && grow(t))
		return NULL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->txn = txn;
	x->first_ns = now;
	s = slot_of(t, txn);
	x->next = t->b[s];
	t->b[s] = x;
	t->n++;
	return x;
}

static void add_replica(struct xtxd_txn *x, uint16_t r)
{
	unsigned int j;

	for (j = 0; j < x->nrep && x->rep[j] != r; j++)
		;
	if (j == x->nrep && x->nrep < XTXD_TXN_MAX_REPLICAS)
		x->rep[x->nrep++] = r;
}

int xtxd_txns_add(struct xtxd_txns *t, const struct xtx_log_write *wr, uint64_t now)
{
	const struct xtx_log_entry *e = &wr->e;
	struct xtxd_txn *x = xtxd_txns_get(t, e->txn, true, now);
	uint8_t *big = NULL;
	unsigned int i;

	if (!x)
		return -ENOMEM;
	if (e->flags & XTX_LOGF_META) {
		for (i = 0; i < 64; i++)
			if (e->version >> i & 1)
				add_replica(x, (uint16_t)i);
		x->meta = true;
		return 0;
	}
	if (x->nw == x->cap) {
		uint32_t cap = x->cap ? x->cap * 2 : 4;
		struct xtx_log_entry *w = realloc(x->w, cap * sizeof(*w));
		uint8_t **b;

		if (!w)
			return -ENOMEM;
		x->w = w;
		b = realloc(x->big, cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		x->big = b;
		x->cap = cap;
	}
	/* most values fit the entry: only the rare big one costs an allocation */
	if (wr->vlen > XTX_VALUE_INLINE) {
		big = malloc(wr->vlen);
		if (!big)
			return -ENOMEM;
		memcpy(big, wr->value, wr->vlen);
	}
	x->big[x->nw] = big;
	x->w[x->nw] = *e;
	if (big) {
		/* the head as the log holds it: its length in a struct xtx_log_ext */
		struct xtx_log_ext ext = { .len = wr->vlen, .txn = e->txn };
		struct xtx_log_entry *h = &x->w[x->nw];

		h->flags |= XTX_LOGF_EXT;
		h->vlen = 0;
		memset(h->value, 0, sizeof(h->value));
		memcpy(h->value, &ext, sizeof(ext));
	}
	x->nw++;
	for (i = 0; i < e->nreplicas && i < 3; i++)
		add_replica(x, e->replicas[i]);
	if (e->flags & XTX_LOGF_LAST) {
		x->last = true;
		x->last_count = e->nwrites;
	}
	return 0;
}

void xtxd_txn_write(const struct xtxd_txn *x, uint32_t i, struct xtx_log_write *out)
{
	uint16_t len = xtx_logrec_ext_len(&x->w[i]);

	xtx_logrec_from_entry(out, &x->w[i]);
	if (x->big[i] && len) {
		out->vlen = len;
		memcpy(out->value, x->big[i], len);
		memset(out->value + len, 0, sizeof(out->value) - len);
	}
}

struct xtx_log_write *xtxd_txn_writes(const struct xtxd_txn *x, uint32_t *n)
{
	struct xtx_log_write *w = malloc((x->nw ? x->nw : 1) * sizeof(*w));
	uint32_t i;

	*n = 0;
	if (!w)
		return NULL;
	for (i = 0; i < x->nw; i++)
		xtxd_txn_write(x, i, &w[i]);
	*n = x->nw;
	return w;
}

static void txn_free(struct xtxd_txn *x)
{
	uint32_t i;

	for (i = 0; i < x->nw; i++)
		free(x->big[i]);
	free(x->big);
	free(x->w);
	free(x);
}

bool xtxd_txn_complete(const struct xtxd_txn *x)
{
	uint32_t i, j, distinct = x->meta ? 1 : 0;

	if (!x->last)
		return false;
	for (i = 0; i < x->nw && distinct < x->last_count; i++) {
		for (j = 0; j < i; j++)
			if (x->w[j].key == x->w[i].key && x->w[j].table == x->w[i].table)
				break;
		distinct += j == i;
	}
	return distinct >= x->last_count;
}

void xtxd_txns_del(struct xtxd_txns *t, uint64_t txn)
{
	struct xtxd_txn **pp, *x;

	if (!t->nb)
		return;
	for (pp = &t->b[slot_of(t, txn)]; (x = *pp); pp = &x->next) {
		if (x->txn == txn) {
			*pp = x->next;
			txn_free(x);
			t->n--;
			return;
		}
	}
}

void xtxd_txns_each(struct xtxd_txns *t, void (*fn)(struct xtxd_txn *x, void *arg), void *arg)
{
	struct xtxd_txn *x, *next;
	size_t i;

	for (i = 0; i < t->nb; i++) {
		for (x = t->b[i]; x; x = next) {
			next = x->next;
			fn(x, arg);
		}
	}
}

void xtxd_txns_free(struct xtxd_txns *t)
{
	struct xtxd_txn *x, *next;
	size_t i;

	for (i = 0; i < t->nb; i++) {
		for (x = t->b[i]; x; x = next) {
			next = x->next;
			txn_free(x);
		}
	}
	free(t->b);
	memset(t, 0, sizeof(*t));
}

enum xtxd_outcome xtxd_decide(const uint8_t *answers, unsigned int n)
{
	unsigned int i, hold = 0, gone = 0;

	for (i = 0; i < n; i++) {
		switch (answers[i]) {
		case XTXD_ANS_GONE:
			gone++;
			break;
		case XTXD_ANS_COMMITTED:
			return XTXD_OUT_COMMIT;
		case XTXD_ANS_ABORTED:
		case XTXD_ANS_NOT_HELD:
			return XTXD_OUT_ABORT;
		case XTXD_ANS_HOLD:
			hold++;
			break;
		}
	}
	return hold && hold + gone == n ? XTXD_OUT_COMMIT : XTXD_OUT_NONE;
}
