// SPDX-License-Identifier: GPL-2.0-only
/* Per-thread log rings (the per-CPU logs of bpf/lib/log.h) and their drain thread. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xtx/log.h>
#include "log.h"
#include "txlog.h"

/* between passes: a default-sized ring (XTX_LOG_RING_DEFAULT) takes far longer to fill */
#define DRAIN_PERIOD_NS	(200 * 1000)

struct udpd_txlog {
	struct xtx_log_entry *ring;
	uint32_t size;
	uint64_t tail;		/* next append: written by the serving thread (release) */
	uint64_t head;		/* first undrained: written by the drain thread (release) */
	uint64_t full;
} __attribute__((aligned(64)));

struct udpd_txlog_drain {
	struct udpd_txlog **rings;
	unsigned int n;
	FILE *out;
	const char *path;
	pthread_t thread;
	volatile int stop;
};

struct udpd_txlog *udpd_txlog_new(uint32_t size)
{
	struct udpd_txlog *l;

	if (posix_memalign((void **)&l, 64, sizeof(*l)))
		return NULL;
	memset(l, 0, sizeof(*l));
	l->size = size;
	l->ring = calloc(size, sizeof(*l->ring));
	if (!l->ring) {
		free(l);
		return NULL;
	}
	return l;
}

void udpd_txlog_free(struct udpd_txlog *l)
{
	if (!l)
		return;
	free(l->ring);
	free(l);
}

bool udpd_txlog_has_room(struct udpd_txlog *l)
{
	if (l->tail - __atomic_load_n(&l->head, __ATOMIC_ACQUIRE) < l->size)
		return true;
	l->full++;
	return false;
}

uint8_t udpd_txlog_append(struct udpd_txlog *l, struct xtx_op *op, uint32_t client_id)
{
	uint64_t tail = l->tail, packed = op->token;
	struct xtx_log_entry *e;

	/* the head only moves forward: a stale read only says full early */
	if (tail - __atomic_load_n(&l->head, __ATOMIC_ACQUIRE) >= l->size) {
		l->full++;
		return XTX_ST_LOG_FULL;
	}
	e = &l->ring[tail & (l->size - 1)];
	e->seq = tail;
	e->txn = op->txn;
	e->key = op->key;
	e->version = op->version;
	e->client_id = client_id;
	e->table = op->table;
	e->vlen = op->vlen;
	e->flags = ((op->flags & XTX_OPF_DELETE) ? XTX_LOGF_DELETE : 0) |
		   ((op->flags & XTX_OPF_LOG_LAST) ? XTX_LOGF_LAST : 0) |
		   ((op->flags & XTX_OPF_LOG_META) ? XTX_LOGF_META : 0);
	e->nreplicas = xtx_log_replicas_unpack(packed, e->replicas);
	e->nwrites = (op->flags & XTX_OPF_LOG_LAST) ?
		     (op->flags & XTX_OPF_LOG_COUNT_MASK) >> XTX_OPF_LOG_COUNT_SHIFT : 0;
	memcpy(e->value, op->value, XTX_VALUE_MAX);
	/* publish: the entry's stores are ordered before the tail that exposes it */
	__atomic_store_n(&l->tail, tail + 1, __ATOMIC_RELEASE);
	op->version = tail;
	return XTX_ST_OK;
}

/* Empties one ring; false when writing failed (the entries stay). */
static bool drain_ring(struct udpd_txlog_drain *d, struct udpd_txlog *l)
{
	uint64_t head = l->head, tail = __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE);

	for (; d->out && head < tail; head++) {
		if (fwrite(&l->ring[head & (l->size - 1)], sizeof(struct xtx_log_entry), 1,
			   d->out) != 1)
			return false;
	}
	__atomic_store_n(&l->head, tail, __ATOMIC_RELEASE);
	return true;
}

static void drain_all(struct udpd_txlog_drain *d)
{
	unsigned int i;
	bool ok = true;

	for (i = 0; i < d->n && ok; i++)
		ok = drain_ring(d, d->rings[i]);
	if (d->out && ok && fflush(d->out))
		ok = false;
	if (!ok) {
		/* entries stay in the rings: appends answer LOG_FULL rather than lose them */
		pr_warn("log file %s: %s; not draining\n", d->path, strerror(errno));
		clearerr(d->out);
	}
}

static void *drain_thread(void *arg)
{
	struct udpd_txlog_drain *d = arg;
	struct timespec ts = { .tv_nsec = DRAIN_PERIOD_NS };

	while (!d->stop) {
		drain_all(d);
		nanosleep(&ts, NULL);
	}
	drain_all(d);
	return NULL;
}

struct udpd_txlog_drain *udpd_txlog_drain_start(struct udpd_txlog **rings, unsigned int n,
						const char *path)
{
	struct udpd_txlog_drain *d = calloc(1, sizeof(*d));
	int err;

	if (!d)
		return NULL;
	d->rings = rings;
	d->n = n;
	d->path = path;
	if (path) {
		d->out = fopen(path, "ab");
		if (!d->out) {
			fprintf(stderr, "Error: --log-file %s: %s\n", path, strerror(errno));
			free(d);
			return NULL;
		}
	}
	err = pthread_create(&d->thread, NULL, drain_thread, d);
	if (err) {
		fprintf(stderr, "Error: starting the log drain: %s\n", strerror(err));
		if (d->out)
			fclose(d->out);
		free(d);
		return NULL;
	}
	return d;
}

void udpd_txlog_drain_stop(struct udpd_txlog_drain *d)
{
	if (!d)
		return;
	d->stop = 1;
	pthread_join(d->thread, NULL);
	if (d->out)
		fclose(d->out);
	free(d);
}
