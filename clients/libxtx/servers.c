// SPDX-License-Identifier: GPL-2.0-only
/* Parses --servers lists into socket addresses and prints them back. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "servers.h"

int xtx_parse_servers(const char *what, const char *list, uint16_t port,
		      struct sockaddr_in **out, unsigned int *n)
{
	struct sockaddr_in *a;
	char *copy, *tok, *save = NULL;
	unsigned int cnt = 0, i;

	if (!list || !*list) {
		fprintf(stderr, "Error: %s: expected IP[,IP...]\n", what);
		return -1;
	}
	copy = strdup(list);
	a = calloc(XTX_MAX_SERVERS, sizeof(*a));
	if (!copy || !a) {
		fprintf(stderr, "Error: %s: out of memory\n", what);
		goto err;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct in_addr ip;

		if (inet_pton(AF_INET, tok, &ip) != 1) {
			fprintf(stderr, "Error: %s: '%s' is not an IPv4 address\n", what, tok);
			goto err;
		}
		if (cnt == XTX_MAX_SERVERS) {
			fprintf(stderr, "Error: %s: more than %d servers\n", what, XTX_MAX_SERVERS);
			goto err;
		}
		/* Replies are told apart by source address: two entries would be one. */
		for (i = 0; i < cnt; i++) {
			if (a[i].sin_addr.s_addr == ip.s_addr) {
				fprintf(stderr, "Error: %s: %s is listed twice\n", what, tok);
				goto err;
			}
		}
		a[cnt].sin_family = AF_INET;
		a[cnt].sin_addr = ip;
		a[cnt].sin_port = htons(port);
		cnt++;
	}
	if (!cnt) {
		fprintf(stderr, "Error: %s: expected IP[,IP...], got '%s'\n", what, list);
		goto err;
	}
	free(copy);
	*out = a;
	*n = cnt;
	return 0;
err:
	free(copy);
	free(a);
	return -1;
}

const char *xtx_addr_str(const struct sockaddr_in *a, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN];

	if (!inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	snprintf(buf, len, "%s:%u", ip, ntohs(a->sin_port));
	return buf;
}
