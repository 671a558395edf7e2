/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a server of a cluster held in ZooKeeper remembers of it on its own disk: the newest
 * configuration (epoch and shard map) it took up, recorded before it serves that epoch.
 *
 * ZooKeeper's data can be lost, or a cluster re-created by hand at epoch 1 with the
 * initial map.  A server that served a newer configuration then refuses the older one
 * (xtxd), instead of serving stale shards or wiping the only current copy of one; and
 * `xtxctl cluster recover` rebuilds ZooKeeper's configuration from the servers' records.
 */
#ifndef XTX_USER_CLUSTER_RECORD_H
#define XTX_USER_CLUSTER_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include "cluster.h"

/* The record's file name in a server's data directory (xtxd --data-dir). */
#define XTX_CLUSTER_RECORD_FILE	"cluster.conf"

/*
 * Records c, as taken up by its server self, in directory dir, durably (replaced whole):
 * 0 or a negative errno.  The file is "server SELF" on a line, then c's text form.
 */
int xtx_cluster_record_write(const char *dir, const struct xtx_cluster *c, unsigned int self);

/*
 * Reads the record file at path into c, and into *self the index (in c) of the server
 * that wrote it: 0, -ENOENT when there is none, or another negative errno with why in err
 * (unreadable, not a record, or naming a server c does not list).
 */
int xtx_cluster_record_read(const char *path, struct xtx_cluster *c, unsigned int *self,
			    char *err, size_t errlen);

/* The record's path in dir: 0, or -ENAMETOOLONG. */
int xtx_cluster_record_path(const char *dir, char *buf, size_t len);

/*
 * Whether a server that recorded rec may take up c: not when c is another cluster (its id
 * differs: made again by cluster init), nor older, nor of the same epoch with another map
 * (every change comes with a newer epoch).
 */
bool xtx_cluster_record_allows(const struct xtx_cluster *rec, const struct xtx_cluster *c);

#endif /* XTX_USER_CLUSTER_RECORD_H */
