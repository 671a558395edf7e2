// SPDX-License-Identifier: GPL-2.0-only
/* Checks merged history files exactly, from versions: Adya's G0 to G2 and data faults. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "history.h"
#include "history_check.h"

/*
 * The graph's nodes are the included transactions: committed ones, and
 * in-doubt ones some included read observed (or the final state holds),
 * since an unobserved in-doubt write may never have happened.  Edges:
 *
 *   ww  Ti installed version v of x, Tj installed the next version of x
 *   wr  Tj read the version of x Ti installed
 *   rw  Ti read version v of x, Tj installed the next version after v
 *
 * Everything is indexed, not pointed to: transactions and ops by position,
 * keys through one open-addressing table, each key's installed versions
 * as a sorted slice of one array (lookups are binary searches), and the
 * edges as CSR grouped by source, built in a counting pass and a filling
 * pass of the same generator.  Memory is a few arrays linear in the
 * history, and the files stay mmapped rather than copied.
 */

enum { EK_WW, EK_WR, EK_RW, EK__COUNT };
#define EK_MASK(k)	(1u << (k))
#define VIA_BITS	30
#define VIA_MASK	((1u << VIA_BITS) - 1)
/* Installs are tagged in the op index's top bit when not the txn's last write of the key. */
#define INST_INTERMEDIATE	0x80000000u
#define NONE		UINT32_MAX

static const char *const ek_name[EK__COUNT] = { "ww", "wr", "rw" };

static const char *const anomaly_names[HISTORY_ANOMALY__COUNT] = {
	[HISTORY_G0] = "G0",		[HISTORY_G1A] = "G1a",	   [HISTORY_G1B] = "G1b",
	[HISTORY_G1C] = "G1c",		[HISTORY_G2] = "G2",	   [HISTORY_DUP] = "dup",
	[HISTORY_UNKNOWN] = "unknown",	[HISTORY_MISMATCH] = "mismatch",
	[HISTORY_LOST] = "lost",
};

const char *history_anomaly_name(enum history_anomaly_kind k)
{
	return k < HISTORY_ANOMALY__COUNT ? anomaly_names[k] : "?";
}

struct inst {
	uint64_t ver;
	uint32_t txn;
	uint32_t op;		/* global op index | INST_INTERMEDIATE */
};

struct edge {
	uint32_t dst;
	uint32_t via;		/* kind << VIA_BITS | global index of the source's op */
};

struct ck {
	const struct history_check_opts *o;
	struct history_check_report *r;

	struct history_file *files;
	int nfiles;

	/* transactions */
	uint32_t ntx;
	const struct history_rec_hdr **rec;
	uint32_t *op0;		/* global index of the first op */
	uint8_t *inc;		/* in the graph */

	/* ops */
	uint32_t nops;
	uint32_t *opkey;	/* key index of each op */

	/* keys */
	uint32_t nkeys, kcap;
	uint32_t *slot;		/* hash slots: key index + 1, 0 empty */
	uint32_t slotmask;
	uint64_t *kkey;
	uint8_t *ktab;
	uint64_t *kinit;	/* lowest uninstalled version read: the initial state */
	uint64_t *fver;		/* final state version, or UINT64_MAX when not listed */
	uint8_t *fabsent;

	/* installed versions: cand/inc (committed, in-doubt) and exc (aborted, failed) */
	uint32_t *is, *xs;	/* per key slice starts, nkeys + 1 */
	struct inst *ins, *xins;

	/* graph */
	uint64_t *eoff;		/* ntx + 1 */
	uint64_t *ecur;
	struct edge *edges;
	uint64_t nedges;

	/* Tarjan and BFS scratch */
	uint32_t *idx, *low, *comp, *comp2, *stk, *cstk_node, *seen, *par;
	uint64_t *cstk_edge, *par_edge;
	uint8_t *onstk;
	uint32_t next_index, ncomp, bfs_epoch;

	unsigned int printed[HISTORY_ANOMALY__COUNT];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline const struct history_op *txn_op(const struct ck *c, uint32_t t, uint32_t gi)
{
	return history_rec_ops(c->rec[t]) + (gi - c->op0[t]);
}

static inline uint64_t txn_id(const struct ck *c, uint32_t t)
{
	return c->rec[t]->txn;
}

/* ---- anomaly output ---- */

struct line {
	char buf[1024];
	size_t len;
	uint64_t txns[16];
	unsigned int ntxns;
};

static void line_add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line_add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len >= sizeof(l->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n;
	if (l->len >= sizeof(l->buf))
		l->len = sizeof(l->buf) - 1;
}

static void line_txn(struct line *l, uint64_t id)
{
	if (l->ntxns < sizeof(l->txns) / sizeof(l->txns[0]))
		l->txns[l->ntxns++] = id;
}

/* Prints "anomaly KIND: txns A B | detail" (capped per kind) and calls back. */
static void report(struct ck *c, enum history_anomaly_kind k, struct line *detail)
{
	struct line out = { .len = 0 };
	struct history_anomaly a;
	unsigned int i;

	c->r->count[k]++;
	c->r->anomalies++;
	line_add(&out, "anomaly %s: txns", anomaly_names[k]);
	for (i = 0; i < detail->ntxns; i++)
		line_add(&out, " %" PRIu64, detail->txns[i]);
	line_add(&out, " | %s", detail->buf);
	if (c->o->out && (!c->o->max_print || c->printed[k] < c->o->max_print)) {
		fprintf(c->o->out, "%s\n", out.buf);
		c->printed[k]++;
	}
	if (c->o->on_anomaly) {
		a.kind = k;
		a.ntxns = detail->ntxns;
		a.txns = detail->txns;
		a.line = out.buf;
		c->o->on_anomaly(c->o->arg, &a);
	}
}

/* ---- loading and keys ---- */

static inline uint32_t key_hash(uint8_t table, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull ^ ((uint64_t)table << 56 | table);

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (uint32_t)h;
}

static int keys_grow(struct ck *c)
{
	uint32_t ncap = c->kcap ? c->kcap * 2 : 1024, i;
	uint32_t *slot = calloc((size_t)ncap * 2, sizeof(*slot));
	uint64_t *kkey = realloc(c->kkey, (size_t)ncap * sizeof(*kkey));
	uint8_t *ktab;

	if (kkey)
		c->kkey = kkey;
	ktab = realloc(c->ktab, ncap);
	if (ktab)
		c->ktab = ktab;
	if (!slot || !kkey || !ktab) {
		free(slot);
		return -ENOMEM;
	}
	/* Twice as many slots as keys: the load factor stays at or under 1/2. */
	c->slotmask = ncap * 2 - 1;
	for (i = 0; i < c->nkeys; i++) {
		uint32_t s = key_hash(c->ktab[i], c->kkey[i]) & c->slotmask;

		while (slot[s])
			s = (s + 1) & c->slotmask;
		slot[s] = i + 1;
	}
	free(c->slot);
	c->slot = slot;
	c->kcap = ncap;
	return 0;
}

/* The key's index, or NONE when absent and !add. */
static uint32_t key_find(struct ck *c, uint8_t table, uint64_t key, bool add)
{
	uint32_t s = key_hash(table, key) & c->slotmask, k;

	while ((k = c->slot[s])) {
		if (c->kkey[k - 1] == key && c->ktab[k - 1] == table)
			return k - 1;
		s = (s + 1) & c->slotmask;
	}
	if (!add)
		return NONE;
	k = c->nkeys++;
	c->kkey[k] = key;
	c->ktab[k] = table;
	c->slot[s] = k + 1;
	return k;
}

static int load(struct ck *c, const char **paths, int n)
{
	uint64_t ntx = 0, nops = 0;
	uint32_t t = 0, gi = 0;
	char err[512];
	int i, ret;

	c->files = calloc((size_t)n, sizeof(*c->files));
	if (!c->files)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		ret = history_file_open(&c->files[i], paths[i], err, sizeof(err));
		if (ret) {
			fprintf(stderr, "%s\n", err);
			return ret;
		}
		c->nfiles++;
		ntx += c->files[i].ntxns;
		nops += c->files[i].nops;
	}
	/* Edges name their op in 30 bits: a billion ops is far beyond any run. */
	if (ntx >= UINT32_MAX || nops > VIA_MASK) {
		fprintf(stderr, "Error: %" PRIu64 " transactions, %" PRIu64 " ops: too many\n",
			ntx, nops);
		return -E2BIG;
	}
	c->ntx = (uint32_t)ntx;
	c->nops = (uint32_t)nops;
	c->rec = malloc((ntx + 1) * sizeof(*c->rec));
	c->op0 = malloc((ntx + 1) * sizeof(*c->op0));
	c->inc = calloc(ntx + 1, 1);
	c->opkey = malloc((nops + 1) * sizeof(*c->opkey));
	if (!c->rec || !c->op0 || !c->inc || !c->opkey || keys_grow(c))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct history_rec_hdr *rec;
		size_t off = 0;

		while ((rec = history_file_next(&c->files[i], &off))) {
			const struct history_op *op = history_rec_ops(rec);
			uint32_t j;

			c->rec[t] = rec;
			c->op0[t] = gi;
			for (j = 0; j < rec->nops; j++, gi++) {
				if (c->nkeys == c->kcap && keys_grow(c))
					return -ENOMEM;
				c->opkey[gi] = key_find(c, op[j].table, op[j].key, true);
				if (op[j].flags & HISTORY_OP_WRITE)
					c->r->writes++;
				else
					c->r->reads++;
			}
			switch (rec->outcome) {
			case HISTORY_COMMITTED:
				c->r->committed++;
				c->inc[t] = 1;
				break;
			case HISTORY_ABORTED:
				c->r->aborted++;
				break;
			case HISTORY_FAILED:
				c->r->failed++;
				break;
			case HISTORY_IN_DOUBT:
				c->r->in_doubt++;
				break;
			}
			t++;
		}
	}
	c->op0[t] = gi;
	c->r->files = (uint64_t)n;
	c->r->txns = ntx;
	c->r->ops = nops;
	c->r->keys = c->nkeys;
	return 0;
}

/* "TABLE KEY VERSION [absent]" per line; '#' starts a comment.  Keys never recorded are skipped. */
static int load_final(struct ck *c, const char *path)
{
	FILE *f = fopen(path, "re");
	char line[256];
	unsigned int lineno = 0, i;

	if (!f) {
		fprintf(stderr, "Error: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	c->fver = malloc((size_t)c->nkeys * sizeof(*c->fver) + 1);
	c->fabsent = calloc((size_t)c->nkeys + 1, 1);
	if (!c->fver || !c->fabsent) {
		fclose(f);
		return -ENOMEM;
	}
	for (i = 0; i < c->nkeys; i++)
		c->fver[i] = UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		unsigned int table;
		unsigned long long key, ver;
		char word[16] = "";
		uint32_t k;
		int n;

		lineno++;
		if (line[strspn(line, " \t")] == '#' || line[strspn(line, " \t\r\n")] == 0)
			continue;
		n = sscanf(line, "%u %llu %llu %15s", &table, &key, &ver, word);
		if (n < 3 || table > 255 || (n == 4 && strcmp(word, "absent"))) {
			fprintf(stderr, "Error: %s:%u: expected TABLE KEY VERSION [absent]\n", path,
				lineno);
			fclose(f);
			return -EINVAL;
		}
		k = key_find(c, (uint8_t)table, key, false);
		if (k == NONE)
			continue;
		c->fver[k] = ver;
		c->fabsent[k] = n == 4;
	}
	fclose(f);
	return 0;
}

/* ---- installed versions ---- */

static int inst_cmp(const void *a, const void *b)
{
	const struct inst *x = a, *y = b;

	if (x->ver != y->ver)
		return x->ver < y->ver ? -1 : 1;
	return x->txn < y->txn ? -1 : x->txn > y->txn;
}

/* Counting sort of the versioned writes of txns picked by want() into per-key sorted slices. */
static int build_inst(struct ck *c, bool aborted, uint32_t **startp, struct inst **insp)
{
	uint32_t *start = calloc((size_t)c->nkeys + 2, sizeof(*start));
	struct inst *ins = NULL;
	uint32_t t, k, n = 0;

	if (!start)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++) {
		for (t = 0; t < c->ntx; t++) {
			const struct history_rec_hdr *rec = c->rec[t];
			const struct history_op *op = history_rec_ops(rec);
			bool ab = rec->outcome == HISTORY_ABORTED || rec->outcome == HISTORY_FAILED;
			uint32_t j;

			if (ab != aborted)
				continue;
			for (j = 0; j < rec->nops; j++) {
				uint32_t gi = c->op0[t] + j;

				if (!(op[j].flags & HISTORY_OP_WRITE) || !op[j].version)
					continue;
				k = c->opkey[gi];
				if (pass == 0) {
					start[k + 2]++;
					continue;
				}
				ins[start[k + 1]++] = (struct inst){ op[j].version, t, gi };
			}
		}
		if (pass == 0) {
			/* start[k + 1] becomes key k's cursor, then its end = start of k + 1. */
			for (k = 0; k < c->nkeys; k++)
				start[k + 2] += start[k + 1];
			n = start[c->nkeys + 1];
			ins = malloc((size_t)n * sizeof(*ins) + 1);
			if (!ins) {
				free(start);
				return -ENOMEM;
			}
		}
	}
	for (k = 0; k < c->nkeys; k++)
		if (start[k + 1] - start[k] > 1)
			qsort(ins + start[k], start[k + 1] - start[k], sizeof(*ins), inst_cmp);
	*startp = start;
	*insp = ins;
	return 0;
}

/* First position in key k's slice with version >= v (lower) or > v (upper). */
static inline uint32_t bound(const struct inst *ins, uint32_t lo, uint32_t hi, uint64_t v,
			     bool upper)
{
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ins[mid].ver < v || (upper && ins[mid].ver == v))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * In-doubt transactions join the graph when an included read saw one of
 * their versions that no committed transaction installed (a committed
 * installer claims a version first: an in-doubt attempt that never
 * happened may have recorded the same number), or the final state holds
 * it.  Joining may make their reads count, hence the worklist.
 */
static int include_in_doubt(struct ck *c)
{
	uint32_t *work = malloc(((size_t)c->ntx + 1) * sizeof(*work)), nw = 0, t, j;

	if (!work)
		return -ENOMEM;
	for (t = 0; t < c->ntx; t++) {
		const struct history_rec_hdr *rec = c->rec[t];
		const struct history_op *op = history_rec_ops(rec);

		if (c->inc[t]) {
			work[nw++] = t;
			continue;
		}
		if (rec->outcome != HISTORY_IN_DOUBT || !c->fver)
			continue;
		for (j = 0; j < rec->nops; j++) {
			uint32_t k = c->opkey[c->op0[t] + j];

			if ((op[j].flags & HISTORY_OP_WRITE) && op[j].version &&
			    c->fver[k] == op[j].version) {
				c->inc[t] = 1;
				c->r->in_doubt_included++;
				work[nw++] = t;
				break;
			}
		}
	}
	while (nw) {
		const struct history_rec_hdr *rec;
		const struct history_op *op;

		t = work[--nw];
		rec = c->rec[t];
		op = history_rec_ops(rec);
		for (j = 0; j < rec->nops; j++) {
			uint32_t k = c->opkey[c->op0[t] + j], p, e = c->is[k + 1], q;
			bool claimed = false;

			if (op[j].flags & HISTORY_OP_WRITE)
				continue;
			p = bound(c->ins, c->is[k], e, op[j].version, false);
			for (q = p; q < e && c->ins[q].ver == op[j].version; q++)
				if (c->rec[c->ins[q].txn]->outcome == HISTORY_COMMITTED)
					claimed = true;
			if (claimed)
				continue;
			for (q = p; q < e && c->ins[q].ver == op[j].version; q++) {
				uint32_t u = c->ins[q].txn;

				if (!c->inc[u]) {
					c->inc[u] = 1;
					c->r->in_doubt_included++;
					work[nw++] = u;
				}
			}
		}
	}
	free(work);
	return 0;
}

/* Drops excluded installers, marks intermediate versions, reports duplicate versions. */
static void finish_inst(struct ck *c)
{
	uint32_t *last = c->seen;	/* per txn: the last key it was seen installing */
	uint32_t k, w = 0, t;

	for (t = 0; t < c->ntx; t++)
		last[t] = NONE;
	for (k = 0; k < c->nkeys; k++) {
		uint32_t s = c->is[k], e = c->is[k + 1], i, ns = w;

		for (i = s; i < e; i++)
			if (c->inc[c->ins[i].txn])
				c->ins[w++] = c->ins[i];
		c->is[k] = ns;
		/* Walking down from the newest, a txn's first sighting is its final write. */
		for (i = w; i-- > ns;) {
			t = c->ins[i].txn;
			if (last[t] == k)
				c->ins[i].op |= INST_INTERMEDIATE;
			last[t] = k;
		}
		for (i = ns; i < w;) {
			uint32_t j = i + 1;

			while (j < w && c->ins[j].ver == c->ins[i].ver)
				j++;
			if (j - i > 1) {
				struct line l = { .len = 0 };
				uint32_t m;

				for (m = i; m < j; m++)
					line_txn(&l, txn_id(c, c->ins[m].txn));
				line_add(&l, "%u transactions installed %u:%" PRIu64 "@%" PRIu64,
					 j - i, c->ktab[k], c->kkey[k], c->ins[i].ver);
				report(c, HISTORY_DUP, &l);
			}
			i = j;
		}
	}
	c->is[c->nkeys] = w;
}

/* ---- edges ---- */

static inline void emit(struct ck *c, int pass, uint32_t src, uint32_t dst, unsigned int kind,
			uint32_t via)
{
	if (src == dst)
		return;
	if (pass == 0) {
		c->eoff[src + 1]++;
		return;
	}
	c->edges[c->ecur[src]++] = (struct edge){ dst, (uint32_t)kind << VIA_BITS | via };
	c->r->edges_by_kind[kind]++;
}

/*
 * A read that found the key absent gives a bound, not a version of the key:
 * the server answers with the bucket's version floor, above every version
 * the key had, and which other keys of the bucket may have raised.  So the
 * read saw the newest install at or below it (which must be a delete), or
 * the key's initial absence, and precedes the first install above it.
 */
static void check_absent_read(struct ck *c, uint32_t t, uint32_t gi, const struct history_op *op,
			      int pass)
{
	uint32_t k = c->opkey[gi], s = c->is[k], e = c->is[k + 1];
	uint32_t q = bound(c->ins, s, e, op->version, true);
	struct line l = { .len = 0 };
	const struct history_op *w;
	uint32_t u, uop;

	if (q < e)
		emit(c, pass, t, c->ins[q].txn, EK_RW, gi);
	if (q == s)
		return;
	u = c->ins[q - 1].txn;
	uop = c->ins[q - 1].op & ~INST_INTERMEDIATE;
	if (u == t)
		return;
	emit(c, pass, u, t, EK_WR, uop);
	w = txn_op(c, u, uop);
	if (pass == 0 || (w->flags & HISTORY_OP_ABSENT))
		return;
	line_txn(&l, txn_id(c, u));
	line_txn(&l, txn_id(c, t));
	line_add(&l, "%" PRIu64 " read %u:%" PRIu64 " absent at %" PRIu64 ", %" PRIu64
		 " had installed a value at %" PRIu64, txn_id(c, t), op->table, op->key,
		 op->version, txn_id(c, u), c->ins[q - 1].ver);
	report(c, HISTORY_MISMATCH, &l);
}

static void check_read(struct ck *c, uint32_t t, uint32_t gi, const struct history_op *op, int pass)
{
	uint32_t k = c->opkey[gi], s = c->is[k], e = c->is[k + 1];
	uint32_t p = bound(c->ins, s, e, op->version, false);
	uint32_t q = bound(c->ins, p, e, op->version, true);
	struct line l = { .len = 0 };

	if (op->flags & HISTORY_OP_ABSENT) {
		check_absent_read(c, t, gi, op, pass);
		return;
	}
	/* rw: whoever installed the next version after the one read. */
	if (q < e)
		emit(c, pass, t, c->ins[q].txn, EK_RW, gi);
	if (p < q) {
		const struct inst *in = &c->ins[p];
		uint32_t u = in->txn, uop = in->op & ~INST_INTERMEDIATE;
		const struct history_op *w = txn_op(c, u, uop);

		if (u == t)
			return;
		/* Edges name an op of their source: for wr, the installer's write. */
		emit(c, pass, u, t, EK_WR, uop);
		if (pass == 0)
			return;
		if (in->op & INST_INTERMEDIATE) {
			line_txn(&l, txn_id(c, u));
			line_txn(&l, txn_id(c, t));
			line_add(&l,
				 "%" PRIu64 " read %u:%" PRIu64 "@%" PRIu64
				 ", an intermediate version of %" PRIu64,
				 txn_id(c, t), op->table, op->key, op->version, txn_id(c, u));
			report(c, HISTORY_G1B, &l);
		}
		if ((w->flags ^ op->flags) & HISTORY_OP_ABSENT) {
			line_txn(&l, txn_id(c, u));
			line_txn(&l, txn_id(c, t));
			line_add(&l,
				 "%" PRIu64 " read %u:%" PRIu64 "@%" PRIu64
				 " as %s, %" PRIu64 " installed it %s",
				 txn_id(c, t), op->table, op->key, op->version,
				 op->flags & HISTORY_OP_ABSENT ? "absent" : "present", txn_id(c, u),
				 w->flags & HISTORY_OP_ABSENT ? "as a delete" : "as a value");
			report(c, HISTORY_MISMATCH, &l);
		}
		return;
	}
	/* No included installer: an aborted write, the initial state, or nothing. */
	if (op->version) {
		uint32_t xe = c->xs[k + 1], x = bound(c->xins, c->xs[k], xe, op->version, false);

		if (x < xe && c->xins[x].ver == op->version) {
			uint32_t a = c->xins[x].txn;

			if (pass == 1) {
				line_txn(&l, txn_id(c, a));
				line_txn(&l, txn_id(c, t));
				line_add(&l,
					 "%" PRIu64 " read %u:%" PRIu64 "@%" PRIu64
					 ", written only by %s %" PRIu64,
					 txn_id(c, t), op->table, op->key, op->version,
					 history_outcome_name(c->rec[a]->outcome), txn_id(c, a));
				report(c, HISTORY_G1A, &l);
			}
			return;
		}
	}
	if (pass == 0) {
		if (op->version < c->kinit[k])
			c->kinit[k] = op->version;
		return;
	}
	if (op->version == c->kinit[k] && (s == e || op->version < c->ins[s].ver) &&
	    (!c->o->initial_max || op->version <= c->o->initial_max))
		return;
	line_txn(&l, txn_id(c, t));
	line_add(&l, "%" PRIu64 " read %u:%" PRIu64 "@%" PRIu64 ", installed by no transaction",
		 txn_id(c, t), op->table, op->key, op->version);
	if (op->version != c->kinit[k])
		line_add(&l, " (the key's initial version is %" PRIu64 ")", c->kinit[k]);
	else if (s < e)
		line_add(&l, " (not below the first installed %" PRIu64 ")", c->ins[s].ver);
	else
		line_add(&l, " (above --initial-max)");
	report(c, HISTORY_UNKNOWN, &l);
}

/* Pass 0 counts edges per source (and finds initial versions); pass 1 places them and reports. */
static void gen_edges(struct ck *c, int pass)
{
	uint32_t t, j;

	for (t = 0; t < c->ntx; t++) {
		const struct history_rec_hdr *rec = c->rec[t];
		const struct history_op *op = history_rec_ops(rec);

		if (!c->inc[t])
			continue;
		for (j = 0; j < rec->nops; j++) {
			uint32_t gi = c->op0[t] + j, k = c->opkey[gi], e = c->is[k + 1], q;

			if (!(op[j].flags & HISTORY_OP_WRITE)) {
				check_read(c, t, gi, &op[j], pass);
				continue;
			}
			if (!op[j].version) {
				if (pass == 1)
					c->r->unversioned++;
				continue;
			}
			/* ww: whoever installed the next version of the key. */
			q = bound(c->ins, c->is[k], e, op[j].version, true);
			if (q < e)
				emit(c, pass, t, c->ins[q].txn, EK_WW, gi);
		}
	}
}

static int build_edges(struct ck *c)
{
	uint32_t t, k;

	c->eoff = calloc((size_t)c->ntx + 2, sizeof(*c->eoff));
	c->ecur = malloc(((size_t)c->ntx + 1) * sizeof(*c->ecur));
	c->kinit = malloc(((size_t)c->nkeys + 1) * sizeof(*c->kinit));
	if (!c->eoff || !c->ecur || !c->kinit)
		return -ENOMEM;
	for (k = 0; k < c->nkeys; k++)
		c->kinit[k] = UINT64_MAX;
	gen_edges(c, 0);
	for (t = 0; t < c->ntx; t++)
		c->eoff[t + 1] += c->eoff[t];
	c->nedges = c->eoff[c->ntx];
	c->edges = malloc(c->nedges * sizeof(*c->edges) + 1);
	if (!c->edges)
		return -ENOMEM;
	memcpy(c->ecur, c->eoff, (size_t)c->ntx * sizeof(*c->ecur));
	gen_edges(c, 1);
	c->r->edges = c->nedges;
	return 0;
}

/* ---- final state ---- */

static void check_final(struct ck *c)
{
	uint32_t k;

	for (k = 0; k < c->nkeys; k++) {
		uint32_t s = c->is[k], e = c->is[k + 1];
		const struct inst *last;
		const struct history_op *w;
		struct line l = { .len = 0 };

		if (s == e)
			continue;
		last = &c->ins[e - 1];
		w = txn_op(c, last->txn, last->op & ~INST_INTERMEDIATE);
		if (c->fver[k] == UINT64_MAX) {
			if (w->flags & HISTORY_OP_ABSENT)
				continue;
			line_add(&l, "final state lacks %u:%" PRIu64, c->ktab[k], c->kkey[k]);
		} else if (c->fver[k] < last->ver) {
			line_add(&l, "final state has %u:%" PRIu64 "@%" PRIu64, c->ktab[k],
				 c->kkey[k], c->fver[k]);
		} else if (c->fver[k] == last->ver &&
			   !c->fabsent[k] != !(w->flags & HISTORY_OP_ABSENT)) {
			line_add(&l, "final state has %u:%" PRIu64 "@%" PRIu64 " %s", c->ktab[k],
				 c->kkey[k], c->fver[k], c->fabsent[k] ? "absent" : "present");
		} else {
			/* A newer final version nobody recorded: an unrecorded writer, no loss. */
			continue;
		}
		line_txn(&l, txn_id(c, last->txn));
		line_add(&l, ", %" PRIu64 " %s it at %" PRIu64, txn_id(c, last->txn),
			 w->flags & HISTORY_OP_ABSENT ? "deleted" : "wrote", last->ver);
		report(c, HISTORY_LOST, &l);
	}
}

/* ---- cycles ---- */

/*
 * Iterative Tarjan over the nodes in roots[] and the edges whose kind is in
 * mask and whose destination passes in_scope.  Indexes keep counting
 * across runs, so "visited in this run" is idx >= base and no array needs
 * clearing between the per-component runs.  Writes comp ids to out[].
 */
static bool in_scope(const struct ck *c, uint32_t v, uint32_t scope)
{
	return scope == NONE ? c->inc[v] : c->comp[v] == scope;
}

static void tarjan(struct ck *c, const uint32_t *roots, uint32_t nroots, unsigned int mask,
		   uint32_t scope, uint32_t *out)
{
	uint32_t base = c->next_index, sp = 0, csp = 0, i;

	for (i = 0; i < nroots; i++) {
		uint32_t r = roots ? roots[i] : i;

		if (!in_scope(c, r, scope) || c->idx[r] > base)
			continue;
		c->idx[r] = c->low[r] = ++c->next_index;
		c->stk[sp++] = r;
		c->onstk[r] = 1;
		c->cstk_node[csp] = r;
		c->cstk_edge[csp++] = c->eoff[r];
		while (csp) {
			uint32_t v = c->cstk_node[csp - 1];
			uint64_t ei = c->cstk_edge[csp - 1];
			bool descended = false;

			for (; ei < c->eoff[v + 1]; ei++) {
				const struct edge *ed = &c->edges[ei];
				uint32_t w = ed->dst;

				if (!(mask & EK_MASK(ed->via >> VIA_BITS)) ||
				    !in_scope(c, w, scope))
					continue;
				if (c->idx[w] <= base) {
					c->cstk_edge[csp - 1] = ei + 1;
					c->idx[w] = c->low[w] = ++c->next_index;
					c->stk[sp++] = w;
					c->onstk[w] = 1;
					c->cstk_node[csp] = w;
					c->cstk_edge[csp++] = c->eoff[w];
					descended = true;
					break;
				}
				if (c->onstk[w] && c->idx[w] < c->low[v])
					c->low[v] = c->idx[w];
			}
			if (descended)
				continue;
			csp--;
			if (c->low[v] == c->idx[v]) {
				uint32_t w, id = c->ncomp++;

				do {
					w = c->stk[--sp];
					c->onstk[w] = 0;
					out[w] = id;
				} while (w != v);
			}
			if (csp) {
				uint32_t parent = c->cstk_node[csp - 1];

				if (c->low[v] < c->low[parent])
					c->low[parent] = c->low[v];
			}
		}
	}
}

/*
 * Reports the shortest cycle through u over edges in mask inside u's
 * component in which[] (BFS), as "A -kind(t:k@v)-> B ... A", naming the
 * op that made each edge.  The callers know such a cycle exists.
 */
#define WITNESS_MAX	16

static void witness(struct ck *c, uint32_t u, unsigned int mask, const uint32_t *which,
		    enum history_anomaly_kind kind)
{
	uint32_t id = which[u], head = 0, tail = 0, epoch = ++c->bfs_epoch;
	uint32_t *queue = c->stk;	/* free outside tarjan() */
	uint32_t path[WITNESS_MAX], hops = 0, shown, v = u, i;
	uint64_t pedge[WITNESS_MAX], e, closing = UINT64_MAX;
	struct line l = { .len = 0 };

	queue[tail++] = u;
	c->seen[u] = epoch;
	while (head < tail && closing == UINT64_MAX) {
		uint32_t x = queue[head++];

		for (e = c->eoff[x]; e < c->eoff[x + 1]; e++) {
			uint32_t w = c->edges[e].dst;

			if (!(mask & EK_MASK(c->edges[e].via >> VIA_BITS)) || which[w] != id ||
			    !c->inc[w])
				continue;
			if (w == u) {
				closing = e;
				break;
			}
			if (c->seen[w] != epoch) {
				c->seen[w] = epoch;
				c->par[w] = x;
				c->par_edge[w] = e;
				queue[tail++] = w;
			}
		}
		if (closing != UINT64_MAX)
			v = x;
	}
	if (closing == UINT64_MAX)
		return;
	/* v closed the cycle; walk back to u to count, then again to keep the first hops. */
	for (i = v; i != u; i = c->par[i])
		hops++;
	hops++;
	shown = hops < WITNESS_MAX ? hops : WITNESS_MAX;
	e = closing;
	for (i = hops; i-- > 0; e = c->par_edge[v], v = c->par[v]) {
		if (i < shown) {
			path[i] = v;
			pedge[i] = e;
		}
		if (v == u)
			break;
	}
	for (i = 0; i < shown; i++)
		line_txn(&l, txn_id(c, path[i]));
	line_add(&l, "%u-cycle:", hops);
	for (i = 0; i < shown; i++) {
		const struct edge *ed = &c->edges[pedge[i]];
		const struct history_op *op = txn_op(c, path[i], ed->via & VIA_MASK);

		line_add(&l, " %" PRIu64 " -%s(%u:%" PRIu64 "@%" PRIu64 ")->", txn_id(c, path[i]),
			 ek_name[ed->via >> VIA_BITS], op->table, op->key, op->version);
	}
	line_add(&l, "%s %" PRIu64, shown < hops ? " ..." : "", txn_id(c, u));
	report(c, kind, &l);
}

/* Classifies one SCC by its worst cycle: ww only (G0), ww+wr (G1c), else one with rw (G2). */
static void classify(struct ck *c, uint32_t id, const uint32_t *members, uint32_t n)
{
	static const unsigned int masks[2] = { EK_MASK(EK_WW), EK_MASK(EK_WW) | EK_MASK(EK_WR) };
	static const enum history_anomaly_kind kinds[2] = { HISTORY_G0, HISTORY_G1C };
	uint32_t *cnt = c->par;	/* free until witness() */
	uint32_t i, m;

	for (m = 0; m < 2; m++) {
		uint32_t first = c->ncomp;

		tarjan(c, members, n, masks[m], id, c->comp2);
		/* Fewer sub-components than members: one of them holds a cycle. */
		if (c->ncomp - first == n)
			continue;
		for (i = 0; i < c->ncomp - first; i++)
			cnt[i] = 0;
		for (i = 0; i < n; i++)
			cnt[c->comp2[members[i]] - first]++;
		for (i = 0; i < n && cnt[c->comp2[members[i]] - first] < 2; i++)
			;
		witness(c, members[i], masks[m], c->comp2, kinds[m]);
		return;
	}
	witness(c, members[0], EK_MASK(EK_WW) | EK_MASK(EK_WR) | EK_MASK(EK_RW), c->comp,
		HISTORY_G2);
}

static int find_cycles(struct ck *c)
{
	uint32_t n = c->ntx, t, ncomp, *cnt, *mem;
	size_t sz = (size_t)n + 1;

	c->idx = calloc(sz, sizeof(uint32_t));
	c->low = calloc(sz, sizeof(uint32_t));
	c->comp = calloc(sz, sizeof(uint32_t));
	c->comp2 = calloc(sz, sizeof(uint32_t));
	c->stk = calloc(sz, sizeof(uint32_t));
	c->cstk_node = calloc(sz, sizeof(uint32_t));
	c->par = calloc(sz, sizeof(uint32_t));
	c->cstk_edge = calloc(sz, sizeof(uint64_t));
	c->par_edge = calloc(sz, sizeof(uint64_t));
	c->onstk = calloc(sz, 1);
	if (!c->idx || !c->low || !c->comp || !c->comp2 || !c->stk || !c->cstk_node || !c->par ||
	    !c->cstk_edge || !c->par_edge || !c->onstk)
		return -ENOMEM;
	tarjan(c, NULL, n, EK_MASK(EK_WW) | EK_MASK(EK_WR) | EK_MASK(EK_RW), NONE, c->comp);
	ncomp = c->ncomp;
	/* Group members by component (counting sort) to visit the nontrivial ones. */
	cnt = calloc((size_t)ncomp + 2, sizeof(*cnt));
	mem = malloc(sz * sizeof(*mem));
	if (!cnt || !mem) {
		free(cnt);
		free(mem);
		return -ENOMEM;
	}
	for (t = 0; t < n; t++)
		if (c->inc[t])
			cnt[c->comp[t] + 2]++;
	for (t = 0; t < ncomp; t++)
		cnt[t + 2] += cnt[t + 1];
	for (t = 0; t < n; t++)
		if (c->inc[t])
			mem[cnt[c->comp[t] + 1]++] = t;
	for (t = 0; t < ncomp; t++) {
		uint32_t s = cnt[t], e = cnt[t + 1];

		if (e - s < 2)
			continue;
		c->r->sccs++;
		classify(c, t, mem + s, e - s);
	}
	free(cnt);
	free(mem);
	return 0;
}

static void ck_free(struct ck *c)
{
	int i;

	for (i = 0; i < c->nfiles; i++)
		history_file_close(&c->files[i]);
	free(c->files);
	free(c->rec);
	free(c->op0);
	free(c->inc);
	free(c->opkey);
	free(c->slot);
	free(c->kkey);
	free(c->ktab);
	free(c->kinit);
	free(c->fver);
	free(c->fabsent);
	free(c->is);
	free(c->xs);
	free(c->ins);
	free(c->xins);
	free(c->eoff);
	free(c->ecur);
	free(c->edges);
	free(c->idx);
	free(c->low);
	free(c->comp);
	free(c->comp2);
	free(c->stk);
	free(c->cstk_node);
	free(c->seen);
	free(c->par);
	free(c->cstk_edge);
	free(c->par_edge);
	free(c->onstk);
}

int history_check_files(const char **paths, int n, const struct history_check_opts *o,
			struct history_check_report *r)
{
	struct history_check_opts none = { .out = NULL };
	struct ck c = { .o = o ? o : &none, .r = r };
	int ret;

	memset(r, 0, sizeof(*r));
	ret = load(&c, paths, n);
	if (!ret && c.o->final_state)
		ret = load_final(&c, c.o->final_state);
	if (!ret)
		ret = build_inst(&c, false, &c.is, &c.ins);
	if (!ret)
		ret = build_inst(&c, true, &c.xs, &c.xins);
	if (!ret)
		ret = include_in_doubt(&c);
	if (!ret) {
		c.seen = calloc((size_t)c.ntx + 1, sizeof(*c.seen));
		ret = c.seen ? 0 : -ENOMEM;
	}
	if (!ret) {
		finish_inst(&c);
		/* finish_inst borrowed seen[] as per-txn scratch; BFS epochs start from zero. */
		memset(c.seen, 0, ((size_t)c.ntx + 1) * sizeof(*c.seen));
		ret = build_edges(&c);
	}
	if (!ret && c.fver)
		check_final(&c);
	if (!ret)
		ret = find_cycles(&c);
	if (ret == -ENOMEM)
		fprintf(stderr, "Error: checking the history: %s\n", strerror(ENOMEM));
	ck_free(&c);
	return ret;
}

/* ---- output and command line ---- */

void history_report_print(FILE *out, const struct history_check_report *r)
{
	fprintf(out,
		"history: %" PRIu64 " transactions, %" PRIu64 " committed, %" PRIu64
		" edges, anomalies G0=%" PRIu64 " G1a=%" PRIu64 " G1b=%" PRIu64 " G1c=%" PRIu64
		" G2=%" PRIu64 " dup=%" PRIu64 " unknown=%" PRIu64 " mismatch=%" PRIu64
		" lost=%" PRIu64 "\n",
		r->txns, r->committed, r->edges, r->count[HISTORY_G0], r->count[HISTORY_G1A],
		r->count[HISTORY_G1B], r->count[HISTORY_G1C], r->count[HISTORY_G2],
		r->count[HISTORY_DUP], r->count[HISTORY_UNKNOWN], r->count[HISTORY_MISMATCH],
		r->count[HISTORY_LOST]);
}

void history_report_json(FILE *out, const struct history_check_report *r, double secs)
{
	int k;

	fprintf(out,
		"{\"files\":%" PRIu64 ",\"transactions\":%" PRIu64 ",\"committed\":%" PRIu64
		",\"aborted\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"in_doubt\":%" PRIu64
		",\"in_doubt_included\":%" PRIu64 ",\"ops\":%" PRIu64 ",\"reads\":%" PRIu64
		",\"writes\":%" PRIu64 ",\"keys\":%" PRIu64 ",\"edges\":%" PRIu64
		",\"ww\":%" PRIu64 ",\"wr\":%" PRIu64 ",\"rw\":%" PRIu64
		",\"unversioned_writes\":%" PRIu64 ",\"sccs\":%" PRIu64 ",\"seconds\":%.3f"
		",\"anomalies\":%" PRIu64,
		r->files, r->txns, r->committed, r->aborted, r->failed, r->in_doubt,
		r->in_doubt_included, r->ops, r->reads, r->writes, r->keys, r->edges,
		r->edges_by_kind[EK_WW], r->edges_by_kind[EK_WR], r->edges_by_kind[EK_RW],
		r->unversioned, r->sccs, secs, r->anomalies);
	for (k = 0; k < HISTORY_ANOMALY__COUNT; k++)
		fprintf(out, ",\"%s\":%" PRIu64, anomaly_names[k], r->count[k]);
	fprintf(out, "}\n");
}

static void check_usage(FILE *out)
{
	fprintf(out,
		"Usage: xtx-history-check [options] FILE...\n"
		"       (also: xtxbench check-history [options] FILE...)\n"
		"Merges history files (one per client thread) and checks serializability\n"
		"exactly: Adya's G0, G1a, G1b, G1c, G2 from the recorded versions, plus\n"
		"duplicate versions (lost updates), reads of versions nobody installed,\n"
		"present/absent mismatches and, with --final-state, lost writes.\n"
		"\n"
		"  -f, --final-state FILE  the store afterwards, lines of\n"
		"                          \"TABLE KEY VERSION [absent]\"\n"
		"  -i, --initial-max N     uninstalled versions above N are never initial state\n"
		"  -m, --max-print N       print at most N lines per anomaly kind (default 20;\n"
		"                          0: all); the counts are always complete\n"
		"  -q, --quiet             no anomaly lines, only the summary\n"
		"  -j, --json              the summary as one JSON object\n"
		"  -d, --dump              print the files as text instead of checking\n"
		"  -v, --verbose           timing on stderr\n"
		"  -h, --help\n"
		"\n"
		"Output: one line per anomaly, \"anomaly KIND: txns ID... | detail\", then\n"
		"\"history: N transactions, N committed, N edges, anomalies G0=.. G1a=.. ...\".\n"
		"Exit status: 0 serializable, 1 anomalies found, 2 error.\n"
		"\n"
		"Example: xtx-history-check --json /tmp/hist.*.xh\n");
}

static int parse_u64(const char *s, const char *what, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (*s == '-' || !*s)
		goto bad;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		goto bad;
	*out = v;
	return 0;
bad:
	fprintf(stderr, "Error: %s: '%s' is not a number in [0, 2^64)\n", what, s);
	return -EINVAL;
}

int history_check_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "final-state", required_argument, NULL, 'f' },
		{ "initial-max", required_argument, NULL, 'i' },
		{ "max-print", required_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "dump", no_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct history_check_opts o = { .out = stdout, .max_print = 20 };
	struct history_check_report r;
	bool json = false, dump = false;
	int verbose = 0, ch, ret, i;
	uint64_t v;
	double t0;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "f:i:m:qjdvh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			o.final_state = optarg;
			break;
		case 'i':
			if (parse_u64(optarg, "--initial-max", &o.initial_max))
				return 2;
			break;
		case 'm':
			if (parse_u64(optarg, "--max-print", &v))
				return 2;
			if (v > UINT_MAX) {
				fprintf(stderr, "Error: --max-print: %s is above %u\n", optarg,
					UINT_MAX);
				return 2;
			}
			o.max_print = (unsigned int)v;
			break;
		case 'q':
			o.out = NULL;
			break;
		case 'j':
			json = true;
			break;
		case 'd':
			dump = true;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			check_usage(stdout);
			return 0;
		default:
			check_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "Error: no history file given\n");
		check_usage(stderr);
		return 2;
	}
	if (dump) {
		for (i = optind; i < argc; i++)
			if (history_dump(stdout, argv[i]))
				return 2;
		return 0;
	}
	t0 = now();
	ret = history_check_files((const char **)argv + optind, argc - optind, &o, &r);
	if (ret)
		return 2;
	if (verbose)
		fprintf(stderr, "history: checked in %.3f s\n", now() - t0);
	if (json)
		history_report_json(stdout, &r, now() - t0);
	else
		history_report_print(stdout, &r);
	return r.anomalies ? 1 : 0;
}
