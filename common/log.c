// SPDX-License-Identifier: GPL-2.0-only
/* Leveled logging with timestamps, to stderr or a daemon's log file. */
#include <stdarg.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "log.h"

int xtx_log_level = XTX_LOG_WARN;
static FILE *log_file;

void xtx_log_to(FILE *f)
{
	log_file = f;
}

void xtx_vlog(enum xtx_log_level lvl, const char *fmt, va_list ap)
{
	FILE *out = log_file ? log_file : stderr;
	struct timespec ts;

	if ((int)lvl > xtx_log_level)
		return;
	if (log_file) {
		clock_gettime(CLOCK_REALTIME, &ts);
		fprintf(out, "%lld.%03ld ", (long long)ts.tv_sec, ts.tv_nsec / 1000000);
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

static int libbpf_print(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	/* libbpf's warnings are our info, its info our debug. */
	xtx_vlog(lvl == LIBBPF_WARN ? XTX_LOG_INFO : XTX_LOG_DEBUG, fmt, ap);
	return 0;
}

void xtx_log_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
