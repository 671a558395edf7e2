/* SPDX-License-Identifier: GPL-2.0-only */
/* HADES transactions committing at a stop: saved with the maps' end, put back at the next start. */
#ifndef XTXD_HADES_CARRY_H
#define XTXD_HADES_CARRY_H

#include "attach.h"
#include "target.h"

/*
 * A HADES participant that Acked an intend-to-commit holds the staged
 * writes only in its slot; its coordinator (or the resolver) validates
 * them later, so a stop that drops the maps would lose writes the
 * transaction is committed to.  At a stop that removes the maps, after
 * the program is detached (no op can change a slot any more), every slot
 * COMMITTING (with staged writes, or a reader's Ack) is saved, raw, with
 * the values over a slot it staged (XTX_MAP_HADES_BIG), to
 * DATADIR/hades.xcarry (written aside, synced, renamed over), with the
 * filter and value settings its bits were made under.  The next start that
 * creates the maps, under the same settings, puts them back before requests
 * are let through: each in a free slot of its probe sequence, its registry
 * entry and occupancy bit, its exact key sets, its big values at the
 * entries of its new index, and its lease clock
 * restarted, so HVALIDATE, HABORT or the resolver ends it as if there had
 * been no stop.  The file goes only once that start serves
 * (xtxd_hades_carry_done): a start that fails later drops the maps again.
 */
#define XTXD_HADES_CARRY_FILE	"hades.xcarry"

/* Saves the committing slots (removes an old file when there are none); 0 or -errno. */
int xtxd_hades_carry_save(const struct xtx_target *t, const struct xtx_load_opts *load,
			  const char *dir);
/*
 * Puts the saved slots back into freshly created maps; 0 (also with no
 * file), or a negative errno after printing why: better not to start than
 * to drop a committed transaction's writes (or to put back filters made
 * under other --hades-bf-bits / --hades-hashes / --value-size).
 */
int xtxd_hades_carry_restore(const struct xtx_target *t, const struct xtx_load_opts *load,
			     const char *dir);
/* The start that restored them serves: the file is done with. */
void xtxd_hades_carry_done(const char *dir);

#endif /* XTXD_HADES_CARRY_H */
