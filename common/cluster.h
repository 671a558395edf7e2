/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A cluster's configuration: its epoch, its servers and its shard map.
 *
 * Every key belongs to one of a fixed number of shards (from its hash), and
 * each shard has an ordered replica list, primary first.  The configuration
 * lives in the coordination service (common/zk.h) as the text that
 * xtx_cluster_format() writes:
 *
 *   xtx-cluster 1
 *   epoch 1
 *   id 5f0c3a9e12d4b7a1
 *   replication 3
 *   servers 10.77.0.2,10.77.1.2,10.77.2.2
 *   shards 3
 *   shard 0 0,1,2
 *   shard 1 1,2,0
 *   shard 2 2,0,1
 *
 * A replica marked "*" (last in its list: "shard 1 1,2,3*") is copying the
 * shard: it takes every new write as a backup does, but holds the shard
 * whole only once its copy is done, so it is never promoted and does not
 * count towards R until then (re-replication, user/xtxd/copy/).
 *
 * A static cluster (no coordination service: --servers on the clients,
 * --peers on the servers) is the same map with one shard per server and
 * shard s replicated on s, s+1, ..., which xtx_cluster_static() builds.
 */
#ifndef XTX_COMMON_CLUSTER_H
#define XTX_COMMON_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#define XTX_CLUSTER_MAX_SERVERS	64
#define XTX_CLUSTER_MAX_SHARDS	1024
#define XTX_CLUSTER_MAX_R	3
/* Epochs are 16 bits on the wire; 0 is a static cluster, 0xffff a fenced server. */
#define XTX_CLUSTER_EPOCH_MAX	0xfffe

struct xtx_cluster {
	uint32_t epoch;
	uint32_t replication;		/* R: replicas a shard has when none is missing */
	uint32_t nservers;
	struct in_addr server[XTX_CLUSTER_MAX_SERVERS];
	uint32_t nshards;
	/* shard s: nrep[s] replicas, rep[s][0] its primary */
	uint8_t nrep[XTX_CLUSTER_MAX_SHARDS];
	uint8_t rep[XTX_CLUSTER_MAX_SHARDS][XTX_CLUSTER_MAX_R];
	/* shard s: its last replica is still copying it ("*" in the text) */
	uint8_t copying[XTX_CLUSTER_MAX_SHARDS];
	/*
	 * The cluster's identity: drawn at random by xtxctl cluster init and kept
	 * by every later epoch (xtxctl cluster recover's too), so that a server
	 * can tell a cluster made again from the one it served.  0: none (a
	 * static cluster, or a configuration written before ids).  Last: the
	 * fields before it keep the offsets programs built before it know.
	 */
	uint64_t id;
};

/* The longest text xtx_cluster_format() writes. */
#define XTX_CLUSTER_TEXT_MAX	(96 + XTX_CLUSTER_MAX_SERVERS * 16 + XTX_CLUSTER_MAX_SHARDS * 24)

/*
 * A new cluster of n servers: epoch 1, R = replication, nshards shards
 * spread round-robin (shard s on servers s, s+1, ... mod n).  0, or
 * -EINVAL with why in err.
 */
int xtx_cluster_build(struct xtx_cluster *c, const struct in_addr *servers, unsigned int n,
		      unsigned int replication, unsigned int nshards, char *err, size_t errlen);
/* The static cluster's map: epoch 0, one shard per server. */
int xtx_cluster_static(struct xtx_cluster *c, const struct in_addr *servers, unsigned int n,
		       unsigned int replication, char *err, size_t errlen);

/* Parses the text form; 0, or -EINVAL with the line at fault in err. */
int xtx_cluster_parse(struct xtx_cluster *c, const char *text, char *err, size_t errlen);
/* Whether a and b are the same configuration, field by field (no padding compared). */
bool xtx_cluster_equal(const struct xtx_cluster *a, const struct xtx_cluster *b);
/* Writes the text form into buf; its length, or -ENOSPC. */
int xtx_cluster_format(const struct xtx_cluster *c, char *buf, size_t len);

/* The shard of (table, key). */
unsigned int xtx_cluster_shard(const struct xtx_cluster *c, uint8_t table, uint64_t key);
/* The index of addr among the servers, or -1. */
int xtx_cluster_index(const struct xtx_cluster *c, struct in_addr addr);
/* A bit per server (index < 64) that is a replica of no shard: moved out. */
uint64_t xtx_cluster_gone(const struct xtx_cluster *c);
/* Shards server x leads in c. */
unsigned int xtx_cluster_leads(const struct xtx_cluster *c, unsigned int x);
/* Shards server x leads in next and did not in prev. */
unsigned int xtx_cluster_takes_over(const struct xtx_cluster *prev, const struct xtx_cluster *next,
				    unsigned int x);
/* Shards with fewer replicas than R that hold them whole (copying ones do not count). */
unsigned int xtx_cluster_under_replicated(const struct xtx_cluster *c);
/* Replicas of shard s that hold it whole: every one but a copying one. */
unsigned int xtx_cluster_whole(const struct xtx_cluster *c, unsigned int s);
/* Shards server x is copying. */
unsigned int xtx_cluster_copying(const struct xtx_cluster *c, unsigned int x);

/*
 * The manager's moves (user/xtxd/manager.c), each on c in place, returning
 * the number of shards it changed (0: c unchanged).
 *
 * xtx_cluster_drop(): failed server x out of every shard it is in, the
 * first backup promoted where it led.  All or nothing, and never below two
 * whole replicas per shard: a copying replica leaves freely, a whole one
 * only where two whole ones stay (the resolver needs someone to ask, and a
 * copy needs a whole source).  A copying replica is last, so the promoted
 * one is whole.
 *
 * xtx_cluster_add_copier(): server x, a replica of no shard, starts copying
 * every shard short of R whole replicas that has no copier yet.
 *
 * xtx_cluster_copied(): x's copies are done; it counts as whole.
 */
unsigned int xtx_cluster_drop(struct xtx_cluster *c, unsigned int x);
unsigned int xtx_cluster_add_copier(struct xtx_cluster *c, unsigned int x);
unsigned int xtx_cluster_copied(struct xtx_cluster *c, unsigned int x);

#endif /* XTX_COMMON_CLUSTER_H */
