// SPDX-License-Identifier: GPL-2.0-only
/* Finds the log records a snapshot must carry, and the transactions its held file lists. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/hash.h>
#include "logrec.h"
#include "decisions.h"
#include "snapshot.h"
#include "snapcarry.h"
#include "txn_records.h"
#include "userlog.h"

/* A key written in range: its newest record there, and what the dump holds. */
struct kent {
	uint64_t key;
	uint64_t maxv;		/* the newest version a record in range gives it */
	uint64_t dv;		/* the dump's version, when dumped */
	uint64_t carried_v;	/* the newest carried write of it (not a delete), 0: none */
	uint8_t table;
	bool used, maxdel, dumped;
};

/* A multi-replica transaction with records in range. */
struct tent {
	uint64_t txn;
	uint32_t distinct;	/* distinct keys written, its participant list counted as one */
	uint16_t last_count;
	uint8_t outcome;	/* enum xtxd_outcome from the decisions file */
	bool used, last, meta, unreflected, carry;
};

/* (txn, table, key) seen: a write logged twice after a retransmission counts once. */
struct dent {
	uint64_t txn, key;
	uint16_t table;		/* 0x100: the participant list */
	bool used;
};

/* One record in range, as the second look needs it. */
struct crec {
	uint64_t txn, key, version;
	uint8_t table;
	uint8_t flags;		/* XTX_LOGF_* */
	bool multi;
};

struct xtxd_carry {
	struct xtxd_carry_scope s;
	struct xtx_snap_pos *pos, *prev;
	uint32_t *user_removed;
	struct xtx_log_entry *prev_e;
	size_t nprev_e;
	struct kent *k;
	size_t kcap, kn;
	struct tent *t;
	size_t tcap, tn;
	struct dent *d;
	size_t dcap, dn;
	struct crec *r;
	size_t rcap, rn;
	uint64_t *valid;
	size_t nvalid, valid_cap;
	uint64_t scanned;
};

/* ---- three open-addressing tables ---- */

static size_t kslot(const struct kent *v, size_t cap, uint8_t table, uint64_t key)
{
	size_t i = xtx_hash(table, key) & (cap - 1);

	while (v[i].used && (v[i].key != key || v[i].table != table))
		i = (i + 1) & (cap - 1);
	return i;
}

static struct kent *kget(struct xtxd_carry *c, uint8_t table, uint64_t key, bool create)
{
	size_t i;

	if (create && (c->kn + 1) * 2 > c->kcap) {
		size_t cap = c->kcap ? c->kcap * 2 : 1024, j;
		struct kent *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (j = 0; j < c->kcap; j++)
			if (c->k[j].used)
				v[kslot(v, cap, c->k[j].table, c->k[j].key)] = c->k[j];
		free(c->k);
		c->k = v;
		c->kcap = cap;
	}
	if (!c->kcap)
		return NULL;
	i = kslot(c->k, c->kcap, table, key);
	if (!c->k[i].used) {
		if (!create)
			return NULL;
		c->k[i].used = true;
		c->k[i].table = table;
		c->k[i].key = key;
		c->kn++;
	}
	return &c->k[i];
}

static size_t tslot(const struct tent *v, size_t cap, uint64_t txn)
{
	size_t i = xtx_mix64(txn) & (cap - 1);

	while (v[i].used && v[i].txn != txn)
		i = (i + 1) & (cap - 1);
	return i;
}

static struct tent *tget(struct xtxd_carry *c, uint64_t txn, bool create)
{
	size_t i;

	if (create && (c->tn + 1) * 2 > c->tcap) {
		size_t cap = c->tcap ? c->tcap * 2 : 256, j;
		struct tent *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (j = 0; j < c->tcap; j++)
			if (c->t[j].used)
				v[tslot(v, cap, c->t[j].txn)] = c->t[j];
		free(c->t);
		c->t = v;
		c->tcap = cap;
	}
	if (!c->tcap)
		return NULL;
	i = tslot(c->t, c->tcap, txn);
	if (!c->t[i].used) {
		if (!create)
			return NULL;
		c->t[i].used = true;
		c->t[i].txn = txn;
		c->tn++;
	}
	return &c->t[i];
}

static size_t dslot(const struct dent *v, size_t cap, uint64_t txn, uint16_t table, uint64_t key)
{
	size_t i = (xtx_mix64(txn) ^ xtx_hash((uint8_t)table, key) ^ table) & (cap - 1);

	while (v[i].used && (v[i].txn != txn || v[i].key != key || v[i].table != table))
		i = (i + 1) & (cap - 1);
	return i;
}

/* 1 when (txn, table, key) is new, 0 when seen, or -ENOMEM. */
static int dadd(struct xtxd_carry *c, uint64_t txn, uint16_t table, uint64_t key)
{
	size_t i;

	if ((c->dn + 1) * 2 > c->dcap) {
		size_t cap = c->dcap ? c->dcap * 2 : 1024, j;
		struct dent *v = calloc(cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (j = 0; j < c->dcap; j++)
			if (c->d[j].used)
				v[dslot(v, cap, c->d[j].txn, c->d[j].table, c->d[j].key)] = c->d[j];
		free(c->d);
		c->d = v;
		c->dcap = cap;
	}
	i = dslot(c->d, c->dcap, txn, table, key);
	if (c->d[i].used)
		return 0;
	c->d[i] = (struct dent){ .txn = txn, .key = key, .table = table, .used = true };
	c->dn++;
	return 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int push_u64(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		uint64_t *p = realloc(*v, nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = nc;
	}
	(*v)[(*n)++] = x;
	return 0;
}

/* ---- the records in range ---- */

typedef int (*write_fn)(struct xtxd_carry *c, const struct xtx_log_write *w, void *arg);

static bool user_seg_removed(const struct xtxd_carry *c, uint32_t seg)
{
	size_t i;

	for (i = 0; i < c->s.nuser_removed; i++)
		if (c->user_removed[i] == seg)
			return true;
	return false;
}

static bool epoch_is(const struct xtx_log_epoch *ep, const struct xtx_logfile_hdr *h)
{
	return xtx_log_epoch_eq(ep, h);
}

/*
 * Whether the write whose head has seq in segment seg (header h) of CPU
 * cpu is covered by the new positions and was not by the previous ones.
 */
static bool in_range(const struct xtxd_carry *c, uint32_t cpu, uint32_t seg,
		     const struct xtx_logfile_hdr *h, uint64_t seq)
{
	const struct xtx_snap_pos *p = &c->pos[cpu], *q;

	if (!(seg < p->seg_from || (epoch_is(&c->s.ep, h) && seq < p->seq)))
		return false;
	if (!c->prev || cpu >= c->s.prev_ncpu)
		return true;
	q = &c->prev[cpu];
	return !(seg < q->seg_from || (epoch_is(&c->s.prev_ep, h) && seq < q->seq));
}

static int each_in_range(struct xtxd_carry *c, int dirfd, write_fn fn, void *arg)
{
	struct xtx_logseg *segs = NULL;
	struct xtx_logrec *rec;
	struct xtx_log_entry e;
	struct xtx_logfile_hdr hh = {};
	size_t nsegs = 0, i;
	uint32_t head_seg = 0;
	int err;

	rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	/* what the previous snapshot carried: in range again, always */
	xtx_logrec_init(rec);
	for (i = 0, err = 0; i < c->nprev_e && !err; i++)
		if (xtx_logrec_feed(rec, &c->prev_e[i]) == XTX_LOGREC_WRITE)
			err = fn(c, &rec->w, arg);
	if (!err)
		err = xtx_logfile_list(dirfd, &segs, &nsegs);
	for (i = 0; !err && i < nsegs; i++) {
		const struct xtx_logseg *s = &segs[i];
		bool user = s->cpu == XTXD_USERLOG_CPU, cpu_first;
		struct xtx_logr r;

		cpu_first = !i || segs[i - 1].cpu != s->cpu;
		if (user ? !user_seg_removed(c, s->seg) : s->cpu >= c->s.ncpu)
			continue;
		/* wholly the previous snapshot's */
		if (!user && c->prev && s->cpu < c->s.prev_ncpu && s->seg < c->prev[s->cpu].seg_from)
			continue;
		err = xtx_logr_open(&r, dirfd, s->name);
		if (err)
			break;
		if (r.status != XTX_LOGR_OK) {
			xtx_logr_close(&r);
			continue;	/* a header being written: nothing logged there yet */
		}
		/* a write goes on in the next segment of its own ring only */
		if (cpu_first || hh.map_id != r.hdr.map_id ||
		    memcmp(hh.boot_id, r.hdr.boot_id, sizeof(hh.boot_id)))
			xtx_logrec_reset(rec);
		hh = r.hdr;
		while (xtx_logr_next(&r, &e) == 1) {
			bool starts = !xtx_logrec_partial(rec);
			int res;

			/* past the new position in its ring: the drain may be writing it */
			if (!user && starts && epoch_is(&c->s.ep, &r.hdr) &&
			    e.seq >= c->pos[s->cpu].seq && s->seg >= c->pos[s->cpu].seg_from)
				break;
			if (starts)
				head_seg = s->seg;
			res = xtx_logrec_feed(rec, &e);
			if (res != XTX_LOGREC_WRITE)
				continue;	/* more to come, or damage: recovery refuses that */
			c->scanned++;
			if (!user && !in_range(c, s->cpu, head_seg, &r.hdr, rec->w.e.seq))
				continue;
			err = fn(c, &rec->w, arg);
			if (err)
				break;
		}
		if (!err && r.status == XTX_LOGR_IO)
			err = -r.err;
		xtx_logr_close(&r);
	}
	free(segs);
	free(rec);
	return err;
}

/* ---- the first look: before the dump ---- */

static int note(struct xtxd_carry *c, const struct xtx_log_write *w, void *arg)
{
	const struct xtx_log_entry *e = &w->e;
	bool multi = xtx_log_is_multi(e), meta = e->flags & XTX_LOGF_META;
	struct crec *r;
	int fresh;

	(void)arg;
	/* a commit mark is no write: it goes along with its transaction (carry_one) */
	if (xtx_log_is_mark(e))
		return 0;
	if ((e->flags & XTX_LOGF_DECIDED) && e->txn &&
	    push_u64(&c->valid, &c->nvalid, &c->valid_cap, e->txn))
		return -ENOMEM;
	if (c->rn == c->rcap) {
		size_t cap = c->rcap ? c->rcap * 2 : 1024;
		struct crec *v = realloc(c->r, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->r = v;
		c->rcap = cap;
	}
	r = &c->r[c->rn++];
	*r = (struct crec){ .txn = e->txn, .key = e->key, .version = e->version,
			    .table = e->table, .flags = e->flags, .multi = multi };
	if (!meta) {
		struct kent *k = kget(c, e->table, e->key, true);

		if (!k)
			return -ENOMEM;
		if (e->version >= k->maxv) {
			k->maxv = e->version;
			k->maxdel = e->flags & XTX_LOGF_DELETE;
		}
	}
	if (multi) {
		struct tent *t = tget(c, e->txn, true);

		if (!t)
			return -ENOMEM;
		fresh = dadd(c, e->txn, meta ? 0x100 : e->table, meta ? 0 : e->key);
		if (fresh < 0)
			return fresh;
		t->distinct += fresh;
		t->meta |= meta;
		if (!meta && (e->flags & XTX_LOGF_LAST)) {
			t->last = true;
			t->last_count = e->nwrites;
		}
	}
	return 0;
}

struct xtxd_carry *xtxd_carry_begin(int dirfd, const struct xtxd_carry_scope *s,
				    const struct xtx_log_entry *prev, size_t nprev, int *err)
{
	struct xtxd_carry *c = calloc(1, sizeof(*c));

	*err = -ENOMEM;
	if (!c)
		return NULL;
	c->s = *s;
	c->pos = malloc((s->ncpu ? s->ncpu : 1) * sizeof(*c->pos));
	c->user_removed = malloc((s->nuser_removed ? s->nuser_removed : 1) * sizeof(uint32_t));
	c->prev_e = malloc((nprev ? nprev : 1) * sizeof(*prev));
	if (s->prev)
		c->prev = malloc((s->prev_ncpu ? s->prev_ncpu : 1) * sizeof(*c->prev));
	if (!c->pos || !c->user_removed || !c->prev_e || (s->prev && !c->prev))
		goto fail;
	memcpy(c->pos, s->pos, s->ncpu * sizeof(*c->pos));
	memcpy(c->user_removed, s->user_removed, s->nuser_removed * sizeof(uint32_t));
	memcpy(c->prev_e, prev, nprev * sizeof(*prev));
	c->nprev_e = nprev;
	if (s->prev)
		memcpy(c->prev, s->prev, s->prev_ncpu * sizeof(*c->prev));
	*err = each_in_range(c, dirfd, note, NULL);
	if (!*err)
		return c;
fail:
	xtxd_carry_free(c);
	return NULL;
}

void xtxd_carry_dumped(struct xtxd_carry *c, uint8_t table, uint64_t key, uint64_t version)
{
	struct kent *k = kget(c, table, key, false);

	if (k) {
		k->dumped = true;
		k->dv = version;
	}
}

/* ---- the second look: after the dump ---- */

/* Whether the write's effect is in the dump. */
static bool reflected(struct xtxd_carry *c, uint8_t table, uint64_t key, uint64_t version,
		      bool del)
{
	struct kent *k = kget(c, table, key, false);

	if (!k)
		return false;	/* cannot happen: every write in range was noted */
	if (k->dumped)
		return k->dv >= version;
	/* gone from the dump: deleted there, by this record or a newer one in range */
	return del || (k->maxdel && k->maxv >= version);
}

static int note_outcome(uint64_t txn, uint32_t outcome, void *arg)
{
	struct tent *t = tget(arg, txn, false);

	if (t)
		t->outcome = (uint8_t)outcome;
	return 0;
}

struct emit {
	struct xtx_log_entry *e;
	size_t n, cap;
	uint64_t writes;
};

static int emit_entries(struct emit *m, const struct xtx_log_write *w)
{
	int n;

	if (m->cap - m->n < XTX_LOGREC_MAX_ENTRIES) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct xtx_log_entry *v = realloc(m->e, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->e = v;
		m->cap = cap;
	}
	n = xtx_logrec_encode(w, w->e.seq, m->e + m->n, m->cap - m->n);
	if (n < 0)
		return n;
	m->n += (size_t)n;
	if (!xtx_log_is_mark(&w->e))
		m->writes++;
	return 0;
}

static int carry_one(struct xtxd_carry *c, const struct xtx_log_write *w, void *arg)
{
	const struct xtx_log_entry *e = &w->e;
	bool del = e->flags & XTX_LOGF_DELETE, meta = e->flags & XTX_LOGF_META;
	struct tent *t;
	struct kent *k;

	/* a carried transaction's marks too: recovery replays it without asking */
	if (xtx_log_is_mark(e)) {
		t = tget(c, e->txn, false);
		return t && t->carry ? emit_entries(arg, w) : 0;
	}
	if (xtx_log_is_multi(e)) {
		t = tget(c, e->txn, false);
		if (!t || !t->carry)
			return 0;
	} else if (reflected(c, e->table, e->key, e->version, del)) {
		return 0;
	}
	if (!meta && !del) {
		k = kget(c, e->table, e->key, false);
		if (k && e->version > k->carried_v)
			k->carried_v = e->version;
	}
	return emit_entries(arg, w);
}

int xtxd_carry_end(struct xtxd_carry *c, int dirfd, struct xtxd_carry_out *out)
{
	struct emit m = {};
	size_t i, held_cap = 0, txns_cap = 0;
	int err;

	memset(out, 0, sizeof(*out));
	out->scanned = c->scanned;
	/* decided abort: recovery never applies it, and nobody needs its records */
	err = xtxd_outcome_load(dirfd, note_outcome, c);
	if (err)
		return err;
	for (i = 0; i < c->rn; i++) {
		const struct crec *r = &c->r[i];

		if (!r->multi || (r->flags & XTX_LOGF_META))
			continue;
		if (!reflected(c, r->table, r->key, r->version, r->flags & XTX_LOGF_DELETE))
			tget(c, r->txn, false)->unreflected = true;
	}
	for (i = 0; i < c->tcap; i++) {
		struct tent *t = &c->t[i];
		bool complete = t->last && t->distinct >= t->last_count;

		if (!t->used)
			continue;
		if (t->outcome == XTXD_OUT_ABORT) {
			out->aborted++;
		} else if (complete && !t->unreflected) {
			err = push_u64(&out->held, &out->nheld, &held_cap, t->txn);
		} else {
			t->carry = true;
			err = push_u64(&out->txns, &out->ntxns, &txns_cap, t->txn);
		}
		if (err)
			goto fail;
	}
	err = each_in_range(c, dirfd, carry_one, &m);
	if (err)
		goto fail;
	/* a key a carried write would bring back, though a delete in range removed it */
	for (i = 0; i < c->kcap; i++) {
		const struct kent *k = &c->k[i];
		struct xtx_log_write w;

		if (!k->used || !k->carried_v || k->dumped || !k->maxdel || k->maxv <= k->carried_v)
			continue;
		memset(&w, 0, sizeof(w));
		w.e.table = k->table;
		w.e.key = k->key;
		w.e.version = k->maxv;
		w.e.flags = XTX_LOGF_DELETE | XTX_LOGF_DECIDED | XTX_LOGF_LAST;
		w.e.nwrites = 1;
		err = emit_entries(&m, &w);
		if (err)
			goto fail;
		out->tombs++;
	}
	qsort(out->txns, out->ntxns, sizeof(*out->txns), cmp_u64);
	out->e = m.e;
	out->n = m.n;
	out->writes = m.writes - out->tombs;
	/* ownership of the valid list passes to out */
	out->valid = c->valid;
	out->nvalid = c->nvalid;
	c->valid = NULL;
	c->nvalid = c->valid_cap = 0;
	return 0;
fail:
	free(m.e);
	xtxd_carry_out_free(out);
	return err;
}

void xtxd_carry_out_free(struct xtxd_carry_out *o)
{
	free(o->e);
	free(o->held);
	free(o->valid);
	free(o->txns);
	memset(o, 0, sizeof(*o));
}

void xtxd_carry_free(struct xtxd_carry *c)
{
	if (!c)
		return;
	free(c->pos);
	free(c->prev);
	free(c->user_removed);
	free(c->prev_e);
	free(c->k);
	free(c->t);
	free(c->d);
	free(c->r);
	free(c->valid);
	free(c);
}
