// SPDX-License-Identifier: GPL-2.0-only
/* Leveled logging with timestamps, to stderr or a daemon's log file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "log.h"

int xtx_log_level = XTX_LOG_WARN;
static FILE *log_file;
/* the file's path and descriptor, for a reopen from a signal handler */
static char log_path[PATH_MAX];
static int log_fd = -1;
/* nonzero: libbpf's and libxdp's warnings are debug, not info (an attempt we expect to fail) */
static volatile int libs_quiet;

static const char *const level_names[] = { "warn", "info", "debug" };

void xtx_log_to(FILE *f)
{
	log_file = f;
	log_fd = f ? fileno(f) : -1;
	log_path[0] = '\0';
}

void xtx_log_to_path(FILE *f, const char *path)
{
	xtx_log_to(f);
	if (f && path)
		snprintf(log_path, sizeof(log_path), "%s", path);
}

int xtx_log_reopen(void)
{
	int fd, err = 0;

	/* only open, dup2 and close: safe in a signal handler */
	if (log_fd < 0 || !log_path[0])
		return 0;
	fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (dup2(fd, log_fd) < 0)
		err = -errno;
	close(fd);
	return err;
}

void xtx_vlog(enum xtx_log_level lvl, const char *fmt, va_list ap)
{
	FILE *out = log_file ? log_file : stderr;
	struct timespec ts;
	char stamp[32];
	struct tm tm;

	if ((int)lvl > xtx_log_level)
		return;
	if (log_file) {
		/* 2026-11-28T19:33:54.123Z info  ...: UTC, sortable, and the level greppable */
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		fprintf(out, "%s.%03ldZ %-5s ", stamp, ts.tv_nsec / 1000000,
			level_names[lvl <= XTX_LOG_DEBUG ? lvl : XTX_LOG_DEBUG]);
	}
	vfprintf(out, fmt, ap);
	fflush(out);
}

void xtx_log(enum xtx_log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xtx_vlog(lvl, fmt, ap);
	va_end(ap);
}

void xtx_log_libs_quiet(int on)
{
	libs_quiet = on;
}

enum xtx_log_level xtx_log_lib_level(int warning)
{
	return warning && !libs_quiet ? XTX_LOG_INFO : XTX_LOG_DEBUG;
}

static int libbpf_print(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	/* libbpf's warnings are our info, its info our debug. */
	xtx_vlog(xtx_log_lib_level(lvl == LIBBPF_WARN), fmt, ap);
	return 0;
}

void xtx_log_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
