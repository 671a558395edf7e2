/* SPDX-License-Identifier: GPL-2.0-only */
/* The release and build every tool reports (--version) and xtxd exports (xtx_build_info). */
#ifndef XTX_COMMON_VERSION_H
#define XTX_COMMON_VERSION_H

/* "0.9.0": the release (the Makefile's XTX_VERSION) */
extern const char xtx_version[];
/* "196f6e6" or "196f6e6-dirty": the commit built, "unknown" outside a git tree */
extern const char xtx_build[];

/* Prints "PROG RELEASE (build COMMIT)" to stdout: what --version shows. */
void xtx_print_version(const char *prog);

#endif /* XTX_COMMON_VERSION_H */
