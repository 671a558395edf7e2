// SPDX-License-Identifier: GPL-2.0-only
/* One xtxd per interface: an flock on the interface's pin directory, held while it serves. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "tlock.h"

/* The one lock this process holds (xtxd serves one interface). */
static int lock_fd = -1;
static char lock_path[PATH_MAX];

bool xtx_target_locked_here(const struct xtx_target *t)
{
	return lock_fd >= 0 && !strcmp(lock_path, t->pin_dir);
}

int xtx_target_lock_holder(const struct xtx_target *t)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256];
	struct stat st;
	int pid = 0, p;
	FILE *f;

	if (stat(t->pin_dir, &st))
		return errno == ENOENT ? 0 : -errno;
	f = fopen("/proc/locks", "re");
	if (!f)
		return -errno;
	/* "1: FLOCK  ADVISORY  WRITE 14205 00:27:1203210 0 EOF" */
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "FLOCK") ||
		    sscanf(line, "%*s %*s %*s %*s %d %x:%x:%lu", &p, &maj, &min, &ino) != 4)
			continue;
		if (ino == (unsigned long)st.st_ino && maj == major(st.st_dev) &&
		    min == minor(st.st_dev)) {
			pid = p;
			break;
		}
	}
	fclose(f);
	return pid;
}

static int busy(const struct xtx_target *t, int *holder)
{
	*holder = xtx_target_lock_holder(t);
	if (*holder < 0)
		*holder = 0;
	return -EBUSY;
}

int xtx_target_lock(const struct xtx_target *t, int *holder)
{
	struct stat by_fd, by_path;
	int fd, err, tries;

	*holder = 0;
	if (xtx_target_locked_here(t))
		return 0;
	/*
	 * A stopping xtxd removes the directory while it still holds it: a lock
	 * taken on an open directory that is gone, or replaced, since is no lock
	 * on the path; open it again.
	 */
	for (tries = 0; tries < 100; tries++) {
		err = xtx_mkdirs(t->pin_dir, 0700);
		if (err)
			return err;
		fd = open(t->pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				continue;
			return -errno;
		}
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			err = -errno;
			close(fd);
			return err == -EWOULDBLOCK ? busy(t, holder) : err;
		}
		if (!fstat(fd, &by_fd) && !stat(t->pin_dir, &by_path) &&
		    by_fd.st_ino == by_path.st_ino && by_fd.st_dev == by_path.st_dev) {
			lock_fd = fd;
			snprintf(lock_path, sizeof(lock_path), "%s", t->pin_dir);
			return 0;
		}
		close(fd);
	}
	return busy(t, holder);
}

void xtx_target_unlock(const struct xtx_target *t)
{
	char ns_dir[PATH_MAX];
	char *slash;

	if (!xtx_target_locked_here(t))
		return;
	/* removed before it is let go: whoever locks it next finds it gone and retries */
	rmdir(t->pin_dir);
	snprintf(ns_dir, sizeof(ns_dir), "%s", t->pin_dir);
	slash = strrchr(ns_dir, '/');
	if (slash) {
		*slash = '\0';
		rmdir(ns_dir);
	}
	close(lock_fd);
	lock_fd = -1;
	lock_path[0] = '\0';
}
