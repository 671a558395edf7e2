// SPDX-License-Identifier: GPL-2.0-only
/* History files and the checker: each phenomenon by hand, bad files, a large serial run. */
/* checks: 20 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "history.h"
#include "history_check.h"

static char dir[64];

/* ---- building histories ---- */

/*
 * Ops as text, so a case reads like the history it builds:
 * "r0:1@5" read table 0 key 1 version 5, "a0:1@5" read that found it
 * absent, "w0:1@6" write, "d0:1@7" delete.
 */
static int rec(struct history_writer *w, uint64_t id, enum history_outcome o, const char *ops)
{
	struct history_op v[64];
	uint32_t n = 0;
	const char *p = ops;

	while (*p) {
		unsigned int table;
		unsigned long long key, ver;
		char kind;
		int used;

		if (*p == ' ') {
			p++;
			continue;
		}
		if (sscanf(p, "%c%u:%llu@%llu%n", &kind, &table, &key, &ver, &used) != 4 ||
		    n == 64) {
			printf("# bad op spec '%s'\n", p);
			exit(1);
		}
		memset(&v[n], 0, sizeof(v[n]));
		v[n].table = (uint8_t)table;
		v[n].key = key;
		v[n].version = ver;
		v[n].flags = kind == 'w' ? HISTORY_OP_WRITE :
			     kind == 'd' ? HISTORY_OP_WRITE | HISTORY_OP_ABSENT :
			     kind == 'a' ? HISTORY_OP_ABSENT : 0;
		n++;
		p += used;
	}
	return history_record(w, id, o, v, n);
}

static struct history_writer *wopen(const char *name)
{
	char path[128];
	struct history_writer *w;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	w = history_open(path, 1, 0);
	if (!w) {
		printf("# history_open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return w;
}

static const char *pathof(const char *name)
{
	static char paths[8][128];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
	return p;
}

/* ---- checking ---- */

#define MAX_SEEN 64

static struct seen {
	enum history_anomaly_kind kind;
	unsigned int n;
	uint64_t txns[16];
} seen[MAX_SEEN];
static unsigned int nseen;

static void collect(void *arg, const struct history_anomaly *a)
{
	(void)arg;
	printf("#   %s\n", a->line);
	if (nseen == MAX_SEEN)
		return;
	seen[nseen].kind = a->kind;
	seen[nseen].n = a->ntxns < 16 ? a->ntxns : 16;
	memcpy(seen[nseen].txns, a->txns, seen[nseen].n * sizeof(uint64_t));
	nseen++;
}

static struct history_check_opts opts;

static int check(struct history_check_report *r, int n, ...)
{
	const char *paths[8];
	va_list ap;
	int i;

	va_start(ap, n);
	for (i = 0; i < n; i++)
		paths[i] = pathof(va_arg(ap, const char *));
	va_end(ap);
	nseen = 0;
	opts.on_anomaly = collect;
	return history_check_files(paths, n, &opts, r);
}

/* Whether an anomaly of kind names exactly the transactions given (any order). */
static bool named(enum history_anomaly_kind kind, int n, ...)
{
	uint64_t want[16];
	unsigned int i, j;
	va_list ap;

	va_start(ap, n);
	for (i = 0; i < (unsigned int)n; i++)
		want[i] = va_arg(ap, uint64_t);
	va_end(ap);
	for (i = 0; i < nseen; i++) {
		bool all = seen[i].kind == kind && seen[i].n == (unsigned int)n;

		for (j = 0; all && j < (unsigned int)n; j++) {
			unsigned int m;

			for (m = 0; m < seen[i].n && seen[i].txns[m] != want[j]; m++)
				;
			all = m < seen[i].n;
		}
		if (all)
			return true;
	}
	return false;
}

/* Only kind, count times, and nothing else. */
static bool only(const struct history_check_report *r, enum history_anomaly_kind kind,
		 uint64_t count)
{
	return r->count[kind] == count && r->anomalies == count;
}

/* ---- cases ---- */

static void test_serial(void)
{
	struct history_writer *w = wopen("serial");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "a0:1@0 w0:1@1 w0:2@1");
	rec(w, 2, HISTORY_COMMITTED, "r0:1@1 w0:1@2");
	rec(w, 3, HISTORY_COMMITTED, "r0:1@2 r0:2@1 w0:2@3");
	rec(w, 4, HISTORY_COMMITTED, "r0:1@2 r0:2@3 d0:1@4");
	rec(w, 5, HISTORY_COMMITTED, "a0:1@4 w1:1@1");
	CHECK(!history_close(w), "close");
	CHECK(!check(&r, 1, "serial"), "check ran");
	CHECK(r.txns == 5 && r.committed == 5, "%" PRIu64 " txns", r.txns);
	CHECK(r.anomalies == 0, "%" PRIu64 " anomalies", r.anomalies);
	/* ww 1->2, 1->3(key 2), 2->4; wr 1->2, 2->3, 1->3, 2->4, 3->4, 4->5; rw 1->2... */
	CHECK(r.edges >= 8 && r.edges_by_kind[0] && r.edges_by_kind[1] && r.edges_by_kind[2],
	      "%" PRIu64 " edges", r.edges);
	CHECK(r.sccs == 0, "%" PRIu64 " cycles", r.sccs);
}

static void test_g0(void)
{
	struct history_writer *w = wopen("g0");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "w0:1@1 w0:2@2");
	rec(w, 2, HISTORY_COMMITTED, "w0:1@2 w0:2@1");
	rec(w, 3, HISTORY_COMMITTED, "r0:1@2 r0:2@2");
	history_close(w);
	CHECK(!check(&r, 1, "g0"), "check ran");
	CHECK(only(&r, HISTORY_G0, 1), "G0=%" PRIu64 " of %" PRIu64, r.count[HISTORY_G0],
	      r.anomalies);
	CHECK(named(HISTORY_G0, 2, 1ull, 2ull), "G0 names 1 and 2");
}

static void test_g1a(void)
{
	struct history_writer *w = wopen("g1a");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "w0:1@1");
	rec(w, 2, HISTORY_ABORTED, "r0:1@1 w0:1@5");
	rec(w, 3, HISTORY_COMMITTED, "r0:1@5");
	rec(w, 4, HISTORY_FAILED, "w0:2@9 w0:3@0");
	rec(w, 5, HISTORY_COMMITTED, "r0:2@9");
	history_close(w);
	CHECK(!check(&r, 1, "g1a"), "check ran");
	CHECK(only(&r, HISTORY_G1A, 2), "G1a=%" PRIu64 " of %" PRIu64, r.count[HISTORY_G1A],
	      r.anomalies);
	CHECK(named(HISTORY_G1A, 2, 2ull, 3ull), "aborted 2 read by 3");
	CHECK(named(HISTORY_G1A, 2, 4ull, 5ull), "failed 4 read by 5");
}

static void test_g1b(void)
{
	struct history_writer *w = wopen("g1b");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "w0:1@1 w0:1@2");
	rec(w, 2, HISTORY_COMMITTED, "r0:1@1");
	/* Reading the final version is fine, and so is a txn reading its own. */
	rec(w, 3, HISTORY_COMMITTED, "r0:1@2 w0:2@1 w0:2@2 r0:2@1");
	history_close(w);
	CHECK(!check(&r, 1, "g1b"), "check ran");
	CHECK(r.count[HISTORY_G1B] == 1, "G1b=%" PRIu64, r.count[HISTORY_G1B]);
	CHECK(named(HISTORY_G1B, 2, 1ull, 2ull), "1's intermediate read by 2");
	/* 2 read 1@1 and the next version is 1's own 1@2: rw 2->1 against wr 1->2, a G2. */
	CHECK(r.count[HISTORY_G1B] + r.count[HISTORY_G2] == r.anomalies, "nothing else");
}

static void test_g1c(void)
{
	struct history_writer *w = wopen("g1c");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "w0:1@1 r0:2@1");
	rec(w, 2, HISTORY_COMMITTED, "w0:2@1 r0:1@1");
	history_close(w);
	CHECK(!check(&r, 1, "g1c"), "check ran");
	CHECK(only(&r, HISTORY_G1C, 1), "G1c=%" PRIu64 " of %" PRIu64, r.count[HISTORY_G1C],
	      r.anomalies);
	CHECK(named(HISTORY_G1C, 2, 1ull, 2ull), "G1c names 1 and 2");
}

static void test_g2_write_skew(void)
{
	struct history_writer *w = wopen("skew");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "r0:1@0 r0:2@0 w0:1@1");
	rec(w, 2, HISTORY_COMMITTED, "r0:1@0 r0:2@0 w0:2@1");
	history_close(w);
	CHECK(!check(&r, 1, "skew"), "check ran");
	CHECK(only(&r, HISTORY_G2, 1), "G2=%" PRIu64 " of %" PRIu64, r.count[HISTORY_G2],
	      r.anomalies);
	CHECK(named(HISTORY_G2, 2, 1ull, 2ull), "G2 names 1 and 2");
	CHECK(r.edges_by_kind[2] == 2 && r.edges == 2, "two rw edges, %" PRIu64 " edges", r.edges);
}

static void test_g2_longer_cycle(void)
{
	struct history_writer *w = wopen("g2long");
	struct history_check_report r;

	/* 1 -wr-> 2 -wr-> 3 -rw-> 1: only the last hop is an anti-dependency. */
	rec(w, 1, HISTORY_COMMITTED, "w0:1@1 w0:9@1");
	rec(w, 2, HISTORY_COMMITTED, "r0:1@1 w0:2@1");
	rec(w, 3, HISTORY_COMMITTED, "r0:2@1 r0:9@0");
	rec(w, 4, HISTORY_COMMITTED, "r0:5@0 w0:6@1");
	history_close(w);
	CHECK(!check(&r, 1, "g2long"), "check ran");
	CHECK(only(&r, HISTORY_G2, 1), "G2=%" PRIu64 " of %" PRIu64, r.count[HISTORY_G2],
	      r.anomalies);
	CHECK(named(HISTORY_G2, 3, 1ull, 2ull, 3ull), "G2 names 1, 2, 3 and not 4");
}

static void test_lost_update(void)
{
	struct history_writer *w = wopen("lost");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "w0:1@1");
	rec(w, 2, HISTORY_COMMITTED, "r0:1@1 w0:1@2");
	rec(w, 3, HISTORY_COMMITTED, "r0:1@1 w0:1@2");
	rec(w, 4, HISTORY_COMMITTED, "r0:1@2");
	history_close(w);
	CHECK(!check(&r, 1, "lost"), "check ran");
	CHECK(only(&r, HISTORY_DUP, 1), "dup=%" PRIu64 " of %" PRIu64, r.count[HISTORY_DUP],
	      r.anomalies);
	CHECK(named(HISTORY_DUP, 2, 2ull, 3ull), "dup names 2 and 3");

	/* With distinct versions the same race is a G2 (rw 3->2, ww 2->3). */
	w = wopen("lost2");
	rec(w, 1, HISTORY_COMMITTED, "w0:1@1");
	rec(w, 2, HISTORY_COMMITTED, "r0:1@1 w0:1@2");
	rec(w, 3, HISTORY_COMMITTED, "r0:1@1 w0:1@3");
	history_close(w);
	CHECK(!check(&r, 1, "lost2"), "check ran");
	CHECK(only(&r, HISTORY_G2, 1), "G2=%" PRIu64 " of %" PRIu64, r.count[HISTORY_G2],
	      r.anomalies);
	CHECK(named(HISTORY_G2, 2, 2ull, 3ull), "G2 names 2 and 3");
}

static void test_aborted_ignored(void)
{
	struct history_writer *w = wopen("aborted");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "w0:1@1 w0:2@1");
	/* Would be a G0 with 1 and a G1a source if it counted. */
	rec(w, 2, HISTORY_ABORTED, "r0:1@77 w0:1@2 w0:2@0");
	rec(w, 3, HISTORY_FAILED, "r0:1@1 r0:2@1 w0:1@2 w0:2@2");
	/* 4 committed the version 2 meant to write: the committed installer claims it. */
	rec(w, 4, HISTORY_COMMITTED, "r0:1@1 w0:1@2");
	rec(w, 5, HISTORY_COMMITTED, "r0:1@2 r0:2@1");
	history_close(w);
	CHECK(!check(&r, 1, "aborted"), "check ran");
	CHECK(r.anomalies == 0, "%" PRIu64 " anomalies", r.anomalies);
	CHECK(r.committed == 3 && r.aborted == 1 && r.failed == 1, "outcomes counted");
}

static void test_in_doubt(void)
{
	struct history_writer *w = wopen("doubt");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "w0:1@1 w0:2@1");
	/* Observed by 3: it committed, and its reads join the graph. */
	rec(w, 2, HISTORY_IN_DOUBT, "r0:1@1 w0:1@2");
	rec(w, 3, HISTORY_COMMITTED, "r0:1@2");
	/* Never observed: excluded, so its odd read is no fault. */
	rec(w, 4, HISTORY_IN_DOUBT, "r0:2@12345 w0:2@9");
	/* Its version was installed by committed 6: 6 claims it, no dup. */
	rec(w, 5, HISTORY_IN_DOUBT, "r0:2@1 w0:2@2");
	rec(w, 6, HISTORY_COMMITTED, "r0:2@1 w0:2@2");
	rec(w, 7, HISTORY_COMMITTED, "r0:2@2");
	history_close(w);
	CHECK(!check(&r, 1, "doubt"), "check ran");
	CHECK(r.anomalies == 0, "%" PRIu64 " anomalies", r.anomalies);
	CHECK(r.in_doubt == 3 && r.in_doubt_included == 1, "%" PRIu64 " of %" PRIu64 " included",
	      r.in_doubt_included, r.in_doubt);

	/* An included in-doubt transaction takes part in cycles (write skew with 9). */
	w = wopen("doubt2");
	rec(w, 8, HISTORY_IN_DOUBT, "r0:1@0 r0:2@0 w0:1@1");
	rec(w, 9, HISTORY_COMMITTED, "r0:1@0 r0:2@0 w0:2@1");
	rec(w, 10, HISTORY_COMMITTED, "r0:1@1");
	history_close(w);
	CHECK(!check(&r, 1, "doubt2"), "check ran");
	CHECK(only(&r, HISTORY_G2, 1) && named(HISTORY_G2, 2, 8ull, 9ull), "G2 names 8 and 9");

	/* ... and an excluded one does not: nobody saw 8's write. */
	w = wopen("doubt3");
	rec(w, 8, HISTORY_IN_DOUBT, "r0:1@0 r0:2@0 w0:1@1");
	rec(w, 9, HISTORY_COMMITTED, "r0:1@0 r0:2@0 w0:2@1");
	history_close(w);
	CHECK(!check(&r, 1, "doubt3"), "check ran");
	CHECK(r.anomalies == 0 && r.in_doubt_included == 0, "8 excluded");
}

static void test_merge(void)
{
	struct history_writer *a = wopen("m.a"), *b = wopen("m.b"), *c = wopen("m.c");
	struct history_check_report r;

	rec(c, 10, HISTORY_COMMITTED, "w0:1@1 w0:2@1");
	rec(a, 11, HISTORY_COMMITTED, "r0:1@1 r0:2@1 w0:1@2");
	rec(b, 12, HISTORY_COMMITTED, "r0:1@1 r0:2@1 w0:2@2");
	rec(a, 13, HISTORY_COMMITTED, "r0:1@2 r0:2@2");
	history_close(a);
	history_close(b);
	history_close(c);
	CHECK(!check(&r, 3, "m.a", "m.b", "m.c"), "check ran");
	CHECK(r.files == 3 && r.txns == 4, "%" PRIu64 " files %" PRIu64 " txns", r.files, r.txns);
	CHECK(only(&r, HISTORY_G2, 1) && named(HISTORY_G2, 2, 11ull, 12ull),
	      "write skew across files");
	CHECK(!check(&r, 2, "m.b", "m.c"), "check ran");
	CHECK(r.anomalies == 0 && r.txns == 2, "one side alone is serial");
}

static void test_unknown_and_initial(void)
{
	struct history_writer *w = wopen("unk");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "w0:1@5");
	rec(w, 2, HISTORY_COMMITTED, "r0:1@7");		/* above installed 5: nobody's */
	rec(w, 3, HISTORY_COMMITTED, "r0:2@3");		/* bulk-loaded y@3 ... */
	rec(w, 4, HISTORY_COMMITTED, "r0:2@4");		/* ... so y@4 is nobody's */
	rec(w, 5, HISTORY_COMMITTED, "r0:3@2");		/* initial z@2, below 6 */
	rec(w, 6, HISTORY_COMMITTED, "r0:3@2 w0:3@6");
	rec(w, 7, HISTORY_COMMITTED, "r0:3@6");
	history_close(w);
	CHECK(!check(&r, 1, "unk"), "check ran");
	CHECK(only(&r, HISTORY_UNKNOWN, 2), "unknown=%" PRIu64 " of %" PRIu64,
	      r.count[HISTORY_UNKNOWN], r.anomalies);
	CHECK(named(HISTORY_UNKNOWN, 1, 2ull) && named(HISTORY_UNKNOWN, 1, 4ull), "2 and 4");

	opts.initial_max = 2;
	CHECK(!check(&r, 1, "unk"), "check ran");
	opts.initial_max = 0;
	/* y@3 itself is now above the bound too. */
	CHECK(r.count[HISTORY_UNKNOWN] == 3 && named(HISTORY_UNKNOWN, 1, 3ull),
	      "unknown=%" PRIu64 " with --initial-max 2", r.count[HISTORY_UNKNOWN]);
}

static void test_mismatch(void)
{
	struct history_writer *w = wopen("mismatch");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "w0:1@1 d0:2@4");
	rec(w, 2, HISTORY_COMMITTED, "a0:1@1 r0:2@4");
	rec(w, 3, HISTORY_COMMITTED, "r0:1@1 a0:2@4");
	history_close(w);
	CHECK(!check(&r, 1, "mismatch"), "check ran");
	CHECK(only(&r, HISTORY_MISMATCH, 2), "mismatch=%" PRIu64 " of %" PRIu64,
	      r.count[HISTORY_MISMATCH], r.anomalies);
	CHECK(named(HISTORY_MISMATCH, 2, 1ull, 2ull), "1 and 2");
}

/*
 * A read that finds a key absent answers the bucket's version floor, a
 * bound above the key's last version which other keys raise: absent reads
 * at different floors are one state, and the next install orders after them.
 */
static void test_absent_floor(void)
{
	struct history_writer *w = wopen("floor");
	struct history_check_report r;

	rec(w, 1, HISTORY_COMMITTED, "a0:1@3");
	rec(w, 2, HISTORY_COMMITTED, "a0:1@9 w0:2@1");
	rec(w, 3, HISTORY_COMMITTED, "w0:1@10");
	rec(w, 4, HISTORY_COMMITTED, "r0:1@10 d0:1@11");
	rec(w, 5, HISTORY_COMMITTED, "a0:1@17");
	/* 2 wrote 0:2 at 1 and nobody deleted it: 6 cannot have found it absent */
	rec(w, 6, HISTORY_COMMITTED, "a0:2@5 w0:3@1");
	history_close(w);
	CHECK(!check(&r, 1, "floor"), "check ran");
	CHECK(only(&r, HISTORY_MISMATCH, 1), "one mismatch (6 read 0:2 absent above its value), "
	      "%" PRIu64 " anomalies", r.anomalies);
	CHECK(named(HISTORY_MISMATCH, 2, 2ull, 6ull), "2 and 6");
}

static void test_final_state(void)
{
	struct history_writer *w = wopen("final");
	struct history_check_report r;
	FILE *f = fopen(pathof("final.txt"), "w");

	rec(w, 1, HISTORY_COMMITTED, "w0:1@1 w0:3@1");
	rec(w, 2, HISTORY_COMMITTED, "r0:1@1 w0:1@2");
	rec(w, 3, HISTORY_COMMITTED, "d0:2@3");
	rec(w, 4, HISTORY_COMMITTED, "w0:4@1");
	rec(w, 5, HISTORY_IN_DOUBT, "w0:5@7");
	history_close(w);
	fprintf(f, "# table key version\n0 1 1\n0 3 1\n0 5 7\n0 99 1\n");
	fclose(f);
	opts.final_state = pathof("final.txt");
	CHECK(!check(&r, 1, "final"), "check ran");
	CHECK(only(&r, HISTORY_LOST, 2), "lost=%" PRIu64 " of %" PRIu64, r.count[HISTORY_LOST],
	      r.anomalies);
	CHECK(named(HISTORY_LOST, 1, 2ull), "2's write is older than the final state");
	CHECK(named(HISTORY_LOST, 1, 4ull), "4's key is missing");
	CHECK(r.in_doubt_included == 1, "the final state includes in-doubt 5");

	f = fopen(pathof("final.txt"), "w");
	fprintf(f, "0 1 x\n");
	fclose(f);
	CHECK(check(&r, 1, "final") == -EINVAL, "a bad final-state line is an error");
	opts.final_state = NULL;
}

static void write_raw(const char *name, const void *p, size_t n)
{
	int fd = open(pathof(name), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		printf("# cannot write %s\n", name);
	close(fd);
}

static void test_bad_files(void)
{
	struct history_writer *w = wopen("good");
	struct history_check_report r;
	struct history_file_hdr h = { .magic = HISTORY_MAGIC, .format = HISTORY_FORMAT,
				      .hdr_len = sizeof(h) };
	uint8_t buf[256];
	size_t len;
	int fd;

	rec(w, 1, HISTORY_COMMITTED, "w0:1@1 w0:2@1");
	rec(w, 2, HISTORY_COMMITTED, "r0:1@1");
	history_close(w);
	fd = open(pathof("good"), O_RDONLY);
	len = (size_t)read(fd, buf, sizeof(buf));
	close(fd);
	CHECK(len == 32 + 16 + 48 + 16 + 24, "file is %zu bytes", len);

	CHECK(check(&r, 1, "missing") == -ENOENT, "missing file");
	write_raw("empty", buf, 0);
	CHECK(check(&r, 1, "empty") == -EBADMSG, "empty file");
	write_raw("short", buf, 20);
	CHECK(check(&r, 1, "short") == -EBADMSG, "short header");
	buf[0] ^= 1;
	write_raw("magic", buf, len);
	buf[0] ^= 1;
	CHECK(check(&r, 1, "magic") == -EBADMSG, "bad magic");
	h.format = 99;
	memcpy(buf, &h, sizeof(h));
	write_raw("format", buf, len);
	h.format = HISTORY_FORMAT;
	memcpy(buf, &h, sizeof(h));
	CHECK(check(&r, 1, "format") == -EBADMSG, "unknown format");
	write_raw("torn", buf, len - 5);
	CHECK(check(&r, 1, "torn") == -ENODATA, "truncated op");
	write_raw("torn2", buf, 32 + 16 + 48 + 8);
	CHECK(check(&r, 1, "torn2") == -ENODATA, "truncated record header");
	buf[32 + 12] = 9;	/* first record's outcome */
	write_raw("outcome", buf, len);
	buf[32 + 12] = HISTORY_COMMITTED;
	CHECK(check(&r, 1, "outcome") == -EBADMSG, "bad outcome");
	buf[32 + 16 + 17] = 0x80;	/* first op's flags */
	write_raw("flags", buf, len);
	buf[32 + 16 + 17] = HISTORY_OP_WRITE;
	CHECK(check(&r, 1, "flags") == -EBADMSG, "bad op flags");
	buf[32 + 8] = 0xff;	/* nops low byte: 255 ops, far past the end */
	write_raw("nops", buf, len);
	CHECK(check(&r, 1, "nops") == -ENODATA, "nops past the end");
	/* One bad file among good ones fails the whole check. */
	CHECK(check(&r, 2, "good", "torn") == -ENODATA, "good + torn");
	CHECK(!check(&r, 1, "good") && r.txns == 2, "the good one still checks");
}

static void test_writer(void)
{
	const char *path = pathof("writer");
	struct history_writer *w = history_open(path, 42, 4096);
	const struct history_rec_hdr *rec_;
	struct history_file f;
	char err[256], *dump = NULL;
	size_t off = 0, dlen = 0;
	uint64_t i, bad = 0;
	FILE *m;

	CHECK(w != NULL, "open");
	if (!w)
		return;
	CHECK(history_end(w, HISTORY_COMMITTED) == -EINVAL, "end without begin");
	CHECK(history_read(w, 0, 1, 1, 0) == -EINVAL, "op without begin");
	/* Small buffer: records straddle flushes, one is bigger than the buffer. */
	for (i = 1; i <= 3000; i++) {
		uint32_t n = i == 1500 ? 1000 : (uint32_t)(i % 7), j;
		int err_ = history_begin(w, i);

		CHECK(history_begin(w, i) == -EINVAL, "nested begin");
		for (j = 0; j < n && !err_; j++)
			err_ = j % 2 ? history_write(w, (uint8_t)j, i, i + j, j % 3 == 0) :
				       history_read(w, (uint8_t)j, i, j, j % 4 == 0);
		if (!err_)
			err_ = history_end(w, (enum history_outcome)(1 + i % 4));
		if (err_)
			bad++;
	}
	CHECK(!bad, "%" PRIu64 " records failed", bad);
	CHECK(history_count(w) == 3000, "count");
	history_begin(w, 9999);
	history_read(w, 0, 1, 1, 0);
	CHECK(!history_close(w), "close drops the open record");

	CHECK(!history_file_open(&f, path, err, sizeof(err)), "%s", err);
	CHECK(f.ntxns == 3000 && f.hdr.client == 42, "%" PRIu64 " txns", f.ntxns);
	for (i = 1; (rec_ = history_file_next(&f, &off)); i++) {
		const struct history_op *op = history_rec_ops(rec_);
		uint32_t n = i == 1500 ? 1000 : (uint32_t)(i % 7), j;

		if (rec_->txn != i || rec_->nops != n || rec_->outcome != 1 + i % 4) {
			bad++;
			continue;
		}
		for (j = 0; j < n; j++) {
			uint8_t fl = j % 2 ? HISTORY_OP_WRITE |
						     (j % 3 == 0 ? HISTORY_OP_ABSENT : 0) :
					     (j % 4 == 0 ? HISTORY_OP_ABSENT : 0);

			if (op[j].key != i || op[j].table != (uint8_t)j || op[j].flags != fl ||
			    op[j].version != (j % 2 ? i + j : j))
				bad++;
		}
	}
	CHECK(i == 3001 && !bad, "read back %" PRIu64 " records, %" PRIu64 " wrong", i - 1, bad);
	history_file_close(&f);

	m = open_memstream(&dump, &dlen);
	CHECK(!history_dump(m, path), "dump");
	fclose(m);
	CHECK(dump && strstr(dump, "\ntxn 3 in-doubt r- 0:3@0 w 1:3@4 r 2:3@2\n"),
	      "dump line for txn 3");
	free(dump);
}

/* The command line: exit status 0 clean, 1 anomalies, 2 errors; the summary line. */
static void test_cli(void)
{
	char *a_clean[] = { "check-history", "-q", (char *)pathof("serial"), NULL };
	char *a_skew[] = { "check-history", "--json", (char *)pathof("skew"), NULL };
	char *a_torn[] = { "check-history", (char *)pathof("torn"), NULL };
	char *a_none[] = { "check-history", NULL };
	char *a_bad[] = { "check-history", "--max-print", "-3", (char *)pathof("serial"), NULL };
	char *a_dump[] = { "check-history", "--dump", (char *)pathof("skew"), NULL };

	fflush(stdout);
	CHECK(history_check_main(3, a_clean) == 0, "serial history exits 0");
	CHECK(history_check_main(3, a_skew) == 1, "write skew exits 1");
	CHECK(history_check_main(2, a_torn) == 2, "torn file exits 2");
	CHECK(history_check_main(1, a_none) == 2, "no file exits 2");
	CHECK(history_check_main(4, a_bad) == 2, "negative --max-print exits 2");
	CHECK(history_check_main(3, a_dump) == 0, "dump exits 0");
	fflush(stdout);
}

/* ---- a large serial history from a model ---- */

#define NKEYS		100000
#define NHOT		1000

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

struct model {
	uint64_t ver[NKEYS];
	uint64_t lastw[NKEYS];	/* installer of the current version */
	/*
	 * Versions in-doubt attempts that did not happen recorded: later ones
	 * go above, since two in-doubt transactions sharing an observed
	 * version are a duplicate the checker cannot tell from a real one.
	 */
	uint64_t floor[NKEYS];
	uint8_t absent[NKEYS];
	uint8_t doubt[NKEYS];	/* the current version's installer was in doubt */
};

static enum history_outcome cur_out;

enum { F_DUP = 1, F_G2 = 2, F_G1A = 3, F_UNK = 4 };

static uint32_t pick_key(void)
{
	return (uint32_t)(rnd() % 2 ? rnd() % NHOT : rnd() % NKEYS);
}

static void op_read(struct history_writer *w, struct model *m, uint32_t k)
{
	history_read(w, (uint8_t)(k & 1), k >> 1, m->ver[k], m->absent[k]);
}

static void op_write(struct history_writer *w, struct model *m, uint64_t id, uint32_t k,
		     bool apply, bool del)
{
	uint64_t v = (m->ver[k] > m->floor[k] ? m->ver[k] : m->floor[k]) + 1 + rnd() % 3;

	history_write(w, (uint8_t)(k & 1), k >> 1, v, del);
	if (apply) {
		m->ver[k] = v;
		m->absent[k] = del;
		m->lastw[k] = id;
		m->doubt[k] = cur_out == HISTORY_IN_DOUBT;
	} else if (cur_out == HISTORY_IN_DOUBT) {
		m->floor[k] = v;
	}
}

/*
 * Executes random transactions one at a time against the model, so the
 * history is serial by construction, spread over several files like
 * client threads.  With inject, four transactions break it on purpose;
 * their ids go to fault_ids[kind] (and the partner's to partner[kind]).
 */
static void gen_serial(uint64_t ntx, int nfiles, bool inject, uint64_t *fault_ids,
		       uint64_t *partner)
{
	struct model *m = calloc(1, sizeof(*m));
	struct history_writer *w[8];
	uint64_t i, id = 0;
	int f;

	rng_state = 0x9e3779b97f4a7c15ull;
	for (f = 0; f < nfiles; f++) {
		char name[32];

		snprintf(name, sizeof(name), "big.%d", f);
		w[f] = wopen(name);
	}
	for (i = 0; i < NKEYS; i++)
		m->absent[i] = 1;
	for (i = 0; i < ntx; i++) {
		struct history_writer *h = w[i % (uint64_t)nfiles];
		uint64_t r = rnd() % 100, fault = 0;
		enum history_outcome out = HISTORY_COMMITTED;
		bool apply = true;
		unsigned int n = 2 + (unsigned int)(rnd() % 15), j;

		id++;
		if (inject && i == ntx / 5 * 1)
			fault = F_DUP;
		else if (inject && i == ntx / 5 * 2)
			fault = F_G2;
		else if (inject && i == ntx / 5 * 3)
			fault = F_G1A;
		else if (inject && i == ntx / 5 * 4)
			fault = F_UNK;
		if (fault == F_DUP) {
			/* Installs the version it read again: someone's update is lost. */
			uint32_t k = (uint32_t)(rnd() % NHOT), tries = 0;

			/* A committed installer, so the dup is not explained away as in doubt. */
			while ((m->absent[k] || !m->lastw[k] || m->doubt[k]) && tries++ < NHOT)
				k = (k + 1) % NHOT;
			partner[F_DUP] = m->lastw[k];
			fault_ids[F_DUP] = id;
			history_begin(h, id);
			op_read(h, m, k);
			history_write(h, (uint8_t)(k & 1), k >> 1, m->ver[k], 0);
			history_end(h, HISTORY_COMMITTED);
			continue;
		}
		if (fault == F_G2) {
			/* W writes a and b; R sees W's b but the a before W's: a stale read. */
			uint32_t a = 3, b = 5, c = 7;
			uint64_t a_old = m->ver[a];
			uint8_t a_old_absent = m->absent[a];

			partner[F_G2] = id;
			cur_out = HISTORY_COMMITTED;
			history_begin(h, id);
			op_write(h, m, id, a, true, false);
			op_write(h, m, id, b, true, false);
			history_end(h, HISTORY_COMMITTED);
			id++;
			fault_ids[F_G2] = id;
			history_begin(h, id);
			op_read(h, m, b);
			history_read(h, (uint8_t)(a & 1), a >> 1, a_old, a_old_absent);
			op_write(h, m, id, c, true, false);
			history_end(h, HISTORY_COMMITTED);
			continue;
		}
		if (fault == F_G1A) {
			/* An aborted write's version shows up in a committed read. */
			uint32_t d = 11;

			partner[F_G1A] = id;
			history_begin(h, id);
			history_write(h, (uint8_t)(d & 1), d >> 1, m->ver[d] + 1000000, 0);
			history_end(h, HISTORY_ABORTED);
			id++;
			fault_ids[F_G1A] = id;
			history_begin(h, id);
			history_read(h, (uint8_t)(d & 1), d >> 1, m->ver[d] + 1000000, 0);
			history_end(h, HISTORY_COMMITTED);
			continue;
		}
		if (fault == F_UNK) {
			uint32_t e = 13;

			fault_ids[F_UNK] = id;
			history_begin(h, id);
			history_read(h, (uint8_t)(e & 1), e >> 1, m->ver[e] + 500000, 0);
			history_end(h, HISTORY_COMMITTED);
			continue;
		}
		if (r < 5) {
			out = HISTORY_ABORTED;
			apply = false;
		} else if (r < 6) {
			out = HISTORY_FAILED;
			apply = false;
		} else if (r < 8) {
			/* In doubt, and half of those really committed. */
			out = HISTORY_IN_DOUBT;
			apply = r == 6;
		}
		cur_out = out;
		history_begin(h, id);
		for (j = 0; j < n; j++) {
			uint32_t k = pick_key();

			if (rnd() % 2)
				op_read(h, m, k);
			else
				op_write(h, m, id, k, apply, !m->absent[k] && rnd() % 10 == 0);
		}
		history_end(h, out);
	}
	for (f = 0; f < nfiles; f++)
		if (history_close(w[f]))
			printf("# close big.%d failed\n", f);
	free(m);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t big_ntx(void)
{
	const char *s = getenv("HISTORY_TEST_TXNS");

	return s ? strtoull(s, NULL, 0) : 1000000;
}

static void test_large_serial(void)
{
	uint64_t ids[5], partner[5], ntx = big_ntx();
	struct history_check_report r;
	double t0, t1;

	t0 = now();
	gen_serial(ntx, 4, false, ids, partner);
	t1 = now();
	CHECK(!check(&r, 4, "big.0", "big.1", "big.2", "big.3"), "check ran");
	printf("# %" PRIu64 " txns (%" PRIu64 " ops, %" PRIu64 " keys, %" PRIu64
	       " edges): generated in %.2f s, checked in %.2f s\n",
	       r.txns, r.ops, r.keys, r.edges, t1 - t0, now() - t1);
	CHECK(r.txns == ntx, "%" PRIu64 " txns", r.txns);
	CHECK(r.anomalies == 0, "%" PRIu64 " anomalies", r.anomalies);
	CHECK(r.in_doubt_included > 0 && r.in_doubt_included < r.in_doubt,
	      "%" PRIu64 " of %" PRIu64 " in-doubt included", r.in_doubt_included, r.in_doubt);
	CHECK(r.edges > r.txns, "%" PRIu64 " edges", r.edges);
}

static void test_large_faults(void)
{
	uint64_t ids[5] = { 0 }, partner[5] = { 0 }, ntx = big_ntx();
	struct history_check_report r;
	double t1;

	gen_serial(ntx, 4, true, ids, partner);
	t1 = now();
	CHECK(!check(&r, 4, "big.0", "big.1", "big.2", "big.3"), "check ran");
	printf("# %" PRIu64 " txns with 4 faults: checked in %.2f s\n", r.txns, now() - t1);
	CHECK(r.anomalies == 4, "%" PRIu64 " anomalies", r.anomalies);
	CHECK(named(HISTORY_DUP, 2, partner[F_DUP], ids[F_DUP]), "dup names %" PRIu64
	      " and %" PRIu64, partner[F_DUP], ids[F_DUP]);
	CHECK(named(HISTORY_G2, 2, partner[F_G2], ids[F_G2]), "G2 names %" PRIu64 " and %" PRIu64,
	      partner[F_G2], ids[F_G2]);
	CHECK(named(HISTORY_G1A, 2, partner[F_G1A], ids[F_G1A]), "G1a");
	CHECK(named(HISTORY_UNKNOWN, 1, ids[F_UNK]), "unknown");
}

int main(void)
{
	char cmd[96];

	snprintf(dir, sizeof(dir), "/tmp/xtx-history.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	RUN_CASE(test_writer);
	RUN_CASE(test_serial);
	RUN_CASE(test_g0);
	RUN_CASE(test_g1a);
	RUN_CASE(test_g1b);
	RUN_CASE(test_g1c);
	RUN_CASE(test_g2_write_skew);
	RUN_CASE(test_g2_longer_cycle);
	RUN_CASE(test_lost_update);
	RUN_CASE(test_aborted_ignored);
	RUN_CASE(test_in_doubt);
	RUN_CASE(test_merge);
	RUN_CASE(test_unknown_and_initial);
	RUN_CASE(test_mismatch);
	RUN_CASE(test_absent_floor);
	RUN_CASE(test_final_state);
	RUN_CASE(test_bad_files);
	RUN_CASE(test_cli);
	RUN_CASE(test_large_serial);
	RUN_CASE(test_large_faults);
	/* HISTORY_TEST_KEEP=1 leaves the files for xtx-history-check to be tried on. */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (getenv("HISTORY_TEST_KEEP"))
		printf("# files kept in %s\n", dir);
	else if (system(cmd))
		printf("# cannot remove %s\n", dir);
	printf("# test_history: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
