/* SPDX-License-Identifier: GPL-2.0-only */
/* xtxbench --history: each client thread records its finished transactions for check-history. */
#ifndef XTX_HISTREC_H
#define XTX_HISTREC_H

#include <stdint.h>
#include "libxtx.h"

struct history_writer;

/*
 * Opens BASE.CLIENT_ID, one file per client thread, so the files of every
 * thread and process of a run merge in `xtxbench check-history BASE.*`.
 * NULL after printing why.
 */
struct history_writer *histrec_open(const char *base, uint32_t client_id);

/*
 * Records t as it ended, from the done callback: every read with the
 * version it saw, every write with the version it installs (unknown, 0,
 * for a transaction that did not commit).  0, or -1 after printing why;
 * the writer then refuses the rest, so a short file never looks whole.
 */
int histrec_txn(struct history_writer *w, const struct xtx_txn *t,
		const struct xtx_txn_result *res);

/* The same from t's accesses (xtx_txn_accesses), as it ended or as it was resolved later. */
int histrec_accesses(struct history_writer *w, uint64_t txn, enum xtx_outcome outcome,
		     const struct xtx_access *a, unsigned int n);

/* Flushes and closes; 0, or -1 after printing why.  NULL is fine. */
int histrec_close(struct history_writer *w, const char *base);

#endif /* XTX_HISTREC_H */
