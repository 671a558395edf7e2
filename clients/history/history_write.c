// SPDX-License-Identifier: GPL-2.0-only
/* The buffered append-only history writer: one per client thread, a write(2) per full buffer. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "history.h"

#define HISTORY_DEFAULT_BUF	(1u << 20)

struct history_writer {
	int fd;
	int err;		/* first error; sticky so a short file is never "complete" */
	uint8_t *buf;
	size_t cap, len;
	size_t open_at;		/* offset of the open record's header, or SIZE_MAX */
	uint64_t count;
};

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Writes every closed record; an open one moves to the front of the buffer. */
static int flush_closed(struct history_writer *w)
{
	size_t done = w->open_at == SIZE_MAX ? w->len : w->open_at;
	int err;

	if (w->err)
		return w->err;
	err = write_all(w->fd, w->buf, done);
	if (err) {
		w->err = err;
		return err;
	}
	memmove(w->buf, w->buf + done, w->len - done);
	w->len -= done;
	if (w->open_at != SIZE_MAX)
		w->open_at = 0;
	return 0;
}

/* Makes room for n more bytes: flush, then grow only for a record bigger than the buffer. */
static int reserve(struct history_writer *w, size_t n)
{
	int err;

	if (w->err)
		return w->err;
	if (w->len + n <= w->cap)
		return 0;
	err = flush_closed(w);
	if (err)
		return err;
	if (w->len + n > w->cap) {
		size_t cap = w->cap * 2;
		uint8_t *b;

		while (cap < w->len + n)
			cap *= 2;
		b = realloc(w->buf, cap);
		if (!b) {
			w->err = -ENOMEM;
			return w->err;
		}
		w->buf = b;
		w->cap = cap;
	}
	return 0;
}

struct history_writer *history_open(const char *path, uint32_t client, size_t bufsize)
{
	struct history_file_hdr h = {
		.magic = HISTORY_MAGIC,
		.format = HISTORY_FORMAT,
		.hdr_len = sizeof(h),
		.client = client,
	};
	struct history_writer *w;
	struct timespec ts;
	int err;

	if (bufsize < 4096)
		bufsize = bufsize ? 4096 : HISTORY_DEFAULT_BUF;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->buf = malloc(bufsize);
	if (!w->buf) {
		err = -ENOMEM;
		goto err_free;
	}
	w->cap = bufsize;
	w->open_at = SIZE_MAX;
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		err = -errno;
		goto err_buf;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	h.created_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	memcpy(w->buf, &h, sizeof(h));
	w->len = sizeof(h);
	return w;

err_buf:
	free(w->buf);
err_free:
	free(w);
	errno = -err;
	return NULL;
}

int history_begin(struct history_writer *w, uint64_t txn)
{
	struct history_rec_hdr *r;
	int err;

	if (w->open_at != SIZE_MAX)
		return -EINVAL;
	err = reserve(w, sizeof(*r));
	if (err)
		return err;
	w->open_at = w->len;
	r = (struct history_rec_hdr *)(w->buf + w->len);
	memset(r, 0, sizeof(*r));
	r->txn = txn;
	w->len += sizeof(*r);
	return 0;
}

static int add_op(struct history_writer *w, uint8_t table, uint64_t key, uint64_t version,
		  uint8_t flags)
{
	struct history_rec_hdr *r;
	struct history_op *op;
	int err;

	if (w->open_at == SIZE_MAX)
		return -EINVAL;
	r = (struct history_rec_hdr *)(w->buf + w->open_at);
	if (r->nops >= HISTORY_MAX_OPS)
		return -E2BIG;
	err = reserve(w, sizeof(*op));
	if (err)
		return err;
	/* reserve() may have moved the buffer and the open record. */
	r = (struct history_rec_hdr *)(w->buf + w->open_at);
	op = (struct history_op *)(w->buf + w->len);
	memset(op, 0, sizeof(*op));
	op->key = key;
	op->version = version;
	op->table = table;
	op->flags = flags;
	r->nops++;
	w->len += sizeof(*op);
	return 0;
}

int history_read(struct history_writer *w, uint8_t table, uint64_t key, uint64_t version,
		 int absent)
{
	return add_op(w, table, key, version, absent ? HISTORY_OP_ABSENT : 0);
}

int history_write(struct history_writer *w, uint8_t table, uint64_t key, uint64_t version,
		  int is_delete)
{
	return add_op(w, table, key, version,
		      HISTORY_OP_WRITE | (is_delete ? HISTORY_OP_ABSENT : 0));
}

int history_end(struct history_writer *w, enum history_outcome outcome)
{
	struct history_rec_hdr *r;

	if (w->open_at == SIZE_MAX || outcome < HISTORY_COMMITTED || outcome > HISTORY_IN_DOUBT)
		return -EINVAL;
	if (w->err)
		return w->err;
	r = (struct history_rec_hdr *)(w->buf + w->open_at);
	r->outcome = (uint8_t)outcome;
	w->open_at = SIZE_MAX;
	w->count++;
	return 0;
}

int history_record(struct history_writer *w, uint64_t txn, enum history_outcome outcome,
		   const struct history_op *ops, uint32_t nops)
{
	struct history_rec_hdr *r;
	size_t n = sizeof(*r) + (size_t)nops * sizeof(*ops);
	uint32_t i;
	int err;

	if (w->open_at != SIZE_MAX || outcome < HISTORY_COMMITTED || outcome > HISTORY_IN_DOUBT)
		return -EINVAL;
	if (nops > HISTORY_MAX_OPS)
		return -E2BIG;
	for (i = 0; i < nops; i++)
		if (ops[i].flags & ~HISTORY_OP_FLAGS)
			return -EINVAL;
	err = reserve(w, n);
	if (err)
		return err;
	r = (struct history_rec_hdr *)(w->buf + w->len);
	memset(r, 0, sizeof(*r));
	r->txn = txn;
	r->nops = nops;
	r->outcome = (uint8_t)outcome;
	memcpy(r + 1, ops, (size_t)nops * sizeof(*ops));
	/* Callers may leave the reserved bytes as garbage; the format says zero. */
	for (i = 0; i < nops; i++)
		memset(((struct history_op *)(r + 1))[i].rsvd, 0, sizeof(ops[i].rsvd));
	w->len += n;
	w->count++;
	return 0;
}

int history_flush(struct history_writer *w)
{
	return flush_closed(w);
}

uint64_t history_count(const struct history_writer *w)
{
	return w->count;
}

int history_close(struct history_writer *w)
{
	int err;

	if (!w)
		return 0;
	/* An unfinished transaction has no outcome: drop it rather than write a torn record. */
	if (w->open_at != SIZE_MAX) {
		w->len = w->open_at;
		w->open_at = SIZE_MAX;
	}
	err = flush_closed(w);
	if (close(w->fd) && !err)
		err = -errno;
	free(w->buf);
	free(w);
	return err;
}
