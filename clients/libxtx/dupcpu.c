// SPDX-License-Identifier: GPL-2.0-only
/* The concurrent-duplicate fault: a copy from another CPU at the same instant, answers compared. */
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xtx/msg.h>
#include "dupcpu.h"
#include "msgbuf.h"

#define DUPCPU_WORKERS		2
/* Requests sent twice whose answers are still awaited: the oldest goes first. */
#define DUPCPU_TRACKED		64
/* Mismatches printed in full; the rest are only counted. */
#define DUPCPU_PRINT_MAX	5
/* Spins before a waiting side yields: the other may share its CPU after a migration. */
#define DUPCPU_SPINS		1024

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax()	__builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax()	__asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax()	__atomic_signal_fence(__ATOMIC_SEQ_CST)
#endif

/* A worker's state word: the sender moves it IDLE -> ARMED -> GO -> IDLE, the worker the rest. */
enum {
	W_IDLE,
	W_ARMED,	/* a job is set: wake up */
	W_READY,	/* the worker spins, waiting for GO */
	W_GO,		/* both send now */
	W_DONE,		/* the worker's copy went (or not: sent) */
	W_STOP,
};

struct dup_worker {
	uint32_t state;		/* futex word, W_* */
	int cpu;
	bool started;
	pthread_t th;
	int fd;
	/* the job, valid from ARMED to DONE */
	const struct sockaddr_in *to;
	const void *buf;
	size_t len;
	int sent;		/* 1, 0 (no room) or a negative errno */
	int sent_cpu;
};

struct dup_entry {
	bool used;
	bool answered;		/* first holds a complete answer */
	bool compared;		/* a later one was held against it */
	bool differed;		/* ... and disagreed */
	uint64_t sends_then;	/* the transport's sends when first was kept */
	unsigned int server;
	uint16_t client_id;
	uint64_t req_id;
	struct xtx_msgbuf first;
};

struct xtx_dupcpu {
	int fd;
	struct dup_worker w[DUPCPU_WORKERS];
	struct dup_entry *tracked;
	unsigned int next;
	uint64_t sends;		/* batches the transport sent (xtx_dupcpu_sending) */
	unsigned int printed;
	struct xtx_dupcpu_stats st;
};

static void futex_wait(uint32_t *word, uint32_t val)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static uint32_t state_of(struct dup_worker *w)
{
	return __atomic_load_n(&w->state, __ATOMIC_ACQUIRE);
}

static void set_state(struct dup_worker *w, uint32_t s)
{
	__atomic_store_n(&w->state, s, __ATOMIC_RELEASE);
}

static void spin_until(struct dup_worker *w, uint32_t s)
{
	unsigned int n = 0;

	while (state_of(w) != s) {
		if (++n % DUPCPU_SPINS == 0)
			sched_yield();
		else
			cpu_relax();
	}
}

static int send_one(int fd, const struct sockaddr_in *to, const void *buf, size_t len)
{
	for (;;) {
		if (sendto(fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to)) >= 0)
			return 1;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == ENOBUFS ? 0 : -errno;
	}
}

static void *worker_main(void *arg)
{
	struct dup_worker *w = arg;
	uint32_t s;

	for (;;) {
		/* DONE stays until the sender has read the result: only ARMED is a new job */
		while ((s = state_of(w)) != W_ARMED && s != W_STOP)
			futex_wait(&w->state, s);
		if (s == W_STOP)
			return NULL;
		/* armed: tell the sender, and go the moment it does */
		set_state(w, W_READY);
		spin_until(w, W_GO);
		w->sent = send_one(w->fd, w->to, w->buf, w->len);
		w->sent_cpu = sched_getcpu();
		set_state(w, W_DONE);
	}
}

static int start_worker(struct dup_worker *w)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	err = pthread_attr_init(&attr);
	if (err)
		return -err;
	err = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (!err)
		err = pthread_create(&w->th, &attr, worker_main, w);
	pthread_attr_destroy(&attr);
	if (err)
		return -err;
	w->started = true;
	return 0;
}

struct xtx_dupcpu *xtx_dupcpu_open(int fd)
{
	struct xtx_dupcpu *dc;
	unsigned int n = 0;
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		return NULL;
	dc = calloc(1, sizeof(*dc));
	if (!dc)
		return NULL;
	dc->tracked = calloc(DUPCPU_TRACKED, sizeof(*dc->tracked));
	if (!dc->tracked) {
		free(dc);
		errno = ENOMEM;
		return NULL;
	}
	dc->fd = fd;
	for (cpu = 0; cpu < CPU_SETSIZE && n < DUPCPU_WORKERS; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		dc->w[n].cpu = cpu;
		dc->w[n].fd = fd;
		n++;
	}
	if (n < DUPCPU_WORKERS) {
		xtx_dupcpu_close(dc);
		errno = EINVAL;
		return NULL;
	}
	return dc;
}

void xtx_dupcpu_close(struct xtx_dupcpu *dc)
{
	unsigned int i;

	if (!dc)
		return;
	for (i = 0; i < DUPCPU_WORKERS; i++) {
		struct dup_worker *w = &dc->w[i];

		if (!w->started)
			continue;
		set_state(w, W_STOP);
		futex_wake(&w->state);
		pthread_join(w->th, NULL);
	}
	free(dc->tracked);
	free(dc);
}

static struct dup_entry *find(struct xtx_dupcpu *dc, unsigned int server, uint16_t client_id,
			      uint64_t req_id)
{
	unsigned int i;

	for (i = 0; i < DUPCPU_TRACKED; i++) {
		struct dup_entry *e = &dc->tracked[i];

		if (e->used && e->req_id == req_id && e->server == server &&
		    e->client_id == client_id)
			return e;
	}
	return NULL;
}

/* Remembers a request sent twice; a retransmission sent twice again keeps its entry. */
static void track(struct xtx_dupcpu *dc, unsigned int server, const void *buf, size_t len)
{
	struct xtx_hdr h;
	struct dup_entry *e;

	if (len < sizeof(h))
		return;
	memcpy(&h, buf, sizeof(h));
	if (find(dc, server, h.client_id, h.req_id))
		return;
	e = &dc->tracked[dc->next++ % DUPCPU_TRACKED];
	e->used = true;
	e->answered = false;
	e->compared = false;
	e->differed = false;
	e->server = server;
	e->client_id = h.client_id;
	e->req_id = h.req_id;
}

int xtx_dupcpu_send(struct xtx_dupcpu *dc, const struct sockaddr_in *to, unsigned int server,
		    const void *buf, size_t len)
{
	int cpu = sched_getcpu(), mine, mine_cpu, err;
	struct dup_worker *w = &dc->w[dc->w[0].cpu == cpu ? 1 : 0];

	if (!w->started) {
		err = start_worker(w);
		if (err)
			return err;
	}
	w->to = to;
	w->buf = buf;
	w->len = len;
	set_state(w, W_ARMED);
	futex_wake(&w->state);
	spin_until(w, W_READY);
	set_state(w, W_GO);
	mine = send_one(dc->fd, to, buf, len);
	mine_cpu = sched_getcpu();
	spin_until(w, W_DONE);
	set_state(w, W_IDLE);
	if (w->sent == 1) {
		dc->st.sent++;
		if (mine == 1 && mine_cpu != w->sent_cpu)
			dc->st.apart++;
		track(dc, server, buf, len);
	}
	return mine;
}

/* Ops that did not run say nothing about how the request ran. */
static bool ran(const struct xtx_op *op)
{
	return op->status != XTX_ST_NONE && op->status != XTX_ST_RETRY &&
	       op->status != XTX_ST_NOT_EXECUTED && op->status != XTX_ST_DEFERRED;
}

/*
 * A granted lock op answers the key as read under the lock, and a replay
 * reads it again (bpf/lib/exec.h): the same while the lock is held, which
 * it is until the client has taken an answer and sent on.
 */
static bool reads_under_lock(const struct xtx_op *op)
{
	return op->status == XTX_ST_OK && !(op->flags & XTX_OPF_NO_VALUE) &&
	       (op->opcode == XTX_OP_LOCK_SHARED || op->opcode == XTX_OP_LOCK_EXCL ||
		op->opcode == XTX_OP_OCC_LOCK);
}

/*
 * Whether two answers of one op that changes state disagree.  reread: also
 * what a replayed grant reads again (version, value, absence), for an
 * answer that came before the client could have moved on from the first.
 */
static bool op_differs(const struct xtx_op *a, const struct xtx_op *b, bool reread)
{
	/* the area bit of a replay is the request's (bpf/lib/dedupe.h): not an answer */
	uint32_t mask = ~(uint32_t)XTX_OPF_EXT;

	if (a->status != b->status || a->token != b->token)
		return true;
	if (!reads_under_lock(a))
		return a->version != b->version || (a->flags & mask) != (b->flags & mask);
	mask &= ~(uint32_t)XTX_TXF_ABSENT;
	if ((a->flags & mask) != (b->flags & mask))
		return true;
	if (!reread)
		return false;
	if (a->version != b->version || (a->flags ^ b->flags) & XTX_TXF_ABSENT)
		return true;
	if ((a->flags | b->flags) & XTX_OPF_EXT)
		return false;	/* a long value answered in the area: not compared */
	return a->vlen != b->vlen || (a->vlen <= XTX_VALUE_INLINE &&
				      memcmp(a->value, b->value, a->vlen));
}

static void print_op(const char *which, const struct xtx_hdr *h, const struct xtx_op *op)
{
	fprintf(stderr, "    %s%s: status=%u version=%" PRIu64 " token=%" PRIu64 " flags=0x%x "
		"vlen=%u\n", which, h->flags & XTX_F_REPLAYED ? " (replayed)" : "",
		op->status, (uint64_t)op->version, (uint64_t)op->token, op->flags, op->vlen);
}

/*
 * Holds a later complete answer against the first; a request counts once,
 * however many answers it got (retransmissions are answered too).
 */
static void compare(struct xtx_dupcpu *dc, struct dup_entry *e, const struct xtx_msgbuf *m)
{
	const struct xtx_msgbuf *f = &e->first;
	unsigned int i, n = m->hdr.nops, checked = 0, bad = 0;
	/* sent on since the first answer: it may have committed and let a lock go */
	bool reread = dc->sends == e->sends_then;

	if (f->hdr.nops != n)
		return;
	for (i = 0; i < n; i++) {
		const struct xtx_op *a = &f->ops[i], *b = &m->ops[i];

		if (!xtx_op_mutates(a->opcode) || a->opcode != b->opcode || !ran(a) || !ran(b))
			continue;
		checked++;
		if (!op_differs(a, b, reread))
			continue;
		if (!bad++ && !e->differed && dc->printed < DUPCPU_PRINT_MAX)
			fprintf(stderr, "anomaly: dup-cpu: server %u client %u request %" PRIu64
				" answered twice, differently:\n", e->server, e->client_id,
				e->req_id);
		if (!e->differed && dc->printed < DUPCPU_PRINT_MAX) {
			/* numbers, as include/xtx/proto.h has them: libxtx carries no names */
			fprintf(stderr, "  op %u (opcode %u, table %u, key %" PRIu64 ", txn 0x%" PRIx64
				"):\n", i, a->opcode, a->table, (uint64_t)a->key, (uint64_t)a->txn);
			print_op("first ", &f->hdr, a);
			print_op("second", &m->hdr, b);
		}
	}
	if (!checked)
		return;
	if (!e->compared) {
		e->compared = true;
		dc->st.compared++;
	}
	if (bad && !e->differed) {
		e->differed = true;
		dc->st.mismatched++;
		dc->printed++;
	}
}

void xtx_dupcpu_seen(struct xtx_dupcpu *dc, unsigned int server, const void *buf, size_t len)
{
	const struct xtx_msgbuf *m = buf;
	struct dup_entry *e;

	if (len < sizeof(m->hdr) || m->hdr.magic != XTX_MAGIC || !(m->hdr.flags & XTX_F_REPLY))
		return;
	e = find(dc, server, m->hdr.client_id, m->hdr.req_id);
	if (!e)
		return;
	if (m->hdr.status == XTX_ST_RETRY) {
		dc->st.busy++;
		return;
	}
	/* other refusals ran nothing: no answer to compare */
	if (m->hdr.status != XTX_ST_OK || m->hdr.nops > XTX_MAX_OPS ||
	    len < xtx_msg_len(m->hdr.nops))
		return;
	if (!e->answered) {
		memcpy(&e->first, buf, len < sizeof(e->first) ? len : sizeof(e->first));
		e->answered = true;
		e->sends_then = dc->sends;
		return;
	}
	compare(dc, e, m);
}

void xtx_dupcpu_sending(struct xtx_dupcpu *dc)
{
	dc->sends++;
}

void xtx_dupcpu_get_stats(const struct xtx_dupcpu *dc, struct xtx_dupcpu_stats *s)
{
	if (dc)
		*s = dc->st;
	else
		memset(s, 0, sizeof(*s));
}
