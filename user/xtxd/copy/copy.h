/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Re-replication: a server the configuration has copying shards (a "*"
 * replica, common/cluster.h) pulls them whole from their primaries.
 *
 * From the epoch that makes it a copier, the server is in the shards'
 * replica lists: every transaction placed from then on logs and commits
 * there as at any backup.  What it lacks is what was written before.  So
 * it asks each shard's primary over TCP (the xtx port + 1) for a copy; the
 * primary first lets every transaction logged there so far settle (decided
 * and applied, or installed by its coordinator: xtxd_resolve_settle()),
 * since those that began under the old placement do not commit at the
 * copier, then streams the current value of every key of the shards, each
 * read under its bucket's locks.  The copier installs each one only if
 * newer than what it holds (a version never repeats for a key), so copied
 * and live writes meet in either order.  One race is left: a transaction
 * deleting a key the copier does not hold yet leaves nothing behind there
 * but the bucket's floor, so the older copy of the key arriving after it
 * would come back.  The copier keeps every finished delete in its
 * resolver's table while it copies (xtxd_resolve_hold_deletes()), so such
 * a transaction shows unfinished again and is decided and applied once
 * more, and the copy counts as done only when everything logged at the
 * copier has settled too.  Then it says so in ZooKeeper (copy/N), and the
 * manager's next epoch counts it whole (user/xtxd/manager.c).
 */
#ifndef XTXD_COPY_H
#define XTXD_COPY_H

#include <stdbool.h>
#include <stdint.h>
#include <xtx/mac.h>
#include "cluster.h"
#include "target.h"
#include "zk.h"

/*
 * The configuration this server serves (c) and its index in it; false
 * while it serves none (fenced, or between epochs).
 */
typedef bool (*xtxd_copy_config_fn)(struct xtx_cluster *c, unsigned int *self);

/* Serves copies on TCP port + 1; 0 or a negative errno after printing why. */
int xtxd_copy_serve_start(uint16_t port, xtxd_copy_config_fn config);
void xtxd_copy_serve_stop(void);
/*
 * The cluster's secret (NULL: none), which seals requests and the copy
 * streamed (copy_wire.h).  Before the first copy either way.
 */
void xtxd_copy_set_secret(const struct xtx_secret *s);

/* What the copy port refused: connections from no server's address, requests not sealed right. */
struct xtxd_copy_serve_stats {
	uint64_t strangers, refused;
};
void xtxd_copy_serve_get_stats(struct xtxd_copy_serve_stats *s);

/*
 * Copies the shards c has server self copying (from their primaries, on
 * port + 1), replacing a copy under way for an older epoch; with none to
 * copy, only stops that one.
 */
void xtxd_copy_begin(const struct xtx_cluster *c, unsigned int self, uint16_t port);
void xtxd_copy_stop(void);
/*
 * Once a copy is whole, the copier takes a snapshot (log/snapshot.h) before
 * it says so: what it copied is in no log of its own, and a restart must
 * not lose it.  Set before the first copy.
 */
void xtxd_copy_set_target(const struct xtx_target *t);
/*
 * Empties this server's store, for a server about to copy shards: before
 * XDP serves the epoch that makes it a copier (a write taken live must not
 * be wiped, since the copy may not bring it back).  What it held was
 * older than the copy and could bring deleted keys back.  The keys
 * removed, or a negative errno.
 */
long xtxd_copy_wipe(void);
/* The copy under way or last done; false when there is none. */
bool xtxd_copy_progress(struct xtx_zk_copy *p);

#endif /* XTXD_COPY_H */
