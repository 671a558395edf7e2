/* SPDX-License-Identifier: GPL-2.0-only */
/* Strict command-line number parsing with ranges and clear errors. */
#ifndef XTX_NUM_H
#define XTX_NUM_H

#include <stdbool.h>
#include <stdint.h>

/* The value of one hex digit, or -1. */
int xtx_hex_digit(char c);

/*
 * Parses all of s as an unsigned integer in [min, max] (base 0: 0x.. works);
 * on failure prints "Error: <what>: ..." and returns -1.
 */
int xtx_parse_u64(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out);
int xtx_parse_u32(const char *what, const char *s, uint32_t min, uint32_t max, uint32_t *out);
/* A number in [lo, hi]; 0, or -1 after printing why. */
int xtx_parse_double(const char *what, const char *s, double lo, double hi, double *out);
/* A duration such as 500ms, 2s, 150us, 10m, 1h or a bare number of seconds, in ns. */
int xtx_parse_duration(const char *what, const char *s, uint64_t *ns);
/* "0,1,2": indices below limit (at most 64) as a bitmap; -1 after printing why. */
int xtx_parse_index_set(const char *what, const char *s, unsigned int limit, uint64_t *set);
/* A counter of a flat JSON object (xtxd's answers): "name":N; false when absent. */
bool xtx_json_u64(const char *json, const char *name, unsigned long long *v);

#endif /* XTX_NUM_H */
