// SPDX-License-Identifier: GPL-2.0-only
/* Per-core utilization from /proc/stat. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cpustat.h"

int xtx_cpustat_read(struct xtx_cpustat *s)
{
	unsigned long long v[10];
	char line[512];
	unsigned int cpu;
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return -errno;
	memset(s, 0, sizeof(*s));
	while (fgets(line, sizeof(line), f)) {
		int i, n;

		memset(v, 0, sizeof(v));
		n = sscanf(line, "cpu%u %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &cpu,
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
		if (n < 5 || cpu >= XTX_CPUSTAT_MAX)
			continue;
		/* user nice system idle iowait irq softirq steal guest guest_nice */
		for (i = 0; i < 8; i++)
			s->total[cpu] += v[i];
		s->busy[cpu] = s->total[cpu] - v[3] - v[4];
		if (cpu + 1 > s->ncpus)
			s->ncpus = cpu + 1;
	}
	fclose(f);
	return s->ncpus ? 0 : -ENOENT;
}

double xtx_cpustat_util(const struct xtx_cpustat *a, const struct xtx_cpustat *b,
			unsigned int cpu)
{
	uint64_t dt;

	if (cpu >= a->ncpus || cpu >= b->ncpus)
		return -1;
	dt = b->total[cpu] - a->total[cpu];
	return dt ? (double)(b->busy[cpu] - a->busy[cpu]) / (double)dt : 0;
}

void xtx_cpustat_print(FILE *out, const struct xtx_cpustat *a, const struct xtx_cpustat *b,
		       int json)
{
	unsigned int i, n = a->ncpus < b->ncpus ? a->ncpus : b->ncpus;

	if (json)
		fputc('[', out);
	for (i = 0; i < n; i++) {
		double u = xtx_cpustat_util(a, b, i);

		if (json)
			fprintf(out, "%s%.3f", i ? "," : "", u);
		else
			fprintf(out, "%scpu%u=%.0f%%", i ? " " : "", i, 100 * u);
	}
	if (json)
		fputc(']', out);
}

uint64_t xtx_pids_cpu_ns(const int *pids, unsigned int n)
{
	unsigned long long ns;
	uint64_t sum = 0;
	struct dirent *de;
	char path[96];
	unsigned int i;
	FILE *f;
	DIR *d;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/proc/%d/task", pids[i]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", pids[i],
				 de->d_name);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fscanf(f, "%llu", &ns) == 1)
				sum += ns;
			fclose(f);
		}
		closedir(d);
	}
	return sum;
}
