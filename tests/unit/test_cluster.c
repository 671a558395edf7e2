// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cluster configuration (common/cluster.c): building, the text form both ways, bad input;
 * a server's record of it (user/lib/cluster_record.c).
 */
/* checks: 9 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xtx/hash.h>
#include "check.h"
#include "cluster.h"
#include "cluster_record.h"

static struct in_addr addr(const char *ip)
{
	struct in_addr a;

	inet_pton(AF_INET, ip, &a);
	return a;
}

static void test_round_trip(void)
{
	struct in_addr s[3] = { addr("10.0.0.1"), addr("10.0.0.2"), addr("10.0.0.3") };
	static struct xtx_cluster a, b;
	static char text[XTX_CLUSTER_TEXT_MAX], again[XTX_CLUSTER_TEXT_MAX];
	char err[160];
	int n;

	CHECK(!xtx_cluster_build(&a, s, 3, 3, 7, err, sizeof(err)), "build: %s", err);
	CHECK(a.epoch == 1 && a.nshards == 7 && a.rep[4][0] == 1 && a.rep[4][2] == 0,
	      "shard 4 of 7 on 1, 2, 0, epoch 1");
	n = xtx_cluster_format(&a, text, sizeof(text));
	CHECK(n > 0 && strstr(text, "servers 10.0.0.1,10.0.0.2,10.0.0.3\n") &&
	      strstr(text, "shard 6 0,1,2\n"), "formatted:\n%s", text);
	CHECK(!xtx_cluster_parse(&b, text, err, sizeof(err)), "parsed back: %s", err);
	CHECK(xtx_cluster_format(&b, again, sizeof(again)) == n && !strcmp(text, again),
	      "the same text again");
	CHECK(xtx_cluster_format(&a, text, 40) == -ENOSPC, "a short buffer: -ENOSPC");
}

static void test_static_is_todays_placement(void)
{
	struct in_addr s[5] = { addr("10.0.0.1"), addr("10.0.0.1"), addr("10.0.0.3"),
				addr("10.0.0.4"), addr("10.0.0.5") };
	static struct xtx_cluster c;
	unsigned int k, i, bad = 0, sh;
	char err[160];

	/* one address twice: a static cluster's servers differ by port */
	CHECK(!xtx_cluster_static(&c, s, 5, 3, err, sizeof(err)), "static: %s", err);
	CHECK(c.epoch == 0 && c.nshards == 5, "epoch 0, a shard per server");
	for (k = 0; k < 100000; k++) {
		sh = xtx_cluster_shard(&c, (uint8_t)(k % 16), k * 7919ull);
		for (i = 0; i < 3; i++)
			bad += c.rep[sh][i] !=
			       (xtx_shard_of(xtx_hash((uint8_t)(k % 16), k * 7919ull), 5) + i) % 5;
	}
	CHECK(!bad, "%u replicas placed differently from hash mod N, N+1, N+2", bad);
	CHECK(xtx_cluster_build(&c, s, 5, 3, 5, err, sizeof(err)) && strstr(err, "twice"),
	      "a cluster in ZooKeeper refuses an address twice (%s)", err);
}

static void refused(const char *text, const char *why)
{
	static struct xtx_cluster c;
	char err[160] = "";

	CHECK(xtx_cluster_parse(&c, text, err, sizeof(err)) && strstr(err, why),
	      "'%s' refused with '%s' (said '%s')", text, why, err);
}

static void test_bad_text(void)
{
	const char *head = "xtx-cluster 1\nepoch 3\nreplication 2\nservers 10.0.0.1,10.0.0.2\n";
	char t[512];

	refused("", "empty");
	refused("xtx-cluster 2\n", "version 1");
	refused("hello\n", "version 1");
	snprintf(t, sizeof(t), "%sshards 2\nshard 0 0,1\n", head);
	refused(t, "1 of 2 shards");
	snprintf(t, sizeof(t), "%sshards 2\nshard 0 0,1\nshard 0 1,0\n", head);
	refused(t, "once per shard");
	snprintf(t, sizeof(t), "%sshards 1\nshard 0 0,5\n", head);
	refused(t, "no server 5");
	snprintf(t, sizeof(t), "%sshards 1\nshard 0 1,1\n", head);
	refused(t, "twice");
	snprintf(t, sizeof(t), "%sshards 1\nshard 0 0,1,0\n", head);
	refused(t, "replicas");
	snprintf(t, sizeof(t), "%sshards 1\nshard 0 0,1\ncolour blue\n", head);
	refused(t, "unknown field");
	refused("xtx-cluster 1\nepoch 65535\nreplication 1\nservers 10.0.0.1\nshards 1\nshard 0 0\n",
		"epoch");
	refused("xtx-cluster 1\nepoch 1\nreplication 1\nservers 10.0.0.300\nshards 1\nshard 0 0\n",
		"servers");
	refused("xtx-cluster 1\nepoch 1\nreplication 1\nservers 10.0.0.1\nshards 0\n", "shards");
	/* epoch 0 is a static cluster's: a held one that said so would serve static clients */
	refused("xtx-cluster 1\nepoch 0\nreplication 1\nservers 10.0.0.1\nshards 1\nshard 0 0\n",
		"epoch");
	refused("xtx-cluster 1\nreplication 1\nservers 10.0.0.1\nshards 1\nshard 0 0\n", "no epoch");
	refused("xtx-cluster 1\nepoch 3\nepoch 9\nreplication 1\nservers 10.0.0.1\nshards 1\n"
		"shard 0 0\n", "once");
	refused("xtx-cluster 1\nepoch 5junk\nreplication 1\nservers 10.0.0.1\nshards 1\n"
		"shard 0 0\n", "epoch");
	refused("xtx-cluster 1\nepoch 5\nreplication 1\nservers 10.0.0.1,,10.0.0.2\nshards 1\n"
		"shard 0 0\n", "servers");
	refused("xtx-cluster 1\nepoch 5\nservers 10.0.0.1\nshards 1\nshard 0 0\n",
		"no replication");
}

static void test_under_replicated(void)
{
	static struct xtx_cluster c;
	char err[160];

	CHECK(!xtx_cluster_parse(&c, "xtx-cluster 1\nepoch 2\nreplication 2\n"
				 "servers 10.0.0.1,10.0.0.2\nshards 2\nshard 0 0\nshard 1 1,0\n",
				 err, sizeof(err)), "a shard short of R parses: %s", err);
	CHECK(xtx_cluster_under_replicated(&c) == 1, "one shard under-replicated");
	CHECK(xtx_cluster_index(&c, addr("10.0.0.2")) == 1 &&
	      xtx_cluster_index(&c, addr("10.0.0.9")) == -1, "servers found by address");
}

/* Servers moved out, and the shards a server takes over from one epoch to the next. */
static void test_moves(void)
{
	static struct xtx_cluster a, b;
	char err[160];

	CHECK(!xtx_cluster_parse(&a, "xtx-cluster 1\nepoch 1\nreplication 3\n"
				 "servers 10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4\nshards 3\n"
				 "shard 0 0,1,2\nshard 1 1,2,3\nshard 2 2,3,0\n", err, sizeof(err)),
	      "epoch 1 parses: %s", err);
	CHECK(!xtx_cluster_parse(&b, "xtx-cluster 1\nepoch 2\nreplication 3\n"
				 "servers 10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4\nshards 3\n"
				 "shard 0 1,2\nshard 1 1,2,3\nshard 2 2,3\n", err, sizeof(err)),
	      "epoch 2 (server 0 out) parses: %s", err);
	CHECK(xtx_cluster_gone(&a) == 0 && xtx_cluster_gone(&b) == 1,
	      "server 0 is gone in epoch 2 only (%#llx)", (unsigned long long)xtx_cluster_gone(&b));
	CHECK(xtx_cluster_takes_over(&a, &b, 1) == 1 && xtx_cluster_takes_over(&a, &b, 2) == 0 &&
	      xtx_cluster_takes_over(&b, &b, 1) == 0 && xtx_cluster_leads(&b, 1) == 2,
	      "server 1 takes shard 0 over; server 2 keeps what it led");
}

/*
 * Re-replication's moves: a spare copies the shards short of R, counts only
 * once copied, is never promoted, and a failure never leaves a shard with
 * fewer than two whole replicas.
 */
static void test_copiers(void)
{
	static struct xtx_cluster c, d;
	static char text[XTX_CLUSTER_TEXT_MAX];
	char err[160];

	/* 3 servers and a spare (3): server 0 failed and was moved out */
	CHECK(!xtx_cluster_parse(&c, "xtx-cluster 1\nepoch 2\nreplication 3\n"
				 "servers 10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4\nshards 3\n"
				 "shard 0 1,2\nshard 1 1,2\nshard 2 2,1\n", err, sizeof(err)),
	      "epoch 2 parses: %s", err);
	CHECK(xtx_cluster_add_copier(&c, 1) == 0, "a server in shards copies nothing");
	CHECK(xtx_cluster_add_copier(&c, 3) == 3 && c.nrep[0] == 3 && c.rep[0][2] == 3 &&
	      c.copying[0] && xtx_cluster_copying(&c, 3) == 3 && xtx_cluster_copying(&c, 1) == 0,
	      "the spare copies the 3 shards short of R, last in each");
	CHECK(xtx_cluster_under_replicated(&c) == 3 && xtx_cluster_whole(&c, 0) == 2 &&
	      !(xtx_cluster_gone(&c) >> 3 & 1), "copying, it is in the shards but not yet whole");
	CHECK(xtx_cluster_format(&c, text, sizeof(text)) > 0 && strstr(text, "shard 0 1,2,3*\n"),
	      "a copier is marked in the text:\n%s", text);
	CHECK(!xtx_cluster_parse(&d, text, err, sizeof(err)) && d.copying[2] && !memcmp(&c, &d, sizeof(c)),
	      "and parses back the same: %s", err);
	CHECK(xtx_cluster_add_copier(&c, 0) == 0, "a shard has one copier at a time");
	d = c;
	CHECK(xtx_cluster_drop(&d, 1) == 0 && !memcmp(&c, &d, sizeof(c)),
	      "a whole replica's failure that would leave one whole replica changes nothing");
	CHECK(xtx_cluster_drop(&d, 3) == 3 && d.nrep[0] == 2 && !d.copying[0] &&
	      xtx_cluster_gone(&d) >> 3 & 1, "a copier that fails leaves every shard freely");
	CHECK(xtx_cluster_copied(&c, 3) == 3 && !xtx_cluster_under_replicated(&c) &&
	      !xtx_cluster_copying(&c, 3), "copied: whole, no shard short of R");
	CHECK(xtx_cluster_drop(&c, 1) == 3 && c.rep[0][0] == 2 && c.rep[0][1] == 3 &&
	      c.rep[2][0] == 2, "back at R, a second failure moves out, a whole backup promoted");
	refused("xtx-cluster 1\nepoch 2\nreplication 2\nservers 10.0.0.1,10.0.0.2\nshards 1\n"
		"shard 0 1*\n", "only replica is copying");
	refused("xtx-cluster 1\nepoch 2\nreplication 2\nservers 10.0.0.1,10.0.0.2\nshards 1\n"
		"shard 0 1*,0\n", "shard S R0");
}

static void test_limits(void)
{
	static struct in_addr s[XTX_CLUSTER_MAX_SERVERS];
	static struct xtx_cluster a, b;
	static char text[XTX_CLUSTER_TEXT_MAX];
	char err[160];
	unsigned int i;

	for (i = 0; i < XTX_CLUSTER_MAX_SERVERS; i++)
		s[i].s_addr = htonl(0xc0a80000u + 255 * 256 + 100 + i);	/* 192.168.255.1xx */
	CHECK(!xtx_cluster_build(&a, s, XTX_CLUSTER_MAX_SERVERS, 3, XTX_CLUSTER_MAX_SHARDS, err,
				 sizeof(err)), "the largest cluster builds: %s", err);
	CHECK(xtx_cluster_format(&a, text, sizeof(text)) > 0, "and fits the text bound");
	CHECK(!xtx_cluster_parse(&b, text, err, sizeof(err)) && b.nshards == XTX_CLUSTER_MAX_SHARDS,
	      "and parses back: %s", err);
	CHECK(xtx_cluster_build(&a, s, 3, 3, XTX_CLUSTER_MAX_SHARDS + 1, err, sizeof(err)),
	      "one shard too many is refused");
}

static void test_id(void)
{
	struct in_addr s[2] = { addr("10.0.0.1"), addr("10.0.0.2") };
	static struct xtx_cluster a, b;
	static char text[XTX_CLUSTER_TEXT_MAX];
	char err[160];

	CHECK(!xtx_cluster_build(&a, s, 2, 2, 4, err, sizeof(err)) && !a.id, "built without an id");
	CHECK(xtx_cluster_format(&a, text, sizeof(text)) > 0 && !strstr(text, "id "),
	      "no id: no id line, the text as before");
	a.id = 0xfedcba9876543210ull;
	CHECK(xtx_cluster_format(&a, text, sizeof(text)) > 0 &&
	      strstr(text, "\nid fedcba9876543210\n"), "the id in the text:\n%s", text);
	CHECK(!xtx_cluster_parse(&b, text, err, sizeof(err)) && b.id == a.id &&
	      xtx_cluster_equal(&a, &b), "parsed back with its id: %s", err);
	refused("xtx-cluster 1\nepoch 1\nid 0\nreplication 1\nservers 10.0.0.1\nshards 1\n"
		"shard 0 0\n", "id HEX");
	refused("xtx-cluster 1\nepoch 1\nid 12zz\nreplication 1\nservers 10.0.0.1\nshards 1\n"
		"shard 0 0\n", "id HEX");
	refused("xtx-cluster 1\nepoch 1\nid -5\nreplication 1\nservers 10.0.0.1\nshards 1\n"
		"shard 0 0\n", "id HEX");
	refused("xtx-cluster 1\nepoch 1\nid 1\nid 2\nreplication 1\nservers 10.0.0.1\nshards 1\n"
		"shard 0 0\n", "once");
	refused("xtx-cluster 1\nepoch 1\nid 123456789abcdef01\nreplication 1\nservers 10.0.0.1\n"
		"shards 1\nshard 0 0\n", "id HEX");
}

/* What a server records, and which configuration it then takes up. */
static void test_record(void)
{
	struct in_addr s[3] = { addr("10.0.0.1"), addr("10.0.0.2"), addr("10.0.0.3") };
	static struct xtx_cluster a, b, r;
	char dir[] = "/tmp/xtx-test-record.XXXXXX", path[256], err[512];
	unsigned int self = 9;
	FILE *f;

	CHECK(mkdtemp(dir), "a directory");
	CHECK(!xtx_cluster_build(&a, s, 3, 3, 6, err, sizeof(err)), "build: %s", err);
	a.id = 77;
	a.epoch = 5;
	CHECK(!xtx_cluster_record_path(dir, path, sizeof(path)), "its path");
	CHECK(xtx_cluster_record_read(path, &r, &self, err, sizeof(err)) == -ENOENT,
	      "no record yet: -ENOENT (%s)", err);
	CHECK(!xtx_cluster_record_write(dir, &a, 2), "recorded by server 2");
	CHECK(!xtx_cluster_record_read(path, &r, &self, err, sizeof(err)) &&
	      xtx_cluster_equal(&a, &r) && self == 2, "read back whole, server %u: %s", self, err);
	b = a;
	CHECK(xtx_cluster_record_allows(&r, &b), "the same configuration is taken up");
	b.epoch = 6;
	CHECK(xtx_cluster_record_allows(&r, &b), "a newer epoch is taken up");
	b.epoch = 4;
	CHECK(!xtx_cluster_record_allows(&r, &b), "an older epoch is refused");
	b.epoch = 1;
	CHECK(!xtx_cluster_record_allows(&r, &b), "epoch 1 (ZooKeeper's data lost) is refused");
	b = a;
	b.rep[2][0] = a.rep[2][1];
	b.rep[2][1] = a.rep[2][0];
	CHECK(!xtx_cluster_record_allows(&r, &b) && !xtx_cluster_equal(&a, &b),
	      "the same epoch with another map is refused");
	b = a;
	b.copying[5] = 1;
	CHECK(!xtx_cluster_equal(&a, &b), "a copier marked is another configuration");
	b = a;
	b.id = 78;
	b.epoch = 9;
	CHECK(!xtx_cluster_record_allows(&r, &b), "another cluster's id is refused, however new");
	r.id = 0;
	CHECK(xtx_cluster_record_allows(&r, &b), "a record from before ids compares epochs only");
	f = fopen(path, "w");
	CHECK(f && fputs("server 1\nxtx-cluster 1\nepoch 5\nreplication 3\n", f) >= 0 && !fclose(f),
	      "a record cut short");
	CHECK(xtx_cluster_record_read(path, &r, &self, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "not a cluster configuration"), "is refused, not read as empty (%s)", err);
	f = fopen(path, "w");
	CHECK(f && fputs("xtx-cluster 1\nepoch 5\n", f) >= 0 && !fclose(f), "a configuration alone");
	CHECK(xtx_cluster_record_read(path, &r, &self, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "not a server's record"), "is not a server's record (%s)", err);
	CHECK(!xtx_cluster_record_write(dir, &a, 3) &&
	      xtx_cluster_record_read(path, &r, &self, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "does not list"), "a record by a server its map lacks is refused (%s)", err);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	RUN_CASE(test_round_trip);
	RUN_CASE(test_static_is_todays_placement);
	RUN_CASE(test_bad_text);
	RUN_CASE(test_under_replicated);
	RUN_CASE(test_moves);
	RUN_CASE(test_copiers);
	RUN_CASE(test_limits);
	RUN_CASE(test_id);
	RUN_CASE(test_record);
	printf("# test_cluster: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
