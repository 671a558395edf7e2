// SPDX-License-Identifier: GPL-2.0-only
/* libxtx's client: configuration, the pool of in-flight transactions, xtx_poll(). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/hash.h>
#include "clock.h"
#include "ids.h"
#include "servers.h"
#include "internal.h"

#define DEFAULT_INFLIGHT	16
#define DEFAULT_TIMEOUT_NS	2000000ull
#define DEFAULT_MAX_TRIES	50

/* The protocols, indexed by enum xtx_protocol: a new one is a new proto_*.c and an entry here. */
const struct txn_protocol *const txn_protocols[] = {
	[XTX_PROTO_OCC] = &txn_proto_occ,
	[XTX_PROTO_2PL] = &txn_proto_2pl,
	[XTX_PROTO_HADES] = &txn_proto_hades,
};
const unsigned int txn_nprotocols = sizeof(txn_protocols) / sizeof(txn_protocols[0]);

/* The servers and replication given must be the cluster's. */
static int cluster_mismatch(const struct xtx_client_cfg *cfg)
{
	const struct xtx_cluster *m = cfg->cluster;
	unsigned int i;

	if (m->nservers != cfg->nservers || m->replication != cfg->replication) {
		fprintf(stderr, "Error: libxtx: the cluster has %u servers and replication %u, "
			"the client was given %u and %u\n", m->nservers, m->replication,
			cfg->nservers, cfg->replication);
		return -1;
	}
	for (i = 0; i < m->nservers; i++) {
		if (m->server[i].s_addr != cfg->servers[i].sin_addr.s_addr) {
			fprintf(stderr, "Error: libxtx: server %u is not the cluster's server %u\n",
				i, i);
			return -1;
		}
	}
	if (m->epoch < 1 || m->epoch > XTX_CLUSTER_EPOCH_MAX) {
		fprintf(stderr, "Error: libxtx: cluster epoch %u: 1..%u\n", m->epoch,
			XTX_CLUSTER_EPOCH_MAX);
		return -1;
	}
	return 0;
}

static int check_cfg(struct xtx_client_cfg *cfg)
{
	const struct txn_protocol *proto;
	unsigned int rmax, i, j;

	if (!cfg->servers || !cfg->nservers || cfg->nservers > XTX_MAX_SERVERS) {
		fprintf(stderr, "Error: libxtx: 1 to %u servers, not %u\n", XTX_MAX_SERVERS,
			cfg->nservers);
		return -EINVAL;
	}
	for (i = 0; i < cfg->nservers; i++) {
		for (j = 0; j < i; j++) {
			if (cfg->servers[i].sin_addr.s_addr == cfg->servers[j].sin_addr.s_addr &&
			    cfg->servers[i].sin_port == cfg->servers[j].sin_port) {
				/* two indices for one server would put replicas together */
				fprintf(stderr, "Error: libxtx: servers %u and %u are the same\n", j, i);
				return -EINVAL;
			}
		}
	}
	rmax = cfg->nservers < TXN_MAX_REPLICAS ? cfg->nservers : TXN_MAX_REPLICAS;
	if (!cfg->replication)
		cfg->replication = rmax;
	if (cfg->replication > rmax) {
		fprintf(stderr, "Error: libxtx: replication %u needs at least as many servers "
			"(have %u) and at most %u\n", cfg->replication, cfg->nservers,
			TXN_MAX_REPLICAS);
		return -EINVAL;
	}
	if ((unsigned int)cfg->protocol >= txn_nprotocols) {
		fprintf(stderr, "Error: libxtx: unknown protocol %d\n", cfg->protocol);
		return -EINVAL;
	}
	proto = txn_protocols[cfg->protocol];
	if (proto->max_servers && cfg->nservers > proto->max_servers) {
		fprintf(stderr, "Error: libxtx: %s takes at most %u servers\n", proto->name,
			proto->max_servers);
		return -EINVAL;
	}
	if (cfg->client_id >= (1u << XTX_CLIENT_BITS)) {
		fprintf(stderr, "Error: libxtx: client id %u too large\n", cfg->client_id);
		return -EINVAL;
	}
	if (cfg->cluster && cluster_mismatch(cfg))
		return -EINVAL;
	if (!cfg->max_inflight)
		cfg->max_inflight = DEFAULT_INFLIGHT;
	if (cfg->max_inflight > 4096) {
		fprintf(stderr, "Error: libxtx: at most 4096 transactions in flight\n");
		return -EINVAL;
	}
	if (!cfg->ops_per_packet)
		cfg->ops_per_packet = XTX_MAX_OPS;
	if (cfg->ops_per_packet > XTX_MAX_OPS) {
		fprintf(stderr, "Error: libxtx: at most %u ops per packet\n", XTX_MAX_OPS);
		return -EINVAL;
	}
	if (!cfg->timeout_ns)
		cfg->timeout_ns = DEFAULT_TIMEOUT_NS;
	if (!cfg->max_tries)
		cfg->max_tries = DEFAULT_MAX_TRIES;
	return 0;
}

struct xtx_client *xtx_client_open(const struct xtx_client_cfg *cfg_in)
{
	struct xtx_client *c = calloc(1, sizeof(*c));
	unsigned int s, i, qcap;

	if (!c) {
		fprintf(stderr, "Error: libxtx: out of memory\n");
		return NULL;
	}
	c->cfg = *cfg_in;
	c->tr.fd = -1;
	if (check_cfg(&c->cfg))
		goto fail;
	c->proto = txn_protocols[c->cfg.protocol];
	/* the largest phase of one transaction queues two ops per key for a server */
	qcap = (c->cfg.max_inflight + 1) * XTX_TXN_MAX_KEYS * 2;
	c->queue = calloc(c->cfg.nservers, sizeof(*c->queue));
	c->sent = calloc((size_t)c->cfg.nservers * XTX_DEDUPE_WINDOW * XTX_MAX_OPS,
			 sizeof(*c->sent));
	/* one spare: a done callback starts the next before its own slot is free */
	c->txns = calloc(c->cfg.max_inflight + 1, sizeof(*c->txns));
	c->free_txns = calloc(c->cfg.max_inflight + 1, sizeof(*c->free_txns));
	c->ready = calloc(c->cfg.max_inflight + 1, sizeof(*c->ready));
	c->rbufs = calloc(XTX_RECV_BATCH, sizeof(*c->rbufs));
	c->parked_cap = (c->cfg.max_inflight + 1) * XTX_TXN_MAX_KEYS * 2;
	c->parked = calloc(c->parked_cap, sizeof(*c->parked));
	c->srv_lease_ns = calloc(c->cfg.nservers, sizeof(*c->srv_lease_ns));
	c->srv_lease_state = calloc(c->cfg.nservers, sizeof(*c->srv_lease_state));
	/* a lease given by hand only shortens what the servers tell */
	c->lock_lease_ns = c->cfg.lock_lease_ns;
	if (!c->queue || !c->sent || !c->txns || !c->free_txns || !c->ready || !c->rbufs ||
	    !c->parked || !c->srv_lease_ns || !c->srv_lease_state)
		goto nomem;
	for (s = 0; s < c->cfg.nservers; s++) {
		c->queue[s].cap = qcap;
		c->queue[s].ops = calloc(qcap, sizeof(*c->queue[s].ops));
		if (!c->queue[s].ops)
			goto nomem;
	}
	for (i = 0; i <= c->cfg.max_inflight; i++)
		c->free_txns[c->nfree++] = &c->txns[c->cfg.max_inflight - i];
	for (i = 0; i < XTX_RECV_BATCH; i++) {
		c->recvv[i].buf = &c->rbufs[i];
		c->recvv[i].cap = sizeof(c->rbufs[i]);
	}
	/* clock-derived, like request ids: a restarted client never reuses a txn id */
	c->next_seq = xtx_req_id_start();
	if (xtx_reqwins_init(&c->w, c->cfg.nservers, c->cfg.client_id, xtx_req_id_start(),
			     XTX_REQWIN_MAX_INFLIGHT, c->cfg.timeout_ns))
		goto nomem;
	if (c->cfg.cluster) {
		c->map = *c->cfg.cluster;
		c->cfg.cluster = NULL;	/* the caller's copy may go away */
	} else {
		struct in_addr addr[XTX_MAX_SERVERS];
		char err[128];

		for (i = 0; i < c->cfg.nservers; i++)
			addr[i] = c->cfg.servers[i].sin_addr;
		if (xtx_cluster_static(&c->map, addr, c->cfg.nservers, c->cfg.replication, err,
				       sizeof(err))) {
			fprintf(stderr, "Error: libxtx: %s\n", err);
			goto fail;
		}
	}
	c->w.epoch = (uint16_t)c->map.epoch;
	if (c->cfg.secret) {
		c->w.mac = true;
		c->w.secret = *c->cfg.secret;
		c->cfg.secret = NULL;	/* the caller's copy may go away */
	}
	if (xtx_transport_open_kind(&c->tr, c->cfg.servers, c->cfg.nservers, c->cfg.transport))
		goto fail;
	if (c->cfg.fault_dup_ppm || c->cfg.fault_reorder_ppm || c->cfg.fault_dup_cpu_ppm) {
		struct xtx_netfault f = { .dup_ppm = c->cfg.fault_dup_ppm,
					  .reorder_ppm = c->cfg.fault_reorder_ppm,
					  .dup_cpu_ppm = c->cfg.fault_dup_cpu_ppm };
		int err = xtx_transport_set_faults(&c->tr, &f);

		if (err) {
			fprintf(stderr, "Error: libxtx: the test faults (parts per million, at most "
				"1000000; fault_dup_cpu_ppm over UDP with two CPUs): %s\n",
				strerror(-err));
			goto fail;
		}
	}
	return c;
nomem:
	fprintf(stderr, "Error: libxtx: out of memory\n");
fail:
	xtx_client_close(c);
	return NULL;
}

void xtx_client_close(struct xtx_client *c)
{
	unsigned int s;

	if (!c)
		return;
	if (c->tr.fd >= 0)
		xtx_transport_close(&c->tr);
	xtx_reqwins_free(&c->w);
	for (s = 0; c->queue && s < c->cfg.nservers; s++)
		free(c->queue[s].ops);
	free(c->queue);
	free(c->sent);
	for (s = 0; c->txns && s <= c->cfg.max_inflight; s++)
		txn_arena_free(&c->txns[s].arena);
	free(c->txns);
	free(c->free_txns);
	free(c->ready);
	free(c->rbufs);
	free(c->parked);
	free(c->srv_lease_ns);
	free(c->srv_lease_state);
	free(c);
}

int xtx_txn_start(struct xtx_client *c, xtx_step_fn step, xtx_done_fn done, void *arg)
{
	struct txn_arena arena;
	struct xtx_txn *t;

	if (!step)
		return -EINVAL;
	if (c->inflight >= c->cfg.max_inflight || !c->nfree)
		return -EBUSY;
	t = c->free_txns[--c->nfree];
	arena = t->arena;
	memset(t, 0, offsetof(struct xtx_txn, keys));
	/* the slot's blocks of long values serve this transaction too */
	t->arena = arena;
	txn_arena_reset(&t->arena);
	t->c = c;
	t->id = xtx_txn_make(c->cfg.client_id, c->next_seq++);
	t->step = step;
	t->done = done;
	t->arg = arg;
	t->phase = PH_EXEC;
	t->start_ns = xtx_now_ns();
	c->inflight++;
	c->st.started++;
	txn_make_ready(t);
	return 0;
}

void txn_make_ready(struct xtx_txn *t)
{
	struct xtx_client *c = t->c;

	if (t->ready)
		return;
	t->ready = true;
	c->ready[c->nready++] = t;
}

void txn_finish(struct xtx_txn *t, enum xtx_outcome o)
{
	struct xtx_client *c = t->c;
	struct xtx_txn_result res;

	/* an abort the servers refused for a cause is proven; anything else is not */
	if (t->in_doubt && o != XTX_ABORTED)
		o = XTX_IN_DOUBT;
	res = (struct xtx_txn_result){
		.outcome = o,
		.cause = o == XTX_ABORTED ? t->cause : XTX_CAUSE_NONE,
		.read_only = !txn_has_writes(t),
		.rounds = t->rounds,
		.latency_ns = xtx_now_ns() - t->start_ns,
		.txn_id = t->id,
		.servers = txn_witnesses(t),
	};

	if (o == XTX_COMMITTED) {
		c->st.committed++;
		if (!res.read_only) {
			c->st.committed_rw++;
			c->st.packets_rw_committed += t->packets;
			c->st.ops_rw_committed += t->ops;
			c->st.rounds_rw_committed += t->rounds;
		}
	} else if (o == XTX_ABORTED) {
		c->st.aborted++;
		c->st.aborts[res.cause]++;
	} else if (o == XTX_FAILED) {
		c->st.failed++;
	} else {
		c->st.in_doubt++;
	}
	c->inflight--;
	c->completed++;
	/*
	 * The callback may read the transaction's values and start the next
	 * one (the in-flight count already dropped); the slot is reused after.
	 */
	if (t->done)
		t->done(t, &res, t->arg);
	t->c = NULL;
	c->free_txns[c->nfree++] = t;
}

static void misuse_warn(const char *what)
{
	static bool told;

	if (!told) {
		told = true;
		fprintf(stderr, "Warning: libxtx: step function returned %s: aborted\n", what);
	}
}

/* Runs the step function for the next round; returns its verdict. */
static enum xtx_step step_once(struct xtx_txn *t)
{
	enum xtx_step v;

	t->in_step = true;
	v = t->step(t, t->arg);
	t->in_step = false;
	return v;
}

void txn_advance(struct xtx_txn *t)
{
	const struct txn_protocol *p = t->c->proto;
	enum xtx_step v;

	if (t->waiting)
		return;
	if (t->phase != PH_EXEC || t->cause != XTX_CAUSE_NONE || t->failed) {
		p->phases(t);
		return;
	}
	v = step_once(t);
	t->round++;
	if (v == XTX_STEP_ABORT)
		txn_abort_for(t, XTX_CAUSE_USER);
	else if (v == XTX_STEP_READ && p->queue_reads(t)) {
		t->rounds++;
		return;
	} else if (v == XTX_STEP_READ) {
		/* committing now would skip the round the step function asked for */
		misuse_warn("XTX_STEP_READ without a new xtx_get()");
		txn_abort_for(t, XTX_CAUSE_MISUSE);
	}
	/* COMMIT (reads asked for now are not needed) or ABORT */
	p->phases(t);
}

int xtx_poll(struct xtx_client *c, uint64_t timeout_ns)
{
	unsigned int i;
	int n;

	c->completed = 0;
	for (i = 0; i < 2; i++) {
		/* advance what finished a phase; that queues the next phases' ops */
		while (c->nready) {
			struct xtx_txn *t = c->ready[--c->nready];

			t->ready = false;
			txn_advance(t);
		}
		if (i == 1)
			break;
		n = txn_wire_io(c, c->completed ? 0 : timeout_ns);
		if (n < 0) {
			fprintf(stderr, "Error: libxtx: %s\n", strerror(-n));
			return n;
		}
	}
	return (int)c->completed;
}

unsigned int xtx_inflight(const struct xtx_client *c)
{
	return c->inflight;
}

struct run_state {
	bool done;
	struct xtx_txn_result res;
};

static void run_done(struct xtx_txn *t, const struct xtx_txn_result *res, void *arg)
{
	struct run_state *rs = arg;

	(void)t;
	rs->done = true;
	rs->res = *res;
}

/* xtx_run()'s transaction: the caller's step function with its own argument. */
struct run_ctx {
	xtx_step_fn step;
	void *arg;
	struct run_state rs;
};

static enum xtx_step run_step(struct xtx_txn *t, void *arg)
{
	struct run_ctx *rc = arg;

	return rc->step(t, rc->arg);
}

static void run_ctx_done(struct xtx_txn *t, const struct xtx_txn_result *res, void *arg)
{
	run_done(t, res, &((struct run_ctx *)arg)->rs);
}

enum xtx_outcome xtx_run(struct xtx_client *c, xtx_step_fn step, void *arg,
			 struct xtx_txn_result *res)
{
	struct run_ctx rc = { .step = step, .arg = arg };

	while (xtx_txn_start(c, run_step, run_ctx_done, &rc) == -EBUSY)
		if (xtx_poll(c, 1000000) < 0)
			goto failed;
	while (!rc.rs.done)
		if (xtx_poll(c, 1000000) < 0)
			goto failed;
	if (res)
		*res = rc.rs.res;
	return rc.rs.res.outcome;
failed:
	if (res)
		*res = (struct xtx_txn_result){ .outcome = XTX_FAILED };
	return XTX_FAILED;
}

void xtx_client_transport(const struct xtx_client *c, char *buf, size_t len)
{
	xtx_transport_describe(&c->tr, buf, len);
}

const struct xtx_client_stats *xtx_client_stats(const struct xtx_client *c)
{
	return &c->st;
}

unsigned int xtx_replica_of(const struct xtx_client *c, uint8_t table, uint64_t key,
			    unsigned int i)
{
	unsigned int s = xtx_cluster_shard(&c->map, table, key);

	return i < c->map.nrep[s] ? c->map.rep[s][i] : XTX_NO_REPLICA;
}

bool xtx_replica_whole(const struct xtx_client *c, uint8_t table, uint64_t key, unsigned int i)
{
	unsigned int s = xtx_cluster_shard(&c->map, table, key);

	return i < c->map.nrep[s] && !(c->map.copying[s] && i == c->map.nrep[s] - 1u);
}

uint64_t xtx_servers_copying(const struct xtx_client *c)
{
	uint64_t m = 0;
	unsigned int x;

	for (x = 0; x < c->map.nservers && x < 64; x++)
		if (xtx_cluster_copying(&c->map, x))
			m |= 1ull << x;
	return m;
}

unsigned int xtx_replica_count(const struct xtx_client *c, uint8_t table, uint64_t key)
{
	return c->map.nrep[xtx_cluster_shard(&c->map, table, key)];
}

bool txn_still_replica(const struct xtx_client *c, const struct txn_key *k, unsigned int srv)
{
	unsigned int s = xtx_cluster_shard(&c->map, k->table, k->key), i;

	for (i = 0; i < c->map.nrep[s]; i++)
		if (c->map.rep[s][i] == srv)
			return true;
	return false;
}

uint64_t xtx_servers_moved_out(struct xtx_client *c)
{
	txn_reconfigure(c, true);
	return xtx_cluster_gone(&c->map);
}

bool txn_placement_changed(const struct xtx_txn *t)
{
	const struct xtx_client *c = t->c;
	unsigned int i, r, s;

	for (i = 0; i < t->nkeys; i++) {
		const struct txn_key *k = &t->keys[i];

		s = xtx_cluster_shard(&c->map, k->table, k->key);
		if (c->map.nrep[s] != k->nrep)
			return true;
		for (r = 0; r < k->nrep; r++)
			if (c->map.rep[s][r] != k->replica[r])
				return true;
	}
	return false;
}

/*
 * Refusals come in bursts, one per request in flight: one read serves them
 * all.  A server gone silent only may have been moved out: asked less often.
 */
#define REFRESH_EVERY_NS	(50ull * 1000 * 1000)
#define REFRESH_SILENT_NS	(500ull * 1000 * 1000)

void txn_reconfigure(struct xtx_client *c, bool told)
{
	static __thread struct xtx_cluster next;
	uint64_t now = xtx_now_ns();
	unsigned int i;

	if (!c->cfg.refresh ||
	    now - c->last_refresh_ns < (told ? REFRESH_EVERY_NS : REFRESH_SILENT_NS))
		return;
	c->last_refresh_ns = now;
	if (c->cfg.refresh(c->cfg.refresh_arg, &next) || next.epoch <= c->map.epoch)
		return;
	/* server indices are positions: a configuration only ever moves servers between shards */
	if (next.nservers != c->map.nservers || next.replication != c->map.replication)
		goto different;
	for (i = 0; i < next.nservers; i++)
		if (next.server[i].s_addr != c->map.server[i].s_addr)
			goto different;
	/*
	 * New requests name the new epoch; those already out keep theirs (one
	 * refused under the new epoch ran nothing: it fails, or is sent again
	 * as a new request)
	 */
	c->map = next;
	c->w.epoch = (uint16_t)next.epoch;
	c->st.reconfigurations++;
	return;
different:
	fprintf(stderr, "Warning: libxtx: epoch %u lists other servers than this client was "
		"opened with: not taken on\n", next.epoch);
}
