// SPDX-License-Identifier: GPL-2.0-only
/* Rebuilds the KV store at start from the newest snapshot and the log records after it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <urcu.h>
#include <xtx/hash.h>
#include <xtx/kv.h>
#include <xtx/log.h>
#include <xtx/maps.h>
#include "attach.h"
#include "clock.h"
#include "cluster_record.h"
#include "store/load.h"
#include "log.h"
#include "logfile.h"
#include "logrec.h"
#include "progress.h"
#include "store/overflow.h"
#include "recover.h"
#include "decisions.h"
#include "hades_carry.h"
#include "txn_records.h"
#include "undecided.h"
#include "snapshot.h"

#define DROP_ALL_PPM	1000000u

static __u32 saved_drop_ppm;
static bool held;
static bool created_pin;	/* the hold pinned a runtime map of its own */

static int runtime_rw(const struct xtx_target *t, struct xtx_runtime *rt, bool write)
{
	__u32 zero = 0;
	int fd, err = 0;

	fd = xtx_target_map_fd(t, XTX_MAP_RUNTIME);
	if (fd < 0)
		return fd;
	if (write ? bpf_map_update_elem(fd, &zero, rt, BPF_ANY) :
		    bpf_map_lookup_elem(fd, &zero, rt))
		err = -errno;
	close(fd);
	return err;
}

/*
 * A freshly loaded program must hold requests from the moment it is
 * attached: the runtime map is created and pinned here, with the hold set,
 * before the load, which reuses the pin (and keeps the hold, since it
 * keeps every knob of a reused runtime map).
 */
static int create_held_runtime(const struct xtx_target *t)
{
	struct xtx_runtime rt = { .drop_request_ppm = DROP_ALL_PPM };
	char path[PATH_MAX];
	__u32 zero = 0;
	int fd, err;

	err = xtx_mkdirs(t->pin_dir, 0700);
	if (err)
		return err;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, XTX_MAP_RUNTIME, sizeof(__u32), sizeof(rt), 1,
			    NULL);
	if (fd < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", t->pin_dir, XTX_MAP_RUNTIME);
	err = bpf_map_update_elem(fd, &zero, &rt, BPF_ANY) || bpf_obj_pin(fd, path) ? -errno : 0;
	close(fd);
	return err;
}

int xtxd_recover_hold(const struct xtx_target *t)
{
	struct xtx_runtime rt;
	int err;

	err = runtime_rw(t, &rt, false);
	if (err == -ENOENT) {
		saved_drop_ppm = 0;
		err = create_held_runtime(t);
		created_pin = !err;
	} else if (!err) {
		/* a hold left by an xtxd that died while recovering is not a user's knob */
		saved_drop_ppm = rt.drop_request_ppm == DROP_ALL_PPM ? 0 : rt.drop_request_ppm;
		rt.drop_request_ppm = DROP_ALL_PPM;
		err = runtime_rw(t, &rt, true);
	}
	if (err) {
		fprintf(stderr, "Error: recovery: holding requests (%s): %s\n", XTX_MAP_RUNTIME,
			strerror(-err));
		return err;
	}
	held = true;
	return 0;
}

void xtxd_recover_hold_abandon(const struct xtx_target *t)
{
	char path[PATH_MAX];

	if (created_pin && !xtx_pins_exist(t)) {
		snprintf(path, sizeof(path), "%s/%s", t->pin_dir, XTX_MAP_RUNTIME);
		unlink(path);
		rmdir(t->pin_dir);
	} else {
		xtxd_recover_release(t);
	}
	created_pin = false;
	held = false;
}

void xtxd_recover_release(const struct xtx_target *t)
{
	struct xtx_runtime rt;
	int err;

	if (!held)
		return;
	err = runtime_rw(t, &rt, false);
	if (!err) {
		rt.drop_request_ppm = saved_drop_ppm;
		err = runtime_rw(t, &rt, true);
	}
	if (err)
		pr_warn("Error: recovery: letting requests in again (%s): %s\n", XTX_MAP_RUNTIME,
			strerror(-err));
	held = false;
}

static int hold_fd = -1;

int xtxd_hold_prepare(const struct xtx_target *t)
{
	if (hold_fd >= 0)
		return 0;
	hold_fd = xtx_target_map_fd(t, XTX_MAP_RUNTIME);
	return hold_fd < 0 ? hold_fd : 0;
}

int xtxd_hold_requests(void)
{
	struct xtx_runtime rt;
	__u32 zero = 0;

	if (hold_fd < 0)
		return -EBADF;
	if (bpf_map_lookup_elem(hold_fd, &zero, &rt))
		return -errno;
	rt.drop_request_ppm = DROP_ALL_PPM;
	return bpf_map_update_elem(hold_fd, &zero, &rt, BPF_ANY) ? -errno : 0;
}

/* ---- the keys being rebuilt: (table, key) -> newest version seen ---- */

struct rkey {
	uint64_t key;
	uint64_t version;
	uint8_t table;
	uint8_t used;
	uint8_t deleted;	/* the newest record deletes it */
	uint16_t vlen;
	uint8_t value[XTX_VALUE_INLINE];
	uint8_t *big;		/* vlen > XTX_VALUE_INLINE: the value (malloc'd), not value[] */
};

struct rmap {
	struct rkey *k;
	size_t cap, n;		/* cap: a power of two */
	uint64_t floor;		/* every bucket's floor rises to it (XTX_SNAP_FLOOR_TABLE) */
};

static struct rkey *rmap_slot(struct rmap *m, uint8_t table, uint64_t key)
{
	size_t i = xtx_hash(table, key) & (m->cap - 1);

	while (m->k[i].used && (m->k[i].key != key || m->k[i].table != table))
		i = (i + 1) & (m->cap - 1);
	return &m->k[i];
}

static int rmap_grow(struct rmap *m)
{
	struct rmap nm = { .cap = m->cap ? m->cap * 2 : 4096 };
	size_t i;

	nm.k = calloc(nm.cap, sizeof(*nm.k));
	if (!nm.k)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++)
		if (m->k[i].used)
			*rmap_slot(&nm, m->k[i].table, m->k[i].key) = m->k[i];
	nm.n = m->n;
	free(m->k);
	*m = nm;
	return 0;
}

/* Highest version wins; 1 applied, 0 older than what we hold, or -ENOMEM. */
static int rmap_apply(struct rmap *m, uint8_t table, uint64_t key, uint64_t version,
		      bool deleted, uint16_t vlen, const uint8_t *value)
{
	uint8_t *big = NULL;
	struct rkey *k;

	if ((m->n + 1) * 2 > m->cap && rmap_grow(m))
		return -ENOMEM;
	k = rmap_slot(m, table, key);
	if (k->used && k->version >= version)
		return 0;
	if (vlen > XTX_VALUE_MAX)
		vlen = XTX_VALUE_MAX;
	/* most values fit the key's slot: only big ones cost an allocation */
	if (!deleted && vlen > XTX_VALUE_INLINE) {
		big = malloc(vlen);
		if (!big)
			return -ENOMEM;
		memcpy(big, value, vlen);
	}
	if (!k->used)
		m->n++;
	free(k->big);
	memset(k, 0, sizeof(*k));
	k->used = 1;
	k->key = key;
	k->table = table;
	k->version = version;
	k->deleted = deleted;
	if (!deleted) {
		k->vlen = vlen;
		if (big)
			k->big = big;
		else
			memcpy(k->value, value, vlen);
	}
	return 1;
}

/* The value of a recovered key. */
static const uint8_t *rkey_value(const struct rkey *k)
{
	return k->big ? k->big : k->value;
}

static void rmap_free(struct rmap *m)
{
	size_t i;

	for (i = 0; i < m->cap; i++)
		free(m->k[i].big);
	free(m->k);
	memset(m, 0, sizeof(*m));
}

/* ---- the snapshot ---- */

struct snap_info {
	bool have;
	char name[64];
	struct xtx_snap_hdr h;
	struct xtx_snap_pos *pos;
	struct xtx_log_entry *carry;	/* version 3: the records it carries */
	size_t ncarry;
};

static int newest_snapshot(int dirfd, struct snap_info *si)
{
	uint32_t best = 0, n;
	struct dirent *de;
	DIR *d;

	d = xtx_opendir_at(dirfd);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		/* a snapshot that never got its name: it was being written when we stopped */
		if (len > 10 && !strncmp(de->d_name, "snapshot-", 9) &&
		    !strcmp(de->d_name + len - 4, ".tmp")) {
			unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		if (xtxd_snapshot_name_num(de->d_name, &n) && (!si->have || n > best)) {
			best = n;
			si->have = true;
			snprintf(si->name, sizeof(si->name), "%s", de->d_name);
		}
	}
	closedir(d);
	return 0;
}

/*
 * Version 3: the carried entries that follow the records (f is there),
 * then their trailer, the file's last bytes: into si.  0, -EBADMSG with
 * *what, or a negative errno.
 */
static int read_carry(FILE *f, struct snap_info *si, const char **what)
{
	struct xtx_snap_carry tr, again;
	long off = ftell(f);
	struct stat st;
	uint32_t crc;

	if (off < 0 || fstat(fileno(f), &st))
		return -errno;
	if (st.st_size < off + (off_t)sizeof(tr) ||
	    pread(fileno(f), &tr, sizeof(tr), st.st_size - (off_t)sizeof(tr)) != sizeof(tr) ||
	    memcmp(tr.magic, XTX_SNAP_CARRY_MAGIC, sizeof(tr.magic)) || tr.off != (uint64_t)off ||
	    tr.n != (uint64_t)(st.st_size - off - (off_t)sizeof(tr)) / sizeof(*si->carry) ||
	    (st.st_size - off - (off_t)sizeof(tr)) % sizeof(*si->carry)) {
		*what = "its carried records are not where its trailer says";
		return -EBADMSG;
	}
	si->carry = malloc((tr.n ? tr.n : 1) * sizeof(*si->carry));
	if (!si->carry)
		return -ENOMEM;
	if ((tr.n && fread(si->carry, sizeof(*si->carry), tr.n, f) != tr.n) ||
	    fread(&again, sizeof(again), 1, f) != 1 || memcmp(&again, &tr, sizeof(tr))) {
		*what = "its carried records end early";
		return -EBADMSG;
	}
	crc = xtx_crc32c(0, si->carry, tr.n * sizeof(*si->carry));
	if (xtx_crc32c(crc, &tr, offsetof(struct xtx_snap_carry, crc)) != tr.crc) {
		*what = "its carried records fail their CRC";
		return -EBADMSG;
	}
	si->ncarry = tr.n;
	return 0;
}

/*
 * Reads and checks the snapshot whole into m; 0 or a negative errno after
 * printing why.  Version 1 (values of up to XTX_VALUE_INLINE bytes) is
 * read too.
 */
/* How far a long recovery is, on stderr (make load's terminal): one step at a time. */
static struct xtx_progress prog;
/* keys put back per xtxd_load_items() call */
#define RECOVER_SLICE	(1u << 16)

static int load_snapshot(int dirfd, const char *dir, struct snap_info *si, struct rmap *m)
{
	struct xtx_snap_hdr *h = &si->h;
	uint8_t value[XTX_VALUE_MAX];
	const char *what = NULL;
	struct xtx_snap_rec r;
	FILE *f = NULL;
	uint64_t i;
	uint32_t crc;
	size_t tn;
	int fd, err = 0;

	fd = openat(dirfd, si->name, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		err = -errno;
		fprintf(stderr, "Error: recovery: opening %s/%s: %s\n", dir, si->name,
			strerror(errno));
		goto out;
	}
	fd = -1;
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	if (fread(h, sizeof(*h), 1, f) != 1 ||
	    memcmp(h->magic, XTX_SNAP_MAGIC, sizeof(h->magic)) ||
	    (h->version != XTX_SNAP_VERSION && h->version != XTX_SNAP_VERSION_NOCARRY &&
	     h->version != XTX_SNAP_VERSION_INLINE) ||
	    h->rec_size != sizeof(struct xtx_snap_rec) || !h->ncpu || h->ncpu > 65536) {
		what = h->version > XTX_SNAP_VERSION ? "a newer format than this xtxd reads" :
		       "bad header";
		goto bad;
	}
	si->pos = calloc(h->ncpu, sizeof(*si->pos));
	if (!si->pos) {
		err = -ENOMEM;
		goto out;
	}
	if (fread(si->pos, sizeof(*si->pos), h->ncpu, f) != h->ncpu) {
		what = "short header";
		goto bad;
	}
	crc = xtx_crc32c(0, h, offsetof(struct xtx_snap_hdr, crc));
	crc = xtx_crc32c(crc, si->pos, sizeof(*si->pos) * h->ncpu);
	if (crc != h->crc) {
		what = "header fails its CRC";
		goto bad;
	}
	xtx_progress_start(&prog, "recovery: reading the snapshot", "keys", h->count);
	for (i = 0; i < h->count; i++) {
		uint32_t want;
		uint16_t vlen;

		if (!(i & 0xffff))
			xtx_progress_tick(&prog, i);

		if (fread(&r, sizeof(r), 1, f) != 1) {
			what = "size does not match its record count";
			goto bad;
		}
		vlen = h->version == XTX_SNAP_VERSION_INLINE ? r.vlen_inline : r.vlen;
		if (vlen > XTX_VALUE_MAX ||
		    (h->version == XTX_SNAP_VERSION_INLINE && (r.vlen || vlen > XTX_VALUE_INLINE))) {
			what = "a record's value length is out of range";
			goto bad;
		}
		tn = h->version != XTX_SNAP_VERSION_INLINE ? xtx_snap_tail_size(vlen) : 0;
		memset(value, 0, sizeof(value));
		if (tn && fread(value + XTX_VALUE_INLINE, tn, 1, f) != 1) {
			what = "size does not match its record count";
			goto bad;
		}
		want = r.crc;
		r.crc = 0;
		if (xtx_crc32c(xtx_crc32c(0, &r, sizeof(r)), value + XTX_VALUE_INLINE, tn) != want) {
			fprintf(stderr, "Error: recovery: %s/%s: record %llu fails its CRC: the "
				"snapshot is damaged; not starting (move it away and restart to "
				"recover from what is left, or use --fresh)\n", dir, si->name,
				(unsigned long long)i);
			err = -EBADMSG;
			goto out;
		}
		if (r.table == XTX_SNAP_FLOOR_TABLE) {
			if (r.version > m->floor)
				m->floor = r.version;
			continue;
		}
		memcpy(value, r.value, XTX_VALUE_INLINE);
		err = rmap_apply(m, r.table, r.key, r.version, false, vlen, value);
		if (err < 0)
			goto out;
		err = 0;
	}
	xtx_progress_end(&prog, h->count);
	if (h->version == XTX_SNAP_VERSION) {
		err = read_carry(f, si, &what);
		if (err == -EBADMSG)
			goto bad;
		if (err)
			goto out;
	}
	if (fgetc(f) != EOF) {
		what = "size does not match its record count";
		goto bad;
	}
	if (ferror(f)) {
		err = -EIO;
		fprintf(stderr, "Error: recovery: reading %s/%s: %s\n", dir, si->name,
			strerror(EIO));
	}
	goto out;
bad:
	if (f && ferror(f)) {
		err = -EIO;
		fprintf(stderr, "Error: recovery: reading %s/%s: %s\n", dir, si->name,
			strerror(EIO));
		goto out;
	}
	fprintf(stderr, "Error: recovery: %s/%s: %s: the snapshot is damaged; not starting (move "
		"it away and restart to recover from what is left, or use --fresh)\n", dir,
		si->name, what);
	err = -EBADMSG;
out:
	if (f)
		fclose(f);
	else if (fd >= 0)
		close(fd);
	return err;
}

/* ---- the logs ---- */

/* Transactions logged on several replicas, by txn: see xtxd_decided_apply(). */
static struct xtxd_txns pending;
/*
 * The transactions commit marks name (XTX_LOGF_COMMITTED), in any order:
 * a mark may sit in another CPU's log than its records, read before them.
 * Kept apart from pending, since single-replica transactions have marks too.
 */
static struct {
	uint64_t *v;
	size_t n, cap;
	bool sorted;
} marks;

/*
 * A record of a multi-replica transaction into pending; logged_ns: when it
 * was logged at the earliest (its segment's creation, CLOCK_REALTIME).
 * The transaction's first_ns keeps the earliest of its records'.
 */
static int pend(const struct xtx_log_write *w, uint64_t logged_ns)
{
	struct xtxd_txn *x;
	int err = xtxd_txns_add(&pending, w, logged_ns);

	if (err < 0)
		return err;
	x = xtxd_txns_get(&pending, w->e.txn, false, 0);
	if (x && logged_ns < x->first_ns)
		x->first_ns = logged_ns;
	return err;
}

static int note_mark(uint64_t txn)
{
	if (marks.n == marks.cap) {
		size_t cap = marks.cap ? marks.cap * 2 : 1024;
		uint64_t *v = realloc(marks.v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		marks.v = v;
		marks.cap = cap;
	}
	marks.v[marks.n++] = txn;
	marks.sorted = false;
	return 0;
}

struct replay_counts {
	uint64_t segs, skipped_segs, records, covered, applied, older, deletes, cut_bytes;
	uint64_t carried;	/* writes the snapshot carried */
	uint64_t undecided;	/* records of transactions not (yet) decided committed */
	uint64_t held_txns;	/* complete here but undecided: their keys held (undecided.h) */
	uint64_t held_keys, held_shared;	/* keys locked for them, and slots taken already */
	uint64_t marks;		/* commit marks read */
	uint64_t unresolved;	/* complete, unmarked, replayed: no resolver runs here */
	uint64_t held_old;	/* held, logged longer ago than the others may remember */
	uint64_t cut_short;	/* big writes whose continuations a crash lost: not replayed */
};

/* One CPU's log as it is read, segment after segment: a big write may span two. */
struct replay_cpu {
	struct xtx_logrec rec;
	struct xtx_logfile_hdr prev;	/* the header of the segment read before */
	bool have_prev;
};

/*
 * A big write whose continuations never reached the disk: the ring that
 * held them is gone (its segment ends and the log goes on in another ring
 * incarnation, or ends).  As a torn record it was never wholly logged:
 * not replayed.
 */
static void drop_cut_short(struct replay_cpu *rc, const char *name, struct replay_counts *n)
{
	if (!xtx_logrec_partial(&rc->rec))
		return;
	pr_warn("recovery: %s: a big write (seq %llu, txn %#llx) ends without %u of its %u "
		"continuations: cut short by a crash; not replayed\n", name,
		(unsigned long long)rc->rec.w.e.seq, (unsigned long long)rc->rec.w.e.txn,
		rc->rec.want - rc->rec.got, rc->rec.want);
	n->cut_short++;
	xtx_logrec_reset(&rc->rec);
}

/*
 * Cuts the torn tail (end..torn_end) of a CPU's last segment: a crash tore
 * it, nobody was told it was logged.  A preallocated segment has it zeroed.
 */
static int cut_tail(int dirfd, const char *dir, const char *name, uint32_t version, uint64_t end,
		    uint64_t torn_end)
{
	int fd, err;

	fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
	err = fd < 0 ? -errno : xtx_logfile_cut(fd, version, end, torn_end);
	if (fd >= 0)
		close(fd);
	if (err) {
		fprintf(stderr, "Error: recovery: cutting the torn tail of %s/%s: %s\n", dir, name,
			strerror(-err));
		return err;
	}
	pr_warn("recovery: %s: cut a torn last record (%llu bytes at offset %llu); not "
		"replayed\n", name, (unsigned long long)(torn_end - end), (unsigned long long)end);
	return 0;
}

static int replay_seg(int dirfd, const char *dir, const struct xtx_logseg *s, bool last,
		      const struct snap_info *si, struct rmap *m, struct replay_counts *n,
		      struct replay_cpu *rc)
{
	const struct xtx_snap_pos *pos = si->have && s->cpu < si->h.ncpu ? &si->pos[s->cpu] : NULL;
	const struct xtx_log_write *w = &rc->rec.w;
	struct xtx_log_epoch sep = {};
	struct xtx_log_entry e;
	struct xtx_logr r;
	bool same_ring;
	int err, res;

	if (pos && s->seg < pos->seg_from) {
		n->skipped_segs++;	/* wholly in the snapshot */
		return 0;
	}
	err = xtx_logr_open(&r, dirfd, s->name);
	if (err) {
		fprintf(stderr, "Error: recovery: opening %s/%s: %s\n", dir, s->name,
			strerror(-err));
		return err;
	}
	n->segs++;
	/* a write goes on in the next segment of its ring only, at the next seq */
	if (xtx_logrec_partial(&rc->rec) &&
	    (r.status != XTX_LOGR_OK || !rc->have_prev ||
	     rc->prev.map_id != r.hdr.map_id ||
	     memcmp(rc->prev.boot_id, r.hdr.boot_id, sizeof(r.hdr.boot_id)) ||
	     r.hdr.first_seq != w->e.seq + 1 + rc->rec.got))
		drop_cut_short(rc, s->name, n);
	rc->prev = r.hdr;
	rc->have_prev = r.status == XTX_LOGR_OK;
	if (si->have) {
		memcpy(sep.boot_id, si->h.boot_id, sizeof(sep.boot_id));
		sep.map_id = si->h.map_id;
	}
	same_ring = pos && r.status == XTX_LOGR_OK && xtx_log_epoch_eq(&sep, &r.hdr);
	while (xtx_logr_next(&r, &e) == 1) {
		if (!(n->records++ & 0xffff))
			xtx_progress_tick(&prog, n->records);
		/*
		 * The snapshot's ring restarted at 0 elsewhere: only its seqs
		 * compare.  Its position is where a write starts (XDP appends a
		 * write's entries at once), so a write is covered whole or not.
		 */
		if (same_ring && e.seq < pos->seq && !xtx_logrec_partial(&rc->rec)) {
			n->covered++;
			continue;
		}
		res = xtx_logrec_feed(&rc->rec, &e);
		if (res == XTX_LOGREC_MORE)
			continue;
		if (res == XTX_LOGREC_DAMAGED) {
			fprintf(stderr, "Error: recovery: %s/%s: at seq %llu: %s: the log is "
				"damaged; not starting (the store would be wrong)\n", dir, s->name,
				(unsigned long long)e.seq, rc->rec.why);
			err = -EBADMSG;
			goto out;
		}
		/*
		 * several replicas: applied only once decided (xtxd_decided_apply);
		 * a participant list is no write, only part of its record, and a
		 * commit mark only says it was decided committed
		 */
		if (xtx_log_is_mark(&w->e)) {
			n->marks++;
			err = note_mark(w->e.txn);
			if (err < 0)
				goto out;
			continue;
		}
		if (xtx_log_is_multi(&w->e)) {
			err = pend(w, r.hdr.created_ns);
			if (err < 0)
				goto out;
			continue;
		}
		err = rmap_apply(m, w->e.table, w->e.key, w->e.version,
				 w->e.flags & XTX_LOGF_DELETE, w->vlen, w->value);
		if (err < 0)
			goto out;
		if (err) {
			n->applied++;
			if (w->e.flags & XTX_LOGF_DELETE)
				n->deletes++;
		} else {
			n->older++;
		}
	}
	err = 0;
	switch (r.status) {
	case XTX_LOGR_OK:
		break;
	case XTX_LOGR_TORN:
		if (last) {
			/* a big write the torn record belonged to was never whole either */
			drop_cut_short(rc, s->name, n);
			n->cut_bytes += r.torn_end - r.off;
			err = cut_tail(dirfd, dir, s->name, r.hdr.version, r.off, r.torn_end);
			break;
		}
		/* a later segment exists, so this one was complete once */
		__attribute__((fallthrough));
	case XTX_LOGR_BAD_CRC:
	case XTX_LOGR_BAD_SEQ:
		fprintf(stderr, "Error: recovery: %s/%s: %s at offset %llu after %llu good "
			"records: the log is damaged before its end; not starting (the store "
			"would be wrong)\n", dir, s->name, xtx_logr_status_name(r.status),
			(unsigned long long)r.off, (unsigned long long)r.good);
		err = -EBADMSG;
		break;
	case XTX_LOGR_BAD_HDR:
		/* a crash while creating the CPU's newest segment: nothing was logged there */
		if (last && r.file_size <= sizeof(struct xtx_logfile_hdr)) {
			pr_warn("recovery: %s: torn header, removing it\n", s->name);
			unlinkat(dirfd, s->name, 0);
			break;
		}
		fprintf(stderr, "Error: recovery: %s/%s: bad header: the log is damaged; not "
			"starting\n", dir, s->name);
		err = -EBADMSG;
		break;
	case XTX_LOGR_IO:
		fprintf(stderr, "Error: recovery: reading %s/%s: %s\n", dir, s->name,
			strerror(r.err));
		err = -r.err;
		break;
	}
out:
	xtx_logr_close(&r);
	return err;
}

/* ---- transactions logged on several replicas: only decided ones count ---- */

/*
 * A write logged on one replica only is decided by being logged: the
 * coordinator logged it here before it could report a commit, and nothing
 * else can undo it.  A transaction logged on several is committed once
 * every replica holds its complete record, which this server alone cannot
 * see; so (FaRM's rule, xtxd/resolve.c) it is replayed when
 *   - the decisions file says committed, or
 *   - no decision was recorded and a commit mark of it was logged here: its
 *     coordinator sent a commit, which it does only once decided;
 * and never when the decision was abort, or when this server's part is
 * incomplete and nobody decided (this server will say it does not hold
 * it, and the resolvers abort it).  A complete record with neither
 * decision nor mark may yet be aborted: it is held (undecided.h).
 */

static int cmp_txn(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool marked(uint64_t txn)
{
	if (!marks.sorted) {
		qsort(marks.v, marks.n, sizeof(*marks.v), cmp_txn);
		marks.sorted = true;
	}
	return marks.n && bsearch(&txn, marks.v, marks.n, sizeof(*marks.v), cmp_txn);
}

/* x is complete here, undecided and unmarked: its keys at their primary are held for it. */
static int hold_undecided(struct xtxd_txn *x, struct replay_counts *n)
{
	uint32_t i;
	int err = xtxd_undecided_add_txn(x->txn);

	for (i = 0; !err && i < x->nw; i++) {
		if (!(x->w[i].flags & XTX_LOGF_PRIMARY))
			continue;
		err = xtxd_undecided_add_key(x->txn, x->w[i].table, x->w[i].key);
		n->held_keys++;
	}
	n->held_txns++;
	n->undecided += x->nw;
	if (xtx_wall_ns() - x->first_ns > xtxd_undecided_keep_ns() / 2)
		n->held_old++;
	return err;
}

static int note_decision(uint64_t txn, uint32_t outcome, void *arg)
{
	struct xtxd_txn *x = xtxd_txns_get(&pending, txn, true, 0);

	(void)arg;
	if (!x)
		return -ENOMEM;
	x->outcome = outcome;
	return 0;
}

struct apply_ctx {
	struct rmap *m;
	struct replay_counts *n;
	int err;
	struct xtx_log_write w;		/* scratch */
};

static void apply_decided(struct xtxd_txn *x, void *arg)
{
	struct apply_ctx *a = arg;
	uint32_t i;
	int r;

	if (a->err)
		return;
	if (x->outcome == XTXD_OUT_ABORT ||
	    (x->outcome == XTXD_OUT_NONE && !xtxd_txn_complete(x))) {
		a->n->undecided += x->nw;
		return;
	}
	if (x->outcome == XTXD_OUT_NONE && !marked(x->txn)) {
		if (xtxd_undecided_resolver()) {
			a->err = hold_undecided(x, a->n);
			return;
		}
		a->n->unresolved++;
	}
	for (i = 0; i < x->nw; i++) {
		const struct xtx_log_entry *e = &a->w.e;

		xtxd_txn_write(x, i, &a->w);
		r = rmap_apply(a->m, e->table, e->key, e->version, e->flags & XTX_LOGF_DELETE,
			       a->w.vlen, a->w.value);
		if (r < 0) {
			a->err = r;
			return;
		}
		if (r)
			a->n->applied++;
		else
			a->n->older++;
	}
}

static int xtxd_decided_apply(int dirfd, const char *dir, struct rmap *m,
			      struct replay_counts *n)
{
	static struct apply_ctx a;
	int err = xtxd_outcome_load(dirfd, note_decision, NULL);

	if (err) {
		fprintf(stderr, "Error: recovery: reading %s/%s: %s\n", dir, XTXD_OUTCOME_FILE,
			strerror(-err));
		return err;
	}
	a.m = m;
	a.n = n;
	a.err = 0;
	xtxd_txns_each(&pending, apply_decided, &a);
	return a.err;
}

static void xtxd_decided_free(void)
{
	xtxd_txns_free(&pending);
	free(marks.v);
	memset(&marks, 0, sizeof(marks));
}

/* With requests held: the held transactions' keys locked for them (undecided.h). */
static int take_holds(const struct xtx_target *t, struct replay_counts *n)
{
	size_t taken, shared;
	int err;

	if (n->unresolved)
		pr_warn("recovery: %llu transactions complete here but undecided replayed: no "
			"resolver runs here (no --peers or --zk) to ask the other replicas\n",
			(unsigned long long)n->unresolved);
	if (!n->held_txns)
		return 0;
	err = xtxd_undecided_take(t, &taken, &shared);
	if (err) {
		fprintf(stderr, "Error: recovery: locking the keys of transactions left undecided: "
			"%s\n", strerror(-err));
		return err;
	}
	n->held_shared = shared;
	pr_info("recovery: %llu transactions complete here but undecided: not replayed, "
		"%zu of their keys locked for them until the resolver decides them\n",
		(unsigned long long)n->held_txns, taken);
	if (n->held_old)
		pr_warn("recovery: WARNING: %llu of them were logged over half of --keep-decided "
			"ago: a replica that installed one and then forgot it answers \"not held\", "
			"and the resolvers abort it here though it committed there. A server down "
			"that long should be copied afresh, not restarted on its own data\n",
			(unsigned long long)n->held_old);
	if (shared)
		pr_info("recovery: %zu keys of them wait for a lock slot another holds: handed "
			"over when that one is decided\n", shared);
	return 0;
}

/* ---- putting the keys back ---- */

static int install(const struct xtx_target *t, struct xtxd_ovf *store, struct rmap *m,
		   uint64_t *live)
{
	struct xtxd_loader l = { .store = store, .stop_fd = -1,
				 .busy_timeout_ns = XTXD_LOAD_BUSY_TIMEOUT_NS };
	struct xtxd_load_item *items;
	struct xtx_info info;
	size_t i, k = 0, kv_size;
	int err;

	err = xtx_target_info(t, &info);
	if (err) {
		fprintf(stderr, "Error: recovery: reading %s: %s\n", XTX_MAP_INFO, strerror(-err));
		return err;
	}
	if (info.kv_buckets != xtxd_ovf_nbuckets(store)) {
		fprintf(stderr, "Error: recovery: the program has %u KV buckets, the store %u\n",
			info.kv_buckets, xtxd_ovf_nbuckets(store));
		return -EINVAL;
	}
	err = xtx_target_map_kv(t, info.kv_buckets, &l.kv, &kv_size);
	if (err) {
		fprintf(stderr, "Error: recovery: mapping %s: %s\n", XTX_MAP_KV, strerror(-err));
		return err;
	}
	l.nbuckets = info.kv_buckets;
	l.write_through = info.kv_flags & XTX_INFO_KV_WRITE_THROUGH;
	l.lease_ns = XTX_KV_LEASE_DEFAULT_NS;
	items = calloc(m->n ? m->n : 1, sizeof(*items));
	if (!items) {
		munmap(l.kv, kv_size);
		return -ENOMEM;
	}
	rcu_register_thread();
	for (i = 0; i < m->cap; i++) {
		const struct rkey *r = &m->k[i];
		uint32_t bi;

		if (!r->used)
			continue;
		if (r->deleted) {
			/*
			 * The key is gone at this version: a key created in its
			 * bucket later must start above it (no ABA), as the
			 * delete's write-back would have raised the floor.
			 */
			bi = xtxd_ovf_bucket_of(store, r->table, r->key);
			xtxd_ovf_lock(store, bi);
			xtxd_ovf_raise_floor(store, bi, r->version);
			if (l.kv[bi].vfloor < r->version)
				l.kv[bi].vfloor = r->version;
			xtxd_ovf_unlock(store, bi);
			continue;
		}
		items[k].key = r->key;
		items[k].table = r->table;
		items[k].vlen = r->vlen;
		items[k].version = r->version;
		/* a big value goes to the store: the rmap keeps its bytes until the load is done */
		if (r->big)
			items[k].big = r->big;
		else
			memcpy(items[k].value, r->value, r->vlen);
		k++;
	}
	/* before any key goes back: versions the snapshot's floors covered are never reused */
	for (i = 0; m->floor && i < l.nbuckets; i++) {
		xtxd_ovf_lock(store, i);
		xtxd_ovf_raise_floor(store, i, m->floor);
		if (l.kv[i].vfloor < m->floor)
			l.kv[i].vfloor = m->floor;
		xtxd_ovf_unlock(store, i);
	}
	/* in slices, for the progress of a long one (make load waits on it) */
	xtx_progress_start(&prog, "recovery: putting the keys back", "keys", k);
	for (i = 0, err = 0; i < k && !err; i += RECOVER_SLICE) {
		xtx_progress_tick(&prog, i);
		err = xtxd_load_items(&l, items + i, k - i < RECOVER_SLICE ? k - i : RECOVER_SLICE);
	}
	xtx_progress_end(&prog, err ? i : k);
	if (err)
		fprintf(stderr, "Error: recovery: putting %zu keys back: %s\n", k, strerror(-err));
	else
		pr_info("recovery: %zu keys back: %llu in the kernel cache, %llu in the overflow "
			"store\n", k, (unsigned long long)l.n.kernel, (unsigned long long)l.n.store);
	*live = k;
	xtxd_loader_release(&l);
	rcu_unregister_thread();
	free(items);
	munmap(l.kv, kv_size);
	return err;
}

/* ---- --fresh ---- */

static bool recoverable_name(const char *name)
{
	uint32_t num;
	unsigned int cpu, seg;
	int end = 0;

	/*
	 * decisions and carried HADES slots name txn ids, which a fresh start's
	 * clients reuse; the cluster record goes with the store it describes
	 */
	if (xtxd_snapshot_name_num(name, &num) || !strcmp(name, XTXD_OUTCOME_FILE) ||
	    !strcmp(name, XTXD_HADES_CARRY_FILE) || !strcmp(name, XTX_CLUSTER_RECORD_FILE))
		return true;
	return sscanf(name, "log-cpu%u-%u.xlog%n", &cpu, &seg, &end) == 2 &&
	       (size_t)end == strlen(name);
}

/* The fresh-<time> directories --fresh leaves that are kept: the newest ones. */
#define FRESH_KEEP	2

/* Removes directory sub of dirfd and the files in it (a set-aside holds nothing else). */
static int remove_aside(int dirfd, const char *sub)
{
	struct dirent *de;
	int fd, err = 0;
	DIR *d;

	fd = openat(dirfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && unlinkat(fd, de->d_name, 0) && !err)
			err = -errno;
	closedir(d);
	if (!err && unlinkat(dirfd, sub, AT_REMOVEDIR))
		err = -errno;
	return err;
}

static int newer_first(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * Only the FRESH_KEEP newest fresh-<time> directories stay: each --fresh
 * sets the whole store aside (hundreds of MB), and nothing else removes them.
 */
static void prune_asides(int dirfd, const char *dir)
{
	long long stamps[256], t;
	struct dirent *de;
	size_t n = 0, i;
	char sub[64];
	int end, err;
	DIR *d;

	d = xtx_opendir_at(dirfd);
	if (!d)
		return;
	while ((de = readdir(d)) && n < sizeof(stamps) / sizeof(stamps[0]))
		if (sscanf(de->d_name, "fresh-%lld%n", &t, &end) == 1 &&
		    (size_t)end == strlen(de->d_name))
			stamps[n++] = t;
	closedir(d);
	qsort(stamps, n, sizeof(stamps[0]), newer_first);
	for (i = FRESH_KEEP; i < n; i++) {
		snprintf(sub, sizeof(sub), "fresh-%lld", stamps[i]);
		err = remove_aside(dirfd, sub);
		if (err)
			pr_warn("recovery: --fresh: removing the old %s/%s: %s\n", dir, sub,
				strerror(-err));
		else
			pr_info("recovery: --fresh: removed %s/%s (the %d newest set-asides are "
				"kept)\n", dir, sub, FRESH_KEEP);
	}
}

/* Moves the snapshots and logs aside, so a later start does not bring them back. */
static int set_aside(int dirfd, const char *dir)
{
	char sub[64];
	struct dirent *de;
	unsigned int moved = 0;
	DIR *d;
	int err = 0;

	snprintf(sub, sizeof(sub), "fresh-%lld", (long long)time(NULL));
	d = xtx_opendir_at(dirfd);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char to[sizeof(sub) + 300];

		if (!recoverable_name(de->d_name))
			continue;
		if (!moved && mkdirat(dirfd, sub, 0700) && errno != EEXIST) {
			err = -errno;
			break;
		}
		snprintf(to, sizeof(to), "%s/%s", sub, de->d_name);
		if (renameat(dirfd, de->d_name, dirfd, to)) {
			err = -errno;
			break;
		}
		moved++;
	}
	closedir(d);
	if (err) {
		fprintf(stderr, "Error: recovery: --fresh: moving the old state into %s/%s: %s\n",
			dir, sub, strerror(-err));
		return err;
	}
	if (moved) {
		fsync(dirfd);
		pr_info("recovery: --fresh: starting empty; %u old snapshot and log files moved "
			"to %s/%s\n", moved, dir, sub);
	}
	prune_asides(dirfd, dir);
	return 0;
}

/*
 * What the snapshot carries (log records its positions cover and its keys
 * do not hold), read as the logs are: a multi-replica transaction's
 * records join the rest of it, to be applied once decided.
 */
static int replay_carried(const struct snap_info *si, struct rmap *m, struct replay_counts *n)
{
	struct xtx_logrec *rec;
	size_t i;
	int err = 0, res;

	rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	xtx_logrec_init(rec);
	for (i = 0; !err && i < si->ncarry; i++) {
		const struct xtx_log_write *w = &rec->w;

		res = xtx_logrec_feed(rec, &si->carry[i]);
		if (res == XTX_LOGREC_MORE)
			continue;
		if (res == XTX_LOGREC_DAMAGED) {
			fprintf(stderr, "Error: recovery: %s: a carried record: %s: the snapshot "
				"is damaged; not starting\n", si->name, rec->why);
			err = -EBADMSG;
			break;
		}
		if (xtx_log_is_mark(&w->e)) {
			n->marks++;
			err = note_mark(w->e.txn);
			continue;
		}
		n->carried++;
		if (xtx_log_is_multi(&w->e)) {
			/* carried: logged before the snapshot at least, maybe long before */
			err = pend(w, si->h.created_ns);
			continue;
		}
		err = rmap_apply(m, w->e.table, w->e.key, w->e.version,
				 w->e.flags & XTX_LOGF_DELETE, w->vlen, w->value);
		if (err > 0) {
			n->applied++;
			if (w->e.flags & XTX_LOGF_DELETE)
				n->deletes++;
		} else if (!err) {
			n->older++;
		}
		err = err < 0 ? err : 0;
	}
	if (!err && xtx_logrec_partial(rec)) {
		fprintf(stderr, "Error: recovery: %s: its last carried record is cut short: the "
			"snapshot is damaged; not starting\n", si->name);
		err = -EBADMSG;
	}
	free(rec);
	return err;
}

/* Reads the newest snapshot and every log after it into m; 0 or a negative errno. */
static int collect(int dirfd, const char *dir, struct snap_info *si, struct rmap *m,
		   struct replay_counts *n)
{
	struct xtx_logseg *segs = NULL;
	struct replay_cpu *rc;
	size_t nsegs = 0, i;
	int err;

	rc = malloc(sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	err = newest_snapshot(dirfd, si);
	if (!err)
		err = xtx_logfile_list(dirfd, &segs, &nsegs);
	if (err) {
		fprintf(stderr, "Error: recovery: listing %s: %s\n", dir, strerror(-err));
		goto out;
	}
	if (si->have) {
		err = load_snapshot(dirfd, dir, si, m);
		if (!err)
			err = replay_carried(si, m, n);
		if (err)
			goto out;
	}
	/* by CPU, then segment number: each CPU's records in the order they were logged */
	xtx_progress_start(&prog, "recovery: replaying the logs", "records", 0);
	for (i = 0; i < nsegs; i++) {
		bool last = i + 1 == nsegs || segs[i + 1].cpu != segs[i].cpu;

		if (!i || segs[i - 1].cpu != segs[i].cpu) {
			xtx_logrec_init(&rc->rec);
			rc->have_prev = false;
		}
		err = replay_seg(dirfd, dir, &segs[i], last, si, m, n, rc);
		if (err)
			goto out;
		/* the CPU's log ends inside a write: the rest died with its ring */
		if (last)
			drop_cut_short(rc, segs[i].name, n);
	}
	xtx_progress_end(&prog, n->records);
	err = xtxd_decided_apply(dirfd, dir, m, n);
out:
	free(segs);
	free(rc);
	return err;
}

static void report(const struct snap_info *si, const struct replay_counts *n, uint64_t live,
		   const char *what)
{
	pr_info("recovery: %s%s: %llu keys and %llu carried writes, then %llu log segments "
		"(%llu older ones skipped): "
		"%llu records, %llu already in the snapshot, %llu applied (%llu deletes), %llu "
		"superseded, %llu of undecided or aborted transactions left out; %llu keys "
		"%s%s%s\n", si->have ? "snapshot " : "no snapshot",
		si->have ? si->name : "", si->have ? (unsigned long long)si->h.count : 0ull,
		(unsigned long long)n->carried, (unsigned long long)n->segs, (unsigned long long)n->skipped_segs,
		(unsigned long long)n->records, (unsigned long long)n->covered,
		(unsigned long long)n->applied, (unsigned long long)n->deletes,
		(unsigned long long)n->older, (unsigned long long)n->undecided,
		(unsigned long long)live, what, n->cut_bytes ? "; a torn tail was cut" : "",
		n->cut_short ? "; big writes cut short by a crash left out" : "");
}

int xtxd_recover(const struct xtx_target *t, struct xtxd_ovf *store, const char *dir, bool fresh)
{
	struct replay_counts n = {};
	struct snap_info si = {};
	struct rmap m = {};
	uint64_t live = 0;
	int dirfd, err;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		if (errno == ENOENT)
			return 0;	/* never ran here: nothing to recover */
		fprintf(stderr, "Error: recovery: opening data directory %s: %s\n", dir,
			strerror(errno));
		return -errno;
	}
	if (fresh) {
		err = set_aside(dirfd, dir);
		close(dirfd);
		return err;
	}
	err = collect(dirfd, dir, &si, &m, &n);
	if (err || (!si.have && !n.segs))
		goto out;
	err = install(t, store, &m, &live);
	if (!err)
		err = take_holds(t, &n);
	if (!err)
		report(&si, &n, live, "live");
out:
	free(si.pos);
	free(si.carry);
	rmap_free(&m);
	xtxd_decided_free();
	close(dirfd);
	return err;
}

/* ---- after SIGKILL: the overflow store, which died with the old xtxd ---- */

struct kv_map {
	struct xtx_kv_bucket *kv;
	size_t size;
	uint32_t nbuckets;
};

static int map_kv(const struct xtx_target *t, struct kv_map *km)
{
	struct xtx_info info;
	int err = xtx_target_info(t, &info);

	if (err)
		return err;
	km->nbuckets = info.kv_buckets;
	return xtx_target_map_kv(t, info.kv_buckets, &km->kv, &km->size);
}

/*
 * The bucket lock as XDP takes it.  Requests are held, so a frequent-path
 * holder lets go at once, and a rare-path hold belongs to the dead xtxd,
 * whose answer (and so TC's release) will never come: it is taken over.
 */
static void bucket_lock(struct xtx_kv_bucket *b)
{
	const struct timespec pause = { 0, 10000 };
	uint64_t old;

	for (;;) {
		old = __atomic_load_n(&b->lock, __ATOMIC_RELAXED);
		if (old != XTX_KV_LOCK_FAST &&
		    __atomic_compare_exchange_n(&b->lock, &old, XTX_KV_LOCK_FAST, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return;
		nanosleep(&pause, NULL);
	}
}

static int way_of(const struct xtx_kv_bucket *b, uint8_t table, uint64_t key)
{
	int w;

	for (w = 0; w < XTX_KV_WAYS; w++)
		if (b->key[w] == key && b->table[w] == table &&
		    (b->flags[w] & (XTX_KVF_VALID | XTX_KVF_TOMB)))
			return w;
	return -1;
}

/*
 * One recovered key against the kernel bucket, both locks held.  The
 * kernel's copy (live or tombstone) is the newest unless the logs say
 * otherwise.  A key the kernel does not hold was in the store only if
 * its filter bit is set (the filter covers every key the store held).
 * Returns 1 when stored, 0 when skipped, or a negative errno.
 */
static int adopt_key(struct xtxd_ovf *store, struct xtx_kv_bucket *b, const struct rkey *r)
{
	uint64_t h = xtx_hash(r->table, r->key);
	static __thread struct xtxd_ovf_item it;
	int w = way_of(b, r->table, r->key);

	if (w >= 0 || r->deleted)
		return 0;
	if (!(__atomic_load_n(&b->bloom, __ATOMIC_ACQUIRE) & (1ull << xtx_bloom_bit_of(h))))
		return 0;
	memset(&it, 0, sizeof(it));
	it.key = r->key;
	it.table = r->table;
	it.version = r->version;
	it.vlen = r->vlen;
	memcpy(it.value, rkey_value(r), r->vlen);
	return xtxd_ovf_put(store, &it);
}

/*
 * A clean kernel way is a copy of what the store held (a fill, or a key
 * written back): the kernel may drop it at any eviction, trusting the
 * store.  The store died, so its copy goes back in from the kernel's,
 * whatever the logs and snapshot hold (a bulk-loaded key is in neither).
 * 0, counting what was stored, or a negative errno.
 */
static int keep_clean_copies(struct xtxd_ovf *store, const struct xtx_kv_bucket *b,
			     uint64_t *stored)
{
	struct xtxd_ovf_item it;
	int w, ret;

	for (w = 0; w < XTX_KV_WAYS; w++) {
		if ((b->flags[w] & (XTX_KVF_VALID | XTX_KVF_DIRTY)) != XTX_KVF_VALID)
			continue;
		memset(&it, 0, sizeof(it));
		it.key = b->key[w];
		it.table = b->table[w];
		it.version = b->version[w];
		it.vlen = b->vlen[w] > XTX_VALUE_INLINE ? XTX_VALUE_INLINE : b->vlen[w];
		memcpy(it.value, b->value[w], it.vlen);
		ret = xtxd_ovf_put(store, &it);
		if (ret < 0)
			return ret;
		*stored += ret;
	}
	return 0;
}

int xtxd_recover_adopted(const struct xtx_target *t, struct xtxd_ovf *store, const char *dir)
{
	struct replay_counts n = {};
	struct snap_info si = {};
	struct kv_map km = {};
	struct rmap m = {};
	uint64_t stored = 0, skipped = 0;
	size_t i;
	int dirfd, err;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "Error: recovery: opening data directory %s: %s\n", dir,
			strerror(errno));
		return -errno;
	}
	err = collect(dirfd, dir, &si, &m, &n);
	if (err)
		goto out;
	err = map_kv(t, &km);
	if (err) {
		fprintf(stderr, "Error: recovery: mapping %s: %s\n", XTX_MAP_KV, strerror(-err));
		goto out;
	}
	if (km.nbuckets != xtxd_ovf_nbuckets(store)) {
		fprintf(stderr, "Error: recovery: the program has %u KV buckets, the store %u\n",
			km.nbuckets, xtxd_ovf_nbuckets(store));
		err = -EINVAL;
		goto out;
	}
	rcu_register_thread();
	/* xtxd's copy of each floor died with it: the kernel's is the best left */
	for (i = 0; i < km.nbuckets; i++) {
		xtxd_ovf_lock(store, i);
		xtxd_ovf_raise_floor(store, i, km.kv[i].vfloor);
		xtxd_ovf_unlock(store, i);
	}
	for (i = 0; i < m.cap && !err; i++) {
		const struct rkey *r = &m.k[i];
		uint32_t bi;
		int ret;

		if (!r->used)
			continue;
		bi = xtxd_ovf_bucket_of(store, r->table, r->key);
		bucket_lock(&km.kv[bi]);
		xtxd_ovf_lock(store, bi);
		ret = adopt_key(store, &km.kv[bi], r);
		xtxd_ovf_unlock(store, bi);
		__atomic_store_n(&km.kv[bi].lock, 0, __ATOMIC_RELEASE);
		if (ret < 0)
			err = ret;
		else if (ret)
			stored++;
		else
			skipped++;
	}
	for (i = 0; i < km.nbuckets && !err; i++) {
		bucket_lock(&km.kv[i]);
		xtxd_ovf_lock(store, i);
		err = keep_clean_copies(store, &km.kv[i], &stored);
		xtxd_ovf_unlock(store, i);
		__atomic_store_n(&km.kv[i].lock, 0, __ATOMIC_RELEASE);
	}
	rcu_unregister_thread();
	if (err) {
		fprintf(stderr, "Error: recovery: rebuilding the overflow store: %s\n",
			strerror(-err));
		goto out;
	}
	err = take_holds(t, &n);
	if (err)
		goto out;
	report(&si, &n, stored, "back in the overflow store");
	pr_info("recovery: adopted a running program: %llu keys rebuilt into the overflow "
		"store, %llu left to the kernel cache or gone\n", (unsigned long long)stored,
		(unsigned long long)skipped);
out:
	if (km.kv)
		munmap(km.kv, km.size);
	free(si.pos);
	free(si.carry);
	rmap_free(&m);
	xtxd_decided_free();
	close(dirfd);
	return err;
}
