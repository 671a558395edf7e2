// SPDX-License-Identifier: GPL-2.0-only
/* Parses the server list and finds this server's index in it. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <string.h>
#include "peers.h"

static int add(struct xtxd_peers *p, const char *ip, const char *where)
{
	struct in_addr a;

	if (!inet_pton(AF_INET, ip, &a)) {
		fprintf(stderr, "Error: %s: '%s' is not an IPv4 address\n", where, ip);
		return -1;
	}
	if (p->n == XTXD_PEERS_MAX) {
		fprintf(stderr, "Error: %s: more than %d servers\n", where, XTXD_PEERS_MAX);
		return -1;
	}
	p->addr[p->n++] = a;
	return 0;
}

int xtxd_peers_parse(struct xtxd_peers *p, const char *list)
{
	char buf[1024], *tok, *save = NULL;

	if (strlen(list) >= sizeof(buf) || !*list) {
		fprintf(stderr, "Error: --peers: expected IP[,IP...]\n");
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (add(p, tok, "--peers"))
			return -1;
	return 0;
}

int xtxd_peers_load(struct xtxd_peers *p, const char *path)
{
	char line[256], where[300];
	unsigned int lineno = 0;
	FILE *f = fopen(path, "r");
	int err = 0;

	if (!f) {
		fprintf(stderr, "Error: --cluster %s: %m\n", path);
		return -1;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		char *s = line, *e;

		lineno++;
		if ((e = strchr(s, '#')))
			*e = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		for (e = s + strlen(s); e > s && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t' ||
						  e[-1] == '\r'); e--)
			;
		*e = '\0';
		if (!*s)
			continue;
		snprintf(where, sizeof(where), "--cluster %s line %u", path, lineno);
		err = add(p, s, where);
	}
	fclose(f);
	if (!err && !p->n) {
		fprintf(stderr, "Error: --cluster %s: no servers listed\n", path);
		err = -1;
	}
	return err;
}

int xtxd_peers_index(const struct xtxd_peers *p, struct in_addr addr)
{
	unsigned int i;

	for (i = 0; i < p->n; i++)
		if (p->addr[i].s_addr == addr.s_addr)
			return i;
	return -1;
}

int xtxd_peers_find_self(struct xtxd_peers *p)
{
	struct ifaddrs *ifa, *a;
	int found = -1, i;

	if (p->self != XTXD_SELF_UNKNOWN)
		return 0;
	if (getifaddrs(&ifa)) {
		fprintf(stderr, "Error: --peers: listing this namespace's addresses: %m\n");
		return -1;
	}
	for (a = ifa; a; a = a->ifa_next) {
		if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET)
			continue;
		i = xtxd_peers_index(p, ((struct sockaddr_in *)a->ifa_addr)->sin_addr);
		if (i < 0 || i == found)
			continue;
		if (found >= 0) {
			fprintf(stderr, "Error: --peers: servers %d and %d are both local; say "
				"which one this is with --self\n", found, i);
			freeifaddrs(ifa);
			return -1;
		}
		found = i;
	}
	freeifaddrs(ifa);
	if (found < 0) {
		fprintf(stderr, "Error: --peers: no listed address is local; say which server "
			"this is with --self\n");
		return -1;
	}
	p->self = found;
	return 0;
}
