/* SPDX-License-Identifier: GPL-2.0-only */
/* Replacing a small file whole, so that a crash leaves the old one or the new one. */
#ifndef XTX_DURABLE_H
#define XTX_DURABLE_H

#include <sys/uio.h>

/*
 * Writes iov[0..n) to NAME.new in dirfd, syncs it, renames it over NAME
 * and syncs the directory; on failure NAME is untouched and NAME.new
 * removed.  0 or a negative errno.
 */
int xtx_replace_file(int dirfd, const char *name, const struct iovec *iov, int n);

#endif /* XTX_DURABLE_H */
