/* SPDX-License-Identifier: GPL-2.0-only */
/* HADES transactions committing at a stop: saved with the maps' end, put back at the next start. */
#ifndef XTXD_HADES_CARRY_H
#define XTXD_HADES_CARRY_H

#include "target.h"

/*
 * A HADES participant that Acked an intend-to-commit holds the staged
 * writes only in its slot; its coordinator (or the resolver) validates
 * them later, so a stop that drops the maps would lose writes the
 * transaction is committed to.  At a stop that removes the maps, after
 * the program is detached (no op can change a slot any more), every slot
 * COMMITTING with staged writes is saved, raw, to DATADIR/hades.xcarry
 * (written aside, synced, renamed over).  The next start that creates the
 * maps puts them back before requests are let through: each in a free slot
 * of its probe sequence, its registry entry and occupancy bit, its exact
 * key sets, and its lease clock restarted, so HVALIDATE, HABORT or the
 * resolver ends it as if there had been no stop.  The file then goes.
 */
#define XTXD_HADES_CARRY_FILE	"hades.xcarry"

/* Saves the committing slots (removes an old file when there are none); 0 or -errno. */
int xtxd_hades_carry_save(const struct xtx_target *t, const char *dir);
/*
 * Puts the saved slots back into freshly created maps; 0 (also with no
 * file), or a negative errno after printing why: better not to start than
 * to drop a committed transaction's writes.
 */
int xtxd_hades_carry_restore(const struct xtx_target *t, const char *dir);

#endif /* XTXD_HADES_CARRY_H */
