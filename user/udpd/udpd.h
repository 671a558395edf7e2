/* SPDX-License-Identifier: GPL-2.0-only */
/* xtx-udpd: the xtx wire protocol served from kernel UDP sockets, for baseline benchmarks. */
#ifndef XTX_UDPD_H
#define XTX_UDPD_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <pthread.h>
#include <xtx/mac.h>
#include <xtx/maps.h>

/* What the command line sets; fixed once the server runs. */
struct udpd_config {
	uint16_t port;
	struct in_addr bind;
	unsigned int threads;
	const char *cpus;		/* NULL: no pinning */
	uint32_t max_clients;
	uint16_t value_size;		/* largest value a write may carry */
	uint64_t lock_lease_ns;		/* 0: locks are never reclaimed */
	bool echo;
	const char *netns;
	bool daemon;
	const char *pidfile;
	const char *logfile;		/* daemon's messages */
	const char *data_dir;		/* where drained LOG_APPEND entries go; NULL: dropped */
	bool recover;			/* replay data_dir's logs into the store first */
	uint64_t log_sync_ns;		/* fdatasync the log at most this often */
	uint32_t log_ring;		/* log entries per thread, a power of two */
	const char *dump_file;		/* SIGUSR1 writes the store and held locks here */
	uint32_t drop_request_ppm;	/* fault injection: lose requests / replies */
	uint32_t drop_reply_ppm;
	bool has_secret;		/* requests must carry the shared secret's MAC */
	struct xtx_secret secret;
};

struct udpd_store;
struct udpd_dedupe;
struct udpd_txlog;

/* One serving thread: its socket, its counters, its log ring. */
struct udpd_worker {
	struct udpd_server *srv;
	unsigned int id;
	int fd;
	int cpu;			/* -1: not pinned */
	pthread_t thread;
	struct xtx_stats *stats;	/* written by this thread only */
	struct udpd_txlog *log;
	uint64_t now;			/* the packet's clock, read on first use; 0 before */
	uint64_t rng;			/* fault injection */
};

struct udpd_server {
	struct udpd_config cfg;
	struct udpd_store *store;
	struct udpd_dedupe *dedupe;
	uint64_t counters[XTX_COUNTERS];	/* COUNTER_ADD, updated atomically */
	struct udpd_worker *workers;
	unsigned int nworkers;
	volatile int stop;
};

/*
 * Turns the request in buf (len bytes) into its reply in place, as the XDP
 * program does.  Returns the reply's length, or -1 when nothing is sent.
 */
int udpd_handle(struct udpd_worker *w, void *buf, int len);

/* CLOCK_MONOTONIC in ns, read once per packet. */
uint64_t udpd_now(struct udpd_worker *w);

#endif /* XTX_UDPD_H */
