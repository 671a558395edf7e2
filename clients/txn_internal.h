/* SPDX-License-Identifier: GPL-2.0-only */
/* libxtx internals: a transaction's keys and phases, op references, the client. */
#ifndef XTX_TXN_INTERNAL_H
#define XTX_TXN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include "libxtx.h"
#include "msgbuf.h"
#include "reqwin.h"
#include "transport.h"

/* Replicas per key the log record can name (include/xtx/log.h). */
#define TXN_MAX_REPLICAS	3

/* Per-key state bits. */
#define KF_READ		0x0001	/* xtx_get() asked for it */
#define KF_FOR_UPDATE	0x0002	/* ... and locked it */
#define KF_ANSWERED	0x0004	/* value/version/absent below are the server's */
#define KF_ABSENT	0x0008	/* the key did not exist (version: what a create expects) */
#define KF_WRITE	0x0010	/* a write is buffered */
#define KF_INSERT	0x0020	/* ... that must create the key */
#define KF_DELETE	0x0040	/* ... that deletes it */
#define KF_EXCL		0x0080	/* we hold its exclusive (or OCC) lock */
#define KF_SHARED	0x0100	/* we hold a shared lock on it */
#define KF_VALIDATE	0x0200	/* OCC: read without a lock, validate before commit */
#define KF_SENT		0x0400	/* the current round's read went out */

struct txn_key {
	uint64_t key;
	uint64_t version;	/* read or locked version (what a commit expects) */
	uint64_t token;		/* exclusive/OCC grant token */
	uint64_t shared_token;
	uint16_t flags;		/* KF_* */
	uint8_t table;
	uint8_t vlen;
	uint8_t new_vlen;
	uint8_t replica[TXN_MAX_REPLICAS];	/* [0] is the primary */
	uint8_t value[XTX_VALUE_MAX];
	uint8_t new_value[XTX_VALUE_MAX];
};

/* What a queued or sent op does for its key. */
enum txn_op_kind {
	TOP_READ,		/* OCC read: value, version, lock state */
	TOP_LOCK_EXCL,		/* OCC_LOCK or LOCK_EXCL with the value */
	TOP_LOCK_SHARED,	/* 2PL shared lock with the value */
	TOP_VALIDATE,		/* OCC_VALIDATE of a key that existed */
	TOP_VALIDATE_ABSENT,	/* a READ that must still find nothing, unlocked */
	TOP_LOG,		/* LOG_APPEND to one replica */
	TOP_COMMIT_BACKUP,
	TOP_COMMIT_PRIMARY,
	TOP_UNLOCK_EXCL,	/* OCC_UNLOCK or UNLOCK_EXCL */
	TOP_UNLOCK_SHARED,
};

/* Phases of a transaction after its step function has returned COMMIT or ABORT. */
enum txn_phase {
	PH_EXEC,		/* the step function's reads */
	PH_LOCK,		/* write keys not locked yet */
	PH_VALIDATE,		/* OCC read set */
	PH_LOG,			/* every replica logs every write */
	PH_BACKUP,		/* commit point passed: install at the backups */
	PH_PRIMARY,		/* install at the primaries, release locks */
	PH_RELEASE,		/* abort (or read-only 2PL): release every lock */
};

struct xtx_txn {
	struct xtx_client *c;
	uint64_t id;
	xtx_step_fn step;
	xtx_done_fn done;
	void *arg;
	enum txn_phase phase;
	enum xtx_outcome release_outcome;	/* PH_RELEASE ends with this */
	enum xtx_abort_cause cause;		/* set once: the first reason to abort */
	bool in_step;
	bool logging;		/* a LOG_APPEND went out: never give up from here */
	bool failed;		/* a request went unanswered max_tries times */
	bool ready;		/* on the client's ready list */
	unsigned int round;
	unsigned int rounds;	/* phases that waited for the network */
	unsigned int nkeys;
	unsigned int waiting;	/* ops queued or in flight */
	uint32_t packets;	/* requests that carried its ops */
	const void *last_req;	/* the request its latest op was packed into */
	uint64_t start_ns;
	uint64_t first_grant_ns;
	struct txn_key keys[XTX_TXN_MAX_KEYS];
};

/* An op of a transaction, queued for a server or sent in a request. */
struct txn_opref {
	struct xtx_txn *t;	/* NULL: free */
	uint8_t key;		/* index into t->keys */
	uint8_t kind;		/* enum txn_op_kind */
	uint8_t server;
	uint8_t pad;
	uint32_t tries;		/* per-op resends after RETRY or LOG_FULL */
};

/* A server's queue of ops waiting for a request slot: a ring. */
struct txn_queue {
	struct txn_opref *ops;
	unsigned int cap, head, len;
};

struct xtx_client {
	struct xtx_client_cfg cfg;
	struct xtx_transport tr;
	struct xtx_reqwins w;
	struct txn_queue *queue;	/* per server */
	struct txn_opref *sent;		/* [server][window slot][op] */
	struct xtx_txn *txns;		/* max_inflight of them */
	struct xtx_txn **free_txns;
	unsigned int nfree;
	struct xtx_txn **ready;		/* transactions whose phase finished */
	unsigned int nready;
	unsigned int inflight;
	unsigned int completed;		/* ended during the current xtx_poll() */
	uint64_t next_seq;
	struct xtx_client_stats st;
	struct xtx_msgbuf *rbufs;
	struct xtx_dgram recvv[XTX_RECV_BATCH];
};

/* txn_wire.c: queues, packing, sending, reply dispatch. */
int txn_queue_op(struct xtx_client *c, struct xtx_txn *t, unsigned int ki,
		 enum txn_op_kind kind, unsigned int server);
/* Moves queued ops into requests, as many as the windows allow. */
void txn_wire_pack(struct xtx_client *c);
int txn_wire_io(struct xtx_client *c, uint64_t wait_ns);
struct txn_opref *txn_sent_ops(struct xtx_client *c, unsigned int server, unsigned int slot);

/* txn_proto.c: the protocols' phases. */
void txn_advance(struct xtx_txn *t);
void txn_on_reply(struct txn_opref *ref, const struct xtx_op *op);
/* The request carrying ref went unanswered max_tries times. */
void txn_on_lost(struct txn_opref *ref);
void txn_fill_op(const struct txn_opref *ref, struct xtx_op *op);

/* txn_client.c */
void txn_make_ready(struct xtx_txn *t);
void txn_finish(struct xtx_txn *t, enum xtx_outcome o);

#endif /* XTX_TXN_INTERNAL_H */
