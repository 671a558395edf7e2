// SPDX-License-Identifier: GPL-2.0-only
/* Durations as every tool reads them (ns to h, a bare number in seconds), and the version line. */
/* checks: 3 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "num.h"
#include "version.h"

static void test_durations(void)
{
	static const struct { const char *s; uint64_t ns; } ok[] = {
		{ "500ns", 500 }, { "150us", 150000 }, { "2ms", 2000000 }, { "2s", 2000000000ull },
		{ "1.5s", 1500000000ull }, { "3", 3000000000ull }, { "0", 0 },
		/* xtxd -h's own example: --snapshot-every 10m */
		{ "10m", 600000000000ull }, { "1h", 3600000000000ull }, { "1.5h", 5400000000000ull },
		{ "0.5m", 30000000000ull },
	};
	static const char *const bad[] = {
		"", "s", "-1s", "10 m", "10min", "1d", "2x", "nan", "1e30h", "ms5",
	};
	uint64_t ns;
	unsigned int i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		CHECK(!xtx_parse_duration("t", ok[i].s, &ns) && ns == ok[i].ns, "'%s' -> %llu ns",
		      ok[i].s, (unsigned long long)ns);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(xtx_parse_duration("t", bad[i], &ns) == -1, "'%s' refused", bad[i]);
}

static void test_duration_errors_say_the_units(void)
{
	char buf[256] = "";
	uint64_t ns;
	FILE *f = freopen("/dev/null", "w", stderr);

	(void)f;
	/* the message names every unit, m and h included */
	setvbuf(stderr, buf, _IOFBF, sizeof(buf));
	xtx_parse_duration("--snapshot-every", "10y", &ns);
	CHECK(strstr(buf, "(ns, us, ms, s, m, h)") != NULL, "message: %s", buf);
	setvbuf(stderr, NULL, _IONBF, 0);
}

static void test_version(void)
{
	CHECK(strlen(xtx_version) >= 5 && strchr(xtx_version, '.'), "release '%s'", xtx_version);
	CHECK(xtx_build[0] != '\0', "build '%s'", xtx_build);
}

int main(void)
{
	RUN_CASE(test_durations);
	RUN_CASE(test_duration_errors_say_the_units);
	RUN_CASE(test_version);
	printf("# test_num: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
