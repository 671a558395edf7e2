// SPDX-License-Identifier: GPL-2.0-only
/*
 * Values of every length through transactions, checked byte for byte: a
 * client of any xtx server (xtxd or xtx-udpd) that writes keys of the
 * given lengths and reads them back.
 *
 *   build/examples/values --servers 10.0.0.1,10.0.0.2,10.0.0.3 [check|write|read]
 *
 * Key key_base + i holds sizes[i] bytes of a pattern of (key, length,
 * generation).  write: one transaction inserts (generation 1) or, with
 * --gen above 1, overwrites every key.  read: one transaction reads them
 * all and compares.  check (the default): insert, read, overwrite each key
 * in a read-modify-write transaction of its own (generation 2), read
 * again.  A retryable abort (a conflict, or a value longer than the room
 * the client reserved, which the client then learns) runs the transaction
 * again.  Keys an earlier run wrote are overwritten, so it runs again and
 * again.  Prints one line per step and exits 0 only if every value read
 * back was the one written.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libxtx.h"
#include "servers.h"

#define MAX_KEYS	XTX_TXN_MAX_KEYS
#define TRIES		100

struct job {
	uint8_t table;
	uint64_t key_base;
	uint16_t sizes[MAX_KEYS];
	unsigned int nkeys;
	unsigned int gen;
	bool insert;
	int only;		/* read-modify-write of this key alone, or -1 */
	int handles[MAX_KEYS];
	unsigned int wrong;	/* keys read back otherwise than written */
	char why[160];
};

static void pattern(uint64_t key, uint16_t len, unsigned int gen, uint8_t *out)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		out[i] = (uint8_t)(key * 13 + i * 7 + len + gen * 101);
}

/* Compares key i's answer with generation gen's value; notes the first difference. */
static void check_value(struct xtx_txn *t, struct job *j, unsigned int i, unsigned int gen)
{
	uint8_t want[XTX_VALUE_MAX];
	uint64_t key = j->key_base + i;
	const void *v;
	uint16_t len;
	int err;

	pattern(key, j->sizes[i], gen, want);
	err = xtx_value(t, j->handles[i], &v, &len);
	if (!err && len == j->sizes[i] && !memcmp(v, want, len))
		return;
	if (!j->wrong++)
		snprintf(j->why, sizeof(j->why), "key %llu: %s%u bytes, wanted %u of generation %u",
			 (unsigned long long)key, err ? "absent, " : "", err ? 0 : len, j->sizes[i],
			 gen);
}

static enum xtx_step write_step(struct xtx_txn *t, void *arg)
{
	struct job *j = arg;
	uint8_t v[XTX_VALUE_MAX];
	unsigned int i;
	int err;

	for (i = 0; i < j->nkeys; i++) {
		pattern(j->key_base + i, j->sizes[i], j->gen, v);
		err = j->insert ? xtx_insert(t, j->table, j->key_base + i, v, j->sizes[i]) :
				  xtx_put(t, j->table, j->key_base + i, v, j->sizes[i]);
		if (err) {
			snprintf(j->why, sizeof(j->why), "writing %u bytes: %s", j->sizes[i],
				 strerror(-err));
			return XTX_STEP_ABORT;
		}
	}
	return XTX_STEP_COMMIT;
}

static enum xtx_step read_step(struct xtx_txn *t, void *arg)
{
	struct job *j = arg;
	unsigned int i;

	if (xtx_txn_round(t) == 0) {
		for (i = 0; i < j->nkeys; i++)
			j->handles[i] = xtx_get(t, j->table, j->key_base + i, 0);
		return XTX_STEP_READ;
	}
	j->wrong = 0;
	for (i = 0; i < j->nkeys; i++)
		check_value(t, j, i, j->gen);
	return XTX_STEP_COMMIT;
}

/* Key j->only read for update, checked, and overwritten with generation j->gen. */
static enum xtx_step rmw_step(struct xtx_txn *t, void *arg)
{
	struct job *j = arg;
	unsigned int i = (unsigned int)j->only;
	uint8_t v[XTX_VALUE_MAX];
	int err;

	if (xtx_txn_round(t) == 0) {
		j->handles[i] = xtx_get(t, j->table, j->key_base + i, XTX_GET_FOR_UPDATE);
		return XTX_STEP_READ;
	}
	j->wrong = 0;
	check_value(t, j, i, j->gen - 1);
	pattern(j->key_base + i, j->sizes[i], j->gen, v);
	err = xtx_put(t, j->table, j->key_base + i, v, j->sizes[i]);
	if (err) {
		snprintf(j->why, sizeof(j->why), "writing %u bytes: %s", j->sizes[i],
			 strerror(-err));
		return XTX_STEP_ABORT;
	}
	return XTX_STEP_COMMIT;
}

/*
 * Runs step until it commits or fails for good; 0 when committed with nothing read wrong.
 * An insert of keys an earlier run left (check, run again) overwrites them instead.
 */
static int run(struct xtx_client *c, xtx_step_fn step, struct job *j, const char *what)
{
	struct xtx_txn_result res;
	unsigned int tries = 0;

	for (;;) {
		j->why[0] = '\0';
		xtx_run(c, step, j, &res);
		tries++;
		if (res.outcome == XTX_ABORTED && res.cause == XTX_CAUSE_EXISTS && j->insert) {
			printf("%s: the keys exist (an earlier run's): overwriting them\n", what);
			j->insert = false;
			continue;
		}
		if (tries >= TRIES || res.outcome != XTX_ABORTED || !xtx_cause_retryable(res.cause))
			break;
	}
	if (res.outcome == XTX_FAILED) {
		printf("%s: failed: no server answered before the commit point (nothing was "
		       "written); are the servers up, and reachable from here?\n", what);
		return -1;
	}
	if (res.outcome != XTX_COMMITTED) {
		printf("%s: %s (%s)%s%s\n", what, xtx_outcome_name(res.outcome),
		       xtx_cause_name(res.cause), j->why[0] ? ": " : "", j->why);
		return -1;
	}
	if (j->wrong) {
		printf("%s: %u key(s) read wrong: %s\n", what, j->wrong, j->why);
		return -1;
	}
	printf("%s: committed (%u tries)\n", what, tries);
	return 0;
}

static int parse_sizes(const char *s, struct job *j)
{
	char *end;
	unsigned long v;

	j->nkeys = 0;
	while (*s) {
		v = strtoul(s, &end, 10);
		if (end == s || v > XTX_VALUE_MAX || j->nkeys == MAX_KEYS || (*end && *end != ','))
			return -1;
		j->sizes[j->nkeys++] = (uint16_t)v;
		s = *end ? end + 1 : end;
	}
	return j->nkeys ? 0 : -1;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s --servers IP[,IP...] [options] [check|write|read]\n"
		"  -s, --servers LIST     the cluster, in its order\n"
		"  -p, --port N           their UDP port (default %d)\n"
		"  -P, --protocol P       occ (default), 2pl or hades\n"
		"  -t, --table T          table id (default 14)\n"
		"  -k, --key-base K       first key (default 5000)\n"
		"  -z, --sizes LIST       value lengths, one key each (default 1,40,41,512,1024)\n"
		"  -g, --gen N            write/read: the generation written or expected (default 1)\n"
		"  -d, --declare          declare the table's longest value ahead (else learnt)\n"
		"  -c, --client-id N      (default: from the pid)\n"
		"  -h, --help             this text\n"
		"\n"
		"Example: %s --servers 10.77.0.2,10.77.1.2,10.77.2.2 check\n",
		prog, XTX_DEFAULT_PORT, prog);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "servers", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "protocol", required_argument, NULL, 'P' },
		{ "table", required_argument, NULL, 't' },
		{ "key-base", required_argument, NULL, 'k' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "gen", required_argument, NULL, 'g' },
		{ "declare", no_argument, NULL, 'd' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct xtx_client_cfg cfg = { .protocol = XTX_PROTO_OCC };
	struct job j = { .table = 14, .key_base = 5000, .gen = 1, .only = -1 };
	const char *list = NULL, *mode = "check";
	struct sockaddr_in *servers;
	struct xtx_client *c;
	bool declare = false;
	unsigned int n, i, port = XTX_DEFAULT_PORT;
	uint16_t longest = 0, shortest = XTX_VALUE_MAX;
	int opt, rc = 0;

	parse_sizes("1,40,41,512,1024", &j);
	cfg.client_id = (uint32_t)getpid() % 1000;
	while ((opt = getopt_long(argc, argv, "s:p:P:t:k:z:g:dc:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': list = optarg; break;
		case 'p':
			port = (unsigned int)strtoul(optarg, NULL, 0);
			if (!port || port > 65535)
				goto bad;
			break;
		case 'P':
			if (xtx_protocol_parse(optarg, &cfg.protocol))
				goto bad;
			break;
		case 't': j.table = (uint8_t)strtoul(optarg, NULL, 0); break;
		case 'k': j.key_base = strtoull(optarg, NULL, 0); break;
		case 'z':
			if (parse_sizes(optarg, &j))
				goto bad;
			break;
		case 'g': j.gen = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'd': declare = true; break;
		case 'c': cfg.client_id = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: goto bad;
		}
	}
	if (optind < argc)
		mode = argv[optind++];
	if (!list || optind < argc || !j.gen ||
	    (strcmp(mode, "check") && strcmp(mode, "write") && strcmp(mode, "read")))
		goto bad;
	if (xtx_parse_servers("--servers", list, (uint16_t)port, &servers, &n))
		return 2;
	cfg.servers = servers;
	cfg.nservers = n;
	c = xtx_client_open(&cfg);
	if (!c) {
		free(servers);
		return 1;
	}
	for (i = 0; i < j.nkeys; i++) {
		longest = j.sizes[i] > longest ? j.sizes[i] : longest;
		shortest = j.sizes[i] < shortest ? j.sizes[i] : shortest;
	}
	if (declare && xtx_client_table_value_max(c, j.table, longest)) {
		fprintf(stderr, "Error: --table %u: no such table\n", j.table);
		rc = 2;
		goto out;
	}
	if (!strcmp(mode, "write")) {
		j.insert = j.gen == 1;
		rc = run(c, write_step, &j, "write") ? 1 : 0;
	} else if (!strcmp(mode, "read")) {
		rc = run(c, read_step, &j, "read") ? 1 : 0;
	} else {
		j.insert = true;
		rc |= run(c, write_step, &j, "insert") ? 1 : 0;
		rc |= run(c, read_step, &j, "read") ? 1 : 0;
		j.gen = 2;
		for (i = 0; i < j.nkeys && !rc; i++) {
			j.only = (int)i;
			rc |= run(c, rmw_step, &j, "update") ? 1 : 0;
		}
		rc |= run(c, read_step, &j, "read again") ? 1 : 0;
	}
	printf("values: %s, %u keys of %u..%u bytes, retransmits %llu, value_room aborts %llu\n",
	       rc ? "WRONG" : "ok", j.nkeys, shortest, longest,
	       (unsigned long long)xtx_client_stats(c)->retransmits,
	       (unsigned long long)xtx_client_stats(c)->aborts[XTX_CAUSE_VALUE_ROOM]);
out:
	xtx_client_close(c);
	free(servers);
	return rc;
bad:
	usage(stderr, argv[0]);
	return 2;
}
