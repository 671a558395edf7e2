/* SPDX-License-Identifier: GPL-2.0-only */
/* xtxctl cluster: init, status and recover of a cluster held in ZooKeeper. */
#ifndef XTXCTL_CLUSTER_H
#define XTXCTL_CLUSTER_H

/* argv[0] = "cluster", argv[1] = its subcommand; the exit status. */
int xtxctl_cluster_main(int argc, char **argv);

#endif /* XTXCTL_CLUSTER_H */
