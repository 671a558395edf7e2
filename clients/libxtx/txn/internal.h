/* SPDX-License-Identifier: GPL-2.0-only */
/* libxtx internals: a transaction's keys and phases, op references, the client. */
#ifndef XTX_TXN_INTERNAL_H
#define XTX_TXN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/maps.h>
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

/*
 * A key's read and written values: up to XTX_VALUE_INLINE bytes in place,
 * longer ones in the transaction's arena (value_big, new_big), so a
 * transaction of small values costs no more than before.
 */
struct txn_key {
	uint64_t key;
	uint64_t version;	/* read or locked version (what a commit expects) */
	uint64_t token;		/* exclusive/OCC grant token */
	uint64_t shared_token;
	uint16_t flags;		/* KF_* */
	uint8_t table;
	uint8_t replica[TXN_MAX_REPLICAS];	/* [0] is the primary */
	uint8_t nrep;				/* replicas its shard has (R, or fewer) */
	uint16_t vlen;
	uint16_t new_vlen;
	uint16_t value_cap, new_cap;		/* bytes of value_big, new_big */
	uint8_t *value_big;			/* vlen > XTX_VALUE_INLINE */
	uint8_t *new_big;			/* new_vlen > XTX_VALUE_INLINE */
	uint8_t value[XTX_VALUE_INLINE];
	uint8_t new_value[XTX_VALUE_INLINE];
};

/*
 * Blocks of long values, allocated on demand and kept for the next
 * transaction of the slot: bytes handed out never move while the
 * transaction lives (xtx_value() pointers stay good across xtx_put()).
 */
#define TXN_ARENA_BLOCK		4096
struct txn_arena_blk {
	struct txn_arena_blk *next;
	uint8_t data[TXN_ARENA_BLOCK];
};

struct txn_arena {
	struct txn_arena_blk *head, *cur;
	size_t used;		/* bytes of cur handed out */
};

/* What a queued or sent op does for its key. */
enum txn_op_kind {
	TOP_READ,		/* OCC read: value, version, lock state */
	TOP_LOCK_EXCL,		/* OCC_LOCK or LOCK_EXCL with the value */
	TOP_LOCK_SHARED,	/* 2PL shared lock with the value */
	TOP_VALIDATE,		/* OCC_VALIDATE of a key that existed */
	TOP_VALIDATE_ABSENT,	/* a READ that must still find nothing, unlocked */
	TOP_LOG,		/* LOG_APPEND to one replica */
	TOP_LOG_META,		/* LOG_APPEND of the participants, before a server's writes */
	TOP_COMMIT_BACKUP,
	TOP_COMMIT_PRIMARY,
	TOP_UNLOCK_EXCL,	/* OCC_UNLOCK or UNLOCK_EXCL */
	TOP_UNLOCK_SHARED,
	TOP_HREAD,		/* HADES (include/xtx/hades.h) */
	TOP_HWRITE,
	TOP_HINTEND,
	TOP_HVALIDATE,
	TOP_HABORT,
	TOP_PING,		/* not a transaction's: asks a server its leases (t is NULL) */
};

/* txn_opref.oflags: how a HADES op is marked, and packing constraints. */
#define OPR_LAST	0x01	/* the transaction's last HINTEND/HVALIDATE at the server */
#define OPR_REPLICA	0x02	/* the server is a backup of the key */
#define OPR_NO_WRITE	0x04	/* the server only took part: no write of its own */
#define OPR_GLUE	0x08	/* travels in the same request as the op queued before it */
#define OPR_RESENT	0x10	/* queued again after a request that carried it went unanswered */

/* Phases of a transaction after its step function has returned COMMIT or ABORT. */
enum txn_phase {
	PH_EXEC,		/* the step function's reads */
	PH_LOCK,		/* write keys not locked yet */
	PH_VALIDATE,		/* OCC read set */
	PH_LOG,			/* every replica logs every write */
	PH_LOG_LAST,		/* ... the LAST ones, when they could not share a request */
	PH_BACKUP,		/* commit point passed: install at the backups */
	PH_PRIMARY,		/* install at the primaries, release locks */
	PH_RELEASE,		/* abort (or read-only 2PL): release every lock */
	PH_H_INTEND,		/* HADES: intend-to-commit at every participant */
	PH_H_INTEND_LAST,	/* ... the LAST ones, when they could not share a request */
	PH_H_VALIDATE,		/* HADES: every participant acked: make the writes visible */
	PH_H_VALIDATE_LAST,
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
	bool in_doubt;		/* whether it committed cannot be known here: never say it did */
	bool ready;		/* on the client's ready list */
	unsigned int round;
	unsigned int rounds;	/* phases that waited for the network */
	unsigned int nkeys;
	unsigned int waiting;	/* ops queued or in flight */
	uint32_t packets;	/* requests that carried its ops */
	uint32_t ops;		/* ops it sent, resends in new requests included */
	uint64_t sent_mask;	/* servers its ops went to */
	uint64_t seen_mask;	/* HADES: servers that hold its slot (no BEGIN needed) */
	const void *last_req;	/* the request its latest op was packed into */
	uint64_t start_ns;
	/*
	 * When its first lock request left: the servers' leases run from the
	 * grants, which come after, so a deadline counted from here is safe.
	 */
	uint64_t lease_anchor_ns;
	struct txn_arena arena;	/* kept across the slot's transactions */
	struct txn_key keys[XTX_TXN_MAX_KEYS];
};

/* An op of a transaction, queued for a server or sent in a request. */
struct txn_opref {
	struct xtx_txn *t;	/* NULL: free */
	uint8_t key;		/* index into t->keys */
	uint8_t kind;		/* enum txn_op_kind */
	uint8_t server;
	uint8_t oflags;		/* OPR_* */
	uint32_t tries;		/* per-op resends after RETRY or LOG_FULL */
};

/* A server's queue of ops waiting for a request slot: a ring. */
struct txn_queue {
	struct txn_opref *ops;
	unsigned int cap, head, len;
};

/* An op waiting out a conflict before it goes out again. */
struct txn_parked {
	struct txn_opref ref;
	uint64_t due_ns;
};

struct xtx_client {
	struct xtx_client_cfg cfg;
	const struct txn_protocol *proto;
	struct xtx_transport tr;
	struct xtx_reqwins w;
	struct txn_queue *queue;	/* per server */
	struct txn_opref *sent;		/* [server][window slot][op] */
	struct txn_parked *parked;	/* ops retried after a pause */
	unsigned int nparked, parked_cap;
	struct xtx_txn *txns;		/* max_inflight of them */
	struct xtx_txn **free_txns;
	unsigned int nfree;
	struct xtx_txn **ready;		/* transactions whose phase finished */
	unsigned int nready;
	unsigned int inflight;
	unsigned int completed;		/* ended during the current xtx_poll() */
	uint64_t next_seq;
	struct xtx_client_stats st;
	/* Each server's lock lease as its PING told (0: none), and whether it told yet. */
	uint64_t *srv_lease_ns;
	uint8_t *srv_lease_state;	/* LEASE_* */
	uint64_t lock_lease_ns;		/* the shortest lease known: what transactions keep to */
	struct xtx_msgbuf *rbufs;
	struct xtx_dgram recvv[XTX_RECV_BATCH];
	struct xtx_cluster map;		/* the shard map keys are placed by */
	uint64_t last_refresh_ns;	/* the last time the configuration was read again */
	/*
	 * Room each table's reads reserve for their answer (0: none, values
	 * up to XTX_VALUE_INLINE in the slot): declared, or learnt from TOO_BIG.
	 */
	uint16_t value_room[XTX_MAX_TABLES];
	/* The reply whose ops are being taken: where their value areas are. */
	const uint8_t *reply_base;
	size_t reply_len;
};

/*
 * A protocol: what the engine (client.c, wire.c) asks of OCC, 2PL or HADES.
 * Each fills one of these in its own file (proto_*.c) and none calls
 * another; txn_protocols[] maps enum xtx_protocol to them.
 */
struct txn_protocol {
	const char *name;		/* as xtx_protocol_parse() takes it */
	unsigned int max_servers;	/* 0: XTX_MAX_SERVERS */
	/* Queues the reads the step function asked for this round; returns the ops queued. */
	unsigned int (*queue_reads)(struct xtx_txn *t);
	/*
	 * After the step function: commit or abort, phase by phase, until a
	 * phase has ops to wait for (t->waiting) or the transaction finished.
	 */
	void (*phases)(struct xtx_txn *t);
	void (*fill_op)(const struct txn_opref *ref, struct xtx_op *op);
	/* Takes one op's answer; the engine counts it off t->waiting after. */
	void (*on_reply)(struct txn_opref *ref, const struct xtx_op *op);
};

extern const struct txn_protocol txn_proto_occ, txn_proto_2pl, txn_proto_hades;
/* Indexed by enum xtx_protocol. */
extern const struct txn_protocol *const txn_protocols[];
extern const unsigned int txn_nprotocols;

#define LEASE_UNASKED	0
#define LEASE_ASKED	1
#define LEASE_KNOWN	2

/* wire.c: queues, packing, sending, reply dispatch. */
int txn_queue_op(struct xtx_client *c, struct xtx_txn *t, unsigned int ki,
		 enum txn_op_kind kind, unsigned int server, uint8_t oflags);
/* Moves queued ops into requests, as many as the windows allow. */
void txn_wire_pack(struct xtx_client *c);
int txn_wire_io(struct xtx_client *c, uint64_t wait_ns);
struct txn_opref *txn_sent_ops(struct xtx_client *c, unsigned int server, unsigned int slot);
/* The protocol's op for ref, and its answer (which counts it off the transaction). */
void txn_fill_op(const struct txn_opref *ref, struct xtx_op *op);
void txn_on_reply(struct txn_opref *ref, const struct xtx_op *op);

/* client.c */
/* Runs the step function or the protocol's phases once nothing is outstanding. */
void txn_advance(struct xtx_txn *t);
void txn_make_ready(struct xtx_txn *t);
void txn_finish(struct xtx_txn *t, enum xtx_outcome o);

/* shared.c: what every protocol uses. */
/* Notes the first reason to abort; later ones do not replace it. */
void txn_abort_for(struct xtx_txn *t, enum xtx_abort_cause cause);
void txn_queue(struct xtx_txn *t, unsigned int ki, enum txn_op_kind kind, unsigned int srv);
void txn_queue_flags(struct xtx_txn *t, unsigned int ki, enum txn_op_kind kind, unsigned int srv,
		     uint8_t oflags);
/* The request carrying ref went unanswered max_tries times. */
void txn_on_lost(struct txn_opref *ref);
/*
 * The servers may have taken t's locks back by now: its first lock request
 * left longer than the shortest known lease ago (less a margin).
 */
bool txn_lease_passed(const struct xtx_txn *t, uint64_t now);
uint64_t txn_replica_set(const struct xtx_txn *t, const struct txn_key *k);
/* A write's value into op: in the slot, or (long) left for the packer's area. */
void txn_fill_value(struct xtx_op *op, const struct txn_key *k);
/*
 * A read's answer into k: the slot's value, or a long one from the reply's
 * area (c->reply_base).  An area the reply does not hold refuses the op.
 */
void txn_note_value(struct xtx_txn *t, struct txn_key *k, const struct xtx_op *op, bool absent);
/*
 * The value area ref's op takes, 0 for none: a write's long value (*src,
 * *len), or the room a read reserves for its table (*src NULL, *len 0).
 */
uint16_t txn_op_area(const struct txn_opref *ref, const uint8_t **src, uint16_t *len);
/* A TOO_BIG answer: the table's room grows to the value's length, the transaction aborts. */
void txn_too_big(struct txn_opref *ref, const struct xtx_op *op);
/* n bytes of t's arena, stable until t ends; NULL on ENOMEM. */
uint8_t *txn_arena_alloc(struct xtx_txn *t, size_t n);
void txn_arena_reset(struct txn_arena *a);
void txn_arena_free(struct txn_arena *a);
/* An op answered with something no phase expects: the server refused it. */
void txn_refused(struct xtx_txn *t, const struct xtx_op *op);
bool txn_has_writes(const struct xtx_txn *t);
/* Every replica of every key t writes, a bit per server index. */
/*
 * Reads the configuration again (rate-limited) when a server told of a
 * newer epoch (told), or stopped answering.
 */
void txn_reconfigure(struct xtx_client *c, bool told);
/* Whether a key of t is placed otherwise now than when t took it up. */
bool txn_placement_changed(const struct xtx_txn *t);
/* Whether srv is still one of k's replicas under the client's current map. */
bool txn_still_replica(const struct xtx_client *c, const struct txn_key *k, unsigned int srv);
uint64_t txn_write_replicas(const struct xtx_txn *t);
/*
 * The servers that can tell what became of t: where it logged (OCC, 2PL),
 * every participant of its intend-to-commit (HADES).
 */
uint64_t txn_witnesses(const struct xtx_txn *t);
/* The write set's existence rules, once every write key is locked and read. */
void txn_check_write_rules(struct xtx_txn *t);
/* A commit past the commit point answered other than applied: the outcome is in doubt. */
void txn_commit_doubt(struct xtx_txn *t, const struct xtx_op *op);
/* 1 + the index of srv among k's replicas (1: the primary), or 0 when srv holds no copy. */
unsigned int txn_replica_index(const struct xtx_txn *t, const struct txn_key *k, unsigned int srv);
/* Writes of t that server srv holds a copy of. */
unsigned int txn_writes_at(const struct xtx_txn *t, unsigned int srv);
/*
 * Whether srv must be told t's participants (XTX_LOGF_META): its own
 * writes' replica sets do not name every server t logs at, and one has
 * more than one replica (the resolver tracks no other).
 */
bool txn_needs_meta(const struct xtx_txn *t, unsigned int srv);
/*
 * Queues kind for every write of t that srv holds, in key order, the last
 * marked OPR_LAST and those at a backup OPR_REPLICA.  A server takes the
 * LAST one as the end of the transaction's writes there, so it must not
 * overtake the others: they share one request (glued) when they fit in
 * ops_per_packet, else the others go first (last_only false) and the LAST
 * after their answers (last_only true).  Returns the ops queued.
 */
unsigned int txn_queue_writes_at(struct xtx_txn *t, enum txn_op_kind kind, unsigned int srv,
				 bool last_only);
/* How many entries t logs at srv: its writes there and its META entry. */
unsigned int txn_log_count(const struct xtx_txn *t, unsigned int srv);

#endif /* XTX_TXN_INTERNAL_H */
