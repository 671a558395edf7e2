// SPDX-License-Identifier: GPL-2.0-only
/* Two threads pinned to CPUs 0 and 1 running the XDP program at once, for the race suites. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "race.h"

/* Below this share of packets overlapping the other CPU's, a race proved nothing. */
#define RACE_MIN_OVERLAP_PCT 5
/* A side not on its CPU after this long: the machine cannot give the race two CPUs. */
#define RACE_START_NS (30ull * 1000 * 1000 * 1000)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Overlapped: the other side's packet was in flight when this one began,
 * or one of its packets began or ended before this one ended.  These are
 * the syscall's bounds, so an upper bound on the programs' own overlap.
 */
int race_send(struct racer *me, struct run *r)
{
	struct race *rc = me->race;
	unsigned long other = atomic_load(&rc->busy[!me->side]);
	int err;

	atomic_fetch_add(&rc->busy[me->side], 1);
	err = run(r);
	atomic_fetch_add(&rc->busy[me->side], 1);
	if ((other & 1) || atomic_load(&rc->busy[!me->side]) != other)
		me->overlapped++;
	me->sent++;
	return err;
}

void race_stop(struct racer *me)
{
	atomic_store(&me->race->stop, true);
}

bool race_more(struct racer *me)
{
	struct race *rc = me->race;

	if (atomic_load_explicit(&rc->stop, memory_order_relaxed))
		return false;
	if ((me->side == 0 && me->sent >= rc->rounds) ||
	    ((me->sent & 255) == 0 && clock_mono_ns() > rc->deadline)) {
		race_stop(me);
		return false;
	}
	return true;
}

bool race_meet(struct racer *me, unsigned long i)
{
	struct race *rc = me->race;
	unsigned long spins = 0;

	atomic_store(&rc->at[me->side], i + 1);
	while (atomic_load(&rc->at[!me->side]) < i + 1) {
		if (atomic_load_explicit(&rc->stop, memory_order_relaxed))
			return false;
		/* a partner the machine never runs again must not hang this one */
		if ((++spins & 4095) == 0 && clock_mono_ns() > rc->deadline) {
			race_stop(me);
			return false;
		}
		cpu_relax();
	}
	return true;
}

/* Both sides go together, and only both: a race of one proves nothing. */
static void race_go(struct race *rc)
{
	rc->t0 = clock_mono_ns();
	rc->deadline = rc->t0 + rc->max_ns;
	atomic_store(&rc->go, true);
}

static void *racer_main(void *arg)
{
	struct racer *me = arg;
	struct race *rc = me->race;
	unsigned long spins = 0;

	rc->err[me->side] = pin_to_cpu(me->side);
	/* the race's time starts once both are on their CPUs: a slow start eats none of it */
	if (atomic_fetch_add(&rc->ready, 1) == 1)
		race_go(rc);
	while (!atomic_load(&rc->go)) {
		if ((++spins & 4095) == 0 && clock_mono_ns() > rc->start_by) {
			rc->err[!me->side] = -ETIMEDOUT;
			race_go(rc);
		}
		cpu_relax();
	}
	if (!rc->err[0] && !rc->err[1])
		rc->body(me);
	return NULL;
}

bool race_run(struct race *rc, void (*body)(struct racer *), __u64 rounds, __u64 max_ns,
	      __u32 c0, __u32 c1)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t th[2];
	int i, n = 0, err;

	CHECK(online >= 2, "%ld CPU online: this race needs CPUs 0 and 1, nothing was tested",
	      online);
	if (online < 2)
		return false;
	rc->body = body;
	rc->rounds = rounds;
	rc->max_ns = max_ns;
	rc->start_by = clock_mono_ns() + RACE_START_NS;
	for (i = 0; i < 2; i++) {
		rc->s[i].race = rc;
		rc->s[i].side = i;
		rc->s[i].client = i ? c1 : c0;
		rc->s[i].req = 1;
	}
	for (i = 0; i < 2; i++) {
		err = pthread_create(&th[i], NULL, racer_main, &rc->s[i]);
		if (err) {
			/* the side that started must not wait for it, nor run alone */
			rc->err[i] = -err;
			race_go(rc);
			break;
		}
		n++;
	}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	rc->t1 = clock_mono_ns();
	err = rc->err[0] ? rc->err[0] : rc->err[1];
	CHECK(!err, "cannot run a thread on each of CPUs 0 and 1 (%s): nothing was tested",
	      strerror(-err));
	return !err;
}

void race_report(const char *what, const struct race *rc)
{
	const struct racer *a = &rc->s[0], *b = &rc->s[1];

	printf("#   %s: %.2f s; CPU0 %llu packets, %llu of them overlapping CPU1's; "
	       "CPU1 %llu packets, %llu overlapping\n", what, (rc->t1 - rc->t0) / 1e9,
	       (unsigned long long)a->sent, (unsigned long long)a->overlapped,
	       (unsigned long long)b->sent, (unsigned long long)b->overlapped);
	CHECK(a->overlapped * 100 >= a->sent * RACE_MIN_OVERLAP_PCT && a->overlapped > 0,
	      "the CPUs overlapped in %llu of %llu packets: too few to call it a race",
	      (unsigned long long)a->overlapped, (unsigned long long)a->sent);
}
