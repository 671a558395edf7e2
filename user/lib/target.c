// SPDX-License-Identifier: GPL-2.0-only
/* Resolves a server's namespace, interface and bpffs/run paths. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <bpf/bpf.h>
#include <xtx/kv.h>
#include <xtx/maps.h>
#include "log.h"
#include "target.h"

int xtx_require_root(const char *prog)
{
	if (geteuid() == 0)
		return 0;
	fprintf(stderr, "Error: %s must run as root (it loads BPF programs and maps)\n", prog);
	return -EPERM;
}

int xtx_mkdirs(const char *path, unsigned int mode)
{
	char buf[PATH_MAX];
	char *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

static int enter_netns(const char *name)
{
	char path[PATH_MAX];
	int fd, err = 0;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "Error: network namespace '%s': %s (see 'ip netns list')\n", name,
			strerror(errno));
		return err;
	}
	if (setns(fd, CLONE_NEWNET)) {
		err = -errno;
		fprintf(stderr, "Error: entering network namespace '%s': %s\n", name,
			strerror(errno));
	}
	close(fd);
	return err;
}

/* Names the current namespace for paths when no --netns was given. */
static void tag_current_netns(char *tag, size_t len)
{
	struct stat self, init;

	if (stat("/proc/self/ns/net", &self) || stat("/proc/1/ns/net", &init) ||
	    self.st_ino == init.st_ino)
		snprintf(tag, len, "init");
	else
		snprintf(tag, len, "netns-%lu", (unsigned long)self.st_ino);
}

int xtx_target_open(struct xtx_target *t, const char *netns, const char *iface)
{
	int err;

	memset(t, 0, sizeof(*t));
	if (!iface || !*iface || strlen(iface) >= sizeof(t->iface)) {
		fprintf(stderr, "Error: --iface: missing or too long interface name\n");
		return -EINVAL;
	}
	snprintf(t->iface, sizeof(t->iface), "%s", iface);
	if (netns && *netns) {
		if (strlen(netns) >= sizeof(t->netns) || strchr(netns, '/')) {
			fprintf(stderr, "Error: --netns: invalid namespace name '%s'\n", netns);
			return -EINVAL;
		}
		snprintf(t->netns, sizeof(t->netns), "%s", netns);
		snprintf(t->ns_tag, sizeof(t->ns_tag), "%s", netns);
	} else {
		tag_current_netns(t->ns_tag, sizeof(t->ns_tag));
	}
	/* Paths first: an unload must find the pins even when the netns is gone. */
	snprintf(t->pin_dir, sizeof(t->pin_dir), "%s/%s/%s", XTX_PIN_ROOT, t->ns_tag, iface);
	snprintf(t->pidfile, sizeof(t->pidfile), "%s/%s-%s.pid", XTX_RUN_DIR, t->ns_tag, iface);
	snprintf(t->logfile, sizeof(t->logfile), "%s/%s-%s.log", XTX_RUN_DIR, t->ns_tag, iface);
	snprintf(t->ctl_sock, sizeof(t->ctl_sock), "%s/%s-%s.sock", XTX_RUN_DIR, t->ns_tag, iface);
	if (t->netns[0]) {
		err = enter_netns(t->netns);
		if (err)
			return err;
	}
	t->ifindex = if_nametoindex(iface);
	if (!t->ifindex) {
		err = -errno;
		fprintf(stderr, "Error: no interface '%s' in %s network namespace\n", iface,
			t->netns[0] ? t->netns : "the current");
		return err ? err : -ENODEV;
	}
	return 0;
}

int xtx_bpffs_ensure(void)
{
	struct statfs st;

	if (!statfs("/sys/fs/bpf", &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mkdir("/sys/fs/bpf", 0700) && errno != EEXIST) {
		fprintf(stderr, "Error: /sys/fs/bpf: %s\n", strerror(errno));
		return -errno;
	}
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
		int err = -errno;

		fprintf(stderr, "Error: bpffs is not mounted at /sys/fs/bpf and mounting it failed: "
			"%s\n", strerror(errno));
		return err;
	}
	pr_info("mounted bpffs at /sys/fs/bpf\n");
	return 0;
}

int xtx_target_map_fd(const struct xtx_target *t, const char *name)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", t->pin_dir, name);
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

/*
 * True when pid runs xtxd and has not exited: a killed daemon stays a
 * zombie until reaped, and a stale pidfile may name a recycled pid.
 */
bool xtx_pid_is_xtxd(int pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* "pid (comm) state ..." */
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return false;
	return strstr(buf, "(xtxd)") != NULL;
}

int xtx_pidfile_alive(const char *path)
{
	FILE *f = fopen(path, "r");
	int pid = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &pid) != 1 || pid <= 0)
		pid = 0;
	fclose(f);
	return pid && xtx_pid_is_xtxd(pid) ? pid : 0;
}

int xtx_target_info(const struct xtx_target *t, struct xtx_info *info)
{
	__u32 zero = 0;
	int fd = xtx_target_map_fd(t, XTX_MAP_INFO), err = 0;

	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &zero, info))
		err = -errno;
	close(fd);
	return err;
}

int xtx_target_map_array(const struct xtx_target *t, const char *name, size_t entries,
			 size_t value_size, void **p, size_t *size)
{
	long page = sysconf(_SC_PAGESIZE);
	/* an mmapable array lays its values out 8-byte aligned */
	size_t len = (entries * ((value_size + 7) & ~(size_t)7) + page - 1) & ~(size_t)(page - 1);
	int fd = xtx_target_map_fd(t, name), err = 0;
	void *m;

	if (fd < 0)
		return fd;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		err = -errno;
	close(fd);
	if (err)
		return err;
	*p = m;
	*size = len;
	return 0;
}

int xtx_target_map_kv(const struct xtx_target *t, uint32_t nbuckets, struct xtx_kv_bucket **kv,
		      size_t *size)
{
	return xtx_target_map_array(t, XTX_MAP_KV, nbuckets, sizeof(**kv), (void **)kv, size);
}
