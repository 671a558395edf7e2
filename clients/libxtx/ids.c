// SPDX-License-Identifier: GPL-2.0-only
/* Clock-derived request ids and pid-derived client ids for the benchmarks. */
#include <time.h>
#include <unistd.h>
#include <xtx/maps.h>
#include "ids.h"

uint64_t xtx_req_id_start(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

uint32_t xtx_client_base_default(unsigned int n)
{
	if (n >= XTX_MAX_CLIENTS_DEFAULT)
		return 0;
	return (uint32_t)getpid() % (XTX_MAX_CLIENTS_DEFAULT - n + 1);
}
