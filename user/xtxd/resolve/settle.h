/* SPDX-License-Identifier: GPL-2.0-only */
/* Writes logged on this server alone whose coordinator never finished: installed as a restart would. */
#ifndef XTXD_SETTLE_H
#define XTXD_SETTLE_H

#include <stddef.h>
#include <stdint.h>
#include <xtx/log.h>
#include "target.h"

struct xtxd_ovf;

/*
 * A write logged with one replica (this server) is committed by being
 * logged: recovery installs it at the next start (log/recover.c).  A live
 * server must serve the same, so one its coordinator did not install (a
 * COMMIT_PRIMARY that never came: the coordinator died, or it was only ever
 * a log record, as xtxbench log writes) is installed here once it has been
 * in the log for after_ns (--resolve-after), and its lock freed, as the
 * resolver does for writes on several replicas.  Without this a restart
 * changed the data: keys nobody was served appeared after recovery.
 *
 * adopted_dir: the data directory of a start that adopted what a previous
 * xtxd left (else NULL): its logs' single-replica writes the store lacks are
 * followed too, since that xtxd may have drained them and died before
 * installing them.
 */
int xtxd_settle_start(const struct xtx_target *t, struct xtxd_ovf *store, uint64_t after_ns,
		       const char *adopted_dir);
/* The log drain's observer part: notes every single-replica write it drains. */
void xtxd_settle_observe(const struct xtx_log_entry *e, size_t n);
void xtxd_settle_stop(void);

struct xtxd_settle_stats {
	uint64_t tracked;	/* single-replica writes waiting for their age */
	uint64_t installed;	/* ... installed here, their coordinator having left them */
	uint64_t untracked;	/* ... not followed (too many at once): a restart installs them */
};
void xtxd_settle_get_stats(struct xtxd_settle_stats *s);

#endif /* XTXD_SETTLE_H */
