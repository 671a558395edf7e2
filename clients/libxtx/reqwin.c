// SPDX-License-Identifier: GPL-2.0-only
/* Request windows: id assignment, timeouts, batched (re)transmission and reply matching. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/msg.h>
#include "clock.h"
#include "reqwin.h"

int xtx_reqwins_init(struct xtx_reqwins *w, unsigned int nservers, uint32_t client_id,
		     uint64_t first_id, unsigned int inflight, uint64_t timeout_ns)
{
	unsigned int nbatch = nservers * XTX_DEDUPE_WINDOW, s;

	memset(w, 0, sizeof(*w));
	w->client_id = client_id;
	w->nservers = nservers;
	w->inflight = inflight;
	w->timeout_ns = timeout_ns;
	w->srv = calloc(nservers, sizeof(*w->srv));
	w->sendv = calloc(nbatch, sizeof(*w->sendv));
	w->which = calloc(nbatch, sizeof(*w->which));
	if (!w->srv || !w->sendv || !w->which) {
		xtx_reqwins_free(w);
		return -ENOMEM;
	}
	for (s = 0; s < nservers; s++)
		w->srv[s].first_id = w->srv[s].next_id = first_id;
	return 0;
}

void xtx_reqwins_free(struct xtx_reqwins *w)
{
	free(w->srv);
	free(w->sendv);
	free(w->which);
	w->srv = NULL;
	w->sendv = NULL;
	w->which = NULL;
}

struct xtx_req *xtx_reqwin_next(struct xtx_reqwins *w, unsigned int s)
{
	struct xtx_reqwin *srv = &w->srv[s];
	struct xtx_req *r = &srv->slot[srv->next_id % XTX_DEDUPE_WINDOW];

	/* A slot still taken is XTX_DEDUPE_WINDOW ids behind: wait for it. */
	if (srv->outstanding >= w->inflight || r->req_id)
		return NULL;
	xtx_msg_init(&r->msg, w->client_id, srv->next_id);
	r->msg.hdr.epoch = w->epoch;
	r->len = 0;
	return r;
}

void xtx_reqwin_submit(struct xtx_reqwins *w, unsigned int s, struct xtx_req *r)
{
	struct xtx_reqwin *srv = &w->srv[s];

	r->req_id = srv->next_id++;
	/* the request is final now: its MAC goes with every (re)transmission */
	if (w->mac)
		xtx_mac_sign(&w->secret, &r->msg, xtx_req_len(r));
	r->tx = 0;
	r->pending = true;
	srv->outstanding++;
}

void xtx_reqwin_done(struct xtx_reqwins *w, unsigned int s, struct xtx_req *r)
{
	r->req_id = 0;
	r->pending = false;
	w->srv[s].outstanding--;
}

uint64_t xtx_reqwins_expire(struct xtx_reqwins *w, uint64_t now, uint64_t max_wait_ns)
{
	uint64_t next = now + max_wait_ns, due;
	unsigned int s, i;

	for (s = 0; s < w->nservers; s++) {
		struct xtx_reqwin *srv = &w->srv[s];

		if (!srv->outstanding)
			continue;
		for (i = 0; i < XTX_DEDUPE_WINDOW; i++) {
			struct xtx_req *r = &srv->slot[i];

			if (!r->req_id || r->pending)
				continue;
			due = r->last_ns + w->timeout_ns;
			if (due <= now)
				r->pending = true;
			else if (due < next)
				next = due;
		}
	}
	return next;
}

int xtx_reqwins_send(struct xtx_reqwins *w, struct xtx_transport *tr, uint64_t *sent,
		     uint64_t *retrans)
{
	struct xtx_dgram *d = w->sendv;
	unsigned int s, i, n = 0;
	uint64_t now;
	int out;

	for (s = 0; s < w->nservers; s++) {
		for (i = 0; i < XTX_DEDUPE_WINDOW; i++) {
			struct xtx_req *r = &w->srv[s].slot[i];

			if (!r->req_id || !r->pending)
				continue;
			d[n].buf = &r->msg;
			d[n].len = xtx_req_len(r);
			d[n].server = s;
			w->which[n++] = r;
		}
	}
	if (!n)
		return 0;
	/* Before the send: on veth the reply may be queued by the time it returns. */
	now = xtx_now_ns();
	out = xtx_transport_send(tr, d, n);
	if (out < 0)
		return out;
	for (i = 0; i < (unsigned int)out; i++) {
		struct xtx_req *r = w->which[i];

		if (r->tx++)
			(*retrans)++;
		else
			r->first_ns = now;
		r->last_ns = now;
		r->pending = false;
		w->srv[d[i].server].sent++;
	}
	*sent += out;
	return 0;
}

enum xtx_reqwin_match xtx_reqwin_match(struct xtx_reqwins *w, const struct xtx_dgram *d,
				       struct xtx_req **req)
{
	const struct xtx_msgbuf *m = d->buf;
	const struct xtx_hdr *h = &m->hdr;
	struct xtx_reqwin *srv = &w->srv[d->server];
	struct xtx_req *r;

	srv->replies++;
	*req = NULL;
	if (d->len < sizeof(*h) || h->magic != XTX_MAGIC || !(h->flags & XTX_F_REPLY) ||
	    h->client_id != w->client_id)
		return XTX_RW_FOREIGN;
	r = &srv->slot[h->req_id % XTX_DEDUPE_WINDOW];
	if (r->req_id != h->req_id || !h->req_id) {
		/* A retransmission's twin arriving after the first answer. */
		if (h->req_id >= srv->first_id && h->req_id < srv->next_id)
			return XTX_RW_DUPLICATE;
		return XTX_RW_UNKNOWN;
	}
	*req = r;
	if (!xtx_msg_is_reply_to(m, d->len, &r->msg.hdr))
		return XTX_RW_MISMATCH;
	if (h->status == XTX_ST_RETRY || h->status == XTX_ST_EPOCH) {
		/*
		 * The same request again, but not at once: the server has it
		 * executing elsewhere (or waits out a lost rare-path round
		 * trip's lease), or serves another configuration epoch
		 * for now, so the timeout paces the resend.
		 */
		return XTX_RW_RETRY;
	}
	return XTX_RW_ANSWER;
}

unsigned int xtx_reqwins_outstanding(const struct xtx_reqwins *w)
{
	unsigned int s, n = 0;

	for (s = 0; s < w->nservers; s++)
		n += w->srv[s].outstanding;
	return n;
}

int xtx_reqwins_step(struct xtx_reqwins *w, struct xtx_transport *tr, uint64_t *sent,
		     uint64_t *retrans, struct xtx_dgram *recvv, uint64_t next_ns,
		     unsigned int thread)
{
	uint64_t now;
	int err, n;

	err = xtx_reqwins_send(w, tr, sent, retrans);
	if (err) {
		fprintf(stderr, "Error: thread %u: sending: %s\n", thread, strerror(-err));
		return err;
	}
	now = xtx_now_ns();
	n = xtx_transport_recv(tr, recvv, XTX_RECV_BATCH, next_ns > now ? next_ns - now : 0);
	if (n < 0)
		fprintf(stderr, "Error: thread %u: receiving: %s\n", thread, strerror(-n));
	return n;
}
