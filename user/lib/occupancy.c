// SPDX-License-Identifier: GPL-2.0-only
/* How full the lock table and the HADES slot table are, read from the pinned maps. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <xtx/hades.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include <xtx/maps.h>
#include <xtx/proto.h>
#include "clock.h"
#include "occupancy.h"

/* The lock lease the program runs with (the runtime map), or 0 when unknown or off. */
static __u64 lock_lease(const struct xtx_target *t)
{
	struct xtx_runtime rt;
	__u32 zero = 0;
	int fd = xtx_target_map_fd(t, XTX_MAP_RUNTIME);
	__u64 lease = 0;

	if (fd < 0)
		return 0;
	if (!bpf_map_lookup_elem(fd, &zero, &rt))
		lease = rt.lock_lease_ns;
	close(fd);
	return lease;
}

int xtx_lock_occupancy(const struct xtx_target *t, struct xtx_lock_occupancy *occ)
{
	const __u32 batch = 4096;
	__u64 lease_ns, now;
	struct xtx_lock_slot *vals;
	__u32 *keys, out_batch, n, i;
	void *in = NULL;
	int fd, err = 0;

	memset(occ, 0, sizeof(*occ));
	lease_ns = lock_lease(t);
	now = xtx_now_ns();
	fd = xtx_target_map_fd(t, XTX_MAP_LOCKS);
	if (fd < 0)
		return fd;
	keys = calloc(batch, sizeof(*keys));
	vals = calloc(batch, sizeof(*vals));
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);

		n = batch;
		err = bpf_map_lookup_batch(fd, in, &out_batch, keys, vals, &n, &opts);
		if (err && errno != ENOENT) {
			err = -errno;
			break;
		}
		for (i = 0; i < n; i++) {
			occ->slots++;
			if (!vals[i].shared && !vals[i].excl)
				continue;
			occ->held++;
			occ->shared += vals[i].shared ? 1 : 0;
			occ->exclusive += vals[i].excl ? 1 : 0;
			occ->logged += (vals[i].flags & XTX_LOCKF_LOGGED) ? 1 : 0;
			/* XDP's rule (bpf/lib/locks.h): past the lease and never logged */
			occ->reclaimable += lease_ns && !(vals[i].flags & XTX_LOCKF_LOGGED) &&
					    now > vals[i].granted_ns &&
					    now - vals[i].granted_ns > lease_ns;
		}
		if (err) {	/* ENOENT: that was the last batch */
			err = 0;
			break;
		}
		in = &out_batch;
	}
out:
	free(keys);
	free(vals);
	close(fd);
	return err;
}

int xtx_kv_occupancy(const struct xtx_target *t, struct xtx_kv_occupancy *occ)
{
	struct xtx_kv_bucket *kv;
	struct xtx_info info;
	size_t size;
	__u32 i, w;
	int err;

	memset(occ, 0, sizeof(*occ));
	err = xtx_target_info(t, &info);
	if (!err)
		err = xtx_target_map_kv(t, info.kv_buckets, &kv, &size);
	if (err)
		return err;
	occ->slots = (__u64)info.kv_buckets * XTX_KV_WAYS;
	/* racy by design: a snapshot of a live cache, as xtxctl dump's */
	for (i = 0; i < info.kv_buckets; i++) {
		for (w = 0; w < XTX_KV_WAYS; w++) {
			__u8 f = __atomic_load_n(&kv[i].flags[w], __ATOMIC_RELAXED);

			if (f & XTX_KVF_VALID) {
				occ->keys++;
				occ->in_user += !!(f & XTX_KVF_IN_USER);
			} else if (f & XTX_KVF_TOMB) {
				occ->tombs++;
			}
		}
	}
	munmap(kv, size);
	return 0;
}

int xtx_hades_occupancy(const struct xtx_target *t, struct xtx_hades_occupancy *occ)
{
	struct xtx_hades_registry *reg;
	__u32 zero = 0, i;
	int fd, err = 0;

	memset(occ, 0, sizeof(*occ));
	fd = xtx_target_map_fd(t, XTX_MAP_HADES_REG);
	if (fd < 0)
		return fd;
	/* the registry already keeps a bitmap of the slots in use: no walk needed */
	reg = calloc(1, sizeof(*reg));
	if (!reg) {
		close(fd);
		return -ENOMEM;
	}
	if (bpf_map_lookup_elem(fd, &zero, reg)) {
		err = -errno;
		goto out;
	}
	for (i = 0; i < sizeof(reg->used) / sizeof(reg->used[0]); i++)
		occ->in_use += (__u64)__builtin_popcountll(reg->used[i]);
	occ->committing = (__u64)__builtin_popcountll(reg->mask);
out:
	free(reg);
	close(fd);
	return err;
}

int xtx_hades_committing_slots(const struct xtx_target *t, __u64 *n)
{
	struct xtx_hades_registry *reg = calloc(1, sizeof(*reg));
	struct xtx_hades_slot *slot = calloc(1, sizeof(*slot));
	int rfd = xtx_target_map_fd(t, XTX_MAP_HADES_REG), sfd = xtx_target_map_fd(t, XTX_MAP_HADES);
	__u32 zero = 0, w, b, idx;
	int err = 0;

	*n = 0;
	if (rfd < 0 || sfd < 0 || !reg || !slot) {
		err = rfd < 0 ? rfd : sfd < 0 ? sfd : -ENOMEM;
		goto out;
	}
	if (bpf_map_lookup_elem(rfd, &zero, reg)) {
		err = -errno;
		goto out;
	}
	/* only the slots in use: the registry's bitmap says which */
	for (w = 0; w < sizeof(reg->used) / sizeof(reg->used[0]) && !err; w++) {
		for (b = 0; b < 64 && (reg->used[w] >> b); b++) {
			if (!((reg->used[w] >> b) & 1))
				continue;
			idx = w * 64 + b;
			if (bpf_map_lookup_elem(sfd, &idx, slot)) {
				err = errno == ENOENT ? 0 : -errno;
				break;
			}
			if (slot->owner &&
			    (slot->ctl & XTX_HADES_CTL_STATE_MASK) == XTX_HS_COMMITTING)
				(*n)++;
		}
	}
out:
	if (rfd >= 0)
		close(rfd);
	if (sfd >= 0)
		close(sfd);
	free(reg);
	free(slot);
	return err;
}

int xtx_log_undrained(const struct xtx_target *t, __u64 *n)
{
	struct xtx_log_cursor cur;
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), c;
	int fd = xtx_target_map_fd(t, XTX_MAP_LOG_CURSOR), err = 0;

	*n = 0;
	if (fd < 0)
		return fd;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	for (c = 0; !err && c < info.max_entries; c++) {
		if (bpf_map_lookup_elem(fd, &c, &cur))
			err = -errno;
		else
			*n += cur.tail - cur.head;
	}
	close(fd);
	return err;
}
