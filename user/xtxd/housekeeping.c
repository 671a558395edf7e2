// SPDX-License-Identifier: GPL-2.0-only
/*
 * xtxd's timed housekeeping.  A snapshot writes the whole store and removes
 * the log segments and older snapshots it covers (log/snapshot.c), which is
 * what bounds the data directory; taken by hand (xtxctl snapshot) or, with
 * --snapshot-every, here on a timer.  The snapshot lock serializes the two.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <urcu.h>
#include "ctl_out.h"
#include "housekeeping.h"
#include "log.h"
#include "log/snapshot.h"

static struct {
	struct xtx_target t;
	struct xtxd_ovf *store;
	uint64_t every_ns;
	pthread_t tid;
	int stop_fd;
	bool running;
	uint64_t snapshots;
} H = { .stop_fd = -1 };

/* Logs what the snapshot said, line by line, instead of sending it anywhere. */
static void log_result(struct xtxd_out *out)
{
	char *line = out->buf, *nl;

	out->buf[out->len < sizeof(out->buf) ? out->len : sizeof(out->buf) - 1] = 0;
	for (; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (*line)
			pr_info("snapshot-every: %s\n", line);
	}
}

static void *housekeeping_main(void *arg)
{
	struct pollfd p = { .fd = H.stop_fd, .events = POLLIN };
	int ms = (int)(H.every_ns / 1000000 ? H.every_ns / 1000000 : 1);

	(void)arg;
	rcu_register_thread();
	/* woken by stop, or every --snapshot-every */
	while (poll(&p, 1, ms) == 0) {
		struct xtxd_out out;

		xtxd_out_init(&out, -1);
		xtxd_snapshot_take(&H.t, H.store, &out);
		log_result(&out);
		__atomic_fetch_add(&H.snapshots, 1, __ATOMIC_RELAXED);
	}
	rcu_unregister_thread();
	return NULL;
}

int xtxd_housekeeping_start(const struct xtx_target *t, struct xtxd_ovf *store, uint64_t every_ns)
{
	int err;

	if (!every_ns)
		return 0;
	H.t = *t;
	H.store = store;
	H.every_ns = every_ns;
	H.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (H.stop_fd < 0) {
		err = -errno;
		pr_warn("housekeeping: %s\n", strerror(-err));
		return err;
	}
	err = -pthread_create(&H.tid, NULL, housekeeping_main, NULL);
	if (err) {
		pr_warn("housekeeping: starting the thread: %s\n", strerror(-err));
		close(H.stop_fd);
		H.stop_fd = -1;
		return err;
	}
	H.running = true;
	pr_info("a snapshot every %llu ms\n", (unsigned long long)(every_ns / 1000000));
	return 0;
}

void xtxd_housekeeping_stop(void)
{
	uint64_t one = 1;

	if (!H.running)
		return;
	if (write(H.stop_fd, &one, sizeof(one)) != sizeof(one))
		pr_warn("housekeeping: waking the thread: %s\n", strerror(errno));
	pthread_join(H.tid, NULL);
	close(H.stop_fd);
	H.stop_fd = -1;
	H.running = false;
}

uint64_t xtxd_housekeeping_snapshots(void)
{
	return __atomic_load_n(&H.snapshots, __ATOMIC_RELAXED);
}
