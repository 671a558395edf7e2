/* SPDX-License-Identifier: GPL-2.0-only */
/* Leveled logging for the xtx tools: pr_warn/pr_info/pr_debug with -v. */
#ifndef XTX_LOG_H
#define XTX_LOG_H

#include <stdarg.h>
#include <stdio.h>

enum xtx_log_level { XTX_LOG_WARN, XTX_LOG_INFO, XTX_LOG_DEBUG };

extern int xtx_log_level;

void xtx_log_to(FILE *f);
void xtx_vlog(enum xtx_log_level lvl, const char *fmt, va_list ap);
void xtx_log(enum xtx_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Routes libbpf's messages one level quieter than ours. */
void xtx_log_libbpf(void);

#define pr_warn(...) xtx_log(XTX_LOG_WARN, __VA_ARGS__)
#define pr_info(...) xtx_log(XTX_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) xtx_log(XTX_LOG_DEBUG, __VA_ARGS__)

#endif /* XTX_LOG_H */
