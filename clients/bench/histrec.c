// SPDX-License-Identifier: GPL-2.0-only
/* Recording finished transactions into history files (clients/history/) for the checker. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "histrec.h"
#include "history.h"

struct history_writer *histrec_open(const char *base, uint32_t client_id)
{
	struct history_writer *w;
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s.%u", base, client_id) >= (int)sizeof(path)) {
		fprintf(stderr, "Error: --history: %s: path too long\n", base);
		return NULL;
	}
	w = history_open(path, client_id, 0);
	if (!w)
		fprintf(stderr, "Error: --history: %s: %s\n", path, strerror(errno));
	return w;
}

static enum history_outcome outcome_of(enum xtx_outcome o)
{
	switch (o) {
	case XTX_COMMITTED:
		return HISTORY_COMMITTED;
	case XTX_ABORTED:
		return HISTORY_ABORTED;
	case XTX_FAILED:
		return HISTORY_FAILED;
	default:
		return HISTORY_IN_DOUBT;
	}
}

int histrec_txn(struct history_writer *w, const struct xtx_txn *t,
		const struct xtx_txn_result *res)
{
	struct xtx_access a[XTX_TXN_MAX_KEYS];
	unsigned int n = xtx_txn_accesses(t, a, XTX_TXN_MAX_KEYS);

	return histrec_accesses(w, xtx_txn_id(t), res->outcome, a, n);
}

int histrec_accesses(struct history_writer *w, uint64_t txn, enum xtx_outcome outcome,
		     const struct xtx_access *a, unsigned int n)
{
	enum history_outcome o = outcome_of(outcome);
	/* a transaction that did not commit installs nothing; only the intent counts */
	bool installs = o == HISTORY_COMMITTED || o == HISTORY_IN_DOUBT;
	struct history_op ops[2 * XTX_TXN_MAX_KEYS];
	uint32_t nops = 0;
	unsigned int i;
	int err;

	for (i = 0; i < n && i < XTX_TXN_MAX_KEYS; i++) {
		if (a[i].flags & XTX_ACC_READ)
			ops[nops++] = (struct history_op){
				.key = a[i].key, .table = a[i].table, .version = a[i].read_version,
				.flags = a[i].flags & XTX_ACC_ABSENT ? HISTORY_OP_ABSENT : 0,
			};
		if (a[i].flags & XTX_ACC_WRITE)
			ops[nops++] = (struct history_op){
				.key = a[i].key, .table = a[i].table,
				.version = installs ? a[i].write_version : 0,
				.flags = HISTORY_OP_WRITE |
					 (a[i].flags & XTX_ACC_DELETE ? HISTORY_OP_ABSENT : 0),
			};
	}
	err = history_record(w, txn, o, ops, nops);
	if (err) {
		fprintf(stderr, "Error: --history: recording transaction %llu: %s\n",
			(unsigned long long)txn, strerror(-err));
		return -1;
	}
	return 0;
}

int histrec_close(struct history_writer *w, const char *base)
{
	int err;

	if (!w)
		return 0;
	err = history_close(w);
	if (err) {
		fprintf(stderr, "Error: --history: %s: %s\n", base, strerror(-err));
		return -1;
	}
	return 0;
}
