// SPDX-License-Identifier: GPL-2.0-only
/*
 * The decisions file (user/xtxd/log/decisions.h) when the disk misbehaves:
 * a record damaged before the last is refused, not a silent end of the
 * file; a torn last record is cut before the next append; a failed
 * fdatasync poisons the file for good (fdatasync is this file's own, so it
 * can fail on demand).
 */
/* checks: 3 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "check.h"
#include "log/decisions.h"

static int fail_syncs;		/* fdatasync calls left to fail */

int fdatasync(int fd)
{
	if (fail_syncs) {
		fail_syncs--;
		errno = EIO;
		return -1;
	}
	return (int)syscall(SYS_fdatasync, fd);
}

struct seen {
	uint64_t txn[16];
	uint32_t outcome[16];
	unsigned int n;
};

static int note(uint64_t txn, uint32_t outcome, void *arg)
{
	struct seen *s = arg;

	if (s->n < 16) {
		s->txn[s->n] = txn;
		s->outcome[s->n] = outcome;
	}
	s->n++;
	return 0;
}

static int fresh_dir(char *dir)
{
	strcpy(dir, "/tmp/xtx-decided.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return open(dir, O_RDONLY | O_DIRECTORY);
}

static void cleanup_dir(const char *dir, int dirfd)
{
	unlinkat(dirfd, XTXD_OUTCOME_FILE, 0);
	close(dirfd);
	rmdir(dir);
}

static void test_damaged_before_last(void)
{
	char dir[32];
	int dirfd = fresh_dir(dir), fd, err;
	struct seen s = {};
	uint64_t t;

	fd = xtxd_outcome_open(dirfd);
	for (t = 1; t <= 3; t++)
		CHECK(!xtxd_outcome_append(fd, t, t == 2 ? 2 : 1), "append %llu",
		      (unsigned long long)t);
	close(fd);
	/* record 1 of 3 damaged: 2 and 3 follow it */
	fd = openat(dirfd, XTXD_OUTCOME_FILE, O_WRONLY);
	CHECK(pwrite(fd, "\x5a", 1, 16 + 3) == 1, "damaging record 1");
	close(fd);
	err = xtxd_outcome_load(dirfd, note, &s);
	CHECK(err == -EBADMSG, "a damaged record before the last: -EBADMSG, not %d after %u "
	      "decisions (the abort of txn 2 would be lost)", err, s.n);
	CHECK(xtxd_outcome_open(dirfd) == -EBADMSG, "... and it is not opened for appending");
	cleanup_dir(dir, dirfd);
}

static void test_torn_last_cut(void)
{
	char dir[32];
	int dirfd = fresh_dir(dir), fd;
	struct seen s = {};
	struct stat st;

	fd = xtxd_outcome_open(dirfd);
	CHECK(!xtxd_outcome_append(fd, 10, 1) && !xtxd_outcome_append(fd, 11, 2), "two appended");
	/* a crash mid-append: half a record */
	CHECK(write(fd, "\1\2\3\4\5\6\7\10", 8) == 8, "a torn record");
	close(fd);
	CHECK(!xtxd_outcome_load(dirfd, note, &s) && s.n == 2, "a torn last record is skipped "
	      "(%u decisions)", s.n);
	fd = xtxd_outcome_open(dirfd);
	CHECK(fd >= 0 && !fstat(fd, &st) && st.st_size == 32, "opening cuts it (%lld bytes)",
	      (long long)st.st_size);
	CHECK(!xtxd_outcome_append(fd, 12, 1), "the next append");
	close(fd);
	memset(&s, 0, sizeof(s));
	CHECK(!xtxd_outcome_load(dirfd, note, &s) && s.n == 3 && s.txn[2] == 12 &&
	      s.outcome[1] == 2, "... follows the good records (%u decisions)", s.n);
	cleanup_dir(dir, dirfd);
}

static void test_failed_sync_poisons(void)
{
	char dir[32];
	int dirfd = fresh_dir(dir), fd, err;

	fd = xtxd_outcome_open(dirfd);
	CHECK(!xtxd_outcome_append(fd, 20, 1), "an append");
	fail_syncs = 1;
	err = xtxd_outcome_append(fd, 21, 2);
	CHECK(err == -EIO, "its fdatasync fails: %d", err);
	/* the kernel may have dropped the record's page: a later sync proves nothing */
	err = xtxd_outcome_append(fd, 21, 2);
	CHECK(err == -EIO, "the decision is not tried again on the same file: %d", err);
	CHECK(!fail_syncs, "(the fault was used)");
	close(fd);
	cleanup_dir(dir, dirfd);
}

int main(void)
{
	RUN_CASE(test_damaged_before_last);
	RUN_CASE(test_torn_last_cut);
	/* last: the poison lasts for the process, as it should */
	RUN_CASE(test_failed_sync_poisons);
	printf("# test_decisions: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
