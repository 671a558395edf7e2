// SPDX-License-Identifier: GPL-2.0-only
/* Strict number parsing for every xtx command line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "num.h"

int xtx_parse_u64(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!s || !*s || *s == '-') {
		fprintf(stderr, "Error: %s: expected a number, got '%s'\n", what, s ? s : "");
		return -1;
	}
	v = strtoull(s, &end, 0);
	if (errno || *end) {
		fprintf(stderr, "Error: %s: '%s' is not a number\n", what, s);
		return -1;
	}
	if (v < min || v > max) {
		fprintf(stderr, "Error: %s: %llu is outside [%llu, %llu]\n", what, v,
			(unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

int xtx_parse_u32(const char *what, const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (xtx_parse_u64(what, s, min, max, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int xtx_parse_duration(const char *what, const char *s, uint64_t *ns)
{
	static const struct { const char *suffix; uint64_t mult; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
		{ "m", 60000000000ull }, { "h", 3600000000000ull },
	};
	double v;
	char *end;
	size_t i;

	errno = 0;
	v = s ? strtod(s, &end) : -1;
	if (!s || errno || end == s || !(v >= 0)) {
		fprintf(stderr, "Error: %s: '%s' is not a duration (e.g. 500ms, 2s, 10m, 1h)\n",
			what, s ? s : "");
		return -1;
	}
	for (i = 0; *end && i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].suffix))
			break;
	if (i == sizeof(units) / sizeof(units[0])) {
		fprintf(stderr, "Error: %s: unknown unit in '%s' (ns, us, ms, s, m, h)\n", what, s);
		return -1;
	}
	/* a plain number is seconds */
	v *= *end ? (double)units[i].mult : 1e9;
	/* 2^64 ns is 584 years: anything near it is a mistake */
	if (v >= 1e19) {
		fprintf(stderr, "Error: %s: '%s' is too long\n", what, s);
		return -1;
	}
	*ns = (uint64_t)v;
	return 0;
}

int xtx_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int xtx_parse_index_set(const char *what, const char *s, unsigned int limit, uint64_t *set)
{
	const char *p = s;

	*set = 0;
	while (*p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p || v >= limit || v >= 64 || (*end && *end != ',') ||
		    (*end == ',' && !end[1])) {
			fprintf(stderr, "Error: %s: '%s' is not a list of server indices below %u "
				"(e.g. 0,1,2)\n", what, s, limit);
			return -1;
		}
		*set |= 1ull << v;
		p = *end ? end + 1 : end;
	}
	if (!*set) {
		fprintf(stderr, "Error: %s: empty\n", what);
		return -1;
	}
	return 0;
}

bool xtx_json_u64(const char *json, const char *name, unsigned long long *v)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", name);
	p = strstr(json, pat);
	return p && sscanf(p + strlen(pat), "%llu", v) == 1;
}

int xtx_parse_double(const char *what, const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !(*out >= lo && *out <= hi)) {
		fprintf(stderr, "Error: %s: '%s' is not a number in [%g, %g]\n", what, s, lo, hi);
		return -1;
	}
	return 0;
}
