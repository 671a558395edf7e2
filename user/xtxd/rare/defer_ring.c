// SPDX-License-Identifier: GPL-2.0-only
/* Reads XDP's defer records from the mmap-ed ring and rebuilds the executor's request. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/kv.h>
#include <xtx/msg.h>
#include "defer_ring.h"

int xtxd_defer_ring_open(struct xtxd_defer_ring *r, const struct xtx_target *t)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);
	void *p;
	int fd, err;

	memset(r, 0, sizeof(*r));
	fd = xtx_target_map_fd(t, XTX_MAP_DEFER);
	if (fd < 0) {
		fprintf(stderr, "Error: rare path: opening %s: %s\n", XTX_MAP_DEFER, strerror(-fd));
		return fd;
	}
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		err = -errno;
		close(fd);
		return err;
	}
	/* array values are laid out back to back, each rounded up to 8 bytes */
	r->value_size = (info.value_size + 7) & ~7u;
	r->entries = info.max_entries;
	r->size = ((size_t)r->value_size * r->entries + page - 1) & ~(size_t)(page - 1);
	p = mmap(NULL, r->size, PROT_READ, MAP_SHARED, fd, 0);
	err = p == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err) {
		fprintf(stderr, "Error: rare path: mapping %s: %s\n", XTX_MAP_DEFER, strerror(-err));
		return err;
	}
	r->base = p;
	return 0;
}

void xtxd_defer_ring_close(struct xtxd_defer_ring *r)
{
	if (r->base)
		munmap((void *)r->base, r->size);
	r->base = NULL;
}

int xtxd_defer_ring_complete(const struct xtxd_defer_ring *r, uint8_t *buf, size_t len,
			     size_t cap)
{
	struct xtx_hdr *h = (struct xtx_hdr *)buf;
	const struct xtx_defer_record *slot;
	struct xtx_defer_record rec;
	size_t ops_end, tlen;
	__u32 ticket;

	if (len < sizeof(*h) || !h->reserved || h->nops > XTX_MAX_OPS)
		return -1;
	ticket = h->reserved - 1;
	ops_end = xtx_msg_len(h->nops);
	/* header, ops and the value area XDP checked, as long as XDP saw it */
	if (ticket >= r->entries || len < ops_end || len > XTX_MAX_REQUEST)
		return -1;
	slot = (const struct xtx_defer_record *)(r->base + (size_t)ticket * r->value_size);
	/* copy, then check it still names this packet: XDP may reuse the slot meanwhile */
	memcpy(&rec, slot, sizeof(rec));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (rec.client_id != h->client_id || rec.req_id != h->req_id || rec.body_len != len ||
	    slot->client_id != h->client_id || slot->req_id != h->req_id ||
	    rec.t.magic != XTX_DEFER_MAGIC || !rec.t.count || rec.t.count > XTX_MAX_DEFERRED)
		return -1;
	tlen = XTX_DEFER_TRAILER_LEN(rec.t.count);
	if (len + tlen > cap)
		return -1;
	memcpy(buf + len, &rec.t, tlen);
	h->reserved = 0;
	return (int)(len + tlen);
}
