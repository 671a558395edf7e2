/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The configuration manager: one xtxd of a cluster held in ZooKeeper, the
 * holder of the ephemeral manager node, watches which servers are live.
 * A server that has served (joined/N) and whose live node has been gone
 * for the grace period failed: the manager writes the next configuration
 * (epoch + 1) with that server out of every shard that keeps another
 * replica, the first backup promoted where it led.  The servers recover
 * before serving the new epoch (xtxd_resolve_reconfigure(), member.c), so
 * the promotion loses nothing (manager.c says why).  Writes are compare-and-set
 * on the configuration's version, so two managers (an old one that has not
 * yet noticed it lost the node, and its successor) never both apply a
 * change.  Every xtxd runs for the role; when the manager dies, its node
 * goes with its session and another takes over.
 */
#ifndef XTXD_MANAGER_H
#define XTXD_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

struct xtx_zk;

/* Starts running for manager as server self on session z; 0 or -1 after printing why. */
int xtxd_manager_start(struct xtx_zk *z, unsigned int self, uint64_t grace_ns);
void xtxd_manager_stop(void);
/* Whether this xtxd manages now. */
bool xtxd_manager_leads(void);

#endif /* XTXD_MANAGER_H */
