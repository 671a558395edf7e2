/* SPDX-License-Identifier: GPL-2.0-only */
/* The other servers: index -> address, from --peers or a cluster file, and which one we are. */
#ifndef XTXD_PEERS_H
#define XTXD_PEERS_H

#include <stdint.h>
#include <netinet/in.h>

#define XTXD_PEERS_MAX		64
#define XTXD_SELF_UNKNOWN	(-1)

/*
 * Server indices are positions in the list, in the order clients give
 * their --servers, since a log record names its replicas by index.
 */
struct xtxd_peers {
	unsigned int n;
	struct in_addr addr[XTXD_PEERS_MAX];
	int self;		/* our index, or XTXD_SELF_UNKNOWN */
};

/* "IP[,IP...]" appended to p; 0 or -1 after printing why. */
int xtxd_peers_parse(struct xtxd_peers *p, const char *list);
/* One IP per line ('#' comments, blank lines allowed); 0 or -1 after printing why. */
int xtxd_peers_load(struct xtxd_peers *p, const char *path);
/*
 * Unless self is set already: the index whose address is one of this
 * network namespace's.  0, or -1 after printing why (none or several).
 */
int xtxd_peers_find_self(struct xtxd_peers *p);
/* The index of addr, or -1. */
int xtxd_peers_index(const struct xtxd_peers *p, struct in_addr addr);

#endif /* XTXD_PEERS_H */
