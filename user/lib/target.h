/* SPDX-License-Identifier: GPL-2.0-only */
/* Where a server lives: network namespace, interface, pin directory, pidfile. */
#ifndef XTX_TARGET_H
#define XTX_TARGET_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <net/if.h>

struct xtx_target {
	char netns[64];		/* --netns NAME, or "" for the current one */
	char ns_tag[64];	/* names the namespace in paths: NAME, "init" or "netns-INODE" */
	char iface[IF_NAMESIZE];
	int ifindex;
	char pin_dir[PATH_MAX];	/* XTX_PIN_ROOT/<ns_tag>/<iface> */
	char pidfile[PATH_MAX];	/* XTX_RUN_DIR/<ns_tag>-<iface>.pid */
	char logfile[PATH_MAX];	/* XTX_RUN_DIR/<ns_tag>-<iface>.log */
	char ctl_sock[108];	/* XTX_RUN_DIR/<ns_tag>-<iface>.sock: xtxd's control channel */
};

#define XTX_RUN_DIR "/run/xtx"

/*
 * Enters netns (network namespace only: the host's bpffs stays visible, so
 * pins outlive any process), resolves the interface and fills the paths.
 * Call before creating threads: setns() moves only the calling thread.
 * The paths are filled even when the namespace or interface is missing.
 */
int xtx_target_open(struct xtx_target *t, const char *netns, const char *iface);
/* Makes sure /sys/fs/bpf is a bpffs, mounting one if it is not. */
int xtx_bpffs_ensure(void);
/* mkdir -p */
int xtx_mkdirs(const char *path, unsigned int mode);
/* Opens map NAME pinned for t; returns an fd or a negative errno. */
int xtx_target_map_fd(const struct xtx_target *t, const char *name);
struct xtx_info;
struct xtx_kv_bucket;
/* How the loaded program was configured (XTX_MAP_INFO); 0 or a negative errno. */
int xtx_target_info(const struct xtx_target *t, struct xtx_info *info);
/*
 * Maps the mmapable array map NAME (entries values of value_size bytes),
 * shared with XDP, read-write: 0 with *p and *size (for munmap), or a
 * negative errno.
 */
int xtx_target_map_array(const struct xtx_target *t, const char *name, size_t entries,
			 size_t value_size, void **p, size_t *size);
/*
 * Maps the kernel's nbuckets KV buckets, shared with XDP, read-write:
 * 0 with *kv and *size (for munmap), or a negative errno.
 */
int xtx_target_map_kv(const struct xtx_target *t, uint32_t nbuckets, struct xtx_kv_bucket **kv,
		      size_t *size);
/* Reads a pidfile; returns the pid if that process is alive, else 0. */
int xtx_pidfile_alive(const char *path);
/* True while pid runs xtxd and has not exited (a zombie has). */
bool xtx_pid_is_xtxd(int pid);
int xtx_require_root(const char *prog);

#endif /* XTX_TARGET_H */
