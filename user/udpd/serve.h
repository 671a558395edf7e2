/* SPDX-License-Identifier: GPL-2.0-only */
/* The serving threads: one SO_REUSEPORT socket each, recvmmsg / execute / sendmmsg. */
#ifndef XTX_UDPD_SERVE_H
#define XTX_UDPD_SERVE_H

#include "udpd.h"

/*
 * Opens srv->nworkers sockets on cfg.bind:cfg.port and starts a thread on
 * each (pinned to cpus[i % ncpus] when ncpus > 0).  0, or -1 with a
 * message and nothing left running.
 */
int udpd_serve_start(struct udpd_server *srv, const int *cpus, unsigned int ncpus);
/* Sets srv->stop and joins the threads (each notices within its receive timeout). */
void udpd_serve_stop(struct udpd_server *srv);

#endif /* XTX_UDPD_SERVE_H */
