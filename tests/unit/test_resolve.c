// SPDX-License-Identifier: GPL-2.0-only
/*
 * xtx_txn_resolve against scripted resolvers: three UDP sockets on the
 * loopback of a private network namespace answer each question from a
 * script (one answer per question, or silence), so the verdict rule is
 * driven through the real sockets, retries and timing: every witness must
 * speak before an abort, committed wins, a silent witness leaves it in doubt.
 */
/* checks: 5 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <xtx/proto.h>
#include "check.h"
#include "libxtx.h"

#define NSRV		3
#define SILENT		0xff	/* no answer to this question */
#define MAX_ASKS	8


struct fake {
	int fd[NSRV];
	struct sockaddr_in addr[NSRV];	/* the servers' xtx ports; the fakes listen on + 1 */
	uint8_t script[NSRV][MAX_ASKS];	/* answer to the i-th question (the last one repeats) */
	unsigned int asked[NSRV];
	atomic_bool stop;
	uint64_t txn;
	bool hades_flag_seen;
};

/* The loopback of a namespace of our own: nothing leaves the test. */
static int private_loopback(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd;

	if (unshare(CLONE_NEWNET))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return 0;
}

static int open_fakes(struct fake *f)
{
	unsigned int i;

	for (i = 0; i < NSRV; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(a);

		f->fd[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		/* an ephemeral port for the resolver; the server's is one below */
		if (f->fd[i] < 0 || bind(f->fd[i], (struct sockaddr *)&a, sizeof(a)) ||
		    getsockname(f->fd[i], (struct sockaddr *)&a, &len))
			return -1;
		f->addr[i] = a;
		f->addr[i].sin_port = htons(ntohs(a.sin_port) - 1);
	}
	return 0;
}

static void *serve(void *arg)
{
	struct fake *f = arg;
	struct pollfd p[NSRV];
	unsigned int i;

	for (i = 0; i < NSRV; i++)
		p[i] = (struct pollfd){ .fd = f->fd[i], .events = POLLIN };
	while (!atomic_load(&f->stop)) {
		if (poll(p, NSRV, 20) <= 0)
			continue;
		for (i = 0; i < NSRV; i++) {
			struct { struct xtx_hdr h; struct xtx_op op; } m;
			struct sockaddr_in src;
			socklen_t sl = sizeof(src);
			unsigned int k;

			if (!(p[i].revents & POLLIN) ||
			    recvfrom(f->fd[i], &m, sizeof(m), 0, (struct sockaddr *)&src, &sl) !=
			    (ssize_t)sizeof(m) || m.op.opcode != XTX_OP_TXN_STATUS || m.op.txn != f->txn)
				continue;
			f->hades_flag_seen |= m.op.flags & XTX_TSF_HADES;
			k = f->asked[i] < MAX_ASKS ? f->asked[i] : MAX_ASKS - 1;
			f->asked[i]++;
			while (k && !f->script[i][k])
				k--;	/* unscripted: the last scripted answer again */
			if (f->script[i][k] == SILENT)
				continue;
			m.h.flags = XTX_F_REPLY;
			m.op.status = XTX_ST_OK;
			m.op.flags = f->script[i][k];
			sendto(f->fd[i], &m, sizeof(m), 0, (struct sockaddr *)&src, sl);
		}
	}
	return NULL;
}

/*
 * Asks about one transaction whose three witnesses answer by script;
 * returns what xtx_txn_resolve concluded, and whether the questions
 * carried the HADES flag.
 */
static enum xtx_outcome run(enum xtx_protocol proto, unsigned int replication,
			    const uint8_t script[NSRV][MAX_ASKS], uint64_t timeout_ns,
			    bool *hades_flag)
{
	struct fake f = { .txn = ((uint64_t)7 << XTX_TXN_SEQ_BITS) | 42 };
	struct xtx_client_cfg cfg = { .nservers = NSRV, .replication = replication,
				      .protocol = proto, .client_id = 7 };
	struct xtx_txn_result res = { .outcome = XTX_IN_DOUBT, .txn_id = f.txn, .servers = 7 };
	enum xtx_outcome o = XTX_FAILED;
	struct xtx_client *c;
	pthread_t th;
	unsigned int i;

	memcpy(f.script, script, sizeof(f.script));
	if (open_fakes(&f) || pthread_create(&th, NULL, serve, &f)) {
		CHECK(0, "fake resolvers: %s", strerror(errno));
		return o;
	}
	cfg.servers = f.addr;
	c = xtx_client_open(&cfg);
	if (c) {
		o = xtx_txn_resolve(c, &res, timeout_ns);
		xtx_client_close(c);
	}
	atomic_store(&f.stop, true);
	pthread_join(th, NULL);
	for (i = 0; i < NSRV; i++)
		close(f.fd[i]);
	if (hades_flag)
		*hades_flag = f.hades_flag_seen;
	return o;
}

#define MS	(1000ull * 1000)

/* A reader forgot its Ack (not held) but a writer validated, after a silent first question. */
static void test_validated_wins_over_not_held(void)
{
	static const uint8_t s[NSRV][MAX_ASKS] = {
		{ XTX_TS_NOT_HELD },
		{ SILENT, XTX_TS_COMMITTED },
		{ XTX_TS_HELD },
	};
	bool flag = false;
	enum xtx_outcome o = run(XTX_PROTO_HADES, 3, s, 2000 * MS, &flag);

	CHECK(o == XTX_COMMITTED, "committed, not aborted (%s)", xtx_outcome_name(o));
	CHECK(flag, "the questions say HADES");
}

static void test_not_held_aborts_once_all_spoke(void)
{
	static const uint8_t s[NSRV][MAX_ASKS] = {
		{ XTX_TS_NOT_HELD }, { XTX_TS_HELD }, { XTX_TS_HELD },
	};
	enum xtx_outcome o = run(XTX_PROTO_HADES, 3, s, 2000 * MS, NULL);

	CHECK(o == XTX_ABORTED, "aborted (%s)", xtx_outcome_name(o));
}

static void test_every_witness_holding_commits(void)
{
	static const uint8_t s[NSRV][MAX_ASKS] = {
		{ XTX_TS_UNKNOWN, XTX_TS_HELD }, { XTX_TS_HELD }, { XTX_TS_HELD },
	};
	enum xtx_outcome o = run(XTX_PROTO_OCC, 3, s, 2000 * MS, NULL);

	CHECK(o == XTX_COMMITTED, "committed once the unsure one holds too (%s)",
	      xtx_outcome_name(o));
}

static void test_silent_witness_stays_in_doubt(void)
{
	static const uint8_t s[NSRV][MAX_ASKS] = {
		{ XTX_TS_NOT_HELD }, { XTX_TS_HELD }, { SILENT },
	};
	enum xtx_outcome o = run(XTX_PROTO_HADES, 3, s, 400 * MS, NULL);

	CHECK(o == XTX_IN_DOUBT, "in doubt while one never answers (%s)", xtx_outcome_name(o));
}

static void test_one_replica_not_asked(void)
{
	static const uint8_t s[NSRV][MAX_ASKS] = {
		{ XTX_TS_ABORTED }, { XTX_TS_ABORTED }, { XTX_TS_ABORTED },
	};
	enum xtx_outcome o = run(XTX_PROTO_2PL, 1, s, 400 * MS, NULL);

	CHECK(o == XTX_IN_DOUBT, "R = 1: the resolver keeps no record, so no answer (%s)",
	      xtx_outcome_name(o));
}

int main(void)
{
	int err = private_loopback();

	if (err) {
		printf("FAIL: a private network namespace: %s (run as root)\n", strerror(-err));
		return 1;
	}
	RUN_CASE(test_validated_wins_over_not_held);
	RUN_CASE(test_not_held_aborts_once_all_spoke);
	RUN_CASE(test_every_witness_holding_commits);
	RUN_CASE(test_silent_witness_stays_in_doubt);
	RUN_CASE(test_one_replica_not_asked);
	printf("# test_resolve: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
