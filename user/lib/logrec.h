/* SPDX-License-Identifier: GPL-2.0-only */
/* Log entries as writes: a value over XTX_VALUE_INLINE is a head entry and its continuations. */
#ifndef XTX_LOGREC_H
#define XTX_LOGREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <xtx/log.h>

/*
 * Every reader of a log (recovery, the resolver, the drain's observer,
 * xtxctl) turns entries into writes here, and every writer of big values
 * (xtxd's own log) turns writes into entries here, so the continuation
 * rules of include/xtx/log.h live in one place.
 */

/* Entries one write takes at most: a head and the continuations of XTX_VALUE_MAX bytes. */
#define XTX_LOGREC_MAX_ENTRIES	(1 + (XTX_VALUE_MAX + XTX_LOG_CONT_BYTES - 1) / XTX_LOG_CONT_BYTES)

/* One logged write (or META entry) with its whole value. */
struct xtx_log_write {
	/*
	 * The entry, or for a value over XTX_VALUE_INLINE its head: flags
	 * XTX_LOGF_EXT, vlen 0, value[] a struct xtx_log_ext.
	 */
	struct xtx_log_entry e;
	uint16_t vlen;		/* the value's bytes, up to XTX_VALUE_MAX */
	uint8_t value[XTX_VALUE_MAX];	/* zero past vlen */
};

/* Entries a write of a value of vlen bytes takes in a log. */
static inline uint32_t xtx_logrec_entries(uint32_t vlen)
{
	return 1 + xtx_log_cont_count(vlen);
}

/*
 * The length a head entry announces (struct xtx_log_ext), or 0 when e is
 * no XTX_LOGF_EXT entry or a malformed one (length out of range, pad not
 * zero, txn not the entry's, vlen not 0).
 */
uint16_t xtx_logrec_ext_len(const struct xtx_log_entry *e);

/*
 * The entries the write starting at e takes: 1 plus its continuations (1
 * for a malformed head: the reader reports it).  For a writer splitting
 * entries into batches that each hold whole writes.
 */
uint32_t xtx_logrec_span(const struct xtx_log_entry *e);

/*
 * The whole writes at the start of e[0..n): the count of entries they take
 * (n when the last write is whole too, less when it continues past n).
 */
size_t xtx_logrec_whole(const struct xtx_log_entry *e, size_t n);

/*
 * Writes w as entries out[0..) at seqs seq, seq+1, ...: w->e with vlen and
 * value for a value up to XTX_VALUE_INLINE, else a head (XTX_LOGF_EXT set,
 * vlen 0, value[] the struct xtx_log_ext) and its continuations.  The
 * entries of one write are appended together.  Returns the entries
 * written, or -EINVAL (vlen over XTX_VALUE_MAX, or cap too small).
 */
int xtx_logrec_encode(const struct xtx_log_write *w, uint64_t seq, struct xtx_log_entry *out,
		      size_t cap);

/*
 * A write from an entry of up to XTX_VALUE_INLINE bytes of value (w->vlen
 * e->vlen, capped), or the head of a big one with vlen 0 and its value
 * to come (xtx_logrec_feed does both).
 */
void xtx_logrec_from_entry(struct xtx_log_write *w, const struct xtx_log_entry *e);

enum xtx_logrec_res {
	XTX_LOGREC_MORE = 0,	/* a head or a continuation: the write is not whole yet */
	XTX_LOGREC_WRITE = 1,	/* r->w is a whole write */
	XTX_LOGREC_DAMAGED = -1,	/* r->why says what; the write being gathered is dropped */
};

/* Gathers one log's entries, fed in log order (seq by seq), into writes. */
struct xtx_logrec {
	struct xtx_log_write w;	/* the write being gathered, or the last one whole */
	uint32_t want;		/* continuations the head announced */
	uint32_t got;		/* and those gathered */
	const char *why;	/* the last XTX_LOGREC_DAMAGED */
};

void xtx_logrec_init(struct xtx_logrec *r);
/*
 * Takes the next entry of the log.  A head waiting for continuations
 * takes this entry as the next one, which must have the next seq; a
 * head whose length is malformed, a continuation out of sequence, or one
 * with bytes past the value's end is damage: the write is dropped (and so
 * is e when it was taken as its continuation).
 */
enum xtx_logrec_res xtx_logrec_feed(struct xtx_logrec *r, const struct xtx_log_entry *e);
/*
 * Whether a head is still waiting for continuations: at the end of a log
 * that is a write cut short (a missing continuation).
 */
static inline bool xtx_logrec_partial(const struct xtx_logrec *r)
{
	return r->want != 0;
}
/* Drops a partial write (the log ended, or a new one begins). */
static inline void xtx_logrec_reset(struct xtx_logrec *r)
{
	r->want = r->got = 0;
}

/*
 * Gathers e[0..n) whole: 0 and *w, or -EBADMSG (a malformed or cut short
 * write; *why says which).  For callers holding a write's entries together.
 */
int xtx_logrec_decode(const struct xtx_log_entry *e, size_t n, struct xtx_log_write *w,
		      const char **why);

/*
 * A log's entries handed over in batches (a reader of a ring: a batch ends
 * at the ring's end or at a size), passed on in whole writes only: the
 * entries of a write a batch cuts wait here for the rest of it.
 */
struct xtx_logrec_batcher {
	struct xtx_log_entry part[XTX_LOGREC_MAX_ENTRIES];
	uint32_t npart;		/* entries of a cut write waiting, seqs part[0].seq.. */
	uint64_t next;		/* entries below this seq were taken (a batch given again skips them) */
};

typedef void (*xtx_logrec_whole_fn)(const struct xtx_log_entry *e, size_t n, void *arg);

/* Starts at seq next; a write cut before it: part[0..npart) (a restart finds it in the ring). */
void xtx_logrec_batcher_init(struct xtx_logrec_batcher *b, uint64_t next,
			     const struct xtx_log_entry *part, uint32_t npart);
/*
 * Takes e[0..n) (seqs e[0].seq.., following on from the last batch or
 * overlapping it) and calls fn on runs of whole writes, in log order.
 */
void xtx_logrec_batch(struct xtx_logrec_batcher *b, const struct xtx_log_entry *e, size_t n,
		      xtx_logrec_whole_fn fn, void *arg);
/* Where a reader may free the log up to, of what it has consumed below upto: no cut write's start. */
static inline uint64_t xtx_logrec_batch_safe(const struct xtx_logrec_batcher *b, uint64_t upto)
{
	return b->npart && b->part[0].seq < upto ? b->part[0].seq : upto;
}

/* One write as a line: cpu=C seq=S txn=T client=ID table=T key=K ... vlen=L value=HEX */
void xtx_logrec_print(FILE *f, uint32_t cpu, const struct xtx_log_write *w, bool json);

#endif /* XTX_LOGREC_H */
