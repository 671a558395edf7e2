// SPDX-License-Identifier: GPL-2.0-only
/* Walking a data directory's log segments as writes (logwalk.h). */
#include <errno.h>
#include <stdlib.h>
#include "logfile.h"
#include "logwalk.h"

int xtx_logwalk(int dirfd, int (*fn)(const struct xtx_log_write *w, void *arg), void *arg)
{
	struct xtx_logseg *segs = NULL;
	struct xtx_log_entry e;
	struct xtx_logrec *rec;
	struct xtx_logr r;
	size_t nsegs = 0, i;
	int err;

	rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	xtx_logrec_init(rec);
	err = xtx_logfile_list(dirfd, &segs, &nsegs);
	for (i = 0; !err && i < nsegs; i++) {
		err = xtx_logr_open(&r, dirfd, segs[i].name);
		if (err)
			break;
		if (i && segs[i - 1].cpu != segs[i].cpu)
			xtx_logrec_reset(rec);
		while (xtx_logr_next(&r, &e) == 1) {
			if (xtx_logrec_feed(rec, &e) != XTX_LOGREC_WRITE)
				continue;
			err = fn(&rec->w, arg);
			if (err)
				break;
		}
		xtx_logr_close(&r);
	}
	free(segs);
	free(rec);
	return err;
}
