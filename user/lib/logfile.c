// SPDX-License-Identifier: GPL-2.0-only
/* The transaction log's segment files: CRC32C, listing, a checking reader and a writer. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "log.h"
#include "logfile.h"

#define REC	sizeof(struct xtx_logfile_rec)
#define HDR	sizeof(struct xtx_logfile_hdr)

/* ---- CRC32C ---- */

#define CRC32C_POLY	0x82f63b78u	/* Castagnoli, reflected */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	uint32_t c, i, k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++) {
		for (k = 1; k < 8; k++) {
			c = crc_tab[k - 1][i];
			crc_tab[k][i] = (c >> 8) ^ crc_tab[0][c & 0xff];
		}
	}
}

uint32_t xtx_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_once, crc_init);
	crc = ~crc;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* eight bytes per step */
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		v ^= crc;
		crc = crc_tab[7][v & 0xff] ^ crc_tab[6][(v >> 8) & 0xff] ^
		      crc_tab[5][(v >> 16) & 0xff] ^ crc_tab[4][(v >> 24) & 0xff] ^
		      crc_tab[3][(v >> 32) & 0xff] ^ crc_tab[2][(v >> 40) & 0xff] ^
		      crc_tab[1][(v >> 48) & 0xff] ^ crc_tab[0][v >> 56];
		p += 8;
		len -= 8;
	}
#endif
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__)
/* SSE4.2's crc32 computes exactly this polynomial, reflected: 8 bytes per instruction. */
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;

	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

bool xtx_crc32c_hw_available(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}

uint32_t xtx_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	/* an x86 without SSE4.2 (QEMU's default model) has no crc32 instruction */
	if (!xtx_crc32c_hw_available())
		return xtx_crc32c_sw(crc, buf, len);
	return crc32c_sse42(crc, buf, len);
}
#else
bool xtx_crc32c_hw_available(void)
{
	return false;
}

uint32_t xtx_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return xtx_crc32c_sw(crc, buf, len);
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static uint32_t crc_pick(uint32_t crc, const void *buf, size_t len);
/* chosen on the first call: every thread picks the same one, so a racy store is harmless */
static crc_fn crc_impl = crc_pick;

static uint32_t crc_pick(uint32_t crc, const void *buf, size_t len)
{
	crc_fn f = xtx_crc32c_hw_available() ? xtx_crc32c_hw : xtx_crc32c_sw;

	__atomic_store_n(&crc_impl, f, __ATOMIC_RELAXED);
	return f(crc, buf, len);
}

uint32_t xtx_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return __atomic_load_n(&crc_impl, __ATOMIC_RELAXED)(crc, buf, len);
}

void xtx_logfile_rec_make(struct xtx_logfile_rec *r, const struct xtx_log_entry *e)
{
	memcpy(&r->e, e, sizeof(*e));
	r->crc = xtx_crc32c(0, e, sizeof(*e));
}

static uint32_t hdr_crc(const struct xtx_logfile_hdr *h)
{
	return xtx_crc32c(0, h, offsetof(struct xtx_logfile_hdr, crc));
}

/* ---- names and places ---- */

int xtx_log_epoch_boot_id(uint8_t id[16])
{
	char text[64];
	unsigned int i, n = 0, b;
	ssize_t len;
	int fd;

	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (len <= 0)
		return len < 0 ? -errno : -EINVAL;
	text[len] = '\0';
	for (i = 0; text[i] && n < 16; i++) {
		if (text[i] == '-' || text[i] == '\n')
			continue;
		if (sscanf(text + i, "%2x", &b) != 1)
			return -EINVAL;
		id[n++] = b;
		i++;
	}
	return n == 16 ? 0 : -EINVAL;
}

bool xtx_log_epoch_eq(const struct xtx_log_epoch *a, const struct xtx_logfile_hdr *h)
{
	return a->map_id == h->map_id && !memcmp(a->boot_id, h->boot_id, sizeof(a->boot_id));
}

void xtx_logfile_default_dir(const struct xtx_target *t, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s-%s", XTX_LOGFILE_DIR_ROOT, t->ns_tag, t->iface);
}

void xtx_logdrain_stats_path(const struct xtx_target *t, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s-%s.logdrain", XTX_RUN_DIR, t->ns_tag, t->iface);
}

static void seg_name(char *buf, size_t len, uint32_t cpu, uint32_t seg)
{
	snprintf(buf, len, "log-cpu%u-%06u.xlog", cpu, seg);
}

static int seg_cmp(const void *a, const void *b)
{
	const struct xtx_logseg *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->seg < y->seg ? -1 : x->seg > y->seg;
}

DIR *xtx_opendir_at(int dirfd)
{
	int fd = dup(dirfd), err;
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	rewinddir(d);
	return d;
}

int xtx_logfile_list(int dirfd, struct xtx_logseg **segs, size_t *n)
{
	struct xtx_logseg *v = NULL, *nv;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	*segs = NULL;
	*n = 0;
	d = xtx_opendir_at(dirfd);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned int cpu, seg;
		int end = 0;

		if (sscanf(de->d_name, "log-cpu%u-%u.xlog%n", &cpu, &seg, &end) != 2 ||
		    (size_t)end != strlen(de->d_name) || end >= (int)sizeof(v->name))
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[cnt].cpu = cpu;
		v[cnt].seg = seg;
		snprintf(v[cnt].name, sizeof(v[cnt].name), "%s", de->d_name);
		cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), seg_cmp);
	*segs = v;
	*n = cnt;
	return 0;
}

/* ---- reading ---- */

#define READ_AHEAD	(1024 * REC)

const char *xtx_logr_status_name(enum xtx_logr_status s)
{
	switch (s) {
	case XTX_LOGR_OK: return "ok";
	case XTX_LOGR_TORN: return "torn";
	case XTX_LOGR_BAD_CRC: return "bad_crc";
	case XTX_LOGR_BAD_SEQ: return "bad_seq";
	case XTX_LOGR_BAD_HDR: return "bad_header";
	case XTX_LOGR_IO: return "io_error";
	}
	return "?";
}

static ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (uint8_t *)buf + done, len - done, off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (!n)
			break;
		done += n;
	}
	return done;
}

static bool hdr_valid(const struct xtx_logfile_hdr *h)
{
	return !memcmp(h->magic, XTX_LOGFILE_MAGIC, sizeof(h->magic)) &&
	       h->version == XTX_LOGFILE_VERSION && h->rec_size == REC && h->crc == hdr_crc(h);
}

int xtx_logr_open(struct xtx_logr *r, int dirfd, const char *name)
{
	struct stat st;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	r->fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	/* the size now bounds the walk: a file still growing is read as it was */
	if (fstat(r->fd, &st)) {
		int err = -errno;

		close(r->fd);
		r->fd = -1;
		return err;
	}
	r->file_size = st.st_size;
	r->buf = malloc(READ_AHEAD);
	if (!r->buf) {
		close(r->fd);
		r->fd = -1;
		return -ENOMEM;
	}
	n = pread_full(r->fd, &r->hdr, HDR, 0);
	if (n < 0) {
		r->status = XTX_LOGR_IO;
		r->err = errno;
	} else if ((size_t)n < HDR || !hdr_valid(&r->hdr)) {
		r->status = XTX_LOGR_BAD_HDR;
	} else {
		r->off = HDR;
		r->next_seq = r->hdr.first_seq;
	}
	return 0;
}

int xtx_logr_next(struct xtx_logr *r, struct xtx_log_entry *e)
{
	const struct xtx_logfile_rec *rec;
	uint64_t left;
	ssize_t n;

	if (r->status != XTX_LOGR_OK || r->off >= r->file_size)
		return 0;
	left = r->file_size - r->off;
	if (left < REC) {
		r->status = XTX_LOGR_TORN;
		return 0;
	}
	if (r->buf_len - r->buf_pos < REC) {
		size_t want = left < READ_AHEAD ? left : READ_AHEAD;

		n = pread_full(r->fd, r->buf, want, r->off);
		if (n < 0) {
			r->status = XTX_LOGR_IO;
			r->err = errno;
			return 0;
		}
		r->buf_len = n;
		r->buf_pos = 0;
		if ((size_t)n < REC) {	/* shrank under us: as good as torn */
			r->status = XTX_LOGR_TORN;
			return 0;
		}
	}
	rec = (const struct xtx_logfile_rec *)(r->buf + r->buf_pos);
	if (xtx_crc32c(0, &rec->e, sizeof(rec->e)) != rec->crc) {
		memcpy(&r->bad, rec, REC);
		/* a crash tears only what was written last; earlier damage is corruption */
		r->status = left == REC ? XTX_LOGR_TORN : XTX_LOGR_BAD_CRC;
		return 0;
	}
	if (rec->e.seq != r->next_seq) {
		memcpy(&r->bad, rec, REC);
		r->status = XTX_LOGR_BAD_SEQ;
		return 0;
	}
	memcpy(e, &rec->e, sizeof(*e));
	r->buf_pos += REC;
	r->off += REC;
	r->good++;
	r->next_seq++;
	return 1;
}

void xtx_logr_close(struct xtx_logr *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	r->fd = -1;
	r->buf = NULL;
}

int xtx_logfile_scan(int dirfd, const char *name, struct xtx_logscan *s)
{
	struct xtx_log_entry e;
	struct xtx_logr r;
	int err;

	memset(s, 0, sizeof(*s));
	err = xtx_logr_open(&r, dirfd, name);
	if (err)
		return err;
	while (xtx_logr_next(&r, &e) == 1)
		;
	s->hdr = r.hdr;
	s->hdr_ok = r.status != XTX_LOGR_BAD_HDR && !(r.status == XTX_LOGR_IO && !r.off);
	s->file_size = r.file_size;
	s->good = r.good;
	s->end = r.off;
	s->status = r.status;
	s->err = r.err;
	xtx_logr_close(&r);
	return 0;
}

/* ---- writing ---- */

#define WRITE_BATCH	1024	/* records per write() */

static ssize_t pwrite_full(int fd, const void *buf, size_t len, off_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pwrite(fd, (const uint8_t *)buf + done, len - done, off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		done += n;
	}
	return done;
}

/* A new segment whose first record will be first_seq; its name is made durable now. */
static int seg_create(struct xtx_logw *w, uint32_t seg, uint64_t first_seq)
{
	struct xtx_logfile_hdr h = {};
	struct timespec ts;
	char name[40];
	int fd, err;

	seg_name(name, sizeof(name), w->cpu, seg);
	fd = openat(w->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "Error: log: creating %s: %s\n", name, strerror(errno));
		return err;
	}
	memcpy(h.magic, XTX_LOGFILE_MAGIC, sizeof(h.magic));
	h.version = XTX_LOGFILE_VERSION;
	h.cpu = w->cpu;
	h.first_seq = first_seq;
	h.rec_size = REC;
	h.map_id = w->ep.map_id;
	memcpy(h.boot_id, w->ep.boot_id, sizeof(h.boot_id));
	clock_gettime(CLOCK_REALTIME, &ts);
	h.created_ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	h.seg = seg;
	h.crc = hdr_crc(&h);
	/* the header and the directory entry must be on disk before any record counts */
	if (pwrite_full(fd, &h, HDR, 0) != (ssize_t)HDR || fdatasync(fd) || fsync(w->dirfd)) {
		err = -errno;
		fprintf(stderr, "Error: log: writing %s: %s\n", name, strerror(errno));
		close(fd);
		unlinkat(w->dirfd, name, 0);
		return err;
	}
	if (w->fd >= 0)
		close(w->fd);
	w->fd = fd;
	w->seg = seg;
	w->size = HDR;
	w->next_seq = first_seq;
	w->dirty = false;
	return 0;
}

/* Cuts a torn tail off the last segment and reopens it for appending. */
static int seg_resume(struct xtx_logw *w, const struct xtx_logseg *s, const struct xtx_logscan *sc)
{
	int fd, err;

	fd = openat(w->dirfd, s->name, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "Error: log: opening %s: %s\n", s->name, strerror(errno));
		return err;
	}
	if (sc->end < sc->file_size) {
		if (ftruncate(fd, sc->end)) {
			err = -errno;
			fprintf(stderr, "Error: log: cutting the torn tail of %s: %s\n", s->name,
				strerror(errno));
			close(fd);
			return err;
		}
		w->cut_bytes = sc->file_size - sc->end;
		pr_warn("log: %s: cut a torn tail of %llu bytes after %llu good records\n",
			s->name, (unsigned long long)w->cut_bytes, (unsigned long long)sc->good);
	}
	/* a crashed xtxd's last writes may still be only in the page cache */
	if (fdatasync(fd)) {
		err = -errno;
		fprintf(stderr, "Error: log: syncing %s: %s\n", s->name, strerror(errno));
		close(fd);
		return err;
	}
	w->fd = fd;
	w->seg = s->seg;
	w->size = sc->end;
	w->next_seq = sc->hdr.first_seq + sc->good;
	return 0;
}

int xtx_logw_open(struct xtx_logw *w, int dirfd, uint32_t cpu, const struct xtx_log_epoch *ep,
		  uint64_t head, uint64_t tail, uint64_t seg_max)
{
	const struct xtx_logseg *last = NULL;
	struct xtx_logseg *segs;
	struct xtx_logscan sc;
	uint32_t seg = 0;
	size_t n, i;
	int err;

	memset(w, 0, sizeof(*w));
	w->dirfd = dirfd;
	w->cpu = cpu;
	w->ep = *ep;
	w->seg_max = seg_max < HDR + REC ? HDR + REC : seg_max;
	w->fd = -1;
	w->buf_cap = WRITE_BATCH;
	w->buf = malloc(w->buf_cap * REC);
	if (!w->buf)
		return -ENOMEM;
	err = xtx_logfile_list(dirfd, &segs, &n);
	if (err) {
		fprintf(stderr, "Error: log: listing the data directory: %s\n", strerror(-err));
		goto fail;
	}
	for (i = 0; i < n; i++)
		if (segs[i].cpu == cpu)
			last = &segs[i];
	if (!last)
		goto fresh;
	seg = last->seg + 1;
	err = xtx_logfile_scan(dirfd, last->name, &sc);
	if (err) {
		fprintf(stderr, "Error: log: reading %s: %s\n", last->name, strerror(-err));
		goto fail;
	}
	if (!sc.hdr_ok) {
		if (sc.file_size <= HDR) {
			/* a crash while creating it: nothing was ever logged there */
			pr_warn("log: %s: torn header, replacing it\n", last->name);
			unlinkat(dirfd, last->name, 0);
			seg = last->seg;
		} else {
			pr_warn("log: %s: bad header; leaving it alone\n", last->name);
		}
		goto fresh;
	}
	if (sc.status != XTX_LOGR_OK && sc.status != XTX_LOGR_TORN) {
		/* damage before the tail is no crash: keep it for people to look at */
		pr_warn("log: %s: %s at offset %llu after %llu good records; leaving it alone\n",
			last->name, xtx_logr_status_name(sc.status), (unsigned long long)sc.end,
			(unsigned long long)sc.good);
		goto fresh;
	}
	if (xtx_log_epoch_eq(ep, &sc.hdr)) {
		uint64_t next = sc.hdr.first_seq + sc.good;

		if (next >= head && next <= tail) {
			err = seg_resume(w, last, &sc);
			if (err)
				goto fail;
			free(segs);
			return 0;
		}
		pr_warn("log: %s ends before seq %llu but the ring holds %llu..%llu: %s\n",
			last->name, (unsigned long long)next, (unsigned long long)head,
			(unsigned long long)tail, next < head ? "entries are missing from disk" :
			"the disk is ahead of the ring");
	}
	/* an older incarnation's segment: only cut its torn tail, so readers see it clean */
	if (sc.status == XTX_LOGR_TORN) {
		err = seg_resume(w, last, &sc);
		if (err)
			goto fail;
		close(w->fd);
		w->fd = -1;
	}
fresh:
	free(segs);
	/* created by the first append: a CPU that never logs leaves no file */
	w->seg = seg;
	w->next_seq = head;
	return 0;
fail:
	free(segs);
	free(w->buf);
	w->buf = NULL;
	return err;
}

int xtx_logw_sync(struct xtx_logw *w)
{
	if (!w->dirty || w->fd < 0)
		return 0;
	if (fdatasync(w->fd))
		return -errno;
	w->dirty = false;
	w->syncs++;
	return 0;
}

int xtx_logw_append(struct xtx_logw *w, const struct xtx_log_entry *e, size_t n)
{
	size_t i, k, room;
	int err;

	for (i = 0; i < n; i++)
		if (e[i].seq != w->next_seq + i)
			return -EINVAL;
	if (n && w->fd < 0) {
		err = seg_create(w, w->seg, w->next_seq);
		if (err)
			return err;
	}
	while (n) {
		if (w->size + REC > w->seg_max && w->size > HDR) {
			/* the old segment is complete: make it durable before leaving it */
			err = xtx_logw_sync(w);
			if (err)
				return err;
			err = seg_create(w, w->seg + 1, w->next_seq);
			if (err)
				return err;
		}
		room = (w->seg_max - w->size) / REC;
		k = n < w->buf_cap ? n : w->buf_cap;
		if (room && k > room)
			k = room;
		for (i = 0; i < k; i++)
			xtx_logfile_rec_make(&w->buf[i], &e[i]);
		if (pwrite_full(w->fd, w->buf, k * REC, w->size) != (ssize_t)(k * REC)) {
			err = -errno;
			/* never leave a partial record behind a later good one */
			if (ftruncate(w->fd, w->size))
				pr_warn("log: cannot cut a failed write back: %s\n",
					strerror(errno));
			return err;
		}
		w->size += k * REC;
		w->next_seq += k;
		w->dirty = true;
		e += k;
		n -= k;
	}
	return 0;
}

int xtx_logw_rotate(struct xtx_logw *w, uint32_t *next)
{
	int err;

	if (w->fd >= 0) {
		err = xtx_logw_sync(w);
		if (err)
			return err;
		close(w->fd);
		w->fd = -1;
		w->seg++;
	}
	*next = w->seg;
	return 0;
}

void xtx_logw_close(struct xtx_logw *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	free(w->buf);
	w->buf = NULL;
}

/* ---- printing ---- */

void xtx_logfile_print_entry(FILE *f, uint32_t cpu, const struct xtx_log_entry *e, bool json)
{
	unsigned int i, vlen = e->vlen < XTX_VALUE_MAX ? e->vlen : XTX_VALUE_MAX;
	unsigned int nrep = e->nreplicas < 3 ? e->nreplicas : 3;
	char flags[32] = "", reps[24] = "";
	size_t fl = 0, rl = 0;

	if (e->flags & XTX_LOGF_DELETE)
		fl += snprintf(flags + fl, sizeof(flags) - fl, "%sdelete", fl ? "," : "");
	if (e->flags & XTX_LOGF_LAST)
		fl += snprintf(flags + fl, sizeof(flags) - fl, "%slast", fl ? "," : "");
	if (e->flags & XTX_LOGF_META)
		fl += snprintf(flags + fl, sizeof(flags) - fl, "%smeta", fl ? "," : "");
	if (e->flags & ~(XTX_LOGF_DELETE | XTX_LOGF_LAST | XTX_LOGF_META))
		fl += snprintf(flags + fl, sizeof(flags) - fl, "%s%#x", fl ? "," : "",
			       e->flags & ~(XTX_LOGF_DELETE | XTX_LOGF_LAST | XTX_LOGF_META));
	for (i = 0; i < nrep; i++)
		rl += snprintf(reps + rl, sizeof(reps) - rl, "%s%u", i ? "," : "", e->replicas[i]);
	if (json)
		fprintf(f, "{\"cpu\":%u,\"seq\":%llu,\"txn\":%llu,\"client\":%u,\"table\":%u,"
			"\"key\":%llu,\"version\":%llu,\"flags\":%u,\"replicas\":[%s],\"vlen\":%u,"
			"\"value\":\"", cpu, (unsigned long long)e->seq, (unsigned long long)e->txn,
			e->client_id, e->table, (unsigned long long)e->key,
			(unsigned long long)e->version, e->flags, reps, e->vlen);
	else
		fprintf(f, "cpu=%u seq=%llu txn=%llu client=%u table=%u key=%llu version=%llu "
			"flags=%s replicas=%s vlen=%u value=", cpu, (unsigned long long)e->seq,
			(unsigned long long)e->txn, e->client_id, e->table,
			(unsigned long long)e->key, (unsigned long long)e->version,
			fl ? flags : "none", rl ? reps : "none", e->vlen);
	for (i = 0; i < vlen; i++)
		fprintf(f, "%02x", e->value[i]);
	fputs(json ? "\"}" : "\n", f);
}
