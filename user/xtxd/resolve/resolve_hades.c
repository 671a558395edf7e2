// SPDX-License-Identifier: GPL-2.0-only
/* Deciding HADES transactions left committing: find the slots, ask the participants, apply. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <xtx/hades.h>
#include <xtx/log.h>
#include <xtx/maps.h>
#include "clock.h"
#include "log.h"
#include "log/held.h"
#include "log/logdrain.h"
#include "log/snapshot.h"
#include "log/userlog.h"
#include "logfile.h"
#include "logrec.h"
#include "peer_msg.h"
#include "resolve_hades.h"

#define RESEND_EVERY_NS		(200ull * 1000 * 1000)
/* A decided transaction is remembered this long, to answer late questions the same. */
#define KEEP_DECIDED_NS		(600ull * 1000 * 1000 * 1000)
#define LOG_FLUSH_TIMEOUT_NS	(2ull * 1000 * 1000 * 1000)
/*
 * A reader's committing slot (nothing staged) older than this is noted:
 * the lease may reclaim it before anyone asks, and its Ack must not be
 * forgotten.  A reader validated normally leaves committing within a
 * round trip, so only the ones left behind are noted.
 */
#define READER_NOTE_AFTER_NS	(50ull * 1000 * 1000)
/* Continuation entries a staged value of XTX_VALUE_MAX bytes takes in the log. */
#define STAGED_CONT_MAX		((XTX_VALUE_MAX + XTX_LOG_CONT_BYTES - 1) / XTX_LOG_CONT_BYTES)

/* One transaction this server decides, was told about, or answered NOT_HELD for. */
struct hres_txn {
	uint64_t txn;
	uint64_t participants;	/* bitmap of server indices */
	uint64_t answered;	/* participants that answered (self included) */
	uint64_t held;		/* ... HOLD or VALIDATED */
	uint64_t validated;	/* ... VALIDATED: the coordinator had every Ack */
	uint64_t acked;		/* ... acknowledged the decision */
	uint64_t sent_ns;
	uint64_t decided_ns;
	uint64_t seen_ns;	/* acked_reader: when the scan last saw its slot */
	int outcome;		/* enum xtxd_hres_outcome */
	bool deciding;		/* left committing here: this server asks and tells */
	bool apply_pending;	/* a staged write could not go in yet */
	bool unknown_warned;
	bool not_held;		/* answered NOT_HELD: fenced, and never committing here */
	bool acked_reader;	/* seen committing here with nothing staged: it acked */
};

static struct {
	struct xtxd_hres_opts o;
	struct xtx_hades_slot *slots;
	struct xtx_hades_registry *reg;
	int big_fd;		/* XTX_MAP_HADES_BIG: the staged values over a slot */
	size_t slots_len, reg_len;
	uint32_t nslots;
	struct hres_txn *t;
	size_t n, cap;
	uint64_t validated, aborted, fenced, readers_freed;
} H;

static const char *outcome_name(int o)
{
	return o == XTXD_HOUT_VALIDATE ? "validate" : o == XTXD_HOUT_ABORT ? "abort" : "none";
}

/* ---- the table of transactions ---- */

static struct hres_txn *get(uint64_t txn, bool create)
{
	size_t i;

	for (i = 0; i < H.n; i++)
		if (H.t[i].txn == txn)
			return &H.t[i];
	if (!create)
		return NULL;
	if (H.n == H.cap) {
		size_t cap = H.cap ? H.cap * 2 : 16;
		struct hres_txn *t = realloc(H.t, cap * sizeof(*t));

		if (!t)
			return NULL;
		H.t = t;
		H.cap = cap;
	}
	memset(&H.t[H.n], 0, sizeof(H.t[H.n]));
	H.t[H.n].txn = txn;
	return &H.t[H.n++];
}

static void del_at(size_t i)
{
	H.t[i] = H.t[--H.n];
}

/* ---- the slot table, shared with XDP: the same atomics XDP uses ---- */

static uint64_t gone(void)
{
	return H.o.gone ? H.o.gone() : 0;
}

static uint64_t load64(const __u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static uint32_t state_of(uint64_t ctl)
{
	return ctl & XTX_HADES_CTL_STATE_MASK;
}

/* txn's slot (any state but FREE) and the ctl of its tenure, or -1. */
static int find_slot(uint64_t txn, uint64_t *ctl)
{
	uint32_t home = xtx_hades_home(txn, H.nslots), p, idx;

	for (p = 0; p < XTX_HADES_PROBES; p++) {
		struct xtx_hades_slot *s;

		idx = (home + p) % H.nslots;
		s = &H.slots[idx];
		/* owner, ctl, owner: the ctl belongs to txn's tenure (xtx_hades_tenure) */
		if (load64(&s->owner) != txn)
			continue;
		*ctl = load64(&s->ctl);
		if (load64(&s->owner) != txn || state_of(*ctl) == XTX_HS_FREE)
			continue;
		return idx;
	}
	return -1;
}

/* How txn ended here as the last tenant of one of its slots (XTX_HO_*). */
static uint32_t last_outcome(uint64_t txn)
{
	uint32_t home = xtx_hades_home(txn, H.nslots), p;

	for (p = 0; p < XTX_HADES_PROBES; p++) {
		struct xtx_hades_slot *s = &H.slots[(home + p) % H.nslots];

		if (load64(&s->last_txn) == txn)
			return __atomic_load_n(&s->last_outcome, __ATOMIC_ACQUIRE);
	}
	return XTX_HO_NONE;
}

static void reg_drop(uint32_t pos)
{
	if (!pos || pos > XTX_HADES_COMMITTING_MAX)
		return;
	pos--;
	__sync_fetch_and_and(&H.reg->mask, ~(1ull << pos));
	__atomic_store_n(&H.reg->slot[pos], 0, __ATOMIC_RELEASE);
}

/*
 * Ends the tenure ctl of slot idx exactly as XDP's xtx_hades_release_at
 * does: the CAS on ctl loses to a late HVALIDATE or HABORT that released
 * it first, and then nothing else is touched.  True when it was ours.
 */
static bool release(uint32_t idx, uint64_t ctl, uint32_t outcome)
{
	struct xtx_hades_slot *s = &H.slots[idx];
	uint64_t gen = ctl >> XTX_HADES_CTL_GEN_SHIFT, owner = load64(&s->owner);

	if (!__sync_bool_compare_and_swap(&s->ctl, ctl, xtx_hades_ctl(gen, XTX_HS_FREE)))
		return false;
	reg_drop(s->reg_pos);
	s->reg_pos = 0;
	s->nstaged = 0;
	s->last_txn = owner;
	__atomic_store_n(&s->last_outcome, outcome, __ATOMIC_RELEASE);
	__sync_fetch_and_and(&H.reg->used[(idx / 64) % (XTX_HADES_SLOTS_MAX / 64)],
			     ~(1ull << (idx & 63)));
	__atomic_exchange_n(&s->owner, 0, __ATOMIC_SEQ_CST);
	return true;
}

/* ---- fences ---- */

/* Refuses txn's HINTEND (and LOG_APPEND) from now on; with wait, past the grace period. */
static int fence(uint64_t txn, bool wait)
{
	struct timespec grace = { (time_t)(H.o.grace_ns / 1000000000ull),
				  (long)(H.o.grace_ns % 1000000000ull) };
	uint64_t now = xtx_now_ns();
	int err;

	/* the flag first: a run that sees the entry must also look for it */
	err = xtxd_logdrain_arm_fence(true);
	if (err || bpf_map_update_elem(H.o.fence_fd, &txn, &now, BPF_ANY)) {
		err = err ?: -errno;
		pr_warn("resolve: fencing hades txn %#llx: %s\n", (unsigned long long)txn,
			strerror(-err));
		return err;
	}
	H.fenced++;
	if (wait)
		nanosleep(&grace, NULL);
	return 0;
}

/* ---- making a decision true here ---- */

struct hres_install {
	struct hres_txn *x;
	const struct xtx_log_write *w;
	uint32_t n, installed;
	int failed;
};

/* Installs the writes logged just before (xtxd_userlog_append_then). */
static int install_writes(void *arg)
{
	struct hres_install *in = arg;
	uint32_t j;
	int err;

	for (j = 0; j < in->n; j++) {
		const struct xtx_log_entry *e = &in->w[j].e;

		err = xtxd_live_install(H.o.live, &in->w[j]);
		if (err < 0) {
			if (!in->x->apply_pending)
				pr_warn("resolve: hades txn %#llx: installing table %u key %llu "
					"version %llu: %s (retrying)\n",
					(unsigned long long)in->x->txn, e->table,
					(unsigned long long)e->key,
					(unsigned long long)e->version, strerror(-err));
			in->failed = err;
		} else {
			in->installed += err;
		}
	}
	return in->failed;
}

/*
 * The value of staged write j of slot idx into w: in the staged entry, or
 * for XTX_HSF_BIG the slot's entry of XTX_MAP_HADES_BIG.  0 or -errno.
 */
static int staged_value(uint32_t idx, uint32_t j, const struct xtx_hades_staged *s,
			struct xtx_log_write *w)
{
	static struct xtx_hades_big b;	/* the resolver is one thread */
	uint32_t k = xtx_hades_big_idx(idx, j);

	if (!(s->flags & XTX_HSF_BIG)) {
		w->vlen = s->vlen > XTX_VALUE_INLINE ? XTX_VALUE_INLINE : s->vlen;
		memcpy(w->value, s->value, w->vlen);
		return 0;
	}
	if (H.big_fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(H.big_fd, &k, &b))
		return -errno;
	if (b.len <= XTX_VALUE_INLINE || b.len > XTX_VALUE_MAX)
		return -EBADMSG;
	w->vlen = b.len;
	memcpy(w->value, b.data, b.len);
	return 0;
}

/*
 * Installs txn's staged writes at base + 1 (HVALIDATE's result) and frees
 * the slot.  They never passed XDP's log: xtxd's own log holds them before
 * they are installed, so a restart does not lose them.
 */
static int apply_validate(struct hres_txn *x, uint32_t idx, uint64_t ctl)
{
	/* one thread resolves: the writes and their entries (heads and continuations) */
	static struct xtx_log_write w[XTX_HADES_STAGE_MAX];
	static struct xtx_log_entry e[XTX_HADES_STAGE_MAX * (1 + STAGED_CONT_MAX)];
	struct xtx_hades_slot *s = &H.slots[idx];
	uint32_t n = __atomic_load_n(&s->nstaged, __ATOMIC_ACQUIRE), j;
	struct hres_install in = { .x = x, .w = w };
	size_t ne = 0;
	int err;

	if (n > XTX_HADES_STAGE_MAX)
		n = XTX_HADES_STAGE_MAX;
	for (j = 0; j < n; j++) {
		const struct xtx_hades_staged *sw = &s->staged[j];
		struct xtx_log_write *wr = &w[in.n];

		/*
		 * Its HVALIDATE came: logged, and installed unless its trip to
		 * xtxd went unanswered (XTX_HSF_INSTALLING), which may have been
		 * lost on the way: installed again, idempotent by version.
		 */
		if ((sw->flags & XTX_HSF_DONE) && !(sw->flags & XTX_HSF_INSTALLING))
			continue;
		memset(&wr->e, 0, sizeof(wr->e));
		wr->e.txn = x->txn;
		wr->e.key = sw->key;
		wr->e.version = sw->version + 1;
		wr->e.table = sw->table;
		wr->e.flags = (sw->flags & XTX_HSF_DELETE) ? XTX_LOGF_DELETE : 0;
		err = staged_value(idx, j, sw, wr);
		if (err) {
			/* never installed without its value: the decision stays pending */
			if (!x->apply_pending)
				pr_warn("resolve: hades txn %#llx: the staged value of table %u key "
					"%llu: %s (retrying)\n", (unsigned long long)x->txn,
					sw->table, (unsigned long long)sw->key, strerror(-err));
			x->apply_pending = true;
			return err;
		}
		err = xtx_logrec_encode(wr, 0, e + ne, sizeof(e) / sizeof(e[0]) - ne);
		if (err < 0)
			return err;
		ne += (size_t)err;
		in.n++;
	}
	err = xtxd_userlog_append_then(e, ne, install_writes, &in);
	x->apply_pending = err != 0;
	if (err)
		return err;
	release(idx, ctl, XTX_HO_VALIDATED);
	pr_info("resolve: hades txn %#llx validated here: %u staged writes, %u installed\n",
		(unsigned long long)x->txn, n, in.installed);
	return 0;
}

/* Makes x's outcome true here: whatever slot it holds ends the decided way. */
static void apply(struct hres_txn *x)
{
	uint64_t ctl;
	int idx;

	if (x->outcome == XTXD_HOUT_ABORT) {
		/* a coordinator that comes back finds its late HINTEND refused here too */
		fence(x->txn, false);
		idx = find_slot(x->txn, &ctl);
		if (idx >= 0 && release(idx, ctl, XTX_HO_ABORTED))
			pr_info("resolve: hades txn %#llx aborted here: staged writes discarded\n",
				(unsigned long long)x->txn);
		x->apply_pending = false;
		return;
	}
	idx = find_slot(x->txn, &ctl);
	if (idx < 0 || state_of(ctl) != XTX_HS_COMMITTING) {
		x->apply_pending = false;	/* validated by its coordinator meanwhile */
		return;
	}
	apply_validate(x, idx, ctl);
}

static void decide(struct hres_txn *x, int outcome, const char *why)
{
	x->outcome = outcome;
	x->decided_ns = xtx_now_ns();
	x->sent_ns = 0;
	if (outcome == XTXD_HOUT_VALIDATE)
		H.validated++;
	else
		H.aborted++;
	pr_info("resolve: hades txn %#llx decided %s (%s)\n", (unsigned long long)x->txn,
		outcome_name(outcome), why);
	apply(x);
}

/* ---- messages ---- */

static void send_msg(int peer, uint8_t opcode, uint64_t txn, uint32_t flags, bool reply,
		     const struct sockaddr_in *to)
{
	struct xtxd_peer_msg m = {};
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(H.o.peer_port) };
	size_t len;

	m.h.magic = XTX_MAGIC;
	m.h.version = XTX_VERSION;
	m.h.flags = reply ? XTX_F_REPLY : 0;
	m.h.nops = 1;
	m.h.status = XTX_ST_OK;
	m.h.req_id = 1;
	m.op.opcode = opcode;
	m.op.status = XTX_ST_OK;
	m.op.flags = flags;
	m.op.txn = txn;
	m.op.token = H.o.peers->self;
	if (to)
		dst = *to;
	else
		dst.sin_addr = H.o.peers->addr[peer];
	len = xtxd_peer_seal(&m, xtxd_peer_clock());
	if (sendto(H.o.sock, &m, len, 0, (struct sockaddr *)&dst, sizeof(dst)) < 0)
		pr_debug("resolve: sending to server %d: %s\n", peer, strerror(errno));
}

/* The servers of a participant set beyond --peers: no resolver can ask them. */
static uint64_t unnamed_participants(uint64_t participants)
{
	return H.o.peers->n >= 64 ? 0 : participants & ~((1ull << H.o.peers->n) - 1);
}

/*
 * Keeps txn's committing slot until a decision ends it: the HELD flag makes
 * HABORT answer RETRY, and after the grace period no HABORT that missed
 * the flag is still running, so a slot still committing then stays so.
 * Whether it is.
 */
static bool hold_slot(uint64_t txn)
{
	struct timespec grace = { (time_t)(H.o.grace_ns / 1000000000ull),
				  (long)(H.o.grace_ns % 1000000000ull) };
	uint64_t ctl, again;
	int idx = find_slot(txn, &ctl);

	if (idx < 0 || state_of(ctl) != XTX_HS_COMMITTING)
		return false;
	if (__atomic_load_n(&H.slots[idx].flags, __ATOMIC_ACQUIRE) & XTX_HSLF_HELD)
		return true;
	/*
	 * A participant no resolver here can name leaves the decision to the
	 * coordinator, whose HABORT must then still work: no promise
	 */
	if (unnamed_participants(load64(&H.slots[idx].participants)))
		return true;
	__atomic_fetch_or(&H.slots[idx].flags, XTX_HSLF_HELD, __ATOMIC_SEQ_CST);
	nanosleep(&grace, NULL);
	if (find_slot(txn, &again) == idx && again == ctl)
		return true;
	/* released meanwhile, maybe taken by another: the mark was not meant for it */
	__atomic_fetch_and(&H.slots[idx].flags, ~XTX_HSLF_HELD, __ATOMIC_SEQ_CST);
	return false;
}

/* Slot state alone: HOLD (kept from now on), VALIDATED, or NONE when neither shows. */
static int slot_answer(uint64_t txn)
{
	uint64_t ctl;
	int idx = find_slot(txn, &ctl);

	if (idx >= 0 && state_of(ctl) == XTX_HS_COMMITTING && hold_slot(txn))
		return XTXD_HANS_HOLD;
	if (last_outcome(txn) == XTX_HO_VALIDATED)
		return XTXD_HANS_VALIDATED;
	return XTXD_HANS_NONE;
}

/* 1 when w is a decided write of *arg (what the newest snapshot carries). */
static int carried_validation(const struct xtx_log_write *w, void *arg)
{
	return w->e.txn == *(const uint64_t *)arg && (w->e.flags & XTX_LOGF_DECIDED);
}

/*
 * Did HVALIDATE log a write of txn here?  Every append made before the
 * call is on disk after the flush, and then every segment is searched: a
 * rare path, taken only when a slot no longer remembers.  1, 0, or a
 * negative errno.
 */
static int logged_here(uint64_t txn)
{
	struct xtx_logseg *segs = NULL;
	struct xtx_log_entry e;
	struct xtx_logr r;
	size_t nsegs = 0, i;
	uint32_t skip = 0;
	int err, found = 0;

	/* a snapshot removed the segments that held it: they are listed */
	if (xtxd_held_validated(txn))
		return 1;
	err = xtxd_logdrain_flush(LOG_FLUSH_TIMEOUT_NS);
	if (err == -ENODEV)
		return 0;	/* no log kept here: nothing validated was logged */
	if (!err)
		err = xtxd_snapshot_carried_each(carried_validation, &txn);
	if (err == 1)
		return 1;
	if (!err)
		err = xtx_logfile_list(H.o.dirfd, &segs, &nsegs);
	for (i = 0; !err && !found && i < nsegs; i++) {
		err = xtx_logr_open(&r, H.o.dirfd, segs[i].name);
		if (err)
			break;
		if (i && segs[i - 1].cpu != segs[i].cpu)
			skip = 0;
		/*
		 * HVALIDATE logs decided writes; an OCC/2PL append of the id is
		 * no proof; a big value's continuations are no entries
		 */
		while (!found && xtx_logr_next(&r, &e) == 1) {
			if (skip) {
				skip--;
				continue;
			}
			found = e.txn == txn && (e.flags & XTX_LOGF_DECIDED);
			skip = xtx_logrec_span(&e) - 1;
		}
		xtx_logr_close(&r);
	}
	free(segs);
	return err ? err : found;
}

/*
 * Our answer about txn.  Not committing here and not validated here: fence
 * it, wait out the grace period, and look again; still not, then it never
 * will be committing here (NOT_HELD).  The decider says what came of it.
 */
static int local_answer(uint64_t txn)
{
	struct hres_txn *x = get(txn, false);
	int ans;

	if (x && x->outcome != XTXD_HOUT_NONE)
		return x->outcome == XTXD_HOUT_VALIDATE ? XTXD_HANS_VALIDATED : XTXD_HANS_ABORTED;
	if (x && x->not_held)
		return XTXD_HANS_NOT_HELD;	/* fenced: stays true */
	ans = slot_answer(txn);
	if (ans != XTXD_HANS_NONE)
		return ans;
	if (x && x->acked_reader)
		return XTXD_HANS_HOLD;		/* acked; the lease took the slot since */
	if (fence(txn, true))
		return XTXD_HANS_NONE;	/* cannot promise anything yet: asked again later */
	ans = slot_answer(txn);
	if (ans == XTXD_HANS_NONE) {
		int logged = logged_here(txn);

		if (logged < 0) {
			pr_warn("resolve: searching the log for hades txn %#llx: %s\n",
				(unsigned long long)txn, strerror(-logged));
			return XTXD_HANS_NONE;	/* fenced meanwhile, which is safe */
		}
		if (logged)
			ans = XTXD_HANS_VALIDATED;
	}
	if (ans != XTXD_HANS_NONE) {
		/* its intend-to-commit is over here: a late HVALIDATE must still log */
		bpf_map_delete_elem(H.o.fence_fd, &txn);
		return ans;
	}
	x = get(txn, true);
	if (!x)
		return XTXD_HANS_NONE;
	/*
	 * Not decided here: a participant that validated overrides (only a
	 * forgotten Ack makes the two meet), and the decider says which.
	 */
	x->not_held = true;
	x->seen_ns = xtx_now_ns();
	pr_info("resolve: hades txn %#llx not committing here: fenced\n",
		(unsigned long long)txn);
	return XTXD_HANS_NOT_HELD;
}

static void on_query(uint64_t txn, int from, const struct sockaddr_in *src)
{
	int ans = local_answer(txn);

	if (ans != XTXD_HANS_NONE)
		send_msg(from, XTX_OP_HRESOLVE_QUERY, txn, ans, true, src);
}

static void on_decide(uint64_t txn, uint32_t outcome, int from, const struct sockaddr_in *src)
{
	struct hres_txn *x;

	if (outcome != XTXD_HOUT_VALIDATE && outcome != XTXD_HOUT_ABORT)
		return;
	x = get(txn, true);
	if (!x)
		return;		/* no memory: the decider retries */
	if (x->outcome == XTXD_HOUT_NONE) {
		char why[32];

		snprintf(why, sizeof(why), "told by server %d", from);
		decide(x, outcome, why);
	} else if (x->outcome != (int)outcome) {
		/* cannot happen under the rule; say so loudly rather than flip */
		pr_warn("resolve: hades txn %#llx: server %d says %s, this server decided %s\n",
			(unsigned long long)txn, from, outcome_name(outcome),
			outcome_name(x->outcome));
		return;
	}
	send_msg(from, XTX_OP_HRESOLVE_DECIDE, txn, outcome, true, src);
}

/* Decides x once the answers allow it. */
static void evaluate(struct hres_txn *x)
{
	uint64_t left = x->participants & ~gone();

	if (!x->deciding || x->outcome != XTXD_HOUT_NONE)
		return;
	/* HVALIDATE follows every Ack: one validated means all acked */
	if (x->validated)
		decide(x, XTXD_HOUT_VALIDATE, "a participant validated it");
	else if (x->answered & ~x->held)
		decide(x, XTXD_HOUT_ABORT, "a participant does not hold it");
	else if ((x->held & left) == left)
		decide(x, XTXD_HOUT_VALIDATE, left == x->participants ?
		       "every participant holds it" : "every participant left holds it");
}

static void on_reply(uint8_t opcode, uint64_t txn, uint32_t val, int from)
{
	struct hres_txn *x = get(txn, false);
	uint64_t bit = 1ull << from;

	if (!x || !(x->participants & bit))
		return;
	if (opcode == XTX_OP_HRESOLVE_DECIDE) {
		x->acked |= bit;
		return;
	}
	if (x->outcome != XTXD_HOUT_NONE || val == XTXD_HANS_NONE || val > XTXD_HANS_ABORTED)
		return;
	x->answered |= bit;
	if (val == XTXD_HANS_HOLD || val == XTXD_HANS_VALIDATED)
		x->held |= bit;
	if (val == XTXD_HANS_VALIDATED)
		x->validated |= bit;
	evaluate(x);
}

bool xtxd_hres_known(uint64_t txn)
{
	uint64_t ctl;

	return H.slots && (get(txn, false) || find_slot(txn, &ctl) >= 0);
}

bool xtxd_hres_receive(const struct xtx_op *op, bool reply, int from,
		       const struct sockaddr_in *src)
{
	if (op->opcode != XTX_OP_HRESOLVE_QUERY && op->opcode != XTX_OP_HRESOLVE_DECIDE)
		return false;
	if (!H.slots || from < 0 || from >= XTX_HADES_MAX_SERVERS)
		return true;
	if (reply)
		on_reply(op->opcode, op->txn, op->flags, from);
	else if (op->opcode == XTX_OP_HRESOLVE_QUERY)
		on_query(op->txn, from, src);
	else
		on_decide(op->txn, op->flags, from, src);
	return true;
}

/* ---- finding slots left committing ---- */

static void begin(uint64_t txn, uint64_t participants, uint64_t age_ns)
{
	uint64_t self = 1ull << H.o.peers->self, unknown;
	struct hres_txn *x = get(txn, true);

	if (!x || x->outcome != XTXD_HOUT_NONE || x->deciding)
		return;
	/* a participant we cannot name cannot be asked: wait for its coordinator */
	unknown = unnamed_participants(participants);
	if (unknown) {
		if (!x->unknown_warned)
			pr_warn("resolve: hades txn %#llx names servers %#llx beyond --peers: "
				"left to its coordinator\n", (unsigned long long)txn,
				(unsigned long long)unknown);
		x->unknown_warned = true;
		x->seen_ns = xtx_now_ns();
		return;
	}
	x->participants = participants | self;
	x->answered = self;
	x->held = self;
	x->deciding = true;
	x->sent_ns = 0;
	pr_info("resolve: hades txn %#llx committing here for %llu ms; asking participants "
		"%#llx (moved out: %#llx)\n", (unsigned long long)txn,
		(unsigned long long)(age_ns / 1000000), (unsigned long long)x->participants,
		(unsigned long long)(x->participants & gone()));
	evaluate(x);
}

int xtxd_hres_client_answer(uint64_t txn)
{
	struct hres_txn *x;
	uint64_t ctl;
	int idx, ans;

	if (!H.slots)
		return XTX_TS_UNKNOWN;
	ans = local_answer(txn);
	switch (ans) {
	case XTXD_HANS_VALIDATED:
		return XTX_TS_COMMITTED;
	case XTXD_HANS_ABORTED:
		return XTX_TS_ABORTED;
	case XTXD_HANS_NOT_HELD:
		return XTX_TS_NOT_HELD;
	case XTXD_HANS_HOLD:
		break;
	default:
		return XTX_TS_UNKNOWN;
	}
	x = get(txn, false);
	if (x && x->deciding)
		return XTX_TS_HELD;
	idx = find_slot(txn, &ctl);
	if (idx >= 0 && state_of(ctl) == XTX_HS_COMMITTING &&
	    __atomic_load_n(&H.slots[idx].nstaged, __ATOMIC_ACQUIRE)) {
		uint64_t now = xtx_now_ns(), touched = load64(&H.slots[idx].touched_ns);

		begin(txn, load64(&H.slots[idx].participants), now > touched ? now - touched : 0);
	}
	return XTX_TS_HELD;
}

static void note_reader(uint64_t txn, uint64_t now)
{
	struct hres_txn *x = get(txn, true);

	if (!x)
		return;
	x->acked_reader = true;
	x->seen_ns = now;
}

/*
 * A reader left committing (nothing staged) keeps its read filter's
 * partial lock until some claim happens to probe its slot, which at low
 * load may be never.  The lease's rule lets it go at any time (its reads
 * were all made before it committed), so it goes now; its Ack is noted.
 */
static void free_reader(uint32_t idx, uint64_t txn, uint64_t ctl, uint64_t age_ns)
{
	if (!release(idx, ctl, XTX_HO_RECLAIMED))
		return;
	H.readers_freed++;
	pr_info("resolve: hades txn %#llx: a reader committing here for %llu ms, slot freed\n",
		(unsigned long long)txn, (unsigned long long)(age_ns / 1000000));
}

static void find_stuck(uint64_t now)
{
	uint32_t w, b, idx;

	for (w = 0; w < (H.nslots + 63) / 64; w++) {
		uint64_t word = load64(&H.reg->used[w]);

		for (b = 0; b < 64 && word >> b; b++) {
			struct xtx_hades_slot *s;
			uint64_t owner, ctl, touched;

			if (!((word >> b) & 1))
				continue;
			idx = w * 64 + b;
			if (idx >= H.nslots)
				break;
			s = &H.slots[idx];
			owner = load64(&s->owner);
			ctl = load64(&s->ctl);
			touched = load64(&s->touched_ns);
			if (!owner || state_of(ctl) != XTX_HS_COMMITTING || now < touched)
				continue;
			if (!__atomic_load_n(&s->nstaged, __ATOMIC_ACQUIRE)) {
				if (now - touched >= READER_NOTE_AFTER_NS ||
				    now - touched >= H.o.after_ns)
					note_reader(owner, now);
				if (now - touched >= H.o.after_ns)
					free_reader(idx, owner, ctl, now - touched);
				continue;
			}
			/* a participant moved out: its coordinator may be waiting on it for ever */
			if ((now - touched >= H.o.after_ns || (load64(&s->participants) & gone())) &&
			    hold_slot(owner))
				begin(owner, load64(&s->participants), now - touched);
		}
	}
}

size_t xtxd_hres_committing(uint64_t *ids, size_t cap)
{
	uint32_t w, b, idx;
	size_t n = 0;

	for (w = 0; H.slots && w < (H.nslots + 63) / 64; w++) {
		uint64_t word = load64(&H.reg->used[w]);

		for (b = 0; b < 64 && word >> b; b++) {
			struct xtx_hades_slot *s;
			uint64_t owner;

			idx = w * 64 + b;
			if (!((word >> b) & 1) || idx >= H.nslots)
				continue;
			s = &H.slots[idx];
			owner = load64(&s->owner);
			if (!owner || state_of(load64(&s->ctl)) != XTX_HS_COMMITTING ||
			    !__atomic_load_n(&s->nstaged, __ATOMIC_ACQUIRE))
				continue;
			if (n < cap)
				ids[n] = owner;
			n++;
		}
	}
	return n;
}

bool xtxd_hres_still_committing(uint64_t txn)
{
	uint64_t ctl;

	return H.slots && find_slot(txn, &ctl) >= 0 && state_of(ctl) == XTX_HS_COMMITTING;
}

static void resend(struct hres_txn *x, uint64_t now)
{
	unsigned int i;

	if (!x->deciding || now - x->sent_ns < RESEND_EVERY_NS)
		return;
	x->sent_ns = now;
	for (i = 0; i < H.o.peers->n && i < 64; i++) {
		uint64_t bit = 1ull << i;

		if ((int)i == H.o.peers->self || !(x->participants & bit))
			continue;
		if (x->outcome == XTXD_HOUT_NONE && !(x->answered & bit))
			send_msg(i, XTX_OP_HRESOLVE_QUERY, x->txn, 0, false, NULL);
		else if (x->outcome != XTXD_HOUT_NONE && !(x->acked & bit))
			send_msg(i, XTX_OP_HRESOLVE_DECIDE, x->txn, x->outcome, false, NULL);
	}
}

static bool no_fences(void)
{
	__u64 key;

	return bpf_map_get_next_key(H.o.fence_fd, NULL, &key) && errno == ENOENT;
}

void xtxd_hres_scan(void)
{
	uint64_t now = xtx_now_ns();
	bool unfenced = false;
	size_t i;

	if (!H.slots)
		return;
	find_stuck(now);
	for (i = 0; i < H.n;) {
		struct hres_txn *x = &H.t[i];

		if (x->apply_pending)
			apply(x);
		if ((x->outcome != XTXD_HOUT_NONE && now - x->decided_ns > KEEP_DECIDED_NS) ||
		    (x->outcome == XTXD_HOUT_NONE && !x->deciding &&
		     now - x->seen_ns > KEEP_DECIDED_NS)) {
			/* the coordinator's lease is long gone, and the fence map is finite */
			bpf_map_delete_elem(H.o.fence_fd, &x->txn);
			unfenced = true;
			del_at(i);
			continue;
		}
		resend(x, now);
		i++;
	}
	if (unfenced && no_fences())
		xtxd_logdrain_arm_fence(false);
}

/* ---- start and stop ---- */

static void *map_all(const struct xtx_target *t, const char *name, size_t *len, uint32_t *n)
{
	long page = sysconf(_SC_PAGESIZE);
	struct bpf_map_info info = {};
	__u32 il = sizeof(info);
	void *p = NULL;
	int fd, err;

	fd = xtx_target_map_fd(t, name);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	err = bpf_obj_get_info_by_fd(fd, &info, &il);
	if (!err) {
		*n = info.max_entries;
		*len = ((size_t)info.max_entries * ((info.value_size + 7) & ~7u) + page - 1) &
		       ~(size_t)(page - 1);
		p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			p = NULL;
	}
	err = errno;
	close(fd);
	errno = err;
	return p;
}

int xtxd_hres_start(const struct xtx_target *t, const struct xtxd_hres_opts *o)
{
	uint32_t one;
	int err;

	H.o = *o;
	H.big_fd = -1;
	if (o->peers->self < 0 || o->peers->self >= XTX_HADES_MAX_SERVERS)
		return 0;	/* not a server a HADES participant set can name */
	H.slots = map_all(t, XTX_MAP_HADES, &H.slots_len, &H.nslots);
	if (!H.slots)
		goto fail;
	H.reg = map_all(t, XTX_MAP_HADES_REG, &H.reg_len, &one);
	if (!H.reg)
		goto fail;
	H.big_fd = xtx_target_map_fd(t, XTX_MAP_HADES_BIG);
	if (H.big_fd < 0) {
		errno = -H.big_fd;
		goto fail;
	}
	return 0;
fail:
	err = -errno;
	fprintf(stderr, "Error: resolve: mapping the HADES slots: %s\n", strerror(-err));
	xtxd_hres_stop();
	return err;
}

void xtxd_hres_get_stats(uint64_t *validated, uint64_t *aborted, uint64_t *fenced)
{
	*validated = __atomic_load_n(&H.validated, __ATOMIC_RELAXED);
	*aborted = __atomic_load_n(&H.aborted, __ATOMIC_RELAXED);
	*fenced = __atomic_load_n(&H.fenced, __ATOMIC_RELAXED);
}

void xtxd_hres_stop(void)
{
	if (H.validated || H.aborted || H.readers_freed)
		pr_info("resolve: %llu hades transactions decided validate, %llu abort, "
			"%llu fences, %llu readers' slots freed\n", (unsigned long long)H.validated,
			(unsigned long long)H.aborted, (unsigned long long)H.fenced,
			(unsigned long long)H.readers_freed);
	if (H.slots)
		munmap(H.slots, H.slots_len);
	if (H.reg)
		munmap(H.reg, H.reg_len);
	if (H.big_fd > 0)	/* 0: never opened (H starts zeroed) */
		close(H.big_fd);
	free(H.t);
	memset(&H, 0, sizeof(H));
}
