/* SPDX-License-Identifier: GPL-2.0-only */
/* The resolver port's messages between servers: sealed with the secret, checked before any work. */
#ifndef XTXD_PEER_MSG_H
#define XTXD_PEER_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xtx/mac.h>
#include <xtx/proto.h>

/*
 * A peer message is one xtx header and one op (resolve.h); with the
 * cluster's secret (--secret-file) it also carries a stamp, the sender's
 * CLOCK_REALTIME made strictly increasing, and a 64-bit MAC of everything
 * before it (user/lib/sipmac.h).  The receiver takes it only from a listed
 * server's address, with a good MAC, a stamp within XTXD_PEER_SKEW_NS of
 * its own clock (the servers' clocks agree that well, e.g. by NTP), and a
 * stamp it has not taken before: a captured message is refused when sent
 * again.  Without a secret the address is all there is, and work for a
 * transaction unknown here (a fence, a sync, a decision) is rationed per
 * sender, so a forger of a server's address cannot keep the resolver busy.
 */
struct xtxd_peer_auth {
	uint64_t stamp;
	uint64_t mac;
};

struct xtxd_peer_msg {
	struct xtx_hdr h;
	struct xtx_op op;
	struct xtxd_peer_auth a;	/* with a secret only */
};

#define XTXD_PEER_MSG_PLAIN	offsetof(struct xtxd_peer_msg, a)
#define XTXD_PEER_MSG_SEALED	sizeof(struct xtxd_peer_msg)
/* How far a stamp may be from the receiver's clock. */
#define XTXD_PEER_SKEW_NS	(120ull * 1000 * 1000 * 1000)
/* Below the newest stamp of a sender, how far one may still arrive (reordered). */
#define XTXD_PEER_REORDER_NS	(2ull * 1000 * 1000 * 1000)
/* Without a secret: questions about unknown transactions per sender per second, and a burst. */
#define XTXD_PEER_UNKNOWN_RATE	100
#define XTXD_PEER_UNKNOWN_BURST	200

enum xtxd_peer_verdict {
	XTXD_PEER_OK = 0,
	XTXD_PEER_BAD_FORM,	/* the wrong length for this server (sealed or not) */
	XTXD_PEER_BAD_MAC,
	XTXD_PEER_STALE,	/* its stamp is too far from our clock */
	XTXD_PEER_REPLAY,	/* its stamp was taken before, or is too old to tell */
};

/* The cluster's secret (NULL: none); resets every sender's state.  Before the first message. */
void xtxd_peer_set_secret(const struct xtx_secret *s);
bool xtxd_peer_sealed(void);
/*
 * Seals m for sending at CLOCK_REALTIME now_real: the stamp and MAC when
 * there is a secret.  Returns the bytes to send.
 */
size_t xtxd_peer_seal(struct xtxd_peer_msg *m, uint64_t now_real);
/*
 * Checks len bytes received from server index from (its address listed,
 * checked by the caller) at now_real, and takes its stamp.
 */
enum xtxd_peer_verdict xtxd_peer_check(const struct xtxd_peer_msg *m, size_t len, int from,
				       uint64_t now_real);
/*
 * Whether a message of sender from (CLOCK_MONOTONIC now) may make this
 * server work on a transaction it does not know: always with a secret
 * (the sender proved itself), else within the sender's ration.
 */
bool xtxd_peer_unknown_allowed(int from, uint64_t now);
/* CLOCK_REALTIME in ns. */
uint64_t xtxd_peer_clock(void);

#endif /* XTXD_PEER_MSG_H */
