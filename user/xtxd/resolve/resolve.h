/* SPDX-License-Identifier: GPL-2.0-only */
/* The resolver: the servers decide a logged transaction whose coordinator vanished (FaRM). */
#ifndef XTXD_RESOLVE_H
#define XTXD_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xtx/log.h>
#include "peers.h"
#include "target.h"

struct xtxd_ovf;
struct xtx_secret;

#define XTXD_RESOLVE_AFTER_DEFAULT_NS	(3ull * 1000 * 1000 * 1000)
/* --keep-decided's default: 10 minutes. */
#define XTXD_KEEP_DECIDED_DEFAULT_NS	(600ull * 1000 * 1000 * 1000)

struct xtxd_resolve_opts {
	struct xtxd_peers peers;	/* n == 0: no resolver (one server) */
	uint16_t port;			/* the xtx port: peers talk on port + 1 */
	uint64_t after_ns;		/* a transaction left unfinished this long is decided */
	const char *data_dir;		/* where the decisions file lives */
	/*
	 * How long a decision is kept for late questions (and its fence for
	 * late appends) once nothing else needs it; 0: the default.
	 */
	uint64_t keep_ns;
	/* The cluster's secret: clients' status questions must carry its MAC.  NULL: none. */
	const struct xtx_secret *secret;
};

/*
 * Every write logged with more than one replica is shown to the resolver
 * as the log drain copies it out of the ring (xtxd_resolve_observe).  A
 * transaction still unfinished here after after_ns (a lock of it held, or
 * a write of it not installed) is decided with the replicas its record
 * names, FaRM's rule: committed when every one holds its complete record
 * (LAST seen), aborted when one does not.  A replica asked about a
 * transaction it does not hold fences it first (the xtx_fence map: its
 * LOG_APPEND answers FENCED from then on), waits out a grace period longer
 * than any XDP run, lets the drain pass the ring's tail, and looks again:
 * so its "not held" stays true forever, and abort is safe.  The decision
 * is written to the decisions file (synced) before it is applied: commit
 * installs the writes and frees the locks; abort frees the locks.  The
 * decider tells every replica, retrying until each acknowledges.
 *
 * Peer messages are one xtx header and one op on UDP port + 1: opcode
 * XTX_OP_RESOLVE_QUERY / XTX_OP_RESOLVE_DECIDE, op.txn, op.flags the
 * answer (enum xtxd_answer) or outcome (enum xtxd_outcome), op.token the
 * sender's index, and with the cluster's secret a stamp and a MAC
 * (peer_msg.h): a message from a stranger, or from a listed address
 * without the MAC, or sent before, is counted and dropped before anything
 * is looked up.  Idempotent, so simply retried.
 *
 * A client may ask the same port about a transaction of its own
 * (XTX_OP_TXN_STATUS, include/xtx/proto.h): it is told what a peer would
 * be (not held means fenced, and so aborted here), and a transaction held
 * here unfinished is decided now rather than after after_ns.
 *
 * Start it after the log drain's observer is set and the store is whole;
 * 0 or a negative errno after printing why.
 */
int xtxd_resolve_start(const struct xtx_target *t, struct xtxd_ovf *store,
		       const struct xtxd_resolve_opts *o);
void xtxd_resolve_stop(void);
/*
 * The aborts read from the decisions file at start are in the fence map;
 * the log drain, once started, must check it: call after
 * xtxd_logdrain_start and before requests are let through.  0 or a
 * negative errno after printing why.
 */
int xtxd_resolve_arm_fences(void);

/* What the resolvers decided since start (both kinds of transaction). */
struct xtxd_resolve_stats {
	uint64_t commits, aborts, fenced;		/* OCC/2PL transactions */
	uint64_t hades_validated, hades_aborted, hades_fenced;
	uint64_t strangers;	/* messages from a sender that is not a listed server: ignored */
	uint64_t unauthenticated; /* from a listed address, without the secret's MAC: ignored */
	uint64_t replayed;	/* sealed right, but sent before (or stamped too far off) */
	uint64_t throttled;	/* about an unknown transaction past the sender's ration */
	uint64_t malformed;	/* messages of the wrong size or form: ignored */
	uint64_t client_asks;	/* clients' questions about their transactions, answered */
	uint64_t client_refused; /* ... refused: not the asker's txn, bad flags */
	uint64_t client_bad_mac; /* ... dropped: the secret's MAC missing or wrong */
	uint64_t decisions_pruned;	/* dropped from decided.xdec by compaction */
	uint64_t decisions_kept;	/* in decided.xdec after the last compaction */
	uint64_t reconfigurations;	/* ones that moved servers out, recovered */
	uint64_t recovered;		/* transactions they decided */
};

/* The counters so far; safe from any thread. */
void xtxd_resolve_get_stats(struct xtxd_resolve_stats *s);
/*
 * Asks the resolver thread to drop from decided.xdec the decisions nothing
 * can need any more: no record of the transaction left in the logs here,
 * and decided longer ago than peers may still ask.  Returns at once.
 */
void xtxd_resolve_compact_soon(void);
/*
 * The configuration now leaves out the servers in gone (a bit per index):
 * their messages are ignored and their votes not waited for.  When servers
 * were moved out, every transaction logged here with one of them among its
 * replicas and not finished is decided at once with the replicas left:
 * committed when each of them holds its complete record or one says it was
 * decided committed, else aborted (Xenic §4.2.1).  A server taking shards
 * over closes XDP first (xtxd's cluster thread), so none is added after.
 * Waits up to wait_ns for all of them to be decided and applied here:
 * 0 when they are (or there is no resolver), -EAGAIN when not yet (the work
 * goes on: call again to wait more).
 */
int xtxd_resolve_reconfigure(uint64_t gone, uint64_t wait_ns);
/*
 * Called when a decision cannot be recorded in the decisions file (a
 * failed write or sync): the server must stop (fail-stop) before anything
 * acts on it.  Set before xtxd_resolve_start(); NULL: only warned about.
 */
void xtxd_resolve_set_on_fail(void (*fn)(int err, const char *why));
/*
 * serving() says whether this server may speak for itself now (its lease
 * held, not fenced); while it may not, peers' and clients' messages get
 * no answer.  Set before xtxd_resolve_start(); NULL: always.
 */
void xtxd_resolve_set_gate(bool (*serving)(void));
/*
 * For a copy of shards (user/xtxd/copy/): waits until every transaction
 * logged here so far (the drain shown the ring's tail first) is done with
 * here: decided and applied, or every write of it installed (HADES: its
 * committing slot validated or aborted).  So a copy read afterwards holds
 * whatever they committed.  Up to timeout_ns, or until cancelled() says
 * so; 0, -ETIMEDOUT or -ECANCELED (*left: how many were not settled), or
 * the drain's failure.  The caller is a registered RCU thread.
 */
int xtxd_resolve_settle(uint64_t timeout_ns, bool (*cancelled)(void), size_t *left);
/*
 * While on, a finished transaction that deleted a key stays in the table:
 * a copy arriving late may put back an older value of that key, and the
 * transaction, unfinished again, is then decided and applied once more.
 */
void xtxd_resolve_hold_deletes(bool on);
/*
 * After the copy is in: applies again every decided delete (HADES
 * validation logs them decided) logged here since hold_deletes went on,
 * over whatever older copy of the key arrived after it.  0 or a negative
 * errno; *n: how many.  The caller is a registered RCU thread.
 */
int xtxd_resolve_replay_deletes(size_t *n);
struct xtxd_live;
/* The live store the resolver installs into, or NULL when it does not run. */
struct xtxd_live *xtxd_resolve_live(void);
/* The log drain's observer (xtxd_logdrain_set_observer). */
void xtxd_resolve_observe(const struct xtx_log_entry *e, size_t n);

#endif /* XTXD_RESOLVE_H */
