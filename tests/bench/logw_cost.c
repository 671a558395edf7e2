// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the log writer costs per record: appends batches of the size the
 * drain sees in a sync period, one fdatasync per batch, a batch per period,
 * as xtxd's drain does (user/xtxd/log/logdrain.c).  CPU time is getrusage
 * (the whole process, spare thread included, and the appending thread
 * alone), not wall time: the point is the CPU the drain takes from the
 * core it shares with XDP.  Also the fdatasync latency and the longest
 * batch (append + sync), which shows a rotation that stalls.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <xtx/log.h>
#include "logfile.h"

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_s(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: logw_cost [options]\n"
		"  -d, --dir DIR        where the segments go (default /var/lib/xtx); a\n"
		"                       directory of its own is made there and removed\n"
		"  -n, --records N      records to append (default 1100000: a rotation)\n"
		"  -b, --batch B        records per sync (default 1000)\n"
		"  -p, --period-us P    one batch per P us, 0: back to back (default 2000)\n"
		"  -s, --seg-max BYTES  rotate at this size (default 64 MiB)\n"
		"  -B, --buffered       no O_DIRECT (preallocating writers only)\n"
		"  -k, --keep           keep the directory, and wait for the spare, for\n"
		"                       the next run to start from\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "records", required_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'b' },
		{ "period-us", required_argument, NULL, 'p' },
		{ "seg-max", required_argument, NULL, 's' },
		{ "buffered", no_argument, NULL, 'B' },
		{ "keep", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *root = "/var/lib/xtx";
	uint64_t records = 1100000, seg_max = XTX_LOGFILE_SEG_MAX, seq = 0, nb, i, j;
	double period = 2e-3, c0, t0, tc0, next, t, cpu, tcpu, wall, sum = 0, *lat, *batch;
	double worst = 0, rot = 0;
	uint64_t worst_at = 0;
	uint32_t seg;
	struct xtx_log_epoch ep = { .map_id = 7 };
	struct xtx_log_entry *v;
	size_t b = 1000;
	char dir[256], cmd[300];
	bool keep = false;
	struct xtx_logw w;
	int c, dirfd, err;

	while ((c = getopt_long(argc, argv, "d:n:b:p:s:Bkh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': root = optarg; break;
		case 'n': records = strtoull(optarg, NULL, 0); break;
		case 'b': b = strtoul(optarg, NULL, 0); break;
		case 'p': period = strtod(optarg, NULL) / 1e6; break;
		case 's': seg_max = strtoull(optarg, NULL, 0); break;
		case 'B':
#ifdef XTX_LOGFILE_VERSION_GROWN
			xtx_logfile_direct = false;
#endif
			break;
		case 'k': keep = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!b || records < b) {
		usage(stderr);
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/logw-cost", root);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "Error: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* a new incarnation each run: a new segment, from a kept spare if there is one */
	ep.map_id = (uint32_t)time(NULL) ^ getpid();
	err = xtx_logw_open(&w, dirfd, 0, &ep, 0, 0, seg_max);
	if (err)
		return 1;
	nb = records / b;
	v = calloc(b, sizeof(*v));
	lat = calloc(nb, sizeof(*lat));
	batch = calloc(nb, sizeof(*batch));
	if (!v || !lat || !batch)
		return 1;
	c0 = cpu_s(RUSAGE_SELF);
	tc0 = cpu_s(RUSAGE_THREAD);
	t0 = next = now_s();
	for (i = 0; i < nb; i++) {
		double ta, ts;

		if (period > 0) {
			next += period;
			while ((t = now_s()) < next) {
				struct timespec ts = { 0, (long)((next - t) * 1e9) };

				nanosleep(&ts, NULL);
			}
		}
		/* what the drain copies out of the ring: distinct entries, as XDP wrote them */
		for (j = 0; j < b; j++) {
			v[j].seq = seq + j;
			v[j].txn = seq + j;
			v[j].key = (seq + j) * 2654435761u;
			v[j].version = seq + j;
			v[j].vlen = 8;
			memcpy(v[j].value, &v[j].key, 8);
		}
		seg = w.seg;
		ta = now_s();
		err = xtx_logw_append(&w, v, b);
		ts = now_s();
		if (!err)
			err = xtx_logw_sync(&w);
		if (err) {
			fprintf(stderr, "Error: batch %llu: %s\n", (unsigned long long)i,
				strerror(-err));
			return 1;
		}
		t = now_s();
		lat[i] = t - ts;
		batch[i] = t - ta;
		/* the batch that rotated: the old segment's sync, the new one's creation */
		if (i && w.seg != seg && batch[i] > rot)
			rot = batch[i];
		if (batch[i] > worst) {
			worst = batch[i];
			worst_at = seq;
		}
		seq += b;
	}
	cpu = cpu_s(RUSAGE_SELF) - c0;
	tcpu = cpu_s(RUSAGE_THREAD) - tc0;
	wall = now_s() - t0;
	for (i = 0; i < nb; i++)
		sum += lat[i];
	qsort(lat, nb, sizeof(*lat), cmp_double);
	qsort(batch, nb, sizeof(*batch), cmp_double);
	printf("batch %zu, %llu records, %s: %.3f us CPU per record (process), %.3f (appending "
	       "thread); fdatasync mean %.0f p50 %.0f p99 %.0f max %.0f us; longest batch %.1f ms "
	       "(at record %llu), p99 %.1f ms; rotating batch %.1f ms; wall %.2f s; segment %u",
	       b, (unsigned long long)(nb * b), period > 0 ? "paced" : "back to back",
	       cpu / (nb * b) * 1e6, tcpu / (nb * b) * 1e6, sum / nb * 1e6, lat[nb / 2] * 1e6,
	       lat[nb * 99 / 100] * 1e6, lat[nb - 1] * 1e6, worst * 1e3,
	       (unsigned long long)worst_at, batch[nb * 99 / 100] * 1e3, rot * 1e3, wall, w.seg);
#ifdef XTX_LOGFILE_VERSION_GROWN
	printf(", %llu from a spare, %llu zero fills, %s", (unsigned long long)w.spares_used,
	       (unsigned long long)w.zero_fills, w.direct ? "O_DIRECT" : "buffered");
#endif
	printf("\n");
	/* a spare the next run can start from, as a long-running drain has one ready */
	for (i = 0; keep && i < 1000 && faccessat(dirfd, "log-cpu0.spare", F_OK, 0); i++)
		usleep(10000);
	xtx_logw_close(&w);
	close(dirfd);
	if (!keep) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "Error: cannot remove %s\n", dir);
	} else {
		/* the segments go, the spare stays */
		snprintf(cmd, sizeof(cmd), "rm -f '%s'/log-cpu0-*.xlog", dir);
		if (system(cmd))
			fprintf(stderr, "Error: cannot clean %s\n", dir);
	}
	free(v);
	free(lat);
	free(batch);
	return 0;
}
