// SPDX-License-Identifier: GPL-2.0-only
/* Bulk load: keys generated or parsed, each placed into its kernel bucket or the overflow store. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <urcu.h>
#include <bpf/bpf.h>
#include <xtx/maps.h>
#include "clock.h"
#include "ctl_out.h"
#include "num.h"
#include "log.h"
#include "load.h"
#include "overflow.h"
#include "target.h"

/* keys per engine call: the granularity of progress and of stopping */
#define LOAD_BATCH		16384
/* buckets fetched ahead: the map outgrows the caches */
#define LOAD_PREFETCH		8
#define LOAD_PROGRESS_NS	(100ull * 1000 * 1000)
#define LOAD_RETRY_PAUSE_NS	(50 * 1000)
/* a value of XTX_VALUE_MAX bytes in hex, its table and key, a comment */
#define FILE_LINE_MAX		4096
#define FILE_BUF		(256 * 1024)
/* as the control channel's own timeout: a client that stops sending is cut off */
#define FILE_IO_TIMEOUT_MS	10000

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return fd >= 0 && poll(&p, 1, 0) > 0;
}

/* ---- the engine ---- */

static int grow(struct xtxd_loader *l, size_t n)
{
	uint64_t *hash;
	uint32_t *idx, *retry;

	if (n <= l->cap)
		return 0;
	hash = realloc(l->hash, n * sizeof(*hash));
	if (hash)
		l->hash = hash;
	idx = realloc(l->idx, n * sizeof(*idx));
	if (idx)
		l->idx = idx;
	retry = realloc(l->retry, n * sizeof(*retry));
	if (retry)
		l->retry = retry;
	if (!hash || !idx || !retry)
		return -ENOMEM;
	l->cap = n;
	return 0;
}

void xtxd_loader_release(struct xtxd_loader *l)
{
	free(l->hash);
	free(l->idx);
	free(l->retry);
	l->hash = NULL;
	l->idx = NULL;
	l->retry = NULL;
	l->cap = 0;
}

/*
 * The bucket lock as XDP takes it (bpf/lib/kv.h): a frequent-path hold is
 * short, so it is retried; a rare-path hold whose round trip outlived the
 * lease is taken over, as XDP would (bpf_ktime_get_ns is CLOCK_MONOTONIC).
 */
static bool bucket_trylock(struct xtxd_loader *l, struct xtx_kv_bucket *b)
{
	uint64_t old = __atomic_load_n(&b->lock, __ATOMIC_RELAXED);

	if (!old)
		return __atomic_compare_exchange_n(&b->lock, &old, XTX_KV_LOCK_FAST, false,
						   __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	if (old == XTX_KV_LOCK_FAST || !l->lease_ns ||
	    (int64_t)(xtx_now_ns() - (old & ~1ull)) <= (int64_t)l->lease_ns)
		return false;
	if (!__atomic_compare_exchange_n(&b->lock, &old, XTX_KV_LOCK_FAST, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return false;
	l->n.takeovers++;
	return true;
}

static void bucket_unlock(struct xtx_kv_bucket *b)
{
	__atomic_store_n(&b->lock, 0, __ATOMIC_RELEASE);
}

/* The way holding (table, key), live or tombstone, or -1 (xtx_kv_find). */
static int find_way(const struct xtx_kv_bucket *b, uint8_t table, uint64_t key)
{
	int w;

	for (w = 0; w < XTX_KV_WAYS; w++)
		if (b->key[w] == key && (b->flags[w] & (XTX_KVF_VALID | XTX_KVF_TOMB)) &&
		    b->table[w] == table)
			return w;
	return -1;
}

static int free_way(const struct xtx_kv_bucket *b)
{
	int w;

	for (w = 0; w < XTX_KV_WAYS; w++)
		if (!(b->flags[w] & (XTX_KVF_VALID | XTX_KVF_TOMB)))
			return w;
	return -1;
}

static void install(struct xtx_kv_bucket *b, int w, const struct xtxd_load_item *it,
		    uint64_t version, uint8_t flags)
{
	b->key[w] = it->key;
	b->table[w] = it->table;
	b->vlen[w] = (uint8_t)it->vlen;
	b->version[w] = version;
	memcpy(b->value[w], it->value, XTX_VALUE_INLINE);
	b->flags[w] = flags;
}

/* The item into the store at version, its filter bit set: xtxd_ovf_put's answer. */
static int store_put(struct xtxd_loader *l, struct xtx_kv_bucket *b,
		     const struct xtxd_load_item *it, uint64_t version, uint64_t bit)
{
	struct xtxd_ovf_item si;
	int ret;

	memset(&si, 0, sizeof(si));
	si.key = it->key;
	si.table = it->table;
	si.vlen = it->vlen > XTX_VALUE_MAX ? XTX_VALUE_MAX : it->vlen;
	si.version = version;
	memcpy(si.value, si.vlen > XTX_VALUE_INLINE ? it->big : it->value, si.vlen);
	ret = xtxd_ovf_put(l->store, &si);
	if (ret > 0)
		__atomic_fetch_or(&b->bloom, bit, __ATOMIC_SEQ_CST);
	return ret;
}

/* One key, holding its bucket's lock word; 0 or a negative errno from the store. */
static int place(struct xtxd_loader *l, struct xtx_kv_bucket *b, uint32_t bi,
		 const struct xtxd_load_item *it, uint64_t h)
{
	uint64_t bit = 1ull << xtx_bloom_bit_of(h), floor;
	struct xtxd_ovf_item cur;
	bool big;
	int w, ret = 0;

	/* the store's floor and keys of this bucket move under this lock only */
	xtxd_ovf_lock(l->store, bi);
	w = find_way(b, it->table, it->key);
	/* a big write of the key is with xtxd (EVICTING): the key is as good as present */
	if (w >= 0 && (b->flags[w] & (XTX_KVF_VALID | XTX_KVF_EVICTING)))
		goto dup;
	/*
	 * Every key the store holds has its bit in the kernel filter (the rare
	 * path ORs it in before it lets go of this lock; XDP's own insert
	 * relies on that), so a clear bit spares the lookup.  TC may OR bits
	 * in while we hold the bucket: read it atomically, change it by OR.
	 */
	if (w < 0 && (__atomic_load_n(&b->bloom, __ATOMIC_ACQUIRE) & bit) &&
	    !xtxd_ovf_get(l->store, it->table, it->key, &cur))
		goto dup;
	if (w >= 0 && it->version && b->version[w] >= it->version) {
		/* deleted since the version was chosen: loading it would go back in time */
		l->n.stale++;
		goto out;
	}
	big = it->vlen > XTX_VALUE_INLINE;
	if (w >= 0 && big) {
		/*
		 * A tombstone, and a value the kernel cannot hold: the key comes
		 * back in the store (over its older copy, if the tombstone was
		 * waiting to delete one), its version going on, the tombstone gone.
		 */
		ret = store_put(l, b, it, it->version ?: b->version[w] + 1, bit);
		if (ret > 0) {
			b->flags[w] = 0;
			l->n.store++;
		}
		ret = ret < 0 ? ret : 0;
		goto out;
	}
	if (w >= 0) {
		/* a kernel tombstone: the key was deleted; it comes back in its way */
		install(b, w, it, it->version ?: b->version[w] + 1,
			XTX_KVF_VALID | XTX_KVF_DIRTY | (b->flags[w] & XTX_KVF_IN_USER));
		l->n.kernel++;
		goto out;
	}
	floor = b->vfloor;
	if (floor < xtxd_ovf_floor(l->store, bi))
		floor = xtxd_ovf_floor(l->store, bi);
	/* recovery brings keys back at the versions they had */
	if (it->version)
		floor = it->version - 1;
	w = l->write_through || big ? -1 : free_way(b);
	if (w >= 0) {
		install(b, w, it, floor + 1, XTX_KVF_VALID | XTX_KVF_DIRTY);
		l->n.kernel++;
		goto out;
	}
	ret = store_put(l, b, it, floor + 1, bit);
	if (ret < 0)
		goto out;
	/* 0: it held a newer copy after all, so it was there: a duplicate */
	if (!ret)
		goto dup;
	ret = 0;
	l->n.store++;
	goto out;
dup:
	l->n.duplicates++;
out:
	xtxd_ovf_unlock(l->store, bi);
	return ret;
}

/*
 * A bucket spans eight cache lines: the lookup reads the first three, and
 * the install writes a value line, which one the lookup decides.  All of
 * them, so that line is on its way too.
 */
static void prefetch_bucket(const struct xtx_kv_bucket *b)
{
	size_t off;

	for (off = 0; off < sizeof(*b); off += 64)
		__builtin_prefetch((const char *)b + off, 1, 3);
}

/* Tries a key once: 1 placed (or a duplicate), 0 its bucket is busy, or a negative errno. */
static int try_item(struct xtxd_loader *l, const struct xtxd_load_item *it, uint64_t h)
{
	uint32_t bi = xtx_bucket_of(h, l->nbuckets);
	struct xtx_kv_bucket *b = &l->kv[bi];
	int err;

	if (!bucket_trylock(l, b)) {
		l->n.busy++;
		return 0;
	}
	err = place(l, b, bi, it, h);
	bucket_unlock(b);
	return err ? err : 1;
}

int xtxd_load_items(struct xtxd_loader *l, const struct xtxd_load_item *items, size_t n)
{
	const struct timespec pause = { 0, LOAD_RETRY_PAUSE_NS };
	size_t i, j, m = 0, nretry = 0, kept;
	uint64_t deadline, h;
	int ret;

	if (grow(l, n))
		return -ENOMEM;
	/* ours: every key, or this shard's */
	for (i = 0; i < n; i++) {
		h = xtx_hash(items[i].table, items[i].key);
		if (l->nshards > 1 && xtx_bucket_of(h, l->nbuckets) % l->nshards != l->shard)
			continue;
		l->hash[m] = h;
		l->idx[m++] = i;
	}
	for (j = 0; j < m; j++) {
		if (j + LOAD_PREFETCH < m)
			prefetch_bucket(&l->kv[xtx_bucket_of(l->hash[j + LOAD_PREFETCH],
							     l->nbuckets)]);
		ret = try_item(l, &items[l->idx[j]], l->hash[j]);
		if (ret < 0)
			return ret;
		if (!ret)
			l->retry[nretry++] = j;
	}
	/* the busy buckets, until each is free: served traffic holds them only briefly */
	deadline = xtx_now_ns() + l->busy_timeout_ns;
	while (nretry) {
		for (i = kept = 0; i < nretry; i++) {
			j = l->retry[i];
			ret = try_item(l, &items[l->idx[j]], l->hash[j]);
			if (ret < 0)
				return ret;
			if (!ret)
				l->retry[kept++] = j;
		}
		if (kept < nretry)
			deadline = xtx_now_ns() + l->busy_timeout_ns;
		nretry = kept;
		if (!nretry)
			break;
		if (readable(l->stop_fd))
			return -ECANCELED;
		if (l->busy_timeout_ns && xtx_now_ns() > deadline)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
	}
	return 0;
}

/* ---- parsing ---- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* A hex digit's value, or -1: a branch-light xtx_hex_digit for millions of lines. */
static inline int hex_val(unsigned char c)
{
	unsigned int d = c - '0', a = (c | 0x20) - 'a';

	return d < 10 ? (int)d : a < 6 ? (int)a + 10 : -1;
}

/* Strict: all of [s, s+len) in base 10, or 16 after 0x; no sign, no overflow. */

static bool parse_u64(const char *s, size_t len, uint64_t *out)
{
	unsigned int base = 10, d;
	uint64_t v = 0;
	size_t i = 0;
	int x;

	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == len)
		return false;
	for (; i < len; i++) {
		x = hex_val((unsigned char)s[i]);
		if (x < 0 || (unsigned int)x >= base)
			return false;
		d = (unsigned int)x;
		if (v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
	}
	*out = v;
	return true;
}

/* A token in a message: at most 32 characters of it. */
static int clip(size_t len)
{
	return len > 32 ? 32 : (int)len;
}

int xtxd_load_parse_line(const char *line, struct xtxd_load_item *it, char *why, size_t why_len)
{
	uint8_t bytes[XTX_VALUE_MAX], *big;
	const char *tok[4];
	size_t len[4], i;
	uint64_t v;
	int nt = 0, hi, lo;

	for (;;) {
		while (is_space(*line))
			line++;
		if (!*line || *line == '#' || nt == 4)
			break;
		tok[nt] = line;
		while (*line && !is_space(*line) && *line != '#')
			line++;
		len[nt] = line - tok[nt];
		nt++;
	}
	if (!nt)
		return 0;
	if (nt < 2) {
		snprintf(why, why_len, "expected 'table key hexvalue', found only '%.*s'",
			 clip(len[0]), tok[0]);
		return -1;
	}
	if (nt > 3) {
		snprintf(why, why_len, "unexpected '%.*s' after the value", clip(len[3]), tok[3]);
		return -1;
	}
	memset(it, 0, sizeof(*it));
	if (!parse_u64(tok[0], len[0], &v) || v >= XTX_MAX_TABLES) {
		snprintf(why, why_len, "table '%.*s' is not a number 0..%d", clip(len[0]), tok[0],
			 XTX_MAX_TABLES - 1);
		return -1;
	}
	it->table = (uint8_t)v;
	if (!parse_u64(tok[1], len[1], &it->key)) {
		snprintf(why, why_len, "key '%.*s' is not a number below 2^64 (decimal or 0x hex)",
			 clip(len[1]), tok[1]);
		return -1;
	}
	if (nt < 3)
		return 1;
	if (len[2] % 2 || len[2] / 2 > XTX_VALUE_MAX) {
		snprintf(why, why_len, "value '%.*s%s' is not up to %d bytes of hex "
			 "(2 digits each)", clip(len[2]), tok[2], len[2] > 32 ? "..." : "",
			 XTX_VALUE_MAX);
		return -1;
	}
	for (i = 0; i < len[2] / 2; i++) {
		hi = hex_val((unsigned char)tok[2][2 * i]);
		lo = hex_val((unsigned char)tok[2][2 * i + 1]);
		if (hi < 0 || lo < 0) {
			snprintf(why, why_len, "value '%.*s%s' is not hex", clip(len[2]), tok[2],
				 len[2] > 32 ? "..." : "");
			return -1;
		}
		bytes[i] = (uint8_t)(hi << 4 | lo);
	}
	it->vlen = (uint16_t)(len[2] / 2);
	if (it->vlen <= XTX_VALUE_INLINE) {
		memcpy(it->value, bytes, it->vlen);
		return 1;
	}
	big = malloc(it->vlen);
	if (!big) {
		snprintf(why, why_len, "%s", strerror(ENOMEM));
		return -1;
	}
	memcpy(big, bytes, it->vlen);
	it->big = big;
	return 1;
}

void xtxd_load_item_free(struct xtxd_load_item *it)
{
	free((void *)it->big);
	it->big = NULL;
}

/* ---- the control channel's requests ---- */

/*
 * A load runs on the control thread and, on a machine with a second CPU,
 * one helper: each takes the keys of its half of the buckets (shards), a
 * batch at a time.  The bucket and store lookups are cache misses, so two
 * threads load almost twice as fast; XDP still has the CPUs first (it runs
 * in softirq), and the rare path competes as with any other thread.
 */
#define LOAD_THREADS	2

struct load_run {
	const struct xtxd_load_env *env;
	struct xtxd_loader l[LOAD_THREADS];
	uint32_t nthreads;
	struct xtx_kv_bucket *kv;
	size_t kv_size;
	uint32_t value_size;	/* the server's largest value (xtxd --value-size) */
	uint64_t start_ns, last_progress_ns;
	uint64_t total;
	/* the helper: loads its shard of each batch between the two barriers */
	pthread_t helper;
	bool helper_running, quit;
	pthread_barrier_t go, done;
	const struct xtxd_load_item *batch;
	size_t batch_n;
	int helper_err;
};

static struct xtxd_load_counts totals(const struct load_run *r)
{
	struct xtxd_load_counts c = {};
	uint32_t i;

	for (i = 0; i < r->nthreads; i++) {
		c.kernel += r->l[i].n.kernel;
		c.store += r->l[i].n.store;
		c.duplicates += r->l[i].n.duplicates;
		c.stale += r->l[i].n.stale;
		c.busy += r->l[i].n.busy;
		c.takeovers += r->l[i].n.takeovers;
	}
	return c;
}

static void *helper_main(void *arg)
{
	struct load_run *r = arg;

	/* the store is an RCU hash table */
	rcu_register_thread();
	for (;;) {
		pthread_barrier_wait(&r->go);
		if (r->quit)
			break;
		r->helper_err = xtxd_load_items(&r->l[1], r->batch, r->batch_n);
		pthread_barrier_wait(&r->done);
	}
	rcu_unregister_thread();
	return NULL;
}

/* Shards the work over a helper when there is a CPU for it; alone otherwise. */
static void run_start_helper(struct load_run *r)
{
	uint32_t i;
	int err;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	if (pthread_barrier_init(&r->go, NULL, 2))
		return;
	if (pthread_barrier_init(&r->done, NULL, 2)) {
		pthread_barrier_destroy(&r->go);
		return;
	}
	r->l[1] = r->l[0];
	err = pthread_create(&r->helper, NULL, helper_main, r);
	if (err) {
		pr_warn("load: starting a helper thread: %s; loading alone\n", strerror(err));
		pthread_barrier_destroy(&r->go);
		pthread_barrier_destroy(&r->done);
		return;
	}
	r->helper_running = true;
	r->nthreads = LOAD_THREADS;
	for (i = 0; i < r->nthreads; i++) {
		r->l[i].shard = i;
		r->l[i].nshards = r->nthreads;
	}
}

/* One batch, sharded; 0 or the first error of either thread. */
static int run_batch(struct load_run *r, const struct xtxd_load_item *items, size_t n)
{
	int err;

	if (!r->helper_running)
		return xtxd_load_items(&r->l[0], items, n);
	r->batch = items;
	r->batch_n = n;
	pthread_barrier_wait(&r->go);
	err = xtxd_load_items(&r->l[0], items, n);
	pthread_barrier_wait(&r->done);
	return err ? err : r->helper_err;
}

static void run_close(struct load_run *r)
{
	uint32_t i;

	if (r->helper_running) {
		r->quit = true;
		pthread_barrier_wait(&r->go);
		pthread_join(r->helper, NULL);
		pthread_barrier_destroy(&r->go);
		pthread_barrier_destroy(&r->done);
		r->helper_running = false;
	}
	for (i = 0; i < LOAD_THREADS; i++)
		xtxd_loader_release(&r->l[i]);
	munmap(r->kv, r->kv_size);
}

/* Maps the kernel buckets and reads the server's settings; on error answers ERR. */
static int run_begin(struct load_run *r, const struct xtxd_load_env *env)
{
	struct xtxd_out *out = env->out;
	struct xtx_runtime rt;
	struct xtx_info info;
	__u32 zero = 0;
	int fd, err;

	memset(r, 0, sizeof(*r));
	r->env = env;
	r->nthreads = 1;
	r->start_ns = xtx_now_ns();
	r->last_progress_ns = 0;	/* the first batch says how it goes at once */
	err = xtx_target_info(env->t, &info);
	if (err) {
		xtxd_out_printf(out, "ERR load: reading %s: %s\n", XTX_MAP_INFO, strerror(-err));
		return -1;
	}
	if (info.kv_buckets != xtxd_ovf_nbuckets(env->store)) {
		xtxd_out_printf(out, "ERR load: the loaded program has %u KV buckets, the overflow "
				"store %u: restart xtxd\n", info.kv_buckets,
				xtxd_ovf_nbuckets(env->store));
		return -1;
	}
	r->value_size = info.value_size ? info.value_size : XTX_VALUE_INLINE;
	r->l[0].write_through = info.kv_flags & XTX_INFO_KV_WRITE_THROUGH;
	r->l[0].lease_ns = XTX_KV_LEASE_DEFAULT_NS;
	fd = xtx_target_map_fd(env->t, XTX_MAP_RUNTIME);
	if (fd >= 0 && !bpf_map_lookup_elem(fd, &zero, &rt))
		r->l[0].lease_ns = rt.kv_lease_ns;
	if (fd >= 0)
		close(fd);

	err = xtx_target_map_kv(env->t, info.kv_buckets, &r->kv, &r->kv_size);
	if (err) {
		xtxd_out_printf(out, "ERR load: mapping %s: %s\n", XTX_MAP_KV, strerror(-err));
		return -1;
	}
	r->l[0].kv = r->kv;
	r->l[0].nbuckets = info.kv_buckets;
	r->l[0].store = env->store;
	r->l[0].stop_fd = env->stop_fd;
	r->l[0].busy_timeout_ns = XTXD_LOAD_BUSY_TIMEOUT_NS;
	return 0;
}

/* Now and then a progress line; -EPIPE when the client went away (the load stops). */
static int progress(struct load_run *r, uint64_t done)
{
	uint64_t now = xtx_now_ns();

	if (now - r->last_progress_ns < LOAD_PROGRESS_NS)
		return 0;
	r->last_progress_ns = now;
	xtxd_out_printf(r->env->out, "progress %llu %llu\n", (unsigned long long)done,
			(unsigned long long)r->total);
	return xtxd_out_flush(r->env->out) ? -EPIPE : 0;
}

static void run_end(struct load_run *r, int err)
{
	struct xtxd_out *out = r->env->out;
	uint64_t ns = xtx_now_ns() - r->start_ns;
	struct xtxd_load_counts n;
	unsigned long long loaded, left;

	run_close(r);
	n = totals(r);
	loaded = n.kernel + n.store;
	left = r->total - loaded - n.duplicates - n.stale;
	xtxd_out_printf(out, "result keys=%llu kernel=%llu store=%llu duplicates=%llu "
			"takeovers=%llu busy=%llu seconds=%.6f stale=%llu\n", loaded,
			(unsigned long long)n.kernel, (unsigned long long)n.store,
			(unsigned long long)n.duplicates, (unsigned long long)n.takeovers,
			(unsigned long long)n.busy, ns / 1e9, (unsigned long long)n.stale);
	if (!err && loaded && r->env->make_durable && r->env->make_durable(r->env))
		return;
	switch (err) {
	case 0:
		xtxd_out_printf(out, "OK\n");
		break;
	case -ENOSPC:
		xtxd_out_printf(out, "ERR overflow store full (%llu keys, xtxd --overflow-max) "
				"after %llu keys: those stay loaded, the other %llu were not\n",
				(unsigned long long)xtxd_ovf_max(r->env->store),
				loaded, left);
		break;
	case -ECANCELED:
		xtxd_out_printf(out, "ERR xtxd is stopping: %llu keys loaded stay, the other %llu "
				"were not\n", loaded, left);
		break;
	case -ETIMEDOUT:
		xtxd_out_printf(out, "ERR a bucket stayed locked for %llu s: %llu keys loaded "
				"stay, the other %llu were not\n",
				(unsigned long long)(XTXD_LOAD_BUSY_TIMEOUT_NS / 1000000000ull),
				loaded, left);
		break;
	default:
		xtxd_out_printf(out, "ERR load after %llu keys: %s (those stay loaded, the other "
				"%llu were not)\n", loaded, strerror(-err),
				left);
		break;
	}
}

/* Loads items in batches with progress; 0 or the first error. */
static int run_items(struct load_run *r, const struct xtxd_load_item *items, size_t n,
		     uint64_t done)
{
	size_t i, m;
	int err;

	for (i = 0; i < n; i += m) {
		m = n - i < LOAD_BATCH ? n - i : LOAD_BATCH;
		err = run_batch(r, items + i, m);
		if (!err && readable(r->env->stop_fd))
			err = -ECANCELED;
		if (!err)
			err = progress(r, done + i + m);
		if (err)
			return err;
	}
	return 0;
}

void xtxd_load_gen(const struct xtxd_load_env *env, uint8_t table, uint64_t first,
		   uint64_t count, unsigned int vsize, uint64_t seed)
{
	struct xtxd_load_item *items;
	struct load_run r;
	uint8_t *big;
	uint64_t done;
	size_t i, m;
	int err = 0;

	if (run_begin(&r, env))
		return;
	if (vsize > r.value_size) {
		xtxd_out_printf(env->out, "ERR load: values of %u bytes: the server takes at most "
				"%u (xtxd --value-size)\n", vsize, r.value_size);
		run_close(&r);
		return;
	}
	items = calloc(LOAD_BATCH, sizeof(*items));
	/* values over the slot: their bytes beside the items, one batch at a time */
	big = vsize > XTX_VALUE_INLINE ? malloc((size_t)LOAD_BATCH * vsize) : NULL;
	if (!items || (vsize > XTX_VALUE_INLINE && !big)) {
		xtxd_out_printf(env->out, "ERR load: %s\n", strerror(ENOMEM));
		free(items);
		run_close(&r);
		return;
	}
	r.total = count;
	run_start_helper(&r);
	for (done = 0; done < count && !err; done += m) {
		m = count - done < LOAD_BATCH ? count - done : LOAD_BATCH;
		for (i = 0; i < m; i++) {
			items[i].key = first + done + i;
			items[i].table = table;
			items[i].vlen = vsize;
			items[i].version = env->version;
			if (big) {
				items[i].big = big + i * vsize;
				xtxd_load_gen_value(seed, table, first + done + i, vsize, big + i * vsize);
			} else {
				xtxd_load_gen_value(seed, table, first + done + i, vsize,
						    items[i].value);
			}
		}
		err = run_items(&r, items, m, done);
	}
	free(items);
	free(big);
	/* after -EPIPE nobody reads the answer, but the mapping and scratch go */
	run_end(&r, err);
}

/* The parsed lines of a load file, all of them before the first is loaded. */
struct item_vec {
	struct xtxd_load_item *v;
	size_t n, cap;
};

static int vec_push(struct item_vec *iv, const struct xtxd_load_item *it)
{
	if (iv->n == iv->cap) {
		size_t cap = iv->cap ? iv->cap * 2 : 65536;
		struct xtxd_load_item *v = realloc(iv->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		iv->v = v;
		iv->cap = cap;
	}
	iv->v[iv->n++] = *it;
	return 0;
}

static void vec_free(struct item_vec *iv)
{
	size_t i;

	for (i = 0; i < iv->n; i++)
		xtxd_load_item_free(&iv->v[i]);
	free(iv->v);
	iv->v = NULL;
	iv->n = iv->cap = 0;
}

/*
 * The longest value a load file may hold: --value-size bounds what the
 * kernel cache's slot takes; at the slot's whole size, values past it go to
 * the overflow store, up to XTX_VALUE_MAX.
 */
static uint32_t file_value_max(uint32_t value_size)
{
	return value_size < XTX_VALUE_INLINE ? value_size : XTX_VALUE_MAX;
}

/*
 * Reads the stream to its end, parsing line by line.  0, or -1 after
 * answering ERR (xtxd sends nothing before the end: a client still sending
 * must not block on a full socket while we block on it).
 */
static int read_file(const struct xtxd_load_env *env, int fd, const char *pending,
		     size_t npending, uint32_t value_size, struct item_vec *iv)
{
	struct pollfd pfd[2] = {
		{ .fd = fd, .events = POLLIN },
		{ .fd = env->stop_fd, .events = POLLIN },
	};
	struct xtxd_load_item it;
	size_t len = 0, off;
	uint64_t lineno = 0;
	char *buf, *nl, *end, why[160];
	bool eof = false;
	ssize_t n;
	int r, ret = -1;

	buf = malloc(FILE_BUF + 1);
	if (!buf) {
		xtxd_out_printf(env->out, "ERR load: %s\n", strerror(ENOMEM));
		return -1;
	}
	memcpy(buf, pending, npending);
	len = npending;
	for (;;) {
		/* every complete line; at the end also the last one, without its newline */
		for (off = 0; off < len; off = end + 1 - buf) {
			nl = memchr(buf + off, '\n', len - off);
			if (!nl && !eof)
				break;
			end = nl ? nl : buf + len;
			*end = '\0';
			lineno++;
			r = xtxd_load_parse_line(buf + off, &it, why, sizeof(why));
			if (r < 0) {
				xtxd_out_printf(env->out, "ERR line %llu: %s\n",
						(unsigned long long)lineno, why);
				goto out;
			}
			if (r && it.vlen > value_size) {
				xtxd_out_printf(env->out, "ERR line %llu: a value of %u bytes: the "
						"server takes at most %u (xtxd --value-size)\n",
						(unsigned long long)lineno, it.vlen, value_size);
				xtxd_load_item_free(&it);
				goto out;
			}
			it.version = env->version;
			if (r && vec_push(iv, &it)) {
				xtxd_out_printf(env->out, "ERR load: %llu lines: %s\n",
						(unsigned long long)lineno, strerror(ENOMEM));
				xtxd_load_item_free(&it);
				goto out;
			}
		}
		if (off > len)
			off = len;
		memmove(buf, buf + off, len - off);
		len -= off;
		if (eof)
			break;
		if (len >= FILE_LINE_MAX) {
			xtxd_out_printf(env->out, "ERR line %llu: longer than %d bytes\n",
					(unsigned long long)lineno + 1, FILE_LINE_MAX - 1);
			goto out;
		}
		r = poll(pfd, 2, FILE_IO_TIMEOUT_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || pfd[1].revents) {
			xtxd_out_printf(env->out, "ERR load: %s\n", r < 0 ? strerror(errno) :
					"xtxd is stopping");
			goto out;
		}
		if (!r) {
			xtxd_out_printf(env->out, "ERR load: no data for %d s after line %llu\n",
					FILE_IO_TIMEOUT_MS / 1000, (unsigned long long)lineno);
			goto out;
		}
		n = recv(fd, buf + len, FILE_BUF - len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			xtxd_out_printf(env->out, "ERR load: receiving: %s\n", strerror(errno));
			goto out;
		}
		if (!n)
			eof = true;
		len += n;
	}
	ret = 0;
out:
	free(buf);
	return ret;
}

void xtxd_load_file(const struct xtxd_load_env *env, int fd, const char *pending,
		    size_t npending)
{
	struct item_vec iv = {};
	struct load_run r;
	int err;

	if (run_begin(&r, env))
		return;
	if (read_file(env, fd, pending, npending, file_value_max(r.value_size), &iv)) {
		vec_free(&iv);
		run_close(&r);
		return;
	}
	/* the clock runs from the first loaded key: receiving depends on the client */
	r.start_ns = xtx_now_ns();
	r.last_progress_ns = 0;	/* the first batch says how it goes at once */
	r.total = iv.n;
	run_start_helper(&r);
	err = run_items(&r, iv.v, iv.n, 0);
	vec_free(&iv);
	run_end(&r, err);
}

struct mark_acc {
	uint64_t mark;
};

static int mark_item(const struct xtxd_ovf_item *it, void *arg)
{
	struct mark_acc *m = arg;

	if (it->version > m->mark)
		m->mark = it->version;
	return 0;
}

int xtxd_version_mark(const struct xtx_target *t, struct xtxd_ovf *store, uint64_t *mark)
{
	struct mark_acc m = {};
	struct xtx_kv_bucket *kv;
	struct xtx_info info;
	size_t size;
	uint32_t i, w;
	int err;

	err = xtx_target_info(t, &info);
	if (err)
		return err;
	err = xtx_target_map_kv(t, info.kv_buckets, &kv, &size);
	if (err)
		return err;
	for (i = 0; i < info.kv_buckets; i++) {
		const struct xtx_kv_bucket *b = &kv[i];
		uint64_t v = __atomic_load_n(&b->vfloor, __ATOMIC_RELAXED);

		for (w = 0; w < XTX_KV_WAYS; w++)
			if ((b->flags[w] & (XTX_KVF_VALID | XTX_KVF_TOMB)) && b->version[w] > v)
				v = b->version[w];
		if (i < xtxd_ovf_nbuckets(store) && xtxd_ovf_floor(store, i) > v)
			v = xtxd_ovf_floor(store, i);
		if (v > m.mark)
			m.mark = v;
	}
	munmap(kv, size);
	xtxd_ovf_foreach(store, mark_item, &m);
	*mark = m.mark;
	return 0;
}
