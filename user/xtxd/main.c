// SPDX-License-Identifier: GPL-2.0-only
/* xtxd: loads the xtx XDP server onto an interface and keeps it running. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/log.h>
#include <xtx/hades.h>
#include "allow.h"
#include "secret.h"
#include "attach.h"
#include "control.h"
#include "daemon.h"
#include "log.h"
#include "log/logdrain.h"
#include "logfile.h"
#include "num.h"
#include "version.h"
#include "rare/rare.h"
#include "sizing.h"
#include "store/overflow.h"
#include "log/hades_carry.h"
#include "log/recover.h"
#include "log/undecided.h"
#include "log/userlog.h"
#include "resolve/resolve.h"
#include "resolve/settle.h"
#include "log/snapshot.h"
#include "housekeeping.h"
#include "member.h"
#include "copy/copy.h"
#include "zk.h"
#include "metrics.h"
#include "target.h"
#include "tlock.h"

#define XTXD_FLUSH_TIMEOUT_NS	(30ull * 1000 * 1000 * 1000)

struct xtxd_opts {
	const char *iface;
	const char *netns;
	const char *pidfile;
	const char *logfile;
	const char *cpus;
	struct xtx_load_opts load;
	struct xtxd_rare_opts rare;
	struct xtxd_logdrain_opts drain;
	struct xtxd_resolve_opts resolve;
	struct xtxd_sizing sizing;	/* --capacity; capacity 0: not given */
	bool kv_set, lock_set, ovf_set;	/* given on their own: --capacity leaves them */
	const char *peers, *cluster;
	struct xtxd_member_opts member;	/* --zk: a cluster held in ZooKeeper */
	const char *metrics;		/* ADDR:PORT of the Prometheus endpoint, or NULL */
	const char *allow;		/* CIDR[,CIDR...]: the client allowlist, or NULL */
	uint64_t snapshot_every_ns;	/* 0: snapshots only by hand */
	bool has_secret;		/* --secret-file: requests must carry its MAC */
	struct xtx_secret secret;
	struct sockaddr_in metrics_addr;
	bool daemon;
	bool replace;
	bool keep_state;
	bool generic_ok;
	bool fresh;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xtxd --iface IF [options]\n"
		"Load the xtx transaction server onto interface IF and serve until stopped.\n"
		"\n"
		"  -i, --iface IF           interface to serve (required)\n"
		"  -n, --netns NAME         enter network namespace NAME first (bpffs stays the host's)\n"
		"  -p, --port N             UDP port of the protocol (default %d)\n"
		"  -c, --max-clients N      client ids served, 1..%u (default %u)\n"
		"      --capacity KEYS      keys this server holds (all tables, replicas' copies\n"
		"                           included): sizes the kernel cache and the lock table\n"
		"                           at 1.5x KEYS (DINT) and lets the overflow store hold\n"
		"                           KEYS and an eighth more (any key can be evicted to\n"
		"                           it); --lock-slots, --kv-buckets, --overflow-max given\n"
		"                           too override their part. Default: the sizes below\n"
		"  -l, --lock-slots N       lock table slots, 1..%u (default %u); DINT provisions\n"
		"                           1.5x the keys locked\n"
		"      --lock-lease DUR     reclaim a lock not re-granted for DUR, unless its holder\n"
		"                           logged (default 500ms; 0 disables)\n"
		"  -b, --kv-buckets N       kernel cache buckets of %u ways, 1..%u (default %u)\n"
		"      --kv-lease DUR       take over a bucket held across a lost rare-path round\n"
		"                           trip after DUR (default 50ms)\n"
		"      --value-size B       largest value a write may carry, 1..%u (default %u;\n"
		"                           over %u they live in the overflow store, not XDP's cache)\n"
		"      --value-store N      copies of values over %u bytes XDP answers reads from,\n"
		"                           0..%u (default %u; 0: xtxd answers them all)\n"
		"      --log-entries N      log entries per CPU, a power of two up to %u (default %u)\n"
		"      --data-dir DIR       where the logs are drained to (default\n"
		"                           %s/<netns>-<iface>, created 0700)\n"
		"      --fresh              start with an empty store: move the data directory's\n"
		"                           snapshots and logs aside (fresh-<time>/, the two\n"
		"                           newest kept) instead of recovering them; with --zk,\n"
		"                           also join a cluster older than, or other than, the\n"
		"                           one this server recorded serving (cluster.conf)\n"
		"      --log-sync DUR       fdatasync the drained log at most every DUR; an entry\n"
		"                           leaves the ring only once synced (default 2ms)\n"
		"      --log-stall DUR      a log that has written and synced nothing of what waits\n"
		"                           for DUR (a hung or failing disk) stops this server, as\n"
		"                           a failed fdatasync does (default 10s, at least 1s)\n"
		"      --zk HOST:PORT[,...] serve in the cluster held by this ZooKeeper ensemble: its\n"
		"                           configuration gives the servers (this one among them)\n"
		"                           and the epoch; a live node holds this server's lease,\n"
		"                           and XDP stops serving when the lease may have passed\n"
		"      --zk-name NAME       the cluster's name there (default %s)\n"
		"      --zk-session DUR     the ZooKeeper session asked for (default 2s, as granted\n"
		"                           by the ensemble): the lease is 2/3 of it, a failure\n"
		"                           is seen after it and half again\n"
		"      --peers IP[,IP...]   every server of the cluster, in the clients' --servers\n"
		"                           order (a log record names its replicas by position):\n"
		"                           transactions whose coordinator vanished after logging\n"
		"                           are decided with the other replicas\n"
		"      --cluster FILE       the same list from a file, one IP per line\n"
		"      --self N             this server's position in it (default: the listed\n"
		"                           address that is local)\n"
		"      --resolve-after DUR  decide a logged transaction left unfinished for DUR\n"
		"                           (default 3s)\n"
		"      --hades-slots N      HADES transaction slots, 16..%u (default %u); each\n"
		"                           holds 8 KiB of room for values over 40 bytes\n"
		"      --hades-bf-bits M    bits of each HADES read/write filter, a multiple of 64\n"
		"                           in %u..%u (default %u)\n"
		"      --hades-hashes K     hashes per filter key, 1..%u (default %u)\n"
		"      --hades-lease DUR    reclaim an active HADES slot untouched for DUR\n"
		"                           (default 500ms; 0 disables)\n"
		"      --hades-exact        keep exact key sets beside the filters and count the\n"
		"                           false-positive squashes (debug; costs memory)\n"
		"      --kv-write-through   ablation: every write goes to xtxd's store first\n"
		"      --kv-no-bloom        ablation: no Bloom filter, every miss asks xtxd\n"
		"      --no-warm            ablation: ops run without first loading the lines\n"
		"                           of every bucket and lock slot of their packet\n"
		"      --overflow-max N     keys the overflow store may hold (default %u); more\n"
		"                           answer FULL\n"
		"      --rare-threads N     threads serving the rare path (default 2)\n"
		"      --echo               answer every op OK without touching state (ceiling)\n"
		"      --generic            use generic (skb) XDP: slow, for NICs without native XDP\n"
		"      --replace            replace a running xtx program instead of adopting it\n"
		"      --keep-state         on exit leave the program attached and the maps pinned\n"
		"      --cpus LIST          CPUs xtxd's threads may use (e.g. 1 or 0-1); keep it\n"
		"                           off the cores that take the NIC interrupts\n"
		"  -d, --daemon             run in the background (pidfile and log file)\n"
		"      --pidfile PATH       default %s/<netns>-<iface>.pid\n"
		"      --logfile PATH       default %s/<netns>-<iface>.log (daemon mode)\n"
		"      --allow CIDR[,...]   serve only these sources (XDP drops and counts the rest;\n"
		"                           xtxctl allow changes the list at run time)\n"
		"      --secret-file PATH   the cluster's shared secret (32 hex digits, mode 0600):\n"
		"                           XDP drops and counts requests without its MAC; the\n"
		"                           servers seal their own messages with it (resolver and\n"
		"                           copy ports) and drop unsealed or replayed ones\n"
		"      --snapshot-every DUR take a snapshot this often (e.g. 10m): it removes the log\n"
		"                           segments it covers, so the data directory stays bounded\n"
		"      --keep-decided DUR   keep a resolver decision this long once no log here needs\n"
		"                           it, for late questions from peers (default 10m); a\n"
		"                           snapshot then drops it from decided.xdec\n"
		"      --metrics ADDR:PORT  serve Prometheus metrics at http://ADDR:PORT/metrics\n"
		"                           (ADDR empty: every address of the netns)\n"
		"  -v, --verbose            more output (repeat for libbpf/libxdp debug)\n"
		"  -h, --help               this text\n"
		"  -V, --version            the release and build\n"
		"\n"
		"\n"
		"The control channel (xtxctl) is a unix socket, %s/<netns>-<iface>.sock,\n"
		"mode 0600: only root can use it.\n"
		"\n"
		"Example: xtxd --netns xtx-s0 --iface xtxs0 --daemon --metrics :9370\n"
		"         xtxd --iface eth1 --daemon --capacity 11000000   (TATP, 1M subscribers,\n"
		"         3 servers, R = 3: 10.7M keys each)\n",
		XTX_DEFAULT_PORT, XTX_MAX_CLIENTS_LIMIT, XTX_MAX_CLIENTS_DEFAULT,
		XTX_LOCK_SLOTS_MAX, XTX_LOCK_SLOTS_DEFAULT, XTX_KV_WAYS, XTX_KV_BUCKETS_MAX,
		XTX_KV_BUCKETS_DEFAULT, XTX_VALUE_MAX, XTX_VALUE_MAX, XTX_VALUE_INLINE, XTX_VALUE_INLINE,
		XTX_BIGVAL_MAX, XTX_BIGVAL_DEFAULT, XTX_LOG_RING_MAX,
		XTX_LOG_RING_DEFAULT, XTX_LOGFILE_DIR_ROOT, XTX_ZK_NAME_DEFAULT, XTX_HADES_SLOTS_MAX,
		XTX_HADES_SLOTS_DEFAULT, XTX_HADES_BF_BITS_MIN, XTX_HADES_BF_BITS_MAX,
		XTX_HADES_BF_BITS_DEFAULT, XTX_HADES_HASHES_MAX, XTX_HADES_HASHES_DEFAULT,
		XTXD_OVERFLOW_MAX_DEFAULT,
		XTX_RUN_DIR,
		XTX_RUN_DIR, XTX_RUN_DIR);
}

enum { OPT_ECHO = 256, OPT_GENERIC, OPT_REPLACE, OPT_KEEP, OPT_CPUS, OPT_PIDFILE, OPT_LOGFILE,
       OPT_LEASE, OPT_KV_LEASE, OPT_OVERFLOW_MAX, OPT_RARE_THREADS, OPT_WRITE_THROUGH,
       OPT_NO_BLOOM, OPT_NO_WARM, OPT_VALUE_SIZE, OPT_VALUE_STORE, OPT_LOG_ENTRIES, OPT_DATA_DIR, OPT_LOG_SYNC, OPT_LOG_STALL, OPT_FRESH,
       OPT_ZK, OPT_ZK_NAME, OPT_ZK_SESSION, OPT_PEERS, OPT_CLUSTER, OPT_SELF, OPT_RESOLVE_AFTER, OPT_HADES_SLOTS, OPT_HADES_BF_BITS,
       OPT_HADES_HASHES, OPT_HADES_LEASE, OPT_HADES_EXACT, OPT_METRICS, OPT_ALLOW,
       OPT_SNAPSHOT_EVERY, OPT_KEEP_DECIDED, OPT_SECRET_FILE, OPT_CAPACITY };

/* --capacity sizes what was not given on its own. */
static void apply_capacity(struct xtxd_opts *o)
{
	struct xtxd_sizing *z = &o->sizing;

	if (z->capacity) {
		xtxd_size_for(z->capacity, z);
		if (!o->kv_set)
			o->load.kv_buckets = z->kv_buckets;
		if (!o->lock_set)
			o->load.lock_slots = z->lock_slots;
		if (!o->ovf_set)
			o->rare.overflow_max = z->overflow_max;
	}
	/* what runs, whichever way it was chosen: for the report and xtxctl info */
	z->kv_buckets = o->load.kv_buckets;
	z->lock_slots = o->load.lock_slots;
	z->overflow_max = o->rare.overflow_max;
}

static double mib(uint64_t bytes)
{
	return bytes / 1048576.0;
}

/* One line an operator can check the sizes by; warnings where a map's limit cut the rule short. */
static void print_sizes(const struct xtxd_opts *o)
{
	const struct xtxd_sizing *z = &o->sizing;
	struct xtxd_ovf_cost c;
	struct xtxd_memory m;

	/* the keys the kernel spills hold its values; longer ones are counted apart */
	xtxd_ovf_cost(o->load.value_size < XTX_VALUE_INLINE ? o->load.value_size : XTX_VALUE_INLINE,
		      &c.per_key, &c.per_spilling_bucket, &c.per_bucket);
	xtxd_ovf_cost(XTX_VALUE_MAX, &c.per_big_key, &c.per_spilling_bucket, &c.per_bucket);
	xtxd_memory_estimate(z->capacity, z, &c, &m);
	if (z->kv_capped && !o->kv_set)
		pr_warn("xtxd: --capacity %llu: the kernel cache is capped at %u buckets "
			"(XTX_KV_BUCKETS_MAX): about %llu keys live in the overflow store\n",
			(unsigned long long)z->capacity, XTX_KV_BUCKETS_MAX,
			(unsigned long long)m.spill_keys);
	if (z->lock_capped && !o->lock_set)
		pr_warn("xtxd: --capacity %llu: the lock table is capped at %u slots "
			"(XTX_LOCK_SLOTS_MAX): more keys share a lock slot\n",
			(unsigned long long)z->capacity, XTX_LOCK_SLOTS_MAX);
	if (z->ovf_capped && !o->ovf_set)
		pr_warn("xtxd: --capacity %llu: the overflow store is capped at %llu keys\n",
			(unsigned long long)z->capacity,
			(unsigned long long)XTXD_OVERFLOW_MAX_LIMIT);
	if (z->capacity && z->overflow_max < z->capacity)
		pr_warn("xtxd: --overflow-max %llu is below --capacity %llu: keys evicted from the "
			"kernel cache may find the overflow store full\n",
			(unsigned long long)z->overflow_max, (unsigned long long)z->capacity);
	if (o->load.bigval_max)
		pr_info("xtxd: value store: XDP answers reads of up to %u values over %u B from "
			"copies (a 2 KiB kernel allocation each, taken as used: up to %.0f MiB; "
			"--value-store)\n", o->load.bigval_max, XTX_VALUE_INLINE,
			mib((uint64_t)o->load.bigval_max * 2048));
	if (!z->capacity) {
		pr_info("xtxd: sizes: kernel cache %u buckets x %u ways (%.0f MiB), lock table %u "
			"slots (%.0f MiB), overflow store up to %llu keys (%zu B each, %zu B with "
			"a %u B value); --capacity KEYS sizes them for the data\n", z->kv_buckets,
			XTX_KV_WAYS, mib(m.kv_bytes), z->lock_slots, mib(m.lock_bytes),
			(unsigned long long)z->overflow_max, c.per_key, c.per_big_key,
			XTX_VALUE_MAX);
		return;
	}
	pr_info("xtxd: sizes for --capacity %llu keys: kernel cache %u buckets x %u ways "
		"(%.0f MiB), lock table %u slots (%.0f MiB), overflow store up to %llu keys "
		"(~%.0f MiB expected: ~%llu keys spill); total ~%.0f MiB, %.0f B per key; a key "
		"with a value over %u B lives in the overflow store only (up to %zu B each)\n",
		(unsigned long long)z->capacity, z->kv_buckets, XTX_KV_WAYS, mib(m.kv_bytes),
		z->lock_slots, mib(m.lock_bytes), (unsigned long long)z->overflow_max,
		mib(m.ovf_bytes), (unsigned long long)m.spill_keys, mib(m.total_bytes), m.per_key,
		XTX_VALUE_INLINE, c.per_big_key);
}

static int parse_args(int argc, char **argv, struct xtxd_opts *o)
{
	static const struct option longopts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "netns", required_argument, NULL, 'n' },
		{ "port", required_argument, NULL, 'p' },
		{ "max-clients", required_argument, NULL, 'c' },
		{ "capacity", required_argument, NULL, OPT_CAPACITY },
		{ "lock-slots", required_argument, NULL, 'l' },
		{ "lock-lease", required_argument, NULL, OPT_LEASE },
		{ "kv-buckets", required_argument, NULL, 'b' },
		{ "kv-lease", required_argument, NULL, OPT_KV_LEASE },
		{ "kv-write-through", no_argument, NULL, OPT_WRITE_THROUGH },
		{ "kv-no-bloom", no_argument, NULL, OPT_NO_BLOOM },
		{ "no-warm", no_argument, NULL, OPT_NO_WARM },
		{ "value-size", required_argument, NULL, OPT_VALUE_SIZE },
		{ "value-store", required_argument, NULL, OPT_VALUE_STORE },
		{ "log-entries", required_argument, NULL, OPT_LOG_ENTRIES },
		{ "data-dir", required_argument, NULL, OPT_DATA_DIR },
		{ "log-sync", required_argument, NULL, OPT_LOG_SYNC },
		{ "log-stall", required_argument, NULL, OPT_LOG_STALL },
		{ "fresh", no_argument, NULL, OPT_FRESH },
		{ "zk", required_argument, NULL, OPT_ZK },
		{ "zk-name", required_argument, NULL, OPT_ZK_NAME },
		{ "zk-session", required_argument, NULL, OPT_ZK_SESSION },
		{ "peers", required_argument, NULL, OPT_PEERS },
		{ "cluster", required_argument, NULL, OPT_CLUSTER },
		{ "self", required_argument, NULL, OPT_SELF },
		{ "resolve-after", required_argument, NULL, OPT_RESOLVE_AFTER },
		{ "hades-slots", required_argument, NULL, OPT_HADES_SLOTS },
		{ "hades-bf-bits", required_argument, NULL, OPT_HADES_BF_BITS },
		{ "hades-hashes", required_argument, NULL, OPT_HADES_HASHES },
		{ "hades-lease", required_argument, NULL, OPT_HADES_LEASE },
		{ "hades-exact", no_argument, NULL, OPT_HADES_EXACT },
		{ "overflow-max", required_argument, NULL, OPT_OVERFLOW_MAX },
		{ "rare-threads", required_argument, NULL, OPT_RARE_THREADS },
		{ "echo", no_argument, NULL, OPT_ECHO },
		{ "generic", no_argument, NULL, OPT_GENERIC },
		{ "replace", no_argument, NULL, OPT_REPLACE },
		{ "keep-state", no_argument, NULL, OPT_KEEP },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "daemon", no_argument, NULL, 'd' },
		{ "pidfile", required_argument, NULL, OPT_PIDFILE },
		{ "logfile", required_argument, NULL, OPT_LOGFILE },
		{ "metrics", required_argument, NULL, OPT_METRICS },
		{ "allow", required_argument, NULL, OPT_ALLOW },
		{ "snapshot-every", required_argument, NULL, OPT_SNAPSHOT_EVERY },
		{ "keep-decided", required_argument, NULL, OPT_KEEP_DECIDED },
		{ "secret-file", required_argument, NULL, OPT_SECRET_FILE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	uint64_t ns;
	uint32_t v;
	int c;

	o->load.port = XTX_DEFAULT_PORT;
	o->load.max_clients = XTX_MAX_CLIENTS_DEFAULT;
	o->load.lock_slots = XTX_LOCK_SLOTS_DEFAULT;
	o->load.lock_lease_ns = XTX_LOCK_LEASE_DEFAULT_NS;
	o->load.kv_buckets = XTX_KV_BUCKETS_DEFAULT;
	o->load.kv_lease_ns = XTX_KV_LEASE_DEFAULT_NS;
	o->load.value_size = XTX_VALUE_MAX;
	o->load.bigval_max = XTX_BIGVAL_DEFAULT;
	o->load.log_ring = XTX_LOG_RING_DEFAULT;
	o->load.hades_slots = XTX_HADES_SLOTS_DEFAULT;
	o->load.hades_bf_bits = XTX_HADES_BF_BITS_DEFAULT;
	o->load.hades_hashes = XTX_HADES_HASHES_DEFAULT;
	o->load.hades_lease_ns = XTX_HADES_LEASE_DEFAULT_NS;
	o->rare.overflow_max = XTXD_OVERFLOW_MAX_DEFAULT;
	o->rare.threads = 2;
	o->drain.sync_ns = XTXD_LOG_SYNC_DEFAULT_NS;
	o->resolve.after_ns = XTXD_RESOLVE_AFTER_DEFAULT_NS;
	o->resolve.peers.self = XTXD_SELF_UNKNOWN;
	o->member.name = XTX_ZK_NAME_DEFAULT;
	o->member.session_ms = XTX_ZK_SESSION_MS_DEFAULT;
	while ((c = getopt_long(argc, argv, "i:n:p:c:l:b:dvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': o->iface = optarg; break;
		case 'n': o->netns = optarg; break;
		case 'p':
			if (xtx_parse_u32("--port", optarg, 1, 65535, &v))
				return -1;
			o->load.port = v;
			break;
		case 'c':
			if (xtx_parse_u32("--max-clients", optarg, 1, XTX_MAX_CLIENTS_LIMIT,
					  &o->load.max_clients))
				return -1;
			break;
		case 'l':
			if (xtx_parse_u32("--lock-slots", optarg, 1, XTX_LOCK_SLOTS_MAX,
					  &o->load.lock_slots))
				return -1;
			o->lock_set = true;
			break;
		case OPT_CAPACITY:
			if (xtx_parse_u64("--capacity", optarg, 1, XTXD_CAPACITY_MAX,
					  &o->sizing.capacity))
				return -1;
			break;
		case OPT_LEASE:
			if (xtx_parse_duration("--lock-lease", optarg, &ns))
				return -1;
			o->load.lock_lease_ns = ns;
			break;
		case 'b':
			if (xtx_parse_u32("--kv-buckets", optarg, 1, XTX_KV_BUCKETS_MAX,
					  &o->load.kv_buckets))
				return -1;
			o->kv_set = true;
			break;
		case OPT_KV_LEASE:
			if (xtx_parse_duration("--kv-lease", optarg, &ns))
				return -1;
			o->load.kv_lease_ns = ns;
			break;
		case OPT_HADES_SLOTS:
			if (xtx_parse_u32("--hades-slots", optarg, 16, XTX_HADES_SLOTS_MAX,
					  &o->load.hades_slots))
				return -1;
			break;
		case OPT_HADES_BF_BITS:
			if (xtx_parse_u32("--hades-bf-bits", optarg, XTX_HADES_BF_BITS_MIN,
					  XTX_HADES_BF_BITS_MAX, &v))
				return -1;
			if (v % 64) {
				fprintf(stderr, "Error: --hades-bf-bits: %u is not a multiple of 64\n",
					v);
				return -1;
			}
			o->load.hades_bf_bits = v;
			break;
		case OPT_HADES_HASHES:
			if (xtx_parse_u32("--hades-hashes", optarg, 1, XTX_HADES_HASHES_MAX,
					  &o->load.hades_hashes))
				return -1;
			break;
		case OPT_HADES_LEASE:
			if (xtx_parse_duration("--hades-lease", optarg, &ns))
				return -1;
			o->load.hades_lease_ns = ns;
			break;
		case OPT_HADES_EXACT: o->load.hades_exact = true; break;
		case OPT_ALLOW: {
			/* every prefix must parse before anything is loaded */
			char *copy = strdup(optarg), *tok, *save = NULL;
			struct xtx_allow_key k;
			int bad = !copy;

			for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && !bad;
			     tok = strtok_r(NULL, ",", &save))
				bad = xtx_allow_parse(tok, &k) != 0;
			free(copy);
			if (bad)
				return -1;
			o->allow = optarg;
			break;
		}
		case OPT_SECRET_FILE:
			if (xtx_secret_read(optarg, &o->secret))
				return -1;
			o->has_secret = true;
			o->resolve.secret = &o->secret;
			break;
		case OPT_KEEP_DECIDED:
			if (xtx_parse_duration("--keep-decided", optarg, &o->resolve.keep_ns) ||
			    !o->resolve.keep_ns) {
				fprintf(stderr, "Error: --keep-decided must be above zero\n");
				return -1;
			}
			break;
		case OPT_SNAPSHOT_EVERY:
			if (xtx_parse_duration("--snapshot-every", optarg, &o->snapshot_every_ns))
				return -1;
			if (o->snapshot_every_ns < 1000000000ull) {
				fprintf(stderr, "Error: --snapshot-every: at least 1s\n");
				return -1;
			}
			break;
		case OPT_METRICS:
			o->metrics = optarg;
			if (xtxd_metrics_parse(optarg, &o->metrics_addr))
				return -1;
			break;
		case OPT_OVERFLOW_MAX:
			if (xtx_parse_u64("--overflow-max", optarg, 1, XTXD_OVERFLOW_MAX_LIMIT,
					  &o->rare.overflow_max))
				return -1;
			o->ovf_set = true;
			break;
		case OPT_RARE_THREADS:
			if (xtx_parse_u32("--rare-threads", optarg, 1, XTXD_RARE_THREADS_MAX,
					  &o->rare.threads))
				return -1;
			break;
		case OPT_WRITE_THROUGH: o->load.kv_flags |= XTX_INFO_KV_WRITE_THROUGH; break;
		case OPT_NO_BLOOM: o->load.kv_flags |= XTX_INFO_KV_NO_BLOOM; break;
		case OPT_NO_WARM: o->load.kv_flags |= XTX_INFO_NO_WARM; break;
		case OPT_LOG_ENTRIES:
			if (xtx_parse_u32("--log-entries", optarg, 2, XTX_LOG_RING_MAX, &v))
				return -1;
			if (v & (v - 1)) {
				fprintf(stderr, "Error: --log-entries: %u is not a power of two\n", v);
				return -1;
			}
			o->load.log_ring = v;
			break;
		case OPT_DATA_DIR: o->drain.data_dir = optarg; break;
		case OPT_FRESH: o->fresh = true; break;
		case OPT_ZK: o->member.zk = optarg; break;
		case OPT_ZK_NAME: o->member.name = optarg; break;
		case OPT_ZK_SESSION:
			if (xtx_parse_duration("--zk-session", optarg, &ns))
				return -1;
			if (ns < 1000000000ull || ns > 60000000000ull) {
				fprintf(stderr, "Error: --zk-session: %s is not within 1s..60s\n",
					optarg);
				return -1;
			}
			o->member.session_ms = (unsigned int)(ns / 1000000);
			break;
		case OPT_PEERS: o->peers = optarg; break;
		case OPT_CLUSTER: o->cluster = optarg; break;
		case OPT_SELF:
			if (xtx_parse_u32("--self", optarg, 0, XTXD_PEERS_MAX - 1, &v))
				return -1;
			o->resolve.peers.self = v;
			break;
		case OPT_RESOLVE_AFTER:
			if (xtx_parse_duration("--resolve-after", optarg, &o->resolve.after_ns))
				return -1;
			if (!o->resolve.after_ns) {
				fprintf(stderr, "Error: --resolve-after must be above zero\n");
				return -1;
			}
			break;
		case OPT_LOG_SYNC:
			if (xtx_parse_duration("--log-sync", optarg, &o->drain.sync_ns))
				return -1;
			break;
		case OPT_LOG_STALL:
			if (xtx_parse_duration("--log-stall", optarg, &o->drain.stall_ns))
				return -1;
			if (o->drain.stall_ns < XTXD_LOG_STALL_MIN_NS) {
				fprintf(stderr, "Error: --log-stall: at least 1s\n");
				return -1;
			}
			break;
		case OPT_VALUE_SIZE:
			if (xtx_parse_u32("--value-size", optarg, 1, XTX_VALUE_MAX, &v))
				return -1;
			o->load.value_size = v;
			break;
		case OPT_VALUE_STORE:
			if (xtx_parse_u32("--value-store", optarg, 0, XTX_BIGVAL_MAX,
					  &o->load.bigval_max))
				return -1;
			break;
		case OPT_ECHO: o->load.echo = true; break;
		case OPT_GENERIC: o->generic_ok = true; break;
		case OPT_REPLACE: o->replace = true; break;
		case OPT_KEEP: o->keep_state = true; break;
		case OPT_CPUS: o->cpus = optarg; break;
		case 'd': o->daemon = true; break;
		case OPT_PIDFILE: o->pidfile = optarg; break;
		case OPT_LOGFILE: o->logfile = optarg; break;
		case 'v': xtx_log_level++; break;
		case 'h': usage(stdout); exit(0);
		case 'V': xtx_print_version("xtxd"); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "Error: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!o->iface) {
		fprintf(stderr, "Error: --iface is required\n");
		usage(stderr);
		return -1;
	}
	if (o->member.zk && (o->peers || o->cluster)) {
		fprintf(stderr, "Error: --zk gives the servers; --peers and --cluster are for a "
			"static cluster\n");
		return -1;
	}
	if (o->member.zk && xtx_zk_name_ok(o->member.name))
		return -1;
	if (o->peers && o->cluster) {
		fprintf(stderr, "Error: --peers and --cluster both list the servers; give one\n");
		return -1;
	}
	if ((o->peers && xtxd_peers_parse(&o->resolve.peers, o->peers)) ||
	    (o->cluster && xtxd_peers_load(&o->resolve.peers, o->cluster)))
		return -1;
	if (o->resolve.peers.self != XTXD_SELF_UNKNOWN &&
	    (unsigned int)o->resolve.peers.self >= o->resolve.peers.n) {
		fprintf(stderr, "Error: --self %d: only %u servers are listed\n",
			o->resolve.peers.self, o->resolve.peers.n);
		return -1;
	}
	o->load.mode = o->generic_ok ? XTX_MODE_GENERIC : XTX_MODE_NATIVE;
	apply_capacity(o);
	return 0;
}

/* "0-1,3" -> cpu set; pins this process (and so every thread it starts). */
static int apply_cpus(const char *list)
{
	cpu_set_t set;
	const char *p = list;

	CPU_ZERO(&set);
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
		for (; a <= b; a++)
			CPU_SET(a, &set);
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			goto bad;
	}
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "Error: --cpus %s: %s\n", list, strerror(errno));
		return -1;
	}
	return 0;
bad:
	fprintf(stderr, "Error: --cpus: '%s' is not a CPU list (e.g. 1 or 0-1,3)\n", list);
	return -1;
}

/*
 * Adopt what a crashed xtxd left (program attached, maps pinned) when it
 * was loaded with the same settings; otherwise load, reusing any pins.
 */
static int bring_up(const struct xtx_target *t, const struct xtxd_opts *o, bool *adopted)
{
	struct xtx_attached a;
	struct xtx_info info;
	__u32 zero = 0;
	int err, fd;

	*adopted = false;
	err = xtx_attached_query(t, &a);
	if (err) {
		fprintf(stderr, "Error: querying XDP programs on %s: %s\n", t->iface,
			strerror(-err));
		return err;
	}
	if (a.foreign_prog_id) {
		fprintf(stderr, "Error: XDP program '%s' (id %u) is attached to %s on its own; "
			"xtx cannot share the interface with it. Detach it "
			"(ip link set dev %s xdp off) or load it with libxdp (xdp-loader)\n",
			a.foreign_name, a.foreign_prog_id, t->iface, t->iface);
		return -EBUSY;
	}
	if (a.xtx_prog_id && xtx_pins_exist(t) && !o->replace) {
		fd = xtx_target_map_fd(t, XTX_MAP_INFO);
		err = fd < 0 ? fd : (bpf_map_lookup_elem(fd, &zero, &info) ? -errno : 0);
		if (fd >= 0)
			close(fd);
		if (err) {
			fprintf(stderr, "Error: reading pinned xtx_info: %s\n", strerror(-err));
			return err;
		}
		if (info.port != o->load.port || info.max_clients != o->load.max_clients ||
		    info.echo_mode != o->load.echo || info.lock_slots != o->load.lock_slots ||
		    info.kv_buckets != o->load.kv_buckets || info.kv_flags != o->load.kv_flags ||
		    info.value_size != o->load.value_size || info.log_ring != o->load.log_ring) {
			fprintf(stderr, "Error: xtx already runs on %s with other settings (port %u, "
				"max-clients %u, lock-slots %u, kv-buckets %u, echo %u); use --replace "
				"or unload first\n", t->iface, info.port, info.max_clients,
				info.lock_slots, info.kv_buckets, info.echo_mode);
			return -EEXIST;
		}
		pr_info("adopting xtx program id %u and pinned maps on %s\n", a.xtx_prog_id,
			t->iface);
		*adopted = true;
		return xtx_tc_attached(t) ? 0 : xtx_tc_attach(t, &o->load);
	}
	/* before detaching anything: a refused replace must leave the server up */
	err = xtx_pins_compatible(t, &o->load);
	if (err)
		return err;
	if (a.xtx_prog_id) {
		pr_info("replacing xtx program id %u on %s\n", a.xtx_prog_id, t->iface);
		err = xtx_detach(t);
		if (err)
			return err;
	}
	if (o->load.mode == XTX_MODE_GENERIC)
		pr_warn("WARNING: generic (skb) XDP on %s: every packet pays for an skb; "
			"expect a fraction of native throughput\n", t->iface);
	return xtx_load_attach(t, &o->load);
}

/*
 * The overflow store of an xtxd killed with SIGKILL died with it: rebuilt
 * from the data directory, once what the ring still holds is on disk too.
 * Requests stay held meanwhile, so no rare-path op meets an empty store.
 */
static int rebuild_store(const struct xtx_target *t, const char *datadir)
{
	int err = xtxd_logdrain_flush(XTXD_FLUSH_TIMEOUT_NS);

	if (err) {
		fprintf(stderr, "Error: writing out the adopted log before rebuilding the overflow "
			"store: %s\n", strerror(-err));
		return err;
	}
	return xtxd_recover_adopted(t, xtxd_rare_store(), datadir);
}

/*
 * Fail-stop: a server whose log cannot take what it acknowledges stops
 * serving at once (XDP drops every request, the hold a start sets) and
 * xtxd ends as a SIGKILL would end it: the program stays attached, the
 * maps pinned with every acknowledged entry the ring still holds, and no
 * lease is renewed (a member's session runs out, and the cluster moves
 * its shards).  The next start adopts them and writes the ring out before
 * it serves; an ordinary stop would have dropped it.
 */
static void fail_stop(int err, const char *why)
{
	int herr = xtxd_hold_requests();

	/* the daemon's log: its stderr is /dev/null */
	pr_warn("xtxd: FATAL: %s: %s; %s and stopping, so that nothing is acknowledged that is "
		"not durable (the maps stay pinned: the next start writes out what the ring "
		"holds)\n", why, strerror(-err), herr ? "could NOT hold requests" : "requests held");
	_exit(1);
}

/*
 * The rare path's plain writes are in the overflow store, and in the replay
 * records a retransmission is answered from, before they are logged: if the
 * log cannot take them, a retransmission would be acknowledged with the
 * write not durable.  So a server that cannot log stops (fail-stop): the
 * next start rebuilds the store from what was logged, without the writes
 * nobody was told of.
 */
static int log_writes_or_stop(struct xtx_log_entry *e, size_t n)
{
	int err = xtxd_userlog_append(e, n);

	if (err)
		fail_stop(err, "writing the rare path's writes to the log");
	return 0;
}

/* The drain's writes go to the resolver (several replicas) and to settle (one). */
static void observe_with_peers(const struct xtx_log_entry *e, size_t n)
{
	xtxd_settle_observe(e, n);
	xtxd_resolve_observe(e, n);
}

static int serve_until_signal(void)
{
	sigset_t set;
	int sig, err;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		if (sigwait(&set, &sig))
			return -1;
		if (sig != SIGHUP)
			break;
		/* logrotate moved the log file: write to a new one at its path */
		err = xtx_log_reopen();
		if (err)
			pr_warn("SIGHUP: reopening the log file: %s\n", strerror(-err));
		else
			pr_info("SIGHUP: log file reopened\n");
	}
	pr_info("signal %d: stopping\n", sig);
	return 0;
}

int main(int argc, char **argv)
{
	struct xtxd_opts o = {};
	struct xtx_target t;
	char pidfile[PATH_MAX], logfile[PATH_MAX], datadir[PATH_MAX];
	int ready_fd = -1, err, pid;
	bool adopted;

	/* until serve_until_signal() waits for it, a SIGHUP (logrotate's) must not stop us */
	signal(SIGHUP, SIG_IGN);
	if (parse_args(argc, argv, &o))
		return 2;
	if (xtx_require_root("xtxd"))
		return 1;
	xtx_log_level += XTX_LOG_INFO;
	xtx_log_libbpf();
	xtx_log_libxdp();
	if (o.cpus && apply_cpus(o.cpus))
		return 2;
	if (xtx_target_open(&t, o.netns, o.iface) || xtx_bpffs_ensure())
		return 1;
	/* inside the namespace now: which listed address is ours */
	if (o.resolve.peers.n && xtxd_peers_find_self(&o.resolve.peers))
		return 2;
	snprintf(pidfile, sizeof(pidfile), "%s", o.pidfile ?: t.pidfile);
	snprintf(logfile, sizeof(logfile), "%s", o.logfile ?: t.logfile);
	if (xtx_mkdirs(XTX_RUN_DIR, 0755)) {
		fprintf(stderr, "Error: creating %s: %s\n", XTX_RUN_DIR, strerror(errno));
		return 1;
	}
	pid = xtx_pidfile_alive(pidfile);
	if (pid && pid != getpid()) {
		fprintf(stderr, "Error: xtxd already serves %s (pid %d, %s)\n", t.iface, pid,
			pidfile);
		return 1;
	}
	if (o.daemon && xtx_daemonize(logfile, &ready_fd))
		return 1;
	/*
	 * One xtxd per interface, whatever its pidfile or data directory: a
	 * second would adopt the program, drain the same log rings into another
	 * directory, and take the program and maps away from the first when it
	 * stops.  The lock is the pin directory's, held until we exit.
	 */
	err = xtx_target_lock(&t, &pid);
	if (err) {
		if (err == -EBUSY && pid)
			fprintf(stderr, "Error: xtxd (pid %d) already serves %s%s%s: it holds %s; "
				"stop it first (xtxctl%s%s --iface %s unload)\n", pid, t.iface,
				t.netns[0] ? " in netns " : "", t.netns, t.pin_dir,
				t.netns[0] ? " --netns " : "", t.netns, t.iface);
		else if (err == -EBUSY)
			fprintf(stderr, "Error: another process holds %s: an xtxd already serves "
				"%s\n", t.pin_dir, t.iface);
		else
			fprintf(stderr, "Error: locking %s: %s\n", t.pin_dir, strerror(-err));
		xtx_daemon_ready(&ready_fd, 1);
		return 1;
	}
	if (xtx_write_pidfile(pidfile)) {
		xtx_target_unlock(&t);
		xtx_daemon_ready(&ready_fd, 1);
		return 1;
	}
	/*
	 * The cluster's configuration, and which server we are; after the fork,
	 * since the ZooKeeper library's threads would not survive it.
	 */
	o.member.port = o.load.port;
	if (o.drain.data_dir)
		snprintf(datadir, sizeof(datadir), "%s", o.drain.data_dir);
	else
		xtx_logfile_default_dir(&t, datadir, sizeof(datadir));
	o.member.data_dir = datadir;
	o.member.fresh = o.fresh;
	if (o.member.zk && xtxd_member_join(&o.member, &o.resolve.peers)) {
		unlink(pidfile);
		xtx_target_unlock(&t);
		xtx_daemon_ready(&ready_fd, 1);
		return 1;
	}
	if (o.member.zk && xtxd_member_holds_nothing()) {
		/*
		 * What it holds (even in a program left attached by an xtxd
		 * killed here) is older than the shards' replicas: a key
		 * deleted since would come back
		 */
		pr_info("xtxd: this server is a replica of no shard: it starts empty and joins by "
			"copying\n");
		o.fresh = true;
		xtx_detach(&t);
		xtx_unpin(&t);
	}

	/* held from before the attach until the store is whole again */
	err = xtxd_recover_hold(&t);
	if (!err)
		err = bring_up(&t, &o, &adopted);
	/* before any request is let through: the hold is still on */
	if (!err && o.allow)
		err = xtx_allow_add(&t, o.allow, true);
	/* a restart without --secret-file drops the secret, as it was asked */
	if (!err)
		err = xtx_secret_set(&t, o.has_secret ? &o.secret : NULL);
	if (err) {
		xtxd_recover_hold_abandon(&t);
		unlink(pidfile);
		xtx_target_unlock(&t);
		xtx_daemon_ready(&ready_fd, 1);
		return 1;
	}
	/*
	 * The log drain, the rare path and the control channel come up before
	 * anyone is told we serve; an adopted log resumes from its head.
	 */
	o.rare.port = o.load.port;
	xtxd_snapshot_set_dir(datadir);
	/*
	 * Freshly created maps are empty: rebuild the store from the data
	 * directory (with requests held) before the drain starts a new
	 * segment and before anyone is answered.  An adopted program kept
	 * its kernel buckets, and its log resumes from the ring's head.
	 */
	o.resolve.port = o.load.port;
	o.resolve.data_dir = datadir;
	xtxd_logdrain_set_observer(o.resolve.peers.n ? observe_with_peers : xtxd_settle_observe);
	if (o.resolve.peers.n) {
		/* logs a snapshot removed held the only reason to keep some decisions */
		xtxd_snapshot_set_after(xtxd_resolve_compact_soon);
	}
	o.rare.log_writes = log_writes_or_stop;
	xtxd_copy_set_secret(o.has_secret ? &o.secret : NULL);
	xtxd_logdrain_set_on_fail(fail_stop);
	xtxd_resolve_set_on_fail(fail_stop);
	xtxd_userlog_expect();
	xtxd_control_set_sizing(&o.sizing);
	xtxd_undecided_set_resolver(o.resolve.peers.n > 0, o.resolve.keep_ns ?:
				    XTXD_KEEP_DECIDED_DEFAULT_NS);
	if (xtxd_hold_prepare(&t) || xtxd_rare_start(&t, &o.rare) ||
	    (!adopted && xtxd_recover(&t, xtxd_rare_store(), datadir, o.fresh)) ||
	    (!adopted && !o.fresh && xtxd_hades_carry_restore(&t, &o.load, datadir)) ||
	    xtxd_resolve_start(&t, xtxd_rare_store(), &o.resolve) ||
	    xtxd_settle_start(&t, xtxd_rare_store(), o.resolve.after_ns, adopted ? datadir : NULL) ||
	    xtxd_logdrain_start(&t, &o.drain) || xtxd_resolve_arm_fences() ||
	    xtxd_userlog_open(datadir) ||
	    (adopted && rebuild_store(&t, datadir)) ||
	    xtxd_control_start(&t) || (o.metrics && xtxd_metrics_start(&t, &o.metrics_addr)) ||
	    xtxd_housekeeping_start(&t, xtxd_rare_store(), o.snapshot_every_ns) ||
	    (o.member.zk ? xtxd_member_start(&t) : xtxd_member_static(&t))) {
		if (o.member.zk)
			xtxd_member_leave();
		xtxd_housekeeping_stop();
		xtxd_metrics_stop();
		xtxd_control_stop();
		xtxd_resolve_stop();
		/* settle installs into the overflow store: it stops before the store goes */
		xtxd_settle_stop();
		xtxd_rare_stop();
		xtxd_userlog_close();
		xtxd_logdrain_stop();
		if (adopted || o.keep_state) {
			/*
			 * What a crashed xtxd left may hold acknowledged entries in
			 * the ring: served without a drain they could be lost, or
			 * crowded out; and a store recovered in part must serve
			 * nobody.  Requests stay held until a start succeeds.
			 */
			pr_warn("xtxd: the program stays attached, holding every request, and the "
				"maps pinned\n");
		} else {
			/* detached first: nothing runs once the hold is let go */
			xtx_detach(&t);
			xtxd_recover_hold_abandon(&t);
			xtx_unpin(&t);
		}
		unlink(pidfile);
		xtx_target_unlock(&t);
		xtx_daemon_ready(&ready_fd, 1);
		return 1;
	}
	/* the resolver may judge what the start left (log/undecided.h) */
	xtxd_undecided_ready();
	xtxd_recover_release(&t);
	if (!adopted)
		xtxd_hades_carry_done(datadir);
	print_sizes(&o);
	pr_info("xtxd: serving %s%s%s port %u (%s)\n", t.iface, t.netns[0] ? " in netns " : "",
		t.netns, o.load.port, adopted ? "adopted" : "loaded");
	xtx_daemon_ready(&ready_fd, 0);
	/* /readyz answers ready, and systemd (Type=notify) starts what waits for us */
	xtxd_metrics_set_state(XTXD_SERVING);
	xtx_sd_notify("READY=1\nSTATUS=serving");

	serve_until_signal();
	xtxd_metrics_set_state(XTXD_STOPPING);
	xtx_sd_notify("STOPPING=1\nSTATUS=stopping: draining the log");
	/* a stopping member stops serving first, and gives up its lease last */
	if (o.member.zk)
		xtxd_member_fence();
	xtxd_housekeeping_stop();
	xtxd_metrics_stop();
	xtxd_control_stop();
	xtxd_resolve_stop();
	/*
	 * Settle installs into the overflow store: it stops before the store
	 * goes.  What it still follows is on disk, where the next start (its
	 * recovery, or an adopting start's scan) finds it.
	 */
	xtxd_settle_stop();
	xtxd_rare_stop();
	xtxd_userlog_close();

	if (o.keep_state) {
		/* what XDP appends from now on waits in the ring for the next xtxd */
		xtxd_logdrain_stop();
		pr_info("xtxd: leaving the program attached and maps pinned (--keep-state)\n");
	} else {
		const struct timespec grace = { 0, 5 * 1000 * 1000 };
		uint64_t left;
		int failed = xtxd_logdrain_failed();

		/*
		 * No more appends (nor any HADES op): requests held, and a grace
		 * longer than any XDP run; the last appends reach the disk
		 * before anything goes.  A drain that failed cannot write them:
		 * the maps stay with the program attached, serving nobody, and
		 * the next start adopts them and writes the ring out.
		 */
		if (xtxd_hold_requests())
			err = xtx_detach(&t);	/* the other way to stop the appends */
		nanosleep(&grace, NULL);
		left = xtxd_logdrain_stop();
		if (failed || left) {
			pr_warn("xtxd: %llu log entries acknowledged here are not on disk (the log "
				"drain %s): leaving the program attached, serving nobody, and the "
				"maps pinned; the next start writes them out\n",
				(unsigned long long)left, failed ? "failed" : "could not finish");
			err = -EIO;
		} else if (err || (err = xtx_detach(&t))) {
			pr_warn("xtxd: the program is still attached: leaving the maps pinned\n");
		} else if (xtxd_hades_carry_save(&t, &o.load, datadir)) {
			pr_warn("xtxd: leaving the maps pinned: HADES transactions committing here "
				"could not be saved\n");
			err = -EIO;
		} else {
			xtx_unpin(&t);
		}
	}
	if (o.member.zk)
		xtxd_member_leave();
	unlink(pidfile);
	xtx_target_unlock(&t);
	return err ? 1 : 0;
}
