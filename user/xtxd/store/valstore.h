/* SPDX-License-Identifier: GPL-2.0-only */
/* The copies of big values XDP answers reads from (XTX_MAP_BIGVAL, include/xtx/kv.h). */
#ifndef XTXD_VALSTORE_H
#define XTXD_VALSTORE_H

#include <stdint.h>

struct xtxd_ovf_item;

/*
 * The overflow store calls these with the key's kernel bucket locked
 * (store/overflow.c says in which order); fd < 0 is a server without a
 * value store, where they do nothing.  A value store that cannot take a
 * copy must not keep an older one: put falls back to removing the key,
 * and only when that fails too does it return an error (the caller then
 * leaves the overflow store unchanged, so the two still agree).
 */
int xtxd_valstore_put(int fd, const struct xtxd_ovf_item *it);
int xtxd_valstore_del(int fd, uint8_t table, uint64_t key);
/* Empties it: the overflow store it copied is gone (a new xtxd rebuilds it). */
int xtxd_valstore_clear(int fd);

#endif /* XTXD_VALSTORE_H */
