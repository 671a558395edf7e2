/* SPDX-License-Identifier: GPL-2.0-only */
/* Two threads pinned to CPUs 0 and 1 running the XDP program at once, for the race suites. */
#ifndef XTX_TEST_RACE_H
#define XTX_TEST_RACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include "harness.h"

/*
 * BPF_PROG_TEST_RUN runs the program on its caller's CPU, so two threads
 * pinned to distinct CPUs race the program against itself on the maps of
 * the global server (skel).  Each side is a racer with its own client,
 * per-call buffers and tallies; body is the loop both run, told apart by
 * side.
 */
struct race;

struct racer {
	struct race *race;
	int side;		/* 0 on CPU 0, 1 on CPU 1 */
	__u32 client;
	__u64 req, txn;		/* this client's next request id and txn sequence */
	__u64 sent;		/* packets run */
	__u64 overlapped;	/* ... while the other side had one in the program */
	__u64 hit;		/* the symptom a case looks for, as this side saw it */
	__u64 lost;		/* this side's state taken from it */
	__u64 busy;		/* answers that saw the other side's state: the race was on */
	__u64 other;		/* answers that are none of the expected ones */
	struct run r, u;
};

struct race {
	void (*body)(struct racer *);
	void *arg;		/* the case's, for body */
	__u64 rounds, max_ns, start_by;
	__u64 t0, t1, deadline;	/* when both went, and ended; when they must end */
	atomic_int ready;	/* sides on their CPUs */
	atomic_bool go, stop;
	atomic_ulong busy[2];	/* odd while that side's packet is in the program */
	atomic_ulong at[2];	/* lockstep: the round each side reached */
	int err[2];
	struct racer s[2];
};

/*
 * Runs body on CPU 0 (client c0) and CPU 1 (client c1), started together,
 * until side 0 has sent `rounds` packets (race_more) or max_ns passed
 * since they started.
 * False, with a failed check, when the two CPUs cannot be had: a race of
 * one thread would pass without testing anything.
 */
bool race_run(struct race *rc, void (*body)(struct racer *), __u64 rounds, __u64 max_ns,
	      __u32 c0, __u32 c1);
/* Runs r on me's CPU, counting it as overlapped when the other side's packet was in flight. */
int race_send(struct racer *me, struct run *r);
/* Whether me goes on; the first side to find the race over stops the other. */
bool race_more(struct racer *me);
void race_stop(struct racer *me);
/* Lockstep: returns once both sides reached round i; false when the race stopped. */
bool race_meet(struct racer *me, unsigned long i);
/* Prints how far each side got and how much they overlapped; too little fails the case. */
void race_report(const char *what, const struct race *rc);

#endif /* XTX_TEST_RACE_H */
