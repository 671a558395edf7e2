/* SPDX-License-Identifier: GPL-2.0-only */
/* The transaction log on disk: segment files of CRC-checked entries, their writer and reader. */
#ifndef XTX_LOGFILE_H
#define XTX_LOGFILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <xtx/log.h>
#include "target.h"

/*
 * Each CPU's log is a series of append-only segments
 * <dir>/log-cpuC-NNNNNN.xlog: a 64-byte header, then records of a
 * struct xtx_log_entry and the CRC32C of its bytes (92 bytes, no padding,
 * host byte order).  Within a segment seqs increase by one.  A segment
 * names the ring incarnation its seqs belong to (boot id + id of the
 * cursor map): a new one (the maps were recreated) starts again at 0, in
 * a new segment.  A record is on disk before xtxd advances the ring's head
 * over it, so a crash leaves at most a torn tail, which the reader detects
 * and the writer cuts: it is never replayed.
 *
 * Version 2 segments are preallocated: created full of zeros at their final
 * size (XTX_LOGFILE_SEG_MAX), so appending overwrites blocks already
 * written and an fdatasync flushes data only, not the file's new size and
 * extents as well (an inode write, or a journal commit).  The log ends at
 * the first all-zero record; a torn record is one that fails its CRC with
 * nothing but zeros after it.  Damage with more data after it is
 * corruption, as in version 1 (so is what a power cut leaves if the disk
 * kept a later unsynced write and lost an earlier one: recovery then
 * stops rather than guess).  A segment the writer leaves for good is cut
 * to its end.  Version 1 segments (the file's size is the log's end) are
 * still read, never appended to.
 */
#define XTX_LOGFILE_MAGIC	"XTXLOG\r\n"
#define XTX_LOGFILE_VERSION	2
#define XTX_LOGFILE_VERSION_GROWN	1	/* not preallocated: its size is its end */
#define XTX_LOGFILE_SEG_MAX	(64ull << 20)	/* rotate at this size */
#define XTX_LOGFILE_DIR_ROOT	"/var/lib/xtx"
/* fdatasync a log at most this often: xtxd's and xtx-udpd's --log-sync default */
#define XTX_LOGFILE_SYNC_DEFAULT_NS	(2ull * 1000 * 1000)

struct xtx_log_epoch {
	uint8_t boot_id[16];	/* /proc/sys/kernel/random/boot_id */
	uint32_t map_id;	/* the cursor map's id: unique within a boot */
};

struct xtx_logfile_hdr {
	char magic[8];
	uint32_t version;
	uint32_t cpu;
	uint64_t first_seq;	/* seq of the first record */
	uint32_t rec_size;	/* sizeof(struct xtx_logfile_rec) */
	uint32_t map_id;
	uint8_t boot_id[16];
	uint64_t created_ns;	/* CLOCK_REALTIME: for people only */
	uint32_t seg;		/* the number in the file name */
	uint32_t crc;		/* CRC32C of the bytes before it */
};

_Static_assert(sizeof(struct xtx_logfile_hdr) == 64, "log file header layout");

struct xtx_logfile_rec {
	struct xtx_log_entry e;
	uint32_t crc;		/* CRC32C of e */
} __attribute__((packed));

_Static_assert(sizeof(struct xtx_logfile_rec) == 92, "log record layout");

/*
 * CRC32C (Castagnoli): crc32c(0, "123456789", 9) == 0xe3069283.  The SSE4.2
 * instruction where the CPU has it (chosen at the first call), else the
 * table, sliced by 8; both give the same bits, so either reads the other's logs.
 */
uint32_t xtx_crc32c(uint32_t crc, const void *buf, size_t len);
/* The two implementations, for tests and benchmarks; _hw is _sw where unavailable. */
uint32_t xtx_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t xtx_crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool xtx_crc32c_hw_available(void);

void xtx_logfile_rec_make(struct xtx_logfile_rec *r, const struct xtx_log_entry *e);

/* Reads the boot id; 0 or a negative errno. */
int xtx_log_epoch_boot_id(uint8_t id[16]);
bool xtx_log_epoch_eq(const struct xtx_log_epoch *a, const struct xtx_logfile_hdr *h);

/* XTX_LOGFILE_DIR_ROOT/<ns_tag>-<iface>: xtxd's data directory unless --data-dir. */
void xtx_logfile_default_dir(const struct xtx_target *t, char *buf, size_t len);
/* XTX_RUN_DIR/<ns_tag>-<iface>.logdrain: the drain's counters, rewritten each second. */
void xtx_logdrain_stats_path(const struct xtx_target *t, char *buf, size_t len);

/* ---- listing ---- */

struct xtx_logseg {
	uint32_t cpu;
	uint32_t seg;
	char name[40];
};

/*
 * The segments in directory dirfd, sorted by CPU then segment number.  0
 * and a malloc-ed array (free it), or a negative errno.
 */
int xtx_logfile_list(int dirfd, struct xtx_logseg **segs, size_t *n);

/* ---- reading ---- */

enum xtx_logr_status {
	XTX_LOGR_OK = 0,	/* read to the end of the log */
	XTX_LOGR_TORN,		/* the last record is short or fails its CRC: a crash cut it */
	XTX_LOGR_BAD_CRC,	/* a record before the last fails its CRC (or is zeros) */
	XTX_LOGR_BAD_SEQ,	/* a record whose seq does not follow the previous one */
	XTX_LOGR_BAD_HDR,	/* no valid header */
	XTX_LOGR_IO,		/* read error (errno in err) */
};

struct xtx_logr {
	int fd;
	struct xtx_logfile_hdr hdr;
	uint64_t file_size;
	uint64_t off;		/* where the next record starts: the end of the good part */
	uint64_t torn_end;	/* XTX_LOGR_TORN: off..torn_end is the torn part */
	uint64_t good;		/* records read and verified */
	uint64_t next_seq;	/* seq the next record must have */
	enum xtx_logr_status status;
	int err;
	uint8_t *buf;		/* read-ahead */
	size_t buf_len, buf_pos;
	bool prealloc;		/* version 2: zeros after the log's end */
	bool ended;		/* the walk is over: status says why */
	unsigned int rereads;	/* records read again for a writer caught mid-write */
	struct xtx_logfile_rec bad;	/* the record that stopped the walk, if any */
};

const char *xtx_logr_status_name(enum xtx_logr_status s);

/*
 * Opens dir/name (dirfd may be AT_FDCWD with a path) and checks its
 * header.  0, or a negative errno when the file cannot be opened; a bad
 * header is not an error: r->status says so and next() returns 0.
 */
int xtx_logr_open(struct xtx_logr *r, int dirfd, const char *name);
/*
 * The next verified record: 1 and *e, or 0 at the end or at the first
 * torn or corrupt record (r->status, r->off: where the good part ends).
 */
int xtx_logr_next(struct xtx_logr *r, struct xtx_log_entry *e);
void xtx_logr_close(struct xtx_logr *r);

/* Walks a whole file: header, count, where it stops and why. */
struct xtx_logscan {
	struct xtx_logfile_hdr hdr;
	bool hdr_ok;
	uint64_t file_size;
	uint64_t good;
	uint64_t end;		/* offset where the good part ends */
	uint64_t torn_end;	/* XTX_LOGR_TORN: end..torn_end is the torn part */
	enum xtx_logr_status status;
	int err;
};

int xtx_logfile_scan(int dirfd, const char *name, struct xtx_logscan *s);

/*
 * The records in a segment, counted without reading them all: from the
 * size for version 1 (and a file without a valid header); in a
 * preallocated segment, by bisecting for the first all-zero record, then
 * checking the CRC of the one before it.  *partial: the bytes of a torn
 * last record.  0 or a negative errno.
 */
int xtx_logfile_count(int dirfd, const char *name, uint64_t *records, uint64_t *partial);

/*
 * Removes a torn tail (end..torn_end, as the reader found it) from the
 * segment open for writing (not O_DIRECT) in fd: a version-1 segment is
 * cut short, a preallocated one has the torn part zeroed and keeps its
 * size.  Then syncs it.  0 or a negative errno.
 */
int xtx_logfile_cut(int fd, uint32_t version, uint64_t end, uint64_t torn_end);

/* The size of a preallocated segment that rotates at seg_max. */
uint64_t xtx_logfile_seg_size(uint64_t seg_max);

/*
 * Whether writers use O_DIRECT where the file system has it (default
 * true); for tests and benchmarks.
 */
extern bool xtx_logfile_direct;

/* ---- writing: one CPU's log ---- */

struct xtx_logw {
	int dirfd;		/* borrowed */
	uint32_t cpu;
	struct xtx_log_epoch ep;
	uint64_t seg_max;
	uint64_t seg_size;	/* a whole preallocated segment: xtx_logfile_seg_size() */
	int fd;			/* current segment, -1 until the first append */
	bool direct;		/* fd is O_DIRECT */
	uint32_t seg;
	uint64_t size;		/* bytes of the current segment known good */
	uint64_t file_size;	/* zeros from size to here */
	uint64_t next_seq;	/* seq the next appended entry must have */
	bool dirty;		/* written since the last sync */
	int sync_err;		/* a failed sync: every later sync and append fails with it */
	uint64_t cut_bytes;	/* torn tail removed when opening */
	uint64_t syncs;
	uint64_t spares_used;	/* segments started from a spare */
	uint64_t zero_fills;	/* zeros written ahead of appends (no spare was ready) */
	/*
	 * Whole pages are written, so the kernel never reads a block to
	 * update part of it: buf holds the current page's bytes up to size,
	 * then the records being appended.
	 */
	uint8_t *buf;
	size_t buf_cap;		/* records */
	/* the next segment's spare, zero-filled by a thread of its own */
	pthread_t spare_tid;
	bool spare_running;	/* started, not yet joined */
	int spare_done;		/* atomic: the thread has finished */
	int spare_stop;		/* atomic: asked to give up */
	int spare_err;
	uint64_t progress;	/* atomic: size, for the spare thread's pace */
};

/*
 * Opens CPU cpu's log in dirfd for ring incarnation ep whose undrained
 * entries are head..tail-1.  A torn tail of the last segment is cut.  When
 * that segment is of this incarnation and ends with an entry in
 * head-1..tail-1 (a previous xtxd wrote it but crashed before advancing
 * head), appending continues after it and w->next_seq says where: the
 * caller skips what is already on disk (in that segment, or in the next
 * when it is of version 1).  Otherwise a new segment starts at head,
 * created with the first append, and the last one is cut to its end.
 * The resumed part is synced before this returns.  0 or a negative errno,
 * after printing why.
 *
 * Segments start from a spare, log-cpuC.spare: a preallocated file the
 * writer zero-fills on a thread of its own while the segment before fills
 * up.  When none is ready, the segment is zero-filled a little ahead of
 * the appends instead.
 */
int xtx_logw_open(struct xtx_logw *w, int dirfd, uint32_t cpu, const struct xtx_log_epoch *ep,
		  uint64_t head, uint64_t tail, uint64_t seg_max);
/*
 * Appends n entries whose seqs must be next_seq, next_seq+1, ...
 * (-EINVAL otherwise), rotating segments at seg_max.  What a failed write
 * left is zeroed again, so the file never holds a partial record we know of.
 */
int xtx_logw_append(struct xtx_logw *w, const struct xtx_log_entry *e, size_t n);
/* Makes everything appended durable (fdatasync); 0 or a negative errno. */
int xtx_logw_sync(struct xtx_logw *w);
/*
 * Syncs and closes the current segment, cut to its end, so the next
 * append starts a new one; returns (in *next) its number: every segment
 * below it is complete.
 */
int xtx_logw_rotate(struct xtx_logw *w, uint32_t *next);
void xtx_logw_close(struct xtx_logw *w);

/*
 * A directory stream over dirfd from its first entry, leaving dirfd open
 * for the caller (readdir on a dup); NULL with errno set on failure.
 */
DIR *xtx_opendir_at(int dirfd);

#endif /* XTX_LOGFILE_H */
