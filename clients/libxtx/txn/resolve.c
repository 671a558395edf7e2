// SPDX-License-Identifier: GPL-2.0-only
/* xtx_txn_resolve: asks the servers' resolvers what became of a transaction left in doubt. */
#include <string.h>
#include <arpa/inet.h>
#include <xtx/mac.h>
#include <xtx/proto.h>
#include "clock.h"
#include "ids.h"
#include "servers.h"
#include "internal.h"

#define ASK_EVERY_NS	(100ull * 1000 * 1000)

struct status_msg {
	struct xtx_hdr h;
	struct xtx_op op;
};

struct asking {
	uint64_t servers;	/* still to hear a final word from */
	uint64_t answered;	/* gave an answer other than "ask again" */
	uint64_t held;		/* hold its complete record (HADES: its Ack), undecided */
	bool committed, aborted;
};

/*
 * The servers' answers together.  Committed as soon as one says so
 * (decided, or validated there).  Anything else waits for every witness:
 * a participant that forgot a reader's Ack says not held while another
 * says validated, and validated wins.  Then aborted where one says decided
 * aborted, or, for HADES, not held (fenced, it can never Ack there, and
 * validation needs every Ack; the OCC/2PL resolver decides abort itself
 * when not held).  Every witness holding it undecided commits it: that is
 * the servers' rule (FaRM's complete records; HADES's every Ack), and
 * nothing takes a complete record or an Ack away.
 */
static enum xtx_outcome verdict(const struct asking *a, uint64_t witnesses)
{
	if (a->committed)
		return XTX_COMMITTED;
	if ((a->answered & witnesses) != witnesses)
		return XTX_IN_DOUBT;
	if (a->aborted)
		return XTX_ABORTED;
	if ((a->held & witnesses) == witnesses)
		return XTX_COMMITTED;
	return XTX_IN_DOUBT;
}

static void note(struct asking *a, unsigned int s, uint32_t state, bool hades)
{
	switch (state) {
	case XTX_TS_COMMITTED:
		a->committed = true;
		break;
	case XTX_TS_ABORTED:
		a->aborted = true;
		break;
	case XTX_TS_NOT_HELD:
		if (hades)
			a->aborted = true;
		break;
	case XTX_TS_HELD:
		a->held |= 1ull << s;
		break;
	default:
		break;
	}
}

/* One question to every server of mask; 0 or a negative errno. */
static int ask(struct xtx_client *c, struct xtx_transport *tr, uint64_t mask, uint64_t txn,
	       uint64_t *req_id)
{
	struct status_msg m[XTX_MAX_SERVERS];
	struct xtx_dgram d[XTX_MAX_SERVERS];
	unsigned int s, n = 0;
	int sent;

	for (s = 0; s < c->cfg.nservers; s++) {
		if (!(mask & (1ull << s)))
			continue;
		m[n] = (struct status_msg){
			.h = { .magic = XTX_MAGIC, .version = XTX_VERSION, .nops = 1,
			       .client_id = c->cfg.client_id, .req_id = (*req_id)++ },
			.op = { .opcode = XTX_OP_TXN_STATUS, .txn = txn,
				.flags = c->cfg.protocol == XTX_PROTO_HADES ? XTX_TSF_HADES : 0 },
		};
		if (c->w.mac)
			xtx_mac_sign(&c->w.secret, &m[n], sizeof(m[n]));
		d[n] = (struct xtx_dgram){ .buf = &m[n], .len = sizeof(m[n]), .server = s };
		n++;
	}
	sent = n ? xtx_transport_send(tr, d, n) : 0;
	return sent < 0 ? sent : 0;
}

/* Takes the answers queued, waiting up to wait_ns for the first. */
static int hear(struct xtx_client *c, struct xtx_transport *tr, struct asking *a, uint64_t txn,
		uint64_t wait_ns)
{
	struct status_msg m[8];
	struct xtx_dgram d[8];
	bool hades = c->cfg.protocol == XTX_PROTO_HADES;
	int i, n;

	for (i = 0; i < 8; i++)
		d[i] = (struct xtx_dgram){ .buf = &m[i], .cap = sizeof(m[i]) };
	n = xtx_transport_recv(tr, d, 8, wait_ns);
	for (i = 0; i < n; i++) {
		const struct status_msg *r = d[i].buf;

		if (d[i].len != sizeof(*r) || r->h.magic != XTX_MAGIC ||
		    !(r->h.flags & XTX_F_REPLY) || r->op.opcode != XTX_OP_TXN_STATUS ||
		    r->op.txn != txn || r->op.status != XTX_ST_OK)
			continue;
		note(a, d[i].server, r->op.flags, hades);
		if (r->op.flags != XTX_TS_UNKNOWN) {
			a->servers &= ~(1ull << d[i].server);
			a->answered |= 1ull << d[i].server;
		}
	}
	return n < 0 ? n : 0;
}

enum xtx_outcome xtx_txn_resolve(struct xtx_client *c, const struct xtx_txn_result *res,
				 uint64_t timeout_ns)
{
	struct sockaddr_in resolvers[XTX_MAX_SERVERS];
	struct xtx_transport tr;
	struct asking a = { .servers = res->servers };
	uint64_t end, req_id = xtx_req_id_start(), next = 0, witnesses;
	enum xtx_outcome o = XTX_IN_DOUBT;
	unsigned int s;

	if (res->outcome != XTX_IN_DOUBT)
		return res->outcome;
	/* nothing to ask, or a resolver that keeps no record of it */
	if (!a.servers || (c->cfg.protocol != XTX_PROTO_HADES && c->cfg.replication < 2))
		return XTX_IN_DOUBT;
	end = xtx_now_ns();
	end = timeout_ns > UINT64_MAX - end ? UINT64_MAX : end + timeout_ns;
	for (s = 0; s < c->cfg.nservers; s++) {
		/* the resolvers' port is the servers' + 1 */
		if (ntohs(c->cfg.servers[s].sin_port) == 65535)
			return XTX_IN_DOUBT;
		resolvers[s] = c->cfg.servers[s];
		resolvers[s].sin_port = htons(ntohs(c->cfg.servers[s].sin_port) + 1);
	}
	/*
	 * A witness the configuration moved out votes no more: the servers
	 * left decide without it (Xenic's rule), and so does the verdict.
	 */
	txn_reconfigure(c, true);
	witnesses = res->servers & ~xtx_cluster_gone(&c->map);
	a.servers = witnesses;
	if (!witnesses)
		return XTX_IN_DOUBT;
	if (xtx_transport_open(&tr, resolvers, c->cfg.nservers))
		return XTX_IN_DOUBT;
	for (;;) {
		uint64_t now = xtx_now_ns();

		o = verdict(&a, witnesses);
		if (o != XTX_IN_DOUBT || now >= end)
			break;
		if (now >= next) {
			/* HELD answers are asked again: a decision may follow */
			if (ask(c, &tr, a.servers | a.held, res->txn_id, &req_id))
				break;
			next = now + ASK_EVERY_NS;
		}
		if (hear(c, &tr, &a, res->txn_id, (next < end ? next : end) - now))
			break;
	}
	xtx_transport_close(&tr);
	return o;
}
