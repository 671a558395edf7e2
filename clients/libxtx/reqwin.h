/* SPDX-License-Identifier: GPL-2.0-only */
/* Per-server windows of outstanding requests: ids inside the dedupe window, timeouts, resends. */
#ifndef XTX_REQWIN_H
#define XTX_REQWIN_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/mac.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include "msgbuf.h"
#include "transport.h"

/*
 * The server remembers the last XTX_DEDUPE_WINDOW request ids of a client;
 * keeping fewer outstanding gives every outstanding id a record of its own,
 * so a retransmission is always answered from its own record, never STALE.
 */
#define XTX_REQWIN_MAX_INFLIGHT	(XTX_DEDUPE_WINDOW - 1)

struct xtx_req {
	uint64_t req_id;	/* 0: free */
	uint64_t first_ns;	/* first transmission: latency includes loss recovery */
	uint64_t last_ns;	/* latest transmission: drives the timeout */
	uint32_t tx;		/* transmissions so far */
	bool pending;		/* goes out in the next batch */
	/* payload bytes with value areas; 0: header and ops only (xtx_msg_len()) */
	uint16_t len;
	/* The request stays here intact: retransmitted as is, replies checked against it. */
	struct xtx_msgbuf msg;
};

/* The bytes of r that go on the wire. */
static inline uint32_t xtx_req_len(const struct xtx_req *r)
{
	return r->len ? r->len : (uint32_t)xtx_msg_len(r->msg.hdr.nops);
}

/* One server's window. */
struct xtx_reqwin {
	uint64_t first_id;	/* ids below were never ours */
	uint64_t next_id;
	unsigned int outstanding;
	uint64_t sent, replies;	/* for comparing with that server's counters */
	/* Indexed by req_id % XTX_DEDUPE_WINDOW, like the server's record. */
	struct xtx_req slot[XTX_DEDUPE_WINDOW];
};

/* A thread's windows, one per server, all under one client id. */
struct xtx_reqwins {
	uint32_t client_id;
	unsigned int nservers;
	unsigned int inflight;	/* 1..XTX_REQWIN_MAX_INFLIGHT */
	uint64_t timeout_ns;	/* resend after this long without a reply */
	struct xtx_reqwin *srv;
	/* The configuration epoch every request names (0: a static cluster). */
	uint16_t epoch;
	/* With the cluster's shared secret every request carries its MAC (xtx/mac.h). */
	bool mac;
	struct xtx_secret secret;
	/* Scratch for one send batch: every slot of every server. */
	struct xtx_dgram *sendv;
	struct xtx_req **which;
};

/*
 * Every (client id, server) pair numbers its requests from first_id on
 * (see xtx_req_id_start()).  Returns 0 or -ENOMEM; prints nothing.
 */
int xtx_reqwins_init(struct xtx_reqwins *w, unsigned int nservers, uint32_t client_id,
		     uint64_t first_id, unsigned int inflight, uint64_t timeout_ns);
void xtx_reqwins_free(struct xtx_reqwins *w);


/*
 * The slot for server s's next request, with the header written and no
 * ops, or NULL while the window is full.  Nothing is committed until
 * xtx_reqwin_submit(): a request left unsubmitted is simply forgotten.
 */
struct xtx_req *xtx_reqwin_next(struct xtx_reqwins *w, unsigned int s);
/* Takes the request id and queues the request for the next send. */
void xtx_reqwin_submit(struct xtx_reqwins *w, unsigned int s, struct xtx_req *r);
/* Frees an answered request's slot. */
void xtx_reqwin_done(struct xtx_reqwins *w, unsigned int s, struct xtx_req *r);

/*
 * Marks requests unanswered for timeout_ns for retransmission.  Returns
 * the next timeout deadline, at most now + max_wait_ns.
 */
uint64_t xtx_reqwins_expire(struct xtx_reqwins *w, uint64_t now, uint64_t max_wait_ns);

/*
 * Sends every pending request in one batch (unsent ones stay pending) and
 * adds to *sent and *retrans.  Returns 0 or a negative errno.
 */
int xtx_reqwins_send(struct xtx_reqwins *w, struct xtx_transport *tr, uint64_t *sent,
		     uint64_t *retrans);

/*
 * One turn of a benchmark thread: send what is pending, then receive into
 * recvv (XTX_RECV_BATCH entries) until the first datagram or next_ns (the
 * earliest timeout).  Returns the datagrams received, or a negative errno
 * after printing "Error: thread N: ..." (the caller counts it and stops).
 */
int xtx_reqwins_step(struct xtx_reqwins *w, struct xtx_transport *tr, uint64_t *sent,
		     uint64_t *retrans, struct xtx_dgram *recvv, uint64_t next_ns,
		     unsigned int thread);

enum xtx_reqwin_match {
	XTX_RW_ANSWER,		/* *req answered (packet status in the header): done() it */
	XTX_RW_RETRY,		/* the server asked for the same request again: resent on timeout */
	XTX_RW_DUPLICATE,	/* a retransmission's twin after the first answer */
	XTX_RW_FOREIGN,		/* not an xtx reply for this client */
	XTX_RW_UNKNOWN,		/* a request id never sent */
	XTX_RW_MISMATCH,	/* *req's id, but not its reply: done() it, it is not retried */
};

/* Finds the request a datagram from server d->server answers. */
enum xtx_reqwin_match xtx_reqwin_match(struct xtx_reqwins *w, const struct xtx_dgram *d,
				       struct xtx_req **req);

/* Requests outstanding to all servers. */
unsigned int xtx_reqwins_outstanding(const struct xtx_reqwins *w);

#endif /* XTX_REQWIN_H */
