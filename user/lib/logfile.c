// SPDX-License-Identifier: GPL-2.0-only
/* The transaction log's segment files: CRC32C, listing, a checking reader and a writer. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
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
#define REREADS_MAX	16	/* second reads of a record per walk (see stop_prealloc) */

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
	       (h->version == XTX_LOGFILE_VERSION || h->version == XTX_LOGFILE_VERSION_GROWN) &&
	       h->rec_size == REC && h->crc == hdr_crc(h);
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	return !n || (!b[0] && !memcmp(b, b + 1, n - 1));
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
		r->prealloc = r->hdr.version != XTX_LOGFILE_VERSION_GROWN;
	}
	return 0;
}

static int stop(struct xtx_logr *r, enum xtx_logr_status status, uint64_t torn_end)
{
	r->status = status;
	r->torn_end = torn_end;
	r->ended = true;
	return 0;
}

static int stop_io(struct xtx_logr *r)
{
	r->err = errno;
	return stop(r, XTX_LOGR_IO, r->off);
}

/* 1 when from..the end of the file is all zeros, 0 when not, -1 (errno) on error. */
static int zeros_to_end(struct xtx_logr *r, uint64_t from)
{
	ssize_t n;

	r->buf_len = r->buf_pos = 0;
	while (from < r->file_size) {
		n = pread_full(r->fd, r->buf, r->file_size - from < READ_AHEAD ?
			       r->file_size - from : READ_AHEAD, from);
		if (n < 0)
			return -1;
		if (!n)
			break;	/* cut short meanwhile */
		if (!all_zero(r->buf, n))
			return 0;
		from += n;
	}
	return 1;
}

/*
 * The walk meets a record that fails its CRC at r->off, in a preallocated
 * segment.  Zeros from there to the end of the file: the log ends there
 * (an all-zero record) or its last record is torn.  Anything else after
 * it: corruption, as damage before the end is no crash's doing.  Returns
 * 1 when the record turned out good on a second read: a writer appending
 * as we read had not finished it, or overtook us.
 */
static int stop_prealloc(struct xtx_logr *r)
{
	struct xtx_logfile_rec rec, again;
	bool zero;
	int z;

	memcpy(&rec, r->buf + r->buf_pos, REC);
	zero = all_zero(&rec, REC);
	z = zeros_to_end(r, r->off + REC);
	if (z < 0)
		return stop_io(r);
	/* no second look at a clean end: a reader must not chase the writer forever */
	if (!(zero && z) && r->rereads < REREADS_MAX &&
	    pread_full(r->fd, &again, REC, r->off) == (ssize_t)REC &&
	    xtx_crc32c(0, &again.e, sizeof(again.e)) == again.crc) {
		r->rereads++;
		return 1;
	}
	if (zero && z)
		return stop(r, XTX_LOGR_OK, r->off);
	memcpy(&r->bad, &rec, REC);
	return stop(r, z ? XTX_LOGR_TORN : XTX_LOGR_BAD_CRC, r->off + REC);
}

/* Less than a record is left before the end of the file. */
static int stop_short(struct xtx_logr *r)
{
	uint64_t left = r->file_size - r->off;
	ssize_t n;

	if (!r->prealloc)
		return stop(r, XTX_LOGR_TORN, r->file_size);
	/* a preallocated segment whose size is no whole number of records: its zeros end it */
	n = pread_full(r->fd, r->buf, left, r->off);
	r->buf_len = r->buf_pos = 0;
	if (n < 0)
		return stop_io(r);
	if (all_zero(r->buf, n))
		return stop(r, XTX_LOGR_OK, r->off);
	return stop(r, XTX_LOGR_TORN, r->file_size);
}

int xtx_logr_next(struct xtx_logr *r, struct xtx_log_entry *e)
{
	const struct xtx_logfile_rec *rec;
	uint64_t left;
	ssize_t n;

again:
	if (r->status != XTX_LOGR_OK || r->ended || r->off >= r->file_size)
		return 0;
	left = r->file_size - r->off;
	if (left < REC)
		return stop_short(r);
	if (r->buf_len - r->buf_pos < REC) {
		size_t want = left < READ_AHEAD ? left : READ_AHEAD;

		n = pread_full(r->fd, r->buf, want, r->off);
		if (n < 0)
			return stop_io(r);
		r->buf_len = n;
		r->buf_pos = 0;
		if ((size_t)n < REC) {
			/* shrank under us: as good as torn, or where a preallocated one ends now */
			if (!r->prealloc)
				return stop(r, XTX_LOGR_TORN, r->off + n);
			r->file_size = r->off + n;
			goto again;
		}
	}
	rec = (const struct xtx_logfile_rec *)(r->buf + r->buf_pos);
	if (xtx_crc32c(0, &rec->e, sizeof(rec->e)) != rec->crc) {
		if (r->prealloc) {
			if (stop_prealloc(r))
				goto again;
			return 0;
		}
		memcpy(&r->bad, rec, REC);
		/* a crash tears only what was written last; earlier damage is corruption */
		return stop(r, left == REC ? XTX_LOGR_TORN : XTX_LOGR_BAD_CRC, r->file_size);
	}
	if (rec->e.seq != r->next_seq) {
		memcpy(&r->bad, rec, REC);
		return stop(r, XTX_LOGR_BAD_SEQ, r->off);
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
	s->torn_end = r.torn_end;
	s->status = r.status;
	s->err = r.err;
	xtx_logr_close(&r);
	return 0;
}

int xtx_logfile_count(int dirfd, const char *name, uint64_t *records, uint64_t *partial)
{
	struct xtx_logfile_hdr h;
	struct xtx_logfile_rec rec;
	uint64_t body, lo = 0, hi, mid;
	struct stat st;
	int fd, err = 0;

	*records = *partial = 0;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out;
	}
	body = (uint64_t)st.st_size > HDR ? st.st_size - HDR : 0;
	if (pread_full(fd, &h, HDR, 0) != (ssize_t)HDR || !hdr_valid(&h) ||
	    h.version == XTX_LOGFILE_VERSION_GROWN) {
		*records = body / REC;
		*partial = body % REC;
		goto out;
	}
	/* records, then zeros: the first zero slot is the end */
	hi = body / REC;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (pread_full(fd, &rec, REC, HDR + mid * REC) != (ssize_t)REC) {
			err = errno ? -errno : -EIO;
			goto out;
		}
		if (all_zero(&rec, REC))
			hi = mid;
		else
			lo = mid + 1;
	}
	*records = lo;
	if (lo && pread_full(fd, &rec, REC, HDR + (lo - 1) * REC) == (ssize_t)REC &&
	    xtx_crc32c(0, &rec.e, sizeof(rec.e)) != rec.crc) {
		*records = lo - 1;
		*partial = REC;
	}
out:
	close(fd);
	return err;
}

/* ---- writing ---- */

#define WRITE_BATCH	1024		/* records per write() */
#define PAGE		4096u		/* O_DIRECT's alignment; writes are of whole pages */
#define FILL_CHUNK	(1u << 20)	/* zeros per write() when filling */
/*
 * The spare is written a piece at a time, resting SPARE_REST times as long
 * as each piece took while it is ahead of the segment it will follow: its
 * 64 MiB would otherwise fill the disk's queue for a few hundred ms, and
 * the drain's fdatasync waits behind them (p99 of 5-11 ms instead of 1-3
 * ms here).  Behind (the spare is to be whole by the time the segment is
 * half full), it writes without rest.
 */
#define SPARE_PIECE	(256u << 10)
#define SPARE_REST	3

bool xtx_logfile_direct = true;

static uint8_t *zero_chunk;	/* FILL_CHUNK zeros, page-aligned for O_DIRECT */
static pthread_once_t zero_once = PTHREAD_ONCE_INIT;

static void zero_init(void)
{
	void *p;

	if (!posix_memalign(&p, PAGE, FILL_CHUNK)) {
		memset(p, 0, FILL_CHUNK);
		zero_chunk = p;
	}
}

static uint64_t page_down(uint64_t v)
{
	return v & ~(uint64_t)(PAGE - 1);
}

static uint64_t page_up(uint64_t v)
{
	return page_down(v + PAGE - 1);
}

uint64_t xtx_logfile_seg_size(uint64_t seg_max)
{
	uint64_t recs = seg_max > HDR + REC ? (seg_max - HDR) / REC : 1;

	/* whole pages, so O_DIRECT writes never reach past the end */
	return page_up(HDR + recs * REC);
}

/* Opens a segment file O_DIRECT where the file system has it; *direct says which. */
static int open_seg(int dirfd, const char *name, int flags, bool *direct)
{
	int fd = -1;

	*direct = xtx_logfile_direct;
	if (*direct) {
		fd = openat(dirfd, name, flags | O_DIRECT | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EINVAL)
			return fd;
		*direct = false;	/* tmpfs, say */
	}
	return openat(dirfd, name, flags | O_CLOEXEC, 0600);
}

/*
 * Writes len bytes at off; *done says how many made it, also on failure.
 * 0 or a negative errno.  Where O_DIRECT turns out refused for these
 * writes (EINVAL), the rest goes through the page cache, as does every
 * write to fd from then on.
 */
static int write_at(int fd, bool *direct, const void *buf, size_t len, off_t off, size_t *done)
{
	ssize_t n;
	int fl;

	*done = 0;
	while (*done < len) {
		n = pwrite(fd, (const uint8_t *)buf + *done, len - *done, off + *done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && *direct) {
			fl = fcntl(fd, F_GETFL);
			if (fl >= 0 && !fcntl(fd, F_SETFL, fl & ~O_DIRECT)) {
				*direct = false;
				continue;
			}
			errno = EINVAL;
		}
		if (n < 0)
			return -errno;
		*done += n;
	}
	return 0;
}

/* Zeros from..to (from a page boundary); stops early, -ECANCELED, once *stop is set. */
static int fill_zeros(int fd, bool *direct, uint64_t from, uint64_t to, const int *stop)
{
	size_t n, done;
	int err;

	pthread_once(&zero_once, zero_init);
	if (!zero_chunk)
		return -ENOMEM;
	while (from < to) {
		if (stop && __atomic_load_n(stop, __ATOMIC_RELAXED))
			return -ECANCELED;
		n = to - from < FILL_CHUNK ? to - from : FILL_CHUNK;
		err = write_at(fd, direct, zero_chunk, n, from, &done);
		if (err)
			return err;
		from += n;
	}
	return 0;
}

int xtx_logfile_cut(int fd, uint32_t version, uint64_t end, uint64_t torn_end)
{
	static const uint8_t zeros[PAGE];
	size_t n;

	if (torn_end > end && version == XTX_LOGFILE_VERSION_GROWN) {
		if (ftruncate(fd, end))
			return -errno;
	} else {
		/* a preallocated segment keeps its size: fdatasync must not commit a new one */
		while (end < torn_end) {
			n = torn_end - end < sizeof(zeros) ? torn_end - end : sizeof(zeros);
			if (pwrite(fd, zeros, n, end) != (ssize_t)n)
				return errno ? -errno : -EIO;
			end += n;
		}
	}
	return fdatasync(fd) ? -errno : 0;
}

static void spare_name(char *buf, size_t len, uint32_t cpu, const char *what)
{
	snprintf(buf, len, "log-cpu%u.%s", cpu, what);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Zeros 0..size in pieces, resting between them while ahead of w's appends. */
static int fill_spare(struct xtx_logw *w, int fd, bool *direct, uint64_t size)
{
	uint64_t off, end, t0, rest, done;
	struct timespec ts;
	int err = 0;

	for (off = 0; !err && off < size; off = end) {
		end = size - off < SPARE_PIECE ? size : off + SPARE_PIECE;
		t0 = mono_ns();
		err = fill_zeros(fd, direct, off, end, &w->spare_stop);
		rest = (mono_ns() - t0) * SPARE_REST;
		done = __atomic_load_n(&w->progress, __ATOMIC_RELAXED);
		/* whole when the segment is half full: end / size >= 2 * done / seg_size */
		if (!err && end < size && (double)end / size >= 2.0 * done / w->seg_size) {
			ts.tv_sec = rest / 1000000000ull;
			ts.tv_nsec = rest % 1000000000ull;
			nanosleep(&ts, NULL);
		}
	}
	return err;
}

/*
 * The spare thread: zero-fills the next segment's file, off the writer's
 * path, and names it log-cpuC.spare once it is whole and synced, so a
 * spare found after a crash is whole.
 */
static void *spare_main(void *arg)
{
	struct xtx_logw *w = arg;
	char tmp[48], name[48];
	bool direct;
	int fd, err;

	spare_name(tmp, sizeof(tmp), w->cpu, "spare.tmp");
	spare_name(name, sizeof(name), w->cpu, "spare");
	fd = open_seg(w->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC, &direct);
	if (fd < 0) {
		err = -errno;
	} else {
		err = fill_spare(w, fd, &direct, w->seg_size);
		if (!err && fdatasync(fd))
			err = -errno;
		close(fd);
		if (!err && renameat(w->dirfd, tmp, w->dirfd, name))
			err = -errno;
		if (err)
			unlinkat(w->dirfd, tmp, 0);
	}
	w->spare_err = err;
	__atomic_store_n(&w->spare_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Starts making a spare unless one is there or on its way. */
static void spare_start(struct xtx_logw *w)
{
	char name[48];
	struct stat st;

	spare_name(name, sizeof(name), w->cpu, "spare");
	if (w->spare_running || !fstatat(w->dirfd, name, &st, 0))
		return;
	w->spare_done = 0;
	w->spare_stop = 0;
	w->spare_err = 0;
	/* without one, segments are zero-filled as they go: slower syncs, still correct */
	if (!pthread_create(&w->spare_tid, NULL, spare_main, w))
		w->spare_running = true;
}

/* Joins the spare thread once it is done, or at once after stopping it when stop. */
static void spare_reap(struct xtx_logw *w, bool stop)
{
	if (!w->spare_running)
		return;
	if (stop)
		__atomic_store_n(&w->spare_stop, 1, __ATOMIC_RELAXED);
	else if (!__atomic_load_n(&w->spare_done, __ATOMIC_ACQUIRE))
		return;
	pthread_join(w->spare_tid, NULL);
	w->spare_running = false;
	if (w->spare_err && w->spare_err != -ECANCELED)
		pr_warn("log: preparing CPU %u's next segment: %s (filling it as it goes)\n",
			w->cpu, strerror(-w->spare_err));
}

/* Renames from to the new segment's name, failing rather than replace one. */
static int rename_new(int dirfd, const char *from, const char *to)
{
	if (!renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* no RENAME_NOREPLACE here: a hard link does not replace either */
	if (linkat(dirfd, from, dirfd, to, 0))
		return -errno;
	unlinkat(dirfd, from, 0);
	return 0;
}

/*
 * A new segment whose first record will be first_seq.  It is the spare
 * when one is ready, else a file of its own with a first chunk of zeros,
 * filled further as appends reach it.  It takes its name with a valid
 * header in it, and the name is durable before any record counts.
 */
static int seg_create(struct xtx_logw *w, uint32_t seg, uint64_t first_seq)
{
	struct xtx_logfile_hdr *h = (struct xtx_logfile_hdr *)w->buf;
	bool direct = false, spare = false, named = false;
	char name[40], from[48];
	struct timespec ts;
	struct stat st;
	uint64_t size;
	size_t done;
	int fd = -1, err;

	seg_name(name, sizeof(name), w->cpu, seg);
	spare_reap(w, false);
	if (!w->spare_running) {
		spare_name(from, sizeof(from), w->cpu, "spare");
		fd = open_seg(w->dirfd, from, O_RDWR, &direct);
		if (fd >= 0 && (fstat(fd, &st) || (uint64_t)st.st_size != w->seg_size ||
				 st.st_nlink != 1)) {
			/*
			 * made for another seg_max, or a second name of a segment (a
			 * crash between the link and the unlink of rename_new)
			 */
			close(fd);
			fd = -1;
			unlinkat(w->dirfd, from, 0);
		}
		spare = fd >= 0;
	}
	if (!spare) {
		spare_name(from, sizeof(from), w->cpu, "new.tmp");
		fd = open_seg(w->dirfd, from, O_RDWR | O_CREAT | O_TRUNC, &direct);
		if (fd < 0) {
			err = -errno;
			fprintf(stderr, "Error: log: creating %s: %s\n", name, strerror(errno));
			return err;
		}
	}
	memset(w->buf, 0, PAGE);
	memcpy(h->magic, XTX_LOGFILE_MAGIC, sizeof(h->magic));
	h->version = XTX_LOGFILE_VERSION;
	h->cpu = w->cpu;
	h->first_seq = first_seq;
	h->rec_size = REC;
	h->map_id = w->ep.map_id;
	memcpy(h->boot_id, w->ep.boot_id, sizeof(h->boot_id));
	clock_gettime(CLOCK_REALTIME, &ts);
	h->created_ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	h->seg = seg;
	h->crc = hdr_crc(h);
	size = spare ? w->seg_size : w->seg_size < FILL_CHUNK ? w->seg_size : FILL_CHUNK;
	err = write_at(fd, &direct, w->buf, PAGE, 0, &done);
	if (!err && !spare)
		err = fill_zeros(fd, &direct, PAGE, size, NULL);
	/* the header and the directory entry must be on disk before any record counts */
	if (!err && fdatasync(fd))
		err = -errno;
	if (!err) {
		err = rename_new(w->dirfd, from, name);
		named = !err;
	}
	if (!err && fsync(w->dirfd))
		err = -errno;
	if (err) {
		fprintf(stderr, "Error: log: writing %s: %s\n", name, strerror(-err));
		close(fd);
		unlinkat(w->dirfd, named ? name : from, 0);
		return err;
	}
	if (w->fd >= 0)
		close(w->fd);
	w->fd = fd;
	w->direct = direct;
	w->seg = seg;
	w->size = HDR;		/* w->buf holds the header: the page's bytes so far */
	__atomic_store_n(&w->progress, w->size, __ATOMIC_RELAXED);
	w->file_size = size;
	w->next_seq = first_seq;
	w->dirty = false;
	if (spare)
		w->spares_used++;
	else
		w->zero_fills++;
	spare_start(w);
	return 0;
}

/* Cuts a torn tail, syncs what a crashed writer left, and reopens it for appending. */
static int seg_resume(struct xtx_logw *w, const struct xtx_logseg *s, const struct xtx_logscan *sc)
{
	uint64_t ps = page_down(sc->end);
	int fd, err;

	fd = openat(w->dirfd, s->name, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "Error: log: opening %s: %s\n", s->name, strerror(errno));
		return err;
	}
	/* also syncs: a crashed writer's last writes may still be only in the page cache */
	err = xtx_logfile_cut(fd, sc->hdr.version, sc->end,
			      sc->status == XTX_LOGR_TORN ? sc->torn_end : sc->end);
	if (err) {
		fprintf(stderr, "Error: log: cutting the torn tail of %s: %s\n", s->name,
			strerror(-err));
		close(fd);
		return err;
	}
	if (sc->status == XTX_LOGR_TORN) {
		w->cut_bytes = sc->torn_end - sc->end;
		pr_warn("log: %s: cut a torn tail of %llu bytes after %llu good records\n",
			s->name, (unsigned long long)w->cut_bytes, (unsigned long long)sc->good);
	}
	/* whole pages are written: the last one's bytes so far come first */
	if (pread_full(fd, w->buf, sc->end - ps, ps) != (ssize_t)(sc->end - ps)) {
		err = errno ? -errno : -EIO;
		fprintf(stderr, "Error: log: reading %s: %s\n", s->name, strerror(-err));
		close(fd);
		return err;
	}
	close(fd);
	fd = open_seg(w->dirfd, s->name, O_WRONLY, &w->direct);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "Error: log: opening %s: %s\n", s->name, strerror(errno));
		return err;
	}
	w->fd = fd;
	w->seg = s->seg;
	w->size = sc->end;
	__atomic_store_n(&w->progress, w->size, __ATOMIC_RELAXED);
	/* cut to its end by an earlier writer, it is zero-filled again as appends reach it */
	w->file_size = sc->end > sc->file_size ? sc->end : sc->file_size;
	w->next_seq = sc->hdr.first_seq + sc->good;
	spare_start(w);
	return 0;
}

/*
 * A segment nobody appends to again: its torn tail goes, and so do a
 * preallocated one's zeros past the end, so readers find the end at once.
 */
static int seg_leave(struct xtx_logw *w, const struct xtx_logseg *s, const struct xtx_logscan *sc)
{
	int fd, err = 0;

	fd = openat(w->dirfd, s->name, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || (sc->end < sc->file_size && ftruncate(fd, sc->end)) || fdatasync(fd)) {
		err = -errno;
		fprintf(stderr, "Error: log: cutting %s to its end: %s\n", s->name,
			strerror(errno));
	} else if (sc->status == XTX_LOGR_TORN) {
		w->cut_bytes = sc->torn_end - sc->end;
		pr_warn("log: %s: cut a torn tail of %llu bytes after %llu good records\n",
			s->name, (unsigned long long)w->cut_bytes, (unsigned long long)sc->good);
	}
	if (fd >= 0)
		close(fd);
	return err;
}

int xtx_logw_open(struct xtx_logw *w, int dirfd, uint32_t cpu, const struct xtx_log_epoch *ep,
		  uint64_t head, uint64_t tail, uint64_t seg_max)
{
	const struct xtx_logseg *last = NULL;
	struct xtx_logseg *segs;
	struct xtx_logscan sc;
	uint32_t seg = 0;
	char tmp[48];
	size_t n, i;
	void *buf;
	int err;

	memset(w, 0, sizeof(*w));
	w->dirfd = dirfd;
	w->cpu = cpu;
	w->ep = *ep;
	w->seg_max = seg_max < HDR + REC ? HDR + REC : seg_max;
	w->seg_size = xtx_logfile_seg_size(w->seg_max);
	w->fd = -1;
	w->buf_cap = WRITE_BATCH;
	/* the last page's bytes so far, the records, zeros to the page's end */
	if (posix_memalign(&buf, PAGE, page_up(PAGE + w->buf_cap * REC + PAGE)))
		return -ENOMEM;
	w->buf = buf;
	/* what a crash left half made */
	spare_name(tmp, sizeof(tmp), cpu, "spare.tmp");
	unlinkat(dirfd, tmp, 0);
	spare_name(tmp, sizeof(tmp), cpu, "new.tmp");
	unlinkat(dirfd, tmp, 0);
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
			if (sc.hdr.version == XTX_LOGFILE_VERSION) {
				err = seg_resume(w, last, &sc);
				if (err)
					goto fail;
				free(segs);
				return 0;
			}
			/* a version-1 segment is not preallocated: the log goes on in a new one */
			err = seg_leave(w, last, &sc);
			if (err)
				goto fail;
			free(segs);
			w->seg = seg;
			w->next_seq = next;
			return 0;
		}
		pr_warn("log: %s ends before seq %llu but the ring holds %llu..%llu: %s\n",
			last->name, (unsigned long long)next, (unsigned long long)head,
			(unsigned long long)tail, next < head ? "entries are missing from disk" :
			"the disk is ahead of the ring");
	}
	/* an older incarnation's segment: cut to its end, so readers see it clean */
	err = seg_leave(w, last, &sc);
	if (err)
		goto fail;
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
	if (w->sync_err)
		return w->sync_err;
	if (!w->dirty || w->fd < 0)
		return 0;
	/*
	 * A failed fdatasync is final: the kernel reports a writeback error
	 * once, so a second call may well succeed over pages that never made
	 * it, and a caller retrying (a rotation inside an append) would then
	 * release entries that are not on disk.
	 */
	if (fdatasync(w->fd)) {
		w->sync_err = -errno;
		return w->sync_err;
	}
	w->dirty = false;
	w->syncs++;
	return 0;
}

/*
 * A segment made without a spare is zero-filled a chunk ahead of the
 * appends, from its page end on: the appends then overwrite, and only a
 * sync after a fill commits a new size.  Failing leaves it as it was.
 */
static void seg_fill_ahead(struct xtx_logw *w, uint64_t page_end)
{
	uint64_t from, to;

	if (page_end > w->file_size)
		w->file_size = page_end;	/* the append wrote that far */
	if (w->file_size >= w->seg_size || w->file_size - page_end >= FILL_CHUNK / 2)
		return;
	from = page_up(w->file_size);
	to = from + FILL_CHUNK < w->seg_size ? from + FILL_CHUNK : w->seg_size;
	if (fill_zeros(w->fd, &w->direct, from, to, NULL))
		return;		/* tried again after the next append */
	w->file_size = to;
	w->zero_fills++;
}

int xtx_logw_append(struct xtx_logw *w, const struct xtx_log_entry *e, size_t n)
{
	uint64_t ps, end, pe;
	size_t i, k, room, t, done, zeroed;
	uint8_t *p;
	uint32_t crc;
	int err, zerr;

	if (w->sync_err)
		return w->sync_err;
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
		/* buf starts with the page's bytes up to size: the records go after them */
		ps = page_down(w->size);
		t = w->size - ps;
		end = w->size + k * REC;
		pe = page_up(end);
		for (i = 0, p = w->buf + t; i < k; i++, p += REC) {
			crc = xtx_crc32c(0, &e[i], sizeof(e[i]));
			memcpy(p, &e[i], sizeof(e[i]));
			memcpy(p + sizeof(e[i]), &crc, sizeof(crc));
		}
		memset(p, 0, pe - end);
		err = write_at(w->fd, &w->direct, w->buf, pe - ps, ps, &done);
		if (err) {
			/*
			 * Never leave a partial record behind a later good one: the
			 * segment keeps its size, so zero again what the write reached
			 * (as far as it goes: a write cut short by a limit fails there).
			 */
			memset(w->buf + t, 0, pe - ps - t);
			zerr = write_at(w->fd, &w->direct, w->buf, pe - ps, ps, &zeroed);
			if (zerr && zeroed < done)
				pr_warn("log: cannot zero a failed write again: %s\n",
					strerror(-zerr));
			return err;
		}
		if (w->file_size < w->seg_size)
			seg_fill_ahead(w, pe);
		/* the new last page's bytes so far go first for the next write */
		memmove(w->buf, w->buf + (page_down(end) - ps), end - page_down(end));
		w->size = end;
		__atomic_store_n(&w->progress, end, __ATOMIC_RELAXED);
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
		/* nothing goes there again: cut the zeros past its end */
		if (w->file_size > w->size && ftruncate(w->fd, w->size))
			pr_warn("log: cutting segment %u of CPU %u to its end: %s\n", w->seg,
				w->cpu, strerror(errno));
		close(w->fd);
		w->fd = -1;
		w->seg++;
	}
	*next = w->seg;
	return 0;
}

void xtx_logw_close(struct xtx_logw *w)
{
	spare_reap(w, true);
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	free(w->buf);
	w->buf = NULL;
}

