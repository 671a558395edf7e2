// SPDX-License-Identifier: GPL-2.0-only
/* Sealing and checking the resolver's peer messages (peer_msg.h). */
#include <string.h>
#include <time.h>
#include "peers.h"
#include "sipmac.h"
#include "peer_msg.h"

#define RECENT	256	/* stamps remembered per sender, to refuse a second copy */

struct sender {
	uint64_t hi;			/* the newest stamp taken */
	uint64_t recent[RECENT];	/* the stamps taken last, 0: none */
	unsigned int next;
	/* the ration of work for unknown transactions (no secret) */
	uint64_t tokens_at;		/* CLOCK_MONOTONIC of the last refill */
	uint32_t tokens;
};

static struct {
	bool sealed;
	struct xtx_secret secret;
	uint64_t last_stamp;		/* ours, strictly increasing */
	struct sender from[XTXD_PEERS_MAX];
} P;

void xtxd_peer_set_secret(const struct xtx_secret *s)
{
	memset(&P, 0, sizeof(P));
	if (s) {
		P.sealed = true;
		P.secret = *s;
	}
}

bool xtxd_peer_sealed(void)
{
	return P.sealed;
}

uint64_t xtxd_peer_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

size_t xtxd_peer_seal(struct xtxd_peer_msg *m, uint64_t now_real)
{
	if (!P.sealed)
		return XTXD_PEER_MSG_PLAIN;
	/* never the same stamp twice, even when the clock stands still or steps back */
	P.last_stamp = now_real > P.last_stamp ? now_real : P.last_stamp + 1;
	m->a.stamp = P.last_stamp;
	m->a.mac = xtx_sipmac(&P.secret, XTX_MAC_PEER, m, offsetof(struct xtxd_peer_msg, a.mac));
	return XTXD_PEER_MSG_SEALED;
}

/* Whether s was taken from this sender already, or is older than all it remembers. */
static bool seen(const struct sender *f, uint64_t s)
{
	uint64_t oldest = UINT64_MAX;
	bool full = true;
	unsigned int i;

	for (i = 0; i < RECENT; i++) {
		if (f->recent[i] == s)
			return true;
		if (!f->recent[i])
			full = false;
		else if (f->recent[i] < oldest)
			oldest = f->recent[i];
	}
	return full && s < oldest;
}

enum xtxd_peer_verdict xtxd_peer_check(const struct xtxd_peer_msg *m, size_t len, int from,
				       uint64_t now_real)
{
	struct sender *f;
	uint64_t s;

	if (len != (P.sealed ? XTXD_PEER_MSG_SEALED : XTXD_PEER_MSG_PLAIN) || from < 0 ||
	    from >= XTXD_PEERS_MAX)
		return XTXD_PEER_BAD_FORM;
	if (!P.sealed)
		return XTXD_PEER_OK;
	if (!xtx_sipmac_eq(xtx_sipmac(&P.secret, XTX_MAC_PEER, m,
				      offsetof(struct xtxd_peer_msg, a.mac)), m->a.mac))
		return XTXD_PEER_BAD_MAC;
	s = m->a.stamp;
	if (s + XTXD_PEER_SKEW_NS < now_real || s > now_real + XTXD_PEER_SKEW_NS)
		return XTXD_PEER_STALE;
	f = &P.from[from];
	if (s <= f->hi && (f->hi - s > XTXD_PEER_REORDER_NS || seen(f, s)))
		return XTXD_PEER_REPLAY;
	if (s > f->hi)
		f->hi = s;
	f->recent[f->next] = s;
	f->next = (f->next + 1) % RECENT;
	return XTXD_PEER_OK;
}

bool xtxd_peer_unknown_allowed(int from, uint64_t now)
{
	struct sender *f;
	uint64_t add;

	if (P.sealed)
		return true;
	if (from < 0 || from >= XTXD_PEERS_MAX)
		return false;
	f = &P.from[from];
	if (!f->tokens_at) {
		f->tokens_at = now;
		f->tokens = XTXD_PEER_UNKNOWN_BURST;
	}
	add = (now - f->tokens_at) * XTXD_PEER_UNKNOWN_RATE / 1000000000ull;
	if (add) {
		f->tokens = add + f->tokens > XTXD_PEER_UNKNOWN_BURST ? XTXD_PEER_UNKNOWN_BURST :
			    f->tokens + (uint32_t)add;
		f->tokens_at = now;
	}
	if (!f->tokens)
		return false;
	f->tokens--;
	return true;
}
