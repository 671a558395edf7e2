/* SPDX-License-Identifier: GPL-2.0-only */
/* Reads a cluster's shared secret (include/xtx/mac.h) from a file, for servers and clients. */
#ifndef XTX_SECRET_H
#define XTX_SECRET_H

#include <xtx/mac.h>

/*
 * PATH holds 32 hex digits (128 bits), optionally followed by a newline.
 * 0, or -EINVAL / -errno after printing "Error: ..." (unreadable, malformed,
 * or readable by others than its owner: a secret everyone can read is none).
 */
int xtx_secret_read(const char *path, struct xtx_secret *s);

#endif /* XTX_SECRET_H */
