/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Retwis, the Twitter clone Redis's tutorial builds (as TAPIR and Xenic run
 * it), as key-value rows: users, who follows whom (both directions),
 * tweets and timelines.  Xenic's mix: add user 5 %, follow/unfollow 15 %,
 * post tweet 30 %, get timeline 50 % (half the transactions read-only,
 * 1-10 keys each), users picked by zipf with alpha 0.5.
 *
 * The key's top byte says what the row is; rows live in three tables by
 * size, so a read reserves room (in the request's value area) for what
 * its table may hold: users and counters (slot-sized), tweets (tweet_size),
 * lists.  Lists are values of at most value_max bytes (1 KiB by default),
 * bounded so:
 *   - followers and following: at most (value_max - 8) / 4 user ids; a
 *     follow that would overfill either side is refused (a logical
 *     failure), so the two directions stay exact mirrors;
 *   - a timeline: the newest (value_max - 8) / 8 tweet ids; a post pushes
 *     its id to the front and the oldest falls off.
 */
#ifndef XTX_RETWIS_H
#define XTX_RETWIS_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/proto.h>
#include "zipf.h"

/* Table ids on the wire, apart from TATP's, SmallBank's and YCSB's. */
#define RW_TABLE		13	/* users and user counters: values within the slot */
#define RW_TWEETS		14	/* tweets */
#define RW_LISTS		15	/* followers, following, timelines */

enum rw_kind {
	RW_USER = 1,		/* payload uid */
	RW_FOLLOWERS,		/* uid: who follows uid */
	RW_FOLLOWING,		/* uid: whom uid follows */
	RW_TIMELINE,		/* uid: the newest tweets of uid and of those uid follows */
	RW_TWEET,		/* uid << 24 | seq: uid's seq-th tweet */
	RW_NEXTUID,		/* p: users added in partition p */
};

#define RW_SEQ_BITS		24
/* New users come from RW_PARTS counters, so adding users rarely conflicts. */
#define RW_PARTS		64
#define RW_LIST_HDR		8
#define RW_USER_LEN		36
#define RW_TWEET_HDR		16
#define RW_NEXT_LEN		8
/* The smallest value_max: a list of one entry of each kind. */
#define RW_VALUE_MIN		24
/* Followers of one post whose timelines it reaches at most, beside the author's. */
#define RW_MAX_FANOUT		8
/* Tweets a timeline read fetches at most. */
#define RW_MAX_SHOW		9

enum rw_type {
	RW_ADD,			/* add user */
	RW_FOLLOW,		/* follow, or unfollow if it does already */
	RW_POST,		/* post tweet */
	RW_TIMELINE_READ,	/* get timeline */
	RW_NTYPES,
};

extern const char *const rw_type_names[RW_NTYPES];
/* 5/15/30/50 in the order above. */
extern const unsigned int rw_default_mix[RW_NTYPES];

struct rw_cfg {
	uint32_t users;		/* loaded users 0..users-1, the ones transactions pick */
	unsigned int follows;	/* whom each loaded user follows at the start */
	unsigned int value_max;	/* the longest list value */
	unsigned int tweet_size;	/* bytes of a tweet's value */
	unsigned int fanout;	/* followers' timelines a post reaches */
	double theta;		/* 0: uniform */
	struct xtx_zipf zipf;
	unsigned int mix[RW_NTYPES];
	uint64_t seed;
};

static inline uint64_t rw_key(enum rw_kind kind, uint64_t payload)
{
	return (uint64_t)kind << 56 | (payload & ((1ull << 56) - 1));
}

static inline enum rw_kind rw_key_kind(uint64_t key)
{
	return (enum rw_kind)(key >> 56);
}

static inline uint64_t rw_key_payload(uint64_t key)
{
	return key & ((1ull << 56) - 1);
}

/* The table a kind of row lives in. */
static inline uint8_t rw_table_of(enum rw_kind kind)
{
	if (kind == RW_TWEET)
		return RW_TWEETS;
	if (kind == RW_FOLLOWERS || kind == RW_FOLLOWING || kind == RW_TIMELINE)
		return RW_LISTS;
	return RW_TABLE;
}

static inline uint64_t rw_tweet_id(uint32_t uid, uint32_t seq)
{
	return (uint64_t)uid << RW_SEQ_BITS | seq;
}

/* Entries a list of kind holds at most. */
unsigned int rw_list_max(const struct rw_cfg *cfg, enum rw_kind kind);

/* Checks cfg, fills the zipf table: 0 or -1 after printing why. */
int rw_cfg_init(struct rw_cfg *cfg);

/* A transaction type by cfg->mix; a loaded user by the configured distribution. */
enum rw_type rw_pick_type(const struct rw_cfg *cfg, uint64_t *rng);
uint32_t rw_pick_user(const struct rw_cfg *cfg, uint64_t *rng);

/* The uid of partition p's c-th added user. */
static inline uint64_t rw_added_uid(const struct rw_cfg *cfg, uint32_t p, uint64_t c)
{
	return cfg->users + c * RW_PARTS + p;
}

/* ---- values ---- */

struct rw_user {
	uint32_t uid;
	uint32_t ntweets;	/* its tweets are seq 0..ntweets-1 */
};

/* A list: followers/following (uids) or a timeline (tweet ids), n entries. */
struct rw_list {
	enum rw_kind kind;
	uint32_t owner;
	unsigned int n;
	uint64_t e[XTX_VALUE_MAX / 4];
};

/* Encoders return the value's length. */
uint16_t rw_user_encode(const struct rw_user *u, uint8_t *out);
int rw_user_decode(const uint8_t *v, uint16_t vlen, struct rw_user *u);
uint16_t rw_list_encode(const struct rw_list *l, uint8_t *out);
int rw_list_decode(const uint8_t *v, uint16_t vlen, enum rw_kind kind, struct rw_list *l);
uint16_t rw_tweet_encode(const struct rw_cfg *cfg, uint32_t uid, uint32_t seq, uint8_t *out);
/* Whether v is the tweet (uid, seq) encode makes: 0 or -1. */
int rw_tweet_check(const struct rw_cfg *cfg, uint32_t uid, uint32_t seq, const uint8_t *v,
		   uint16_t vlen);
uint16_t rw_next_encode(uint32_t count, uint8_t *out);
int rw_next_decode(const uint8_t *v, uint16_t vlen, uint32_t *count);

/* Index of x in l, or -1. */
int rw_list_find(const struct rw_list *l, uint64_t x);
/* Removes entry i, keeping the order of the rest. */
void rw_list_remove(struct rw_list *l, unsigned int i);
/* A timeline: x first, the oldest dropped past max. */
void rw_list_push_front(struct rw_list *l, uint64_t x, unsigned int max);

/*
 * The loaded follow graph: each user a follows up to cfg->follows users
 * drawn from (seed, a), none twice, not itself, no followers list past its
 * bound.  Whom a follows: following[a * follows + i] for i < nfollowing[a];
 * who follows b: followers[foff[b] .. foff[b + 1]).  0 or -1 (out of
 * memory); rw_graph_free() after.
 */
struct rw_graph {
	uint32_t *following, *nfollowing;
	uint32_t *followers;
	uint64_t *foff;
};

int rw_graph_build(const struct rw_cfg *cfg, struct rw_graph *g);
void rw_graph_free(struct rw_graph *g);

#endif /* XTX_RETWIS_H */
