// SPDX-License-Identifier: GPL-2.0-only
/* Retwis's rows and generators: value layouts, lists, the mix, user choice and the loaded graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/hash.h>
#include "retwis.h"
#include "wlbytes.h"

const char *const rw_type_names[RW_NTYPES] = { "ADD", "FOLLOW", "POST", "TLINE" };

const unsigned int rw_default_mix[RW_NTYPES] = { 5, 15, 30, 50 };

static unsigned int entry_size(enum rw_kind kind)
{
	return kind == RW_TIMELINE ? 8 : 4;
}

unsigned int rw_list_max(const struct rw_cfg *cfg, enum rw_kind kind)
{
	return (cfg->value_max - RW_LIST_HDR) / entry_size(kind);
}

int rw_cfg_init(struct rw_cfg *cfg)
{
	unsigned int i, sum = 0;

	if (cfg->value_max < RW_VALUE_MIN || cfg->value_max > XTX_VALUE_MAX) {
		fprintf(stderr, "Error: --value-max %u: want %u..%u\n", cfg->value_max,
			RW_VALUE_MIN, XTX_VALUE_MAX);
		return -1;
	}
	if (cfg->tweet_size < RW_TWEET_HDR || cfg->tweet_size > XTX_VALUE_MAX) {
		fprintf(stderr, "Error: --tweet-size %u: want %u..%u\n", cfg->tweet_size,
			RW_TWEET_HDR, XTX_VALUE_MAX);
		return -1;
	}
	if (cfg->users < 2 || cfg->follows >= cfg->users ||
	    cfg->follows > rw_list_max(cfg, RW_FOLLOWING)) {
		fprintf(stderr, "Error: %u users each following %u: want at least 2 users, "
			"fewer follows than users and at most %u (a list of --value-max %u)\n",
			cfg->users, cfg->follows, rw_list_max(cfg, RW_FOLLOWING), cfg->value_max);
		return -1;
	}
	if (cfg->fanout > RW_MAX_FANOUT) {
		fprintf(stderr, "Error: --fanout %u: at most %u\n", cfg->fanout, RW_MAX_FANOUT);
		return -1;
	}
	for (i = 0; i < RW_NTYPES; i++)
		sum += cfg->mix[i];
	if (!sum) {
		fprintf(stderr, "Error: a mix of weights all 0\n");
		return -1;
	}
	if (cfg->theta > 0 && xtx_zipf_init(&cfg->zipf, cfg->users, cfg->theta)) {
		fprintf(stderr, "Error: zipf theta %g over %u users\n", cfg->theta, cfg->users);
		return -1;
	}
	return 0;
}

enum rw_type rw_pick_type(const struct rw_cfg *cfg, uint64_t *rng)
{
	unsigned int sum = 0, i, r;

	for (i = 0; i < RW_NTYPES; i++)
		sum += cfg->mix[i];
	r = (unsigned int)xtx_rng_below(rng, sum);
	for (i = 0; i < RW_NTYPES - 1; i++) {
		if (r < cfg->mix[i])
			break;
		r -= cfg->mix[i];
	}
	return (enum rw_type)i;
}

uint32_t rw_pick_user(const struct rw_cfg *cfg, uint64_t *rng)
{
	if (cfg->theta > 0)
		return (uint32_t)xtx_zipf_next(&cfg->zipf, rng);
	return (uint32_t)xtx_rng_below(rng, cfg->users);
}

/* ---- values ---- */

/* A user: kind, 3 zero bytes, uid, ntweets, its name (zero-padded), a checksum of the rest. */
static uint32_t sum32(const uint8_t *v, unsigned int len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	unsigned int i;

	for (i = 0; i < len; i++)
		h = (h ^ v[i]) * 0x100000001b3ull;
	return (uint32_t)(h ^ h >> 32);
}

uint16_t rw_user_encode(const struct rw_user *u, uint8_t *out)
{
	memset(out, 0, RW_USER_LEN);
	out[0] = RW_USER;
	wl_put_le(out + 4, u->uid, 4);
	wl_put_le(out + 8, u->ntweets, 4);
	snprintf((char *)out + 12, 20, "user%u", u->uid);
	wl_put_le(out + 32, sum32(out, 32), 4);
	return RW_USER_LEN;
}

int rw_user_decode(const uint8_t *v, uint16_t vlen, struct rw_user *u)
{
	char name[20] = { 0 };

	if (vlen != RW_USER_LEN || v[0] != RW_USER || wl_get_le(v + 32, 4) != sum32(v, 32))
		return -1;
	u->uid = (uint32_t)wl_get_le(v + 4, 4);
	u->ntweets = (uint32_t)wl_get_le(v + 8, 4);
	snprintf(name, sizeof(name), "user%u", u->uid);
	return memcmp(name, v + 12, 20) ? -1 : 0;
}

/* A list: kind, a zero byte, the count (u16), the owner's uid, then the entries. */
uint16_t rw_list_encode(const struct rw_list *l, uint8_t *out)
{
	unsigned int es = entry_size(l->kind), i;

	out[0] = (uint8_t)l->kind;
	out[1] = 0;
	wl_put_le(out + 2, l->n, 2);
	wl_put_le(out + 4, l->owner, 4);
	for (i = 0; i < l->n; i++)
		wl_put_le(out + RW_LIST_HDR + i * es, l->e[i], es);
	return (uint16_t)(RW_LIST_HDR + l->n * es);
}

int rw_list_decode(const uint8_t *v, uint16_t vlen, enum rw_kind kind, struct rw_list *l)
{
	unsigned int es = entry_size(kind), i;

	if (vlen < RW_LIST_HDR || v[0] != kind || v[1] ||
	    vlen != RW_LIST_HDR + wl_get_le(v + 2, 2) * es)
		return -1;
	l->kind = kind;
	l->n = (unsigned int)wl_get_le(v + 2, 2);
	l->owner = (uint32_t)wl_get_le(v + 4, 4);
	for (i = 0; i < l->n; i++)
		l->e[i] = wl_get_le(v + RW_LIST_HDR + i * es, es);
	return 0;
}

/* A tweet: kind, a zero byte, its length, author, seq, a checksum, then text from (seed, id). */
uint16_t rw_tweet_encode(const struct rw_cfg *cfg, uint32_t uid, uint32_t seq, uint8_t *out)
{
	uint64_t s = xtx_mix64(cfg->seed ^ xtx_mix64(rw_tweet_id(uid, seq) + 0x7eed));
	unsigned int i;

	out[0] = RW_TWEET;
	out[1] = 0;
	wl_put_le(out + 2, cfg->tweet_size, 2);
	wl_put_le(out + 4, uid, 4);
	wl_put_le(out + 8, seq, 4);
	for (i = RW_TWEET_HDR; i < cfg->tweet_size; i++) {
		if (!(i & 7))
			s = xtx_mix64(s + i);
		out[i] = (uint8_t)('a' + (s >> (8 * (i & 7))) % 26);
	}
	wl_put_le(out + 12, sum32(out + RW_TWEET_HDR, cfg->tweet_size - RW_TWEET_HDR), 4);
	return (uint16_t)cfg->tweet_size;
}

int rw_tweet_check(const struct rw_cfg *cfg, uint32_t uid, uint32_t seq, const uint8_t *v,
		   uint16_t vlen)
{
	uint8_t want[XTX_VALUE_MAX];

	if (vlen != cfg->tweet_size)
		return -1;
	rw_tweet_encode(cfg, uid, seq, want);
	return memcmp(v, want, vlen) ? -1 : 0;
}

uint16_t rw_next_encode(uint32_t count, uint8_t *out)
{
	wl_put_le(out, count, 4);
	wl_put_le(out + 4, (uint32_t)~count, 4);
	return RW_NEXT_LEN;
}

int rw_next_decode(const uint8_t *v, uint16_t vlen, uint32_t *count)
{
	if (vlen != RW_NEXT_LEN || (uint32_t)wl_get_le(v + 4, 4) != (uint32_t)~wl_get_le(v, 4))
		return -1;
	*count = (uint32_t)wl_get_le(v, 4);
	return 0;
}

int rw_list_find(const struct rw_list *l, uint64_t x)
{
	unsigned int i;

	for (i = 0; i < l->n; i++)
		if (l->e[i] == x)
			return (int)i;
	return -1;
}

void rw_list_remove(struct rw_list *l, unsigned int i)
{
	if (i >= l->n)
		return;
	memmove(&l->e[i], &l->e[i + 1], (l->n - i - 1) * sizeof(l->e[0]));
	l->n--;
}

void rw_list_push_front(struct rw_list *l, uint64_t x, unsigned int max)
{
	unsigned int n = l->n < max ? l->n : max - 1;

	memmove(&l->e[1], &l->e[0], n * sizeof(l->e[0]));
	l->e[0] = x;
	l->n = n + 1;
}

/* ---- the loaded graph ---- */

int rw_graph_build(const struct rw_cfg *cfg, struct rw_graph *g)
{
	unsigned int fmax = rw_list_max(cfg, RW_FOLLOWERS), k = cfg->follows, j, i;
	uint64_t *fill = NULL;
	uint32_t a, *nin;

	memset(g, 0, sizeof(*g));
	g->following = malloc(((size_t)cfg->users * k + 1) * sizeof(*g->following));
	g->nfollowing = calloc(cfg->users, sizeof(*g->nfollowing));
	nin = calloc(cfg->users, sizeof(*nin));
	g->foff = calloc((size_t)cfg->users + 1, sizeof(*g->foff));
	if (!g->following || !g->nfollowing || !nin || !g->foff)
		goto fail;
	for (a = 0; a < cfg->users; a++) {
		uint32_t *mine = g->following + (size_t)a * k;

		for (j = 0; j < k; j++) {
			uint32_t b = (uint32_t)(xtx_mix64(cfg->seed ^ xtx_mix64((uint64_t)a << 20 |
										 j)) % cfg->users);
			bool dup = b == a || nin[b] >= fmax;

			for (i = 0; i < g->nfollowing[a] && !dup; i++)
				dup = mine[i] == b;
			if (dup)
				continue;
			mine[g->nfollowing[a]++] = b;
			nin[b]++;
		}
	}
	for (a = 0; a < cfg->users; a++)
		g->foff[a + 1] = g->foff[a] + nin[a];
	g->followers = malloc((g->foff[cfg->users] + 1) * sizeof(*g->followers));
	fill = malloc(((size_t)cfg->users + 1) * sizeof(*fill));
	if (!g->followers || !fill)
		goto fail;
	memcpy(fill, g->foff, ((size_t)cfg->users + 1) * sizeof(*fill));
	/* in order of a, so a followers list lists its oldest follower first */
	for (a = 0; a < cfg->users; a++)
		for (i = 0; i < g->nfollowing[a]; i++) {
			uint32_t b = g->following[(size_t)a * k + i];

			g->followers[fill[b]++] = a;
		}
	free(fill);
	free(nin);
	return 0;
fail:
	free(fill);
	free(nin);
	rw_graph_free(g);
	return -1;
}

void rw_graph_free(struct rw_graph *g)
{
	free(g->following);
	free(g->nfollowing);
	free(g->followers);
	free(g->foff);
	memset(g, 0, sizeof(*g));
}
