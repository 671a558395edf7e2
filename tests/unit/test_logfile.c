// SPDX-License-Identifier: GPL-2.0-only
/*
 * The log's on-disk format: round trip, torn and corrupt records, seq gaps, rotation, resume;
 * preallocated segments (their end among the zeros, spares, failed writes zeroed) and version 1.
 */
/* checks: 19 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <xtx/log.h>
#include "check.h"
#include "logfile.h"

#define HDR	sizeof(struct xtx_logfile_hdr)
#define REC	sizeof(struct xtx_logfile_rec)

static char dir[64];
static int dirfd_ = -1;
static const struct xtx_log_epoch ep1 = { .boot_id = { 1, 2, 3 }, .map_id = 11 };
static const struct xtx_log_epoch ep2 = { .boot_id = { 1, 2, 3 }, .map_id = 12 };

static void fresh_dir(void)
{
	if (dirfd_ >= 0) {
		char cmd[96];

		close(dirfd_);
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			printf("# cannot remove %s\n", dir);
	}
	snprintf(dir, sizeof(dir), "/tmp/xtx-logfile.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static struct xtx_log_entry mk(uint64_t seq)
{
	struct xtx_log_entry e = {};

	e.seq = seq;
	e.txn = xtx_txn_make(7, 1000 + seq);
	e.key = seq * 3;
	e.version = seq + 100;
	e.client_id = 7;
	e.table = seq % 4;
	e.vlen = 1 + seq % XTX_VALUE_INLINE;
	e.flags = seq % 2 ? XTX_LOGF_LAST : 0;
	e.nreplicas = 3;
	e.replicas[0] = 0;
	e.replicas[1] = 1;
	e.replicas[2] = 2;
	memset(e.value, (int)seq, e.vlen);
	return e;
}

/* Appends seqs [from, to) in batches of `batch`. */
static int append_range(struct xtx_logw *w, uint64_t from, uint64_t to, size_t batch)
{
	struct xtx_log_entry *v = calloc(batch, sizeof(*v));
	int err = 0;

	while (from < to && !err) {
		size_t i, k = to - from < batch ? to - from : batch;

		for (i = 0; i < k; i++)
			v[i] = mk(from + i);
		err = xtx_logw_append(w, v, k);
		from += k;
	}
	free(v);
	return err;
}

/* Reads every segment of cpu in order; checks each entry is mk(seq); returns the count. */
static uint64_t read_all(uint32_t cpu, uint64_t first, enum xtx_logr_status *last_status,
			 uint64_t *stop_off)
{
	struct xtx_logseg *segs;
	struct xtx_log_entry e, want;
	uint64_t n = 0, expect = first;
	size_t nseg, i;

	*last_status = XTX_LOGR_OK;
	if (xtx_logfile_list(dirfd_, &segs, &nseg))
		return 0;
	for (i = 0; i < nseg; i++) {
		struct xtx_logr r;

		if (segs[i].cpu != cpu || xtx_logr_open(&r, dirfd_, segs[i].name))
			continue;
		CHECK(r.status == XTX_LOGR_OK, "%s: header %s", segs[i].name,
		      xtx_logr_status_name(r.status));
		CHECK(r.hdr.first_seq == expect, "%s starts at %llu, want %llu", segs[i].name,
		      (unsigned long long)r.hdr.first_seq, (unsigned long long)expect);
		while (xtx_logr_next(&r, &e) == 1) {
			want = mk(expect);
			CHECK(!memcmp(&e, &want, sizeof(e)), "seq %llu differs",
			      (unsigned long long)expect);
			expect++;
			n++;
		}
		*last_status = r.status;
		*stop_off = r.off;
		xtx_logr_close(&r);
	}
	free(segs);
	return n;
}

static const char *seg0(void)
{
	static char name[40];

	snprintf(name, sizeof(name), "log-cpu0-000000.xlog");
	return name;
}

static off_t file_size(const char *name)
{
	struct stat st;

	return fstatat(dirfd_, name, &st, 0) ? -1 : st.st_size;
}

static void write_bytes(const char *name, off_t off, const void *buf, size_t len)
{
	int fd = openat(dirfd_, name, O_WRONLY);

	if (pwrite(fd, buf, len, off) != (ssize_t)len)
		printf("# pwrite failed\n");
	close(fd);
}

static bool bytes_zero(const char *name, off_t off, size_t len)
{
	int fd = openat(dirfd_, name, O_RDONLY);
	uint8_t b[REC];
	bool zero = len <= sizeof(b) && pread(fd, b, len, off) == (ssize_t)len;
	size_t i;

	for (i = 0; zero && i < len; i++)
		zero = !b[i];
	close(fd);
	return zero;
}

static bool exists(const char *name)
{
	struct stat st;

	return !fstatat(dirfd_, name, &st, 0);
}

/* The spare thread makes log-cpuC.spare in the background: waits for it (60 s at most). */
static bool wait_spare(uint32_t cpu)
{
	char name[40];
	int i;

	snprintf(name, sizeof(name), "log-cpu%u.spare", cpu);
	for (i = 0; i < 6000 && !exists(name); i++)
		usleep(10000);
	return exists(name);
}

static void corrupt_byte(const char *name, off_t off)
{
	int fd = openat(dirfd_, name, O_RDWR);
	uint8_t b;

	if (pread(fd, &b, 1, off) == 1) {
		b ^= 0x40;
		if (pwrite(fd, &b, 1, off) != 1)
			printf("# pwrite failed\n");
	}
	close(fd);
}

static void test_crc32c_vector(void)
{
	static const char v[] = "123456789";
	uint8_t zeros[32] = {};

	CHECK(xtx_crc32c(0, v, 9) == 0xe3069283u, "crc32c(123456789) = %#x",
	      xtx_crc32c(0, v, 9));
	/* the iSCSI test vector: 32 zero bytes */
	CHECK(xtx_crc32c(0, zeros, 32) == 0x8a9136aau, "crc32c(32 zeros) = %#x",
	      xtx_crc32c(0, zeros, 32));
	/* in pieces as at once */
	CHECK(xtx_crc32c(xtx_crc32c(0, v, 4), v + 4, 5) == 0xe3069283u, "incremental");
}

/* The SSE4.2 and table CRCs agree everywhere: either reads the other's logs. */
static void test_crc32c_hw_sw(void)
{
	static const char v[] = "123456789";
	uint8_t zeros[32] = {}, buf[4096 + 8];
	unsigned int seed = 12345, len, align, bad = 0, split;
	size_t i;

	if (!xtx_crc32c_hw_available())
		printf("# no SSE4.2 here: comparing the table with itself\n");
	CHECK(xtx_crc32c_hw(0, v, 9) == 0xe3069283u, "hw crc32c(123456789) = %#x",
	      xtx_crc32c_hw(0, v, 9));
	CHECK(xtx_crc32c_sw(0, v, 9) == 0xe3069283u, "sw crc32c(123456789) = %#x",
	      xtx_crc32c_sw(0, v, 9));
	CHECK(xtx_crc32c_hw(0, zeros, 32) == 0x8a9136aau, "hw crc32c(32 zeros) = %#x",
	      xtx_crc32c_hw(0, zeros, 32));
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = rand_r(&seed);
	/* every length to 300 at every alignment, then longer ones, and pieces chained */
	for (len = 0; len <= 4096; len += len < 300 ? 1 : 97) {
		for (align = 0; align < 8; align++) {
			uint32_t sw = xtx_crc32c_sw(0, buf + align, len);
			uint32_t hw = xtx_crc32c_hw(0, buf + align, len);

			split = len ? rand_r(&seed) % len : 0;
			if (hw != sw || xtx_crc32c(0, buf + align, len) != sw ||
			    xtx_crc32c_hw(xtx_crc32c_hw(0, buf + align, split), buf + align + split,
					  len - split) != sw ||
			    xtx_crc32c_hw(0x12345678u, buf + align, len) !=
			    xtx_crc32c_sw(0x12345678u, buf + align, len))
				bad++;
		}
	}
	CHECK(!bad, "%u of the random buffers differ between SSE4.2 and the table", bad);
}

/* Not a verdict: what a record's checksum costs, each way. */
static void bench_crc32c(void)
{
	static const size_t lens[] = { 64, sizeof(struct xtx_log_entry) };
	uint8_t buf[128] = { 1, 2, 3 };
	struct timespec a, b;
	uint32_t c = 0;
	size_t k, j;
	int i;

	for (k = 0; k < 2; k++) {
		double ns[2];

		for (j = 0; j < 2; j++) {
			clock_gettime(CLOCK_MONOTONIC, &a);
			for (i = 0; i < 1000000; i++)
				c += j ? xtx_crc32c_hw(c, buf, lens[k]) :
				     xtx_crc32c_sw(c, buf, lens[k]);
			clock_gettime(CLOCK_MONOTONIC, &b);
			ns[j] = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e6;
		}
		printf("# crc32c of %zu bytes: table %.1f ns, sse4.2 %.1f ns (%x)\n", lens[k],
		       ns[0], ns[1], c & 1);
	}
}

static void test_round_trip(void)
{
	enum xtx_logr_status st;
	struct xtx_logw w;
	uint64_t off;

	fresh_dir();
	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX), "open");
	CHECK(!append_range(&w, 0, 15000, 700), "append");
	CHECK(!xtx_logw_sync(&w) && w.syncs == 1, "sync");
	CHECK(xtx_logw_append(&w, (struct xtx_log_entry[]){ mk(15001) }, 1) == -EINVAL,
	      "a seq that does not follow is refused");
	xtx_logw_close(&w);
	CHECK(read_all(0, 0, &st, &off) == 15000, "15000 records back");
	CHECK(st == XTX_LOGR_OK && off == HDR + 15000 * REC, "clean end: %s at %llu",
	      xtx_logr_status_name(st), (unsigned long long)off);
	/* made without a spare, the segment is zero-filled a chunk ahead of the appends */
	CHECK(file_size(seg0()) >= (off_t)(HDR + 15000 * REC + (1 << 19)) &&
	      file_size(seg0()) % 4096 == 0 && w.zero_fills >= 2, "zeros ahead: size %lld",
	      (long long)file_size(seg0()));
}

static void test_torn_tail_cut(void)
{
	struct xtx_logscan sc;
	enum xtx_logr_status st;
	struct xtx_logw w;
	uint64_t off;

	fresh_dir();
	xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX);
	append_range(&w, 0, 20, 20);
	xtx_logw_close(&w);
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/%s", dir, seg0());
		CHECK(!truncate(path, HDR + 20 * REC - 10), "truncate -s -10");
	}
	CHECK(!xtx_logfile_scan(dirfd_, seg0(), &sc), "scan");
	CHECK(sc.status == XTX_LOGR_TORN && sc.good == 19 && sc.end == HDR + 19 * REC,
	      "torn after 19: %s good %llu end %llu", xtx_logr_status_name(sc.status),
	      (unsigned long long)sc.good, (unsigned long long)sc.end);
	CHECK(read_all(0, 0, &st, &off) == 19 && st == XTX_LOGR_TORN, "reader stops at the tear");

	/* recovery: the ring still holds 15..24 (head 15); 19 was never made durable */
	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep1, 15, 25, XTX_LOGFILE_SEG_MAX), "reopen");
	CHECK(w.next_seq == 19 && w.seg == 0 && w.cut_bytes == REC - 10,
	      "resumes at 19 in segment 0 after cutting %llu", (unsigned long long)w.cut_bytes);
	CHECK(!append_range(&w, 19, 25, 8), "append the rest from the ring");
	xtx_logw_sync(&w);
	xtx_logw_close(&w);
	CHECK(read_all(0, 0, &st, &off) == 25 && st == XTX_LOGR_OK,
	      "0..24 exactly once, torn record never replayed");
}

static void test_flipped_byte(void)
{
	struct xtx_logscan sc;
	struct xtx_logw w;

	off_t size;

	fresh_dir();
	xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX);
	append_range(&w, 0, 10, 10);
	xtx_logw_close(&w);
	size = file_size(seg0());
	/* the value of record 4 */
	corrupt_byte(seg0(), HDR + 4 * REC + 60);
	xtx_logfile_scan(dirfd_, seg0(), &sc);
	CHECK(sc.status == XTX_LOGR_BAD_CRC && sc.good == 4 && sc.end == HDR + 4 * REC,
	      "bad crc at record 4: %s good %llu", xtx_logr_status_name(sc.status),
	      (unsigned long long)sc.good);
	/* damage before the tail is not a crash: the writer leaves it and starts anew */
	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep1, 10, 10, XTX_LOGFILE_SEG_MAX), "reopen");
	CHECK(w.seg == 1 && w.next_seq == 10, "new segment %u at %llu", w.seg,
	      (unsigned long long)w.next_seq);
	xtx_logw_close(&w);
	CHECK(file_size(seg0()) == size, "the damaged segment is kept whole");

	/* the last record's CRC: a torn write */
	fresh_dir();
	xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX);
	append_range(&w, 0, 10, 10);
	xtx_logw_close(&w);
	corrupt_byte(seg0(), HDR + 9 * REC + 88);	/* its crc */
	xtx_logfile_scan(dirfd_, seg0(), &sc);
	CHECK(sc.status == XTX_LOGR_TORN && sc.good == 9, "bad last record is torn: %s",
	      xtx_logr_status_name(sc.status));

	/* a header byte */
	corrupt_byte(seg0(), 12);
	xtx_logfile_scan(dirfd_, seg0(), &sc);
	CHECK(sc.status == XTX_LOGR_BAD_HDR && !sc.hdr_ok && !sc.good, "bad header: %s",
	      xtx_logr_status_name(sc.status));
}

static void test_seq_gap(void)
{
	struct xtx_logfile_rec rec;
	struct xtx_log_entry e;
	struct xtx_logscan sc;
	struct xtx_logw w;
	int fd;

	fresh_dir();
	xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX);
	append_range(&w, 0, 5, 5);
	xtx_logw_close(&w);
	/* seq 6 after 4, with a valid CRC: a gap, not a tear */
	e = mk(6);
	xtx_logfile_rec_make(&rec, &e);
	fd = openat(dirfd_, seg0(), O_WRONLY);
	CHECK(pwrite(fd, &rec, REC, HDR + 5 * REC) == REC, "write");
	e = mk(7);
	xtx_logfile_rec_make(&rec, &e);
	CHECK(pwrite(fd, &rec, REC, HDR + 6 * REC) == REC, "write");
	close(fd);
	xtx_logfile_scan(dirfd_, seg0(), &sc);
	CHECK(sc.status == XTX_LOGR_BAD_SEQ && sc.good == 5 && sc.end == HDR + 5 * REC,
	      "gap after 4: %s good %llu", xtx_logr_status_name(sc.status),
	      (unsigned long long)sc.good);
}

static void test_rotation(void)
{
	struct xtx_logseg *segs;
	enum xtx_logr_status st;
	struct xtx_logw w;
	uint64_t off;
	size_t n = 0;

	fresh_dir();
	xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, HDR + 10 * REC);
	CHECK(!append_range(&w, 0, 35, 7), "append");
	xtx_logw_sync(&w);
	xtx_logw_close(&w);
	xtx_logfile_list(dirfd_, &segs, &n);
	CHECK(n == 4 && segs[3].seg == 3, "4 segments of 10 records at most: %zu", n);
	free(segs);
	CHECK(read_all(0, 0, &st, &off) == 35 && st == XTX_LOGR_OK, "continuous across segments");
}

static void test_resume_and_epochs(void)
{
	struct xtx_logseg *segs;
	struct xtx_logw w;
	size_t n = 0;

	fresh_dir();
	xtx_logw_open(&w, dirfd_, 1, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX);
	append_range(&w, 0, 10, 10);
	xtx_logw_close(&w);

	/* a restarted drain: head 5, tail 20; 5..9 are on disk already */
	xtx_logw_open(&w, dirfd_, 1, &ep1, 5, 20, XTX_LOGFILE_SEG_MAX);
	CHECK(w.seg == 0 && w.next_seq == 10, "resume at 10, not at head: seg %u next %llu",
	      w.seg, (unsigned long long)w.next_seq);
	xtx_logw_close(&w);

	/* head beyond what is on disk: entries are missing; never glue across the hole */
	xtx_logw_open(&w, dirfd_, 1, &ep1, 15, 20, XTX_LOGFILE_SEG_MAX);
	CHECK(w.seg == 1 && w.next_seq == 15, "new segment at 15: seg %u next %llu", w.seg,
	      (unsigned long long)w.next_seq);
	CHECK(!append_range(&w, 15, 20, 5), "append 15..19");
	xtx_logw_close(&w);

	/* a CPU that never logs leaves no file */
	xtx_logw_open(&w, dirfd_, 3, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX);
	CHECK(!xtx_logw_sync(&w), "sync with nothing written");
	xtx_logw_close(&w);

	/* a new ring incarnation starts again at 0, in a new segment */
	xtx_logw_open(&w, dirfd_, 1, &ep2, 0, 0, XTX_LOGFILE_SEG_MAX);
	CHECK(w.seg == 2 && w.next_seq == 0, "new incarnation: seg %u next %llu", w.seg,
	      (unsigned long long)w.next_seq);
	CHECK(!append_range(&w, 0, 3, 3), "append 0..2 again");
	xtx_logw_close(&w);

	xtx_logfile_list(dirfd_, &segs, &n);
	CHECK(n == 3 && segs[0].cpu == 1, "3 segments of cpu 1: %zu", n);
	free(segs);
}

/* Preallocated: appends never change a segment's size; spares start the next ones. */
static void test_prealloc_size(void)
{
	const uint64_t seg_max = HDR + 100 * REC;
	const off_t want = (off_t)xtx_logfile_seg_size(seg_max);
	enum xtx_logr_status st;
	struct xtx_logseg *segs;
	struct xtx_logw w;
	uint64_t off, seq;
	bool same = true;
	size_t n = 0, i;

	fresh_dir();
	CHECK(want == 3 * 4096, "a segment of 100 records is 3 pages: %lld", (long long)want);
	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, seg_max), "open");
	CHECK(!append_range(&w, 0, 1, 1) && file_size(seg0()) == want, "whole from the start: %lld",
	      (long long)file_size(seg0()));
	printf("# %s\n", w.direct ? "O_DIRECT" : "through the page cache");
	for (seq = 1; seq < 100; seq += 9) {
		append_range(&w, seq, seq + 9 < 100 ? seq + 9 : 100, 9);
		xtx_logw_sync(&w);
		same = same && file_size(seg0()) == want;
	}
	CHECK(same, "the size never changes: %lld", (long long)file_size(seg0()));
	/* the next segment comes from the spare made meanwhile, and a new spare follows */
	CHECK(wait_spare(0), "a spare is made");
	CHECK(!append_range(&w, 100, 150, 50) && w.seg == 1 && w.spares_used == 1,
	      "rotated onto the spare: segment %u, %llu spares", w.seg,
	      (unsigned long long)w.spares_used);
	CHECK(wait_spare(0), "and another one");
	xtx_logw_close(&w);
	xtx_logfile_list(dirfd_, &segs, &n);
	for (i = 0; i < n; i++)
		CHECK(file_size(segs[i].name) == want, "%s: %lld bytes", segs[i].name,
		      (long long)file_size(segs[i].name));
	CHECK(n == 2, "2 segments, the spare not among them: %zu", n);
	free(segs);
	CHECK(read_all(0, 0, &st, &off) == 150 && st == XTX_LOGR_OK && off == HDR + 50 * REC,
	      "150 records, the second segment ends among its zeros at %llu",
	      (unsigned long long)off);

	/* a new incarnation takes the spare at once; rotate() cuts the segment it leaves */
	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep2, 0, 0, seg_max), "open again");
	CHECK(!append_range(&w, 0, 7, 7) && w.seg == 2 && w.spares_used == 1 && !w.zero_fills,
	      "segment 2 from the spare");
	{
		uint32_t next;
		char name[40];

		CHECK(!xtx_logw_rotate(&w, &next) && next == 3, "rotate");
		snprintf(name, sizeof(name), "log-cpu0-000002.xlog");
		CHECK(file_size(name) == (off_t)(HDR + 7 * REC), "cut to its end: %lld",
		      (long long)file_size(name));
	}
	xtx_logw_close(&w);
}

/* The end of a preallocated segment is found among its zeros after a restart. */
static void test_prealloc_resume(void)
{
	enum xtx_logr_status st;
	struct xtx_logscan sc;
	struct xtx_logw w;
	uint64_t off;
	off_t size;

	fresh_dir();
	xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX);
	/* 138 records: the end is inside a page, whose first part the next write rewrites */
	CHECK(!append_range(&w, 0, 138, 50), "append 0..137");
	xtx_logw_sync(&w);
	xtx_logw_close(&w);
	/* another CPU's writer in between, so no buffer still holds CPU 0's last page */
	xtx_logw_open(&w, dirfd_, 1, &ep1, 1000, 1000, XTX_LOGFILE_SEG_MAX);
	append_range(&w, 1000, 1140, 140);
	xtx_logw_close(&w);
	size = file_size(seg0());
	CHECK(!xtx_logfile_scan(dirfd_, seg0(), &sc) && sc.status == XTX_LOGR_OK &&
	      sc.good == 138 && sc.end == HDR + 138 * REC && sc.file_size == (uint64_t)size,
	      "end among the zeros: %s good %llu end %llu", xtx_logr_status_name(sc.status),
	      (unsigned long long)sc.good, (unsigned long long)sc.end);

	/* a restarted drain: the ring holds 100..199 */
	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep1, 100, 200, XTX_LOGFILE_SEG_MAX) &&
	      w.seg == 0 && w.next_seq == 138 && !w.cut_bytes,
	      "resumes at 138 in segment 0: seg %u next %llu", w.seg,
	      (unsigned long long)w.next_seq);
	CHECK(!append_range(&w, 138, 200, 7), "append 138..199");
	xtx_logw_sync(&w);
	xtx_logw_close(&w);
	CHECK(read_all(0, 0, &st, &off) == 200 && st == XTX_LOGR_OK && off == HDR + 200 * REC,
	      "0..199 exactly once: %s at %llu", xtx_logr_status_name(st),
	      (unsigned long long)off);
	CHECK(file_size(seg0()) == size, "the same size: %lld", (long long)file_size(seg0()));

	/* cut to its end (as a segment left for good is), then resumed after all */
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/%s", dir, seg0());
		CHECK(!truncate(path, HDR + 200 * REC), "cut to the end");
	}
	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep1, 150, 250, XTX_LOGFILE_SEG_MAX) &&
	      w.seg == 0 && w.next_seq == 200, "resumes the cut segment at 200: next %llu",
	      (unsigned long long)w.next_seq);
	CHECK(!append_range(&w, 200, 250, 9), "append 200..249");
	xtx_logw_close(&w);
	CHECK(read_all(0, 0, &st, &off) == 250 && st == XTX_LOGR_OK && off == HDR + 250 * REC,
	      "0..249: %s at %llu", xtx_logr_status_name(st), (unsigned long long)off);
	CHECK(file_size(seg0()) > (off_t)(HDR + 250 * REC + 4096), "zeros ahead again: %lld",
	      (long long)file_size(seg0()));
}

/* A record torn in place, zeros after it: torn, and zeroed (not cut off) by the writer. */
static void test_prealloc_torn(void)
{
	static const uint8_t zeros[10], junk[3] = { 1, 2, 3 };
	enum xtx_logr_status st;
	struct xtx_logscan sc;
	struct xtx_logw w;
	uint64_t off;
	off_t size;

	fresh_dir();
	xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX);
	append_range(&w, 0, 20, 20);
	xtx_logw_close(&w);
	size = file_size(seg0());
	/* record 19's last 10 bytes never reached the disk */
	write_bytes(seg0(), HDR + 20 * REC - 10, zeros, sizeof(zeros));
	CHECK(!xtx_logfile_scan(dirfd_, seg0(), &sc) && sc.status == XTX_LOGR_TORN &&
	      sc.good == 19 && sc.end == HDR + 19 * REC && sc.torn_end == HDR + 20 * REC,
	      "torn after 19: %s good %llu end %llu torn_end %llu",
	      xtx_logr_status_name(sc.status), (unsigned long long)sc.good,
	      (unsigned long long)sc.end, (unsigned long long)sc.torn_end);
	CHECK(read_all(0, 0, &st, &off) == 19 && st == XTX_LOGR_TORN, "reader stops at the tear");

	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep1, 15, 25, XTX_LOGFILE_SEG_MAX), "reopen");
	CHECK(w.next_seq == 19 && w.seg == 0 && w.cut_bytes == REC,
	      "resumes at 19 after zeroing %llu bytes", (unsigned long long)w.cut_bytes);
	CHECK(bytes_zero(seg0(), HDR + 19 * REC, REC) && file_size(seg0()) == size,
	      "the torn record is zeros, the size as it was");
	CHECK(!append_range(&w, 19, 25, 4), "append the rest from the ring");
	xtx_logw_sync(&w);
	xtx_logw_close(&w);
	CHECK(read_all(0, 0, &st, &off) == 25 && st == XTX_LOGR_OK,
	      "0..24 exactly once, torn record never replayed");

	/* junk where the next record would go, zeros after it: torn too */
	write_bytes(seg0(), HDR + 25 * REC + 40, junk, sizeof(junk));
	xtx_logfile_scan(dirfd_, seg0(), &sc);
	CHECK(sc.status == XTX_LOGR_TORN && sc.good == 25, "junk at the end is torn: %s",
	      xtx_logr_status_name(sc.status));
	/* an older incarnation's segment is left cut to its end */
	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep2, 0, 0, XTX_LOGFILE_SEG_MAX) && w.seg == 1 &&
	      w.cut_bytes == REC && file_size(seg0()) == (off_t)(HDR + 25 * REC),
	      "left behind, cut to %lld", (long long)file_size(seg0()));
	xtx_logw_close(&w);
}

/* Damage with more data after it is corruption, a zeroed record too: never the end. */
static void test_prealloc_corrupt(void)
{
	static const uint8_t zrec[REC], junk[4] = { 0xde, 0xad, 0xbe, 0xef };
	struct xtx_logscan sc;
	struct xtx_logw w;

	fresh_dir();
	xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX);
	append_range(&w, 0, 10, 10);
	xtx_logw_close(&w);
	/* record 4 lost (zeros), 5..9 still there */
	write_bytes(seg0(), HDR + 4 * REC, zrec, REC);
	xtx_logfile_scan(dirfd_, seg0(), &sc);
	CHECK(sc.status == XTX_LOGR_BAD_CRC && sc.good == 4 && sc.end == HDR + 4 * REC,
	      "a zeroed record before good ones: %s good %llu", xtx_logr_status_name(sc.status),
	      (unsigned long long)sc.good);
	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep1, 10, 10, XTX_LOGFILE_SEG_MAX) && w.seg == 1 &&
	      w.next_seq == 10, "the writer leaves it alone: segment %u", w.seg);
	xtx_logw_close(&w);

	/* bytes far past the end, among the zeros */
	fresh_dir();
	xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, XTX_LOGFILE_SEG_MAX);
	append_range(&w, 0, 10, 10);
	xtx_logw_close(&w);
	write_bytes(seg0(), HDR + 500 * REC + 7, junk, sizeof(junk));
	xtx_logfile_scan(dirfd_, seg0(), &sc);
	CHECK(sc.status == XTX_LOGR_BAD_CRC && sc.good == 10 && sc.end == HDR + 10 * REC,
	      "data after the first zero record: %s good %llu", xtx_logr_status_name(sc.status),
	      (unsigned long long)sc.good);
}

/* Version 1 segments (their size is their end) are read, and the log goes on after them. */
static void test_version1(void)
{
	struct xtx_logfile_hdr h = {};
	struct xtx_logfile_rec rec;
	enum xtx_logr_status st;
	struct xtx_log_entry e;
	struct xtx_logscan sc;
	struct xtx_logseg *segs;
	struct xtx_logw w;
	uint64_t off, i;
	size_t n = 0;
	char path[128];
	int fd;

	fresh_dir();
	memcpy(h.magic, XTX_LOGFILE_MAGIC, sizeof(h.magic));
	h.version = XTX_LOGFILE_VERSION_GROWN;
	h.first_seq = 0;
	h.rec_size = REC;
	h.map_id = ep1.map_id;
	memcpy(h.boot_id, ep1.boot_id, sizeof(h.boot_id));
	h.crc = xtx_crc32c(0, &h, offsetof(struct xtx_logfile_hdr, crc));
	fd = openat(dirfd_, seg0(), O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(write(fd, &h, HDR) == HDR, "header");
	for (i = 0; i < 10; i++) {
		e = mk(i);
		xtx_logfile_rec_make(&rec, &e);
		if (write(fd, &rec, REC) != REC)
			break;
	}
	close(fd);
	CHECK(!xtx_logfile_scan(dirfd_, seg0(), &sc) && sc.status == XTX_LOGR_OK &&
	      sc.good == 10 && sc.end == HDR + 10 * REC, "version 1 read: %s good %llu",
	      xtx_logr_status_name(sc.status), (unsigned long long)sc.good);
	snprintf(path, sizeof(path), "%s/%s", dir, seg0());
	CHECK(!truncate(path, HDR + 10 * REC - 10), "truncate -s -10");
	xtx_logfile_scan(dirfd_, seg0(), &sc);
	CHECK(sc.status == XTX_LOGR_TORN && sc.good == 9 && sc.torn_end == HDR + 10 * REC - 10,
	      "version 1 torn: %s good %llu", xtx_logr_status_name(sc.status),
	      (unsigned long long)sc.good);
	/* the same incarnation goes on, in a new (preallocated) segment after the cut */
	CHECK(!xtx_logw_open(&w, dirfd_, 0, &ep1, 5, 20, XTX_LOGFILE_SEG_MAX) && w.seg == 1 &&
	      w.next_seq == 9 && w.cut_bytes == REC - 10, "continues at 9 in segment %u", w.seg);
	CHECK(file_size(seg0()) == (off_t)(HDR + 9 * REC), "version 1 cut short");
	CHECK(!append_range(&w, 9, 20, 11), "append 9..19");
	xtx_logw_close(&w);
	xtx_logfile_list(dirfd_, &segs, &n);
	CHECK(n == 2, "2 segments: %zu", n);
	free(segs);
	CHECK(read_all(0, 0, &st, &off) == 20 && st == XTX_LOGR_OK, "0..19 across the versions");
}

/* A write that fails part way is zeroed again: no partial record, and the size stays. */
static void test_failed_write(void)
{
	const uint64_t seg_max = HDR + 300 * REC;
	const off_t want = (off_t)xtx_logfile_seg_size(seg_max);
	struct rlimit old, lim;
	enum xtx_logr_status st;
	struct xtx_logscan sc;
	struct xtx_logw w;
	uint64_t off;
	int err;

	fresh_dir();
	signal(SIGXFSZ, SIG_IGN);
	xtx_logw_open(&w, dirfd_, 0, &ep1, 0, 0, seg_max);
	CHECK(!append_range(&w, 0, 1, 1) && xtx_logw_sync(&w) == 0, "append 0");
	CHECK(wait_spare(0), "the spare is made before the limit");
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 8192;	/* records 1..87 fit below it, 88 straddles it */
	setrlimit(RLIMIT_FSIZE, &lim);
	err = append_range(&w, 1, 201, 200);
	setrlimit(RLIMIT_FSIZE, &old);
	CHECK(err == -EFBIG && w.next_seq == 1, "the write fails: %s, next %llu", strerror(-err),
	      (unsigned long long)w.next_seq);
	CHECK(!xtx_logfile_scan(dirfd_, seg0(), &sc) && sc.status == XTX_LOGR_OK &&
	      sc.good == 1 && file_size(seg0()) == want,
	      "nothing of it left: %s good %llu size %lld", xtx_logr_status_name(sc.status),
	      (unsigned long long)sc.good, (long long)file_size(seg0()));
	CHECK(!append_range(&w, 1, 201, 200), "the same append again");
	xtx_logw_close(&w);
	CHECK(read_all(0, 0, &st, &off) == 201 && st == XTX_LOGR_OK, "0..200");
}

int main(void)
{
	RUN_CASE(test_crc32c_vector);
	RUN_CASE(test_crc32c_hw_sw);
	bench_crc32c();
	RUN_CASE(test_round_trip);
	RUN_CASE(test_torn_tail_cut);
	RUN_CASE(test_flipped_byte);
	RUN_CASE(test_seq_gap);
	RUN_CASE(test_rotation);
	RUN_CASE(test_resume_and_epochs);
	RUN_CASE(test_prealloc_size);
	RUN_CASE(test_prealloc_resume);
	RUN_CASE(test_prealloc_torn);
	RUN_CASE(test_prealloc_corrupt);
	RUN_CASE(test_version1);
	RUN_CASE(test_failed_write);
	/* where O_DIRECT is refused, the same writes go through the page cache */
	xtx_logfile_direct = false;
	RUN_CASE(test_round_trip);
	RUN_CASE(test_prealloc_size);
	RUN_CASE(test_prealloc_resume);
	RUN_CASE(test_prealloc_torn);
	RUN_CASE(test_failed_write);
	fresh_dir();	/* removes the last one */
	rmdir(dir);
	printf("# test_logfile: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
