// SPDX-License-Identifier: GPL-2.0-only
/* xtxctl: operator CLI for a loaded xtx server (stats, fault knobs, unload). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <bpf/bpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/log.h>
#include "attach.h"
#include "log.h"
#include "logfile.h"
#include "logrec.h"
#include "names.h"
#include "num.h"
#include "version.h"
#include "allow.h"
#include "occupancy.h"
#include "top.h"
#include "xtxctl_cluster.h"
#include "stats_read.h"
#include "target.h"
#include "tlock.h"
#include "progress.h"
#include "clock.h"
#include "loadgen.h"

struct ctl_opts {
	const char *iface;
	const char *netns;
	bool json;
	int table;		/* dump --table, -1: all */
	bool set_req, set_rep, set_rare;
	int break_validate;	/* -1: unchanged, else 0 or 1 */
	uint32_t drop_req_ppm, drop_rep_ppm, drop_rare_ppm;
	/* load */
	bool has_count, has_vsize, print;
	uint64_t load_version;	/* load --version: 0, none */
	uint64_t count, first, seed;
	uint32_t vsize;
	const char *file;
	const char *data_dir;	/* log: where xtxd drains to, if not its default */
	uint32_t interval_ms;	/* top: refresh period */
	uint32_t refreshes;	/* top: how many, 0 until interrupted */
	bool force;		/* unload --force */
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxctl [--netns NAME] --iface IF COMMAND [options]\n"
		"       xtxctl cluster init|status|recover --zk HOSTS ...  (xtxctl cluster --help)\n"
		"Inspect and control the xtx server loaded on IF, or a cluster's configuration.\n"
		"\n"
		"Commands:\n"
		"  stats [--json]          packet, op and status counters, summed over CPUs\n"
		"  top [--interval MS] [--refreshes N]\n"
		"                          live rates, rare-path share, busiest ops, lock and\n"
		"                          HADES occupancy (default every 1000 ms until Ctrl-C)\n"
		"  info [--json]           how the loaded program was configured, and how full it is\n"
		"  allow add|del CIDR[,...]  change the client allowlist (add switches it on)\n"
		"  allow list|on|off       show it, or switch enforcement (the list is kept)\n"
		"  fault [--drop-request-ppm N] [--drop-reply-ppm N] [--drop-rare-reply-ppm N]\n"
		"                          lose that share (parts per million) of requests or\n"
		"                          replies in XDP, or of xtxd's replies after it ran\n"
		"                          them, for loss tests; no option shows them\n"
		"        [--break-validate on|off]\n"
		"                          OCC_VALIDATE answers OK and READ hides locks: breaks\n"
		"                          serializability on purpose, for the history\n"
		"                          checker's negative tests; never in service\n"
		"  dump [--table N] [--json]\n"
		"                          every live key, value and version of the KV store\n"
		"                          (kernel cache and xtxd's overflow store), by table and key\n"
		"  rare-stats [--json]     xtxd's rare-path counters and overflow store size\n"
		"  snapshot                xtxd saves the whole KV store to its data directory and\n"
		"                          removes the log segments the snapshot covers; the next\n"
		"                          fresh start recovers from it and the logs after it\n"
		"  load --count N [--table T] [--first K] [--value-size B] [--seed S] [--print]\n"
		"                          bulk-load keys K..K+N-1 of table T (default 0 and 0),\n"
		"                          skipping (never overwriting) keys present; values of B\n"
		"                          bytes, up to 1024 (default 40, or the server's\n"
		"                          --value-size when smaller) made from (S, T, key);\n"
		"                          --print writes them as file lines\n"
		"  load --file PATH        the same for the lines 'table key hexvalue' of PATH\n"
		"                          ('-': stdin; '#' comments); a bad line loads nothing\n"
		"       [--version V]      new keys at version V, not one above their bucket's\n"
		"                          floor: load every replica of a key at one V, the\n"
		"                          highest version-mark of them + 1, and they agree\n"
		"  version-mark            the highest version this server holds or held\n"
		"  unload                  stop xtxd, detach the program, remove the pinned maps;\n"
		"       [--force]          also when HADES transactions committing here were not\n"
		"                          saved by xtxd (killed), or log entries it acknowledged\n"
		"                          are not on disk (its log drain failed): they are then\n"
		"                          lost here\n"
		"  log stats [--json]      per CPU log tail, head, fill, appends and LOG_FULLs; the\n"
		"                          data directory's files and records; the drain's counters\n"
		"  log dump [--json]       every log record on disk, then those still in the ring;\n"
		"                          reports a torn tail or corruption\n"
		"\n"
		"Options:\n"
		"  -n, --netns NAME        the interface lives in network namespace NAME\n"
		"  -i, --iface IF          the interface xtx serves\n"
		"  -j, --json              machine-readable output\n"
		"  -t, --table N           dump: only table N; load: the table of the keys\n"
		"      --data-dir DIR      log: the data directory (default: the running xtxd's,\n"
		"                          else %s/<netns>-<iface>)\n"
		"  -v, --verbose           more output\n"
		"  -h, --help              this text\n"
		"  -V, --version           the release and build (alone)\n"
		"\n"
		"Example: xtxctl --netns xtx-s0 --iface xtxs0 stats\n", XTX_LOGFILE_DIR_ROOT);
}

static int open_map(const struct xtx_target *t, const char *name)
{
	int fd = xtx_target_map_fd(t, name);

	if (fd < 0)
		fprintf(stderr, "Error: no xtx server on %s (%s/%s: %s); is it loaded?\n",
			t->iface, t->pin_dir, name, strerror(-fd));
	return fd;
}

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

static void print_stats_json(const struct xtx_stats *s, const struct xtx_lock_occupancy *occ,
			     __u64 hades_committing)
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
	       "\"logged\":%llu,\"reclaimable\":%llu},\"hades_committing\":%llu}\n",
	       (unsigned long long)occ->slots, (unsigned long long)occ->held,
	       (unsigned long long)occ->shared, (unsigned long long)occ->exclusive,
	       (unsigned long long)occ->logged, (unsigned long long)occ->reclaimable,
	       (unsigned long long)hades_committing);
}


static int cmd_stats(const struct xtx_target *t, const struct ctl_opts *o)
{
	struct xtx_lock_occupancy occ;
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
		err = xtx_lock_occupancy(t, &occ);
	if (err) {
		fprintf(stderr, "Error: reading stats: %s\n", strerror(-err));
		free(s);
		return 1;
	}
	if (o->json) {
		__u64 committing = 0;

		/* a map of another build's layout: none counted, as without HADES */
		if (xtx_hades_committing_slots(t, &committing))
			committing = 0;
		print_stats_json(s, &occ, committing);
	} else {
		print_stats_text(s);
		printf("\n%-22s %16llu\n%-22s %16llu\n%-22s %16llu\n%-22s %16llu\n%-22s %16llu\n"
		       "%-22s %16llu\n", "lock_slots", (unsigned long long)occ.slots, "locks_held",
		       (unsigned long long)occ.held, "locks_shared", (unsigned long long)occ.shared,
		       "locks_excl", (unsigned long long)occ.exclusive, "locks_logged",
		       (unsigned long long)occ.logged, "locks_reclaimable",
		       (unsigned long long)occ.reclaimable);
	}
	free(s);
	return 0;
}

/*
 * Asks xtxd over its control socket and keeps the answer (its lines before
 * "OK") in buf: 0, or a negative errno and nothing said (the caller decides
 * whether an absent xtxd is an error).
 */
static int ctl_fetch(const struct xtx_target *t, const char *req, char *buf, size_t cap)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 };
	size_t len = 0;
	ssize_t n;
	char *ok;
	int fd, err = -EPROTO;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", t->ctl_sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		err = -errno;
		goto out;
	}
	while (len < cap - 1) {
		n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
		buf[len] = '\0';
		ok = strstr(buf, "\nOK\n");
		if (ok || !strncmp(buf, "OK\n", 3)) {
			*(ok ? ok + 1 : buf) = '\0';
			err = 0;
			break;
		}
		if (!strncmp(buf, "ERR", 3) && strchr(buf, '\n'))
			break;
	}
out:
	close(fd);
	return err;
}

static double pct(unsigned long long part, unsigned long long whole)
{
	return whole ? 100.0 * part / whole : 0.0;
}

/* How full the server is: the kernel cache from its map, the overflow store from xtxd. */
struct fill {
	struct xtx_kv_occupancy kv;
	bool kv_ok, store_ok;
	unsigned long long store_keys, store_max, capacity;
};

static void read_fill(const struct xtx_target *t, struct fill *f)
{
	char buf[65536];	/* the per-op status counts grow with use */

	memset(f, 0, sizeof(*f));
	f->kv_ok = !xtx_kv_occupancy(t, &f->kv);
	f->store_ok = !ctl_fetch(t, "stats --json\n", buf, sizeof(buf)) &&
		      xtx_json_u64(buf, "store_keys", &f->store_keys) &&
		      xtx_json_u64(buf, "store_max", &f->store_max);
	if (f->store_ok && !xtx_json_u64(buf, "capacity", &f->capacity))
		f->capacity = 0;
}

/*
 * The xtxd serving t: the one in its pidfile, else the one holding its pin
 * directory's lock (started with another --pidfile); 0 when none runs.
 */
static int daemon_pid(const struct xtx_target *t)
{
	int pid = xtx_pidfile_alive(t->pidfile);

	if (!pid) {
		pid = xtx_target_lock_holder(t);
		if (pid < 0 || !xtx_pid_is_xtxd(pid))
			pid = 0;
	}
	return pid;
}

static int cmd_info(const struct xtx_target *t, const struct ctl_opts *o)
{
	struct xtx_attached a;
	struct xtx_info info;
	struct fill f;
	unsigned long long keys;
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
	pid = daemon_pid(t);
	read_fill(t, &f);
	/*
	 * A key the overflow store holds a copy of is counted once, and one
	 * deleted in the kernel whose tombstone is not yet written back (the
	 * store still holds it) not at all.
	 */
	keys = f.kv.keys - f.kv.in_user + f.store_keys - f.kv.tombs;
	if (o->json) {
		printf("{\"iface\":\"%s\",\"netns\":\"%s\",\"port\":%u,\"max_clients\":%u,"
		       "\"echo\":%u,\"lock_slots\":%u,\"kv_buckets\":%u,\"kv_flags\":%u,"
		       "\"value_size\":%u,\"prog_id\":%u,\"libxdp\":%s,\"xtxd_pid\":%d,"
		       "\"pin_dir\":\"%s\"",
		       t->iface, t->ns_tag, info.port, info.max_clients, info.echo_mode,
		       info.lock_slots, info.kv_buckets, info.kv_flags, info.value_size,
		       a.xtx_prog_id, a.xtx_via_libxdp ? "true" : "false", pid, t->pin_dir);
		if (f.kv_ok)
			printf(",\"kv_slots\":%llu,\"kv_keys\":%llu,\"kv_in_store\":%llu,"
			       "\"kv_tombs\":%llu,\"kv_fill_pct\":%.1f",
			       (unsigned long long)f.kv.slots, (unsigned long long)f.kv.keys,
			       (unsigned long long)f.kv.in_user, (unsigned long long)f.kv.tombs,
			       pct(f.kv.keys, f.kv.slots));
		if (f.store_ok)
			printf(",\"store_keys\":%llu,\"store_max\":%llu,\"store_fill_pct\":%.1f,"
			       "\"capacity\":%llu,\"max_keys\":%llu",
			       f.store_keys, f.store_max, pct(f.store_keys, f.store_max), f.capacity,
			       (unsigned long long)f.kv.slots + f.store_max);
		if (f.kv_ok && f.store_ok)
			printf(",\"keys\":%llu", keys);
		printf("}\n");
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
	if (f.store_ok)
		printf("capacity     %s%llu\n", f.capacity ? "" : "(not given) ", f.capacity);
	if (f.kv_ok)
		printf("kv_cache     %llu of %llu slots (%.1f%%), %llu also in the store, %llu "
		       "tombstones\n", (unsigned long long)f.kv.keys,
		       (unsigned long long)f.kv.slots, pct(f.kv.keys, f.kv.slots),
		       (unsigned long long)f.kv.in_user, (unsigned long long)f.kv.tombs);
	if (f.store_ok)
		printf("store        %llu of %llu keys (%.1f%%)\n", f.store_keys, f.store_max,
		       pct(f.store_keys, f.store_max));
	else
		printf("store        unknown (xtxd not answering)\n");
	if (f.kv_ok && f.store_ok)
		printf("keys         %llu (at most %llu: cache slots + store)\n", keys,
		       (unsigned long long)f.kv.slots + f.store_max);
	return 0;
}

static int cmd_allow(const struct xtx_target *t, const struct ctl_opts *o, const char *sub,
		     const char *arg)
{
	struct xtx_allow_key keys[XTX_ALLOW_MAX];
	char buf[32];
	bool on;
	int n, i;

	if ((!strcmp(sub, "add") || !strcmp(sub, "del")) != !!arg) {
		fprintf(stderr, "Error: allow %s %s\n", sub,
			arg ? "takes no argument" : "needs CIDR[,CIDR...]");
		return 2;
	}
	if (!strcmp(sub, "add"))
		return xtx_allow_add(t, arg, false) ? 1 : 0;
	if (!strcmp(sub, "del")) {
		char *copy = strdup(arg), *tok, *save = NULL;
		int rc = 0;

		for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
		     tok = strtok_r(NULL, ",", &save))
			rc |= xtx_allow_del(t, tok) ? 1 : 0;
		free(copy);
		return rc;
	}
	if (!strcmp(sub, "on") || !strcmp(sub, "off"))
		return xtx_allow_switch(t, !strcmp(sub, "on")) ? 1 : 0;
	if (strcmp(sub, "list")) {
		fprintf(stderr, "Error: unknown allow command '%s' (add, del, list, on, off)\n", sub);
		return 2;
	}
	n = xtx_allow_list(t, keys, XTX_ALLOW_MAX, &on);
	if (n < 0) {
		fprintf(stderr, "Error: reading the allowlist: %s\n", strerror(-n));
		return 1;
	}
	if (o->json)
		printf("{\"enforced\":%s,\"prefixes\":[", on ? "true" : "false");
	else
		printf("allowlist %s\n", on ? "enforced" : "off: every source is served");
	for (i = 0; i < n; i++) {
		xtx_allow_format(&keys[i], buf, sizeof(buf));
		printf(o->json ? "%s\"%s\"" : "%s%s\n", o->json && i ? "," : "", buf);
	}
	if (o->json)
		printf("]}\n");
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
	if (o->break_validate >= 0)
		rt.flags = o->break_validate ? rt.flags | XTX_RTF_BREAK_VALIDATE :
					       rt.flags & ~XTX_RTF_BREAK_VALIDATE;
	if ((o->set_req || o->set_rep || o->set_rare || o->break_validate >= 0) &&
	    bpf_map_update_elem(fd, &zero, &rt, 0)) {
		fprintf(stderr, "Error: writing xtx_runtime: %s\n", strerror(errno));
		goto out;
	}
	printf("drop_request_ppm %u\ndrop_reply_ppm %u\ndrop_rare_reply_ppm %u\n"
	       "break_validate %s\n", rt.drop_request_ppm, rt.drop_reply_ppm,
	       rt.drop_rare_reply_ppm, rt.flags & XTX_RTF_BREAK_VALIDATE ? "on" : "off");
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

/* ---- load ---- */

/* The value xtxd's generator gives (table, key): the same function, from load.h. */
static int cmd_load_print(const struct ctl_opts *o)
{
	uint8_t value[XTX_VALUE_MAX];
	uint64_t i;
	uint32_t j;

	for (i = 0; i < o->count; i++) {
		xtxd_load_gen_value(o->seed, (uint8_t)o->table, o->first + i, o->vsize, value);
		printf("%d %llu%s", o->table, (unsigned long long)(o->first + i),
		       o->vsize ? " " : "");
		for (j = 0; j < o->vsize; j++)
			printf("%02x", value[j]);
		putchar('\n');
	}
	return fflush(stdout) ? 1 : 0;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Progress on stderr: a bar redrawn in place on a terminal; elsewhere (a log, a
 * pipe) a line once a second, with the rate and the time left.
 */
static void draw_bar(bool tty, const char *what, uint64_t done, uint64_t total, const char *unit,
		     double secs)
{
	static double last_line;
	char bar[31];
	int width = sizeof(bar) - 1, fill, i;

	if (!tty) {
		double every = xtx_progress_every_ns() / 1e9;

		if (secs < last_line + every || secs < every)
			return;
		last_line = secs;
		fprintf(stderr, "%s: %llu of %llu %s (%.0f%%), %.0f %s/s", what,
			(unsigned long long)done, (unsigned long long)total, unit,
			total ? 100.0 * done / total : 0.0, done / secs, unit);
		if (done && done < total)
			fprintf(stderr, ", about %.0f s left", (total - done) / (done / secs));
		fputc('\n', stderr);
		return;
	}
	fill = total ? (int)((double)done / total * width) : 0;
	for (i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[width] = '\0';
	fprintf(stderr, "\r\033[K%s [%s] %3.0f%% %llu/%llu %s", what, bar,
		total ? 100.0 * done / total : 0.0, (unsigned long long)done,
		(unsigned long long)total, unit);
	if (secs > 0)
		fprintf(stderr, ", %.0f %s/s", done / secs, unit);
}

static void clear_bar(bool tty)
{
	if (tty)
		fprintf(stderr, "\r\033[K");
}

static int load_connect(const struct xtx_target *t)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", t->ctl_sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "Error: socket: %s\n", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			fprintf(stderr, "Error: xtxd is not running for %s (control socket %s: "
				"%s)\n", t->iface, t->ctl_sock, strerror(errno));
		else
			fprintf(stderr, "Error: connecting to xtxd at %s: %s\n", t->ctl_sock,
				strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	ssize_t r;

	while (n) {
		r = send(fd, p, n, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		p += r;
		n -= r;
	}
	return 0;
}

/*
 * Streams the file after the request.  xtxd answers only after the end of
 * the stream, except for a bad line: then it answers at once and stops
 * reading, our send fails, and the answer waits in the socket.
 */
static int load_send_file(int fd, const char *path, bool tty)
{
	static char buf[256 * 1024];
	uint64_t size = 0, sent = 0;
	double t0 = mono_s();
	struct stat st;
	int in, err = 0;
	ssize_t n;

	in = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (in < 0) {
		fprintf(stderr, "Error: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!fstat(in, &st) && S_ISREG(st.st_mode))
		size = st.st_size;
	for (;;) {
		n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "Error: reading %s: %s\n", path, strerror(errno));
			err = -1;
			break;
		}
		if (!n)
			break;
		if (send_all(fd, buf, n))
			break;	/* xtxd stopped reading: its answer says why */
		sent += n;
		if (size)
			draw_bar(tty, "sending", sent >> 20, size >> 20, "MiB", mono_s() - t0);
	}
	if (in != STDIN_FILENO)
		close(in);
	shutdown(fd, SHUT_WR);
	return err;
}

struct load_answer {
	bool result;
	unsigned long long keys, kernel, store, duplicates, takeovers, busy, stale;
	double xtxd_s;
};

static void parse_result(const char *line, struct load_answer *a)
{
	a->result = sscanf(line, "result keys=%llu kernel=%llu store=%llu duplicates=%llu "
			   "takeovers=%llu busy=%llu seconds=%lf stale=%llu", &a->keys, &a->kernel,
			   &a->store, &a->duplicates, &a->takeovers, &a->busy, &a->xtxd_s,
			   &a->stale) == 8;
}

static void print_loaded(const struct load_answer *a, double secs)
{
	if (!a->result)
		return;
	printf("loaded %llu keys in %.2f s (%.0f keys/s): %llu in the kernel cache, %llu in the "
	       "overflow store, %llu duplicates skipped\n", a->keys, secs,
	       secs > 0 ? a->keys / secs : 0.0, a->kernel, a->store, a->duplicates);
	if (a->stale)
		printf("%llu keys deleted at or above --version since it was chosen: skipped\n",
		       a->stale);
	pr_info("xtxd took %.3f s to insert; %llu busy buckets retried, %llu taken over\n",
		a->xtxd_s, a->busy, a->takeovers);
	fflush(stdout);
}

/* Reads xtxd's answer to a load: progress lines, the result, OK or ERR. */
static int load_answer(int fd, const struct ctl_opts *o, bool tty, double t0)
{
	struct load_answer a = {};
	char buf[4096], *line, *nl;
	unsigned long long done, total;
	size_t len = 0;
	ssize_t n;

	for (;;) {
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			clear_bar(tty);
			print_loaded(&a, mono_s() - t0);
			fprintf(stderr, "Error: xtxd closed the control connection without an "
				"answer%s%s\n", n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			return 1;
		}
		len += n;
		buf[len] = '\0';
		for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = '\0';
			if (sscanf(line, "progress %llu %llu", &done, &total) == 2) {
				draw_bar(tty, "loading", done, total, "keys", mono_s() - t0);
				continue;
			}
			if (!strncmp(line, "result ", 7)) {
				parse_result(line, &a);
				continue;
			}
			if (!strcmp(line, "OK")) {
				clear_bar(tty);
				print_loaded(&a, mono_s() - t0);
				return 0;
			}
			if (!strncmp(line, "ERR", 3) && (!line[3] || line[3] == ' ')) {
				clear_bar(tty);
				print_loaded(&a, mono_s() - t0);
				if (o->file && !strncmp(line, "ERR line ", 9))
					fprintf(stderr, "Error: %s: %s; nothing was loaded\n",
						o->file, line + 4);
				else
					fprintf(stderr, "Error: %s\n",
						line[3] ? line + 4 : "xtxd refused the request");
				return 1;
			}
			clear_bar(tty);
			puts(line);
		}
		len -= line - buf;
		memmove(buf, line, len);
		if (len == sizeof(buf) - 1) {
			fprintf(stderr, "Error: xtxd sent a line longer than %zu bytes\n", len);
			return 1;
		}
	}
}

/* The server's largest value (xtxd --value-size), or XTX_VALUE_INLINE when unknown. */
static uint32_t server_value_size(const struct xtx_target *t)
{
	struct xtx_info info;
	__u32 zero = 0;
	int fd = xtx_target_map_fd(t, XTX_MAP_INFO);
	uint32_t vs = XTX_VALUE_INLINE;

	if (fd < 0)
		return vs;
	if (!bpf_map_lookup_elem(fd, &zero, &info) && info.value_size &&
	    info.value_size < XTX_VALUE_INLINE)
		vs = info.value_size;
	close(fd);
	return vs;
}

static int cmd_load(const struct xtx_target *t, struct ctl_opts *o)
{
	bool tty = isatty(STDERR_FILENO);
	char req[160], at[32] = "";
	double t0;
	int fd, rc;

	if (o->load_version)
		snprintf(at, sizeof(at), " at %llu", (unsigned long long)o->load_version);
	if (!o->has_vsize)
		o->vsize = server_value_size(t);
	fd = load_connect(t);
	if (fd < 0)
		return 1;
	t0 = mono_s();
	if (o->file) {
		snprintf(req, sizeof(req), "load file%s\n", at);
		rc = send_all(fd, req, strlen(req));
		if (rc) {
			fprintf(stderr, "Error: sending to xtxd at %s: %s\n", t->ctl_sock,
				strerror(-rc));
			close(fd);
			return 1;
		}
		if (load_send_file(fd, o->file, tty)) {
			close(fd);
			return 1;
		}
	} else {
		snprintf(req, sizeof(req), "load gen %d %llu %llu %u %llu%s\n", o->table,
			 (unsigned long long)o->first, (unsigned long long)o->count, o->vsize,
			 (unsigned long long)o->seed, at);
		rc = send_all(fd, req, strlen(req));
		if (rc) {
			fprintf(stderr, "Error: sending to xtxd at %s: %s\n", t->ctl_sock,
				strerror(-rc));
			close(fd);
			return 1;
		}
	}
	rc = load_answer(fd, o, tty, t0);
	close(fd);
	return rc;
}

/* Which of --count and --file, and whether the rest fits. */
static int load_check_opts(struct ctl_opts *o)
{
	if (o->has_count == !!o->file) {
		fprintf(stderr, "Error: load: give either --count N or --file PATH\n");
		return -1;
	}
	if (o->file && (o->print || o->has_vsize || o->first || o->seed != XTXD_LOAD_SEED_DEFAULT ||
			o->table >= 0)) {
		fprintf(stderr, "Error: load --file: the file names tables, keys and values; "
			"--table, --first, --value-size, --seed and --print are for --count\n");
		return -1;
	}
	if (o->count && o->count - 1 > UINT64_MAX - o->first) {
		fprintf(stderr, "Error: load: --first %llu --count %llu runs past the last key\n",
			(unsigned long long)o->first, (unsigned long long)o->count);
		return -1;
	}
	if (o->table < 0)
		o->table = 0;
	if (o->print && !o->has_vsize)
		o->vsize = XTX_VALUE_INLINE;
	return 0;
}

/* ---- log ---- */

/* The ring side of the logs: every CPU's cursor and the incarnation they belong to. */
struct log_ring {
	uint32_t ncpu, ring, map_id;
	struct xtx_log_cursor *cur;
	int log_fd;
};

static int log_ring_open(const struct xtx_target *t, struct log_ring *r)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), zero = 0, c;
	struct xtx_info xi;
	int fd, err = 0;

	memset(r, 0, sizeof(*r));
	r->log_fd = -1;
	fd = xtx_target_map_fd(t, XTX_MAP_INFO);
	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &zero, &xi))
		err = -errno;
	close(fd);
	if (err)
		return err;
	r->ring = xi.log_ring;
	fd = xtx_target_map_fd(t, XTX_MAP_LOG_CURSOR);
	if (fd < 0)
		return fd;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.max_entries) {
		err = -errno ?: -EINVAL;
		close(fd);
		return err;
	}
	r->ncpu = info.max_entries;
	r->map_id = info.id;
	r->cur = calloc(r->ncpu, sizeof(*r->cur));
	for (c = 0; r->cur && c < r->ncpu && !err; c++)
		if (bpf_map_lookup_elem(fd, &c, &r->cur[c]))
			err = -errno;
	close(fd);
	if (!r->cur || err)
		goto fail;
	r->log_fd = xtx_target_map_fd(t, XTX_MAP_LOG);
	if (r->log_fd < 0) {
		err = r->log_fd;
		goto fail;
	}
	return 0;
fail:
	free(r->cur);
	r->cur = NULL;
	return err ?: -ENOMEM;
}

static void log_ring_close(struct log_ring *r)
{
	free(r->cur);
	if (r->log_fd >= 0)
		close(r->log_fd);
}

static int log_dir_open(const char *dir)
{
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* The drain's counters, as xtxd rewrites them each second: "key value" lines. */
static void log_print_drain(const struct xtx_target *t, bool json)
{
	char path[PATH_MAX], key[64], val[PATH_MAX];
	const char *sep = "";
	FILE *f;

	xtx_logdrain_stats_path(t, path, sizeof(path));
	/* a crashed xtxd leaves its last counters behind */
	f = daemon_pid(t) ? fopen(path, "r") : NULL;
	if (!f) {
		if (json)
			printf(",\"drain\":null");
		else
			printf("drain                (xtxd is not running)\n");
		return;
	}
	if (json)
		printf(",\"drain\":{");
	while (fscanf(f, "%63s %4095s", key, val) == 2) {
		if (!json) {
			printf("drain_%-14s %s\n", key, val);
			continue;
		}
		if (val[strspn(val, "0123456789")] || !val[0] || (val[0] == '0' && val[1]))
			printf("%s\"%s\":\"%s\"", sep, key, val);
		else
			printf("%s\"%s\":%s", sep, key, val);
		sep = ",";
	}
	if (json)
		printf("}");
	fclose(f);
}

static int cmd_log_stats(const struct xtx_target *t, const struct ctl_opts *o, const char *dir)
{
	uint64_t files = 0, records = 0, partial = 0;
	struct xtx_logseg *segs = NULL;
	struct log_ring r;
	size_t nseg = 0, i;
	int err, dirfd, dir_err;

	err = log_ring_open(t, &r);
	if (err) {
		fprintf(stderr, "Error: no xtx log on %s (%s: %s); is it loaded?\n", t->iface,
			t->pin_dir, strerror(-err));
		return 1;
	}
	/* a count that needs no reading of every record */
	dirfd = log_dir_open(dir);
	dir_err = errno;
	if (dirfd >= 0 && !xtx_logfile_list(dirfd, &segs, &nseg)) {
		for (i = 0; i < nseg; i++) {
			uint64_t n, p;

			if (xtx_logfile_count(dirfd, segs[i].name, &n, &p))
				continue;
			files++;
			records += n;
			partial += p;
		}
	}
	if (o->json) {
		printf("{\"ring\":%u,\"cpus\":[", r.ring);
		for (i = 0; i < r.ncpu; i++)
			printf("%s{\"cpu\":%zu,\"tail\":%llu,\"head\":%llu,\"fill\":%llu,"
			       "\"appended\":%llu,\"full\":%llu}", i ? "," : "", i,
			       (unsigned long long)r.cur[i].tail, (unsigned long long)r.cur[i].head,
			       (unsigned long long)(r.cur[i].tail - r.cur[i].head),
			       (unsigned long long)r.cur[i].appended,
			       (unsigned long long)r.cur[i].full);
		printf("],\"data_dir\":\"%s\",\"readable\":%s,\"files\":%llu,\"records\":%llu,"
		       "\"partial_bytes\":%llu", dir, dirfd >= 0 ? "true" : "false",
		       (unsigned long long)files, (unsigned long long)records,
		       (unsigned long long)partial);
		log_print_drain(t, true);
		printf("}\n");
	} else {
		printf("%-4s %16s %16s %8s %16s %10s\n", "cpu", "tail", "head", "fill", "appended",
		       "full");
		for (i = 0; i < r.ncpu; i++)
			printf("%-4zu %16llu %16llu %8llu %16llu %10llu\n", i,
			       (unsigned long long)r.cur[i].tail, (unsigned long long)r.cur[i].head,
			       (unsigned long long)(r.cur[i].tail - r.cur[i].head),
			       (unsigned long long)r.cur[i].appended,
			       (unsigned long long)r.cur[i].full);
		printf("\n%-20s %u entries per CPU\n", "ring", r.ring);
		if (dirfd >= 0)
			printf("%-20s %s: %llu files, %llu records%s\n", "data_dir", dir,
			       (unsigned long long)files, (unsigned long long)records,
			       partial ? " and a partial one (torn tail)" : "");
		else
			printf("%-20s %s: %s\n", "data_dir", dir, strerror(dir_err));
		log_print_drain(t, false);
	}
	free(segs);
	if (dirfd >= 0)
		close(dirfd);
	log_ring_close(&r);
	return 0;
}

/*
 * Prints dump records one way or the other; in JSON, elements of an array.
 * Entries are gathered into writes (a big value's head and continuations
 * are one line), n counting entries, writes the lines.
 */
struct log_out {
	bool json;
	bool first;
	uint64_t n, writes;
	uint64_t marks;		/* commit marks (XTX_LOGF_COMMITTED): lines, but no writes */
	uint64_t damaged;	/* writes malformed or out of sequence */
};

static void log_out_entry(struct log_out *out, struct xtx_logrec *rec, uint32_t cpu,
			  const struct xtx_log_entry *e)
{
	out->n++;
	switch (xtx_logrec_feed(rec, e)) {
	case XTX_LOGREC_MORE:
		return;
	case XTX_LOGREC_DAMAGED:
		out->damaged++;
		if (!out->json)
			printf("# damaged: cpu %u seq %llu: %s\n", cpu, (unsigned long long)e->seq,
			       rec->why);
		return;
	case XTX_LOGREC_WRITE:
		break;
	}
	if (out->json)
		fputs(out->first ? "" : ",", stdout);
	xtx_logrec_print(stdout, cpu, &rec->w, out->json);
	out->first = false;
	if (xtx_log_is_mark(&rec->w.e))
		out->marks++;
	else
		out->writes++;
}

/* The end of a CPU's log: a write still waiting for continuations never got them. */
static void log_out_end(struct log_out *out, struct xtx_logrec *rec, uint32_t cpu)
{
	if (!xtx_logrec_partial(rec))
		return;
	if (!out->json)
		printf("# cut short: cpu %u seq %llu: a big write without %u of its %u "
		       "continuations (never replayed)\n", cpu, (unsigned long long)rec->w.e.seq,
		       rec->want - rec->got, rec->want);
	xtx_logrec_reset(rec);
}

/*
 * Every record on disk, CPU by CPU and segment by segment, then what the
 * ring holds beyond it; a torn tail or damage is reported where found.
 */
static int cmd_log_dump(const struct xtx_target *t, const struct ctl_opts *o, const char *dir)
{
	struct log_out out = { .json = o->json, .first = true };
	struct xtx_logrec *recs = NULL, *rec;
	struct xtx_logseg *segs = NULL;
	struct xtx_log_epoch ep = {};
	struct log_ring r;
	uint64_t *disk_next = NULL, torn = 0, bad = 0, ring_n = 0, drained_meanwhile = 0;
	uint64_t prev_next = 0;
	struct xtx_logfile_hdr prev = {};
	bool have_ring, *disk_matches = NULL, prev_ok = false;
	size_t nseg = 0, i;
	int dirfd, err;

	/* the cursors first: whatever leaves the ring after this is on disk when we look */
	have_ring = !log_ring_open(t, &r);
	if (have_ring) {
		ep.map_id = r.map_id;
		xtx_log_epoch_boot_id(ep.boot_id);
		disk_next = calloc(r.ncpu, sizeof(*disk_next));
		disk_matches = calloc(r.ncpu, sizeof(*disk_matches));
	}
	/* one per ring CPU (a write may go on from disk into the ring), one for the others */
	recs = calloc((have_ring ? r.ncpu : 0) + 1, sizeof(*recs));
	if (!recs || (have_ring && (!disk_next || !disk_matches))) {
		fprintf(stderr, "Error: %s\n", strerror(ENOMEM));
		return 1;
	}
	dirfd = log_dir_open(dir);
	if (dirfd < 0 && errno != ENOENT) {
		fprintf(stderr, "Error: data directory %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (dirfd >= 0) {
		err = xtx_logfile_list(dirfd, &segs, &nseg);
		if (err) {
			fprintf(stderr, "Error: listing %s: %s\n", dir, strerror(-err));
			return 1;
		}
	}
	if (o->json)
		printf("{\"data_dir\":\"%s\",\"records\":[", dir);
	else
		printf("# data_dir %s%s\n", dir, dirfd < 0 ? " (none)" : "");
	for (i = 0; i < nseg; i++) {
		const struct xtx_logseg *s = &segs[i];
		bool ends = i + 1 == nseg || segs[i + 1].cpu != s->cpu;
		struct xtx_log_entry e;
		struct xtx_logr rd;

		rec = have_ring && s->cpu < r.ncpu ? &recs[s->cpu] : &recs[have_ring ? r.ncpu : 0];
		if (!i || segs[i - 1].cpu != s->cpu)
			xtx_logrec_reset(rec);

		err = xtx_logr_open(&rd, dirfd, s->name);
		if (err) {
			fprintf(stderr, "Error: %s: %s\n", s->name, strerror(-err));
			bad++;
			continue;
		}
		/* within one ring incarnation a segment starts where the last one ended */
		if (i && segs[i - 1].cpu == s->cpu && prev_ok && rd.status == XTX_LOGR_OK &&
		    prev.map_id == rd.hdr.map_id &&
		    !memcmp(prev.boot_id, rd.hdr.boot_id, sizeof(prev.boot_id)) &&
		    prev_next != rd.hdr.first_seq) {
			bad++;
			if (!o->json)
				printf("# gap: %s starts at seq %llu, the segment before ends "
				       "before %llu\n", s->name,
				       (unsigned long long)rd.hdr.first_seq,
				       (unsigned long long)prev_next);
		}
		while (xtx_logr_next(&rd, &e) == 1)
			log_out_entry(&out, rec, s->cpu, &e);
		if (rd.status == XTX_LOGR_TORN) {
			torn++;
			if (!o->json)
				printf("# torn tail: %s at offset %llu: %llu bytes after %llu good "
				       "records (cut when xtxd next starts)\n", s->name,
				       (unsigned long long)rd.off,
				       (unsigned long long)(rd.torn_end - rd.off),
				       (unsigned long long)rd.good);
		} else if (rd.status != XTX_LOGR_OK) {
			bad++;
			if (!o->json)
				printf("# corrupt: %s: %s at offset %llu after %llu good records%s\n",
				       s->name, xtx_logr_status_name(rd.status),
				       (unsigned long long)rd.off, (unsigned long long)rd.good,
				       rd.status == XTX_LOGR_BAD_SEQ ? " (seq does not follow)" : "");
		}
		prev_ok = rd.status == XTX_LOGR_OK || rd.status == XTX_LOGR_TORN;
		prev = rd.hdr;
		prev_next = rd.hdr.first_seq + rd.good;
		if (have_ring && s->cpu < r.ncpu && rd.status != XTX_LOGR_BAD_HDR &&
		    rd.status != XTX_LOGR_IO) {
			disk_matches[s->cpu] = xtx_log_epoch_eq(&ep, &rd.hdr);
			disk_next[s->cpu] = rd.hdr.first_seq + rd.good;
		}
		/* unless the ring holds the rest of it */
		if (ends && !(have_ring && s->cpu < r.ncpu && disk_matches[s->cpu]))
			log_out_end(&out, rec, s->cpu);
		xtx_logr_close(&rd);
	}
	if (o->json)
		printf("],\"ring\":[");
	else if (have_ring)
		printf("# ring: entries not yet on disk\n");
	else
		printf("# ring: no xtx server on %s\n", t->iface);
	out.first = true;
	for (i = 0; have_ring && i < r.ncpu; i++) {
		uint64_t seq = r.cur[i].head, n0 = out.n;

		/* written but not yet synced: on disk already, so listed above */
		if (disk_matches[i] && disk_next[i] > seq)
			seq = disk_next[i];
		/* the ring goes on where the disk stopped, or a write begun there is cut short */
		if (!disk_matches[i] || disk_next[i] != seq)
			log_out_end(&out, &recs[i], (uint32_t)i);
		for (; seq < r.cur[i].tail; seq++) {
			__u32 idx = i * r.ring + (__u32)(seq & (r.ring - 1));
			struct xtx_log_entry e;

			if (bpf_map_lookup_elem(r.log_fd, &idx, &e) || e.seq != seq) {
				drained_meanwhile++;	/* drained and reused since we looked */
				continue;
			}
			log_out_entry(&out, &recs[i], i, &e);
		}
		log_out_end(&out, &recs[i], (uint32_t)i);
		ring_n += out.n - n0;
	}
	if (o->json) {
		printf("],\"files\":[");
		for (i = 0; i < nseg; i++) {
			struct xtx_logscan sc;

			if (xtx_logfile_scan(dirfd, segs[i].name, &sc))
				continue;
			printf("%s{\"name\":\"%s\",\"cpu\":%u,\"seg\":%u,\"first_seq\":%llu,"
			       "\"records\":%llu,\"size\":%llu,\"end\":%llu,\"status\":\"%s\"}",
			       i ? "," : "", segs[i].name, segs[i].cpu, segs[i].seg,
			       (unsigned long long)sc.hdr.first_seq, (unsigned long long)sc.good,
			       (unsigned long long)sc.file_size, (unsigned long long)sc.end,
			       xtx_logr_status_name(sc.status));
		}
		printf("],\"disk_records\":%llu,\"ring_records\":%llu,\"writes\":%llu,"
		       "\"commit_marks\":%llu,\"torn\":%llu,\"corrupt\":%llu,\"skipped\":%llu}\n",
		       (unsigned long long)(out.n - ring_n), (unsigned long long)ring_n,
		       (unsigned long long)out.writes, (unsigned long long)out.marks,
		       (unsigned long long)torn,
		       (unsigned long long)(bad + out.damaged),
		       (unsigned long long)drained_meanwhile);
	} else {
		printf("# %llu records on disk in %zu files, %llu in the ring, %llu writes, %llu "
		       "commit marks%s%s\n", (unsigned long long)(out.n - ring_n), nseg,
		       (unsigned long long)ring_n, (unsigned long long)out.writes,
		       (unsigned long long)out.marks, torn ? ", torn tail found" : "",
		       bad || out.damaged ? ", CORRUPTION found" : "");
		if (drained_meanwhile)
			printf("# %llu ring entries were drained while dumping: dump again\n",
			       (unsigned long long)drained_meanwhile);
	}
	free(segs);
	free(disk_next);
	free(disk_matches);
	free(recs);
	if (dirfd >= 0)
		close(dirfd);
	if (have_ring)
		log_ring_close(&r);
	return bad || out.damaged || fflush(stdout) ? 1 : 0;
}

/* The data directory the running xtxd drains to (its drain's counters say), or 0. */
static int daemon_data_dir(const struct xtx_target *t, char *dir, size_t len)
{
	char path[PATH_MAX], key[64], val[PATH_MAX];
	int found = 0;
	FILE *f;

	xtx_logdrain_stats_path(t, path, sizeof(path));
	f = daemon_pid(t) ? fopen(path, "r") : NULL;
	if (!f)
		return 0;
	while (!found && fscanf(f, "%63s %4095s", key, val) == 2)
		if (!strcmp(key, "data_dir"))
			found = snprintf(dir, len, "%s", val) < (int)len;
	fclose(f);
	return found;
}

static int cmd_log(const struct xtx_target *t, const struct ctl_opts *o, const char *sub)
{
	char dir[PATH_MAX];

	/* --data-dir, else the running xtxd's (its own --data-dir), else the default */
	if (o->data_dir)
		snprintf(dir, sizeof(dir), "%s", o->data_dir);
	else if (!daemon_data_dir(t, dir, sizeof(dir)))
		xtx_logfile_default_dir(t, dir, sizeof(dir));
	if (sub && !strcmp(sub, "stats"))
		return cmd_log_stats(t, o, dir);
	if (sub && !strcmp(sub, "dump"))
		return cmd_log_dump(t, o, dir);
	fprintf(stderr, "Error: log: expected 'stats' or 'dump', not '%s'\n", sub ?: "nothing");
	return 2;
}

/* Stops the daemon if one runs, then removes whatever it (or a crash) left. */
static int cmd_unload(const struct xtx_target *t, bool iface_exists, bool force)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	int pid = daemon_pid(t), i, err;
	bool said = false;

	if (pid) {
		/*
		 * A stopped daemon may linger as a zombie until reaped: look at
		 * /proc.  Stopping drains the log and frees a store of millions
		 * of keys, which takes seconds: give it 30 before SIGKILL.
		 */
		uint64_t every = xtx_progress_every_ns(), t0 = xtx_now_ns(), next = t0 + every;

		kill(pid, SIGTERM);
		for (i = 0; i < 6000 && xtx_pid_is_xtxd(pid); i++) {
			nanosleep(&pause, NULL);
			/* a stop that takes a while says what it waits for, once a second */
			if (xtx_now_ns() >= next) {
				next += every;
				said = true;
				fprintf(stderr, "unload: xtxd (pid %d) is stopping: writing out its "
					"log, saving committing HADES transactions, freeing the "
					"store (%.1f s)\n", pid, (xtx_now_ns() - t0) / 1e9);
			}
		}
		if (said)
			fprintf(stderr, "unload: xtxd (pid %d) stopped after %.1f s\n", pid,
				(xtx_now_ns() - t0) / 1e9);
		if (xtx_pid_is_xtxd(pid)) {
			pr_warn("xtxd (pid %d) did not stop in 30 s; killing it\n", pid);
			kill(pid, SIGKILL);
		}
	}
	unlink(t->pidfile);
	/*
	 * xtxd saves the HADES transactions committing here and unpins the
	 * maps itself; maps still pinned with such slots mean it could not
	 * (killed, crashed): dropping them would drop writes those
	 * transactions are committed to.  A start adopts them instead.
	 */
	if (iface_exists && xtx_pins_exist(t) && !force) {
		__u64 n = 0;

		/*
		 * xtxd stops with the ring drained; entries left mean its log
		 * drain failed (fail-stop) or it was killed: they were
		 * acknowledged, and the disk does not hold them yet
		 */
		if (!xtx_log_undrained(t, &n) && n) {
			fprintf(stderr, "Error: %llu log entries acknowledged here are not on disk "
				"yet (xtxd's log drain failed, or xtxd was killed): the program "
				"stays attached, the maps pinned. Make the data directory's disk "
				"work and `make load` (it writes them out before it serves), or "
				"`xtxctl unload --force` drops them\n", (unsigned long long)n);
			return 1;
		}
		if (!xtx_hades_committing_slots(t, &n) && n) {
			fprintf(stderr, "Error: %llu HADES transactions are committing here and xtxd "
				"did not save them: the program stays attached, the maps pinned. "
				"`make load` adopts them (then unload again), or `xtxctl unload "
				"--force` drops them\n",
				(unsigned long long)n);
			return 1;
		}
	}
	err = iface_exists ? xtx_detach(t) : 0;
	xtx_unpin(t);
	return err ? 1 : 0;
}

enum { OPT_DROP_REQ = 256, OPT_DROP_REP, OPT_DROP_RARE, OPT_BREAK_VALIDATE, OPT_LOAD_VERSION, OPT_COUNT, OPT_FIRST, OPT_VSIZE, OPT_SEED,
       OPT_FILE, OPT_PRINT, OPT_DATA_DIR, OPT_INTERVAL, OPT_COUNT_TOP, OPT_FORCE };

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
		{ "break-validate", required_argument, NULL, OPT_BREAK_VALIDATE },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "first", required_argument, NULL, OPT_FIRST },
		{ "value-size", required_argument, NULL, OPT_VSIZE },
		{ "version", required_argument, NULL, OPT_LOAD_VERSION },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "file", required_argument, NULL, OPT_FILE },
		{ "print", no_argument, NULL, OPT_PRINT },
		{ "data-dir", required_argument, NULL, OPT_DATA_DIR },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "refreshes", required_argument, NULL, OPT_COUNT_TOP },
		{ "verbose", no_argument, NULL, 'v' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct ctl_opts o = { .table = -1, .seed = XTXD_LOAD_SEED_DEFAULT, .interval_ms = 1000,
			     .break_validate = -1 };
	struct xtx_target t;
	const char *cmd;
	uint32_t table;
	int c;

	/* the cluster, not one server: its own options, no --iface */
	if (argc >= 2 && !strcmp(argv[1], "cluster"))
		return xtxctl_cluster_main(argc - 1, argv + 1);
	/* permute so options may follow the command */
	/* alone, --version is the release; after load, the version keys are loaded at */
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		xtx_print_version("xtxctl");
		return 0;
	}
	while ((c = getopt_long(argc, argv, "i:n:jt:vhV", longopts, NULL)) != -1) {
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
		case OPT_BREAK_VALIDATE:
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "Error: --break-validate: on or off, not '%s'\n",
					optarg);
				return 2;
			}
			o.break_validate = !strcmp(optarg, "on");
			break;
		case OPT_COUNT:
			if (xtx_parse_u64("--count", optarg, 0, UINT64_MAX, &o.count))
				return 2;
			o.has_count = true;
			break;
		case OPT_FIRST:
			if (xtx_parse_u64("--first", optarg, 0, UINT64_MAX, &o.first))
				return 2;
			break;
		case OPT_LOAD_VERSION:
			if (xtx_parse_u64("--version", optarg, 1, UINT64_MAX - 1, &o.load_version))
				return 2;
			break;
		case OPT_VSIZE:
			if (xtx_parse_u32("--value-size", optarg, 0, XTX_VALUE_MAX, &o.vsize))
				return 2;
			o.has_vsize = true;
			break;
		case OPT_SEED:
			if (xtx_parse_u64("--seed", optarg, 0, UINT64_MAX, &o.seed))
				return 2;
			break;
		case OPT_FILE: o.file = optarg; break;
		case OPT_PRINT: o.print = true; break;
		case OPT_FORCE: o.force = true; break;
		case OPT_DATA_DIR: o.data_dir = optarg; break;
		case OPT_INTERVAL:
			if (xtx_parse_u32("--interval", optarg, 100, 3600000, &o.interval_ms))
				return 2;
			break;
		case OPT_COUNT_TOP:
			if (xtx_parse_u32("--refreshes", optarg, 1, 1000000, &o.refreshes))
				return 2;
			break;
		case 'v': xtx_log_level++; break;
		case 'h': usage(stdout); return 0;
		case 'V': xtx_print_version("xtxctl"); return 0;
		default: usage(stderr); return 2;
		}
	}
	/* log takes a subcommand, allow a subcommand and maybe a prefix list */
	if (optind < argc && !strcmp(argv[optind], "allow")) {
		if (optind + 2 > argc || optind + 3 < argc) {
			fprintf(stderr, "Error: allow add|del CIDR[,...] | allow list|on|off\n");
			return 2;
		}
	} else if (optind != argc - 1 && (optind != argc - 2 || strcmp(argv[optind], "log"))) {
		fprintf(stderr, "Error: expected exactly one command\n");
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	if (!o.iface) {
		fprintf(stderr, "Error: --iface is required\n");
		return 2;
	}
	if (!strcmp(cmd, "load")) {
		if (load_check_opts(&o))
			return 2;
		/* the generator alone: no server needed */
		if (o.print)
			return cmd_load_print(&o);
	}
	if (xtx_require_root("xtxctl"))
		return 1;
	xtx_log_libbpf();
	xtx_log_libxdp();
	if (xtx_bpffs_ensure())
		return 1;
	if (xtx_target_open(&t, o.netns, o.iface)) {
		/* the log on disk outlives the server and its namespace */
		if (!strcmp(cmd, "log"))
			return cmd_log(&t, &o, argv[optind + 1]);
		if (strcmp(cmd, "unload"))
			return 1;
		/* the interface or namespace is gone: still clean up after it */
		return cmd_unload(&t, false, o.force);
	}

	if (!strcmp(cmd, "stats"))
		return cmd_stats(&t, &o);
	if (!strcmp(cmd, "info"))
		return cmd_info(&t, &o);
	if (!strcmp(cmd, "fault"))
		return cmd_fault(&t, &o);
	if (!strcmp(cmd, "dump"))
		return cmd_dump(&t, &o);
	if (!strcmp(cmd, "snapshot"))
		return ctl_request(&t, "snapshot\n");
	if (!strcmp(cmd, "rare-stats"))
		return ctl_request(&t, o.json ? "stats --json\n" : "stats\n");
	if (!strcmp(cmd, "load"))
		return cmd_load(&t, &o);
	if (!strcmp(cmd, "version-mark"))
		return ctl_request(&t, "mark\n");
	if (!strcmp(cmd, "log"))
		return cmd_log(&t, &o, argv[optind + 1]);
	if (!strcmp(cmd, "top"))
		return xtxctl_top(&t, o.interval_ms, o.refreshes);
	if (!strcmp(cmd, "allow"))
		return cmd_allow(&t, &o, argv[optind + 1], optind + 2 < argc ? argv[optind + 2] : NULL);
	if (!strcmp(cmd, "unload"))
		return cmd_unload(&t, true, o.force);
	fprintf(stderr, "Error: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
