// SPDX-License-Identifier: GPL-2.0-only
/* The control channel: a unix socket serving line requests (dump, stats, load) from xtxctl. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <urcu.h>
#include <xtx/maps.h>
#include "control.h"
#include "ctl_out.h"
#include "store/dump.h"
#include "store/load.h"
#include "log.h"
#include "names.h"
#include "rare/rare.h"
#include "log/snapshot.h"
#include "member.h"
#include "copy/copy.h"
#include "log/held.h"
#include "log/logdrain.h"
#include "resolve/resolve.h"

#define CTL_LINE_MAX	256
#define CTL_MAX_ARGS	12
/* one thread serves every client: a stuck one must not hold it for long */
#define CTL_IO_TIMEOUT_S	10

static struct {
	struct xtx_target t;
	pthread_t tid;
	bool running;
	int listen_fd;
	int stop_fd;
	/* the connection being served, so stop can cut a stalled send short */
	pthread_mutex_t conn_lock;
	int conn_fd;
	struct xtxd_out out;
	/* what came after the request being handled, and whether it took the rest (load file) */
	const char *rest;
	size_t rest_len;
	bool rest_taken;
	/* the highest version mark answered: a load "at V" must be above it */
	uint64_t mark_issued;
	struct xtxd_sizing sizing;
} ctl = { .listen_fd = -1, .stop_fd = -1, .conn_lock = PTHREAD_MUTEX_INITIALIZER, .conn_fd = -1 };


/* names.c predates the KV statuses */
static const char *status_name(unsigned int st)
{
	switch (st) {
	case XTX_ST_NOT_FOUND: return "not_found";
	case XTX_ST_EXISTS: return "exists";
	case XTX_ST_FULL: return "full";
	case XTX_ST_DEFERRED: return "deferred";
	default: return xtx_status_name(st);
	}
}

struct named_ctr {
	const char *name;
	uint64_t val;
};

void xtxd_control_set_sizing(const struct xtxd_sizing *z)
{
	ctl.sizing = *z;
}

static void cmd_stats(struct xtxd_out *out, bool json)
{
	const struct xtxd_rare_stats *s = xtxd_rare_stats();
	struct xtxd_ovf *store = xtxd_rare_store();
	struct xtxd_resolve_stats r;
	struct xtxd_copy_serve_stats cp;
	struct xtxd_logdrain_stats ld;

	xtxd_resolve_get_stats(&r);
	xtxd_copy_serve_get_stats(&cp);
	xtxd_logdrain_get_stats(&ld);
	struct named_ctr c[] = {
		{ "rx", xtxd_stat_read(&s->rx) },
		{ "tx", xtxd_stat_read(&s->tx) },
		{ "send_errors", xtxd_stat_read(&s->send_errors) },
		{ "fault_drops", xtxd_stat_read(&s->fault_drops) },
		{ "victims_saved", xtxd_stat_read(&s->victims_saved) },
		{ "victims_stale", xtxd_stat_read(&s->victims_stale) },
		{ "victims_full", xtxd_stat_read(&s->victims_full) },
		{ "tombs_saved", xtxd_stat_read(&s->tombs_saved) },
		{ "replays", xtxd_stat_read(&s->replays) },
		{ "replays_unrecorded", xtxd_stat_read(&s->replays_unrecorded) },
		{ "duplicates", xtxd_stat_read(&s->duplicates) },
		{ "fills", xtxd_stat_read(&s->fills) },
		{ "store_keys", xtxd_ovf_count(store) },
		{ "store_max", xtxd_ovf_max(store) },
		{ "kv_buckets", xtxd_ovf_nbuckets(store) },
		{ "capacity", ctl.sizing.capacity },
		{ "lock_slots", ctl.sizing.lock_slots },
		/* the resolver: its decisions, and what its port refused before any work */
		{ "resolve_commits", r.commits },
		{ "resolve_aborts", r.aborts },
		{ "resolve_fenced", r.fenced },
		{ "resolve_hades_validated", r.hades_validated },
		{ "resolve_hades_aborted", r.hades_aborted },
		{ "resolve_strangers", r.strangers },
		{ "resolve_unauthenticated", r.unauthenticated },
		{ "resolve_replayed", r.replayed },
		{ "resolve_throttled", r.throttled },
		{ "resolve_malformed", r.malformed },
		{ "resolve_held", xtxd_held_count() },
		{ "copy_strangers", cp.strangers },
		{ "copy_refused", cp.refused },
		{ "log_failed", ld.failed },
	};
	const char *sep = "";
	unsigned int i, op, st;

	if (!json) {
		for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
			xtxd_out_printf(out, "%-22s %16llu\n", c[i].name,
					(unsigned long long)c[i].val);
		for (i = 0; i < XTXD_DROP__COUNT; i++)
			xtxd_out_printf(out, "drop_%-17s %16llu\n", xtxd_drop_name(i),
					(unsigned long long)xtxd_stat_read(&s->drop[i]));
		xtxd_out_printf(out, "\n%-14s %-14s %16s\n", "op", "status", "count");
		for (op = 0; op < XTX_OP__COUNT; op++)
			for (st = 0; st < XTX_ST__COUNT; st++)
				if (xtx_op_name(op) && xtxd_stat_read(&s->op[op][st]))
					xtxd_out_printf(out, "%-14s %-14s %16llu\n",
							xtx_op_name(op), status_name(st),
							(unsigned long long)xtxd_stat_read(
								&s->op[op][st]));
		return;
	}
	xtxd_out_printf(out, "{");
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		xtxd_out_printf(out, "%s\"%s\":%llu", i ? "," : "", c[i].name,
				(unsigned long long)c[i].val);
	xtxd_out_printf(out, ",\"drops\":{");
	for (i = 0; i < XTXD_DROP__COUNT; i++)
		xtxd_out_printf(out, "%s\"%s\":%llu", i ? "," : "", xtxd_drop_name(i),
				(unsigned long long)xtxd_stat_read(&s->drop[i]));
	xtxd_out_printf(out, "},\"ops\":{");
	for (op = 0; op < XTX_OP__COUNT; op++) {
		const char *inner = "";

		if (!xtx_op_name(op))
			continue;
		xtxd_out_printf(out, "%s\"%s\":{", sep, xtx_op_name(op));
		for (st = 0; st < XTX_ST__COUNT; st++) {
			if (!xtxd_stat_read(&s->op[op][st]))
				continue;
			xtxd_out_printf(out, "%s\"%s\":%llu", inner, status_name(st),
					(unsigned long long)xtxd_stat_read(&s->op[op][st]));
			inner = ",";
		}
		xtxd_out_printf(out, "}");
		sep = ",";
	}
	xtxd_out_printf(out, "}}\n");
}

static void cmd_dump(struct xtxd_out *out, char **argv, int argc)
{
	const char *why = "";
	bool json = false;
	long table = -1;
	char *end;
	int i, err;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--table") && i + 1 < argc) {
			table = strtol(argv[++i], &end, 0);
			if (*end || table < 0 || table >= XTX_MAX_TABLES) {
				xtxd_out_printf(out, "ERR --table: '%s' is not a table (0..%d)\n",
						argv[i], XTX_MAX_TABLES - 1);
				return;
			}
		} else {
			xtxd_out_printf(out, "ERR dump: unexpected argument '%s'\n", argv[i]);
			return;
		}
	}
	err = xtxd_dump(&ctl.t, xtxd_rare_store(), (int)table, json, out, &why);
	if (err)
		xtxd_out_printf(out, "ERR %s: %s\n", why, strerror(-err));
	else
		xtxd_out_printf(out, "OK\n");
}

/* Strict: all of s, decimal or 0x hex, in [0, max]. */
static bool arg_u64(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10);
	return !errno && !*end && *v <= max;
}

/* mark: this server's version mark (store/load.h), remembered for the loads that follow. */
static void cmd_mark(struct xtxd_out *out)
{
	uint64_t mark;
	int err = xtxd_version_mark(&ctl.t, xtxd_rare_store(), &mark);

	if (err) {
		xtxd_out_printf(out, "ERR mark: %s\n", strerror(-err));
		return;
	}
	if (mark > ctl.mark_issued)
		ctl.mark_issued = mark;
	xtxd_out_printf(out, "mark %llu\nOK\n", (unsigned long long)mark);
}

/*
 * "at V" ending a load: every new key at version V, which must be above
 * the version mark this server last answered (or has now), so no key's
 * version goes back whoever chose V.
 */
static int load_version(struct xtxd_out *out, char **argv, int *argc, uint64_t *version)
{
	uint64_t mark;
	int err;

	*version = 0;
	if (*argc < 3 || strcmp(argv[*argc - 2], "at"))
		return 0;
	if (!arg_u64(argv[*argc - 1], UINT64_MAX - 1, version) || !*version) {
		xtxd_out_printf(out, "ERR load: version '%s' is not a number 1..2^64-2\n",
				argv[*argc - 1]);
		return -1;
	}
	*argc -= 2;
	mark = ctl.mark_issued;
	if (!mark) {
		err = xtxd_version_mark(&ctl.t, xtxd_rare_store(), &mark);
		if (err) {
			xtxd_out_printf(out, "ERR load: the version mark: %s\n", strerror(-err));
			return -1;
		}
	}
	if (*version <= mark) {
		xtxd_out_printf(out, "ERR load: version %llu is not above this server's version "
				"mark %llu: ask every replica for its mark (xtxctl version-mark) "
				"and load at the highest + 1\n", (unsigned long long)*version,
				(unsigned long long)mark);
		return -1;
	}
	return 0;
}

/* Loaded keys are in no log: a snapshot makes them durable before the load's OK. */
static int load_durable(const struct xtxd_load_env *env)
{
	return xtxd_snapshot_save(env->t, env->store, env->out);
}

/*
 * load gen TABLE FIRST COUNT VSIZE SEED [at V]: xtxd makes the keys itself.
 * load file [at V]: the lines follow, up to the client's end of stream, and
 * the connection ends with the answer.
 */
static void cmd_load(struct xtxd_out *out, char **argv, int argc)
{
	struct xtxd_load_env env = {
		.t = &ctl.t,
		.store = xtxd_rare_store(),
		.out = out,
		.stop_fd = ctl.stop_fd,
		.make_durable = load_durable,
	};
	uint64_t table, first, count, vsize, seed;

	/* bulk loads are neither logged nor settled: a copier would miss rows loaded now */
	if (xtxd_member_copy_under_way()) {
		xtxd_out_printf(out, "ERR load: a shard is being copied to a new replica; load once "
				"'xtxctl cluster status' shows no copy under way\n");
		return;
	}
	if (load_version(out, argv, &argc, &env.version))
		return;
	if (argc == 2 && !strcmp(argv[1], "file")) {
		ctl.rest_taken = true;
		xtxd_load_file(&env, ctl.conn_fd, ctl.rest, ctl.rest_len);
		return;
	}
	if (argc != 7 || strcmp(argv[1], "gen")) {
		xtxd_out_printf(out, "ERR load: expected 'load gen TABLE FIRST COUNT VSIZE SEED "
				"[at V]' or 'load file [at V]'\n");
		return;
	}
	if (!arg_u64(argv[2], XTX_MAX_TABLES - 1, &table)) {
		xtxd_out_printf(out, "ERR load: table '%s' is not 0..%d\n", argv[2],
				XTX_MAX_TABLES - 1);
		return;
	}
	if (!arg_u64(argv[3], UINT64_MAX, &first) || !arg_u64(argv[4], UINT64_MAX, &count) ||
	    (count && count - 1 > UINT64_MAX - first)) {
		xtxd_out_printf(out, "ERR load: keys '%s' + '%s' are not a range of 64-bit keys\n",
				argv[3], argv[4]);
		return;
	}
	if (!arg_u64(argv[5], XTX_VALUE_MAX, &vsize)) {
		xtxd_out_printf(out, "ERR load: value size '%s' is not 0..%d\n", argv[5],
				XTX_VALUE_MAX);
		return;
	}
	if (!arg_u64(argv[6], UINT64_MAX, &seed)) {
		xtxd_out_printf(out, "ERR load: seed '%s' is not a 64-bit number\n", argv[6]);
		return;
	}
	xtxd_load_gen(&env, (uint8_t)table, first, count, (unsigned int)vsize, seed);
}

static void handle_line(struct xtxd_out *out, char *line)
{
	char *argv[CTL_MAX_ARGS], *save = NULL, *tok;
	bool json = false;
	int argc = 0, i;

	for (tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
		if (argc == CTL_MAX_ARGS) {
			xtxd_out_printf(out, "ERR too many arguments\n");
			return;
		}
		argv[argc++] = tok;
	}
	if (!argc) {
		xtxd_out_printf(out, "ERR empty request\n");
		return;
	}
	if (!xtxd_rare_store()) {
		xtxd_out_printf(out, "ERR the rare path is not running\n");
		return;
	}
	if (!strcmp(argv[0], "dump")) {
		cmd_dump(out, argv, argc);
		return;
	}
	if (!strcmp(argv[0], "snapshot")) {
		if (argc != 1)
			xtxd_out_printf(out, "ERR snapshot: unexpected argument '%s'\n", argv[1]);
		else
			xtxd_snapshot_take(&ctl.t, xtxd_rare_store(), out);
		return;
	}
	if (!strcmp(argv[0], "load")) {
		cmd_load(out, argv, argc);
		return;
	}
	if (!strcmp(argv[0], "mark")) {
		if (argc != 1)
			xtxd_out_printf(out, "ERR mark: unexpected argument '%s'\n", argv[1]);
		else
			cmd_mark(out);
		return;
	}
	if (!strcmp(argv[0], "stats")) {
		for (i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--json")) {
				xtxd_out_printf(out, "ERR stats: unexpected argument '%s'\n",
						argv[i]);
				return;
			}
			json = true;
		}
		cmd_stats(out, json);
		xtxd_out_printf(out, "OK\n");
		return;
	}
	xtxd_out_printf(out, "ERR unknown request '%s' (dump [--table N] [--json], "
			"stats [--json], load gen|file ... [at V], mark)\n", argv[0]);
}

/* Answers requests, one per line, until the client closes, stalls or hangs up. */
static void serve_conn(int fd)
{
	struct timeval tv = { .tv_sec = CTL_IO_TIMEOUT_S };
	struct pollfd pfd[2] = {
		{ .fd = fd, .events = POLLIN },
		{ .fd = ctl.stop_fd, .events = POLLIN },
	};
	char line[CTL_LINE_MAX];
	bool skipping = false;	/* inside an overlong request: up to its newline */
	size_t len = 0;
	ssize_t n;
	char *nl;
	int r;

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	xtxd_out_init(&ctl.out, fd);
	ctl.rest_taken = false;
	for (;;) {
		while ((nl = memchr(line, '\n', len))) {
			*nl = '\0';
			ctl.rest = nl + 1;
			ctl.rest_len = len - (nl + 1 - line);
			if (!skipping)
				handle_line(&ctl.out, line);
			skipping = false;
			/* a request that read the rest of the stream (load file) ends it */
			if (xtxd_out_flush(&ctl.out) || ctl.rest_taken)
				return;
			len -= nl + 1 - line;
			memmove(line, nl + 1, len);
		}
		if (len == sizeof(line)) {
			/* answer once, then drop the rest: closing now would reset the answer */
			if (!skipping)
				xtxd_out_printf(&ctl.out, "ERR request longer than %d bytes\n",
						CTL_LINE_MAX - 1);
			if (xtxd_out_flush(&ctl.out))
				return;
			skipping = true;
			len = 0;
		}
		r = poll(pfd, 2, CTL_IO_TIMEOUT_S * 1000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || pfd[1].revents)
			return;
		n = recv(fd, line + len, sizeof(line) - len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;
		len += n;
	}
}

static void *control_main(void *arg)
{
	struct pollfd pfd[2] = {
		{ .fd = ctl.listen_fd, .events = POLLIN },
		{ .fd = ctl.stop_fd, .events = POLLIN },
	};
	int fd;

	(void)arg;
	/* dump walks the overflow store under RCU */
	rcu_register_thread();
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			pr_warn("control: poll: %s\n", strerror(errno));
			break;
		}
		if (pfd[1].revents)
			break;
		fd = accept4(ctl.listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		pthread_mutex_lock(&ctl.conn_lock);
		ctl.conn_fd = fd;
		pthread_mutex_unlock(&ctl.conn_lock);
		serve_conn(fd);
		pthread_mutex_lock(&ctl.conn_lock);
		ctl.conn_fd = -1;
		close(fd);
		pthread_mutex_unlock(&ctl.conn_lock);
	}
	rcu_unregister_thread();
	return NULL;
}

int xtxd_control_start(const struct xtx_target *t)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int err;

	ctl.t = *t;
	if (strlen(t->ctl_sock) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "Error: control socket path %s: %s\n", t->ctl_sock,
			strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	strcpy(addr.sun_path, t->ctl_sock);
	ctl.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ctl.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ctl.stop_fd < 0 || ctl.listen_fd < 0) {
		err = -errno;
		fprintf(stderr, "Error: control socket: %s\n", strerror(-err));
		goto fail;
	}
	/* a crashed xtxd leaves its socket behind; main already made sure it is gone */
	if (unlink(t->ctl_sock) && errno != ENOENT) {
		err = -errno;
		fprintf(stderr, "Error: removing stale control socket %s: %s\n", t->ctl_sock,
			strerror(-err));
		goto fail;
	}
	/*
	 * bind creates it 0755 at most under the usual umask, and connecting
	 * needs write permission: no one else can connect before the chmod.
	 */
	if (bind(ctl.listen_fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    chmod(t->ctl_sock, 0600) || listen(ctl.listen_fd, 16)) {
		err = -errno;
		fprintf(stderr, "Error: control socket %s: %s\n", t->ctl_sock, strerror(-err));
		goto fail;
	}
	err = -pthread_create(&ctl.tid, NULL, control_main, NULL);
	if (err) {
		fprintf(stderr, "Error: starting the control thread: %s\n", strerror(-err));
		goto fail;
	}
	ctl.running = true;
	pr_info("control channel on %s\n", t->ctl_sock);
	return 0;
fail:
	xtxd_control_stop();
	return err;
}

void xtxd_control_stop(void)
{
	uint64_t one = 1;

	if (ctl.running) {
		if (write(ctl.stop_fd, &one, sizeof(one)) != sizeof(one))
			pr_warn("control: waking the thread: %s\n", strerror(errno));
		/* a send blocked on a client that stopped reading */
		pthread_mutex_lock(&ctl.conn_lock);
		if (ctl.conn_fd >= 0)
			shutdown(ctl.conn_fd, SHUT_RDWR);
		pthread_mutex_unlock(&ctl.conn_lock);
		pthread_join(ctl.tid, NULL);
		ctl.running = false;
	}
	if (ctl.listen_fd >= 0) {
		close(ctl.listen_fd);
		unlink(ctl.t.ctl_sock);
	}
	ctl.listen_fd = -1;
	if (ctl.stop_fd >= 0)
		close(ctl.stop_fd);
	ctl.stop_fd = -1;
}
