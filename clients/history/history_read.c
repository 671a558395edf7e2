// SPDX-License-Identifier: GPL-2.0-only
/* Maps and validates history files, walks their records, and dumps them as text. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "history.h"

const char *history_outcome_name(unsigned int outcome)
{
	switch (outcome) {
	case HISTORY_COMMITTED:
		return "committed";
	case HISTORY_ABORTED:
		return "aborted";
	case HISTORY_FAILED:
		return "failed";
	case HISTORY_IN_DOUBT:
		return "in-doubt";
	}
	return "?";
}

/* Every record is checked once here, so the checker can trust the mapping. */
static int validate(struct history_file *f, char *err, size_t errlen)
{
	size_t off = f->hdr.hdr_len;

	while (off < f->len) {
		const struct history_rec_hdr *r;
		const struct history_op *op;
		size_t need;
		uint32_t i;

		if (f->len - off < sizeof(*r)) {
			snprintf(err, errlen, "Error: %s: truncated record header at offset %zu",
				 f->path, off);
			return -ENODATA;
		}
		r = (const struct history_rec_hdr *)(f->base + off);
		if (r->outcome < HISTORY_COMMITTED || r->outcome > HISTORY_IN_DOUBT ||
		    r->rsvd[0] || r->rsvd[1] || r->rsvd[2] || r->nops > HISTORY_MAX_OPS) {
			snprintf(err, errlen,
				 "Error: %s: corrupt record at offset %zu (txn %" PRIu64
				 " outcome %u nops %u)",
				 f->path, off, r->txn, r->outcome, r->nops);
			return -EBADMSG;
		}
		need = sizeof(*r) + (size_t)r->nops * sizeof(*op);
		if (f->len - off < need) {
			snprintf(err, errlen,
				 "Error: %s: truncated record at offset %zu (txn %" PRIu64
				 ", %u ops, %zu of %zu bytes)",
				 f->path, off, r->txn, r->nops, f->len - off, need);
			return -ENODATA;
		}
		op = history_rec_ops(r);
		for (i = 0; i < r->nops; i++) {
			static const uint8_t zero[6];

			if ((op[i].flags & ~HISTORY_OP_FLAGS) ||
			    memcmp(op[i].rsvd, zero, sizeof(zero))) {
				snprintf(err, errlen,
					 "Error: %s: corrupt op %u of txn %" PRIu64
					 " at offset %zu",
					 f->path, i, r->txn, off);
				return -EBADMSG;
			}
		}
		f->ntxns++;
		f->nops += r->nops;
		off += need;
	}
	return 0;
}

int history_file_open(struct history_file *f, const char *path, char *err, size_t errlen)
{
	struct stat st;
	void *p;
	int fd, ret;

	memset(f, 0, sizeof(*f));
	f->path = path;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "Error: %s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "Error: %s: %s", path, strerror(-ret));
		goto out_close;
	}
	if ((size_t)st.st_size < sizeof(f->hdr)) {
		snprintf(err, errlen, "Error: %s: %lld bytes: too short for a history header",
			 path, (long long)st.st_size);
		ret = -EBADMSG;
		goto out_close;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "Error: %s: mmap: %s", path, strerror(-ret));
		goto out_close;
	}
	/* The checker walks each file a few times, front to back. */
	madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
	f->base = p;
	f->len = (size_t)st.st_size;
	memcpy(&f->hdr, f->base, sizeof(f->hdr));
	if (f->hdr.magic != HISTORY_MAGIC) {
		snprintf(err, errlen, "Error: %s: not a history file (magic 0x%08x)", path,
			 f->hdr.magic);
		ret = -EBADMSG;
		goto out_unmap;
	}
	if (f->hdr.format != HISTORY_FORMAT || f->hdr.hdr_len < sizeof(f->hdr) ||
	    f->hdr.hdr_len % 8 || f->hdr.hdr_len > f->len) {
		snprintf(err, errlen, "Error: %s: unsupported history format %u (header %u bytes)",
			 path, f->hdr.format, f->hdr.hdr_len);
		ret = -EBADMSG;
		goto out_unmap;
	}
	ret = validate(f, err, errlen);
	if (ret)
		goto out_unmap;
	close(fd);
	return 0;

out_unmap:
	munmap((void *)f->base, f->len);
	f->base = NULL;
out_close:
	close(fd);
	return ret;
}

void history_file_close(struct history_file *f)
{
	if (f->base)
		munmap((void *)f->base, f->len);
	f->base = NULL;
}

const struct history_rec_hdr *history_file_next(const struct history_file *f, size_t *off)
{
	const struct history_rec_hdr *r;

	if (!*off)
		*off = f->hdr.hdr_len;
	if (*off >= f->len)
		return NULL;
	r = (const struct history_rec_hdr *)(f->base + *off);
	*off += sizeof(*r) + (size_t)r->nops * sizeof(struct history_op);
	return r;
}

int history_dump(FILE *out, const char *path)
{
	const struct history_rec_hdr *r;
	struct history_file f;
	char err[256];
	size_t off = 0;
	int ret;

	ret = history_file_open(&f, path, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s\n", err);
		return ret;
	}
	fprintf(out, "# %s: client %u, format %u, %" PRIu64 " transactions, %" PRIu64 " ops\n",
		path, f.hdr.client, f.hdr.format, f.ntxns, f.nops);
	while ((r = history_file_next(&f, &off))) {
		const struct history_op *op = history_rec_ops(r);
		uint32_t i;

		fprintf(out, "txn %" PRIu64 " %s", r->txn, history_outcome_name(r->outcome));
		for (i = 0; i < r->nops; i++) {
			const char *what = op[i].flags & HISTORY_OP_WRITE ?
				(op[i].flags & HISTORY_OP_ABSENT ? "d" : "w") :
				(op[i].flags & HISTORY_OP_ABSENT ? "r-" : "r");

			fprintf(out, " %s %u:%" PRIu64 "@%" PRIu64, what, op[i].table, op[i].key,
				op[i].version);
		}
		fputc('\n', out);
	}
	history_file_close(&f);
	return 0;
}
