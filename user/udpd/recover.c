// SPDX-License-Identifier: GPL-2.0-only
/* Log replay at startup: records read back, grouped by transaction, complete ones installed. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xtx/hash.h>
#include <xtx/log.h>
#include "log.h"
#include "logfile.h"
#include "recover.h"

/* One logged write, its value reassembled. */
struct rec {
	uint64_t txn;
	uint64_t key;
	uint64_t version;
	uint8_t table;
	uint8_t flags;		/* XTX_LOGF_* */
	uint16_t nwrites;
	uint16_t vlen;
	uint8_t *value;		/* vlen bytes, or NULL */
};

struct recs {
	struct rec *v;
	size_t n, cap;
};

/* A long value being read back: its head entry and the bytes of the continuations so far. */
struct pending {
	bool active;
	struct xtx_log_entry head;
	uint16_t len;
	uint32_t conts, got;
	uint8_t buf[XTX_VALUE_MAX];
};

static int push(struct recs *r, const struct xtx_log_entry *e, const uint8_t *value,
		uint16_t vlen)
{
	struct rec *x;

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;

		x = realloc(r->v, cap * sizeof(*x));
		if (!x)
			return -ENOMEM;
		r->v = x;
		r->cap = cap;
	}
	x = &r->v[r->n];
	memset(x, 0, sizeof(*x));
	x->txn = e->txn;
	x->key = e->key;
	x->version = e->version;
	x->table = e->table;
	x->flags = e->flags;
	x->nwrites = e->nwrites;
	x->vlen = vlen;
	if (vlen) {
		x->value = malloc(vlen);
		if (!x->value)
			return -ENOMEM;
		memcpy(x->value, value, vlen);
	}
	r->n++;
	return 0;
}

/* Takes one entry of a CPU's log in order; a continuation goes to its pending head. */
static int take(struct recs *r, struct pending *p, const struct xtx_log_entry *e)
{
	struct xtx_log_cont c;
	struct xtx_log_ext ext;
	uint32_t chunk;

	if (p->active) {
		memcpy(&c, e, sizeof(c));
		if (c.seq == p->head.seq + 1 + p->got) {
			chunk = p->len - p->got * XTX_LOG_CONT_BYTES;
			if (chunk > XTX_LOG_CONT_BYTES)
				chunk = XTX_LOG_CONT_BYTES;
			memcpy(p->buf + p->got * XTX_LOG_CONT_BYTES, c.bytes, chunk);
			if (++p->got < p->conts)
				return 0;
			p->active = false;
			return push(r, &p->head, p->buf, p->len);
		}
		/* a head whose continuations never all came (a new run's log): dropped */
		pr_warn("log: cpu log entry %llu: its long value is incomplete; dropped\n",
			(unsigned long long)p->head.seq);
		p->active = false;
	}
	if (!(e->flags & XTX_LOGF_EXT))
		return push(r, e, e->value, e->vlen <= XTX_VALUE_INLINE ? e->vlen : 0);
	memcpy(&ext, e->value, sizeof(ext));
	if (ext.len <= XTX_VALUE_INLINE || ext.len > XTX_VALUE_MAX) {
		pr_warn("log: entry %llu: a long value of %u bytes; dropped\n",
			(unsigned long long)e->seq, ext.len);
		return 0;
	}
	p->active = true;
	p->head = *e;
	p->len = ext.len;
	p->conts = xtx_log_cont_count(ext.len);
	p->got = 0;
	return 0;
}

static int read_all(int dirfd, struct recs *r)
{
	struct xtx_logseg *segs = NULL;
	struct pending *p = calloc(1, sizeof(*p));
	struct xtx_log_entry e;
	struct xtx_logr rd;
	size_t nseg = 0, i;
	uint32_t cpu = UINT32_MAX;
	int err;

	if (!p)
		return -ENOMEM;
	err = xtx_logfile_list(dirfd, &segs, &nseg);
	for (i = 0; !err && i < nseg; i++) {
		if (segs[i].cpu != cpu) {
			cpu = segs[i].cpu;
			p->active = false;
		}
		err = xtx_logr_open(&rd, dirfd, segs[i].name);
		if (err)
			break;
		while (!err && xtx_logr_next(&rd, &e) == 1)
			err = take(r, p, &e);
		if (rd.status != XTX_LOGR_OK && rd.status != XTX_LOGR_TORN)
			pr_warn("log: %s: %s after %llu records; the rest is not replayed\n",
				segs[i].name, xtx_logr_status_name(rd.status),
				(unsigned long long)rd.good);
		xtx_logr_close(&rd);
	}
	free(segs);
	free(p);
	return err;
}

static int by_txn(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return x->txn < y->txn ? -1 : x->txn > y->txn;
}

/* Installs one write unless the key already has its version or a newer one. */
static int install(struct udpd_store *s, const struct rec *w, uint64_t *installed)
{
	uint64_t h = xtx_hash(w->table, w->key), highest = 0;
	struct udpd_stripe *st = udpd_stripe_of(s, h);
	bool live = !(w->flags & XTX_LOGF_DELETE);

	kvmodel_lookup(st->kv, w->table, w->key, NULL, &highest);
	if (highest >= w->version)
		return 0;
	if (kvmodel_set(st->kv, w->table, w->key, live, live ? w->vlen : 0, w->value, w->version))
		return -ENOMEM;
	(*installed)++;
	return 0;
}

int udpd_recover(struct udpd_store *s, const char *dir)
{
	struct recs r = {};
	uint64_t txns = 0, incomplete = 0, installed = 0;
	size_t i, j, k;
	int dirfd, err;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? 0 : -errno;
	err = read_all(dirfd, &r);
	close(dirfd);
	if (!err && r.n)
		qsort(r.v, r.n, sizeof(*r.v), by_txn);
	for (i = 0; !err && i < r.n; i = j) {
		uint32_t nw = 0;
		bool last = false;

		for (j = i; j < r.n && r.v[j].txn == r.v[i].txn; j++) {
			if (r.v[j].flags & XTX_LOGF_LAST) {
				last = true;
				nw = r.v[j].nwrites;
			}
		}
		txns++;
		if (!last || (nw && nw != j - i)) {
			incomplete++;
			continue;
		}
		for (k = i; !err && k < j; k++)
			if (!(r.v[k].flags & XTX_LOGF_META))
				err = install(s, &r.v[k], &installed);
	}
	for (i = 0; i < r.n; i++)
		free(r.v[i].value);
	free(r.v);
	if (err) {
		fprintf(stderr, "Error: replaying the log in %s: %s\n", dir, strerror(-err));
		return err;
	}
	if (txns)
		pr_info("log: replayed %llu transaction(s) from %s: %llu write(s) installed, "
			"%llu incomplete record(s) skipped\n", (unsigned long long)txns, dir,
			(unsigned long long)installed, (unsigned long long)incomplete);
	return 0;
}
