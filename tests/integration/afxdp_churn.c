// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_XDP transports opened and closed by many threads of one process at
 * once, each pinging every server before it closes, while one transport
 * opened first stays and must keep getting its replies: what a process
 * that starts and stops clients does to the shared UMEMs.  Run by
 * test_afxdp.sh inside the client namespace.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xtx/msg.h>
#include "clock.h"
#include "ids.h"
#include "msgbuf.h"
#include "servers.h"
#include "transport.h"

#define CLIENT_BASE	700
#define WAIT_NS		(500 * 1000 * 1000ull)

static struct sockaddr_in *servers;
static unsigned int nservers, cycles;
static atomic_uint opened, open_failed, unanswered;

/* One PING to every server over t, as client id; true when every one was answered. */
static bool ping_all(struct xtx_transport *t, uint32_t client_id, uint64_t *req_id)
{
	struct xtx_msgbuf out[XTX_MAX_SERVERS], in[8];
	struct xtx_dgram d[XTX_MAX_SERVERS], r[8];
	uint64_t first = *req_id, answered = 0, deadline = xtx_now_ns() + WAIT_NS, now;
	unsigned int s, i;
	int n;

	for (s = 0; s < nservers; s++) {
		xtx_msg_init(&out[s], client_id, (*req_id)++);
		xtx_msg_add(&out[s], XTX_OP_PING, 0, s);
		d[s] = (struct xtx_dgram){ .buf = &out[s], .len = xtx_msg_len(1), .server = s };
	}
	if (xtx_transport_send(t, d, nservers) != (int)nservers)
		return false;
	while (answered != (1ull << nservers) - 1 && (now = xtx_now_ns()) < deadline) {
		for (i = 0; i < 8; i++)
			r[i] = (struct xtx_dgram){ .buf = &in[i], .cap = sizeof(in[i]) };
		n = xtx_transport_recv(t, r, 8, deadline - now);
		for (i = 0; n > 0 && i < (unsigned int)n; i++) {
			/* the buffers may be swapped among r[]: read each reply through r */
			const struct xtx_hdr *h = &((const struct xtx_msgbuf *)r[i].buf)->hdr;

			if (h->client_id == client_id && h->req_id >= first && h->req_id < *req_id)
				answered |= 1ull << r[i].server;
		}
	}
	return answered == (1ull << nservers) - 1;
}

static void *churn(void *arg)
{
	uint32_t client_id = CLIENT_BASE + (uint32_t)(uintptr_t)arg;
	uint64_t req_id = xtx_req_id_start();
	struct xtx_transport t;
	unsigned int c;

	for (c = 0; c < cycles; c++) {
		if (xtx_transport_open_kind(&t, servers, nservers, XTX_TRANSPORT_AFXDP)) {
			atomic_fetch_add(&open_failed, 1);
			continue;
		}
		atomic_fetch_add(&opened, 1);
		if (!ping_all(&t, client_id, &req_id))
			atomic_fetch_add(&unanswered, 1);
		xtx_transport_close(&t);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned int nthreads, i, survivor_ok = 0;
	uint64_t req_id = xtx_req_id_start();
	struct xtx_transport keep;
	pthread_t th[64];

	if (argc != 4 || xtx_parse_servers("servers", argv[1], XTX_DEFAULT_PORT, &servers,
					   &nservers)) {
		fprintf(stderr, "Usage: afxdp_churn IP,IP,... THREADS CYCLES\n");
		return 2;
	}
	nthreads = atoi(argv[2]);
	cycles = atoi(argv[3]);
	if (!nthreads || nthreads > 64) {
		fprintf(stderr, "Error: THREADS is 1..64\n");
		return 2;
	}
	if (xtx_transport_open_kind(&keep, servers, nservers, XTX_TRANSPORT_AFXDP))
		return 1;
	for (i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	/* after every other socket came and went, the one that stayed still hears each server */
	for (i = 0; i < 50; i++)
		survivor_ok += ping_all(&keep, CLIENT_BASE, &req_id);
	xtx_transport_close(&keep);
	printf("churn: opened=%u open_failed=%u unanswered=%u survivor=%u/50 malformed=%llu\n",
	       opened, open_failed, unanswered, survivor_ok, (unsigned long long)keep.malformed);
	return open_failed || unanswered || survivor_ok != 50;
}
