/* SPDX-License-Identifier: GPL-2.0-only */
/* The client allowlist in the pinned maps: parse CIDRs, add, delete, list, switch on and off. */
#ifndef XTX_ALLOW_H
#define XTX_ALLOW_H

#include <stdbool.h>
#include <xtx/mac.h>
#include <xtx/maps.h>
#include "target.h"

/* "10.0.0.0/8" or "10.1.2.3" (a /32) -> k; 0 or -EINVAL after saying why. */
int xtx_allow_parse(const char *cidr, struct xtx_allow_key *k);
/* "a.b.c.d/n" of k into buf (at least 19 bytes). */
void xtx_allow_format(const struct xtx_allow_key *k, char *buf, size_t len);
/*
 * Adds every prefix of the comma-separated list (replace: after removing
 * the ones there) and switches the allowlist on.  0 or a negative errno.
 */
int xtx_allow_add(const struct xtx_target *t, const char *list, bool replace);
/* Removes one prefix; -ENOENT when it was not listed.  The allowlist stays on. */
int xtx_allow_del(const struct xtx_target *t, const char *cidr);
/* Switches enforcement on or off (the list is kept). */
int xtx_allow_switch(const struct xtx_target *t, bool on);
/* Every listed prefix into keys (at most max); returns how many, or a negative errno. */
int xtx_allow_list(const struct xtx_target *t, struct xtx_allow_key *keys, unsigned int max,
		   bool *on);

/* Requires every request's MAC under secret s from now on (NULL: no secret). */
int xtx_secret_set(const struct xtx_target *t, const struct xtx_secret *s);

#endif /* XTX_ALLOW_H */
