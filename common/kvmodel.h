/* SPDX-License-Identifier: GPL-2.0-only */
/* A reference model of the KV ops: predicts a server's answers and checks the ones it gives. */
#ifndef XTX_KVMODEL_H
#define XTX_KVMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <xtx/proto.h>

/*
 * GET, INSERT, UPDATE and DELETE as include/xtx/proto.h and kv.h define
 * them, on a plain hash table keyed by (table, key):
 *
 *   GET     OK with value, vlen, version; NOT_FOUND if absent
 *   INSERT  OK with the new version; EXISTS if present
 *   UPDATE  OK with version + 1 (value and vlen replaced); NOT_FOUND if absent
 *   DELETE  OK with version + 1; NOT_FOUND if absent
 *
 * Versions never repeat for a key: the model remembers every key it ever
 * saw with the highest version it ever had, and a new or re-inserted key
 * gets that plus one (so the first is 1).  That makes the model
 * deterministic; a real server only promises "above every earlier version"
 * for an insert (its per-bucket floor decides the number), which is what
 * kvmodel_check() accepts.
 *
 * Not thread-safe: one model per client thread, each over its own keys, is
 * the intended use; anything sharing one model must serialise calls.
 */

struct kvmodel;

/*
 * A live key, as iteration and dumps see it.  A value of up to
 * XTX_VALUE_INLINE bytes is in value[] (zero past vlen); a longer one is
 * at big: from kvmodel_lookup() and kvmodel_foreach() the model's own
 * bytes, valid until the model next changes; from kvmodel_collect() a copy
 * the array owns (kvmodel_items_free()).  kvmodel_item_value() picks.
 */
struct kvmodel_item {
	uint64_t key;
	uint64_t version;
	uint8_t table;
	uint16_t vlen;
	uint8_t value[XTX_VALUE_INLINE];
	const uint8_t *big;	/* vlen > XTX_VALUE_INLINE only, else NULL */
};

static inline const uint8_t *kvmodel_item_value(const struct kvmodel_item *it)
{
	return it->vlen > XTX_VALUE_INLINE ? it->big : it->value;
}

/* What an op answers: the fields a server fills in its reply op. */
struct kvmodel_result {
	uint8_t status;		/* XTX_ST_* */
	uint16_t vlen;		/* GET OK */
	uint64_t version;	/* OK: GET's current version, a write's new one */
	/* GET OK: value[0..vlen), zero past it up to XTX_VALUE_INLINE */
	uint8_t value[XTX_VALUE_MAX];
};

/*
 * value_size: the longest value INSERT and UPDATE take (the server's
 * configured size), 1..XTX_VALUE_MAX, 0 for XTX_VALUE_INLINE.  Values of
 * up to XTX_VALUE_INLINE bytes live in the key's entry; a longer one costs
 * an allocation of its own, so small keys stay small.  max_keys: live
 * keys held at most, beyond which an INSERT answers FULL (0: unlimited).
 * NULL on ENOMEM or a bad value_size.
 */
struct kvmodel *kvmodel_new(unsigned int value_size, uint64_t max_keys);
void kvmodel_free(struct kvmodel *m);

/*
 * Executes one op and returns its status (also in res->status).  The
 * validation a server does first gives BAD_ARG (table >= XTX_MAX_TABLES,
 * vlen above XTX_VALUE_MAX, or above value_size for INSERT/UPDATE) and
 * UNKNOWN_OP (not a KV opcode); neither changes anything.  FULL: max_keys
 * reached, or no memory to remember a new key or a long value.  value may
 * be NULL when vlen is 0 or the op carries no value.
 */
uint8_t kvmodel_apply(struct kvmodel *m, uint8_t opcode, uint8_t table, uint64_t key,
		      uint16_t vlen, const uint8_t *value, struct kvmodel_result *res);

/*
 * Checks a server's reply op against the model and advances the model as
 * the reply says the server did; req is the op as it was sent.  Returns 0
 * when the reply is consistent, else -1 with why ("expected ..., got ...")
 * filled (why may be NULL).  Consistent are:
 *  - RETRY: the op did not run; nothing changes;
 *  - FULL for an INSERT or UPDATE the model would execute: nothing changes;
 *  - the model's own answer, where a successful INSERT may carry any
 *    version above the key's highest ever, which the model adopts.
 * The reply must echo the request's opcode, table and key.  GET compares
 * vlen, value[0..vlen) and version; writes compare version (the value in
 * a write's reply is the request's); NOT_FOUND and EXISTS only the status.
 * Replies carry values in the op slot only (up to XTX_VALUE_INLINE bytes).
 * After a mismatch the model keeps its own prediction, except that a write
 * both sides executed takes the server's version, so one wrong version is
 * reported once rather than at every later op of the key.
 */
#define KVMODEL_WHY_MAX		400	/* room for both sides with full values */
int kvmodel_check(struct kvmodel *m, const struct xtx_op *req, const struct xtx_op *reply,
		  char *why, size_t why_len);

/*
 * Looks (table, key) up without changing anything.  Returns 1 and fills
 * *it when live; 0 when the model saw it and it is deleted; -1 when it
 * never saw it.  *highest (if not NULL) gets the highest version the key
 * ever had (0 when never seen).  it may be NULL.
 */
int kvmodel_lookup(const struct kvmodel *m, uint8_t table, uint64_t key,
		   struct kvmodel_item *it, uint64_t *highest);

/*
 * Makes (table, key) live with value (vlen bytes) or deleted, at version,
 * as a server's commit at a coordinator-fixed version does: no check of
 * the current state; the key's highest version rises to version if below.
 * Returns 0, -EINVAL for vlen above XTX_VALUE_MAX, or -ENOMEM when a new
 * key or a long value could not be remembered; nothing changed on an error.
 */
int kvmodel_set(struct kvmodel *m, uint8_t table, uint64_t key, bool live, uint16_t vlen,
		const uint8_t *value, uint64_t version);

/* Live keys, and keys ever seen (live or deleted). */
uint64_t kvmodel_live(const struct kvmodel *m);
uint64_t kvmodel_known(const struct kvmodel *m);

/*
 * Calls fn on every live key, in no particular order; the model must not
 * change meanwhile.  Stops at fn's first nonzero return and returns it.
 */
int kvmodel_foreach(const struct kvmodel *m, int (*fn)(const struct kvmodel_item *it, void *arg),
		    void *arg);

/*
 * Appends the live keys to the array *items of *n entries (realloc'd, the
 * caller frees it with kvmodel_items_free()), so several models merge into
 * one array; long values are copied.  Returns 0 or -ENOMEM (the array
 * stays valid).
 */
int kvmodel_collect(const struct kvmodel *m, struct kvmodel_item **items, size_t *n);
/* Frees a collected array of n items and the long values it owns. */
void kvmodel_items_free(struct kvmodel_item *items, size_t n);
/* Sorts by table, then key: the order `xtxctl dump` prints. */
void kvmodel_sort(struct kvmodel_item *items, size_t n);

/*
 * One line as `xtxctl dump` prints it, newline included:
 *   table=T key=K version=V vlen=N value=HEX
 * (decimal numbers, lowercase hex of the vlen value bytes).
 */
#define KVMODEL_LINE_MAX	(96 + 2 * XTX_VALUE_MAX)
void kvmodel_format(const struct kvmodel_item *it, char *buf, size_t len);
/* Writes n items as dump lines; 0, or -1 with errno set when f fails. */
int kvmodel_write_dump(FILE *f, const struct kvmodel_item *items, size_t n);

#endif /* XTX_KVMODEL_H */
