/* SPDX-License-Identifier: GPL-2.0-only */
/* Per-core utilization over an interval, from /proc/stat: who was the bottleneck. */
#ifndef XTX_CPUSTAT_H
#define XTX_CPUSTAT_H

#include <stdint.h>
#include <stdio.h>

#define XTX_CPUSTAT_MAX		64

struct xtx_cpustat {
	unsigned int ncpus;
	uint64_t busy[XTX_CPUSTAT_MAX];		/* jiffies not idle or iowait */
	uint64_t total[XTX_CPUSTAT_MAX];
};

/* Reads the per-CPU lines of /proc/stat; 0 or -errno. */
int xtx_cpustat_read(struct xtx_cpustat *s);

/* Busy share (0..1) of cpu between two reads; -1 when unknown. */
double xtx_cpustat_util(const struct xtx_cpustat *a, const struct xtx_cpustat *b,
			unsigned int cpu);

/* "cpu0=87% cpu1=45%" (text) or "[0.87,0.45]" (json) into out. */
void xtx_cpustat_print(FILE *out, const struct xtx_cpustat *a, const struct xtx_cpustat *b,
		       int json);

/*
 * CPU time (ns) these processes or threads have run so far, every thread of
 * each summed (/proc/PID/task/TID/schedstat); a pid that is gone counts 0.
 */
uint64_t xtx_pids_cpu_ns(const int *pids, unsigned int n);

#endif /* XTX_CPUSTAT_H */
