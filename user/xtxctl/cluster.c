// SPDX-License-Identifier: GPL-2.0-only
/* xtxctl cluster init|status|recover: a cluster's definition in ZooKeeper (common/zk.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "cluster.h"
#include "cluster_record.h"
#include "num.h"
#include "zk.h"
#include "xtxctl_cluster.h"

#define DEFAULT_SHARDS		64
#define CONNECT_WAIT_MS		5000
/* recover: past every epoch a client may have seen, ZooKeeper's lost ones included */
#define RECOVER_EPOCH_MARGIN	16

struct cluster_opts {
	const char *zk, *name, *servers, *spares;
	uint32_t replication, shards, session_ms;
	bool json;
	bool force, partial;		/* recover: see usage() */
	char **records;			/* recover: the servers' record files */
	int nrecords;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxctl cluster init --zk HOSTS --servers IP,IP,... [--spares IP,...]\n"
		"                      [--zk-name NAME] [--replication R] [--shards N]\n"
		"       xtxctl cluster status --zk HOSTS [--zk-name NAME] [--json]\n"
		"       xtxctl cluster recover --zk HOSTS [--zk-name NAME] [--partial] [--force]\n"
		"                      RECORD...\n"
		"A cluster's configuration in ZooKeeper: its epoch, servers and shard map.\n"
		"\n"
		"  --zk HOST:PORT[,...]  the ZooKeeper ensemble\n"
		"  --zk-name NAME        the cluster (default %s), 1..%d of [a-z0-9_-], as\n"
		"                        xtxd and xtxbench take it (--name is the same)\n"
		"  --servers IP,...      init: every server, index = position (up to %d)\n"
		"  --spares IP,...       init: servers after those, in no shard until one fails:\n"
		"                        then one copies the shards left short of R\n"
		"  --replication R       init: replicas per shard, 1..3 (default min(3, servers))\n"
		"  --shards N            init: shards, 1..%d (default %d), spread round-robin\n"
		"  --json                status: one JSON object\n"
		"\n"
		"init refuses a cluster that exists.  status lists each server as live when its\n"
		"xtxd holds a ZooKeeper session, the shards it is primary of, and the shards it\n"
		"is copying with the copy's progress.\n"
		"\n"
		"recover rebuilds the configuration after ZooKeeper lost it (or the cluster was\n"
		"made again by hand, which xtxd refuses to serve): each server records the newest\n"
		"configuration it served in its data directory (%s there); given those\n"
		"files, one per server, recover writes the newest of them %d epochs on (past any\n"
		"a client saw), replacing an older configuration of the same cluster. Then start\n"
		"the servers again. It refuses records of different clusters, a newest map whose\n"
		"servers did not all give a record (--partial: their data directories are lost),\n"
		"and another cluster in ZooKeeper or live servers there (--force).\n",
		XTX_ZK_NAME_DEFAULT, XTX_ZK_NAME_MAX, XTX_CLUSTER_MAX_SERVERS, XTX_CLUSTER_MAX_SHARDS,
		DEFAULT_SHARDS, XTX_CLUSTER_RECORD_FILE, RECOVER_EPOCH_MARGIN);
}

static int parse_server_list(const char *opt, const char *list, struct in_addr *addr,
			     unsigned int *n)
{
	char buf[XTX_CLUSTER_MAX_SERVERS * 16 + 1], *save = NULL, *ip;

	if (strlen(list) >= sizeof(buf)) {
		fprintf(stderr, "Error: %s: too long\n", opt);
		return -1;
	}
	strcpy(buf, list);
	for (ip = strtok_r(buf, ",", &save); ip; ip = strtok_r(NULL, ",", &save)) {
		if (*n == XTX_CLUSTER_MAX_SERVERS) {
			fprintf(stderr, "Error: %s: more than %d servers in all\n", opt,
				XTX_CLUSTER_MAX_SERVERS);
			return -1;
		}
		if (inet_pton(AF_INET, ip, &addr[*n]) != 1) {
			fprintf(stderr, "Error: %s: '%s' is not an IPv4 address\n", opt, ip);
			return -1;
		}
		(*n)++;
	}
	return 0;
}

/* A fresh cluster id: never 0, which means "none". 0 or -1. */
static int draw_id(uint64_t *id)
{
	*id = 0;
	while (!*id)
		if (getrandom(id, sizeof(*id), 0) != sizeof(*id)) {
			fprintf(stderr, "Error: drawing a cluster id: %s\n", strerror(errno));
			return -1;
		}
	return 0;
}

static int cluster_init(const struct cluster_opts *o)
{
	struct in_addr addr[XTX_CLUSTER_MAX_SERVERS];
	static struct xtx_cluster c, check;
	static char text[XTX_CLUSTER_TEXT_MAX];
	unsigned int n = 0, all;
	struct xtx_zk *z;
	char err[160];
	int rc;

	if (!o->servers) {
		fprintf(stderr, "Error: cluster init: --servers is required\n");
		return 2;
	}
	if (parse_server_list("--servers", o->servers, addr, &n))
		return 2;
	if (!n) {
		fprintf(stderr, "Error: --servers: no address\n");
		return 2;
	}
	all = n;
	if (o->spares && parse_server_list("--spares", o->spares, addr, &all))
		return 2;
	if (xtx_cluster_build(&c, addr, n, o->replication ?: (n < 3 ? n : 3),
			      o->shards ?: DEFAULT_SHARDS, err, sizeof(err))) {
		fprintf(stderr, "Error: cluster init: %s\n", err);
		return 2;
	}
	/* a server tells this cluster from one made again by its id */
	if (draw_id(&c.id))
		return 1;
	/* the spares are servers of no shard; the text's checks catch one listed twice */
	memcpy(&c.server[n], &addr[n], (all - n) * sizeof(addr[0]));
	c.nservers = all;
	rc = xtx_cluster_format(&c, text, sizeof(text));
	if (rc < 0 || xtx_cluster_parse(&check, text, err, sizeof(err))) {
		fprintf(stderr, "Error: cluster init: %s\n", rc < 0 ? "too large" : err);
		return 2;
	}
	z = xtx_zk_open(o->zk, o->name, o->session_ms, CONNECT_WAIT_MS);
	if (!z)
		return 1;
	rc = xtx_zk_create(z, &c);
	xtx_zk_close(z);
	if (rc == -EEXIST) {
		fprintf(stderr, "Error: cluster '%s' exists at %s; nothing changed\n", o->name,
			o->zk);
		return 1;
	}
	if (rc)
		return 1;
	printf("cluster '%s' created at %s: epoch %u, %u servers", o->name, o->zk, c.epoch,
	       c.nservers);
	if (all > n)
		printf(" (%u spare)", all - n);
	printf(", replication %u, %u shards\n", c.replication, c.nshards);
	return 0;
}

static unsigned int primary_of(const struct xtx_cluster *c, unsigned int server)
{
	unsigned int s, n = 0;

	for (s = 0; s < c->nshards; s++)
		n += c->nrep[s] && c->rep[s][0] == server;
	return n;
}

static unsigned int replica_of(const struct xtx_cluster *c, unsigned int server)
{
	unsigned int s, i, n = 0;

	for (s = 0; s < c->nshards; s++)
		for (i = 0; i < c->nrep[s]; i++)
			n += c->rep[s][i] == server;
	return n;
}

static int cluster_status(const struct cluster_opts *o)
{
	static struct xtx_cluster c;
	static struct xtx_zk_copy cp[XTX_CLUSTER_MAX_SERVERS];
	bool has_cp[XTX_CLUSTER_MAX_SERVERS] = {};
	struct xtx_zk *z;
	uint64_t live;
	unsigned int i;
	int rc, mgr = -1;

	z = xtx_zk_open(o->zk, o->name, o->session_ms, CONNECT_WAIT_MS);
	if (!z)
		return 1;
	rc = xtx_zk_read_config(z, &c, NULL, false);
	if (!rc)
		rc = xtx_zk_live(z, &live, false);
	if (!rc)
		mgr = xtx_zk_manager(z);
	for (i = 0; !rc && i < c.nservers; i++)
		has_cp[i] = xtx_cluster_copying(&c, i) && !xtx_zk_get_copy(z, i, &cp[i]) &&
			    cp[i].epoch == c.epoch;
	xtx_zk_close(z);
	if (rc == -ENOENT) {
		fprintf(stderr, "Error: no cluster '%s' at %s (xtxctl cluster init creates one)\n",
			o->name, o->zk);
		return 1;
	}
	if (rc)
		return 1;
	if (o->json) {
		printf("{\"name\":\"%s\",\"epoch\":%u,\"replication\":%u,\"shards\":%u,"
		       "\"under_replicated\":%u,\"manager\":%d,\"servers\":[", o->name, c.epoch,
		       c.replication, c.nshards, xtx_cluster_under_replicated(&c),
		       mgr < 0 ? -1 : mgr);
		for (i = 0; i < c.nservers; i++)
			printf("%s{\"index\":%u,\"addr\":\"%s\",\"live\":%s,\"primary_of\":%u,"
			       "\"replica_of\":%u,\"copying\":%u,\"copied_keys\":%llu,"
			       "\"copy_done\":%s}", i ? "," : "", i, inet_ntoa(c.server[i]),
			       live >> i & 1 ? "true" : "false", primary_of(&c, i), replica_of(&c, i),
			       xtx_cluster_copying(&c, i),
			       has_cp[i] ? (unsigned long long)cp[i].keys : 0ull,
			       has_cp[i] && cp[i].done ? "true" : "false");
		printf("]}\n");
		return 0;
	}
	printf("cluster '%s' at %s: epoch %u, replication %u, %u shards, %u under-replicated\n",
	       o->name, o->zk, c.epoch, c.replication, c.nshards, xtx_cluster_under_replicated(&c));
	if (mgr >= 0)
		printf("  managed by server %d\n", mgr);
	else
		printf("  no manager (no xtxd of the cluster runs)\n");
	for (i = 0; i < c.nservers; i++) {
		printf("  server %u  %-15s  %-4s  primary of %u shards, replica of %u", i,
		       inet_ntoa(c.server[i]), live >> i & 1 ? "live" : "down", primary_of(&c, i),
		       replica_of(&c, i));
		if (!replica_of(&c, i))
			printf(" (spare)");
		if (xtx_cluster_copying(&c, i) && has_cp[i])
			printf(", copying %u: %llu keys in %u ms%s", xtx_cluster_copying(&c, i),
			       (unsigned long long)cp[i].keys, cp[i].ms,
			       cp[i].done ? ", done" : "");
		else if (xtx_cluster_copying(&c, i))
			printf(", copying %u: not started", xtx_cluster_copying(&c, i));
		printf("\n");
	}
	return 0;
}

/*
 * The servers' records, read and checked: of one cluster (one id), one per server, those
 * of the newest epoch alike.  best gets the newest; have a bit per server with a record.
 * 0, or 1 after saying why.
 */
static int read_records(const struct cluster_opts *o, struct xtx_cluster *best, int *from,
			uint64_t *have)
{
	static struct xtx_cluster rec;
	static int by[XTX_CLUSTER_MAX_SERVERS];
	char why[PATH_MAX + 160];
	unsigned int self;
	int i;

	*from = -1;
	*have = 0;
	for (i = 0; i < o->nrecords; i++) {
		if (xtx_cluster_record_read(o->records[i], &rec, &self, why, sizeof(why))) {
			fprintf(stderr, "Error: cluster recover: %s\n", why);
			return 1;
		}
		if (*from >= 0 && rec.id != best->id) {
			fprintf(stderr, "Error: cluster recover: %s (cluster id %016llx) and %s (id "
				"%016llx) are records of different clusters; nothing changed\n",
				o->records[*from], (unsigned long long)best->id, o->records[i],
				(unsigned long long)rec.id);
			return 1;
		}
		/* self < rec.nservers <= XTX_CLUSTER_MAX_SERVERS (xtx_cluster_record_read) */
		if (*have >> self & 1) {
			fprintf(stderr, "Error: cluster recover: %s and %s are both server %u's "
				"records; nothing changed\n", o->records[by[self]], o->records[i],
				self);
			return 1;
		}
		if (*from >= 0 && rec.epoch == best->epoch && !xtx_cluster_equal(&rec, best)) {
			fprintf(stderr, "Error: cluster recover: %s and %s record different maps at "
				"epoch %u; nothing changed\n", o->records[*from], o->records[i],
				rec.epoch);
			return 1;
		}
		if (*from < 0 || rec.epoch > best->epoch) {
			*best = rec;
			*from = i;
		}
		*have |= 1ull << self;
		by[self] = i;
	}
	return 0;
}

/*
 * The newest configuration the records hold into ZooKeeper, RECOVER_EPOCH_MARGIN epochs
 * on: every server and client then sees it as newer than anything it served or used.
 * Refused unless every server the newest map lists gave its record (another may hold a
 * newer one; --partial when one is lost for good), and unless ZooKeeper holds nothing of
 * another cluster and no server of it is live (--force).
 */
static int cluster_recover(const struct cluster_opts *o)
{
	static struct xtx_cluster best, cur;
	unsigned int i, missing = 0, recorded;
	uint64_t have, live = 0;
	int from, rc, ver = -1;
	struct xtx_zk *z;

	if (!o->nrecords) {
		fprintf(stderr, "Error: cluster recover: give the servers' record files (%s in each "
			"data directory)\n", XTX_CLUSTER_RECORD_FILE);
		return 2;
	}
	if (read_records(o, &best, &from, &have))
		return 1;
	for (i = 0; i < best.nservers; i++) {
		if (have >> i & 1)
			continue;
		fprintf(stderr, "%s: no record of server %u (%s), listed at epoch %u: its own may be "
			"newer\n", o->partial ? "Warning" : "Error", i, inet_ntoa(best.server[i]),
			best.epoch);
		missing++;
	}
	if (missing && !o->partial) {
		fprintf(stderr, "Error: cluster recover: give every server's record, or --partial "
			"for servers whose data directory is lost; nothing changed\n");
		return 1;
	}
	z = xtx_zk_open(o->zk, o->name, o->session_ms, CONNECT_WAIT_MS);
	if (!z)
		return 1;
	rc = xtx_zk_read_config(z, &cur, &ver, false);
	if (!rc && !o->force && cur.id != best.id) {
		fprintf(stderr, "Error: cluster '%s' at %s is another cluster (id %016llx, epoch %u) "
			"than the records' (id %016llx): --force replaces it; nothing changed\n",
			o->name, o->zk, (unsigned long long)cur.id, cur.epoch,
			(unsigned long long)best.id);
		rc = 1;
	} else if (!rc && cur.id == best.id && cur.epoch > best.epoch) {
		fprintf(stderr, "Error: cluster '%s' at %s holds epoch %u, newer than every record "
			"(newest: epoch %u in %s): nothing to recover; nothing changed\n", o->name,
			o->zk, cur.epoch, best.epoch, o->records[from]);
		rc = 1;
	} else if (rc && rc != -ENOENT) {
		rc = 1;
	} else if (!rc && !xtx_zk_live(z, &live, false) && live && !o->force) {
		fprintf(stderr, "Error: cluster '%s' at %s: servers are live in it (mask %#llx): "
			"stop them first, or --force; nothing changed\n", o->name, o->zk,
			(unsigned long long)live);
		rc = 1;
	}
	if (rc == 1) {
		xtx_zk_close(z);
		return 1;
	}
	recorded = best.epoch;
	best.epoch = (rc ? best.epoch : cur.epoch > best.epoch ? cur.epoch : best.epoch) +
		     RECOVER_EPOCH_MARGIN;
	if (best.epoch > XTX_CLUSTER_EPOCH_MAX) {
		xtx_zk_close(z);
		fprintf(stderr, "Error: cluster recover: epoch %u is past the last (%u)\n",
			best.epoch, XTX_CLUSTER_EPOCH_MAX);
		return 1;
	}
	/* a cluster from before ids gets one now: a cluster made again is then told apart */
	if (!best.id && draw_id(&best.id)) {
		xtx_zk_close(z);
		return 1;
	}
	rc = rc == -ENOENT ? xtx_zk_create(z, &best) : xtx_zk_write_config(z, &best, ver);
	xtx_zk_close(z);
	if (rc == -EEXIST || rc == -EAGAIN) {
		fprintf(stderr, "Error: cluster '%s' at %s changed while recovering; nothing "
			"changed: run recover again\n", o->name, o->zk);
		return 1;
	}
	if (rc)
		return 1;
	printf("cluster '%s' recovered at %s: epoch %u, the map of epoch %u (%s), from the "
	       "records of %d servers%s, %u servers, %u shards\n", o->name, o->zk, best.epoch,
	       recorded, o->records[from], o->nrecords, missing ? " (some missing: --partial)" : "",
	       best.nservers, best.nshards);
	return 0;
}

int xtxctl_cluster_main(int argc, char **argv)
{
	enum { OPT_ZK = 256, OPT_NAME, OPT_SERVERS, OPT_SPARES, OPT_REPL, OPT_SHARDS, OPT_JSON,
	       OPT_FORCE, OPT_PARTIAL };
	static const struct option longopts[] = {
		{ "zk", required_argument, NULL, OPT_ZK },
		{ "zk-name", required_argument, NULL, OPT_NAME },
		/* the spelling it had before xtxd's and xtxbench's --zk-name */
		{ "name", required_argument, NULL, OPT_NAME },
		{ "servers", required_argument, NULL, OPT_SERVERS },
		{ "spares", required_argument, NULL, OPT_SPARES },
		{ "replication", required_argument, NULL, OPT_REPL },
		{ "shards", required_argument, NULL, OPT_SHARDS },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "partial", no_argument, NULL, OPT_PARTIAL },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct cluster_opts o = { .name = XTX_ZK_NAME_DEFAULT,
				  .session_ms = XTX_ZK_SESSION_MS_DEFAULT };
	const char *sub;
	int opt;

	/* argv[0] is "cluster", argv[1] the subcommand */
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			usage(stdout);
			return 0;
		}
		usage(stderr);
		return 2;
	}
	sub = argv[1];
	optind = 2;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_ZK: o.zk = optarg; break;
		case OPT_NAME: o.name = optarg; break;
		case OPT_SERVERS: o.servers = optarg; break;
		case OPT_SPARES: o.spares = optarg; break;
		case OPT_REPL:
			if (xtx_parse_u32("--replication", optarg, 1, XTX_CLUSTER_MAX_R,
					  &o.replication))
				return 2;
			break;
		case OPT_SHARDS:
			if (xtx_parse_u32("--shards", optarg, 1, XTX_CLUSTER_MAX_SHARDS, &o.shards))
				return 2;
			break;
		case OPT_JSON: o.json = true; break;
		case OPT_FORCE: o.force = true; break;
		case OPT_PARTIAL: o.partial = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!strcmp(sub, "recover")) {
		o.records = argv + optind;
		o.nrecords = argc - optind;
	} else if (optind != argc) {
		fprintf(stderr, "Error: cluster %s: unexpected argument '%s'\n", sub, argv[optind]);
		return 2;
	}
	if (!o.zk) {
		fprintf(stderr, "Error: cluster %s: --zk HOST:PORT is required\n", sub);
		return 2;
	}
	if (xtx_zk_name_ok(o.name))
		return 2;
	if (!strcmp(sub, "init"))
		return cluster_init(&o);
	if (!strcmp(sub, "status"))
		return cluster_status(&o);
	if (!strcmp(sub, "recover"))
		return cluster_recover(&o);
	fprintf(stderr, "Error: cluster: unknown subcommand '%s' (init, status, recover)\n", sub);
	return 2;
}
