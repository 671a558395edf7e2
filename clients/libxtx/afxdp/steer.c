// SPDX-License-Identifier: GPL-2.0-only
/* Finds or attaches the steering program on a client's interface and hands out its XSKMAP. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xtx/xsk.h>
#include "xtx_xsk.skel.h"
#include "steer.h"

#define STEER_PROG_NAME	"xtx_xsk_steer"
#define STEER_XSK_MAP	"xtx_xsks"
#define STEER_ADDR_MAP	"xtx_xsk_addrs"
/* Interfaces one client process steers on (one per server link at most). */
#define STEER_MAX_IFACES	64

static pthread_mutex_t steer_lock = PTHREAD_MUTEX_INITIALIZER;
/* What this process found on each interface, while that program stays attached. */
static struct {
	int ifindex;
	__u32 prog_id;
	struct xtx_steer maps;
} steered[STEER_MAX_IFACES];
static unsigned int nsteered;

/* The map of program prog_fd named name, of this build's type and size, or a negative errno. */
static int prog_map(int prog_fd, const char *name, __u32 type)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info), ids[8], i;
	int fd;

	info.nr_map_ids = 8;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	for (i = 0; i < info.nr_map_ids && i < 8; i++) {
		struct bpf_map_info mi = { 0 };
		__u32 mlen = sizeof(mi);

		fd = bpf_map_get_fd_by_id(ids[i]);
		if (fd < 0)
			continue;
		/* the layout this build indexes by, not an older program's */
		if (!bpf_obj_get_info_by_fd(fd, &mi, &mlen) && !strcmp(mi.name, name) &&
		    mi.type == type && mi.max_entries == XTX_XSK_MAP_ENTRIES)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

/* Whether the program is "return XDP_PASS" and nothing else: r0 = 2; exit. */
static bool passes_only(int prog_fd, const struct bpf_prog_info *seen)
{
	struct bpf_prog_info info = { 0 };
	struct bpf_insn insn[2];
	__u32 len = sizeof(info);

	if (seen->xlated_prog_len != sizeof(insn))
		return false;
	info.xlated_prog_len = sizeof(insn);
	info.xlated_prog_insns = (__u64)(unsigned long)insn;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return false;
	return BPF_OP(insn[0].code) == BPF_MOV && BPF_SRC(insn[0].code) == BPF_K &&
	       insn[0].dst_reg == BPF_REG_0 && insn[0].imm == XDP_PASS &&
	       insn[1].code == (BPF_JMP | BPF_EXIT);
}

/* Loads a fresh copy of the program; its map is the one handed out when it gets attached. */
static struct xtx_xsk *load_steer(char *err, size_t errlen)
{
	struct xtx_xsk *skel = xtx_xsk__open_and_load();

	if (!skel)
		snprintf(err, errlen, "loading the AF_XDP steering program: %s", strerror(errno));
	return skel;
}

/* Both maps of the steering program prog_fd; 0 or a negative errno (none left open). */
static int both_maps(int prog_fd, struct xtx_steer *st)
{
	st->xsk_fd = prog_map(prog_fd, STEER_XSK_MAP, BPF_MAP_TYPE_XSKMAP);
	st->addr_fd = prog_map(prog_fd, STEER_ADDR_MAP, BPF_MAP_TYPE_ARRAY);
	if (st->xsk_fd >= 0 && st->addr_fd >= 0)
		return 0;
	if (st->xsk_fd >= 0)
		close(st->xsk_fd);
	if (st->addr_fd >= 0)
		close(st->addr_fd);
	return -ENOENT;
}

/* One look at the interface: 0 with *st and *prog_id, -EAGAIN to look again, or an error. */
static int steer_once(int ifindex, const char *ifname, struct xtx_steer *st, __u32 *prog_id,
		      char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	LIBBPF_OPTS(bpf_xdp_attach_opts, a);
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	struct xtx_xsk *skel;
	int prog_fd = -1, ret;

	if (bpf_xdp_query(ifindex, 0, &q)) {
		ret = -errno;
		snprintf(err, errlen, "reading the XDP program of %s: %s", ifname, strerror(-ret));
		return ret;
	}
	if (q.skb_prog_id || q.hw_prog_id) {
		snprintf(err, errlen, "%s has an XDP program attached in %s mode; the AF_XDP "
			 "transport needs native mode there (or use --transport udp)", ifname,
			 q.skb_prog_id ? "generic" : "offload");
		return -EBUSY;
	}
	if (q.drv_prog_id) {
		prog_fd = bpf_prog_get_fd_by_id(q.drv_prog_id);
		if (prog_fd < 0)
			return -EAGAIN;	/* detached meanwhile */
		if (bpf_obj_get_info_by_fd(prog_fd, &info, &len)) {
			close(prog_fd);
			return -EAGAIN;
		}
		if (!strcmp(info.name, STEER_PROG_NAME)) {
			ret = both_maps(prog_fd, st);
			close(prog_fd);
			*prog_id = q.drv_prog_id;
			if (ret < 0) {
				snprintf(err, errlen, "the steering program on %s is another "
					 "version's (its %s and %s maps differ from this build's): "
					 "detach it with `ip link set dev %s xdpdrv off` once no "
					 "client uses it", ifname, STEER_XSK_MAP, STEER_ADDR_MAP,
					 ifname);
				return ret;
			}
			return 0;
		}
		if (!passes_only(prog_fd, &info)) {
			close(prog_fd);
			snprintf(err, errlen, "%s runs XDP program '%s' (id %u); the AF_XDP transport "
				 "steers replies with its own program there and replaces only one "
				 "that passes every frame: detach it, or use --transport udp",
				 ifname, info.name, q.drv_prog_id);
			return -EBUSY;
		}
	}
	skel = load_steer(err, errlen);
	if (!skel) {
		if (prog_fd >= 0)
			close(prog_fd);
		return -EPERM;
	}
	/* Atomically: fails if another process got there first, and then we look again. */
	if (prog_fd >= 0)
		a.old_prog_fd = prog_fd;
	ret = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.xtx_xsk_steer),
			     XDP_FLAGS_DRV_MODE |
			     (prog_fd >= 0 ? XDP_FLAGS_REPLACE : XDP_FLAGS_UPDATE_IF_NOEXIST), &a);
	if (prog_fd >= 0)
		close(prog_fd);
	if (ret == -EEXIST || ret == -EBUSY) {
		xtx_xsk__destroy(skel);
		return -EAGAIN;
	}
	if (ret) {
		xtx_xsk__destroy(skel);
		if (ret == -EOPNOTSUPP || ret == -EINVAL)
			snprintf(err, errlen, "%s does not support native XDP (driver mode), which "
				 "the AF_XDP transport needs: use --transport udp", ifname);
		else
			snprintf(err, errlen, "attaching the AF_XDP steering program to %s: %s",
				 ifname, strerror(-ret));
		return ret;
	}
	/*
	 * Attached through netlink, it stays after this process: it passes
	 * whatever no socket claims, as the program it replaced did.
	 */
	ret = both_maps(bpf_program__fd(skel->progs.xtx_xsk_steer), st);
	if (!ret) {
		struct bpf_prog_info pi = { 0 };
		__u32 plen = sizeof(pi);

		bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.xtx_xsk_steer), &pi, &plen);
		*prog_id = pi.id;
	}
	xtx_xsk__destroy(skel);
	return ret;
}

/* The program attached to ifindex in native mode now (0: none). */
static __u32 attached_id(int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	return bpf_xdp_query(ifindex, 0, &q) ? 0 : q.drv_prog_id;
}

int xtx_steer_maps(int ifindex, const char *ifname, struct xtx_steer *st, char *err,
		   size_t errlen)
{
	int ret = -EAGAIN, tries;
	unsigned int i;
	__u32 id = 0;

	pthread_mutex_lock(&steer_lock);
	for (i = 0; i < nsteered; i++) {
		if (steered[i].ifindex != ifindex)
			continue;
		/* still the program whose maps these are: sockets entered there are steered */
		if (attached_id(ifindex) == steered[i].prog_id) {
			*st = steered[i].maps;
			ret = 0;
			goto out;
		}
		/* replaced meanwhile: look again; sockets in the old maps get what the UDP socket does */
		steered[i] = steered[--nsteered];
		break;
	}
	if (nsteered == STEER_MAX_IFACES) {
		snprintf(err, errlen, "more than %d interfaces to steer on", STEER_MAX_IFACES);
		ret = -E2BIG;
		goto out;
	}
	for (tries = 0; tries < 5 && ret == -EAGAIN; tries++)
		ret = steer_once(ifindex, ifname, st, &id, err, errlen);
	if (ret == -EAGAIN)
		snprintf(err, errlen, "the XDP program of %s keeps changing", ifname);
	if (ret)
		goto out;
	steered[nsteered].ifindex = ifindex;
	steered[nsteered].prog_id = id;
	steered[nsteered++].maps = *st;
out:
	pthread_mutex_unlock(&steer_lock);
	return ret;
}
