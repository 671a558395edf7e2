/* SPDX-License-Identifier: GPL-2.0-only */
/* A minimal test harness: one PASS/FAIL line per case, counted by tests/run.sh. */
#ifndef XTX_TEST_CHECK_H
#define XTX_TEST_CHECK_H

#include <stdio.h>

extern int check_failed;	/* failures in the current case */
extern int cases_passed, cases_failed;

/* Records a failed expectation and keeps going, so one run shows them all. */
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			check_failed++;                                        \
			printf("#   %s:%d: ", __FILE__, __LINE__);                 \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
		}                                                              \
	} while (0)

#define RUN_CASE(fn)                                                           \
	do {                                                                   \
		check_failed = 0;                                              \
		fn();                                                          \
		if (check_failed) {                                            \
			cases_failed++;                                        \
			printf("FAIL: %s\n", #fn);                             \
		} else {                                                       \
			cases_passed++;                                        \
			printf("PASS: %s\n", #fn);                             \
		}                                                              \
		fflush(stdout);                                                \
	} while (0)

#endif /* XTX_TEST_CHECK_H */
