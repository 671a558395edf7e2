// SPDX-License-Identifier: GPL-2.0-only
/* The striped store: setup, teardown, and the dump SIGUSR1 asks for. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "locks.h"
#include "store.h"

struct udpd_store *udpd_store_new(unsigned int value_size)
{
	struct udpd_store *s;
	unsigned int i;

	if (posix_memalign((void **)&s, 64, sizeof(*s)))
		return NULL;
	for (i = 0; i < UDPD_STRIPES; i++) {
		struct udpd_stripe *st = &s->stripe[i];

		pthread_mutex_init(&st->mu, NULL);
		for (unsigned int b = 0; b < UDPD_LOCK_BUCKETS; b++)
			st->locks[b] = NULL;
		st->gen = 0;
		st->kv = kvmodel_new(value_size, 0);
		if (!st->kv) {
			while (i--)
				kvmodel_free(s->stripe[i].kv);
			free(s);
			return NULL;
		}
	}
	return s;
}

void udpd_store_free(struct udpd_store *s)
{
	unsigned int i;

	if (!s)
		return;
	for (i = 0; i < UDPD_STRIPES; i++) {
		kvmodel_free(s->stripe[i].kv);
		udpd_lock_free_all(&s->stripe[i]);
		pthread_mutex_destroy(&s->stripe[i].mu);
	}
	free(s);
}

/* Writes to path.tmp through fn, then renames: readers never see half a file. */
static int write_file(const char *path, int (*fn)(struct udpd_store *s, FILE *f),
		      struct udpd_store *s)
{
	char tmp[PATH_MAX];
	FILE *f;
	int err;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	err = fn(s, f);
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static int write_keys(struct udpd_store *s, FILE *f)
{
	struct kvmodel_item *items = NULL;
	size_t n = 0;
	int err = 0;
	unsigned int i;

	for (i = 0; i < UDPD_STRIPES && !err; i++) {
		pthread_mutex_lock(&s->stripe[i].mu);
		err = kvmodel_collect(s->stripe[i].kv, &items, &n);
		pthread_mutex_unlock(&s->stripe[i].mu);
	}
	if (!err) {
		kvmodel_sort(items, n);
		if (kvmodel_write_dump(f, items, n))
			err = -errno;
	}
	kvmodel_items_free(items, n);
	return err;
}

static int write_locks(struct udpd_store *s, FILE *f)
{
	unsigned int i;

	for (i = 0; i < UDPD_STRIPES; i++) {
		pthread_mutex_lock(&s->stripe[i].mu);
		udpd_lock_print(&s->stripe[i], f);
		pthread_mutex_unlock(&s->stripe[i].mu);
	}
	return ferror(f) ? -EIO : 0;
}

int udpd_store_dump(struct udpd_store *s, const char *path)
{
	char locks[PATH_MAX];
	int err;

	if (snprintf(locks, sizeof(locks), "%s.locks", path) >= (int)sizeof(locks))
		return -ENAMETOOLONG;
	err = write_file(locks, write_locks, s);
	return err ? err : write_file(path, write_keys, s);
}
