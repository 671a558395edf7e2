/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A cluster in ZooKeeper (Debian's libzookeeper-mt): its configuration and
 * which of its servers are alive.  Under /xtx/NAME:
 *
 *   config        the configuration text (common/cluster.h); its version
 *                 is what a writer compares-and-sets against
 *   live/N        ephemeral, one per serving xtxd (N its server index,
 *                 the data its address): the node is the server's lease,
 *                 gone when its session expires
 *   joined/N      persistent: server N has served here since it last
 *                 joined, so a missing live/N is a failure
 *   manager       ephemeral: the index of the xtxd managing the
 *                 configuration (user/xtxd/manager.c)
 *   copy/N        ephemeral: server N's progress copying the shards the
 *                 configuration has it copying (struct xtx_zk_copy)
 *
 * A session's state is watched by libzookeeper's own thread; callers poll
 * xtx_zk_state() and, for leases, xtx_zk_heartbeat() (see there).
 */
#ifndef XTX_COMMON_ZK_H
#define XTX_COMMON_ZK_H

#include <stdbool.h>
#include <stdint.h>
#include "cluster.h"

#define XTX_ZK_SESSION_MS_DEFAULT	2000
#define XTX_ZK_NAME_MAX			32
#define XTX_ZK_NAME_DEFAULT		"xtx"

struct xtx_zk;

enum xtx_zk_state {
	XTX_ZK_CONNECTING,	/* no server answers at the moment; the session may live */
	XTX_ZK_CONNECTED,
	XTX_ZK_EXPIRED,		/* the session is gone for good, and its ephemeral nodes */
};

/* A cluster name is 1..32 of [a-z0-9_-]; 0, or -1 after printing why. */
int xtx_zk_name_ok(const char *name);

/*
 * Opens a session with the ensemble "HOST:PORT[,HOST:PORT...]" and waits up
 * to wait_ms for it.  NULL after printing why (unreachable, bad string).
 */
struct xtx_zk *xtx_zk_open(const char *hosts, const char *name, unsigned int session_ms,
			   unsigned int wait_ms);
void xtx_zk_close(struct xtx_zk *z);
enum xtx_zk_state xtx_zk_state(struct xtx_zk *z);
/* The session timeout the ensemble granted, ms. */
unsigned int xtx_zk_session_ms(struct xtx_zk *z);

/*
 * Brings the member this session reads from up to date with the ensemble's
 * leader (ZooKeeper's sync): a read after it sees every write completed
 * before it, which a lagging follower's read may not.  For a first read
 * whose answer is acted on (xtxd's join).  Waits up to wait_ms: 0, or a
 * negative errno after printing why.
 */
int xtx_zk_sync(struct xtx_zk *z, unsigned int wait_ms);
/*
 * The configuration, and its znode version in *zversion (may be NULL).
 * With watch, the next change of it makes xtx_zk_changed() true.
 * 0; -ENOENT when the cluster has none; other -errno after printing why.
 */
int xtx_zk_read_config(struct xtx_zk *z, struct xtx_cluster *c, int *zversion, bool watch);
/* True once since the watched configuration (or the live set) last changed. */
bool xtx_zk_changed(struct xtx_zk *z);
/* Creates the cluster with c; -EEXIST when it exists, other -errno after printing why. */
int xtx_zk_create(struct xtx_zk *z, const struct xtx_cluster *c);
/*
 * Replaces the configuration if its znode is still at zversion;
 * -EAGAIN when someone else wrote it meanwhile.
 */
int xtx_zk_write_config(struct xtx_zk *z, const struct xtx_cluster *c, int zversion);

/*
 * Registers server index with this session (live/N, ephemeral).
 * -EEXIST while another session holds it.
 */
int xtx_zk_register(struct xtx_zk *z, unsigned int index, const char *addr);
/* The servers holding a live/N node, a bit per index; -errno after printing why. */
int xtx_zk_live(struct xtx_zk *z, uint64_t *mask, bool watch);
/*
 * joined/N (persistent) says server N has served in this cluster, so its
 * live node going away is a failure, not a server still starting.
 */
int xtx_zk_mark_joined(struct xtx_zk *z, unsigned int index);
int xtx_zk_joined(struct xtx_zk *z, uint64_t *mask);
int xtx_zk_forget_joined(struct xtx_zk *z, unsigned int index);

/*
 * The configuration manager's lock: manager (ephemeral) holds the index of
 * the xtxd that manages.  xtx_zk_lead() takes it if free: 0 when this
 * session holds it now, -EEXIST when another does (and with watch, its
 * going away makes xtx_zk_changed() true), other -errno on failure.
 */
int xtx_zk_lead(struct xtx_zk *z, unsigned int index, bool watch);
/* The index of the manager, or -ENOENT when there is none. */
int xtx_zk_manager(struct xtx_zk *z);
/*
 * A copying server's progress (user/xtxd/copy/): the epoch it copies for,
 * keys installed so far, and whether every shard it copies is whole here.
 * Published under the server's session, so it goes when the server does.
 */
struct xtx_zk_copy {
	uint32_t epoch;
	uint64_t keys;
	uint32_t ms;		/* since the copy began */
	bool done;
};
int xtx_zk_put_copy(struct xtx_zk *z, unsigned int index, const struct xtx_zk_copy *cp);
/* -ENOENT when server index publishes none. */
int xtx_zk_get_copy(struct xtx_zk *z, unsigned int index, struct xtx_zk_copy *cp);

/*
 * Asks the ensemble's leader for a sync, without waiting.  Once it
 * answers, xtx_zk_last_heard() returns the time the question was sent, on
 * xtx_zk_clock(): the leader, which expires sessions, heard from this one
 * no earlier than that, so it cannot expire before that time plus its
 * timeout.  The clock is CLOCK_BOOTTIME, read when the question is sent: a
 * suspend after it is time the session's timer runs too, never a longer
 * lease (xtx_boot_ns(), common/clock.h).
 */
void xtx_zk_heartbeat(struct xtx_zk *z);
uint64_t xtx_zk_last_heard(struct xtx_zk *z);
uint64_t xtx_zk_clock(void);

#endif /* XTX_COMMON_ZK_H */
