// SPDX-License-Identifier: GPL-2.0-only
/*
 * The concurrent-duplicate fault (clients/libxtx/dupcpu.c) over loopback:
 * both copies leave, from two CPUs, and the answers are held against each
 * other by the rules the nemesis counts anomalies with.
 */
/*
 * checks: 5 (tests/run.sh fails the suite when fewer verdicts come out; with
 * one CPU the fault can only refuse, one verdict, and the suite fails: the
 * nemesis needs two CPUs as well)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xtx/msg.h>
#include "check.h"
#include "dupcpu.h"
#include "msgbuf.h"

/* The sender's socket, and where its datagrams go: a socket nobody answers from. */
static int tx_fd = -1, rx_fd = -1;
static struct sockaddr_in rx_addr;

static int open_sockets(void)
{
	socklen_t len = sizeof(rx_addr);

	tx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	rx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	memset(&rx_addr, 0, sizeof(rx_addr));
	rx_addr.sin_family = AF_INET;
	rx_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (tx_fd < 0 || rx_fd < 0 || bind(rx_fd, (struct sockaddr *)&rx_addr, len) ||
	    getsockname(rx_fd, (struct sockaddr *)&rx_addr, &len))
		return -1;
	return 0;
}

/* A request of client 7 with one op; its reply is the same bytes, answered. */
static size_t request(struct xtx_msgbuf *m, uint64_t req_id, uint8_t opcode)
{
	struct xtx_op *op;

	xtx_msg_init(m, 7, req_id);
	op = xtx_msg_add(m, opcode, 3, 11);
	op->txn = xtx_txn_make(7, 1);
	return xtx_msg_len(m->hdr.nops);
}

static void answer(struct xtx_msgbuf *m, uint8_t hdr_status, uint8_t status, uint64_t version,
		   uint64_t token, uint8_t vlen, uint8_t byte)
{
	m->hdr.flags |= XTX_F_REPLY;
	m->hdr.status = hdr_status;
	m->ops[0].status = status;
	m->ops[0].version = version;
	m->ops[0].token = token;
	m->ops[0].vlen = vlen;
	memset(m->ops[0].value, byte, vlen);
}

static void seen(struct xtx_dupcpu *dc, const struct xtx_msgbuf *m)
{
	xtx_dupcpu_seen(dc, 0, m, xtx_msg_len(m->hdr.nops));
}

static void drain(void)
{
	char buf[XTX_MAX_PAYLOAD];

	while (recv(rx_fd, buf, sizeof(buf), 0) > 0)
		;
}

/* The CPUs the test may use, and the first of them alone. */
static cpu_set_t all_cpus, first_cpu;

static unsigned int read_cpus(void)
{
	unsigned int n = 0;
	int cpu;

	if (sched_getaffinity(0, sizeof(all_cpus), &all_cpus))
		return 0;
	CPU_ZERO(&first_cpu);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &all_cpus))
			continue;
		if (!n++)
			CPU_SET(cpu, &first_cpu);
	}
	return n;
}

/*
 * The fault, opened over every CPU (its workers take the first two), with
 * the test thread then on the first: the copy must leave the other.
 */
static struct xtx_dupcpu *open_pinned(void)
{
	struct xtx_dupcpu *dc;

	sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
	dc = xtx_dupcpu_open(tx_fd);
	if (dc && sched_setaffinity(0, sizeof(first_cpu), &first_cpu)) {
		xtx_dupcpu_close(dc);
		return NULL;
	}
	return dc;
}

static void both_copies_from_two_cpus(void)
{
	struct xtx_dupcpu_stats st;
	struct xtx_msgbuf m, got;
	struct xtx_dupcpu *dc;
	unsigned int copies = 0, i;
	size_t len = request(&m, 42, XTX_OP_COMMIT_PRIMARY);

	dc = open_pinned();
	CHECK(dc, "open: %s", strerror(errno));
	if (!dc)
		return;
	CHECK(xtx_dupcpu_send(dc, &rx_addr, 0, &m, len) == 1, "this thread's copy went out");
	/* what arrives within 5 s: both, or the fault lost one */
	for (i = 0; i < 50 && copies < 2; i++) {
		struct pollfd p = { .fd = rx_fd, .events = POLLIN };

		if (poll(&p, 1, 100) <= 0)
			continue;
		if (recv(rx_fd, &got, sizeof(got), 0) == (ssize_t)len && !memcmp(&got, &m, len))
			copies++;
	}
	xtx_dupcpu_get_stats(dc, &st);
	CHECK(copies == 2, "%u copies arrived, not 2", copies);
	CHECK(st.sent == 1 && st.apart == 1, "sent %llu, apart %llu: want 1 and 1",
	      (unsigned long long)st.sent, (unsigned long long)st.apart);
	xtx_dupcpu_close(dc);
}

static void same_answers_agree(void)
{
	struct xtx_dupcpu_stats st;
	struct xtx_msgbuf m, a;
	struct xtx_dupcpu *dc = open_pinned();
	size_t len = request(&m, 43, XTX_OP_COMMIT_PRIMARY);

	if (!dc) {
		CHECK(0, "open: %s", strerror(errno));
		return;
	}
	xtx_dupcpu_send(dc, &rx_addr, 0, &m, len);
	a = m;
	answer(&a, XTX_ST_RETRY, XTX_ST_NOT_EXECUTED, 0, 0, 0, 0);
	seen(dc, &a);			/* the other copy was executing: busy */
	a = m;
	answer(&a, XTX_ST_OK, XTX_ST_OK, 8, 5, 0, 0);
	seen(dc, &a);
	a.hdr.flags |= XTX_F_REPLAYED;
	seen(dc, &a);			/* a replay says the same */
	seen(dc, &a);			/* a retransmission's: the request counts once */
	a.hdr.client_id = 8;
	a.ops[0].status = XTX_ST_CHANGED;
	seen(dc, &a);			/* another client's: not ours to compare */
	xtx_dupcpu_get_stats(dc, &st);
	CHECK(st.busy == 1 && st.compared == 1 && st.mismatched == 0,
	      "busy %llu compared %llu mismatched %llu: want 1 1 0", (unsigned long long)st.busy,
	      (unsigned long long)st.compared, (unsigned long long)st.mismatched);
	xtx_dupcpu_close(dc);
}

static void a_second_run_is_caught(void)
{
	struct xtx_dupcpu_stats st;
	struct xtx_msgbuf m, a;
	struct xtx_dupcpu *dc = open_pinned();
	size_t len = request(&m, 44, XTX_OP_COMMIT_PRIMARY);

	if (!dc) {
		CHECK(0, "open: %s", strerror(errno));
		return;
	}
	xtx_dupcpu_send(dc, &rx_addr, 0, &m, len);
	a = m;
	answer(&a, XTX_ST_OK, XTX_ST_OK, 8, 5, 0, 0);
	seen(dc, &a);
	/* the commit ran again: the second finds its own version installed */
	answer(&a, XTX_ST_OK, XTX_ST_ALREADY_APPLIED, 8, 5, 0, 0);
	seen(dc, &a);
	xtx_dupcpu_get_stats(dc, &st);
	CHECK(st.compared == 1 && st.mismatched == 1, "compared %llu mismatched %llu: want 1 1",
	      (unsigned long long)st.compared, (unsigned long long)st.mismatched);
	xtx_dupcpu_close(dc);
}

/* A replayed grant reads the key again: compared only until the client sends on. */
static void grant_reread_until_sent_on(void)
{
	struct xtx_dupcpu_stats st;
	struct xtx_msgbuf m, a;
	struct xtx_dupcpu *dc = open_pinned();
	size_t len;

	if (!dc) {
		CHECK(0, "open: %s", strerror(errno));
		return;
	}
	len = request(&m, 45, XTX_OP_LOCK_EXCL);
	xtx_dupcpu_send(dc, &rx_addr, 0, &m, len);
	a = m;
	answer(&a, XTX_ST_OK, XTX_ST_OK, 8, 5, 8, 0x11);
	seen(dc, &a);
	/* granted, but the value lost on the way: wrong while the lock is held */
	answer(&a, XTX_ST_OK, XTX_ST_OK, 8, 5, 0, 0);
	seen(dc, &a);
	len = request(&m, 46, XTX_OP_LOCK_EXCL);
	xtx_dupcpu_send(dc, &rx_addr, 0, &m, len);
	a = m;
	answer(&a, XTX_ST_OK, XTX_ST_OK, 8, 5, 8, 0x11);
	seen(dc, &a);
	/* the client committed since: a late replay reads the newer version */
	xtx_dupcpu_sending(dc);
	answer(&a, XTX_ST_OK, XTX_ST_OK, 9, 5, 8, 0x22);
	seen(dc, &a);
	xtx_dupcpu_get_stats(dc, &st);
	CHECK(st.compared == 2 && st.mismatched == 1, "compared %llu mismatched %llu: want 2 1",
	      (unsigned long long)st.compared, (unsigned long long)st.mismatched);
	/* ... but never another grant token: that comes from the record */
	answer(&a, XTX_ST_OK, XTX_ST_OK, 9, 6, 8, 0x22);
	seen(dc, &a);
	xtx_dupcpu_get_stats(dc, &st);
	CHECK(st.mismatched == 2, "a late replay's other token: mismatched %llu, want 2",
	      (unsigned long long)st.mismatched);
	xtx_dupcpu_close(dc);
}

/* Reads run again on every copy, so their answers may differ: not compared. */
static void reads_not_compared(void)
{
	struct xtx_dupcpu_stats st;
	struct xtx_msgbuf m, a;
	struct xtx_dupcpu *dc = open_pinned();
	size_t len = request(&m, 47, XTX_OP_READ);

	if (!dc) {
		CHECK(0, "open: %s", strerror(errno));
		return;
	}
	xtx_dupcpu_send(dc, &rx_addr, 0, &m, len);
	a = m;
	answer(&a, XTX_ST_OK, XTX_ST_OK, 8, 0, 8, 0x11);
	seen(dc, &a);
	answer(&a, XTX_ST_OK, XTX_ST_OK, 9, 0, 8, 0x22);
	seen(dc, &a);
	xtx_dupcpu_get_stats(dc, &st);
	CHECK(st.compared == 0 && st.mismatched == 0, "compared %llu mismatched %llu: want 0 0",
	      (unsigned long long)st.compared, (unsigned long long)st.mismatched);
	xtx_dupcpu_close(dc);
}

int main(void)
{
	if (open_sockets()) {
		printf("FAIL: loopback sockets: %s\n", strerror(errno));
		return 1;
	}
	/* the mismatches the cases make on purpose are printed there: not this run's news */
	if (!freopen("/dev/null", "w", stderr))
		return 1;
	if (read_cpus() < 2) {
		/* one CPU: the fault must refuse rather than send both copies from it */
		errno = 0;
		check_failed = 0;
		CHECK(!xtx_dupcpu_open(tx_fd) && errno == EINVAL, "opened with one CPU");
		printf("%s: dupcpu_refused_on_one_cpu\n", check_failed ? "FAIL" : "PASS");
		return check_failed ? 1 : 0;
	}
	RUN_CASE(both_copies_from_two_cpus);
	drain();
	RUN_CASE(same_answers_agree);
	RUN_CASE(a_second_run_is_caught);
	RUN_CASE(grant_reread_until_sent_on);
	RUN_CASE(reads_not_compared);
	drain();
	close(tx_fd);
	close(rx_fd);
	printf("%d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
