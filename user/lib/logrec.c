// SPDX-License-Identifier: GPL-2.0-only
/* Log entries to writes and back: heads and continuations of big values (logrec.h). */
#include <errno.h>
#include <string.h>
#include "logrec.h"

uint16_t xtx_logrec_ext_len(const struct xtx_log_entry *e)
{
	struct xtx_log_ext x;

	if (!(e->flags & XTX_LOGF_EXT) || (e->flags & XTX_LOGF_META) || e->vlen)
		return 0;
	memcpy(&x, e->value, sizeof(x));
	if (x.len <= XTX_VALUE_INLINE || x.len > XTX_VALUE_MAX || x.pad[0] || x.pad[1] ||
	    x.pad[2] || x.txn != e->txn)
		return 0;
	return x.len;
}

uint32_t xtx_logrec_span(const struct xtx_log_entry *e)
{
	return xtx_logrec_entries(xtx_logrec_ext_len(e));
}

size_t xtx_logrec_whole(const struct xtx_log_entry *e, size_t n)
{
	size_t i = 0, span;

	while (i < n) {
		span = xtx_logrec_span(&e[i]);
		if (span > n - i)
			break;
		i += span;
	}
	return i;
}

int xtx_logrec_encode(const struct xtx_log_write *w, uint64_t seq, struct xtx_log_entry *out,
		      size_t cap)
{
	uint32_t n = xtx_logrec_entries(w->vlen), i;
	struct xtx_log_ext x = {};
	struct xtx_log_cont c;

	if (w->vlen > XTX_VALUE_MAX || !cap || n > cap)
		return -EINVAL;
	out[0] = w->e;
	out[0].seq = seq;
	memset(out[0].value, 0, sizeof(out[0].value));
	if (n == 1) {
		out[0].flags &= ~XTX_LOGF_EXT;
		out[0].vlen = (uint8_t)w->vlen;
		memcpy(out[0].value, w->value, w->vlen);
		return 1;
	}
	out[0].flags |= XTX_LOGF_EXT;
	out[0].vlen = 0;
	x.len = w->vlen;
	x.txn = w->e.txn;
	memcpy(out[0].value, &x, sizeof(x));
	for (i = 1; i < n; i++) {
		uint32_t off = (i - 1) * XTX_LOG_CONT_BYTES;
		uint32_t len = w->vlen - off < XTX_LOG_CONT_BYTES ? w->vlen - off :
								     XTX_LOG_CONT_BYTES;

		memset(&c, 0, sizeof(c));
		c.seq = seq + i;
		memcpy(c.bytes, w->value + off, len);
		memcpy(&out[i], &c, sizeof(c));
	}
	return (int)n;
}

void xtx_logrec_from_entry(struct xtx_log_write *w, const struct xtx_log_entry *e)
{
	w->e = *e;
	w->vlen = e->flags & XTX_LOGF_EXT ? 0 :
		  e->vlen > XTX_VALUE_INLINE ? XTX_VALUE_INLINE : e->vlen;
	memcpy(w->value, e->value, XTX_VALUE_INLINE);
	if (w->vlen < XTX_VALUE_INLINE)
		memset(w->value + w->vlen, 0, XTX_VALUE_INLINE - w->vlen);
}

void xtx_logrec_init(struct xtx_logrec *r)
{
	memset(r, 0, sizeof(*r));
}

static enum xtx_logrec_res damaged(struct xtx_logrec *r, const char *why)
{
	r->why = why;
	r->want = r->got = 0;
	return XTX_LOGREC_DAMAGED;
}

enum xtx_logrec_res xtx_logrec_feed(struct xtx_logrec *r, const struct xtx_log_entry *e)
{
	struct xtx_log_cont c;
	uint32_t off, len;
	uint16_t ext;

	if (r->want) {
		memcpy(&c, e, sizeof(c));
		if (c.seq != r->w.e.seq + r->got + 1)
			return damaged(r, "a continuation is missing or out of sequence");
		off = r->got * XTX_LOG_CONT_BYTES;
		len = r->w.vlen - off < XTX_LOG_CONT_BYTES ? r->w.vlen - off : XTX_LOG_CONT_BYTES;
		memcpy(r->w.value + off, c.bytes, len);
		for (; len < XTX_LOG_CONT_BYTES; len++)
			if (c.bytes[len])
				return damaged(r, "a continuation holds bytes past its value's end");
		if (++r->got < r->want)
			return XTX_LOGREC_MORE;
		r->want = r->got = 0;
		return XTX_LOGREC_WRITE;
	}
	if (!(e->flags & XTX_LOGF_EXT)) {
		if (e->vlen > XTX_VALUE_INLINE)
			return damaged(r, "an entry's value is longer than the entry");
		xtx_logrec_from_entry(&r->w, e);
		return XTX_LOGREC_WRITE;
	}
	ext = xtx_logrec_ext_len(e);
	if (!ext)
		return damaged(r, "a big value's head entry is malformed");
	xtx_logrec_from_entry(&r->w, e);
	r->w.vlen = ext;
	memset(r->w.value, 0, sizeof(r->w.value));
	r->want = xtx_log_cont_count(ext);
	r->got = 0;
	return XTX_LOGREC_MORE;
}

int xtx_logrec_decode(const struct xtx_log_entry *e, size_t n, struct xtx_log_write *w,
		      const char **why)
{
	struct xtx_logrec r;
	size_t i;

	xtx_logrec_init(&r);
	for (i = 0; i < n; i++) {
		switch (xtx_logrec_feed(&r, &e[i])) {
		case XTX_LOGREC_MORE:
			continue;
		case XTX_LOGREC_DAMAGED:
			*why = r.why;
			return -EBADMSG;
		case XTX_LOGREC_WRITE:
			if (i + 1 != n) {
				*why = "entries follow the write";
				return -EBADMSG;
			}
			*w = r.w;
			return 0;
		}
	}
	*why = "a continuation is missing";
	return -EBADMSG;
}

void xtx_logrec_batcher_init(struct xtx_logrec_batcher *b, uint64_t next,
			     const struct xtx_log_entry *part, uint32_t npart)
{
	memset(b, 0, sizeof(*b));
	b->next = next;
	if (npart > XTX_LOGREC_MAX_ENTRIES)
		npart = XTX_LOGREC_MAX_ENTRIES;
	b->npart = npart;
	if (npart)
		memcpy(b->part, part, npart * sizeof(*part));
}

void xtx_logrec_batch(struct xtx_logrec_batcher *b, const struct xtx_log_entry *e, size_t n,
		      xtx_logrec_whole_fn fn, void *arg)
{
	size_t i = 0, take, whole;
	uint32_t span;

	if (!n)
		return;
	if (e[0].seq < b->next) {
		i = b->next - e[0].seq;
		if (i >= n)
			return;
	}
	b->next = e[0].seq + n;
	if (b->npart) {
		span = xtx_logrec_span(&b->part[0]);
		take = span - b->npart < n - i ? span - b->npart : n - i;
		memcpy(b->part + b->npart, e + i, take * sizeof(*e));
		b->npart += take;
		i += take;
		if (b->npart < span)
			return;
		fn(b->part, b->npart, arg);
		b->npart = 0;
	}
	whole = xtx_logrec_whole(e + i, n - i);
	if (whole)
		fn(e + i, whole, arg);
	i += whole;
	if (i < n) {
		b->npart = n - i;
		memcpy(b->part, e + i, b->npart * sizeof(*e));
	}
}

void xtx_logrec_print(FILE *f, uint32_t cpu, const struct xtx_log_write *w, bool json)
{
	const struct xtx_log_entry *e = &w->e;
	static const struct {
		uint8_t bit;
		const char *name;
	} names[] = {
		{ XTX_LOGF_DELETE, "delete" }, { XTX_LOGF_LAST, "last" },
		{ XTX_LOGF_DECIDED, "decided" }, { XTX_LOGF_META, "meta" },
		{ XTX_LOGF_EXT, "ext" }, { XTX_LOGF_COMMITTED, "committed" },
		{ XTX_LOGF_PRIMARY, "primary" },
	};
	unsigned int i, nrep = e->nreplicas < 3 ? e->nreplicas : 3, known = 0;
	unsigned int vlen = w->vlen < XTX_VALUE_MAX ? w->vlen : XTX_VALUE_MAX;
	char flags[64] = "", reps[24] = "";
	size_t fl = 0, rl = 0;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		known |= names[i].bit;
		if (e->flags & names[i].bit)
			fl += snprintf(flags + fl, sizeof(flags) - fl, "%s%s", fl ? "," : "",
				       names[i].name);
	}
	if (e->flags & ~known)
		fl += snprintf(flags + fl, sizeof(flags) - fl, "%s%#x", fl ? "," : "",
			       e->flags & ~known);
	for (i = 0; i < nrep; i++)
		rl += snprintf(reps + rl, sizeof(reps) - rl, "%s%u", i ? "," : "", e->replicas[i]);
	if (json)
		fprintf(f, "{\"cpu\":%u,\"seq\":%llu,\"txn\":%llu,\"client\":%u,\"table\":%u,"
			"\"key\":%llu,\"version\":%llu,\"flags\":%u,\"replicas\":[%s],"
			"\"entries\":%u,\"vlen\":%u,\"value\":\"", cpu, (unsigned long long)e->seq,
			(unsigned long long)e->txn, e->client_id, e->table,
			(unsigned long long)e->key, (unsigned long long)e->version, e->flags, reps,
			xtx_logrec_entries(vlen), vlen);
	else
		fprintf(f, "cpu=%u seq=%llu txn=%llu client=%u table=%u key=%llu version=%llu "
			"flags=%s replicas=%s vlen=%u value=", cpu, (unsigned long long)e->seq,
			(unsigned long long)e->txn, e->client_id, e->table,
			(unsigned long long)e->key, (unsigned long long)e->version,
			fl ? flags : "none", rl ? reps : "none", vlen);
	for (i = 0; i < vlen; i++)
		fprintf(f, "%02x", w->value[i]);
	fputs(json ? "\"}" : "\n", f);
}
