// SPDX-License-Identifier: GPL-2.0-only
/* Saves the HADES slots left committing at a stop and puts them back at the next start. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <xtx/hades.h>
#include "clock.h"
#include "durable.h"
#include "log.h"
#include "logfile.h"
#include "hades_carry.h"

#define CARRY_MAGIC	"XTXHCRY\n"
/* 2: the staged values over a slot (XTX_MAP_HADES_BIG) ride with their slots */
#define CARRY_VERSION	2

struct carry_hdr {
	char magic[8];
	uint32_t version;
	uint32_t count;		/* records that follow */
	uint32_t slot_size, exact_size;	/* the layouts they were saved with */
	/* the settings the filters' bits and the staged values were made under */
	uint32_t bf_bits, hashes, value_size, exact_on;
	uint32_t crc;		/* CRC32C of the header with crc 0, then of the records */
	uint32_t big_size;	/* the layout of a staged value over a slot */
};

static void settings_of(const struct xtx_load_opts *load, struct carry_hdr *h)
{
	h->bf_bits = load->hades_bf_bits;
	h->hashes = load->hades_hashes;
	h->value_size = load->value_size;
	h->exact_on = load->hades_exact;
}

struct carry_rec {
	struct xtx_hades_slot slot;
	struct xtx_hades_exact exact;
	uint32_t has_exact;
	uint32_t pad;
	/* big[j]: the value of staged write j when it has XTX_HSF_BIG, else zero */
	struct xtx_hades_big big[XTX_HADES_STAGE_MAX];
};

/* The maps, their sizes, and the registry, opened together. */
struct carry_maps {
	int slots_fd, reg_fd, exact_fd, big_fd;
	uint32_t nslots, nexact, nbig;
};

static uint32_t max_entries(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.max_entries;
}

static void close_maps(struct carry_maps *m)
{
	if (m->slots_fd >= 0)
		close(m->slots_fd);
	if (m->reg_fd >= 0)
		close(m->reg_fd);
	if (m->exact_fd >= 0)
		close(m->exact_fd);
	if (m->big_fd >= 0)
		close(m->big_fd);
}

static int open_maps(const struct xtx_target *t, struct carry_maps *m)
{
	m->slots_fd = xtx_target_map_fd(t, XTX_MAP_HADES);
	m->reg_fd = xtx_target_map_fd(t, XTX_MAP_HADES_REG);
	m->exact_fd = xtx_target_map_fd(t, XTX_MAP_HADES_EXACT);
	m->big_fd = xtx_target_map_fd(t, XTX_MAP_HADES_BIG);
	if (m->slots_fd < 0 || m->reg_fd < 0 || m->big_fd < 0) {
		int err = m->slots_fd < 0 ? m->slots_fd : m->reg_fd < 0 ? m->reg_fd : m->big_fd;

		close_maps(m);
		m->slots_fd = m->reg_fd = m->exact_fd = m->big_fd = -1;
		return err;
	}
	m->nslots = max_entries(m->slots_fd);
	m->nexact = m->exact_fd >= 0 ? max_entries(m->exact_fd) : 0;
	m->nbig = max_entries(m->big_fd);
	return 0;
}

/* Past its intend-to-commit: staged writes, or a reader's Ack the resolver may ask about. */
static bool committing(const struct xtx_hades_slot *s)
{
	return s->owner && (s->ctl & XTX_HADES_CTL_STATE_MASK) == XTX_HS_COMMITTING;
}

/*
 * The values of slot idx's staged writes over a slot, between the maps and
 * a record: save copies them out of XTX_MAP_HADES_BIG, else into it.
 */
static int big_values(const struct carry_maps *m, uint32_t idx, struct carry_rec *r, bool save)
{
	uint32_t j, k, n = r->slot.nstaged < XTX_HADES_STAGE_MAX ? r->slot.nstaged :
								  XTX_HADES_STAGE_MAX;

	for (j = 0; j < n; j++) {
		if (!(r->slot.staged[j].flags & XTX_HSF_BIG))
			continue;
		k = xtx_hades_big_idx(idx, j);
		if (k >= m->nbig)
			return -ENOSPC;
		if (save ? bpf_map_lookup_elem(m->big_fd, &k, &r->big[j]) :
			   bpf_map_update_elem(m->big_fd, &k, &r->big[j], BPF_ANY))
			return -errno;
	}
	return 0;
}

static int write_file(int dirfd, const struct xtx_load_opts *load, struct carry_rec *recs,
		      uint32_t n)
{
	struct carry_hdr h = { .magic = CARRY_MAGIC, .version = CARRY_VERSION, .count = n,
			       .slot_size = sizeof(recs->slot), .exact_size = sizeof(recs->exact),
			       .big_size = sizeof(recs->big[0]) };
	size_t len = (size_t)n * sizeof(*recs);
	struct iovec iov[2] = { { &h, sizeof(h) }, { recs, len } };

	settings_of(load, &h);
	h.crc = xtx_crc32c(xtx_crc32c(0, &h, sizeof(h)), recs, len);
	return xtx_replace_file(dirfd, XTXD_HADES_CARRY_FILE, iov, 2);
}

int xtxd_hades_carry_save(const struct xtx_target *t, const struct xtx_load_opts *load,
			  const char *dir)
{
	struct carry_maps m;
	struct carry_rec *recs = NULL, *r = NULL;
	uint32_t idx, n = 0, cap = 0;
	int dirfd = -1, err;

	err = open_maps(t, &m);
	if (err == -ENOENT)
		return 0;	/* no maps pinned: nothing is held */
	if (err)
		goto out;
	if (!m.nslots)
		err = -EIO;
	/* one record read ahead: a committing slot keeps it, any other overwrites it */
	r = calloc(1, sizeof(*r));
	if (!r)
		err = -ENOMEM;
	for (idx = 0; !err && idx < m.nslots; idx++) {
		memset(r, 0, sizeof(*r));
		if (bpf_map_lookup_elem(m.slots_fd, &idx, &r->slot)) {
			err = -errno;
			break;
		}
		if (!committing(&r->slot))
			continue;
		r->has_exact = idx < m.nexact && !bpf_map_lookup_elem(m.exact_fd, &idx, &r->exact);
		err = big_values(&m, idx, r, true);
		if (err)
			break;
		if (n == cap) {
			struct carry_rec *p = realloc(recs, (cap ? cap * 2 : 16) * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				goto out;
			}
			recs = p;
			cap = cap ? cap * 2 : 16;
		}
		recs[n++] = *r;
	}
	if (err)
		goto out;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		/* no data directory, nothing to keep: fine; something to keep: not */
		err = n ? -errno : 0;
		goto out;
	}
	if (n) {
		err = write_file(dirfd, load, recs, n);
		if (!err)
			pr_info("stop: %u HADES transactions committing here saved to %s/%s\n", n,
				dir, XTXD_HADES_CARRY_FILE);
	} else if (!unlinkat(dirfd, XTXD_HADES_CARRY_FILE, 0)) {
		fsync(dirfd);
	}
out:
	if (err)
		fprintf(stderr, "Error: saving the HADES transactions committing here: %s\n",
			strerror(-err));
	if (dirfd >= 0)
		close(dirfd);
	free(recs);
	free(r);
	close_maps(&m);
	return err;
}

/* Reads and checks the file: the records and their count, or a negative errno (-ENOENT: none). */
static int read_file(int dirfd, const struct xtx_load_opts *load, struct carry_rec **recs,
		     uint32_t *n)
{
	struct carry_hdr h, now;
	uint32_t crc;
	size_t len;
	int fd, err = 0;

	fd = openat(dirfd, XTXD_HADES_CARRY_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || memcmp(h.magic, CARRY_MAGIC, 8)) {
		close(fd);
		return -EBADMSG;
	}
	if (h.version != CARRY_VERSION) {
		fprintf(stderr, "Error: recovery: %s is of format %u; this xtxd reads format %u "
			"only: start the xtxd that stopped with it\n", XTXD_HADES_CARRY_FILE,
			h.version, CARRY_VERSION);
		close(fd);
		return -EPROTO;
	}
	if (h.slot_size != sizeof((*recs)->slot) || h.exact_size != sizeof((*recs)->exact) ||
	    h.big_size != sizeof((*recs)->big[0]) || h.count > XTX_HADES_SLOTS_MAX) {
		close(fd);
		return -EBADMSG;
	}
	settings_of(load, &now);
	if (h.bf_bits != now.bf_bits || h.hashes != now.hashes || h.value_size > now.value_size ||
	    h.exact_on != now.exact_on) {
		fprintf(stderr, "Error: recovery: %u HADES transactions committing at the stop were "
			"saved under --hades-bf-bits %u --hades-hashes %u --value-size %u%s: start "
			"with those\n", h.count, h.bf_bits, h.hashes, h.value_size,
			h.exact_on ? " --hades-exact" : "");
		close(fd);
		return -EINVAL;
	}
	len = (size_t)h.count * sizeof(**recs);
	*recs = malloc(len ? len : 1);
	if (!*recs) {
		close(fd);
		return -ENOMEM;
	}
	if (read(fd, *recs, len) != (ssize_t)len)
		err = -EBADMSG;
	close(fd);
	crc = h.crc;
	h.crc = 0;
	if (!err && xtx_crc32c(xtx_crc32c(0, &h, sizeof(h)), *recs, len) != crc)
		err = -EBADMSG;
	*n = h.count;
	return err;
}

/* Puts one saved slot back: a free slot of its probe sequence, and a registry entry if it had one. */
static int put_back(const struct carry_maps *m, struct xtx_hades_registry *reg,
		    struct carry_rec *r)
{
	uint32_t home = xtx_hades_home(r->slot.owner, m->nslots), p, idx, i;
	struct xtx_hades_slot cur;
	int err;

	uint32_t free_idx = UINT32_MAX;

	for (p = 0; p < XTX_HADES_PROBES && p < m->nslots; p++) {
		idx = (home + p) % m->nslots;
		if (bpf_map_lookup_elem(m->slots_fd, &idx, &cur))
			return -errno;
		if (cur.owner == r->slot.owner)
			return 0;	/* there already (maps reused): once is enough */
		if (!cur.owner && free_idx == UINT32_MAX)
			free_idx = idx;
	}
	if (free_idx == UINT32_MAX)
		return -ENOSPC;
	idx = free_idx;
	if (r->slot.reg_pos) {
		for (i = 0; i < XTX_HADES_COMMITTING_MAX && reg->slot[i]; i++)
			;
		if (i == XTX_HADES_COMMITTING_MAX)
			return -ENOSPC;
		reg->slot[i] = idx + 1;
		reg->mask |= 1ull << i;
		r->slot.reg_pos = i + 1;
	}
	reg->used[idx / 64] |= 1ull << (idx % 64);
	/* the lease and the resolver's wait count from now: the stop took no time of theirs */
	r->slot.touched_ns = xtx_now_ns();
	/* the values before the slot that names them, at the entries of its new index */
	err = big_values(m, idx, r, false);
	if (err)
		return err;
	if (bpf_map_update_elem(m->slots_fd, &idx, &r->slot, BPF_ANY))
		return -errno;
	if (r->has_exact && idx < m->nexact &&
	    bpf_map_update_elem(m->exact_fd, &idx, &r->exact, BPF_ANY))
		return -errno;
	return 0;
}

int xtxd_hades_carry_restore(const struct xtx_target *t, const struct xtx_load_opts *load,
			     const char *dir)
{
	struct xtx_hades_registry reg;
	struct carry_rec *recs = NULL;
	struct carry_maps m = { -1, -1, -1, -1, 0, 0, 0 };
	uint32_t n = 0, i, zero = 0;
	int dirfd, err;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? 0 : -errno;
	err = read_file(dirfd, load, &recs, &n);
	if (err == -ENOENT) {
		err = 0;
		goto out;
	}
	if (!err)
		err = open_maps(t, &m);
	if (!err && bpf_map_lookup_elem(m.reg_fd, &zero, &reg))
		err = -errno;
	for (i = 0; !err && i < n; i++) {
		err = put_back(&m, &reg, &recs[i]);
		if (err == -ENOSPC)
			fprintf(stderr, "Error: recovery: no room for HADES transaction %#llx "
				"(--hades-slots smaller than at the stop?)\n",
				(unsigned long long)recs[i].slot.owner);
	}
	if (!err && bpf_map_update_elem(m.reg_fd, &zero, &reg, BPF_ANY))
		err = -errno;
	if (!err)
		pr_info("recovery: %u HADES transactions committing at the stop put back\n", n);
out:
	if (err)
		fprintf(stderr, "Error: recovery: putting back the HADES transactions committing "
			"at the stop (%s/%s): %s\n", dir, XTXD_HADES_CARRY_FILE, strerror(-err));
	close_maps(&m);
	close(dirfd);
	free(recs);
	return err;
}

void xtxd_hades_carry_done(const char *dir)
{
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0)
		return;
	if (!unlinkat(dirfd, XTXD_HADES_CARRY_FILE, 0))
		fsync(dirfd);
	close(dirfd);
}
