// SPDX-License-Identifier: GPL-2.0-only
/* Loads the XDP server through its skeleton and attaches it with libxdp or libbpf. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xtx/maps.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include <xtx/hades.h>
#include "xtx_xdp.skel.h"
#include "xtx_tc.skel.h"
#include "attach.h"
#include "log.h"
#include "tlock.h"

static int libxdp_print(enum libxdp_print_level lvl, const char *fmt, va_list ap)
{
	/* libxdp's warnings are our info, its info our debug. */
	xtx_vlog(xtx_log_lib_level(lvl == LIBXDP_WARN), fmt, ap);
	return 0;
}

void xtx_log_libxdp(void)
{
	libxdp_set_print(libxdp_print);
}

static bool is_xtx(struct xdp_program *p)
{
	const char *name = xdp_program__name(p);

	return name && !strcmp(name, XTX_PROG_NAME);
}

int xtx_attached_query(const struct xtx_target *t, struct xtx_attached *a)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	long err;

	memset(a, 0, sizeof(*a));
	mp = xdp_multiprog__get_from_ifindex(t->ifindex);
	err = libxdp_get_error(mp);
	if (err == -ENOENT || (!err && !mp))
		return 0;
	if (err)
		return (int)err;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && is_xtx(p)) {
			a->xtx_prog_id = xdp_program__id(p);
			a->nprogs = 1;
		} else if (p) {
			a->foreign_prog_id = xdp_program__id(p);
			snprintf(a->foreign_name, sizeof(a->foreign_name), "%s",
				 xdp_program__name(p) ?: "?");
		}
	} else {
		for (p = xdp_multiprog__next_prog(NULL, mp); p;
		     p = xdp_multiprog__next_prog(p, mp)) {
			a->nprogs++;
			if (is_xtx(p)) {
				a->xtx_prog_id = xdp_program__id(p);
				a->xtx_via_libxdp = true;
			}
		}
	}
	xdp_multiprog__close(mp);
	return 0;
}

bool xtx_pins_exist(const struct xtx_target *t)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", t->pin_dir, XTX_MAP_INFO);
	return access(path, F_OK) == 0;
}

static int pin_maps(struct bpf_object *obj, const struct xtx_target *t)
{
	char path[PATH_MAX];
	struct bpf_map *map;
	int err;

	err = xtx_mkdirs(t->pin_dir, 0700);
	if (err) {
		fprintf(stderr, "Error: creating %s: %s\n", t->pin_dir, strerror(-err));
		return err;
	}
	bpf_object__for_each_map(map, obj) {
		/* .rodata and friends are per-load, not state */
		if (bpf_map__is_internal(map))
			continue;
		snprintf(path, sizeof(path), "%s/%s", t->pin_dir, bpf_map__name(map));
		err = bpf_map__set_pin_path(map, path);
		if (err)
			return err;
	}
	return 0;
}

static int write_info(struct xtx_xdp *skel, const struct xtx_load_opts *o)
{
	struct xtx_info info = {
		.abi_version = XTX_VERSION,
		.port = o->port,
		.max_clients = o->max_clients,
		.echo_mode = o->echo,
		.lock_slots = o->lock_slots,
		.kv_buckets = o->kv_buckets,
		.kv_flags = o->kv_flags,
		.value_size = o->value_size,
		.log_ring = o->log_ring,
		.bigval_max = o->bigval_max,
	};
	struct xtx_runtime rt;
	struct timespec ts;
	__u32 zero = 0;
	int rt_fd = bpf_map__fd(skel->maps.xtx_runtime);

	clock_gettime(CLOCK_MONOTONIC, &ts);
	info.loaded_ns = (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_info), &zero, &info, 0))
		return -errno;
	/* the lease is a runtime knob: keep the other knobs of a reused map */
	if (bpf_map_lookup_elem(rt_fd, &zero, &rt))
		return -errno;
	rt.lock_lease_ns = o->lock_lease_ns;
	rt.kv_lease_ns = o->kv_lease_ns;
	if (bpf_map_update_elem(rt_fd, &zero, &rt, 0))
		return -errno;
	return 0;
}

static int attach_plain(struct xtx_xdp *skel, const struct xtx_target *t,
			const struct xtx_load_opts *o)
{
	__u32 flags = XDP_FLAGS_UPDATE_IF_NOEXIST |
		      (o->mode == XTX_MODE_GENERIC ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
	int err;

	err = bpf_object__load(skel->obj);
	if (err) {
		fprintf(stderr, "Error: loading the XDP program: %s\n", strerror(-err));
		return err;
	}
	err = bpf_xdp_attach(t->ifindex, bpf_program__fd(skel->progs.xtx_xdp), flags, NULL);
	if (err)
		fprintf(stderr, "Error: attaching XDP to %s: %s\n", t->iface, strerror(-err));
	return err;
}

/*
 * libxdp quietly falls back to attaching a program alone when the kernel
 * refuses its dispatcher (freplace); say so, since it means no other XDP
 * program can share the interface.
 */
static void report_attachment(const struct xtx_target *t)
{
	struct xtx_attached a;

	if (xtx_attached_query(t, &a) || !a.xtx_prog_id)
		return;
	if (a.xtx_via_libxdp)
		pr_info("attached to %s through the libxdp dispatcher (program id %u, %d "
			"program(s) on the interface)\n", t->iface, a.xtx_prog_id, a.nprogs);
	else
		pr_info("attached to %s alone (program id %u): libxdp could not load its "
			"dispatcher on this kernel (run with -vv for its reason), so other XDP "
			"programs cannot share this interface\n", t->iface, a.xtx_prog_id);
}

/* Opens the skeleton with o applied and pin paths set; NULL after printing why. */
/*
 * Both programs (XDP and TC egress) are built from the same config and
 * maps headers: the same rodata fields, the same map sizes, and pin paths
 * so the second object reuses the first one's maps.
 */
#define XTX_SET_RODATA(skel, o, ncpu)                                             \
	do {                                                                      \
		(skel)->rodata->xtx_port = (o)->port;                             \
		(skel)->rodata->xtx_max_clients = (o)->max_clients;               \
		(skel)->rodata->xtx_nr_cpus = (ncpu) > 0 ? (ncpu) : 1;            \
		(skel)->rodata->xtx_echo_mode = (o)->echo;                        \
		(skel)->rodata->xtx_lock_slots = (o)->lock_slots;                 \
		(skel)->rodata->xtx_kv_buckets = (o)->kv_buckets;                 \
		(skel)->rodata->xtx_kv_write_through =                            \
			!!((o)->kv_flags & XTX_INFO_KV_WRITE_THROUGH);            \
		(skel)->rodata->xtx_kv_no_bloom = !!((o)->kv_flags & XTX_INFO_KV_NO_BLOOM); \
		(skel)->rodata->xtx_no_warm = !!((o)->kv_flags & XTX_INFO_NO_WARM);  \
		(skel)->rodata->xtx_value_size = (o)->value_size;                 \
		(skel)->rodata->xtx_log_ring = (o)->log_ring;                     \
		(skel)->rodata->xtx_hades_slots = (o)->hades_slots;               \
		(skel)->rodata->xtx_hades_bf_bits = (o)->hades_bf_bits;           \
		(skel)->rodata->xtx_hades_hashes = (o)->hades_hashes;             \
		(skel)->rodata->xtx_hades_lease_ns = (o)->hades_lease_ns;         \
		(skel)->rodata->xtx_hades_exact_on = (o)->hades_exact;            \
	} while (0)

static int size_and_pin(struct bpf_object *obj, const struct xtx_target *t,
			const struct xtx_load_opts *o)
{
	int ncpu = libbpf_num_possible_cpus();
	const struct { const char *name; __u32 entries; } sized[] = {
		{ XTX_MAP_DEDUPE, o->max_clients * XTX_DEDUPE_WINDOW },
		{ XTX_MAP_LOCKS, o->lock_slots },
		{ XTX_MAP_KV, o->kv_buckets },
		{ XTX_MAP_BIGVAL, o->bigval_max ? o->bigval_max : 1 },
		{ XTX_MAP_DEFER, XTX_DEFER_RING * (ncpu > 0 ? ncpu : 1) },
		{ XTX_MAP_LOG, o->log_ring * (ncpu > 0 ? ncpu : 1) },
		{ XTX_MAP_LOG_CURSOR, ncpu > 0 ? ncpu : 1 },
		{ XTX_MAP_HADES, o->hades_slots },
		{ XTX_MAP_HADES_EXACT, o->hades_exact ? o->hades_slots : 1 },
		{ XTX_MAP_HADES_BIG, o->hades_slots * XTX_HADES_STAGE_MAX },
	};
	unsigned int i;
	int err;

	for (i = 0; i < sizeof(sized) / sizeof(sized[0]); i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj, sized[i].name);
		__u32 n = sized[i].entries;

		if (!map)
			return -ENOENT;
		err = bpf_map__set_max_entries(map, n);
		if (err)
			return err;
	}
	return pin_maps(obj, t);
}

static struct xtx_xdp *open_configured(const struct xtx_target *t, const struct xtx_load_opts *o)
{
	struct xtx_xdp *skel = xtx_xdp__open();
	int ncpu = libbpf_num_possible_cpus(), err;

	if (!skel) {
		fprintf(stderr, "Error: opening the BPF object: %s\n", strerror(errno));
		return NULL;
	}
	XTX_SET_RODATA(skel, o, ncpu);
	err = size_and_pin(skel->obj, t, o);
	if (err) {
		fprintf(stderr, "Error: configuring the BPF object: %s\n", strerror(-err));
		xtx_xdp__destroy(skel);
		return NULL;
	}
	return skel;
}

/* TC egress sits at a fixed handle and priority so a restarted xtxd finds it. */
#define XTX_TC_HANDLE	0x7874
#define XTX_TC_PRIO	0x7874

static void tc_hook_init(struct bpf_tc_hook *hook, const struct xtx_target *t)
{
	memset(hook, 0, sizeof(*hook));
	hook->sz = sizeof(*hook);
	hook->ifindex = t->ifindex;
	hook->attach_point = BPF_TC_EGRESS;
}

bool xtx_tc_attached(const struct xtx_target *t)
{
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XTX_TC_HANDLE, .priority = XTX_TC_PRIO);
	struct bpf_tc_hook hook;

	tc_hook_init(&hook, t);
	return bpf_tc_query(&hook, &opts) == 0;
}

/*
 * The rare path's bookkeeping program, on the interface's egress (libbpf
 * 1.1 has no tcx links: a clsact filter, which outlives this process).
 */
int xtx_tc_attach(const struct xtx_target *t, const struct xtx_load_opts *o)
{
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XTX_TC_HANDLE, .priority = XTX_TC_PRIO,
		    .flags = BPF_TC_F_REPLACE);
	int ncpu = libbpf_num_possible_cpus(), err;
	struct bpf_tc_hook hook;
	struct xtx_tc *skel;

	skel = xtx_tc__open();
	if (!skel) {
		fprintf(stderr, "Error: opening the TC object: %s\n", strerror(errno));
		return -errno;
	}
	XTX_SET_RODATA(skel, o, ncpu);
	err = size_and_pin(skel->obj, t, o);
	if (!err)
		err = xtx_tc__load(skel);
	if (err) {
		fprintf(stderr, "Error: loading the TC egress program: %s\n", strerror(-err));
		goto out;
	}
	tc_hook_init(&hook, t);
	/* a clsact qdisc left by an earlier load is fine: EEXIST, and libbpf's extack is noise */
	xtx_log_libs_quiet(1);
	err = bpf_tc_hook_create(&hook);
	xtx_log_libs_quiet(0);
	if (err && err != -EEXIST) {
		fprintf(stderr, "Error: creating the clsact qdisc on %s: %s\n", t->iface,
			strerror(-err));
		goto out;
	}
	opts.prog_fd = bpf_program__fd(skel->progs.xtx_tc_egress);
	err = bpf_tc_attach(&hook, &opts);
	if (err)
		fprintf(stderr, "Error: attaching TC egress on %s: %s\n", t->iface, strerror(-err));
out:
	xtx_tc__destroy(skel);
	return err;
}

int xtx_tc_detach(const struct xtx_target *t)
{
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XTX_TC_HANDLE, .priority = XTX_TC_PRIO);
	struct bpf_tc_hook hook;
	int err;

	tc_hook_init(&hook, t);
	err = bpf_tc_detach(&hook, &opts);
	return err == -ENOENT ? 0 : err;
}

int xtx_pins_compatible(const struct xtx_target *t, const struct xtx_load_opts *o)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	struct xtx_xdp *skel = open_configured(t, o);
	struct bpf_map *map;
	int fd, err = 0;

	if (!skel)
		return -EINVAL;
	bpf_object__for_each_map(map, skel->obj) {
		if (bpf_map__is_internal(map))
			continue;
		fd = bpf_obj_get(bpf_map__pin_path(map));
		if (fd < 0)
			continue;	/* missing: it will be created */
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
		    info.type != bpf_map__type(map) || info.key_size != bpf_map__key_size(map) ||
		    info.value_size != bpf_map__value_size(map) ||
		    info.max_entries != bpf_map__max_entries(map)) {
			fprintf(stderr, "Error: pinned map %s (%u entries of %u B) does not fit this "
				"load (%u entries of %u B); unload first, which drops the server's "
				"state\n", bpf_map__pin_path(map), info.max_entries,
				info.value_size, bpf_map__max_entries(map), bpf_map__value_size(map));
			err = -EEXIST;
		}
		close(fd);
	}
	xtx_xdp__destroy(skel);
	return err;
}

int xtx_load_attach(const struct xtx_target *t, const struct xtx_load_opts *o)
{
	enum xdp_attach_mode mode = o->mode == XTX_MODE_GENERIC ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	struct xdp_program *prog = NULL;
	struct xtx_xdp *skel;
	char errbuf[128];
	int err;

	skel = open_configured(t, o);
	if (!skel)
		return -EINVAL;
	prog = xdp_program__from_bpf_obj(skel->obj, "xdp");
	err = (int)libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		goto out;
	}
	/*
	 * libxdp tries its dispatcher first and falls back to the program alone
	 * where the kernel refuses it (freplace), which libbpf reports as a
	 * permission error: report_attachment() says so in a line, the
	 * libraries' own words are for -vv.
	 */
	xtx_log_libs_quiet(1);
	err = xdp_program__attach(prog, t->ifindex, mode, 0);
	xtx_log_libs_quiet(0);
	if (err == -EEXIST || err == -EBUSY) {
		libxdp_strerror(err, errbuf, sizeof(errbuf));
		fprintf(stderr, "Error: another XDP program is attached to %s and cannot share it "
			"(%s); detach it first\n", t->iface, errbuf);
		goto out;
	}
	if (err) {
		/*
		 * libxdp refused outright (it already falls back to a single
		 * program by itself when only its dispatcher fails): try once
		 * more without it, from a fresh object since a failed load
		 * cannot be retried.
		 */
		libxdp_strerror(err, errbuf, sizeof(errbuf));
		pr_warn("libxdp cannot attach to %s (%s); attaching with libbpf alone\n",
			t->iface, errbuf);
		xdp_program__close(prog);
		prog = NULL;
		xtx_xdp__destroy(skel);
		skel = open_configured(t, o);
		if (!skel)
			return -EINVAL;
		err = attach_plain(skel, t, o);
		if (err)
			goto out;
	}
	err = write_info(skel, o);
	if (err) {
		fprintf(stderr, "Error: writing xtx_info: %s\n", strerror(-err));
		goto out;
	}
	report_attachment(t);
	err = xtx_tc_attach(t, o);
out:
	if (err == -EPERM)
		fprintf(stderr, "Error: permission denied loading BPF (root and CAP_BPF needed)\n");
	else if (err)
		fprintf(stderr, "Error: loading xtx on %s failed: %s\n", t->iface, strerror(-err));
	/*
	 * The attachment and the pins keep program and maps alive; this
	 * process needs neither handle once they exist.
	 */
	xdp_program__close(prog);
	xtx_xdp__destroy(skel);
	return err;
}

int xtx_detach(const struct xtx_target *t)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	int err = 0, tc_err;

	mp = xdp_multiprog__get_from_ifindex(t->ifindex);
	if (libxdp_get_error(mp) || !mp)
		return xtx_tc_detach(t);
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && is_xtx(p)) {
			LIBBPF_OPTS(bpf_xdp_attach_opts, opts,
				    .old_prog_fd = xdp_program__fd(p));
			enum xdp_attach_mode m = xdp_multiprog__attach_mode(mp);
			__u32 flags = m == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;

			err = bpf_xdp_detach(t->ifindex, flags | XDP_FLAGS_REPLACE, &opts);
		}
	} else {
		for (p = xdp_multiprog__next_prog(NULL, mp); p;
		     p = xdp_multiprog__next_prog(p, mp)) {
			if (!is_xtx(p))
				continue;
			err = xdp_program__detach(p, t->ifindex,
						  xdp_multiprog__attach_mode(mp), 0);
			break;
		}
	}
	xdp_multiprog__close(mp);
	if (err)
		fprintf(stderr, "Error: detaching XDP from %s: %s\n", t->iface, strerror(-err));
	tc_err = xtx_tc_detach(t);
	if (tc_err)
		fprintf(stderr, "Error: detaching TC egress from %s: %s\n", t->iface,
			strerror(-tc_err));
	return err ?: tc_err;
}

int xtx_unpin(const struct xtx_target *t)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	d = opendir(t->pin_dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", t->pin_dir, de->d_name);
		if (unlink(path))
			pr_warn("removing %s: %s\n", path, strerror(errno));
	}
	closedir(d);
	/* the directory is this xtxd's lock: xtx_target_unlock removes it */
	if (xtx_target_locked_here(t))
		return 0;
	rmdir(t->pin_dir);
	/* the per-namespace directory goes when its last interface does */
	snprintf(path, sizeof(path), "%s/%s", XTX_PIN_ROOT, t->ns_tag);
	rmdir(path);
	return 0;
}
