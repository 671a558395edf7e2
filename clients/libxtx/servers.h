/* SPDX-License-Identifier: GPL-2.0-only */
/* Parsing and printing the server list every benchmark takes (--servers, --port). */
#ifndef XTX_SERVERS_H
#define XTX_SERVERS_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

/* More would not fit the per-thread batches the benchmarks size statically. */
#define XTX_MAX_SERVERS		64

/*
 * Parses "IP[,IP...]" (IPv4, no duplicates) into a calloc'ed array of
 * addresses with port.  Returns 0, or -1 after printing "Error: <what>: ...".
 */
int xtx_parse_servers(const char *what, const char *list, uint16_t port,
		      struct sockaddr_in **out, unsigned int *n);

/* "a.b.c.d:port" into buf. */
#define XTX_ADDR_STRLEN		24
const char *xtx_addr_str(const struct sockaddr_in *a, char *buf, size_t len);

#endif /* XTX_SERVERS_H */
