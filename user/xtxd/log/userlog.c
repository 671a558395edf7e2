// SPDX-License-Identifier: GPL-2.0-only
/* xtxd's own log segments (userlog.h), written with the ring drain's segment writer. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "logfile.h"
#include "logrec.h"
#include "userlog.h"

static struct {
	pthread_mutex_t lock;
	struct xtx_logw w;
	int dirfd;
	int open;
	int expected;		/* xtxd_userlog_expect(): until open, nothing is applied */
	uint64_t appended, syncs;
} U = { .lock = PTHREAD_MUTEX_INITIALIZER, .dirfd = -1 };

int xtxd_userlog_open(const char *dir)
{
	/* map_id 0 never names a ring: these segments are replayed whole, never skipped */
	struct xtx_log_epoch ep = { .map_id = 0 };
	int err;

	err = xtx_log_epoch_boot_id(ep.boot_id);
	if (err)
		return err;
	U.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (U.dirfd < 0) {
		err = -errno;
		fprintf(stderr, "Error: log: opening %s: %s\n", dir, strerror(errno));
		return err;
	}
	err = xtx_logw_open(&U.w, U.dirfd, XTXD_USERLOG_CPU, &ep, 0, 0, XTX_LOGFILE_SEG_MAX);
	if (err) {
		close(U.dirfd);
		U.dirfd = -1;
		return err;
	}
	U.open = 1;
	return 0;
}

int xtxd_userlog_enabled(void)
{
	return __atomic_load_n(&U.open, __ATOMIC_ACQUIRE);
}

void xtxd_userlog_expect(void)
{
	__atomic_store_n(&U.expected, 1, __ATOMIC_RELEASE);
}

/* Expected but not open yet: a write now would be applied and never logged. */
static int not_yet(void)
{
	return __atomic_load_n(&U.expected, __ATOMIC_ACQUIRE) && !xtxd_userlog_enabled();
}

/* U.lock held. */
static int append_locked(struct xtx_log_entry *e, size_t n)
{
	size_t i, k, span;
	int err;

	for (i = 0; i < n; i += span) {
		/* a big value's continuations take their seqs only (a seq leads both layouts) */
		span = xtx_logrec_span(&e[i]);
		if (span > n - i) {
			pr_warn("log: xtxd's own log: a big write without all its continuations: "
				"not logged\n");
			return -EINVAL;
		}
		e[i].seq = U.w.next_seq + i;
		e[i].flags |= XTX_LOGF_DECIDED | XTX_LOGF_LAST;
		e[i].nreplicas = 0;
		e[i].nwrites = 1;
		for (k = 1; k < span; k++)
			e[i + k].seq = U.w.next_seq + i + k;
	}
	err = xtx_logw_append(&U.w, e, n);
	if (!err)
		err = xtx_logw_sync(&U.w);
	if (!err) {
		U.appended += n;
		U.syncs++;
	}
	if (err)
		pr_warn("log: xtxd's own log: %s: the writes it holds are not acknowledged\n",
			strerror(-err));
	return err;
}

int xtxd_userlog_append(struct xtx_log_entry *e, size_t n)
{
	int err;

	if (n && not_yet())
		return -EAGAIN;
	if (!n || !xtxd_userlog_enabled())
		return 0;
	pthread_mutex_lock(&U.lock);
	err = append_locked(e, n);
	pthread_mutex_unlock(&U.lock);
	return err;
}

int xtxd_userlog_append_then(struct xtx_log_entry *e, size_t n, int (*apply)(void *arg),
			     void *arg)
{
	int err = 0;

	if (not_yet())
		return -EAGAIN;
	if (!xtxd_userlog_enabled())
		return apply(arg);
	pthread_mutex_lock(&U.lock);
	if (n)
		err = append_locked(e, n);
	if (!err)
		err = apply(arg);
	pthread_mutex_unlock(&U.lock);
	return err;
}

int xtxd_userlog_rotate(uint32_t *covered)
{
	int err;

	*covered = 0;
	if (!xtxd_userlog_enabled())
		return 0;
	pthread_mutex_lock(&U.lock);
	err = xtx_logw_rotate(&U.w, covered);
	pthread_mutex_unlock(&U.lock);
	return err;
}

void xtxd_userlog_close(void)
{
	if (!xtxd_userlog_enabled())
		return;
	pthread_mutex_lock(&U.lock);
	xtx_logw_sync(&U.w);
	xtx_logw_close(&U.w);
	U.open = 0;
	pthread_mutex_unlock(&U.lock);
	close(U.dirfd);
	U.dirfd = -1;
}
