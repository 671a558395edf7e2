/* SPDX-License-Identifier: GPL-2.0-only */
/* Startup: the store rebuilt from the transaction writes earlier runs logged. */
#ifndef XTX_UDPD_RECOVER_H
#define XTX_UDPD_RECOVER_H

#include "store.h"

/*
 * Replays every segment in dir (user/lib/logfile.h) into s: the writes of
 * each transaction whose record here is complete (its LAST entry came, and
 * as many writes as it counts) are installed at their logged versions,
 * a key keeping the highest.  xtx-udpd has no resolver to ask the other
 * replicas, so a complete record is taken as committed, as it is on a
 * single server; with replicas, a transaction whose coordinator aborted
 * after this one logged it whole (its primary refused the append: the
 * lease had taken the lock) comes back here.  Values over XTX_VALUE_INLINE are reassembled from their
 * continuation entries; a torn tail is ignored.  Plain INSERT/UPDATE/DELETE
 * are not logged and do not come back.  A missing dir is an empty log.
 * 0, or a negative errno after printing why.
 */
int udpd_recover(struct udpd_store *s, const char *dir);

#endif /* XTX_UDPD_RECOVER_H */
