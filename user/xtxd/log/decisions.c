// SPDX-License-Identifier: GPL-2.0-only
/* Appends and reads the decisions file (decisions.h). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdbool.h>
#include <sys/stat.h>
#include "durable.h"
#include "logfile.h"
#include "decisions.h"

/* A sync of the file failed: nothing more is appended (fail-stop). */
static int sync_failed;

static bool rec_ok(const struct xtxd_outcome_rec *r)
{
	return xtx_crc32c(0, r, offsetof(struct xtxd_outcome_rec, crc)) == r->crc;
}

/*
 * The length of the file's good part: every whole record when they all
 * check, else (a torn last record) the records before it.  -EBADMSG when
 * one before the last is damaged.
 */
static off_t good_length(int fd)
{
	struct xtxd_outcome_rec r;
	struct stat st;
	off_t whole, off;

	if (fstat(fd, &st))
		return -errno;
	whole = st.st_size / (off_t)sizeof(r) * (off_t)sizeof(r);
	for (off = 0; off < whole; off += (off_t)sizeof(r)) {
		if (pread(fd, &r, sizeof(r), off) != sizeof(r))
			return -EIO;
		if (rec_ok(&r))
			continue;
		return off + (off_t)sizeof(r) == st.st_size || off + (off_t)sizeof(r) == whole ?
		       off : -EBADMSG;
	}
	return whole;
}

int xtxd_outcome_open(int dirfd)
{
	int fd = openat(dirfd, XTXD_OUTCOME_FILE, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	struct stat st;
	off_t good;

	if (fd < 0)
		return -errno;
	good = good_length(fd);
	if (good < 0 || fstat(fd, &st)) {
		int err = good < 0 ? (int)good : -errno;

		close(fd);
		return err;
	}
	/* a torn last record, never synced: cut, or the next would follow garbage */
	if (good < st.st_size && (ftruncate(fd, good) || fdatasync(fd))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int xtxd_outcome_append(int fd, uint64_t txn, uint32_t outcome)
{
	struct xtxd_outcome_rec r = { .txn = txn, .outcome = outcome };
	ssize_t n;

	if (sync_failed)
		return -EIO;
	r.crc = xtx_crc32c(0, &r, offsetof(struct xtxd_outcome_rec, crc));
	n = write(fd, &r, sizeof(r));
	if (n != sizeof(r))
		return n < 0 ? -errno : -EIO;
	if (fdatasync(fd)) {
		sync_failed = errno ? errno : EIO;
		return -sync_failed;
	}
	return 0;
}

int xtxd_outcome_rewrite(int dirfd, const struct xtxd_outcome_rec *recs, size_t n)
{
	struct xtxd_outcome_rec *out = malloc((n ? n : 1) * sizeof(*out));
	struct iovec iov;
	size_t i;
	int err;

	if (!out)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		out[i] = recs[i];
		out[i].crc = xtx_crc32c(0, &out[i], offsetof(struct xtxd_outcome_rec, crc));
	}
	iov = (struct iovec){ out, n * sizeof(*out) };
	err = xtx_replace_file(dirfd, XTXD_OUTCOME_FILE, &iov, 1);
	free(out);
	return err;
}

int xtxd_outcome_load(int dirfd, int (*fn)(uint64_t txn, uint32_t outcome, void *arg),
		      void *arg)
{
	struct xtxd_outcome_rec r;
	uint64_t i = 0;
	off_t good;
	int fd, err = 0;
	FILE *f;

	fd = openat(dirfd, XTXD_OUTCOME_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/*
	 * a short or damaged last record: the decision was never synced,
	 * nobody acted on it; one before the last is damage, and stopping
	 * there would lose every decision after it (an abort replayed)
	 */
	good = good_length(fd);
	if (good < 0) {
		if (good == -EBADMSG)
			fprintf(stderr, "Error: %s: a record before its last fails its CRC: the "
				"decisions file is damaged\n", XTXD_OUTCOME_FILE);
		close(fd);
		return (int)good;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -errno;
	}
	for (i = 0; !err && (off_t)((i + 1) * sizeof(r)) <= good; i++) {
		if (fread(&r, sizeof(r), 1, f) != 1) {
			err = -EIO;
			break;
		}
		err = fn(r.txn, r.outcome, arg);
	}
	fclose(f);
	return err;
}
