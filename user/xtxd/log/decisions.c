// SPDX-License-Identifier: GPL-2.0-only
/* Appends and reads the decisions file (decisions.h). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "durable.h"
#include "logfile.h"
#include "decisions.h"

int xtxd_outcome_open(int dirfd)
{
	int fd = openat(dirfd, XTXD_OUTCOME_FILE, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	return fd < 0 ? -errno : fd;
}

int xtxd_outcome_append(int fd, uint64_t txn, uint32_t outcome)
{
	struct xtxd_outcome_rec r = { .txn = txn, .outcome = outcome };
	ssize_t n;

	r.crc = xtx_crc32c(0, &r, offsetof(struct xtxd_outcome_rec, crc));
	n = write(fd, &r, sizeof(r));
	if (n != sizeof(r))
		return n < 0 ? -errno : -EIO;
	return fdatasync(fd) ? -errno : 0;
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
	int fd, err = 0;
	FILE *f;

	fd = openat(dirfd, XTXD_OUTCOME_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -errno;
	}
	/* a short or damaged last record: the decision was never synced, nobody acted on it */
	while (!err && fread(&r, sizeof(r), 1, f) == 1 &&
	       xtx_crc32c(0, &r, offsetof(struct xtxd_outcome_rec, crc)) == r.crc)
		err = fn(r.txn, r.outcome, arg);
	fclose(f);
	return err;
}
