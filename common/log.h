/* SPDX-License-Identifier: GPL-2.0-only */
/* Leveled logging for the xtx tools: pr_warn/pr_info/pr_debug with -v. */
#ifndef XTX_LOG_H
#define XTX_LOG_H

#include <stdarg.h>
#include <stdio.h>

enum xtx_log_level { XTX_LOG_WARN, XTX_LOG_INFO, XTX_LOG_DEBUG };

extern int xtx_log_level;

void xtx_log_to(FILE *f);
/* A daemon's log file: lines stamped (UTC) and leveled; path for xtx_log_reopen(). */
void xtx_log_to_path(FILE *f, const char *path);
/*
 * Opens the log file's path again onto the same descriptor (after logrotate
 * moved it: SIGHUP); safe in a signal handler.  0 or a negative errno.
 */
int xtx_log_reopen(void);
void xtx_vlog(enum xtx_log_level lvl, const char *fmt, va_list ap);
void xtx_log(enum xtx_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Routes libbpf's messages one level quieter than ours. */
void xtx_log_libbpf(void);
/*
 * While on, libbpf's and libxdp's warnings are debug (-vv): around an attempt
 * whose failure is expected and reported in our own words.
 */
void xtx_log_libs_quiet(int on);
/* The level of a library's message: info for its warnings (unless quiet), else debug. */
enum xtx_log_level xtx_log_lib_level(int warning);

#define pr_warn(...) xtx_log(XTX_LOG_WARN, __VA_ARGS__)
#define pr_info(...) xtx_log(XTX_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) xtx_log(XTX_LOG_DEBUG, __VA_ARGS__)

#endif /* XTX_LOG_H */
