// SPDX-License-Identifier: GPL-2.0-only
/*
 * A failing or hung disk for one process, preloaded (LD_PRELOAD): while the
 * file named by XTX_FAILDISK holds "fail", fdatasync and fsync of files
 * whose path contains XTX_FAILDISK_MATCH (default: every file) fail with
 * EIO; while it holds "hang", they wait until it holds something else.
 * A second word in the file ("fail /var/lib/xtx/ns-dev/") is the match
 * instead, so processes sharing one file can be failed one at a time.
 * The file missing or anything else in it: the real calls.  A test writes
 * the file to inject the fault and removes it to heal the disk.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum mode { REAL, FAIL, HANG };

static enum mode mode_of(int fd)
{
	const char *ctl = getenv("XTX_FAILDISK"), *match = getenv("XTX_FAILDISK_MATCH");
	char buf[512] = "", link[64], path[4096], *word;
	ssize_t n;
	int cfd;

	if (!ctl)
		return REAL;
	cfd = open(ctl, O_RDONLY | O_CLOEXEC);
	if (cfd < 0)
		return REAL;
	n = read(cfd, buf, sizeof(buf) - 1);
	close(cfd);
	if (n <= 0)
		return REAL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	word = strchr(buf, ' ');
	if (word) {
		*word++ = '\0';
		match = word;
	}
	if (match && *match) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, path, sizeof(path) - 1);
		if (n < 0)
			return REAL;
		path[n] = '\0';
		if (!strstr(path, match))
			return REAL;
	}
	if (!strncmp(buf, "fail", 4))
		return FAIL;
	if (!strncmp(buf, "hang", 4))
		return HANG;
	return REAL;
}

static int faulty(int fd)
{
	const struct timespec tick = { 0, 20 * 1000 * 1000 };
	enum mode m;

	while ((m = mode_of(fd)) == HANG)
		nanosleep(&tick, NULL);
	if (m == FAIL) {
		errno = EIO;
		return -1;
	}
	return 0;
}

int fdatasync(int fd)
{
	static int (*real)(int);

	if (faulty(fd))
		return -1;
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	return real(fd);
}

int fsync(int fd)
{
	static int (*real)(int);

	if (faulty(fd))
		return -1;
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	return real(fd);
}
