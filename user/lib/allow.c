// SPDX-License-Identifier: GPL-2.0-only
/* The client allowlist in the pinned maps, for xtxd --allow and xtxctl allow. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "allow.h"
#include "num.h"

int xtx_allow_parse(const char *cidr, struct xtx_allow_key *k)
{
	char addr[INET_ADDRSTRLEN];
	const char *slash = strchr(cidr, '/');
	size_t alen = slash ? (size_t)(slash - cidr) : strlen(cidr);
	uint32_t bits = 32;
	struct in_addr a;

	if (alen == 0 || alen >= sizeof(addr))
		goto bad;
	memcpy(addr, cidr, alen);
	addr[alen] = 0;
	if (inet_pton(AF_INET, addr, &a) != 1)
		goto bad;
	if (slash && xtx_parse_u32("prefix length", slash + 1, 0, 32, &bits))
		return -EINVAL;
	/* the trie matches on the first prefixlen bits: clear the rest, so del finds it */
	k->prefixlen = bits;
	k->addr = bits ? a.s_addr & htonl(~0u << (32 - bits)) : 0;
	return 0;
bad:
	fprintf(stderr, "Error: '%s' is not an IPv4 address or CIDR (a.b.c.d[/n])\n", cidr);
	return -EINVAL;
}

void xtx_allow_format(const struct xtx_allow_key *k, char *buf, size_t len)
{
	char a[INET_ADDRSTRLEN];
	struct in_addr in = { .s_addr = k->addr };

	inet_ntop(AF_INET, &in, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, k->prefixlen);
}

/* Reads the runtime knobs, lets change() edit them, writes them back; 0 or a negative errno. */
static int update_runtime(const struct xtx_target *t,
			  void (*change)(struct xtx_runtime *rt, const void *arg), const void *arg)
{
	int fd = xtx_target_map_fd(t, XTX_MAP_RUNTIME), err = 0;
	struct xtx_runtime rt;
	__u32 zero = 0;

	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &zero, &rt)) {
		err = -errno;
	} else {
		change(&rt, arg);
		if (bpf_map_update_elem(fd, &zero, &rt, 0))
			err = -errno;
	}
	close(fd);
	return err;
}

/* Enforcement on or off, and a new generation, which empties every CPU's cache of the last allowed sender. */
static void switch_allowlist(struct xtx_runtime *rt, const void *arg)
{
	__u32 gen = (rt->flags >> XTX_RTF_ALLOW_GEN_SHIFT) + 1;
	bool on = *(const bool *)arg;

	rt->flags = (gen << XTX_RTF_ALLOW_GEN_SHIFT) | (on ? XTX_RTF_ALLOWLIST : 0) |
		    (rt->flags & ((1u << XTX_RTF_ALLOW_GEN_SHIFT) - 1) & ~XTX_RTF_ALLOWLIST);
}

/* Call it after any change of the list. */
static int set_flag(const struct xtx_target *t, bool on)
{
	int err = update_runtime(t, switch_allowlist, &on);

	if (err)
		fprintf(stderr, "Error: switching the allowlist %s: %s\n", on ? "on" : "off",
			strerror(-err));
	return err;
}

static void set_secret(struct xtx_runtime *rt, const void *arg)
{
	const struct xtx_secret *s = arg;

	rt->secret_k0 = s ? s->k0 : 0;
	rt->secret_k1 = s ? s->k1 : 0;
	rt->flags = s ? rt->flags | XTX_RTF_SECRET : rt->flags & ~XTX_RTF_SECRET;
}

int xtx_secret_set(const struct xtx_target *t, const struct xtx_secret *s)
{
	int err = update_runtime(t, set_secret, s);

	if (err)
		fprintf(stderr, "Error: setting the shared secret: %s\n", strerror(-err));
	return err;
}

int xtx_allow_switch(const struct xtx_target *t, bool on)
{
	return set_flag(t, on);
}

int xtx_allow_list(const struct xtx_target *t, struct xtx_allow_key *keys, unsigned int max,
		   bool *on)
{
	int fd = xtx_target_map_fd(t, XTX_MAP_ALLOW), rt_fd, n = 0;
	struct xtx_allow_key k, *prev = NULL;
	struct xtx_runtime rt;
	__u32 zero = 0;

	if (fd < 0)
		return fd;
	while ((unsigned int)n < max && !bpf_map_get_next_key(fd, prev, &k)) {
		keys[n] = k;
		prev = &keys[n++];
	}
	close(fd);
	rt_fd = xtx_target_map_fd(t, XTX_MAP_RUNTIME);
	if (rt_fd < 0)
		return rt_fd;
	*on = !bpf_map_lookup_elem(rt_fd, &zero, &rt) && (rt.flags & XTX_RTF_ALLOWLIST);
	close(rt_fd);
	return n;
}

/* Whether the comma-separated list names prefix k. */
static bool listed(const char *list, const struct xtx_allow_key *k)
{
	char *copy = strdup(list), *tok, *save = NULL;
	struct xtx_allow_key x;
	bool found = false;

	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && !found;
	     tok = strtok_r(NULL, ",", &save))
		found = !xtx_allow_parse(tok, &x) && x.prefixlen == k->prefixlen &&
			x.addr == k->addr;
	free(copy);
	return found;
}

int xtx_allow_add(const struct xtx_target *t, const char *list, bool replace)
{
	struct xtx_allow_key k, *old = NULL;
	char *copy = strdup(list), *tok, *save = NULL;
	int fd = xtx_target_map_fd(t, XTX_MAP_ALLOW), err = 0, n, i;
	__u8 one = 1;
	bool on;

	if (!copy || fd < 0) {
		err = fd < 0 ? fd : -ENOMEM;
		goto out;
	}
	/* every prefix parses before anything changes: a bad list changes nothing */
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (xtx_allow_parse(tok, &k)) {
			err = -EINVAL;
			goto out;
		}
	strcpy(copy, list);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		xtx_allow_parse(tok, &k);
		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY)) {
			err = -errno;
			fprintf(stderr, "Error: adding %s to the allowlist: %s\n", tok,
				strerror(-err));
			goto out;
		}
	}
	/* the new prefixes are in before the old ones go: no client listed in both is cut off */
	if (replace) {
		old = calloc(XTX_ALLOW_MAX, sizeof(*old));
		n = old ? xtx_allow_list(t, old, XTX_ALLOW_MAX, &on) : -ENOMEM;
		for (i = 0; i < n; i++)
			if (!listed(list, &old[i]))
				bpf_map_delete_elem(fd, &old[i]);
	}
	err = set_flag(t, true);
out:
	if (fd >= 0)
		close(fd);
	free(old);
	free(copy);
	return err;
}

int xtx_allow_del(const struct xtx_target *t, const char *cidr)
{
	struct xtx_allow_key k;
	int fd, err = 0;

	if (xtx_allow_parse(cidr, &k))
		return -EINVAL;
	fd = xtx_target_map_fd(t, XTX_MAP_ALLOW);
	if (fd < 0)
		return fd;
	if (bpf_map_delete_elem(fd, &k)) {
		err = -errno;
		fprintf(stderr, "Error: %s is not in the allowlist\n", cidr);
	}
	close(fd);
	if (!err) {
		bool on;
		struct xtx_allow_key one;

		/* a sender cached as allowed must be looked up again */
		if (xtx_allow_list(t, &one, 1, &on) >= 0)
			err = set_flag(t, on);
	}
	return err;
}
