/* SPDX-License-Identifier: GPL-2.0-only */
/* The resolver's HADES half: decides a committing transaction whose coordinator vanished. */
#ifndef XTXD_RESOLVE_HADES_H
#define XTXD_RESOLVE_HADES_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <xtx/proto.h>
#include "peers.h"
#include "resolve_apply.h"
#include "target.h"

/*
 * A HADES transaction that got its Ack (HINTEND with LAST) here holds a
 * COMMITTING slot with staged writes, which no lease reclaims: only its
 * coordinator's HVALIDATE or HABORT ends it.  A slot left so for after_ns
 * (slot.touched_ns) is decided with the participants its HINTENDs named
 * (slot.participants, server indices of --peers):
 *
 *   validated everywhere when one participant answers VALIDATED (it
 *   validated it already: HVALIDATE follows every Ack) or every one
 *   answers HOLD (it has the transaction COMMITTING, or it was a reader
 *   whose committing slot the scan saw linger, so its Ack is remembered
 *   after the lease took the slot); otherwise aborted everywhere once one
 *   answers NOT_HELD or ABORTED.  A participant the configuration moved
 *   out is not waited for: every one left holding it validates.
 *
 * A participant asked about a transaction it does not hold fences it
 * first (the xtx_fence map, which HINTEND consults: NACK from then on),
 * waits out a grace period longer than any XDP run, and looks again: a
 * HINTEND that raced the fence has finished by then and shows, so its
 * NOT_HELD stays true forever and abort is safe.  "Validated here" is the
 * slot's memory of its last tenant, or failing that (the slot was reused)
 * a write of the transaction in the log, on disk once the drain flushed:
 * HVALIDATE logs every write before it frees the slot.  A fence that turns
 * out not to be needed (HOLD or VALIDATED after all) is removed, so a late
 * HVALIDATE still logs.  The decider tells every
 * participant, retrying until each acknowledges; validate installs each
 * staged write at base + 1 (as HVALIDATE does) and frees the slot as
 * VALIDATED, abort frees it as ABORTED and fences the transaction.  A
 * coordinator that comes back then gets ALREADY_APPLIED for a late
 * HVALIDATE after validate (while the slot still remembers it; TXN_GONE
 * once a new tenant's release overwrote that, which the client takes as a
 * warning: nothing is applied twice), TXN_GONE after abort, and NACK for a
 * late HINTEND after abort.
 *
 * A reader's committing slot (nothing staged) left that long is simply
 * freed, as the lease would free it (its Ack noted first): the lease acts
 * only when a claim probes the slot, so its read filter could otherwise
 * keep writers out indefinitely.
 *
 * The writes validate installs go to xtxd's own log first (log/userlog.h),
 * and a slot still committing at a stop is carried to the next start
 * (log/hades_carry.h).
 *
 * Peer messages share the resolver's UDP port + 1: one xtx header and one
 * op, opcode XTX_OP_HRESOLVE_QUERY / XTX_OP_HRESOLVE_DECIDE, op.txn, op.flags
 * the answer (enum xtxd_hres_answer) or outcome (enum xtxd_hres_outcome),
 * op.token the sender's index.  Idempotent, so simply retried.
 *
 * Everything runs on the resolver's thread (xtxd_resolve_start).
 */
enum xtxd_hres_answer {
	XTXD_HANS_NONE = 0,
	XTXD_HANS_HOLD = 1,
	XTXD_HANS_VALIDATED = 2,
	XTXD_HANS_NOT_HELD = 3,
	XTXD_HANS_ABORTED = 4,
};

enum xtxd_hres_outcome {
	XTXD_HOUT_NONE = 0,
	XTXD_HOUT_VALIDATE = 1,
	XTXD_HOUT_ABORT = 2,
};

struct xtxd_hres_opts {
	const struct xtxd_peers *peers;
	int sock;			/* the resolver's socket on port + 1 */
	uint16_t peer_port;
	int fence_fd;			/* the xtx_fence map */
	uint64_t after_ns;
	struct xtxd_live *live;		/* where validated writes go */
	int dirfd;			/* the data directory: the log, searched before NOT_HELD */
	uint64_t grace_ns;		/* longer than any XDP run */
	/*
	 * Servers the configuration moved out (a bit per index): not waited
	 * for, and a slot naming one is decided at once with the
	 * participants left (Xenic's rule, as for logged transactions).
	 */
	uint64_t (*gone)(void);
};

/* Maps the slot table; 0 or a negative errno after printing why. */
int xtxd_hres_start(const struct xtx_target *t, const struct xtxd_hres_opts *o);
void xtxd_hres_stop(void);
/*
 * For a copy (xtxd_resolve_settle()), from any thread: the transactions
 * holding a committing slot with staged writes here now (up to cap of them
 * into ids; returns how many there are), and whether one still does.
 */
size_t xtxd_hres_committing(uint64_t *ids, size_t cap);
bool xtxd_hres_still_committing(uint64_t txn);
/* Transactions validated, aborted and fenced here so far; safe from any thread. */
void xtxd_hres_get_stats(uint64_t *validated, uint64_t *aborted, uint64_t *fenced);
/* Finds slots left committing, decides, resends what is unanswered. */
void xtxd_hres_scan(void);
/*
 * A client's question about its HADES transaction: an enum xtx_txn_state
 * from what a participant would tell a peer (not committing here means
 * fenced).  A slot left committing with staged writes is decided now.
 */
int xtxd_hres_client_answer(uint64_t txn);
/* Whether txn is in this server's HADES table or committing in a slot here. */
bool xtxd_hres_known(uint64_t txn);
/* Handles a peer message if it is one of ours: true when taken. */
bool xtxd_hres_receive(const struct xtx_op *op, bool reply, int from,
		       const struct sockaddr_in *src);

#endif /* XTXD_RESOLVE_HADES_H */
