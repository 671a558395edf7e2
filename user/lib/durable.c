// SPDX-License-Identifier: GPL-2.0-only
/* Replacing a small file whole (durable.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include "durable.h"

int xtx_replace_file(int dirfd, const char *name, const struct iovec *iov, int n)
{
	char tmp[NAME_MAX + 1];
	ssize_t want = 0;
	int fd, i, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.new", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (i = 0; i < n; i++)
		want += (ssize_t)iov[i].iov_len;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (writev(fd, iov, n) != want)
		err = -EIO;
	if (!err && fdatasync(fd))
		err = -errno;
	close(fd);
	if (!err && renameat(dirfd, tmp, dirfd, name))
		err = -errno;
	if (!err && fsync(dirfd))
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}
