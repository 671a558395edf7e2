// SPDX-License-Identifier: GPL-2.0-only
/* xtx-udpd: options, namespace, daemon, and the server's lifetime from start to signal. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <xtx/log.h>
#include "dedupe.h"
#include "daemon.h"
#include "log.h"
#include "logfile.h"
#include "num.h"
#include "version.h"
#include "recover.h"
#include "secret.h"
#include "serve.h"
#include "store.h"
#include "txlog.h"
#include "udpd.h"

#define MAX_THREADS	64
#define NAME		"xtx-udpd"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " NAME " [options]\n"
		"Serves the xtx wire protocol (include/xtx/proto.h) from kernel UDP sockets in\n"
		"user space, with the XDP server's semantics: the baseline it is measured against.\n"
		"\n"
		"  -p, --port N             UDP port (default %d)\n"
		"  -b, --bind ADDR          IPv4 address to serve on (default 0.0.0.0)\n"
		"  -t, --threads N          serving threads, one SO_REUSEPORT socket each\n"
		"                           (1-%d, default 1)\n"
		"      --cpus LIST          pin thread i to the i-th CPU of LIST (e.g. 1 or 0-1,3)\n"
		"      --max-clients N      client ids served (1-%d, default %d)\n"
		"      --value-size N       largest value a write may carry (1-%d, default %d)\n"
		"      --secret-file PATH   the cluster's shared secret: drop requests without its MAC\n"
		"      --lock-lease MS      a lock not re-granted for MS milliseconds is\n"
		"                           reclaimable unless its holder logged (0: never;\n"
		"                           default %llu)\n"
		"      --echo               answer every op OK without touching state\n"
		"      --log-ring N         LOG_APPEND entries per thread, a power of two\n"
		"                           (default %u, at most %u)\n"
		"      --data-dir DIR       drain the logs into DIR as xtxd does (segments of\n"
		"                           CRC-checked records); without it entries are\n"
		"                           dropped once drained\n"
		"      --recover            before serving, rebuild the store from the writes of\n"
		"                           the transactions --data-dir's logs hold complete\n"
		"      --log-sync DUR       fdatasync the drained log at most every DUR; an entry\n"
		"                           leaves the ring only once synced (default 2ms)\n"
		"      --dump-file PATH     on SIGUSR1 write every key to PATH (as `xtxctl dump`)\n"
		"                           and the held locks to PATH.locks\n"
		"      --drop-request-ppm N lose N per million requests (fault injection)\n"
		"      --drop-reply-ppm N   lose N per million replies after executing them\n"
		"      --netns NAME         serve inside network namespace NAME (only the\n"
		"                           network namespace is entered)\n"
		"  -d, --daemon             run in the background once serving\n"
		"      --pidfile PATH       write the server's pid to PATH (removed at exit)\n"
		"      --daemon-log PATH    where a daemon's messages go (default: discarded)\n"
		"  -v, --verbose            more messages\n"
		"  -h, --help               this text\n"
		"  -V, --version            the release and build\n"
		"\n"
		"SIGINT or SIGTERM stop it.\n"
		"Example: " NAME " --netns xtx-s0 --bind 10.77.0.2 --data-dir /var/lib/xtx/udpd-s0 \\\n"
		"           -d --pidfile /run/udpd.pid\n",
		XTX_DEFAULT_PORT, MAX_THREADS, XTX_MAX_CLIENTS_LIMIT, XTX_MAX_CLIENTS_DEFAULT,
		XTX_VALUE_MAX, XTX_VALUE_MAX,
		(unsigned long long)(XTX_LOCK_LEASE_DEFAULT_NS / 1000000), XTX_LOG_RING_DEFAULT,
		XTX_LOG_RING_MAX);
}

enum {
	OPT_CPUS = 256, OPT_MAX_CLIENTS, OPT_VALUE_SIZE, OPT_LOCK_LEASE, OPT_ECHO, OPT_LOG_RING,
	OPT_DATA_DIR, OPT_LOG_SYNC, OPT_DUMP_FILE, OPT_DROP_REQ, OPT_DROP_REPLY, OPT_NETNS, OPT_PIDFILE,
	OPT_DAEMON_LOG, OPT_SECRET_FILE, OPT_RECOVER,
};

static int parse_args(int argc, char **argv, struct udpd_config *c)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "threads", required_argument, NULL, 't' },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "max-clients", required_argument, NULL, OPT_MAX_CLIENTS },
		{ "value-size", required_argument, NULL, OPT_VALUE_SIZE },
		{ "lock-lease", required_argument, NULL, OPT_LOCK_LEASE },
		{ "echo", no_argument, NULL, OPT_ECHO },
		{ "log-ring", required_argument, NULL, OPT_LOG_RING },
		{ "data-dir", required_argument, NULL, OPT_DATA_DIR },
		{ "recover", no_argument, NULL, OPT_RECOVER },
		{ "log-sync", required_argument, NULL, OPT_LOG_SYNC },
		{ "dump-file", required_argument, NULL, OPT_DUMP_FILE },
		{ "drop-request-ppm", required_argument, NULL, OPT_DROP_REQ },
		{ "drop-reply-ppm", required_argument, NULL, OPT_DROP_REPLY },
		{ "netns", required_argument, NULL, OPT_NETNS },
		{ "daemon", no_argument, NULL, 'd' },
		{ "pidfile", required_argument, NULL, OPT_PIDFILE },
		{ "daemon-log", required_argument, NULL, OPT_DAEMON_LOG },
		{ "secret-file", required_argument, NULL, OPT_SECRET_FILE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	uint32_t u;
	uint64_t v;
	int opt;

	c->port = XTX_DEFAULT_PORT;
	c->bind.s_addr = htonl(INADDR_ANY);
	c->threads = 1;
	c->max_clients = XTX_MAX_CLIENTS_DEFAULT;
	c->value_size = XTX_VALUE_MAX;
	c->lock_lease_ns = XTX_LOCK_LEASE_DEFAULT_NS;
	c->log_ring = XTX_LOG_RING_DEFAULT;
	c->log_sync_ns = XTX_LOGFILE_SYNC_DEFAULT_NS;
	while ((opt = getopt_long(argc, argv, "p:b:t:dvhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (xtx_parse_u32("--port", optarg, 1, 65535, &u))
				return -1;
			c->port = u;
			break;
		case 'b':
			if (inet_pton(AF_INET, optarg, &c->bind) != 1) {
				fprintf(stderr, "Error: --bind: '%s' is not an IPv4 address\n",
					optarg);
				return -1;
			}
			break;
		case 't':
			if (xtx_parse_u32("--threads", optarg, 1, MAX_THREADS, &c->threads))
				return -1;
			break;
		case OPT_CPUS: c->cpus = optarg; break;
		case OPT_SECRET_FILE:
			if (xtx_secret_read(optarg, &c->secret))
				return -1;
			c->has_secret = true;
			break;
		case OPT_MAX_CLIENTS:
			if (xtx_parse_u32("--max-clients", optarg, 1, XTX_MAX_CLIENTS_LIMIT,
					  &c->max_clients))
				return -1;
			break;
		case OPT_VALUE_SIZE:
			if (xtx_parse_u32("--value-size", optarg, 1, XTX_VALUE_MAX, &u))
				return -1;
			c->value_size = u;
			break;
		case OPT_LOCK_LEASE:
			if (xtx_parse_u64("--lock-lease", optarg, 0, UINT64_MAX / 1000000, &v))
				return -1;
			c->lock_lease_ns = v * 1000000;
			break;
		case OPT_ECHO: c->echo = true; break;
		case OPT_LOG_RING:
			if (xtx_parse_u32("--log-ring", optarg, 1, XTX_LOG_RING_MAX, &c->log_ring))
				return -1;
			if (c->log_ring & (c->log_ring - 1)) {
				fprintf(stderr, "Error: --log-ring: %u is not a power of two\n",
					c->log_ring);
				return -1;
			}
			break;
		case OPT_DATA_DIR: c->data_dir = optarg; break;
		case OPT_RECOVER: c->recover = true; break;
		case OPT_LOG_SYNC:
			if (xtx_parse_duration("--log-sync", optarg, &c->log_sync_ns))
				return -1;
			break;
		case OPT_DUMP_FILE: c->dump_file = optarg; break;
		case OPT_DROP_REQ:
			if (xtx_parse_u32("--drop-request-ppm", optarg, 0, 1000000,
					  &c->drop_request_ppm))
				return -1;
			break;
		case OPT_DROP_REPLY:
			if (xtx_parse_u32("--drop-reply-ppm", optarg, 0, 1000000,
					  &c->drop_reply_ppm))
				return -1;
			break;
		case OPT_NETNS: c->netns = optarg; break;
		case 'd': c->daemon = true; break;
		case OPT_PIDFILE: c->pidfile = optarg; break;
		case OPT_DAEMON_LOG: c->logfile = optarg; break;
		case 'v': xtx_log_level++; break;
		case 'h': usage(stdout); exit(0);
		case 'V': xtx_print_version("xtx-udpd"); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (c->recover && !c->data_dir) {
		fprintf(stderr, "Error: --recover needs --data-dir\n");
		return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "Error: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
}

/* "0-1,3" -> an array of CPUs, in order; returns how many, or -1. */
static int parse_cpus(const char *list, int *cpus, int max)
{
	const char *p = list;
	int n = 0;

	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p || a < 0 || a >= CPU_SETSIZE)
			goto bad;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || b < a || b >= CPU_SETSIZE)
				goto bad;
		}
		for (; a <= b && n < max; a++)
			cpus[n++] = a;
		if (*end && *end != ',')
			goto bad;
		p = *end == ',' ? end + 1 : end;
	}
	if (n)
		return n;
bad:
	fprintf(stderr, "Error: --cpus: '%s' is not a CPU list (e.g. 1 or 0-1,3)\n", list);
	return -1;
}

/* Only the network namespace: files and paths stay the caller's. */
static int enter_netns(const char *name)
{
	char path[PATH_MAX];
	int fd, err = 0;

	if (!*name || strchr(name, '/') || strlen(name) > 64) {
		fprintf(stderr, "Error: --netns: invalid namespace name '%s'\n", name);
		return -1;
	}
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "Error: network namespace '%s': %s (see 'ip netns list')\n", name,
			strerror(errno));
		return -1;
	}
	if (setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "Error: entering network namespace '%s': %s\n", name,
			strerror(errno));
		err = -1;
	}
	close(fd);
	return err;
}

/* A pidfile naming a live xtx-udpd means one already serves with it. */
static int pidfile_busy(const char *path)
{
	char comm_path[64], comm[32] = "";
	FILE *f = fopen(path, "r");
	int pid = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &pid) != 1)
		pid = 0;
	fclose(f);
	if (pid <= 0 || pid == getpid())
		return 0;
	snprintf(comm_path, sizeof(comm_path), "/proc/%d/comm", pid);
	f = fopen(comm_path, "r");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return !strncmp(comm, NAME, strlen(NAME)) ? pid : 0;
}

/* Waits for SIGINT/SIGTERM; SIGUSR1 dumps the store meanwhile. */
static void wait_for_stop(struct udpd_server *srv, const sigset_t *set)
{
	int sig, err;

	for (;;) {
		if (sigwait(set, &sig))
			return;
		if (sig != SIGUSR1)
			break;
		if (!srv->cfg.dump_file) {
			pr_warn("SIGUSR1: no --dump-file to write to\n");
			continue;
		}
		err = udpd_store_dump(srv->store, srv->cfg.dump_file);
		if (err)
			pr_warn("dump to %s: %s\n", srv->cfg.dump_file, strerror(-err));
	}
	pr_info("signal %d: stopping\n", sig);
}

static struct udpd_server srv;
static struct udpd_txlog *rings[MAX_THREADS];

static int setup(struct udpd_server *s)
{
	unsigned int i;

	s->store = udpd_store_new(s->cfg.value_size);
	s->dedupe = udpd_dedupe_new(s->cfg.max_clients);
	s->nworkers = s->cfg.threads;
	s->workers = calloc(s->nworkers, sizeof(*s->workers));
	if (!s->store || !s->dedupe || !s->workers)
		return -1;
	for (i = 0; i < s->nworkers; i++) {
		struct udpd_worker *w = &s->workers[i];

		w->srv = s;
		w->id = i;
		w->fd = -1;
		w->cpu = -1;
		w->rng = 0x9e3779b97f4a7c15ull * (i + 1) ^ (uint64_t)getpid();
		if (posix_memalign((void **)&w->stats, 64, sizeof(*w->stats)))
			return -1;
		memset(w->stats, 0, sizeof(*w->stats));
		w->log = rings[i] = udpd_txlog_new(s->cfg.log_ring);
		if (!w->log)
			return -1;
	}
	return 0;
}

static void teardown(struct udpd_server *s)
{
	unsigned int i;

	for (i = 0; s->workers && i < s->nworkers; i++) {
		free(s->workers[i].stats);
		udpd_txlog_free(s->workers[i].log);
	}
	free(s->workers);
	udpd_dedupe_free(s->dedupe);
	udpd_store_free(s->store);
}

static void summary(const struct udpd_server *s)
{
	uint64_t rx = 0, tx = 0, ops = 0;
	unsigned int i;

	for (i = 0; i < s->nworkers; i++) {
		rx += s->workers[i].stats->ctr[XTX_CTR_RX];
		tx += s->workers[i].stats->ctr[XTX_CTR_TX];
		ops += s->workers[i].stats->ctr[XTX_CTR_OPS];
	}
	pr_info("served rx=%llu tx=%llu ops=%llu\n", (unsigned long long)rx,
		(unsigned long long)tx, (unsigned long long)ops);
}

int main(int argc, char **argv)
{
	struct udpd_txlog_drain *drain = NULL;
	int cpus[CPU_SETSIZE], ncpus = 0, ready_fd = -1, rc = 1, pid;
	sigset_t set;

	if (parse_args(argc, argv, &srv.cfg))
		return 2;
	if (srv.cfg.cpus) {
		ncpus = parse_cpus(srv.cfg.cpus, cpus, CPU_SETSIZE);
		if (ncpus < 0)
			return 2;
	}
	if (srv.cfg.pidfile) {
		pid = pidfile_busy(srv.cfg.pidfile);
		if (pid) {
			fprintf(stderr, "Error: " NAME " already runs as pid %d (pidfile %s)\n",
				pid, srv.cfg.pidfile);
			return 1;
		}
	}
	/* before any thread: setns() moves only the calling one */
	if (srv.cfg.netns && enter_netns(srv.cfg.netns))
		return 1;
	if (setup(&srv)) {
		fprintf(stderr, "Error: out of memory setting up the server\n");
		teardown(&srv);
		return 1;
	}
	/* before serving, and before this run's drain opens new segments */
	if (srv.cfg.recover && udpd_recover(srv.store, srv.cfg.data_dir)) {
		teardown(&srv);
		return 1;
	}
	if (srv.cfg.daemon && xtx_daemonize(srv.cfg.logfile, &ready_fd))
		goto out;
	if (srv.cfg.pidfile && xtx_write_pidfile(srv.cfg.pidfile))
		goto out;

	/* every thread inherits the mask: only sigwait() below takes these */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);

	drain = udpd_txlog_drain_start(rings, srv.nworkers, srv.cfg.data_dir, srv.cfg.log_sync_ns);
	if (!drain)
		goto out_pid;
	if (udpd_serve_start(&srv, cpus, ncpus))
		goto out_drain;
	pr_info(NAME ": serving %s:%u with %u thread(s)%s\n", inet_ntoa(srv.cfg.bind),
		srv.cfg.port, srv.nworkers, srv.cfg.echo ? " in echo mode" : "");
	xtx_daemon_ready(&ready_fd, 0);
	wait_for_stop(&srv, &set);
	udpd_serve_stop(&srv);
	summary(&srv);
	rc = 0;
out_drain:
	udpd_txlog_drain_stop(drain);
out_pid:
	if (srv.cfg.pidfile)
		unlink(srv.cfg.pidfile);
out:
	xtx_daemon_ready(&ready_fd, 1);
	teardown(&srv);
	return rc;
}
