// SPDX-License-Identifier: GPL-2.0-only
/* xtxctl: operator CLI for a loaded xtx server (stats, fault knobs, unload). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <bpf/bpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include "attach.h"
#include "log.h"
#include "names.h"
#include "num.h"
#include "stats_read.h"
#include "target.h"

struct ctl_opts {
	const char *iface;
	const char *netns;
	bool json;
	int table;		/* dump --table, -1: all */
	bool set_req, set_rep, set_rare;
	uint32_t drop_req_ppm, drop_rep_ppm, drop_rare_ppm;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxctl [--netns NAME] --iface IF COMMAND [options]\n"
		"Inspect and control the xtx server loaded on IF.\n"
		"\n"
		"Commands:\n"
		"  stats [--json]          packet, op and status counters, summed over CPUs\n"
		"  info [--json]           how the loaded program was configured\n"
		"  fault [--drop-request-ppm N] [--drop-reply-ppm N] [--drop-rare-reply-ppm N]\n"
		"                          lose that share (parts per million) of requests or\n"
		"                          replies in XDP, or of xtxd's replies after it ran\n"
		"                          them, for loss tests; no option shows them\n"
		"  dump [--table N] [--json]\n"
		"                          every live key, value and version of the KV store\n"
		"                          (kernel cache and xtxd's overflow store), by table and key\n"
		"  rare-stats [--json]     xtxd's rare-path counters and overflow store size\n"
		"  unload                  stop xtxd, detach the program, remove the pinned maps\n"
		"\n"
		"Options:\n"
		"  -n, --netns NAME        the interface lives in network namespace NAME\n"
		"  -i, --iface IF          the interface xtx serves\n"
		"  -j, --json              machine-readable output\n"
		"  -t, --table N           dump: only table N\n"
		"  -v, --verbose           more output\n"
		"  -h, --help              this text\n"
		"\n"
		"Example: xtxctl --netns xtx-s0 --iface xtxs0 stats\n");
}

static int open_map(const struct xtx_target *t, const char *name)
{
	int fd = xtx_target_map_fd(t, name);

	if (fd < 0)
		fprintf(stderr, "Error: no xtx server on %s (%s/%s: %s); is it loaded?\n",
			t->iface, t->pin_dir, name, strerror(-fd));
	return fd;
}

struct lock_occupancy {
	__u64 slots, held, shared, exclusive, logged;
};

static void print_stats_text(const struct xtx_stats *s)
{
	unsigned int i, op, st;

	printf("%-22s %16s\n", "counter", "count");
	for (i = 0; i < XTX_CTR__COUNT; i++)
		printf("%-22s %16llu\n", xtx_counter_name(i), (unsigned long long)s->ctr[i]);
	printf("\n%-14s %-14s %16s\n", "op", "status", "count");
	for (op = 0; op < XTX_OP__COUNT; op++)
		for (st = 0; st < XTX_ST__COUNT; st++)
			if (s->op[op][st])
				printf("%-14s %-14s %16llu\n", xtx_op_name(op) ?: "?",
				       xtx_status_name(st), (unsigned long long)s->op[op][st]);
}

static void print_stats_json(const struct xtx_stats *s, const struct lock_occupancy *occ)
{
	unsigned int i, op, st;
	const char *sep = "";

	printf("{\"counters\":{");
	for (i = 0; i < XTX_CTR__COUNT; i++)
		printf("%s\"%s\":%llu", i ? "," : "", xtx_counter_name(i),
		       (unsigned long long)s->ctr[i]);
	printf("},\"ops\":{");
	for (op = 0; op < XTX_OP__COUNT; op++) {
		const char *inner = "";

		if (!xtx_op_name(op))
			continue;
		printf("%s\"%s\":{", sep, xtx_op_name(op));
		for (st = 0; st < XTX_ST__COUNT; st++) {
			if (!s->op[op][st])
				continue;
			printf("%s\"%s\":%llu", inner, xtx_status_name(st),
			       (unsigned long long)s->op[op][st]);
			inner = ",";
		}
		printf("}");
		sep = ",";
	}
	printf("},\"locks\":{\"slots\":%llu,\"held\":%llu,\"shared\":%llu,\"excl\":%llu,"
	       "\"logged\":%llu}}\n", (unsigned long long)occ->slots,
	       (unsigned long long)occ->held, (unsigned long long)occ->shared,
	       (unsigned long long)occ->exclusive, (unsigned long long)occ->logged);
}

/* Walks the lock table: how many slots are held, and how. */
static int read_lock_occupancy(const struct xtx_target *t, struct lock_occupancy *occ)
{
	const __u32 batch = 4096;
	struct xtx_lock_slot *vals;
	__u32 *keys, out_batch, n, i;
	void *in = NULL;
	int fd, err = 0;

	memset(occ, 0, sizeof(*occ));
	fd = xtx_target_map_fd(t, XTX_MAP_LOCKS);
	if (fd < 0)
		return fd;
	keys = calloc(batch, sizeof(*keys));
	vals = calloc(batch, sizeof(*vals));
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);

		n = batch;
		err = bpf_map_lookup_batch(fd, in, &out_batch, keys, vals, &n, &opts);
		if (err && errno != ENOENT) {
			err = -errno;
			break;
		}
		for (i = 0; i < n; i++) {
			occ->slots++;
			if (!vals[i].shared && !vals[i].excl)
				continue;
			occ->held++;
			occ->shared += vals[i].shared ? 1 : 0;
			occ->exclusive += vals[i].excl ? 1 : 0;
			occ->logged += (vals[i].flags & XTX_LOCKF_LOGGED) ? 1 : 0;
		}
		if (err) {	/* ENOENT: that was the last batch */
			err = 0;
			break;
		}
		in = &out_batch;
	}
out:
	free(keys);
	free(vals);
	close(fd);
	return err;
}

static int cmd_stats(const struct xtx_target *t, const struct ctl_opts *o)
{
	struct lock_occupancy occ;
	struct xtx_stats *s = calloc(1, sizeof(*s));
	int fd, err;

	if (!s)
		return 1;
	fd = open_map(t, XTX_MAP_STATS);
	if (fd < 0) {
		free(s);
		return 1;
	}
	err = xtx_stats_sum(fd, s);
	close(fd);
	if (!err)
		err = read_lock_occupancy(t, &occ);
	if (err) {
		fprintf(stderr, "Error: reading stats: %s\n", strerror(-err));
		free(s);
		return 1;
	}
	if (o->json) {
		print_stats_json(s, &occ);
	} else {
		print_stats_text(s);
		printf("\n%-22s %16llu\n%-22s %16llu\n%-22s %16llu\n%-22s %16llu\n%-22s %16llu\n",
		       "lock_slots", (unsigned long long)occ.slots, "locks_held",
		       (unsigned long long)occ.held, "locks_shared", (unsigned long long)occ.shared,
		       "locks_excl", (unsigned long long)occ.exclusive, "locks_logged",
		       (unsigned long long)occ.logged);
	}
	free(s);
	return 0;
}

static int cmd_info(const struct xtx_target *t, const struct ctl_opts *o)
{
	struct xtx_attached a;
	struct xtx_info info;
	__u32 zero = 0;
	int fd, pid;

	fd = open_map(t, XTX_MAP_INFO);
	if (fd < 0)
		return 1;
	if (bpf_map_lookup_elem(fd, &zero, &info)) {
		fprintf(stderr, "Error: reading xtx_info: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	if (xtx_attached_query(t, &a))
		memset(&a, 0, sizeof(a));
	pid = xtx_pidfile_alive(t->pidfile);
	if (o->json) {
		printf("{\"iface\":\"%s\",\"netns\":\"%s\",\"port\":%u,\"max_clients\":%u,"
		       "\"echo\":%u,\"lock_slots\":%u,\"kv_buckets\":%u,\"kv_flags\":%u,"
		       "\"value_size\":%u,\"prog_id\":%u,\"libxdp\":%s,\"xtxd_pid\":%d,"
		       "\"pin_dir\":\"%s\"}\n",
		       t->iface, t->ns_tag, info.port, info.max_clients, info.echo_mode,
		       info.lock_slots, info.kv_buckets, info.kv_flags, info.value_size,
		       a.xtx_prog_id, a.xtx_via_libxdp ? "true" : "false", pid, t->pin_dir);
		return 0;
	}
	printf("iface        %s\nnetns        %s\nport         %u\nmax_clients  %u\n"
	       "lock_slots   %u\nkv_buckets   %u\nkv_flags     %#x\nvalue_size   %u\n"
	       "echo         %u\nprog_id      %u%s\nxtxd_pid     %d\npin_dir      %s\n",
	       t->iface, t->ns_tag, info.port, info.max_clients, info.lock_slots,
	       info.kv_buckets, info.kv_flags, info.value_size, info.echo_mode, a.xtx_prog_id,
	       a.xtx_prog_id ? (a.xtx_via_libxdp ? " (libxdp dispatcher)" : " (alone)") :
			       " (not attached)",
	       pid, t->pin_dir);
	return 0;
}

static int cmd_fault(const struct xtx_target *t, const struct ctl_opts *o)
{
	struct xtx_runtime rt;
	__u32 zero = 0;
	int fd, rc = 1;

	fd = open_map(t, XTX_MAP_RUNTIME);
	if (fd < 0)
		return 1;
	if (bpf_map_lookup_elem(fd, &zero, &rt)) {
		fprintf(stderr, "Error: reading xtx_runtime: %s\n", strerror(errno));
		goto out;
	}
	if (o->set_req)
		rt.drop_request_ppm = o->drop_req_ppm;
	if (o->set_rep)
		rt.drop_reply_ppm = o->drop_rep_ppm;
	if (o->set_rare)
		rt.drop_rare_reply_ppm = o->drop_rare_ppm;
	if ((o->set_req || o->set_rep || o->set_rare) && bpf_map_update_elem(fd, &zero, &rt, 0)) {
		fprintf(stderr, "Error: writing xtx_runtime: %s\n", strerror(errno));
		goto out;
	}
	printf("drop_request_ppm %u\ndrop_reply_ppm %u\ndrop_rare_reply_ppm %u\n",
	       rt.drop_request_ppm, rt.drop_reply_ppm, rt.drop_rare_reply_ppm);
	rc = 0;
out:
	close(fd);
	return rc;
}

/*
 * Asks xtxd over its control socket and prints the answer: every line up
 * to the final "OK"; "ERR <why>" makes it an error.
 */
static int ctl_request(const struct xtx_target *t, const char *req)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char buf[65536], *line, *nl;
	size_t len = 0;
	ssize_t n;
	int fd, rc = 1;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", t->ctl_sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "Error: socket: %s\n", strerror(errno));
		return 1;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			fprintf(stderr, "Error: xtxd is not running for %s "
				"(control socket %s: %s)\n", t->iface, t->ctl_sock, strerror(errno));
		else
			fprintf(stderr, "Error: connecting to xtxd at %s: %s\n", t->ctl_sock,
				strerror(errno));
		goto out;
	}
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		fprintf(stderr, "Error: sending to xtxd at %s: %s\n", t->ctl_sock,
			strerror(errno));
		goto out;
	}
	for (;;) {
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "Error: xtxd closed the control connection without an "
				"answer%s%s\n", n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			goto out;
		}
		len += n;
		buf[len] = '\0';
		line = buf;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			if (!strcmp(line, "OK")) {
				rc = 0;
				goto out;
			}
			if (!strncmp(line, "ERR", 3) && (!line[3] || line[3] == ' ')) {
				fprintf(stderr, "Error: %s\n",
					line[3] ? line + 4 : "xtxd refused the request");
				goto out;
			}
			puts(line);
			line = nl + 1;
		}
		len -= line - buf;
		memmove(buf, line, len);
		if (len == sizeof(buf) - 1) {
			fprintf(stderr, "Error: xtxd sent a line longer than %zu bytes\n", len);
			goto out;
		}
	}
out:
	close(fd);
	if (fflush(stdout))
		rc = 1;
	return rc;
}

static int cmd_dump(const struct xtx_target *t, const struct ctl_opts *o)
{
	char req[64];

	if (o->table >= 0)
		snprintf(req, sizeof(req), "dump --table %d%s\n", o->table,
			 o->json ? " --json" : "");
	else
		snprintf(req, sizeof(req), "dump%s\n", o->json ? " --json" : "");
	return ctl_request(t, req);
}

/* Stops the daemon if one runs, then removes whatever it (or a crash) left. */
static int cmd_unload(const struct xtx_target *t, bool iface_exists)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	int pid = xtx_pidfile_alive(t->pidfile), i, err;

	if (pid) {
		/* a stopped daemon may linger as a zombie until reaped: look at /proc */
		kill(pid, SIGTERM);
		for (i = 0; i < 1000 && xtx_pid_is_xtxd(pid); i++)
			nanosleep(&pause, NULL);
		if (xtx_pid_is_xtxd(pid)) {
			pr_warn("xtxd (pid %d) did not stop in 5 s; killing it\n", pid);
			kill(pid, SIGKILL);
		}
	}
	unlink(t->pidfile);
	err = iface_exists ? xtx_detach(t) : 0;
	xtx_unpin(t);
	return err ? 1 : 0;
}

enum { OPT_DROP_REQ = 256, OPT_DROP_REP, OPT_DROP_RARE };

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "netns", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "table", required_argument, NULL, 't' },
		{ "drop-request-ppm", required_argument, NULL, OPT_DROP_REQ },
		{ "drop-reply-ppm", required_argument, NULL, OPT_DROP_REP },
		{ "drop-rare-reply-ppm", required_argument, NULL, OPT_DROP_RARE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct ctl_opts o = { .table = -1 };
	struct xtx_target t;
	const char *cmd;
	uint32_t table;
	int c;

	/* permute so options may follow the command */
	while ((c = getopt_long(argc, argv, "i:n:jt:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': o.iface = optarg; break;
		case 'n': o.netns = optarg; break;
		case 'j': o.json = true; break;
		case 't':
			if (xtx_parse_u32("--table", optarg, 0, XTX_MAX_TABLES - 1, &table))
				return 2;
			o.table = (int)table;
			break;
		case OPT_DROP_REQ:
			if (xtx_parse_u32("--drop-request-ppm", optarg, 0, 1000000, &o.drop_req_ppm))
				return 2;
			o.set_req = true;
			break;
		case OPT_DROP_REP:
			if (xtx_parse_u32("--drop-reply-ppm", optarg, 0, 1000000, &o.drop_rep_ppm))
				return 2;
			o.set_rep = true;
			break;
		case OPT_DROP_RARE:
			if (xtx_parse_u32("--drop-rare-reply-ppm", optarg, 0, 1000000,
					  &o.drop_rare_ppm))
				return 2;
			o.set_rare = true;
			break;
		case 'v': xtx_log_level++; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "Error: expected exactly one command\n");
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	if (!o.iface) {
		fprintf(stderr, "Error: --iface is required\n");
		return 2;
	}
	if (xtx_require_root("xtxctl"))
		return 1;
	xtx_log_libbpf();
	xtx_log_libxdp();
	if (xtx_bpffs_ensure())
		return 1;
	if (xtx_target_open(&t, o.netns, o.iface)) {
		if (strcmp(cmd, "unload"))
			return 1;
		/* the interface or namespace is gone: still clean up after it */
		return cmd_unload(&t, false);
	}

	if (!strcmp(cmd, "stats"))
		return cmd_stats(&t, &o);
	if (!strcmp(cmd, "info"))
		return cmd_info(&t, &o);
	if (!strcmp(cmd, "fault"))
		return cmd_fault(&t, &o);
	if (!strcmp(cmd, "dump"))
		return cmd_dump(&t, &o);
	if (!strcmp(cmd, "rare-stats"))
		return ctl_request(&t, o.json ? "stats --json\n" : "stats\n");
	if (!strcmp(cmd, "unload"))
		return cmd_unload(&t, true);
	fprintf(stderr, "Error: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
