// SPDX-License-Identifier: GPL-2.0-only
/* Background start for the servers: fork, readiness reported to the parent, pidfile. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "daemon.h"
#include "log.h"

int xtx_daemonize(const char *logfile, int *ready_fd)
{
	int pipefd[2], fd;
	char status = 1;
	pid_t pid;

	if (pipe(pipefd)) {
		fprintf(stderr, "Error: pipe: %s\n", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "Error: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid > 0) {
		close(pipefd[1]);
		if (read(pipefd[0], &status, 1) != 1)
			status = 1;
		exit(status ? 1 : 0);
	}
	close(pipefd[0]);
	setsid();
	if (logfile) {
		fd = open(logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "Error: log file %s: %s\n", logfile, strerror(errno));
			exit(1);
		}
		xtx_log_to_path(fdopen(fd, "a"), logfile);
	}
	*ready_fd = pipefd[1];
	return 0;
}

void xtx_daemon_ready(int *ready_fd, char status)
{
	int null;

	if (*ready_fd < 0)
		return;
	if (write(*ready_fd, &status, 1) != 1)
		pr_warn("cannot report readiness to the parent\n");
	close(*ready_fd);
	*ready_fd = -1;
	if (status)
		return;
	/* detach from the caller's terminal and pipes only once all went well */
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
}

int xtx_write_pidfile(const char *path)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		fprintf(stderr, "Error: pidfile %s: path too long\n", path);
		return -1;
	}
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "Error: writing pidfile %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int xtx_sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n;
	int fd, err = 0;

	if (!path || !*path)
		return 0;
	/* "@name" is an abstract socket: a leading NUL in sun_path */
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0)
		err = -errno;
	close(fd);
	return err;
}
