/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libxtx: transactions over sharded, replicated xtx servers.
 *
 * A client (one per thread, not thread-safe) keeps many transactions in
 * flight.  Each transaction is driven by the application's step function:
 *
 *   static enum xtx_step transfer(struct xtx_txn *t, void *arg)
 *   {
 *           struct my_transfer *x = arg;
 *
 *           if (xtx_txn_round(t) == 0) {             // first call: queue reads
 *                   x->from = xtx_get(t, ACCOUNTS, x->src, XTX_GET_FOR_UPDATE);
 *                   x->to = xtx_get(t, ACCOUNTS, x->dst, XTX_GET_FOR_UPDATE);
 *                   return XTX_STEP_READ;
 *           }
 *           ...                                      // read results, compute
 *           xtx_put(t, ACCOUNTS, x->src, &a, sizeof(a));
 *           xtx_put(t, ACCOUNTS, x->dst, &b, sizeof(b));
 *           return XTX_STEP_COMMIT;
 *   }
 *
 * The step function runs when the transaction starts (round 0) and again
 * each time every read it queued has been answered (round 1, 2, ...).  It
 * queues reads and returns XTX_STEP_READ (at least one xtx_get() of a key
 * not read before: otherwise the transaction aborts, XTX_CAUSE_MISUSE,
 * rather than commit without the round it asked for), buffers writes and returns
 * XTX_STEP_COMMIT, or returns XTX_STEP_ABORT (a user abort).  It must not
 * block.  When the transaction ends, the done callback gets its result; the
 * transaction handle is invalid after that.
 *
 * The ops of all in-flight transactions bound for one server travel
 * together, up to ops_per_packet per request; a partial packet leaves when
 * the client has nothing else to do.  xtx_poll() does all the I/O.
 *
 * Protocols (design §5, §6): OCC (FaSST: reads; write keys read and locked
 * in one op; validate; log; commit backups; commit primary), no-wait 2PL
 * (shared/exclusive locks that read; log; commit backups; commit primary
 * and unlock), HADES (reads and write intents recorded in per-transaction
 * Bloom filters at the servers; intend-to-commit; validation).  Primary of a key = hash(table, key) mod N, backups the next
 * R - 1 servers.  Once every replica has logged a transaction it is
 * committed, and the client retries until its commits are applied: it is
 * never reported FAILED after that point.
 */
#ifndef XTX_LIBXTX_H
#define XTX_LIBXTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <xtx/mac.h>
#include "cluster.h"
#include <xtx/proto.h>

enum xtx_protocol {
	XTX_PROTO_OCC,
	XTX_PROTO_2PL,
	XTX_PROTO_HADES,
};

/* How a transaction ended. */
enum xtx_outcome {
	XTX_COMMITTED = 1,
	XTX_ABORTED,		/* see enum xtx_abort_cause; nothing was written */
	XTX_FAILED,		/* servers unreachable before the commit point; nothing was written */
	/*
	 * The client cannot know: a HADES intend-to-commit went unanswered
	 * (the servers may still validate it), or a server answered a commit
	 * past the commit point with something other than applied.  Its
	 * writes may or may not be installed; the servers' resolver decides.
	 */
	XTX_IN_DOUBT,
};

enum xtx_abort_cause {
	XTX_CAUSE_NONE,
	XTX_CAUSE_LOCK,		/* a lock was held by another transaction (no-wait) */
	XTX_CAUSE_VALIDATION,	/* OCC: a read key changed or was locked before commit */
	XTX_CAUSE_LEASE,	/* could not log within the lock lease: locks may be gone */
	XTX_CAUSE_USER,		/* the step function returned XTX_STEP_ABORT */
	XTX_CAUSE_EXISTS,	/* xtx_insert() of a key that exists */
	XTX_CAUSE_NOT_FOUND,	/* xtx_delete() of a key that does not exist */
	XTX_CAUSE_FULL,		/* a server's store or log was full */
	XTX_CAUSE_SQUASHED,	/* HADES: a committing transaction conflicted */
	XTX_CAUSE_REFUSED,	/* a server refused an op (bad argument, not served) */
	XTX_CAUSE_NACK,		/* HADES: intend-to-commit hit a committing transaction */
	XTX_CAUSE_MISUSE,	/* the step function returned XTX_STEP_READ without a new xtx_get() */
	/*
	 * A table it used serves the other concurrency-control family now
	 * (HADES vs OCC/2PL: a server never mixes them on a table); it
	 * switches once the other has been idle for twice the longer lease
	 */
	XTX_CAUSE_MIXED,
	/*
	 * A server it used failed and the configuration moved its shards
	 * before the transaction logged: nothing of it can commit; retry
	 */
	XTX_CAUSE_MOVED,
	/*
	 * A value read was longer than the room the client reserved for its
	 * table (xtx_client_table_value_max()); the room has grown to fit
	 * it: retry
	 */
	XTX_CAUSE_VALUE_ROOM,
	XTX_CAUSE__COUNT,
};

enum xtx_step {
	XTX_STEP_READ = 1,	/* reads were queued: call me again with their results */
	XTX_STEP_COMMIT,	/* writes (if any) are buffered: commit */
	XTX_STEP_ABORT,		/* user abort */
};

struct xtx_txn;
typedef enum xtx_step (*xtx_step_fn)(struct xtx_txn *t, void *arg);

struct xtx_txn_result {
	enum xtx_outcome outcome;
	enum xtx_abort_cause cause;	/* XTX_ABORTED only */
	uint8_t read_only;		/* no writes were buffered */
	uint32_t rounds;		/* network round trips it waited for */
	uint64_t latency_ns;		/* start to outcome */
	uint64_t txn_id;		/* as xtx_txn_id() */
	/*
	 * The servers (a bit per index) that can say what became of it: the
	 * replicas it logged at (OCC, 2PL), its participants (HADES).
	 */
	uint64_t servers;
};

/* How a client reaches the servers. */
enum xtx_transport_kind {
	XTX_TRANSPORT_UDP,	/* a UDP socket per thread: works anywhere */
	/*
	 * AF_XDP sockets on the interfaces the routes use, frames built by the
	 * client: far less CPU per request.  Needs root, native XDP on those
	 * interfaces, and one such client process per interface.
	 */
	XTX_TRANSPORT_AFXDP,
};

typedef void (*xtx_done_fn)(struct xtx_txn *t, const struct xtx_txn_result *res, void *arg);

struct xtx_client_cfg {
	const struct sockaddr_in *servers;	/* index = server id, same order on every client */
	unsigned int nservers;			/* 1..XTX_MAX_SERVERS */
	unsigned int replication;		/* R, 1..min(3, nservers); 0: min(3, nservers) */
	enum xtx_protocol protocol;
	uint32_t client_id;			/* < the servers' client limit, unique per client */
	unsigned int max_inflight;		/* transactions in flight; 0: 16 */
	unsigned int ops_per_packet;		/* 1..XTX_MAX_OPS; 1 turns aggregation off; 0: max */
	uint64_t timeout_ns;			/* resend after this; 0: 2 ms */
	unsigned int max_tries;			/* sends of one request before FAILED (and 300 ms); 0: 50 */
	/*
	 * Learnt from each server's PING on the first request to it: a
	 * transaction that could not log within the shortest lock lease (from
	 * its first lock request) aborts rather than log over locks a server
	 * may have taken back.  Nonzero here only shortens it.
	 */
	uint64_t lock_lease_ns;
	/* The cluster's shared secret (xtxd --secret-file), or NULL when it has none. */
	const struct xtx_secret *secret;
	/*
	 * A cluster held in ZooKeeper (common/zk.h): its epoch goes on every
	 * request and its shard map places the keys; servers[] must list its
	 * servers in its order.  NULL: a static cluster, where shard s of
	 * nservers lives on servers s, s+1, ... (xtx_cluster_static()).
	 */
	const struct xtx_cluster *cluster;
	/*
	 * With cluster: how to read its configuration again (common/zk.h has
	 * one), called from xtx_poll() when a server says it serves a newer
	 * epoch; fills *out and returns 0, or -1.  The new map places the
	 * keys of transactions that start from then on.  One placed by the
	 * old map keeps its replicas (primaries do not move; a backup moved
	 * out still gets its log appends, and a transaction waits for one
	 * that is gone), except that past its commit point it no longer waits
	 * for a commit at a backup moved out of its key.
	 */
	int (*refresh)(void *arg, struct xtx_cluster *out);
	void *refresh_arg;
	/*
	 * For tests only (the nemesis): parts per million of the requests
	 * sent twice, or held back and sent after later ones, as a network
	 * may duplicate and reorder them.  0: none.
	 */
	uint32_t fault_dup_ppm, fault_reorder_ppm;
	/*
	 * For tests only: parts per million of the requests sent twice at
	 * the same instant, the copy by a thread pinned to another CPU, so
	 * the server runs both at once; their answers are compared (the
	 * dup_cpu_* counters).  UDP only; needs two CPUs.  0: none.
	 */
	uint32_t fault_dup_cpu_ppm;
	enum xtx_transport_kind transport;	/* 0: UDP */
};

/* Counters of one client since it was opened. */
struct xtx_client_stats {
	uint64_t started, committed, aborted, failed, in_doubt;
	uint64_t aborts[XTX_CAUSE__COUNT];
	uint64_t packets, ops, retransmits, op_retries;
	uint64_t refused_packets;	/* replies refusing a whole request (bad client, stale...) */
	uint64_t epoch_refusals;	/* ... of which: the server serves another epoch, or none */
	uint64_t reconfigurations;	/* newer configurations taken on */
	uint64_t lost_requests;		/* requests given up after max_tries sends */
	uint64_t late_logs;		/* log appends not sent: the lease had passed (aborts) */
	uint64_t duplicated, reordered;	/* requests the test faults sent twice, held back */
	/*
	 * fault_dup_cpu_ppm: requests sent twice at once, those whose copies
	 * left two different CPUs, answers refusing a copy RETRY (the server
	 * ran the other at that moment), requests with two complete answers
	 * held against each other, and those whose answers disagreed on an op
	 * that changes state (an anomaly: a request runs once, whatever number
	 * of copies arrive)
	 */
	uint64_t dup_cpu_sent, dup_cpu_apart, dup_cpu_busy, dup_cpu_compared, dup_cpu_mismatched;
	/* AF_XDP: frames with broken headers (dropped); replies that came the kernel's way */
	uint64_t frames_malformed, udp_fallback;
	/*
	 * Committed read-write transactions, and summed over them: the
	 * requests that carried their ops, their ops, their round trips.
	 */
	uint64_t committed_rw, packets_rw_committed, ops_rw_committed, rounds_rw_committed;
	/* tables whose read room grew after a TOO_BIG answer (XTX_CAUSE_VALUE_ROOM aborts) */
	uint64_t value_room_raised;
};

struct xtx_client;

/* Returns NULL after printing "Error: ..." (bad configuration, socket failure). */
struct xtx_client *xtx_client_open(const struct xtx_client_cfg *cfg);
/* Abandons in-flight transactions (their locks go by lease) and frees everything. */
void xtx_client_close(struct xtx_client *c);

/*
 * Starts a transaction; its step function first runs inside the next
 * xtx_poll().  Returns 0, -EBUSY when max_inflight transactions are in
 * flight, or -EINVAL.
 */
int xtx_txn_start(struct xtx_client *c, xtx_step_fn step, xtx_done_fn done, void *arg);

/*
 * Sends, receives and advances transactions, waiting up to timeout_ns for
 * a reply when nothing can move.  Returns the transactions that ended in
 * this call (their done callbacks have run) or a negative errno (the
 * socket failed: the client is unusable and must be closed).
 */
int xtx_poll(struct xtx_client *c, uint64_t timeout_ns);

/* Transactions in flight. */
unsigned int xtx_inflight(const struct xtx_client *c);

/*
 * Values longer than XTX_VALUE_INLINE (up to XTX_VALUE_MAX) travel in the
 * request's value area, and a read reserves room there for its answer.  By
 * default a table's reads reserve none (its values fit the op slot); a
 * longer value then answers TOO_BIG, the transaction aborts with
 * XTX_CAUSE_VALUE_ROOM and the table's room grows to fit it, so a retry
 * reads it.  Declaring a table's longest value ahead (bytes <=
 * XTX_VALUE_INLINE: none) saves those aborts; a room only costs request
 * bytes, so fewer reads share a packet.  0, or -EINVAL (table or bytes
 * out of range).
 */
int xtx_client_table_value_max(struct xtx_client *c, uint8_t table, uint16_t bytes);

/* Runs one transaction to its end (a blocking convenience); returns its outcome. */
enum xtx_outcome xtx_run(struct xtx_client *c, xtx_step_fn step, void *arg,
			 struct xtx_txn_result *res);

const struct xtx_client_stats *xtx_client_stats(const struct xtx_client *c);
/* One line on the client's transport: "udp: ..." or "afxdp: N socket(s) ..., copy mode". */
void xtx_client_transport(const struct xtx_client *c, char *buf, size_t len);

/*
 * Asks the servers what became of a transaction that ended XTX_IN_DOUBT
 * (res as its done callback or xtx_run got it), waiting up to timeout_ns
 * for them to know: XTX_COMMITTED or XTX_ABORTED, both final, or still
 * XTX_IN_DOUBT when they could not say in time (unreachable, or not yet
 * decided: ask again).  Asking fences the transaction where it is not
 * held, so its answer stays true, and servers that hold it unfinished
 * decide it at once.  Exact while the servers remember the transaction:
 * its log records until a snapshot covers them, its decision for xtxd
 * --keep-decided (10 min).  OCC and 2PL need R >= 2 (the resolver tracks
 * replicated transactions only).  Blocks; not from a step or done
 * callback.  Any other outcome is returned as it is.
 */
enum xtx_outcome xtx_txn_resolve(struct xtx_client *c, const struct xtx_txn_result *res,
				 uint64_t timeout_ns);

/* --- Inside a step function ------------------------------------------- */

/* Keys one transaction may touch. */
#define XTX_TXN_MAX_KEYS	32

/* xtx_get() flags. */
#define XTX_GET_FOR_UPDATE	0x1	/* will be written: lock it now (fused read + lock) */

/* 0 on the first call, then one more per completed batch of reads. */
unsigned int xtx_txn_round(const struct xtx_txn *t);

/*
 * Queues a read of (table, key).  Returns a handle >= 0 for xtx_value(), or
 * -E2BIG (more than XTX_TXN_MAX_KEYS keys), -EINVAL (table out of range or
 * bad flags), -EALREADY (the transaction is past its step function).
 * Reading a key twice returns the first handle.
 */
int xtx_get(struct xtx_txn *t, uint8_t table, uint64_t key, unsigned int flags);

/*
 * A read's result: 0 with *value and *vlen (the buffer lives as long as the
 * transaction), -ENOENT when the key does not exist, -EINVAL for a bad
 * handle or a read not yet answered.
 */
int xtx_value(const struct xtx_txn *t, int handle, const void **value, uint16_t *vlen);

/*
 * Buffers a write, applied at commit.  put: create or overwrite; insert:
 * the key must not exist (else ABORTED, XTX_CAUSE_EXISTS); delete: the key
 * must exist (else XTX_CAUSE_NOT_FOUND).  Values up to XTX_VALUE_MAX bytes
 * (over XTX_VALUE_INLINE they go in the value area; a request takes as
 * many as fit XTX_MAX_REQUEST).  Returns 0, -EMSGSIZE (vlen >
 * XTX_VALUE_MAX), -ENOMEM, -E2BIG, -EINVAL or -EALREADY as for xtx_get().
 */
int xtx_put(struct xtx_txn *t, uint8_t table, uint64_t key, const void *value, uint16_t vlen);
int xtx_insert(struct xtx_txn *t, uint8_t table, uint64_t key, const void *value,
	       uint16_t vlen);
int xtx_delete(struct xtx_txn *t, uint8_t table, uint64_t key);

/* The transaction's id on the wire (for logs and debugging). */
uint64_t xtx_txn_id(const struct xtx_txn *t);

/*
 * One key a transaction touched, with the versions that make its history
 * checkable (xtxbench --history): the version each read saw, and the one
 * each write installs (the version read or locked, plus one).
 */
struct xtx_access {
	uint64_t key;
	uint64_t read_version;		/* XTX_ACC_READ: what the server answered */
	uint64_t write_version;		/* XTX_ACC_WRITE: what the commit installs */
	uint8_t table;
	uint8_t flags;			/* XTX_ACC_* */
};

#define XTX_ACC_READ		0x01	/* read, and the answer arrived */
#define XTX_ACC_ABSENT		0x02	/* ... the key did not exist */
#define XTX_ACC_WRITE		0x04	/* written */
#define XTX_ACC_DELETE		0x08	/* ... by a delete */

/*
 * The keys of t, up to max of them, into a[]; returns how many t has.
 * Meant for the done callback, when every answer is in.
 */
unsigned int xtx_txn_accesses(const struct xtx_txn *t, struct xtx_access *a, unsigned int max);

/* Names for printing. */
const char *xtx_outcome_name(enum xtx_outcome o);
const char *xtx_cause_name(enum xtx_abort_cause c);
/*
 * Whether an abort for cause c came from other transactions (a conflict,
 * a lease, a table serving the other protocol for now): the same
 * transaction may well commit when tried again.  Others are final.
 */
bool xtx_cause_retryable(enum xtx_abort_cause c);
const char *xtx_protocol_name(enum xtx_protocol p);
/* "occ", "2pl", "hades" -> 0 and *p, else -EINVAL. */
int xtx_protocol_parse(const char *s, enum xtx_protocol *p);

/*
 * Placement: how many replicas a key's shard has (R, or fewer in a
 * cluster that lost a server), and its i-th (0 = primary), or
 * XTX_NO_REPLICA when i is past the count.
 */
#define XTX_NO_REPLICA	(~0u)
unsigned int xtx_replica_count(const struct xtx_client *c, uint8_t table, uint64_t key);
unsigned int xtx_replica_of(const struct xtx_client *c, uint8_t table, uint64_t key,
			    unsigned int i);
/*
 * Whether the i-th replica holds the key's shard whole: false for one still
 * copying it (re-replication: it takes every new write, but not yet every
 * old one).
 */
bool xtx_replica_whole(const struct xtx_client *c, uint8_t table, uint64_t key, unsigned int i);
/*
 * The servers (a bit per index) the configuration moved out after they
 * failed, or has in no shard (spares): replicas of no shard.  Reads the
 * configuration again first.
 */
uint64_t xtx_servers_moved_out(struct xtx_client *c);
/* The servers (a bit per index) copying shards now; the configuration as last read. */
uint64_t xtx_servers_copying(const struct xtx_client *c);

#endif /* XTX_LIBXTX_H */
