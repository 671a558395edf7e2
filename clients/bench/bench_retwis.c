// SPDX-License-Identifier: GPL-2.0-only
/* xtxbench retwis: Xenic's Retwis mix over libxtx (OCC by default) and the social graph's checks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"
#include "num.h"
#include "retwis.h"
#include "retwis_txn.h"
#include "wlbench.h"

/* x[] counters */
#define RX_UNFOLLOW		0	/* committed FOLLOWs that removed the relation */
#define RX_BOUND		1	/* FOLLOWs refused at a list's bound */

struct rw_ctx {
	struct rw_cfg cfg;
	const char *dist;
};

struct rw_doubt {
	uint64_t txn_id;
	int8_t follows;		/* what it does to the number of follow relations */
	uint8_t type;
};

struct rw_thread {
	bool verify;
	uint64_t committed[RW_NTYPES];
	int64_t follows;		/* relations added less those removed, committed */
	uint64_t drawn[RW_NTYPES];
	struct rw_doubt *doubt;
	size_t ndoubt, capdoubt;
	bool oom;
};

enum {
	OPT_USERS = 0x200,
	OPT_FOLLOWS,
	OPT_VALUE_MAX,
	OPT_TWEET_SIZE,
	OPT_FANOUT,
	OPT_DISTRIBUTION,
	OPT_THETA,
};

static const struct option rw_opts[] = {
	{ "users", required_argument, NULL, OPT_USERS },
	{ "follows", required_argument, NULL, OPT_FOLLOWS },
	{ "value-max", required_argument, NULL, OPT_VALUE_MAX },
	{ "tweet-size", required_argument, NULL, OPT_TWEET_SIZE },
	{ "fanout", required_argument, NULL, OPT_FANOUT },
	{ "distribution", required_argument, NULL, OPT_DISTRIBUTION },
	{ "theta", required_argument, NULL, OPT_THETA },
	{ NULL, 0, NULL, 0 },
};

static const uint8_t rw_tables[] = { RW_TABLE, RW_TWEETS, RW_LISTS };

static void rw_usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxbench retwis --servers IP,IP,IP [options]\n"
		"Retwis (the Redis Twitter clone, as Xenic and TAPIR run it) as libxtx\n"
		"transactions, OCC by default: add user 5%%, follow/unfollow 15%%, post tweet\n"
		"30%%, get timeline 50%%; users by zipf, alpha 0.5.  A key's top byte is the\n"
		"row's kind: users and user counters in table %u, tweets in %u, followers,\n"
		"following and timelines in %u (reads reserve room by table).  Lists are\n"
		"bounded by --value-max B: followers and following hold (B-8)/4 user ids\n"
		"and a follow past that is refused (a logical failure); a timeline keeps\n"
		"its newest (B-8)/8 tweet ids.  A post reaches its author's timeline and\n"
		"those of its --fanout newest followers.  Transactions pick among the\n"
		"loaded users; added users get a row and an empty timeline.\n"
		"\n"
		"Retwis options:\n"
		"      --users N             loaded users (default 100000)\n"
		"      --follows K           whom each loaded user follows at first (default 10)\n"
		"      --value-max B         the longest list value, %u..%u (default %u)\n"
		"      --tweet-size B        bytes of a tweet, %u..%u (default 140)\n"
		"      --fanout F            followers' timelines a post reaches, 0..%u\n"
		"                            (default 2)\n"
		"      --distribution zipf|uniform  user choice (default zipf)\n"
		"      --theta T             zipf's skew (default 0.5, Xenic's)\n"
		"\n"
		"--verify checks: follow relations symmetric (a's following holds b iff b's\n"
		"followers hold a), lists within their bounds with no repeats, every user\n"
		"with a timeline whose entries name tweets that exist and are as posted,\n"
		"each user's tweets exactly seq 0..ntweets-1, the users exactly the loaded\n"
		"ones and those the counters handed out; and against the committed\n"
		"transactions: users added, tweets posted, relations made less removed.\n",
		RW_TABLE, RW_TWEETS, RW_LISTS, RW_VALUE_MIN, XTX_VALUE_MAX,
		XTX_VALUE_MAX, RW_TWEET_HDR, XTX_VALUE_MAX, RW_MAX_FANOUT);
}

static int rw_handle_opt(void *vctx, int c, const char *arg)
{
	struct rw_ctx *ctx = vctx;
	struct rw_cfg *cfg = &ctx->cfg;
	uint32_t v;

	switch (c) {
	case OPT_USERS:
		return xtx_parse_u32("--users", arg, 2, 1u << 30, &cfg->users);
	case OPT_FOLLOWS:
		if (xtx_parse_u32("--follows", arg, 0, XTX_VALUE_MAX, &v))
			return -1;
		cfg->follows = v;
		return 0;
	case OPT_VALUE_MAX:
		if (xtx_parse_u32("--value-max", arg, RW_VALUE_MIN, XTX_VALUE_MAX, &v))
			return -1;
		cfg->value_max = v;
		return 0;
	case OPT_TWEET_SIZE:
		if (xtx_parse_u32("--tweet-size", arg, RW_TWEET_HDR, XTX_VALUE_MAX, &v))
			return -1;
		cfg->tweet_size = v;
		return 0;
	case OPT_FANOUT:
		if (xtx_parse_u32("--fanout", arg, 0, RW_MAX_FANOUT, &v))
			return -1;
		cfg->fanout = v;
		return 0;
	case OPT_DISTRIBUTION:
		return wl_parse_distribution(arg, &ctx->dist);
	case OPT_THETA:
		return xtx_parse_double("--theta", arg, 0.001, XTX_ZIPF_THETA_MAX, &cfg->theta);
	}
	return -1;
}

static int rw_check_opts(void *vctx, unsigned int threads, uint64_t seed)
{
	struct rw_ctx *ctx = vctx;

	(void)threads;
	if (!strcmp(ctx->dist, "uniform"))
		ctx->cfg.theta = 0;
	ctx->cfg.seed = seed;
	return rw_cfg_init(&ctx->cfg);
}

static uint16_t rw_value_max(const void *vctx, uint8_t table)
{
	const struct rw_cfg *c = &((const struct rw_ctx *)vctx)->cfg;

	if (table == RW_TWEETS)
		return (uint16_t)c->tweet_size;
	if (table == RW_LISTS)
		return (uint16_t)c->value_max;
	return RW_USER_LEN > RW_NEXT_LEN ? RW_USER_LEN : RW_NEXT_LEN;
}

static void rw_describe(const void *vctx, bool json)
{
	const struct rw_ctx *ctx = vctx;
	const struct rw_cfg *c = &ctx->cfg;

	if (json) {
		printf("\"users\":%u,\"follows\":%u,\"value_max\":%u,\"tweet_size\":%u,"
		       "\"fanout\":%u,\"distribution\":\"%s\",\"theta\":%.3f,", c->users,
		       c->follows, c->value_max, c->tweet_size, c->fanout, ctx->dist, c->theta);
		return;
	}
	printf("users=%u follows=%u value_max=%u (lists of %u users, timelines of %u tweets) "
	       "tweet_size=%u fanout=%u distribution=%s", c->users, c->follows, c->value_max,
	       rw_list_max(c, RW_FOLLOWERS), rw_list_max(c, RW_TIMELINE), c->tweet_size,
	       c->fanout, ctx->dist);
	if (c->theta > 0)
		printf(" theta=%.2f", c->theta);
	putchar('\n');
}

static int rw_thread_init(void *vctx, void *wt, const struct wl_tinfo *ti)
{
	(void)vctx;
	((struct rw_thread *)wt)->verify = ti->verify;
	return 0;
}

static void rw_thread_free(void *vctx, void *wt)
{
	(void)vctx;
	free(((struct rw_thread *)wt)->doubt);
}

static unsigned int rw_begin(void *vctx, void *wt, void *txn, const struct wl_tinfo *ti)
{
	struct rw_txn *x = txn;

	rw_txn_draw(x, &((struct rw_ctx *)vctx)->cfg, ti->rng);
	((struct rw_thread *)wt)->drawn[x->type]++;
	return x->type;
}

static void rw_rearm(void *vctx, void *wt, void *txn, const struct wl_tinfo *ti)
{
	struct rw_txn *x = txn;

	(void)wt;
	(void)ti;
	rw_txn_arm(x, &((struct rw_ctx *)vctx)->cfg, x->type, x->a, x->b, x->part, x->nshow);
}

static int8_t follows_delta(const struct rw_txn *x)
{
	if (x->type != RW_FOLLOW)
		return 0;
	return x->unfollowed ? -1 : 1;
}

static enum wl_verdict rw_end(void *vctx, void *wt, void *txn, const struct xtx_txn_result *res,
			      uint64_t *xc)
{
	struct rw_thread *t = wt;
	struct rw_txn *x = txn;

	(void)vctx;
	switch (res->outcome) {
	case XTX_COMMITTED:
		if (x->suspect) {
			fprintf(stderr, "retwis: %s (user %u) committed, but %s\n",
				rw_type_names[x->type], x->a, x->why);
			return WL_BROKEN;
		}
		t->committed[x->type]++;
		t->follows += follows_delta(x);
		xc[RX_UNFOLLOW] += x->unfollowed;
		return WL_COMMITTED;
	case XTX_FAILED:
		return WL_FAILED;
	case XTX_IN_DOUBT:
		if (t->ndoubt == t->capdoubt) {
			size_t cap = t->capdoubt ? 2 * t->capdoubt : 16;
			struct rw_doubt *d = realloc(t->doubt, cap * sizeof(*d));

			if (!d) {
				t->oom = true;
				return WL_IN_DOUBT;
			}
			t->doubt = d;
			t->capdoubt = cap;
		}
		t->doubt[t->ndoubt++] = (struct rw_doubt){ .txn_id = res->txn_id,
							   .follows = follows_delta(x),
							   .type = (uint8_t)x->type };
		return WL_IN_DOUBT;
	default:
		break;
	}
	if (x->broken) {
		fprintf(stderr, "retwis: %s (user %u): %s\n", rw_type_names[x->type], x->a, x->why);
		return WL_BROKEN;
	}
	if (res->cause == XTX_CAUSE_USER && x->logical) {
		xc[RX_BOUND] += x->type == RW_FOLLOW;
		return WL_LOGICAL;
	}
	/*
	 * An insert that finds its row (ADD's user, POST's tweet) is a conflict:
	 * under HADES two transactions read the same counter without a lock and
	 * the second insert meets the first's row before validation would have
	 * squashed it.  --verify's counts catch an id really handed out twice.
	 */
	return WL_ABORTED;
}

static void rw_settled(void *vctx, void *wt, uint64_t txn_id, enum xtx_outcome o)
{
	struct rw_thread *t = wt;
	size_t i;

	(void)vctx;
	if (o != XTX_COMMITTED && o != XTX_ABORTED)
		return;
	for (i = 0; i < t->ndoubt; i++) {
		if (t->doubt[i].txn_id != txn_id)
			continue;
		if (o == XTX_COMMITTED) {
			t->committed[t->doubt[i].type]++;
			t->follows += t->doubt[i].follows;
		}
		t->doubt[i] = t->doubt[--t->ndoubt];
		return;
	}
}

static void rw_summary(const void *vctx, const struct wl_counts *c, double secs, bool json)
{
	uint64_t att = 0, ok = 0;
	double d = secs > 0 ? secs : 1;
	unsigned int i;

	(void)vctx;
	for (i = 0; i < RW_NTYPES; i++) {
		att += c->attempted[i];
		ok += c->committed[i];
	}
	if (json) {
		printf("\"rates\":{\"attempts_per_s\":%.1f,\"committed_per_s\":%.1f},"
		       "\"unfollows\":%llu,\"follows_at_bound\":%llu,", att / d, ok / d,
		       (unsigned long long)c->x[RX_UNFOLLOW], (unsigned long long)c->x[RX_BOUND]);
		return;
	}
	printf("rates: attempts/s=%.0f  committed/s=%.0f\n", att / d, ok / d);
	printf("FOLLOWs that unfollowed=%llu  refused at a list's bound=%llu\n",
	       (unsigned long long)c->x[RX_UNFOLLOW], (unsigned long long)c->x[RX_BOUND]);
}

static int rw_populate(void *vctx, wl_emit_fn emit, void *arg)
{
	const struct rw_cfg *cfg = &((struct rw_ctx *)vctx)->cfg;
	uint8_t v[XTX_VALUE_MAX];
	static struct rw_list l;
	struct rw_graph g;
	uint16_t len;
	uint32_t a, i;
	int rc = 0;

	if (rw_graph_build(cfg, &g)) {
		fprintf(stderr, "Error: --populate: the follow graph of %u users: %s\n", cfg->users,
			strerror(ENOMEM));
		return -1;
	}
	for (i = 0; i < RW_PARTS && !rc; i++) {
		len = rw_next_encode(0, v);
		rc = emit(arg, RW_TABLE, rw_key(RW_NEXTUID, i), v, len);
	}
	for (a = 0; a < cfg->users && !rc; a++) {
		struct rw_user u = { .uid = a };

		len = rw_user_encode(&u, v);
		rc = emit(arg, RW_TABLE, rw_key(RW_USER, a), v, len);
		l = (struct rw_list){ .kind = RW_TIMELINE, .owner = a };
		len = rw_list_encode(&l, v);
		rc = rc ?: emit(arg, RW_LISTS, rw_key(RW_TIMELINE, a), v, len);
		/* lists with nobody in them are left out: an absent list is empty */
		l = (struct rw_list){ .kind = RW_FOLLOWING, .owner = a, .n = g.nfollowing[a] };
		for (i = 0; i < l.n; i++)
			l.e[i] = g.following[(size_t)a * cfg->follows + i];
		len = rw_list_encode(&l, v);
		if (l.n && !rc)
			rc = emit(arg, RW_LISTS, rw_key(RW_FOLLOWING, a), v, len);
		l = (struct rw_list){ .kind = RW_FOLLOWERS, .owner = a,
				      .n = (unsigned int)(g.foff[a + 1] - g.foff[a]) };
		for (i = 0; i < l.n; i++)
			l.e[i] = g.followers[g.foff[a] + i];
		len = rw_list_encode(&l, v);
		if (l.n && !rc)
			rc = emit(arg, RW_LISTS, rw_key(RW_FOLLOWERS, a), v, len);
	}
	rw_graph_free(&g);
	return rc;
}

/* ---- --verify ---- */

/* The rows of one kind: [*first, *first + count). */
static size_t kind_rows(const struct wl_snap *s, enum rw_kind kind, const struct wl_rec **first)
{
	const struct wl_rec *r;
	size_t n = wl_snap_table(s, rw_table_of(kind), &r), lo = 0, hi = n, end;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (rw_key_kind(r[mid].key) < kind)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < n && rw_key_kind(r[end].key) == kind; end++)
		;
	*first = r + lo;
	return end - lo;
}

static int pair_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* What one snapshot says, for comparing before with after. */
struct rw_totals {
	uint64_t users_added;	/* the counters' sum */
	uint64_t tweets;	/* tweet rows */
	uint64_t follows;	/* relations */
};

/*
 * One snapshot's own consistency: the rows of every kind well formed and
 * where they belong, the follow lists mirrors, timelines naming tweets
 * that exist.  Fills t; counts violations in *v.
 */
static void check_snapshot(const struct rw_cfg *cfg, const struct wl_snap *s, const char *when,
			   struct rw_totals *t, unsigned long *v)
{
	uint32_t count[RW_PARTS] = { 0 };
	const struct wl_rec *r;
	uint64_t *ing = NULL, *ers = NULL, ntw_sum = 0;
	size_t n, i, ning = 0, ners = 0, all;
	unsigned int lmax = rw_list_max(cfg, RW_FOLLOWERS), tmax = rw_list_max(cfg, RW_TIMELINE);
	static struct rw_list l;
	unsigned int j, k;

	memset(t, 0, sizeof(*t));
	for (k = 0; k < sizeof(rw_tables); k++) {
		all = wl_snap_table(s, rw_tables[k], &r);
		for (i = 0; i < all; i++) {
			enum rw_kind kd = rw_key_kind(r[i].key);

			if (kd < RW_USER || kd > RW_NEXTUID || rw_table_of(kd) != rw_tables[k])
				wl_violation(v, "%s: table %u key %#llx is no Retwis row of that "
					     "table", when, rw_tables[k],
					     (unsigned long long)r[i].key);
		}
	}
	n = kind_rows(s, RW_NEXTUID, &r);
	if (n != RW_PARTS)
		wl_violation(v, "%s: %zu user counters, not %u", when, n, RW_PARTS);
	for (i = 0; i < n; i++) {
		uint64_t p = rw_key_payload(r[i].key);

		if (p >= RW_PARTS || rw_next_decode(wl_rec_value(&r[i]), r[i].vlen, &count[p]))
			wl_violation(v, "%s: user counter %llu malformed", when,
				     (unsigned long long)p);
		else
			t->users_added += count[p];
	}

	/* users: exactly the loaded ones and those the counters handed out */
	n = kind_rows(s, RW_USER, &r);
	if (n != cfg->users + t->users_added)
		wl_violation(v, "%s: %zu users, not the %u loaded + %llu added", when, n,
			     cfg->users, (unsigned long long)t->users_added);
	for (i = 0; i < n; i++) {
		uint64_t uid = rw_key_payload(r[i].key);
		struct rw_user u;
		bool known = uid < cfg->users ||
			     (uid - cfg->users) / RW_PARTS < count[(uid - cfg->users) % RW_PARTS];

		if (rw_user_decode(wl_rec_value(&r[i]), r[i].vlen, &u) || u.uid != uid || !known) {
			wl_violation(v, "%s: user row %llu malformed, another's, or never handed out",
				     when, (unsigned long long)uid);
			continue;
		}
		ntw_sum += u.ntweets;
		if (!wl_snap_find(s, RW_LISTS, rw_key(RW_TIMELINE, uid)))
			wl_violation(v, "%s: user %llu has no timeline", when,
				     (unsigned long long)uid);
	}

	/* tweets: each of a user's seq 0..ntweets-1, as posted */
	n = kind_rows(s, RW_TWEET, &r);
	t->tweets = n;
	for (i = 0; i < n; i++) {
		uint64_t id = rw_key_payload(r[i].key);
		uint32_t uid = (uint32_t)(id >> RW_SEQ_BITS), seq = id & ((1u << RW_SEQ_BITS) - 1);
		const struct wl_rec *ur = wl_snap_find(s, RW_TABLE, rw_key(RW_USER, uid));
		struct rw_user u;

		if (rw_tweet_check(cfg, uid, seq, wl_rec_value(&r[i]), r[i].vlen) || !ur ||
		    rw_user_decode(wl_rec_value(ur), ur->vlen, &u) || seq >= u.ntweets)
			wl_violation(v, "%s: tweet %u of user %u malformed, or past the user's "
				     "count", when, seq, uid);
	}
	if (ntw_sum != n)
		wl_violation(v, "%s: the users count %llu tweets, %zu are there", when,
			     (unsigned long long)ntw_sum, n);

	/* timelines: bounded, each entry once, naming a tweet that is there */
	n = kind_rows(s, RW_TIMELINE, &r);
	for (i = 0; i < n; i++) {
		uint64_t uid = rw_key_payload(r[i].key);

		if (rw_list_decode(wl_rec_value(&r[i]), r[i].vlen, RW_TIMELINE, &l) || l.owner != uid ||
		    l.n > tmax) {
			wl_violation(v, "%s: timeline of %llu malformed or past its bound", when,
				     (unsigned long long)uid);
			continue;
		}
		for (j = 0; j < l.n; j++) {
			for (k = 0; k < j && l.e[k] != l.e[j]; k++)
				;
			if (k < j || !wl_snap_find(s, RW_TWEETS, rw_key(RW_TWEET, l.e[j])))
				wl_violation(v, "%s: timeline of %llu: tweet %#llx %s", when,
					     (unsigned long long)uid, (unsigned long long)l.e[j],
					     k < j ? "twice" : "does not exist");
		}
	}

	/* follow lists: a follows b in a's following iff in b's followers */
	for (k = 0; k < 2; k++) {
		enum rw_kind kd = k ? RW_FOLLOWERS : RW_FOLLOWING;
		uint64_t **pairs = k ? &ers : &ing;
		size_t *np = k ? &ners : &ning;

		n = kind_rows(s, kd, &r);
		*pairs = malloc((n * lmax + 1) * sizeof(**pairs));
		if (!*pairs) {
			wl_violation(v, "%s: out of memory for the follow lists", when);
			goto out;
		}
		for (i = 0; i < n; i++) {
			uint64_t owner = rw_key_payload(r[i].key);

			if (rw_list_decode(wl_rec_value(&r[i]), r[i].vlen, kd, &l) || l.owner != owner ||
			    l.n > lmax || owner >= cfg->users) {
				wl_violation(v, "%s: %s list of %llu malformed or past its bound",
					     when, k ? "followers" : "following",
					     (unsigned long long)owner);
				continue;
			}
			for (j = 0; j < l.n; j++) {
				/* (follower, followee) either way */
				(*pairs)[(*np)++] = k ? l.e[j] << 32 | owner : owner << 32 | l.e[j];
				if (l.e[j] == owner || l.e[j] >= cfg->users)
					wl_violation(v, "%s: %llu lists %llu", when,
						     (unsigned long long)owner,
						     (unsigned long long)l.e[j]);
			}
		}
		qsort(*pairs, *np, sizeof(**pairs), pair_cmp);
		for (i = 1; i < *np; i++)
			if ((*pairs)[i] == (*pairs)[i - 1])
				wl_violation(v, "%s: the relation %llu -> %llu listed twice", when,
					     (unsigned long long)((*pairs)[i] >> 32),
					     (unsigned long long)((*pairs)[i] & 0xffffffffu));
	}
	t->follows = ning;
	if (ning != ners || memcmp(ing, ers, ning * sizeof(*ing))) {
		for (i = 0; i < ning && i < ners && ing[i] == ers[i]; i++)
			;
		wl_violation(v, "%s: follow lists disagree: %zu relations in following lists, %zu "
			     "in followers lists; first difference at %llu -> %llu", when, ning,
			     ners, (unsigned long long)((i < ning ? ing[i] : ers[i]) >> 32),
			     (unsigned long long)((i < ning ? ing[i] : ers[i]) & 0xffffffffu));
	}
out:
	free(ing);
	free(ers);
}

/* Whether after - before of one total lies in [committed, committed + doubt] (either way). */
static bool moved_by(int64_t moved, int64_t committed, int64_t doubt_up, int64_t doubt_down)
{
	return moved >= committed - doubt_down && moved <= committed + doubt_up;
}

static unsigned long rw_verify(void *vctx, const struct wl_snap *b, const struct wl_snap *a,
			       void *const *wts, unsigned int nthreads,
			       const struct wl_counts *c)
{
	const struct rw_cfg *cfg = &((const struct rw_ctx *)vctx)->cfg;
	struct rw_totals tb, ta;
	uint64_t committed[RW_NTYPES] = { 0 }, drawn[RW_NTYPES] = { 0 }, ndrawn = 0;
	int64_t follows = 0, dup[RW_NTYPES] = { 0 }, fup = 0, fdown = 0;
	unsigned long v = 0, mark;
	unsigned int i, k, sum = 0;
	size_t j;

	check_snapshot(cfg, b, "before", &tb, &v);
	mark = v;
	check_snapshot(cfg, a, "after", &ta, &v);
	if (v == mark)
		wl_check_ok("after: %llu users, %llu tweets, %llu follow relations the same from "
			    "both sides, every timeline entry a tweet that exists",
			    (unsigned long long)(cfg->users + ta.users_added),
			    (unsigned long long)ta.tweets, (unsigned long long)ta.follows);
	mark = v;
	for (k = 0; k < nthreads; k++) {
		const struct rw_thread *t = wts[k];

		if (t->oom)
			wl_violation(&v, "a thread could not keep an in-doubt transaction");
		for (i = 0; i < RW_NTYPES; i++) {
			committed[i] += t->committed[i];
			drawn[i] += t->drawn[i];
		}
		follows += t->follows;
		for (j = 0; j < t->ndoubt; j++) {
			dup[t->doubt[j].type]++;
			fup += t->doubt[j].follows > 0;
			fdown += t->doubt[j].follows < 0;
		}
	}
	if (!moved_by((int64_t)(ta.users_added - tb.users_added), (int64_t)committed[RW_ADD],
		      dup[RW_ADD], 0))
		wl_violation(&v, "users added: %llu, but %llu ADDs committed (%lld in doubt)",
			     (unsigned long long)(ta.users_added - tb.users_added),
			     (unsigned long long)committed[RW_ADD], (long long)dup[RW_ADD]);
	if (!moved_by((int64_t)(ta.tweets - tb.tweets), (int64_t)committed[RW_POST],
		      dup[RW_POST], 0))
		wl_violation(&v, "tweets: %llu new, but %llu POSTs committed (%lld in doubt)",
			     (unsigned long long)(ta.tweets - tb.tweets),
			     (unsigned long long)committed[RW_POST], (long long)dup[RW_POST]);
	if (!moved_by((int64_t)ta.follows - (int64_t)tb.follows, follows, fup, fdown))
		wl_violation(&v, "follow relations: %llu -> %llu, but the committed FOLLOWs "
			     "moved them by %lld", (unsigned long long)tb.follows,
			     (unsigned long long)ta.follows, (long long)follows);
	if (v == mark)
		wl_check_ok("%llu users added, %llu tweets posted, follow relations %+lld: as "
			    "the committed transactions did",
			    (unsigned long long)(ta.users_added - tb.users_added),
			    (unsigned long long)(ta.tweets - tb.tweets),
			    (long long)((int64_t)ta.follows - (int64_t)tb.follows));

	mark = v;
	for (i = 0; i < RW_NTYPES; i++) {
		ndrawn += drawn[i];
		sum += cfg->mix[i];
	}
	for (i = 0; i < RW_NTYPES; i++) {
		double p = (double)cfg->mix[i] / sum;

		if (c->attempted[i] != c->committed[i] + c->logical[i] + c->aborted[i] +
		    c->failed[i] + c->in_doubt[i] + c->unknown[i] + c->broken[i])
			wl_violation(&v, "%s: attempted %llu != committed + logical + aborted + "
				     "failed + in doubt + unknown", rw_type_names[i],
				     (unsigned long long)c->attempted[i]);
		if (ndrawn >= 1000 && !wl_share_plausible((double)drawn[i] / ndrawn, p, ndrawn, 0))
			wl_violation(&v, "%s: %.4f of the transactions, the mix says %.4f",
				     rw_type_names[i], (double)drawn[i] / ndrawn, p);
		/* FOLLOW's bound; ADD and POST only past 2^32 users or 2^24 tweets of one */
		if (i == RW_TIMELINE_READ && c->logical[i])
			wl_violation(&v, "%s: %llu logical failures; a read has none",
				     rw_type_names[i], (unsigned long long)c->logical[i]);
	}
	if (v == mark)
		wl_check_ok("counters add up; mix as drawn");
	return v;
}

int bench_retwis_main(int argc, char **argv)
{
	static struct rw_ctx ctx;
	struct wl_workload w = {
		.name = "retwis",
		.ntypes = RW_NTYPES,
		.type_names = rw_type_names,
		.txn_size = sizeof(struct rw_txn),
		.thread_size = sizeof(struct rw_thread),
		.tables = rw_tables,
		.ntables = sizeof(rw_tables),
		.ctx = &ctx,
		.default_protocol = XTX_PROTO_OCC,
		.longopts = rw_opts,
		.handle_opt = rw_handle_opt,
		.check_opts = rw_check_opts,
		.value_max = rw_value_max,
		.usage = rw_usage,
		.describe = rw_describe,
		.thread_init = rw_thread_init,
		.thread_free = rw_thread_free,
		.begin = rw_begin,
		.rearm = rw_rearm,
		.step = rw_step,
		.end = rw_end,
		.settled = rw_settled,
		.summary = rw_summary,
		.populate = rw_populate,
		.verify = rw_verify,
	};

	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg.users = 100000;
	ctx.cfg.follows = 10;
	ctx.cfg.value_max = XTX_VALUE_MAX;
	ctx.cfg.tweet_size = 140;
	ctx.cfg.fanout = 2;
	ctx.cfg.theta = 0.5;
	memcpy(ctx.cfg.mix, rw_default_mix, sizeof(ctx.cfg.mix));
	ctx.dist = "zipf";
	return wl_main(&w, argc, argv);
}
