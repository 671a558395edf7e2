// SPDX-License-Identifier: GPL-2.0-only
/* Asking the servers about a run's transactions in doubt, and recording their answers. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "clock.h"
#include "doubts.h"
#include "histrec.h"

/*
 * How long one thread's questions may take together: a cluster restarted
 * whole decides what it left undecided once every replica is back.
 */
#define DOUBTS_BUDGET_NS	(90ull * 1000 * 1000 * 1000)

int doubts_keep(struct doubts *d, const struct xtx_txn *t, const struct xtx_txn_result *res)
{
	struct doubt *x;

	if (d->n == d->cap) {
		unsigned int cap = d->cap ? d->cap * 2 : 16;
		struct doubt *v = realloc(d->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	x = &d->v[d->n++];
	x->res = *res;
	x->n = xtx_txn_accesses(t, x->a, XTX_TXN_MAX_KEYS);
	if (x->n > XTX_TXN_MAX_KEYS)
		x->n = XTX_TXN_MAX_KEYS;
	return 0;
}

int doubts_settle(struct doubts *d, struct xtx_client *c, struct history_writer *w,
		  uint64_t timeout_ns, struct doubt_totals *tot, doubt_settled_fn settled,
		  void *arg)
{
	/* a cluster that cannot answer one cannot answer a thousand: one budget for them all */
	uint64_t end = xtx_now_ns() + DOUBTS_BUDGET_NS, now;
	unsigned int i;
	int err = 0;

	for (i = 0; i < d->n; i++) {
		struct doubt *x = &d->v[i];
		enum xtx_outcome o;

		now = xtx_now_ns();
		o = xtx_txn_resolve(c, &x->res, now >= end ? 0 :
					       end - now < timeout_ns ? end - now : timeout_ns);

		tot->kept++;
		if (settled)
			settled(arg, x->res.txn_id, o);
		if (o == XTX_COMMITTED)
			tot->committed++;
		else if (o == XTX_ABORTED)
			tot->aborted++;
		else
			tot->unresolved++;
		if (w && !err && histrec_accesses(w, x->res.txn_id, o, x->a, x->n))
			err = -1;
	}
	doubts_free(d);
	return err;
}

void doubts_report(const char *who, const struct doubt_totals *tot)
{
	if (tot->kept)
		fprintf(stderr, "%s: %" PRIu64 " transactions in doubt, asked the servers: %" PRIu64
			" committed, %" PRIu64 " aborted, %" PRIu64 " still in doubt\n", who,
			tot->kept, tot->committed, tot->aborted, tot->unresolved);
}

void doubts_free(struct doubts *d)
{
	free(d->v);
	d->v = NULL;
	d->n = d->cap = 0;
}
