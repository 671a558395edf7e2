/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xtxd as a member of a cluster held in ZooKeeper (xtxd --zk): the
 * configuration gives its peers and epoch, an ephemeral node its lease,
 * and the epoch map (struct xtx_epoch_lease) tells XDP what to serve and
 * for how long.  The lease written there ends two thirds of a session
 * timeout after the newest moment the ensemble surely heard from us, so
 * XDP stops serving (answers XTX_ST_EPOCH) before the session could expire
 * and another server take this one's shards: when the network to
 * ZooKeeper is cut, when xtxd stalls, and when xtxd dies.  A session that
 * expired fences the server until xtxd starts again.
 */
#ifndef XTXD_MEMBER_H
#define XTXD_MEMBER_H

#include <stdbool.h>
#include <stdint.h>
#include "target.h"
#include "resolve/peers.h"

struct xtxd_member_opts {
	const char *zk;			/* HOST:PORT[,...]; NULL: a static cluster */
	const char *name;		/* the cluster's name */
	unsigned int session_ms;
	uint16_t port;			/* the xtx port: copies are served on TCP port + 1 */
	const char *data_dir;		/* where the configuration taken up is recorded */
	bool fresh;			/* --fresh: what it holds is set aside, its record too */
};

/*
 * Inside the server's namespace, before the program is loaded: opens the
 * session, reads the configuration and finds this server in it (one of its
 * addresses), filling peers.  Refuses a configuration older than the one
 * this server recorded (user/lib/cluster_record.h) unless o->fresh.  0, or
 * -1 after printing why.
 */
int xtxd_member_join(const struct xtxd_member_opts *o, struct xtxd_peers *peers);
/*
 * After join: whether this server is a replica of no shard (a spare, or
 * moved out after a failure).  What it holds is nobody's any more: it
 * starts empty and joins by copying (user/xtxd/copy/copy.h).
 */
bool xtxd_member_holds_nothing(void);
/*
 * Once the maps exist and before requests are let in: registers this
 * server's live node (waiting out the session of an xtxd that died here),
 * sets the epoch and its lease, and starts the thread that keeps them.
 * 0, or -1 after printing why.
 */
int xtxd_member_start(const struct xtx_target *t);
/*
 * A static server (no --zk): serves epoch 0 with no lease, whatever a
 * cluster run left in a map it adopts.  0, or -1 after printing why.
 */
int xtxd_member_static(const struct xtx_target *t);
/* Stops serving: first of a stop, before anything else stops. */
void xtxd_member_fence(void);
/* Ends the session (the live node goes at once): last of a stop, once nothing acts here. */
void xtxd_member_leave(void);
/* A shard of the cluster is being copied (re-replication); false in a static cluster. */
bool xtxd_member_copy_under_way(void);
/*
 * For /readyz: serving now (a static server always; a member within its
 * lease, not fenced, not closed while taking shards over).
 */
bool xtxd_member_serving(void);
/*
 * The end of the lease ZooKeeper's answer to a heartbeat sent at heard
 * (xtx_zk_clock()) earns, as XDP reads it (bpf_ktime_get_boot_ns()).
 */
uint64_t xtxd_lease_until(uint64_t heard, uint64_t lease_ns);
/* For xtxctl info and metrics: the epoch served now, and whether fenced. */
unsigned int xtxd_member_epoch(bool *fenced);

#endif /* XTXD_MEMBER_H */
