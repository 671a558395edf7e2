// SPDX-License-Identifier: GPL-2.0-only
/* The cluster configuration: building, parsing and printing it (cluster.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/hash.h>
#include "cluster.h"

#define CLUSTER_FORMAT_VERSION	1

static int bad(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * The checks every configuration passes, however it was made.  Servers
 * of a static cluster are told apart by address and port (the caller's
 * business), those of a cluster in ZooKeeper by address.
 */
static int validate(const struct xtx_cluster *c, bool by_addr, char *err, size_t len)
{
	unsigned int i, j, k;

	if (c->nservers < 1 || c->nservers > XTX_CLUSTER_MAX_SERVERS)
		return bad(err, len, "%u servers: 1..%u", c->nservers, XTX_CLUSTER_MAX_SERVERS);
	if (c->replication < 1 || c->replication > XTX_CLUSTER_MAX_R ||
	    c->replication > c->nservers)
		return bad(err, len, "replication %u: 1..min(%u, servers = %u)", c->replication,
			   XTX_CLUSTER_MAX_R, c->nservers);
	if (c->nshards < 1 || c->nshards > XTX_CLUSTER_MAX_SHARDS)
		return bad(err, len, "%u shards: 1..%u", c->nshards, XTX_CLUSTER_MAX_SHARDS);
	if (c->epoch > XTX_CLUSTER_EPOCH_MAX)
		return bad(err, len, "epoch %u: at most %u", c->epoch, XTX_CLUSTER_EPOCH_MAX);
	for (i = 0; by_addr && i < c->nservers; i++)
		for (j = 0; j < i; j++)
			if (c->server[i].s_addr == c->server[j].s_addr)
				return bad(err, len, "server %s is listed twice",
					   inet_ntoa(c->server[i]));
	for (i = 0; i < c->nshards; i++) {
		if (c->nrep[i] < 1 || c->nrep[i] > c->replication)
			return bad(err, len, "shard %u has %u replicas: 1..%u", i, c->nrep[i],
				   c->replication);
		if (c->copying[i] && c->nrep[i] < 2)
			return bad(err, len, "shard %u: its only replica is copying it", i);
		for (j = 0; j < c->nrep[i]; j++) {
			if (c->rep[i][j] >= c->nservers)
				return bad(err, len, "shard %u: no server %u", i, c->rep[i][j]);
			for (k = 0; k < j; k++)
				if (c->rep[i][k] == c->rep[i][j])
					return bad(err, len, "shard %u: server %u twice", i,
						   c->rep[i][j]);
		}
	}
	return 0;
}

static int build(struct xtx_cluster *c, const struct in_addr *servers, unsigned int n,
		 unsigned int replication, unsigned int nshards, bool by_addr, char *err,
		 size_t errlen)
{
	unsigned int s, i;

	memset(c, 0, sizeof(*c));
	if (n < 1 || n > XTX_CLUSTER_MAX_SERVERS)
		return bad(err, errlen, "%u servers: 1..%u", n, XTX_CLUSTER_MAX_SERVERS);
	if (nshards < 1 || nshards > XTX_CLUSTER_MAX_SHARDS)
		return bad(err, errlen, "%u shards: 1..%u", nshards, XTX_CLUSTER_MAX_SHARDS);
	if (replication < 1 || replication > XTX_CLUSTER_MAX_R || replication > n)
		return bad(err, errlen, "replication %u: 1..min(%u, servers = %u)", replication,
			   XTX_CLUSTER_MAX_R, n);
	c->epoch = 1;
	c->replication = replication;
	c->nservers = n;
	memcpy(c->server, servers, n * sizeof(*servers));
	c->nshards = nshards;
	for (s = 0; s < nshards; s++) {
		c->nrep[s] = (uint8_t)replication;
		for (i = 0; i < replication; i++)
			c->rep[s][i] = (uint8_t)((s + i) % n);
	}
	return validate(c, by_addr, err, errlen);
}

int xtx_cluster_build(struct xtx_cluster *c, const struct in_addr *servers, unsigned int n,
		      unsigned int replication, unsigned int nshards, char *err, size_t errlen)
{
	return build(c, servers, n, replication, nshards, true, err, errlen);
}

int xtx_cluster_static(struct xtx_cluster *c, const struct in_addr *servers, unsigned int n,
		       unsigned int replication, char *err, size_t errlen)
{
	int r = build(c, servers, n, replication, n, false, err, errlen);

	c->epoch = 0;
	return r;
}

/* "0,1,2" into the shard's replica list; "0,1,2*": the last one is copying. */
static int parse_reps(const char *s, uint8_t *rep, uint8_t *n, uint8_t *copying)
{
	unsigned long v;
	char *end;

	*n = 0;
	for (;;) {
		if (*s < '0' || *s > '9')
			return -1;
		v = strtoul(s, &end, 10);
		if (v >= XTX_CLUSTER_MAX_SERVERS || *n == XTX_CLUSTER_MAX_R)
			return -1;
		rep[(*n)++] = (uint8_t)v;
		*copying = *end == '*';
		end += *copying;
		if (!*end)
			return 0;
		if (*copying)
			return -1;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

/* All of s as a number up to max, or -1. */
static int parse_num(const char *s, unsigned long max, uint32_t *out)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end || errno || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_servers(struct xtx_cluster *c, char *list)
{
	char *save = NULL, *ip;
	size_t n = strlen(list);

	/* strtok would skip an empty entry, and so renumber every server after it */
	if (!n || list[0] == ',' || list[n - 1] == ',' || strstr(list, ",,"))
		return -1;
	for (ip = strtok_r(list, ",", &save); ip; ip = strtok_r(NULL, ",", &save)) {
		if (c->nservers == XTX_CLUSTER_MAX_SERVERS ||
		    inet_pton(AF_INET, ip, &c->server[c->nservers]) != 1)
			return -1;
		c->nservers++;
	}
	return c->nservers ? 0 : -1;
}

int xtx_cluster_parse(struct xtx_cluster *c, const char *text, char *err, size_t errlen)
{
	char line[XTX_CLUSTER_MAX_SERVERS * 16 + 32], word[16], arg[sizeof(line)];
	unsigned int lineno = 0, shards_seen = 0, version = 0;
	bool has_epoch = false, has_repl = false;
	unsigned long s;
	const char *p = text, *nl;
	size_t n;

	memset(c, 0, sizeof(*c));
	while (*p) {
		nl = strchr(p, '\n');
		n = nl ? (size_t)(nl - p) : strlen(p);
		lineno++;
		if (n >= sizeof(line))
			return bad(err, errlen, "line %u: too long", lineno);
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (nl != NULL);
		if (!line[0])
			continue;
		arg[0] = '\0';
		if (sscanf(line, "%15s %[^\n]", word, arg) < 1)
			return bad(err, errlen, "line %u: unreadable", lineno);
		if (lineno == 1) {
			if (strcmp(word, "xtx-cluster") || sscanf(arg, "%u", &version) != 1 ||
			    version != CLUSTER_FORMAT_VERSION)
				return bad(err, errlen, "not an xtx cluster configuration of "
					   "version %d", CLUSTER_FORMAT_VERSION);
		} else if (!strcmp(word, "epoch")) {
			if (has_epoch || parse_num(arg, XTX_CLUSTER_EPOCH_MAX, &c->epoch))
				return bad(err, errlen, "line %u: epoch N (1..%u), once", lineno,
					   XTX_CLUSTER_EPOCH_MAX);
			has_epoch = true;
		} else if (!strcmp(word, "id")) {
			char *end;

			errno = 0;
			if (c->id || !isxdigit((unsigned char)arg[0]) ||
			    !(c->id = strtoull(arg, &end, 16)) || *end || errno)
				return bad(err, errlen, "line %u: id HEX (not 0), once", lineno);
		} else if (!strcmp(word, "replication")) {
			if (has_repl || parse_num(arg, XTX_CLUSTER_MAX_R, &c->replication))
				return bad(err, errlen, "line %u: replication N, once", lineno);
			has_repl = true;
		} else if (!strcmp(word, "servers")) {
			if (c->nservers || parse_servers(c, arg))
				return bad(err, errlen, "line %u: servers IP[,IP...] (up to %u), "
					   "once", lineno, XTX_CLUSTER_MAX_SERVERS);
		} else if (!strcmp(word, "shards")) {
			if (c->nshards || parse_num(arg, XTX_CLUSTER_MAX_SHARDS, &c->nshards) ||
			    !c->nshards)
				return bad(err, errlen, "line %u: shards 1..%u", lineno,
					   XTX_CLUSTER_MAX_SHARDS);
		} else if (!strcmp(word, "shard")) {
			char reps[64];

			if (sscanf(arg, "%lu %63s", &s, reps) != 2 || s >= c->nshards ||
			    c->nrep[s] || parse_reps(reps, c->rep[s], &c->nrep[s], &c->copying[s]))
				return bad(err, errlen, "line %u: shard S R0[,R1[,R2]][*], once per "
					   "shard, after 'shards'", lineno);
			shards_seen++;
		} else {
			return bad(err, errlen, "line %u: unknown field '%s'", lineno, word);
		}
	}
	if (!version)
		return bad(err, errlen, "empty configuration");
	/* epoch 0 is a static cluster's: one held in ZooKeeper starts at 1 */
	if (!has_epoch || !c->epoch)
		return bad(err, errlen, "no epoch of 1..%u", XTX_CLUSTER_EPOCH_MAX);
	if (!has_repl)
		return bad(err, errlen, "no replication");
	if (shards_seen != c->nshards)
		return bad(err, errlen, "%u of %u shards listed", shards_seen, c->nshards);
	return validate(c, true, err, errlen);
}

bool xtx_cluster_equal(const struct xtx_cluster *a, const struct xtx_cluster *b)
{
	unsigned int i;

	if (a->epoch != b->epoch || a->id != b->id || a->replication != b->replication ||
	    a->nservers != b->nservers || a->nshards != b->nshards)
		return false;
	for (i = 0; i < a->nservers && i < XTX_CLUSTER_MAX_SERVERS; i++)
		if (a->server[i].s_addr != b->server[i].s_addr)
			return false;
	for (i = 0; i < a->nshards && i < XTX_CLUSTER_MAX_SHARDS; i++)
		if (a->nrep[i] != b->nrep[i] || a->copying[i] != b->copying[i] ||
		    memcmp(a->rep[i], b->rep[i], a->nrep[i] <= XTX_CLUSTER_MAX_R ?
						 a->nrep[i] : XTX_CLUSTER_MAX_R))
			return false;
	return true;
}

int xtx_cluster_format(const struct xtx_cluster *c, char *buf, size_t len)
{
	size_t off = 0;
	unsigned int i, j;
	int n;

#define PUT(...)								\
	do {									\
		n = snprintf(buf + off, len - off, __VA_ARGS__);		\
		if (n < 0 || (size_t)n >= len - off)				\
			return -ENOSPC;						\
		off += (size_t)n;						\
	} while (0)
	PUT("xtx-cluster %d\nepoch %u\n", CLUSTER_FORMAT_VERSION, c->epoch);
	if (c->id)
		PUT("id %016llx\n", (unsigned long long)c->id);
	PUT("replication %u\nservers ", c->replication);
	for (i = 0; i < c->nservers; i++)
		PUT("%s%s", i ? "," : "", inet_ntoa(c->server[i]));
	PUT("\nshards %u\n", c->nshards);
	for (i = 0; i < c->nshards; i++) {
		PUT("shard %u ", i);
		for (j = 0; j < c->nrep[i]; j++)
			PUT("%s%u", j ? "," : "", c->rep[i][j]);
		PUT("%s\n", c->copying[i] ? "*" : "");
	}
#undef PUT
	return (int)off;
}

unsigned int xtx_cluster_shard(const struct xtx_cluster *c, uint8_t table, uint64_t key)
{
	return xtx_shard_of(xtx_hash(table, key), c->nshards);
}

int xtx_cluster_index(const struct xtx_cluster *c, struct in_addr addr)
{
	unsigned int i;

	for (i = 0; i < c->nservers; i++)
		if (c->server[i].s_addr == addr.s_addr)
			return (int)i;
	return -1;
}

unsigned int xtx_cluster_under_replicated(const struct xtx_cluster *c)
{
	unsigned int i, n = 0;

	for (i = 0; i < c->nshards; i++)
		n += xtx_cluster_whole(c, i) < c->replication;
	return n;
}

unsigned int xtx_cluster_whole(const struct xtx_cluster *c, unsigned int s)
{
	return c->nrep[s] - (c->copying[s] ? 1u : 0u);
}

unsigned int xtx_cluster_copying(const struct xtx_cluster *c, unsigned int x)
{
	unsigned int s, n = 0;

	for (s = 0; s < c->nshards; s++)
		n += c->copying[s] && c->rep[s][c->nrep[s] - 1] == x;
	return n;
}

/* x's position in shard s's list, or -1. */
static int pos_in(const struct xtx_cluster *c, unsigned int s, unsigned int x)
{
	unsigned int i;

	for (i = 0; i < c->nrep[s]; i++)
		if (c->rep[s][i] == x)
			return (int)i;
	return -1;
}

static bool copier_of(const struct xtx_cluster *c, unsigned int s, int pos)
{
	return c->copying[s] && pos == c->nrep[s] - 1;
}

unsigned int xtx_cluster_drop(struct xtx_cluster *c, unsigned int x)
{
	unsigned int s, j, changed = 0;
	int i;

	for (s = 0; s < c->nshards; s++) {
		i = pos_in(c, s, x);
		if (i >= 0 && !copier_of(c, s, i) && xtx_cluster_whole(c, s) <= 2)
			return 0;
	}
	for (s = 0; s < c->nshards; s++) {
		i = pos_in(c, s, x);
		if (i < 0)
			continue;
		if (copier_of(c, s, i))
			c->copying[s] = 0;
		for (j = (unsigned int)i; j + 1 < c->nrep[s]; j++)
			c->rep[s][j] = c->rep[s][j + 1];
		c->nrep[s]--;
		changed++;
	}
	return changed;
}

unsigned int xtx_cluster_add_copier(struct xtx_cluster *c, unsigned int x)
{
	unsigned int s, changed = 0;

	if (x >= c->nservers || !(xtx_cluster_gone(c) >> x & 1))
		return 0;
	for (s = 0; s < c->nshards; s++) {
		if (c->copying[s] || c->nrep[s] >= c->replication || c->nrep[s] >= XTX_CLUSTER_MAX_R)
			continue;
		c->rep[s][c->nrep[s]++] = (uint8_t)x;
		c->copying[s] = 1;
		changed++;
	}
	return changed;
}

unsigned int xtx_cluster_copied(struct xtx_cluster *c, unsigned int x)
{
	unsigned int s, changed = 0;

	for (s = 0; s < c->nshards; s++) {
		if (copier_of(c, s, pos_in(c, s, x))) {
			c->copying[s] = 0;
			changed++;
		}
	}
	return changed;
}

uint64_t xtx_cluster_gone(const struct xtx_cluster *c)
{
	uint64_t in = 0, all;
	unsigned int s, i;

	for (s = 0; s < c->nshards; s++)
		for (i = 0; i < c->nrep[s]; i++)
			in |= 1ull << (c->rep[s][i] & 63);
	all = c->nservers >= 64 ? ~0ull : (1ull << c->nservers) - 1;
	return all & ~in;
}

unsigned int xtx_cluster_leads(const struct xtx_cluster *c, unsigned int x)
{
	unsigned int s, n = 0;

	for (s = 0; s < c->nshards; s++)
		n += c->nrep[s] && c->rep[s][0] == x;
	return n;
}

unsigned int xtx_cluster_takes_over(const struct xtx_cluster *prev, const struct xtx_cluster *next,
				    unsigned int x)
{
	unsigned int s, n = 0;

	for (s = 0; s < next->nshards; s++)
		n += next->nrep[s] && next->rep[s][0] == x &&
		     (s >= prev->nshards || !prev->nrep[s] || prev->rep[s][0] != x);
	return n;
}
