// SPDX-License-Identifier: GPL-2.0-only
/*
 * Retwis over libxtx, with the reads and writes of TAPIR's Retwis (add user
 * 1 read and 3 writes, follow 2 and 2, post 3 + fanout reads and 3 + fanout
 * writes, timeline 1 to 10 reads), on real rows:
 *   ADD     reads its partition's counter for update, bumps it, inserts the
 *           user and the user's empty timeline;
 *   FOLLOW  reads a's following and b's followers for update; removes the
 *           relation from both if a follows b, else adds it to both;
 *   POST    reads a's user row and timeline for update and a's followers;
 *           then the timelines of a's newest fanout followers for update;
 *           inserts the tweet, counts it in a's row, pushes it to every
 *           timeline read;
 *   TLINE   reads a's timeline, then its newest nshow tweets.
 * A list read for update (locked with the read, under OCC and 2PL alike)
 * is judged at once; what a plain read shows (a timeline naming a tweet
 * not there) only counts if the transaction then commits, as a read
 * that validation would have thrown out is no evidence.
 */
#include <string.h>
#include "retwis_txn.h"

void rw_txn_arm(struct rw_txn *x, const struct rw_cfg *cfg, enum rw_type type, uint32_t a,
		uint32_t b, uint32_t part, unsigned int nshow)
{
	memset(x, 0, sizeof(*x));
	x->cfg = cfg;
	x->type = type;
	x->a = a;
	x->b = b;
	x->part = part;
	x->nshow = nshow;
}

void rw_txn_draw(struct rw_txn *x, const struct rw_cfg *cfg, uint64_t *rng)
{
	enum rw_type type = rw_pick_type(cfg, rng);
	uint32_t a = rw_pick_user(cfg, rng), b = a;
	uint32_t part = (uint32_t)xtx_rng_below(rng, RW_PARTS);
	unsigned int nshow = 1 + (unsigned int)xtx_rng_below(rng, RW_MAX_SHOW);

	while (type == RW_FOLLOW && b == a)
		b = rw_pick_user(cfg, rng);
	rw_txn_arm(x, cfg, type, a, b, part, nshow);
}

static enum xtx_step broken(struct rw_txn *x, const char *why)
{
	x->broken = true;
	x->why = why;
	return XTX_STEP_ABORT;
}

static int get(struct xtx_txn *t, enum rw_kind kind, uint64_t payload, bool for_update)
{
	return xtx_get(t, rw_table_of(kind), rw_key(kind, payload),
		       for_update ? XTX_GET_FOR_UPDATE : 0);
}

/* A list read: 1 and *l when there, 0 when absent (an empty list of owner), -1 malformed. */
static int read_list(struct xtx_txn *t, int h, enum rw_kind kind, uint32_t owner,
		     struct rw_list *l)
{
	const void *v;
	uint16_t vlen;

	if (xtx_value(t, h, &v, &vlen)) {
		l->kind = kind;
		l->owner = owner;
		l->n = 0;
		return 0;
	}
	if (rw_list_decode(v, vlen, kind, l) || l->owner != owner)
		return -1;
	return 1;
}

static bool put_list(struct xtx_txn *t, uint32_t owner, const struct rw_list *l)
{
	uint8_t v[XTX_VALUE_MAX];
	uint16_t len = rw_list_encode(l, v);

	return !xtx_put(t, RW_LISTS, rw_key(l->kind, owner), v, len);
}

static enum xtx_step add_user(struct xtx_txn *t, struct rw_txn *x)
{
	struct rw_user u = { 0 };
	struct rw_list tl = { .kind = RW_TIMELINE };
	uint8_t v[XTX_VALUE_MAX];
	const void *cv;
	uint16_t vlen;
	uint32_t c;

	if (xtx_txn_round(t) == 0) {
		x->h[0] = get(t, RW_NEXTUID, x->part, true);
		return x->h[0] < 0 ? broken(x, "the read could not be queued") : XTX_STEP_READ;
	}
	if (xtx_value(t, x->h[0], &cv, &vlen) || rw_next_decode(cv, vlen, &c))
		return broken(x, "a user counter is missing or malformed");
	x->new_uid = rw_added_uid(x->cfg, x->part, c);
	if (x->new_uid > UINT32_MAX) {
		x->logical = true;
		return XTX_STEP_ABORT;
	}
	u.uid = (uint32_t)x->new_uid;
	tl.owner = u.uid;
	vlen = rw_next_encode(c + 1, v);
	if (xtx_put(t, RW_TABLE, rw_key(RW_NEXTUID, x->part), v, vlen))
		return broken(x, "a write was refused by libxtx");
	vlen = rw_user_encode(&u, v);
	if (xtx_insert(t, RW_TABLE, rw_key(RW_USER, u.uid), v, vlen))
		return broken(x, "a write was refused by libxtx");
	vlen = rw_list_encode(&tl, v);
	if (xtx_insert(t, RW_LISTS, rw_key(RW_TIMELINE, u.uid), v, vlen))
		return broken(x, "a write was refused by libxtx");
	return XTX_STEP_COMMIT;
}

static enum xtx_step follow(struct xtx_txn *t, struct rw_txn *x)
{
	struct rw_list ing, ers;
	unsigned int max = rw_list_max(x->cfg, RW_FOLLOWING);
	int i, j;

	if (xtx_txn_round(t) == 0) {
		x->h[0] = get(t, RW_FOLLOWING, x->a, true);
		x->h[1] = get(t, RW_FOLLOWERS, x->b, true);
		if (x->h[0] < 0 || x->h[1] < 0)
			return broken(x, "the read could not be queued");
		return XTX_STEP_READ;
	}
	if (read_list(t, x->h[0], RW_FOLLOWING, x->a, &ing) < 0 ||
	    read_list(t, x->h[1], RW_FOLLOWERS, x->b, &ers) < 0)
		return broken(x, "a follow list is malformed or another user's");
	i = rw_list_find(&ing, x->b);
	j = rw_list_find(&ers, x->a);
	/* both read with their locks: the two sides of one relation must agree */
	if ((i < 0) != (j < 0))
		return broken(x, "a follows b on one side only");
	if (i >= 0) {
		rw_list_remove(&ing, (unsigned int)i);
		rw_list_remove(&ers, (unsigned int)j);
		x->unfollowed = true;
	} else if (ing.n >= max || ers.n >= max) {
		x->logical = true;	/* a list at its bound: refused, so both sides stay exact */
		return XTX_STEP_ABORT;
	} else {
		ing.e[ing.n++] = x->b;
		ers.e[ers.n++] = x->a;
	}
	if (!put_list(t, x->a, &ing) || !put_list(t, x->b, &ers))
		return broken(x, "a write was refused by libxtx");
	return XTX_STEP_COMMIT;
}

static enum xtx_step post(struct xtx_txn *t, struct rw_txn *x)
{
	unsigned int tmax = rw_list_max(x->cfg, RW_TIMELINE), i;
	struct rw_list ers, tl;
	struct rw_user u;
	uint8_t v[XTX_VALUE_MAX];
	const void *cv;
	uint16_t vlen;
	uint64_t tid;

	if (xtx_txn_round(t) == 0) {
		x->h[0] = get(t, RW_USER, x->a, true);
		x->h[1] = get(t, RW_FOLLOWERS, x->a, false);
		x->h[2] = get(t, RW_TIMELINE, x->a, true);
		if (x->h[0] < 0 || x->h[1] < 0 || x->h[2] < 0)
			return broken(x, "the read could not be queued");
		return XTX_STEP_READ;
	}
	if (xtx_value(t, x->h[0], &cv, &vlen) || rw_user_decode(cv, vlen, &u) || u.uid != x->a)
		return broken(x, "a loaded user's row is missing or malformed");
	if (xtx_txn_round(t) == 1) {
		/* the followers' list is a plain read: it only picks whom to reach */
		if (read_list(t, x->h[1], RW_FOLLOWERS, x->a, &ers) < 0)
			ers.n = 0;
		x->nfan = ers.n < x->cfg->fanout ? ers.n : x->cfg->fanout;
		for (i = 0; i < x->nfan; i++) {
			x->fan[i] = (uint32_t)ers.e[ers.n - 1 - i];
			x->h[4 + i] = get(t, RW_TIMELINE, x->fan[i], true);
			if (x->h[4 + i] < 0)
				return broken(x, "the read could not be queued");
		}
		if (x->nfan)
			return XTX_STEP_READ;
	}
	if (u.ntweets >= 1u << RW_SEQ_BITS) {
		x->logical = true;
		return XTX_STEP_ABORT;
	}
	tid = rw_tweet_id(x->a, u.ntweets);
	vlen = rw_tweet_encode(x->cfg, x->a, u.ntweets, v);
	if (xtx_insert(t, RW_TWEETS, rw_key(RW_TWEET, tid), v, vlen))
		return broken(x, "a write was refused by libxtx");
	u.ntweets++;
	vlen = rw_user_encode(&u, v);
	if (xtx_put(t, RW_TABLE, rw_key(RW_USER, x->a), v, vlen))
		return broken(x, "a write was refused by libxtx");
	for (i = 0; i <= x->nfan; i++) {
		uint32_t owner = i ? x->fan[i - 1] : x->a;

		if (read_list(t, i ? x->h[4 + i - 1] : x->h[2], RW_TIMELINE, owner, &tl) <= 0)
			return broken(x, "a user's timeline is missing or malformed");
		rw_list_push_front(&tl, tid, tmax);
		if (!put_list(t, owner, &tl))
			return broken(x, "a write was refused by libxtx");
	}
	return XTX_STEP_COMMIT;
}

static enum xtx_step timeline(struct xtx_txn *t, struct rw_txn *x)
{
	struct rw_list tl;
	unsigned int i;

	if (xtx_txn_round(t) == 0) {
		x->h[0] = get(t, RW_TIMELINE, x->a, false);
		return x->h[0] < 0 ? broken(x, "the read could not be queued") : XTX_STEP_READ;
	}
	if (xtx_txn_round(t) == 1) {
		if (read_list(t, x->h[0], RW_TIMELINE, x->a, &tl) <= 0) {
			x->suspect = true;
			x->why = "a loaded user's timeline is missing or malformed";
			return XTX_STEP_COMMIT;
		}
		x->ntids = tl.n < x->nshow ? tl.n : x->nshow;
		for (i = 0; i < x->ntids; i++) {
			x->tids[i] = tl.e[i];
			x->h[4 + i] = get(t, RW_TWEET, tl.e[i], false);
			if (x->h[4 + i] < 0)
				return broken(x, "the read could not be queued");
		}
		return x->ntids ? XTX_STEP_READ : XTX_STEP_COMMIT;
	}
	for (i = 0; i < x->ntids; i++) {
		uint64_t id = x->tids[i];
		const void *v;
		uint16_t vlen;

		if (xtx_value(t, x->h[4 + i], &v, &vlen) ||
		    rw_tweet_check(x->cfg, (uint32_t)(id >> RW_SEQ_BITS),
				   (uint32_t)(id & ((1u << RW_SEQ_BITS) - 1)), v, vlen)) {
			x->suspect = true;
			x->why = "a timeline names a tweet that is missing or not what was posted";
		}
	}
	return XTX_STEP_COMMIT;
}

enum xtx_step rw_step(struct xtx_txn *t, void *arg)
{
	struct rw_txn *x = arg;

	switch (x->type) {
	case RW_ADD:
		return add_user(t, x);
	case RW_FOLLOW:
		return follow(t, x);
	case RW_POST:
		return post(t, x);
	case RW_TIMELINE_READ:
		return timeline(t, x);
	default:
		return broken(x, "no such transaction type");
	}
}
