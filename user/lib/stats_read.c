// SPDX-License-Identifier: GPL-2.0-only
/* Reads every CPU's copy of the statistics map and adds them up. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "stats_read.h"

int xtx_stats_sum(int map_fd, struct xtx_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct xtx_stats *per_cpu;
	__u32 zero = 0;
	size_t w, words = sizeof(*out) / sizeof(__u64);
	int cpu, err = 0;

	if (ncpu < 0)
		return ncpu;
	per_cpu = calloc(ncpu, sizeof(*per_cpu));
	if (!per_cpu)
		return -ENOMEM;
	if (bpf_map_lookup_elem(map_fd, &zero, per_cpu)) {
		err = -errno;
		goto out;
	}
	memset(out, 0, sizeof(*out));
	for (cpu = 0; cpu < ncpu; cpu++) {
		const __u64 *src = (const __u64 *)&per_cpu[cpu];
		__u64 *dst = (__u64 *)out;

		for (w = 0; w < words; w++)
			dst[w] += src[w];
	}
out:
	free(per_cpu);
	return err;
}
