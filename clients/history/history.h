/* SPDX-License-Identifier: GPL-2.0-only */
/* History files: the on-disk record format and the buffered writer workload drivers call. */
#ifndef XTX_HISTORY_H
#define XTX_HISTORY_H

#include <stdint.h>
#include <stdio.h>

/*
 * A history file is one client thread's finished transactions, in the
 * order they finished, so a checker can rebuild Adya's dependency graph
 * exactly from the versions every read saw and every write installed.
 *
 *   file   := hdr rec*
 *   rec    := rec_hdr op[nops]
 *
 * All fields are host byte order (little-endian on every supported host),
 * fixed width, naturally aligned (every record starts at a multiple of 8),
 * so the checker can mmap a file and use the records in place.  A file is
 * append-only: a writer that died mid-record leaves a torn tail, which
 * the reader reports as a truncated record rather than guessing.
 *
 * Versions: each key's committed versions strictly increase.  Version 0 is
 * a key's initial "never existed" state and no transaction installs it; a
 * write recorded with version 0 means "version unknown" (an aborted
 * transaction that never got one) and only counts as "this transaction
 * meant to write that key".  A delete is a write whose value is absent
 * (HISTORY_OP_ABSENT); a read that found the key absent sets the same flag
 * and reports the version of the delete that made it absent, or 0.
 */

#define HISTORY_MAGIC		0x48585458u	/* "XTXH" */
#define HISTORY_FORMAT		1
/* Bounds a record so a corrupt nops is caught instead of read as 4G ops. */
#define HISTORY_MAX_OPS		65535

enum history_outcome {
	HISTORY_COMMITTED = 1,	/* committed: its writes are installed */
	HISTORY_ABORTED = 2,	/* aborted: nothing installed */
	HISTORY_FAILED = 3,	/* failed before the commit point: nothing installed */
	HISTORY_IN_DOUBT = 4,	/* the client does not know (e.g. timed out at commit) */
};

/* Op flags. */
#define HISTORY_OP_WRITE	0x01	/* a write (else a read) */
#define HISTORY_OP_ABSENT	0x02	/* read: key was absent; write: a delete */
#define HISTORY_OP_FLAGS	0x03	/* every defined flag: others are corruption */

struct history_file_hdr {
	uint32_t magic;		/* HISTORY_MAGIC */
	uint16_t format;	/* HISTORY_FORMAT */
	uint16_t hdr_len;	/* sizeof(struct history_file_hdr): room to grow */
	uint32_t client;	/* the writer's client/thread id, for messages only */
	uint32_t rsvd;
	uint64_t created_ns;	/* CLOCK_REALTIME at open, for messages only */
	uint64_t rsvd2;
};

struct history_rec_hdr {
	uint64_t txn;		/* transaction id, unique over the merged files */
	uint32_t nops;		/* ops that follow, reads and writes in any order */
	uint8_t outcome;	/* enum history_outcome */
	uint8_t rsvd[3];	/* zero */
};

struct history_op {
	uint64_t key;
	uint64_t version;	/* read: version seen; write: version installed */
	uint8_t table;
	uint8_t flags;		/* HISTORY_OP_* */
	uint8_t rsvd[6];	/* zero */
};

_Static_assert(sizeof(struct history_file_hdr) == 32, "history header is ABI");
_Static_assert(sizeof(struct history_rec_hdr) == 16, "history record header is ABI");
_Static_assert(sizeof(struct history_op) == 24, "history op is ABI");

/* ---- writer: one per client thread, not thread-safe ---- */

struct history_writer;

/* Creates (truncates) path; NULL and errno on error.  bufsize 0: 1 MiB. */
struct history_writer *history_open(const char *path, uint32_t client, size_t bufsize);

/*
 * Incremental recording, for drivers that learn ops one by one:
 * history_begin, any number of history_read/history_write, history_end.
 * Ops go straight into the buffer; only a full buffer costs a write(2).
 * Return 0 or a negative errno (a failed flush; -E2BIG past
 * HISTORY_MAX_OPS; -EINVAL out of order).  After an error the writer
 * refuses further records, so a short file never looks complete.
 */
int history_begin(struct history_writer *w, uint64_t txn);
int history_read(struct history_writer *w, uint8_t table, uint64_t key, uint64_t version,
		 int absent);
int history_write(struct history_writer *w, uint8_t table, uint64_t key, uint64_t version,
		  int is_delete);
int history_end(struct history_writer *w, enum history_outcome outcome);

/* One whole transaction: ops[] with flags already set. */
int history_record(struct history_writer *w, uint64_t txn, enum history_outcome outcome,
		   const struct history_op *ops, uint32_t nops);

/* Writes the buffer out (a transaction still open stays buffered). */
int history_flush(struct history_writer *w);
/* Flushes, closes and frees; returns the first error the writer met. */
int history_close(struct history_writer *w);
/* Transactions recorded so far. */
uint64_t history_count(const struct history_writer *w);

/* ---- reader ---- */

/* One mapped history file, validated on open. */
struct history_file {
	const char *path;
	const uint8_t *base;	/* mmap of the whole file */
	size_t len;
	struct history_file_hdr hdr;
	uint64_t ntxns, nops;	/* counted and validated by history_file_open */
};

/*
 * Maps and validates path: header, then every record's bounds, outcome,
 * reserved bytes and op flags.  Returns 0, or a negative errno with a
 * message "Error: PATH: ..." in err (-EBADMSG: bad header or record,
 * -ENODATA: truncated record).
 */
int history_file_open(struct history_file *f, const char *path, char *err, size_t errlen);
void history_file_close(struct history_file *f);

/* Walks a validated file: *off starts at 0; returns NULL at the end. */
const struct history_rec_hdr *history_file_next(const struct history_file *f, size_t *off);

static inline const struct history_op *history_rec_ops(const struct history_rec_hdr *r)
{
	return (const struct history_op *)(r + 1);
}

const char *history_outcome_name(unsigned int outcome);

/* Text dump, a line per transaction: "txn ID OUTCOME r T:K@V r- T:K@V w T:K@V d T:K@V" */
int history_dump(FILE *out, const char *path);

#endif /* XTX_HISTORY_H */
