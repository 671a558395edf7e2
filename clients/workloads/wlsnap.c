// SPDX-License-Identifier: GPL-2.0-only
/* Snapshots of workload tables over all servers through xtxctl dump, with the replica check. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "wlsnap.h"

static unsigned long violations_reported;

void wl_violation(unsigned long *count, const char *fmt, ...)
{
	va_list ap;

	(*count)++;
	if (violations_reported++ >= WL_VIOLATION_REPORTS) {
		if (violations_reported == WL_VIOLATION_REPORTS + 1)
			fprintf(stderr, "verify: further violations are only counted\n");
		return;
	}
	fprintf(stderr, "verify: VIOLATION: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void wl_check_ok(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "verify: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " OK\n");
}

double wl_share_tolerance(double p, uint64_t n)
{
	/* ln(2 / WL_FALSE_ALARM): the exponent Bernstein's bound must reach */
	const double l = log(2 / WL_FALSE_ALARM);
	double var = (double)n * p * (1 - p);

	if (!n)
		return 1;
	/* a share of 0 or 1 is exact: one draw the other way is a bug, not chance */
	if (p <= 0 || p >= 1)
		return 0;
	/*
	 * P(|X - np| >= t) <= 2 exp(-t^2 / (2 (np(1-p) + t/3))) for a sum of n
	 * independent draws: the t that makes it WL_FALSE_ALARM.
	 */
	return (l / 3 + sqrt(l * l / 9 + 2 * l * var)) / (double)n;
}

bool wl_share_plausible(double got, double p, uint64_t n, double slack)
{
	if (!n)
		return true;
	return fabs(got - p) <= wl_share_tolerance(p, n) + slack;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

void wl_rec_release(struct wl_rec *r)
{
	free(r->big);
	r->big = NULL;
}

int wl_parse_dump_line(const char *line, struct wl_rec *r)
{
	unsigned int table, vlen, i;
	unsigned long long key, version;
	const char *hex;
	size_t hexlen;
	uint8_t *out;
	int n = 0;

	if (sscanf(line, "table=%u key=%llu version=%llu vlen=%u value=%n", &table, &key,
		   &version, &vlen, &n) < 4 || !n)
		return -1;
	hex = line + n;
	hexlen = strcspn(hex, " \t\r\n");
	if (table > 255 || vlen > XTX_VALUE_MAX || hexlen != 2 * (size_t)vlen ||
	    strspn(hex + hexlen, " \t\r\n") != strlen(hex + hexlen))
		return -1;
	memset(r, 0, sizeof(*r));
	r->table = (uint8_t)table;
	r->key = key;
	r->version = version;
	r->vlen = (uint16_t)vlen;
	out = r->value;
	if (vlen > XTX_VALUE_INLINE) {
		r->big = malloc(vlen);
		if (!r->big)
			return -1;
		out = r->big;
	}
	for (i = 0; i < vlen; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			wl_rec_release(r);
			return -1;
		}
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct wl_rec *x = a, *y = b;

	if (x->table != y->table)
		return x->table < y->table ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (int)x->server - (int)y->server;
}

static bool same_data(const struct wl_rec *a, const struct wl_rec *b)
{
	return a->vlen == b->vlen && a->version == b->version &&
	       !memcmp(wl_rec_value(a), wl_rec_value(b), a->vlen);
}

/* One key's records g[0..n): on its replicas only, once each, all equal. */
static void check_group(const struct wl_rec *g, size_t n, unsigned int replication,
			wl_place_fn place, void *place_arg, unsigned long *violations)
{
	unsigned int want[8], i;
	size_t j;

	for (i = 0; i < replication && i < 8; i++) {
		want[i] = place(place_arg, g->table, g->key, i);
		/* a shard short of R (a server failed): its replicas are the ones left */
		if (want[i] == WL_NO_REPLICA) {
			replication = i;
			break;
		}
	}
	for (i = 0; i < replication && i < 8; i++) {
		for (j = 0; j < n && g[j].server != want[i]; j++)
			;
		if (j == n)
			wl_violation(violations, "table %u key %#llx: missing on server %u, one "
				     "of its replicas (present on %zu servers)", g->table,
				     (unsigned long long)g->key, want[i], n);
	}
	for (j = 0; j < n; j++) {
		for (i = 0; i < replication && i < 8 && want[i] != g[j].server; i++)
			;
		if (i == replication || i == 8)
			wl_violation(violations, "table %u key %#llx: held by server %u, which "
				     "is not one of its replicas", g->table,
				     (unsigned long long)g->key, g[j].server);
		else if (j && g[j].server == g[j - 1].server)
			wl_violation(violations, "table %u key %#llx: twice in server %u's dump",
				     g->table, (unsigned long long)g->key, g[j].server);
		else if (!same_data(&g[j], g))
			wl_violation(violations, "table %u key %#llx: replicas differ: server %u "
				     "has version %llu (%u bytes), server %u version %llu (%u "
				     "bytes)%s", g->table, (unsigned long long)g->key, g->server,
				     (unsigned long long)g->version, g->vlen, g[j].server,
				     (unsigned long long)g[j].version, g[j].vlen,
				     g->version == g[j].version && g->vlen == g[j].vlen ?
				     " with other bytes" : "");
	}
}

int wl_snap_merge(struct wl_rec *recs, size_t n, uint32_t mask, unsigned int replication,
		  wl_place_fn place, void *place_arg, struct wl_snap *out,
		  unsigned long *violations)
{
	size_t i = 0, j, kept = 0;

	qsort(recs, n, sizeof(*recs), rec_cmp);
	out->r = calloc(n ? n : 1, sizeof(*out->r));
	out->n = 0;
	if (!out->r) {
		for (i = 0; i < n; i++)
			wl_rec_release(&recs[i]);
		return -ENOMEM;
	}
	while (i < n) {
		size_t k;
		bool keep;

		for (j = i + 1; j < n && recs[j].table == recs[i].table &&
		     recs[j].key == recs[i].key; j++)
			;
		keep = recs[i].table < 32 && (mask & (1u << recs[i].table));
		if (keep) {
			check_group(&recs[i], j - i, replication, place, place_arg, violations);
			out->r[kept] = recs[i];
			out->r[kept++].server = 0;
			recs[i].big = NULL;	/* the snapshot's now */
		}
		/* the other replicas' copies were only for comparing */
		for (k = i; k < j; k++)
			wl_rec_release(&recs[k]);
		i = j;
	}
	out->n = kept;
	return 0;
}

/* Appends server s's dump of the tables in mask to *recs. */
static int dump_server(const struct wl_ctl *ctl, unsigned int s, uint32_t mask,
		       struct wl_rec **recs, size_t *n, size_t *cap)
{
	char cmd[1024], *line = NULL;
	size_t len = 0;
	unsigned long lineno = 0;
	int rc = 0, st;
	FILE *f;

	if (ctl->dump_cmd)
		snprintf(cmd, sizeof(cmd), "%s %u", ctl->dump_cmd, s);
	else
		snprintf(cmd, sizeof(cmd), "'%s' --netns '%s' --iface '%s' dump", ctl->xtxctl,
			 ctl->netns[s], ctl->iface[s]);
	f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, "Error: running %s: %s\n", cmd, strerror(errno));
		return -1;
	}
	while (getline(&line, &len, f) > 0) {
		struct wl_rec r;

		lineno++;
		if (line[0] == '#')
			continue;
		if (wl_parse_dump_line(line, &r)) {
			fprintf(stderr, "Error: %s: line %lu is not a dump record: %s", cmd,
				lineno, line);
			rc = -1;
			break;
		}
		if (r.table >= 32 || !(mask & (1u << r.table))) {
			wl_rec_release(&r);
			continue;
		}
		if (*n == *cap) {
			size_t nc = *cap ? 2 * *cap : 4096;
			struct wl_rec *nr = realloc(*recs, nc * sizeof(*nr));

			if (!nr) {
				fprintf(stderr, "Error: dump of server %u: %s\n", s,
					strerror(ENOMEM));
				wl_rec_release(&r);
				rc = -1;
				break;
			}
			*recs = nr;
			*cap = nc;
		}
		r.server = (uint16_t)s;
		(*recs)[(*n)++] = r;
	}
	free(line);
	st = pclose(f);
	if (!rc && (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))) {
		fprintf(stderr, "Error: %s failed (status %d)\n", cmd, st);
		rc = -1;
	}
	return rc;
}

int wl_snapshot(const struct wl_ctl *ctl, uint64_t skip, uint32_t mask, unsigned int replication,
		wl_place_fn place, void *place_arg, struct wl_snap *out,
		unsigned long *violations)
{
	struct wl_rec *recs = NULL;
	size_t n = 0, cap = 0;
	unsigned int s;
	int err;

	for (s = 0; s < ctl->nservers; s++) {
		if (s < 64 && (skip >> s & 1))
			continue;
		if (dump_server(ctl, s, mask, &recs, &n, &cap)) {
			while (n)
				wl_rec_release(&recs[--n]);
			free(recs);
			return -1;
		}
	}
	err = wl_snap_merge(recs, n, mask, replication, place, place_arg, out, violations);
	free(recs);
	if (err) {
		fprintf(stderr, "Error: merging the dumps: %s\n", strerror(-err));
		return -1;
	}
	return 0;
}

void wl_snap_free(struct wl_snap *s)
{
	size_t i;

	for (i = 0; s->r && i < s->n; i++)
		wl_rec_release(&s->r[i]);
	free(s->r);
	s->r = NULL;
	s->n = 0;
}

/* The first record at or after (table, key). */
static size_t lower_bound(const struct wl_snap *s, uint8_t table, uint64_t key)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct wl_rec *r = &s->r[mid];

		if (r->table < table || (r->table == table && r->key < key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct wl_rec *wl_snap_find(const struct wl_snap *s, uint8_t table, uint64_t key)
{
	size_t i = lower_bound(s, table, key);

	if (i < s->n && s->r[i].table == table && s->r[i].key == key)
		return &s->r[i];
	return NULL;
}

size_t wl_snap_table(const struct wl_snap *s, uint8_t table, const struct wl_rec **first)
{
	size_t a = lower_bound(s, table, 0), b = table == 255 ? s->n : lower_bound(s, table + 1, 0);

	*first = s->r + a;
	return b - a;
}
