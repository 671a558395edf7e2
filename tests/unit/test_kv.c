// SPDX-License-Identifier: GPL-2.0-only
/* BPF_PROG_TEST_RUN tables for the KV cache: DINT's Figure 4 paths, hand-off and TC fixes. */
/* checks: 22 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xtx/proto.h>
#include <xtx/maps.h>
#include <xtx/msg.h>
#include <xtx/hash.h>
#include <xtx/kv.h>
#include "xtx_tc.skel.h"
#include "check.h"
#include "harness.h"
#include "log.h"
#include "stats_read.h"

/* One bucket: every key shares it, so four keys fill it and eviction is constant. */
#define KV_BUCKETS 1

static struct xtx_tc *tc;
static __u64 next_req = 5000;

static int kv_fd(void)
{
	return bpf_map__fd(skel->maps.xtx_kv);
}

static struct xtx_kv_bucket bucket_get(void)
{
	struct xtx_kv_bucket b = {};
	__u32 zero = 0;

	bpf_map_lookup_elem(kv_fd(), &zero, &b);
	return b;
}

static void bucket_put(const struct xtx_kv_bucket *b)
{
	__u32 zero = 0;

	bpf_map_update_elem(kv_fd(), &zero, b, 0);
}

static void bucket_reset(void)
{
	struct xtx_kv_bucket b = {};

	bucket_put(&b);
}

/*
 * A lease no pause of a busy machine outlasts, for the steps that must come
 * within one; a step that must come after one sets it to 1 ns instead.
 */
#define LEASE_LONG_NS	(60ull * 1000 * 1000 * 1000)

static void set_runtime(__u64 kv_lease_ns)
{
	struct xtx_runtime rt = { .kv_lease_ns = kv_lease_ns };
	__u32 zero = 0;

	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_runtime), &zero, &rt, 0);
}

/* A one-op KV request; value bytes are `fill` repeated. */
static void kv_req(struct run *r, __u8 opcode, __u64 key, __u8 vlen, __u8 fill)
{
	make_req(r, 1, next_req++, 1, opcode);
	in_op(r, 0)->key = key;
	in_op(r, 0)->vlen = vlen;
	memset(in_op(r, 0)->value, fill, vlen);
}

static struct xtx_op kv_do(__u8 opcode, __u64 key, __u8 vlen, __u8 fill, int *verdict)
{
	struct run r;

	kv_req(&r, opcode, key, vlen, fill);
	run(&r);
	*verdict = r.retval;
	return *out_op(&r, 0);
}

static void test_insert_get_update_delete(void)
{
	struct xtx_kv_bucket b;
	struct xtx_op op;
	int v;

	bucket_reset();
	op = kv_do(XTX_OP_GET, 1, 0, 0, &v);
	CHECK(v == XDP_TX && op.status == XTX_ST_NOT_FOUND, "GET of nothing: %u", op.status);
	op = kv_do(XTX_OP_INSERT, 1, 8, 0xa1, &v);
	CHECK(op.status == XTX_ST_OK && op.version == 1, "INSERT: %u v%llu", op.status,
	      (unsigned long long)op.version);
	op = kv_do(XTX_OP_INSERT, 1, 8, 0xa2, &v);
	CHECK(op.status == XTX_ST_EXISTS, "second INSERT: %u", op.status);
	op = kv_do(XTX_OP_GET, 1, 0, 0, &v);
	CHECK(op.status == XTX_ST_OK && op.vlen == 8 && op.value[7] == 0xa1 && op.version == 1,
	      "GET after INSERT");
	op = kv_do(XTX_OP_UPDATE, 1, 4, 0xb1, &v);
	CHECK(op.status == XTX_ST_OK && op.version == 2, "UPDATE: v%llu",
	      (unsigned long long)op.version);
	op = kv_do(XTX_OP_GET, 1, 0, 0, &v);
	CHECK(op.vlen == 4 && op.value[3] == 0xb1 && op.version == 2, "GET after UPDATE");
	b = bucket_get();
	CHECK((b.flags[0] & (XTX_KVF_VALID | XTX_KVF_DIRTY)) == (XTX_KVF_VALID | XTX_KVF_DIRTY),
	      "write-back: the slot is dirty (%#x)", b.flags[0]);
	op = kv_do(XTX_OP_UPDATE, 2, 4, 0xb1, &v);
	CHECK(op.status == XTX_ST_NOT_FOUND, "UPDATE of a missing key: %u", op.status);

	/* a key only the kernel ever held leaves entirely; its version lives on in the floor */
	op = kv_do(XTX_OP_DELETE, 1, 0, 0, &v);
	CHECK(op.status == XTX_ST_OK && op.version == 3, "DELETE: %u v%llu", op.status,
	      (unsigned long long)op.version);
	b = bucket_get();
	CHECK(b.flags[0] == 0 && b.vfloor == 3, "freed slot %#x floor %llu", b.flags[0],
	      (unsigned long long)b.vfloor);
	op = kv_do(XTX_OP_GET, 1, 0, 0, &v);
	CHECK(op.status == XTX_ST_NOT_FOUND, "GET after DELETE");
	op = kv_do(XTX_OP_DELETE, 1, 0, 0, &v);
	CHECK(op.status == XTX_ST_NOT_FOUND, "second DELETE");
	op = kv_do(XTX_OP_INSERT, 1, 8, 0xc1, &v);
	CHECK(op.status == XTX_ST_OK && op.version == 4, "re-INSERT must not reuse a version: v%llu",
	      (unsigned long long)op.version);
}

/* Deleting a key the overflow store also holds leaves a dirty tombstone. */
static void test_tombstone(void)
{
	struct xtx_kv_bucket b;
	struct xtx_op op;
	int v;

	bucket_reset();
	kv_do(XTX_OP_INSERT, 7, 8, 1, &v);
	b = bucket_get();
	b.flags[0] |= XTX_KVF_IN_USER;
	b.flags[0] &= ~XTX_KVF_DIRTY;
	bucket_put(&b);
	op = kv_do(XTX_OP_DELETE, 7, 0, 0, &v);
	b = bucket_get();
	CHECK(op.status == XTX_ST_OK && op.version == 2, "DELETE");
	CHECK(b.flags[0] == (XTX_KVF_TOMB | XTX_KVF_DIRTY | XTX_KVF_IN_USER) && b.version[0] == 2,
	      "tombstone flags %#x version %llu", b.flags[0], (unsigned long long)b.version[0]);
	op = kv_do(XTX_OP_GET, 7, 0, 0, &v);
	CHECK(op.status == XTX_ST_NOT_FOUND && v == XDP_TX, "GET of a tombstone");
	op = kv_do(XTX_OP_UPDATE, 7, 8, 1, &v);
	CHECK(op.status == XTX_ST_NOT_FOUND, "UPDATE of a tombstone");
	op = kv_do(XTX_OP_INSERT, 7, 8, 9, &v);
	b = bucket_get();
	CHECK(op.status == XTX_ST_OK && op.version == 3, "re-INSERT over the tombstone v%llu",
	      (unsigned long long)op.version);
	CHECK(b.flags[0] == (XTX_KVF_VALID | XTX_KVF_DIRTY | XTX_KVF_IN_USER), "revived %#x",
	      b.flags[0]);
}

static void test_bloom_filter_answers_misses(void)
{
	struct xtx_stats before, after;
	struct xtx_kv_bucket b;
	struct xtx_op op;
	int v;

	bucket_reset();
	read_stats(&before);
	op = kv_do(XTX_OP_GET, 42, 0, 0, &v);
	read_stats(&after);
	CHECK(v == XDP_TX && op.status == XTX_ST_NOT_FOUND, "clear bit: answered in XDP");
	CHECK(after.ctr[XTX_CTR_KV_BLOOM_MISS] == before.ctr[XTX_CTR_KV_BLOOM_MISS] + 1,
	      "bloom-miss counter");
	/* with the key's bit set, only xtxd can answer */
	b = bucket_get();
	b.bloom = 1ull << xtx_bloom_bit_of(xtx_hash(0, 42));
	bucket_put(&b);
	op = kv_do(XTX_OP_GET, 42, 0, 0, &v);
	CHECK(v == XDP_PASS, "set bit: passed to xtxd (verdict %d)", v);
	bucket_reset();
}

/* The defer record XDP wrote for a passed packet (its ticket + 1 is in the header). */
static struct xtx_defer_trailer *trailer_of(struct run *r, int nops)
{
	static struct xtx_defer_record rec;
	__u32 ticket = out_hdr(r)->reserved - 1;

	(void)nops;
	memset(&rec, 0, sizeof(rec));
	if (out_hdr(r)->reserved)
		bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_defer_ring), &ticket, &rec);
	CHECK(rec.client_id == out_hdr(r)->client_id && rec.req_id == out_hdr(r)->req_id,
	      "defer record does not name its packet");
	return &rec.t;
}

/* The handed-off frame: same size, its record in the defer ring, checksum cleared. */
static void test_defer_frame(void)
{
	struct xtx_defer_trailer *t;
	struct xtx_kv_bucket b;
	struct udphdr *udp;
	struct run r;

	bucket_reset();
	b = bucket_get();
	b.bloom = ~0ull;
	b.vfloor = 77;
	bucket_put(&b);
	kv_req(&r, XTX_OP_GET, 5, 0, 0);
	run(&r);
	t = trailer_of(&r, 1);
	udp = (struct udphdr *)(r.out + PKT_UDP_OFF);
	CHECK(r.retval == XDP_PASS, "verdict %d", r.retval);
	CHECK(r.out_len == r.in_len && !memcmp(r.in, r.out, PKT_UDP_OFF), "frame changed size");
	CHECK(udp->check == 0 && out_hdr(&r)->reserved, "UDP checksum / ticket");
	CHECK(!(out_hdr(&r)->flags & XTX_F_REPLY), "a passed request is not a reply");
	CHECK(out_op(&r, 0)->status == XTX_ST_DEFERRED, "op status %u", out_op(&r, 0)->status);
	CHECK(t->magic == XTX_DEFER_MAGIC && t->count == 1, "trailer magic/count");
	CHECK(t->e[0].op_idx == 0 && t->e[0].bucket == 0 && t->e[0].vfloor == 77 &&
	      t->e[0].fill_way == 0 && !(t->e[0].flags & XTX_DEFER_HAS_VICTIM), "entry");
	b = bucket_get();
	CHECK(b.lock == t->e[0].token && (b.lock & 1) && b.lock != XTX_KV_LOCK_FAST,
	      "bucket held with the entry's token");
}

/* A held bucket answers RETRY, and is taken over once its lease has passed. */
static void test_bucket_lease(void)
{
	struct timespec ms1 = { 0, 1000 * 1000 };
	struct xtx_stats before, after;
	struct xtx_op op;
	int v;

	/*
	 * test_defer_frame left the bucket held by a round trip that never
	 * returns: within a lease (a long one, whatever the machine's pauses)
	 * it stays held; past one (1 ns, a millisecond later) it is taken over
	 */
	set_runtime(LEASE_LONG_NS);
	op = kv_do(XTX_OP_INSERT, 99, 8, 1, &v);
	CHECK(op.status == XTX_ST_RETRY, "held bucket answered %u", op.status);
	set_runtime(1);
	nanosleep(&ms1, NULL);
	read_stats(&before);
	op = kv_do(XTX_OP_INSERT, 99, 8, 1, &v);
	read_stats(&after);
	CHECK(op.status != XTX_ST_RETRY, "bucket still held after its lease (%u)", op.status);
	CHECK(after.ctr[XTX_CTR_KV_TAKEOVER] == before.ctr[XTX_CTR_KV_TAKEOVER] + 1, "takeover");
	set_runtime(0);
	bucket_reset();
}

/* Every way dirty: the insert goes to xtxd with one dirty victim riding along. */
static void test_all_dirty_victim(void)
{
	struct xtx_defer_trailer *t;
	struct xtx_kv_bucket b;
	struct run r;
	int v, k;

	bucket_reset();
	for (k = 0; k < XTX_KV_WAYS; k++)
		kv_do(XTX_OP_INSERT, 100 + k, 8, k, &v);
	kv_req(&r, XTX_OP_INSERT, 200, 8, 0xee);
	run(&r);
	t = trailer_of(&r, 1);
	b = bucket_get();
	CHECK(r.retval == XDP_PASS && t->count == 1, "deferred (%d)", r.retval);
	CHECK((t->e[0].flags & XTX_DEFER_HAS_VICTIM) && t->e[0].fill_way == t->e[0].victim_way,
	      "victim and fill way");
	CHECK(t->e[0].victim.key == b.key[t->e[0].victim_way & 3] &&
	      t->e[0].victim.version == b.version[t->e[0].victim_way & 3] &&
	      t->e[0].victim.vlen == 8, "victim item copied");
	CHECK(b.flags[t->e[0].victim_way & 3] & XTX_KVF_DIRTY,
	      "the victim must stay dirty in the bucket until TC hears it was saved");
	bucket_reset();
}

static void test_one_deferral_per_bucket_and_budget(void)
{
	struct xtx_kv_bucket b;
	struct run r;
	int i;

	bucket_reset();
	b = bucket_get();
	b.bloom = ~0ull;
	bucket_put(&b);
	make_req(&r, 1, next_req++, 2, XTX_OP_GET);
	in_op(&r, 0)->key = 1;
	in_op(&r, 1)->key = 2;
	run(&r);
	CHECK(r.retval == XDP_PASS && out_op(&r, 0)->status == XTX_ST_DEFERRED &&
	      out_op(&r, 1)->status == XTX_ST_RETRY, "second op on the held bucket: %u",
	      out_op(&r, 1)->status);
	CHECK(trailer_of(&r, 2)->count == 1, "one entry");
	bucket_reset();

	/* a full packet leaves room in the reply for three fixes only */
	test_kv_buckets = 64;
	{
		struct xtx_xdp *big = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
		struct xtx_kv_bucket full = { .bloom = ~0ull };
		__u32 k, deferred = 0, retry = 0;

		for (k = 0; big && k < 64; k++)
			bpf_map_update_elem(bpf_map__fd(big->maps.xtx_kv), &k, &full, 0);
		make_req(&r, 1, next_req++, XTX_MAX_OPS, XTX_OP_GET);
		for (i = 0; i < XTX_MAX_OPS; i++)
			in_op(&r, i)->key = 1000 + i * 7919;
		if (big)
			run_on(big, &r);
		for (i = 0; i < XTX_MAX_OPS; i++) {
			deferred += out_op(&r, i)->status == XTX_ST_DEFERRED;
			retry += out_op(&r, i)->status == XTX_ST_RETRY;
		}
		CHECK(big && deferred == 3 && retry == XTX_MAX_OPS - 3,
		      "16-op packet: %u deferred, %u retry", deferred, retry);
		xtx_xdp__destroy(big);
	}
	test_kv_buckets = KV_BUCKETS;
}

static void test_oversized_value(void)
{
	struct run r;

	bucket_reset();
	kv_req(&r, XTX_OP_INSERT, 3, 8, 1);
	in_op(&r, 0)->vlen = XTX_VALUE_INLINE + 1;
	run(&r);
	CHECK(out_hdr(&r)->status == XTX_ST_BAD_ARG && out_op(&r, 0)->status == XTX_ST_BAD_ARG,
	      "oversized value refused");
	CHECK(bucket_get().flags[0] == 0, "oversized value stored");
}

/*
 * TC egress: build xtxd's reply to a deferred GET by hand, run the TC
 * program on it, and check the bucket and the frame the client gets.
 */
static size_t build_fix_reply(uint8_t *frame, __u64 key, __u64 token, __u8 action, __u8 way,
			      __u64 bloom, __u64 req)
{
	uint8_t payload[PKT_MAX];
	struct xtx_fix_entry *fe;
	struct xtx_fix_footer *ft;
	struct xtx_op *op;
	struct pkt_addrs a = pkt_default_addrs;

	xtx_msg_init(payload, 2, req);
	((struct xtx_hdr *)payload)->flags = XTX_F_REPLY;
	op = xtx_msg_add(payload, XTX_OP_UPDATE, 0, key);
	op->status = XTX_ST_OK;
	op->version = 12;
	op->vlen = 8;
	memset(op->value, 0x5a, 8);
	/* body | one fix entry | footer */
	fe = (struct xtx_fix_entry *)(payload + xtx_msg_len(1));
	memset(fe, 0, XTX_FIX_TRAILER_LEN(1));
	fe->action = action;
	fe->fill_way = way;
	fe->token = token;
	fe->bloom = bloom;
	ft = (struct xtx_fix_footer *)(fe + 1);
	ft->magic = XTX_FIX_MAGIC;
	ft->count = 1;
	ft->body_len = xtx_msg_len(1);
	/* a reply leaves from the server port */
	a.sport = XTX_DEFAULT_PORT;
	a.dport = 40000;
	return pkt_build(frame, &a, payload, xtx_msg_len(1) + XTX_FIX_TRAILER_LEN(1));
}

/* The fix entry of a frame build_fix_reply built. */
static struct xtx_fix_entry *fix_entry_of(uint8_t *frame)
{
	return (struct xtx_fix_entry *)(frame + PKT_PAYLOAD_OFF + xtx_msg_len(1));
}

static int run_tc(struct run *r)
{
	return run_tc_on(tc, r);
}

/* A fix trailer not sent by one of xtxd's sockets (forwarded, forged) changes nothing. */
static void test_tc_ignores_foreign_fix(void)
{
	__u32 dkey = 2 * XTX_DEDUPE_WINDOW + (7100 & (XTX_DEDUPE_WINDOW - 1));
	struct xtx_dedupe_slot slot = { .word = xtx_dedupe_word(7100, XTX_DEDUPE_BUSY) };
	struct xtx_kv_bucket b = { .lock = 0x3001 };
	struct xtx_stats before, after;
	struct run r;

	/* as xtxd loads it: only its listed sockets' trailers count, and a test run has none */
	struct xtx_tc *strict = load_tc_for(skel, false);

	CHECK(strict, "loading TC as xtxd does: %s", strerror(errno));
	if (!strict)
		return;
	bucket_put(&b);
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_dedupe), &dkey, &slot, 0);
	read_stats(&before);
	r.in_len = build_fix_reply(r.in, 57, 0x3001, XTX_FIX_FILL, 2, 0xf0f0, 7100);
	CHECK(!run_tc_on(strict, &r), "tc test run: %s", strerror(errno));
	xtx_tc__destroy(strict);
	read_stats(&after);
	b = bucket_get();
	CHECK(r.retval == TC_ACT_OK && r.out_len == r.in_len, "passed untouched: verdict %d, %u of %u",
	      r.retval, r.out_len, r.in_len);
	CHECK(b.lock == 0x3001 && b.bloom == 0 && b.flags[2] == 0, "a foreign fix applied: lock %#llx",
	      (unsigned long long)b.lock);
	bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_dedupe), &dkey, &slot);
	CHECK(slot.word == xtx_dedupe_word(7100, XTX_DEDUPE_BUSY), "a foreign fix completed a record");
	/* client 2's later requests are numbered far below: leave its slot as found */
	memset(&slot, 0, sizeof(slot));
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_dedupe), &dkey, &slot, 0);
	CHECK(after.ctr[XTX_CTR_TC_FOREIGN] == before.ctr[XTX_CTR_TC_FOREIGN] + 1,
	      "tc_foreign counted %llu",
	      (unsigned long long)(after.ctr[XTX_CTR_TC_FOREIGN] - before.ctr[XTX_CTR_TC_FOREIGN]));
	bucket_reset();
}

/*
 * A copy of a request whose grant was answered is answered from the
 * record, and the grant's value, which the record does not keep, is read
 * again.  While the key's bucket is busy that read cannot be had: the
 * copy is refused whole (RETRY, nothing ran), never answered OK without
 * the value; once the bucket is free the copy gets the value.
 */
static void test_replayed_grant_rereads_value(void)
{
	struct xtx_kv_bucket b;
	struct run r;
	int v;

	bucket_reset();
	kv_do(XTX_OP_INSERT, 21, 8, 0x21, &v);
	make_req(&r, 3, next_req++, 1, XTX_OP_LOCK_EXCL);
	in_op(&r, 0)->key = 21;
	in_op(&r, 0)->txn = xtx_txn_make(3, 5);
	in_op(&r, 0)->flags = 0;
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK && out_op(&r, 0)->vlen == 8 &&
	      out_op(&r, 0)->value[0] == 0x21, "the grant read its value: %u vlen %u",
	      out_op(&r, 0)->status, out_op(&r, 0)->vlen);
	b = bucket_get();
	b.lock = XTX_KV_LOCK_FAST;	/* another packet on another CPU holds it */
	bucket_put(&b);
	run(&r);
	CHECK(r.retval == XDP_TX && out_hdr(&r)->status == XTX_ST_RETRY &&
	      out_op(&r, 0)->status == XTX_ST_NOT_EXECUTED,
	      "a copy while the bucket is busy: packet %u, op %u vlen %u (want RETRY, nothing)",
	      out_hdr(&r)->status, out_op(&r, 0)->status, out_op(&r, 0)->vlen);
	b.lock = 0;
	bucket_put(&b);
	run(&r);
	CHECK(out_hdr(&r)->status == XTX_ST_OK && (out_hdr(&r)->flags & XTX_F_REPLAYED) &&
	      out_op(&r, 0)->status == XTX_ST_OK && out_op(&r, 0)->vlen == 8 &&
	      out_op(&r, 0)->value[0] == 0x21, "the copy once the bucket is free: %u vlen %u",
	      out_op(&r, 0)->status, out_op(&r, 0)->vlen);
	bucket_reset();
}

/*
 * A copy of a grant that comes after the grant's hold is gone (here its
 * transaction committed and let it go) is not answered from the key as it
 * is now: that is not what the grant read, and the grant holds nothing.
 * The op is answered NOT_HELD (the client aborts), and nothing runs again.
 */
static void test_replayed_grant_after_its_hold(void)
{
	const __u64 txn = xtx_txn_make(3, 6);
	struct xtx_stats before, after;
	struct run r, c;
	__u64 version;
	int v;

	bucket_reset();
	kv_do(XTX_OP_INSERT, 22, 8, 0x22, &v);
	make_req(&r, 3, next_req++, 1, XTX_OP_OCC_LOCK);
	in_op(&r, 0)->key = 22;
	in_op(&r, 0)->txn = txn;
	in_op(&r, 0)->flags = 0;
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK && out_op(&r, 0)->value[0] == 0x22,
	      "the grant read its value: %u", out_op(&r, 0)->status);
	version = out_op(&r, 0)->version;

	/* the copy while the hold lasts: the same answer */
	run(&r);
	CHECK(out_hdr(&r)->status == XTX_ST_OK && (out_hdr(&r)->flags & XTX_F_REPLAYED) &&
	      out_op(&r, 0)->version == version && out_op(&r, 0)->value[0] == 0x22,
	      "a copy under the hold: packet %u version %llu", out_hdr(&r)->status,
	      (unsigned long long)out_op(&r, 0)->version);

	/* the transaction commits: a new version, and the lock let go */
	make_req(&c, 3, next_req++, 1, XTX_OP_COMMIT_PRIMARY);
	in_op(&c, 0)->key = 22;
	in_op(&c, 0)->txn = txn;
	in_op(&c, 0)->token = out_op(&r, 0)->token;
	in_op(&c, 0)->version = version;
	in_op(&c, 0)->vlen = 8;
	memset(in_op(&c, 0)->value, 0x23, 8);
	run(&c);
	CHECK(out_op(&c, 0)->status == XTX_ST_OK && out_op(&c, 0)->version == version + 1,
	      "the commit: %u version %llu", out_op(&c, 0)->status,
	      (unsigned long long)out_op(&c, 0)->version);

	read_stats(&before);
	run(&r);
	read_stats(&after);
	CHECK(r.retval == XDP_TX && out_hdr(&r)->status == XTX_ST_OK &&
	      (out_hdr(&r)->flags & XTX_F_REPLAYED) && out_op(&r, 0)->status == XTX_ST_NOT_HELD,
	      "a copy after the commit: packet %u, op %u (want the op NOT_HELD)",
	      out_hdr(&r)->status, out_op(&r, 0)->status);
	CHECK(after.ctr[XTX_CTR_REPLAY_LAPSED] == before.ctr[XTX_CTR_REPLAY_LAPSED] + 1,
	      "counted as a lapsed replay");
	bucket_reset();
}

/*
 * A lapsed grant answers for itself alone: the other ops of its request,
 * here another transaction's commit that ran with it, are answered from
 * the record as before (not refused: their client would resend a commit
 * that was applied, and find the key moved on).
 */
static void test_replayed_lapsed_grant_alone(void)
{
	const __u64 t1 = xtx_txn_make(3, 7), t2 = xtx_txn_make(3, 8);
	struct run r, c, l;
	__u64 v26;
	int v;

	bucket_reset();
	kv_do(XTX_OP_INSERT, 24, 8, 0x24, &v);
	kv_do(XTX_OP_INSERT, 26, 8, 0x26, &v);
	make_req(&l, 3, next_req++, 1, XTX_OP_OCC_LOCK);
	in_op(&l, 0)->key = 26;
	in_op(&l, 0)->txn = t2;
	in_op(&l, 0)->flags = 0;
	run(&l);
	CHECK(out_op(&l, 0)->status == XTX_ST_OK, "T2 locks key 26: %u", out_op(&l, 0)->status);
	v26 = out_op(&l, 0)->version;
	/* one request: T1's grant of key 24 and T2's commit of key 26 */
	make_req(&r, 3, next_req++, 2, XTX_OP_OCC_LOCK);
	in_op(&r, 0)->key = 24;
	in_op(&r, 0)->txn = t1;
	in_op(&r, 0)->flags = 0;
	in_op(&r, 1)->opcode = XTX_OP_COMMIT_PRIMARY;
	in_op(&r, 1)->key = 26;
	in_op(&r, 1)->txn = t2;
	in_op(&r, 1)->token = out_op(&l, 0)->token;
	in_op(&r, 1)->version = v26;
	in_op(&r, 1)->vlen = 8;
	memset(in_op(&r, 1)->value, 0x27, 8);
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK && out_op(&r, 1)->status == XTX_ST_OK &&
	      out_op(&r, 1)->version == v26 + 1, "the grant and the commit: %u %u",
	      out_op(&r, 0)->status, out_op(&r, 1)->status);
	/* T1's grant lapses: its transaction lets it go (as a lease taking it back would) */
	make_req(&c, 3, next_req++, 1, XTX_OP_OCC_UNLOCK);
	in_op(&c, 0)->key = 24;
	in_op(&c, 0)->txn = t1;
	in_op(&c, 0)->token = out_op(&r, 0)->token;
	run(&c);
	CHECK(out_op(&c, 0)->status == XTX_ST_OK, "T1's release: %u", out_op(&c, 0)->status);
	run(&r);
	CHECK(out_hdr(&r)->status == XTX_ST_OK && (out_hdr(&r)->flags & XTX_F_REPLAYED) &&
	      out_op(&r, 0)->status == XTX_ST_NOT_HELD && out_op(&r, 1)->status == XTX_ST_OK &&
	      out_op(&r, 1)->version == v26 + 1,
	      "the copy: packet %u, grant %u (want NOT_HELD), commit %u version %llu (want OK, "
	      "once)", out_hdr(&r)->status, out_op(&r, 0)->status, out_op(&r, 1)->status,
	      (unsigned long long)out_op(&r, 1)->version);
	CHECK(kv_do(XTX_OP_GET, 26, 0, 0, &v).version == v26 + 1, "key 26 committed once");
	bucket_reset();
}

/*
 * A grant's token is its slot's gen, which only grows: one past 2^31 (a
 * hot slot gets there in under an hour) is a token like any other, and a
 * copy under the hold is answered as the first was.
 */
static void test_replayed_grant_high_gen(void)
{
	const __u64 txn = xtx_txn_make(3, 9);
	int fd = bpf_map__fd(skel->maps.xtx_locks);
	struct xtx_lock_slot slot;
	__u32 idx = xtx_lock_slot_of(xtx_hash(0, 28), skel->rodata->xtx_lock_slots);
	struct run r;
	int v;

	bucket_reset();
	kv_do(XTX_OP_INSERT, 28, 8, 0x28, &v);
	bpf_map_lookup_elem(fd, &idx, &slot);
	slot.gen = 0x7fffffffu;
	bpf_map_update_elem(fd, &idx, &slot, 0);
	make_req(&r, 3, next_req++, 1, XTX_OP_OCC_LOCK);
	in_op(&r, 0)->key = 28;
	in_op(&r, 0)->txn = txn;
	in_op(&r, 0)->flags = 0;
	run(&r);
	CHECK(out_op(&r, 0)->status == XTX_ST_OK && out_op(&r, 0)->token >= 0x80000000ull,
	      "the grant: %u token %#llx", out_op(&r, 0)->status,
	      (unsigned long long)out_op(&r, 0)->token);
	run(&r);
	CHECK(out_hdr(&r)->status == XTX_ST_OK && (out_hdr(&r)->flags & XTX_F_REPLAYED) &&
	      out_op(&r, 0)->status == XTX_ST_OK && out_op(&r, 0)->value[0] == 0x28,
	      "its copy under the hold: packet %u, op %u (want OK with the value)",
	      out_hdr(&r)->status, out_op(&r, 0)->status);
	bucket_reset();
}

static void test_tc_applies_fix(void)
{
	const __u64 token = 0x1001;
	__u32 dkey = 2 * XTX_DEDUPE_WINDOW + (7000 & (XTX_DEDUPE_WINDOW - 1));
	struct xtx_dedupe_slot slot = { .word = xtx_dedupe_word(7000, XTX_DEDUPE_BUSY) };
	struct xtx_kv_bucket b = { .lock = token };
	struct iphdr *ip;
	struct udphdr *udp;
	struct run r;

	bucket_put(&b);
	bpf_map_update_elem(bpf_map__fd(skel->maps.xtx_dedupe), &dkey, &slot, 0);
	r.in_len = build_fix_reply(r.in, 55, token, XTX_FIX_FILL, 2, 0xf0f0, 7000);
	CHECK(!run_tc(&r), "tc test run: %s", strerror(errno));
	b = bucket_get();
	CHECK(r.retval == TC_ACT_OK, "verdict %d", r.retval);
	CHECK(b.lock == 0 && b.bloom == 0xf0f0, "lock %#llx bloom %#llx", (unsigned long long)b.lock,
	      (unsigned long long)b.bloom);
	CHECK(b.key[2] == 55 && b.version[2] == 12 && b.vlen[2] == 8 && b.value[2][0] == 0x5a &&
	      b.flags[2] == (XTX_KVF_VALID | XTX_KVF_IN_USER), "filled clean (flags %#x)",
	      b.flags[2]);
	bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_dedupe), &dkey, &slot);
	CHECK(slot.word == xtx_dedupe_word(7000, XTX_DEDUPE_DONE) &&
	      slot.res[0].status == XTX_ST_OK && slot.res[0].version == 12, "dedupe completed");
	ip = (struct iphdr *)(r.out + PKT_IP_OFF);
	udp = (struct udphdr *)(r.out + PKT_UDP_OFF);
	CHECK(r.out_len == PKT_PAYLOAD_OFF + xtx_msg_len(1), "trailer cut: %u", r.out_len);
	CHECK(ntohs(ip->tot_len) == r.out_len - PKT_IP_OFF && pkt_ip_csum((uint8_t *)ip, 20) == 0 &&
	      ntohs(udp->len) == r.out_len - PKT_UDP_OFF, "lengths and checksum");

	/* a fix whose token lost the bucket (lease taken over) touches nothing */
	b = (struct xtx_kv_bucket){ .lock = 0x2001 };
	bucket_put(&b);
	r.in_len = build_fix_reply(r.in, 56, token, XTX_FIX_FILL, 1, 0xffff, 7001);
	run_tc(&r);
	b = bucket_get();
	CHECK(b.lock == 0x2001 && b.flags[1] == 0, "stale fix applied");
	CHECK(b.bloom == 0xffff, "a stale fix must still add its filter bits: %#llx",
	      (unsigned long long)b.bloom);
	bucket_reset();
}

static void test_tc_victim_saved(void)
{
	struct xtx_kv_bucket b = {};
	struct xtx_fix_entry *fe;
	struct run r;

	/* way 1: a dirty value; way 3: a dirty tombstone */
	b.lock = 0x3001;
	b.key[1] = 11;
	b.version[1] = 4;
	b.flags[1] = XTX_KVF_VALID | XTX_KVF_DIRTY;
	b.key[3] = 13;
	b.version[3] = 9;
	b.flags[3] = XTX_KVF_TOMB | XTX_KVF_DIRTY | XTX_KVF_IN_USER;
	bucket_put(&b);
	r.in_len = build_fix_reply(r.in, 11, 0x3001, XTX_FIX_VICTIM_SAVED, XTX_KV_NO_WAY, 0, 7100);
	fe = fix_entry_of(r.in);
	fe->victim_way = 1;
	fe->victim_key = 11;
	fe->victim_version = 4;
	run_tc(&r);
	b = bucket_get();
	CHECK(b.flags[1] == (XTX_KVF_VALID | XTX_KVF_IN_USER), "saved victim is clean: %#x",
	      b.flags[1]);
	b.lock = 0x3001;
	bucket_put(&b);
	fe->victim_way = 3;
	fe->victim_key = 13;
	fe->victim_version = 9;
	run_tc(&r);
	b = bucket_get();
	CHECK(b.flags[3] == 0 && b.vfloor == 9, "saved tombstone freed, floor %llu",
	      (unsigned long long)b.vfloor);
	bucket_reset();
}

/* A deferred mutating request is BUSY until TC; a lost round trip is re-deferred. */
static void test_redefer_after_lost_round_trip(void)
{
	struct timespec ms5 = { 0, 5 * 1000 * 1000 };
	struct xtx_defer_trailer *t;
	struct xtx_kv_bucket b;
	struct run r;
	__u64 req = next_req++;

	bucket_reset();
	b = bucket_get();
	b.bloom = ~0ull;
	bucket_put(&b);
	/* within the lease (a long one) a duplicate waits; past it (1 ns) it goes back */
	set_runtime(LEASE_LONG_NS);
	make_req(&r, 3, req, 1, XTX_OP_UPDATE);
	in_op(&r, 0)->key = 8;
	in_op(&r, 0)->vlen = 8;
	run(&r);
	CHECK(r.retval == XDP_PASS, "deferred UPDATE (%d)", r.retval);
	run(&r);
	CHECK(r.retval == XDP_TX && out_hdr(&r)->status == XTX_ST_RETRY,
	      "duplicate while xtxd works: packet %u", out_hdr(&r)->status);
	set_runtime(1);
	nanosleep(&ms5, NULL);
	run(&r);
	t = trailer_of(&r, 1);
	CHECK(r.retval == XDP_PASS && t->count == 1 && (t->e[0].flags & XTX_DEFER_REPLAY),
	      "lost round trip: back to xtxd for its record (%d, flags %#x)", r.retval,
	      t->e[0].flags);
	set_runtime(0);
	bucket_reset();
}

/* ---- values over the slot: XDP hands them to xtxd, TC evicts and releases ---- */

/* A one-op request whose op has an area of cap bytes holding len value bytes of fill. */
static void big_req(struct run *r, __u32 client, __u64 req, __u8 opcode, __u64 key, __u16 cap,
		    __u16 len, __u8 fill)
{
	__u8 payload[PKT_MAX] __attribute__((aligned(8))) = {};
	struct xtx_op *op;
	size_t plen;

	xtx_msg_init(payload, client, req);
	op = xtx_msg_add(payload, opcode, 0, key);
	op->txn = xtx_txn_make(client, req);
	xtx_msg_set_area(op, cap, len);
	plen = xtx_msg_finish(payload);
	memset(xtx_msg_area(payload, op), fill, len);
	r->in_len = pkt_build(r->in, &pkt_default_addrs, payload, plen);
}

static struct xtx_defer_record defer_record_of(struct run *r)
{
	struct xtx_defer_record rec = {};
	__u32 ticket = out_hdr(r)->reserved - 1;

	if (out_hdr(r)->reserved)
		bpf_map_lookup_elem(bpf_map__fd(skel->maps.xtx_defer_ring), &ticket, &rec);
	return rec;
}

/*
 * xtxd's reply to a passed request r: its body with op 0 answered st (and
 * ext.len for an area op), then one fix entry and the footer, from the
 * server port.  Returns the body's length.
 */
static size_t reply_to(struct run *r, struct run *out, __u8 st, __u16 ext_len,
		       const struct xtx_fix_entry *fix)
{
	__u8 payload[PKT_MAX] __attribute__((aligned(8))) = {};
	size_t body = r->out_len - PKT_PAYLOAD_OFF;
	struct xtx_hdr *h = (struct xtx_hdr *)payload;
	struct xtx_op *op = xtx_msg_ops(payload);
	struct xtx_fix_footer ft = { .magic = XTX_FIX_MAGIC, .count = 1 };
	struct pkt_addrs a = pkt_default_addrs;

	memcpy(payload, r->out + PKT_PAYLOAD_OFF, body);
	h->flags |= XTX_F_REPLY;
	h->reserved = 0;
	h->status = XTX_ST_OK;
	op->status = st;
	if (op->flags & XTX_OPF_EXT)
		((struct xtx_ext *)op->value)->len = ext_len;
	memcpy(payload + body, fix, sizeof(*fix));
	ft.body_len = (__u16)body;
	memcpy(payload + body + sizeof(*fix), &ft, sizeof(ft));
	a.sport = XTX_DEFAULT_PORT;
	a.dport = 40000;
	out->in_len = pkt_build(out->in, &a, payload, body + XTX_FIX_TRAILER_LEN(1));
	return body;
}

/* A write of more than a slot goes to xtxd whole; the kernel stores none of it. */
static void test_big_write_deferred(void)
{
	struct xtx_defer_record rec;
	struct xtx_kv_bucket b;
	struct run r;

	bucket_reset();
	big_req(&r, 1, next_req++, XTX_OP_INSERT, 21, 1024, 1024, 0x61);
	run(&r);
	rec = defer_record_of(&r);
	b = bucket_get();
	CHECK(r.retval == XDP_PASS && out_op(&r, 0)->status == XTX_ST_DEFERRED,
	      "1024-byte insert of a new key: verdict %d status %u", r.retval,
	      out_op(&r, 0)->status);
	CHECK(r.out_len == r.in_len && rec.body_len == r.in_len - PKT_PAYLOAD_OFF &&
	      rec.t.count == 1 && rec.t.e[0].fill_way == XTX_KV_NO_WAY &&
	      !(rec.t.e[0].flags & (XTX_DEFER_EVICT | XTX_DEFER_HAS_VICTIM)),
	      "record: body %u count %u fill %u flags %#x", rec.body_len, rec.t.count,
	      rec.t.e[0].fill_way, rec.t.e[0].flags);
	CHECK((out_op(&r, 0)->flags & XTX_OPF_EXT) &&
	      !memcmp(out_op(&r, 0)->value, in_op(&r, 0)->value, sizeof(struct xtx_ext)) &&
	      !memcmp(r.out + PKT_PAYLOAD_OFF + xtx_msg_len(1),
		      r.in + PKT_PAYLOAD_OFF + xtx_msg_len(1), 1024),
	      "the area reached xtxd changed");
	CHECK(b.flags[0] == 0 && b.flags[1] == 0, "the kernel took the key");
	bucket_reset();

	/* 41 bytes: one more than a slot, deferred all the same */
	big_req(&r, 1, next_req++, XTX_OP_UPDATE, 22, 48, 41, 0x62);
	run(&r);
	CHECK(r.retval == XDP_PASS && out_op(&r, 0)->status == XTX_ST_DEFERRED,
	      "41-byte update: verdict %d status %u", r.retval, out_op(&r, 0)->status);
	bucket_reset();
}

/*
 * A big write to a key the kernel caches: the dirty copy rides along as
 * the victim, TC's EVICT frees the way, and XDP answers from it no more.
 */
static void test_big_write_evicts(void)
{
	struct xtx_fix_entry fix = {};
	struct xtx_defer_record rec;
	struct xtx_kv_bucket b;
	struct xtx_op op;
	struct run r, t;
	int v;

	bucket_reset();
	kv_do(XTX_OP_INSERT, 2, 8, 0x11, &v);	/* way 0, dirty, v1 */
	kv_do(XTX_OP_INSERT, 3, 8, 0x12, &v);	/* way 1 */
	big_req(&r, 1, next_req++, XTX_OP_UPDATE, 3, 512, 300, 0x63);
	run(&r);
	rec = defer_record_of(&r);
	CHECK(r.retval == XDP_PASS && out_op(&r, 0)->status == XTX_ST_DEFERRED,
	      "big update of a cached key: verdict %d", r.retval);
	CHECK((rec.t.e[0].flags & XTX_DEFER_EVICT) && (rec.t.e[0].flags & XTX_DEFER_HAS_VICTIM) &&
	      rec.t.e[0].fill_way == 1 && rec.t.e[0].victim_way == 1 &&
	      rec.t.e[0].victim.key == 3 && rec.t.e[0].victim.version == 1,
	      "evict entry: flags %#x fill %u victim %u key %llu", rec.t.e[0].flags,
	      rec.t.e[0].fill_way, rec.t.e[0].victim_way,
	      (unsigned long long)rec.t.e[0].victim.key);
	b = bucket_get();
	CHECK(b.key[1] == 3 && (b.flags[1] & XTX_KVF_IN_USER) && b.lock == rec.t.e[0].token,
	      "the way stays, locked, until TC (flags %#x)", b.flags[1]);

	/* xtxd saved it, ran the update at v2, and asks TC to evict */
	fix.op_idx = 0;
	fix.action = XTX_FIX_VICTIM_SAVED | XTX_FIX_EVICT;
	fix.fill_way = 1;
	fix.victim_way = 1;
	fix.token = rec.t.e[0].token;
	fix.bloom = 1ull << xtx_bloom_bit_of(xtx_hash(0, 3));
	fix.victim_key = 3;
	fix.victim_version = 1;
	out_op(&r, 0)->version = 2;
	reply_to(&r, &t, XTX_ST_OK, 300, &fix);
	CHECK(!run_tc(&t) && t.retval == TC_ACT_OK, "tc verdict %d", t.retval);
	b = bucket_get();
	CHECK(b.flags[1] == 0 && b.lock == 0 && b.bloom == fix.bloom &&
	      b.key[0] == 2 && (b.flags[0] & XTX_KVF_VALID), "evicted: flags %#x lock %#llx",
	      b.flags[1], (unsigned long long)b.lock);
	CHECK(t.out_len == r.out_len, "reply cut to its body with the area: %u of %u", t.out_len,
	      r.out_len);

	/* a read of it goes to xtxd now, with its room */
	big_req(&r, 1, next_req++, XTX_OP_GET, 3, 1024, 0, 0);
	run(&r);
	CHECK(r.retval == XDP_PASS && out_op(&r, 0)->status == XTX_ST_DEFERRED &&
	      (out_op(&r, 0)->flags & XTX_OPF_EXT), "GET after eviction: verdict %d status %u",
	      r.retval, out_op(&r, 0)->status);
	bucket_reset();

	/* a small read with room of a key the kernel holds: answered here, in the slot */
	kv_do(XTX_OP_INSERT, 4, 8, 0x44, &v);
	big_req(&r, 1, next_req++, XTX_OP_GET, 4, 200, 0, 0);
	run(&r);
	op = *out_op(&r, 0);
	CHECK(r.retval == XDP_TX && op.status == XTX_ST_OK && !(op.flags & XTX_OPF_EXT) &&
	      op.vlen == 8 && op.value[7] == 0x44, "cached GET with room: verdict %d status %u "
	      "flags %#x", r.retval, op.status, op.flags);
	big_req(&r, 1, next_req++, XTX_OP_LOCK_EXCL, 4, 200, 0, 0);
	run(&r);
	op = *out_op(&r, 0);
	CHECK(r.retval == XDP_TX && op.status == XTX_ST_OK && !(op.flags & XTX_OPF_EXT) &&
	      op.vlen == 8 && op.value[0] == 0x44 && (op.flags & XTX_LOCKF_EXCL),
	      "cached grant with room: status %u flags %#x", op.status, op.flags);
	bucket_reset();
}

/*
 * A grant whose value is too big for its room: TC releases the lock XDP
 * took, and a retransmission answers TOO_BIG with the length again.
 */
static void test_too_big_grant(void)
{
	struct xtx_fix_entry fix = {};
	struct xtx_defer_record rec;
	struct xtx_kv_bucket b;
	struct xtx_ext ext;
	struct run r, t, o;
	__u64 req = next_req++;

	bucket_reset();
	b = bucket_get();
	b.bloom = ~0ull;
	bucket_put(&b);
	big_req(&r, 1, req, XTX_OP_LOCK_EXCL, 9, 64, 0, 0);
	run(&r);
	rec = defer_record_of(&r);
	CHECK(r.retval == XDP_PASS && out_op(&r, 0)->status == XTX_ST_DEFERRED &&
	      (out_op(&r, 0)->flags & XTX_OPF_EXT), "uncached grant with room: status %u flags %#x",
	      out_op(&r, 0)->status, out_op(&r, 0)->flags);
	/* held: another transaction is refused */
	big_req(&o, 2, next_req++, XTX_OP_LOCK_EXCL, 9, 64, 0, 0);
	run(&o);
	CHECK(out_op(&o, 0)->status == XTX_ST_REJECTED, "lock not held: %u",
	      out_op(&o, 0)->status);

	fix.action = XTX_FIX_RELEASE;
	fix.fill_way = XTX_KV_NO_WAY;
	fix.victim_way = XTX_KV_NO_WAY;
	fix.token = rec.t.e[0].token;
	fix.bloom = ~0ull;
	reply_to(&r, &t, XTX_ST_TOO_BIG, 700, &fix);
	CHECK(!run_tc(&t) && t.retval == TC_ACT_OK, "tc verdict %d", t.retval);
	b = bucket_get();
	CHECK(b.lock == 0, "bucket still held");
	/* released: another transaction gets it (deferred: the key is xtxd's) */
	big_req(&o, 2, next_req++, XTX_OP_LOCK_EXCL, 9, 64, 0, 0);
	run(&o);
	CHECK(out_op(&o, 0)->status == XTX_ST_DEFERRED, "TOO_BIG left its grant: %u",
	      out_op(&o, 0)->status);
	bucket_reset();

	/* the first request again: answered from the dedupe record, TOO_BIG with the length */
	big_req(&r, 1, req, XTX_OP_LOCK_EXCL, 9, 64, 0, 0);
	run(&r);
	memcpy(&ext, out_op(&r, 0)->value, sizeof(ext));
	CHECK(r.retval == XDP_TX && out_op(&r, 0)->status == XTX_ST_TOO_BIG &&
	      (out_hdr(&r)->flags & XTX_F_REPLAYED) && (out_op(&r, 0)->flags & XTX_OPF_EXT) &&
	      ext.len == 700 && ext.cap == 64, "replayed TOO_BIG: status %u len %u",
	      out_op(&r, 0)->status, ext.len);
	bucket_reset();
}

/*
 * A big write's round trip lost: its key is still in the kernel (TC never
 * evicted it), yet the first copy may have run, so the retransmission goes
 * back to xtxd for its record, evicting again.
 */
static void test_big_write_redefer(void)
{
	struct timespec ms5 = { 0, 5 * 1000 * 1000 };
	struct xtx_defer_record rec;
	struct run r;
	__u64 req = next_req++;
	int v;

	bucket_reset();
	kv_do(XTX_OP_INSERT, 6, 8, 0x66, &v);
	set_runtime(2 * 1000 * 1000);
	big_req(&r, 3, req, XTX_OP_UPDATE, 6, 128, 128, 0x67);
	run(&r);
	CHECK(r.retval == XDP_PASS, "deferred big UPDATE (%d)", r.retval);
	nanosleep(&ms5, NULL);
	big_req(&r, 3, req, XTX_OP_UPDATE, 6, 128, 128, 0x67);
	run(&r);
	rec = defer_record_of(&r);
	CHECK(r.retval == XDP_PASS && rec.t.count == 1 &&
	      (rec.t.e[0].flags & XTX_DEFER_REPLAY) && (rec.t.e[0].flags & XTX_DEFER_EVICT),
	      "lost big write: back to xtxd's record, evicting (%d, flags %#x)", r.retval,
	      rec.t.e[0].flags);
	set_runtime(0);
	bucket_reset();
}

/* A transaction op with its value in the area (len bytes of fill), for a txn of its own. */
static void txn_big_req(struct run *r, __u32 client, __u64 txn, __u8 opcode, __u64 key,
			__u64 version, __u64 token, __u16 len, __u8 fill)
{
	__u8 payload[PKT_MAX] __attribute__((aligned(8))) = {};
	struct xtx_op *op;
	size_t plen;

	xtx_msg_init(payload, client, next_req++);
	op = xtx_msg_add(payload, opcode, 0, key);
	op->txn = xtx_txn_make(client, txn);
	op->version = version;
	op->token = token;
	xtx_msg_set_area(op, len ? len : 64, len);
	plen = xtx_msg_finish(payload);
	memset(xtx_msg_area(payload, op), fill, len);
	r->in_len = pkt_build(r->in, &pkt_default_addrs, payload, plen);
}

/*
 * A COMMIT_PRIMARY that goes to xtxd keeps its transaction lock until
 * xtxd's answer: after the KV lease another transaction takes the bucket
 * over, and granted the key it would read the old copy and commit over the
 * deferred write.  A RETRY answer keeps the lock for the resend; any other
 * answer releases it (XTX_FIX_RELEASE), once: a second answer to the same
 * request (a re-deferral crossing the first) releases nothing.
 */
static void test_deferred_commit_keeps_lock(void)
{
	struct timespec ms5 = { 0, 5 * 1000 * 1000 };
	struct xtx_fix_entry fix = {};
	struct xtx_defer_record rec;
	struct run r, t, o;
	struct xtx_op op;
	__u64 tok;
	int v;

	bucket_reset();
	op = kv_do(XTX_OP_INSERT, 12, 8, 0x12, &v);	/* cached small, v1 */
	txn_big_req(&r, 1, 77, XTX_OP_LOCK_EXCL, 12, 0, 0, 0, 0);
	run(&r);
	tok = out_op(&r, 0)->token;
	CHECK(r.retval == XDP_TX && out_op(&r, 0)->status == XTX_ST_OK,
	      "grant of a cached key: verdict %d status %u", r.retval, out_op(&r, 0)->status);
	txn_big_req(&r, 1, 77, XTX_OP_COMMIT_PRIMARY, 12, op.version, tok, 700, 0x70);
	run(&r);
	rec = defer_record_of(&r);
	CHECK(r.retval == XDP_PASS && out_op(&r, 0)->status == XTX_ST_DEFERRED &&
	      (rec.t.e[0].flags & XTX_DEFER_EVICT), "big commit: verdict %d status %u flags %#x",
	      r.retval, out_op(&r, 0)->status, rec.t.e[0].flags);

	/* xtxd is late past the KV lease: the bucket goes, the lock does not */
	set_runtime(2 * 1000 * 1000);
	nanosleep(&ms5, NULL);
	txn_big_req(&o, 5, 78, XTX_OP_LOCK_EXCL, 12, 0, 0, 0, 0);
	run(&o);
	CHECK(out_op(&o, 0)->status == XTX_ST_REJECTED,
	      "another transaction was granted the key of a deferred commit: %u (packet %u)",
	      out_op(&o, 0)->status, out_hdr(&o)->status);
	set_runtime(0);

	fix.fill_way = XTX_KV_NO_WAY;
	fix.victim_way = XTX_KV_NO_WAY;
	fix.token = rec.t.e[0].token;
	fix.bloom = ~0ull;
	/* RETRY: the install did not run, the resend needs the lock */
	fix.action = XTX_FIX_RELEASE;
	reply_to(&r, &t, XTX_ST_RETRY, 700, &fix);
	CHECK(!run_tc(&t) && t.retval == TC_ACT_OK, "tc verdict %d", t.retval);
	txn_big_req(&o, 5, 79, XTX_OP_LOCK_EXCL, 12, 0, 0, 0, 0);
	run(&o);
	CHECK(out_op(&o, 0)->status == XTX_ST_REJECTED, "RETRY released the commit's lock: %u",
	      out_op(&o, 0)->status);
	/* the client sends the commit again, in a new request; xtxd answers OK: TC releases it */
	txn_big_req(&r, 1, 77, XTX_OP_COMMIT_PRIMARY, 12, op.version, tok, 700, 0x70);
	run(&r);
	rec = defer_record_of(&r);
	CHECK(r.retval == XDP_PASS && out_op(&r, 0)->status == XTX_ST_DEFERRED,
	      "the commit sent again: verdict %d status %u", r.retval, out_op(&r, 0)->status);
	fix.token = rec.t.e[0].token;
	reply_to(&r, &t, XTX_ST_OK, 700, &fix);
	CHECK(!run_tc(&t) && t.retval == TC_ACT_OK, "tc verdict %d", t.retval);
	txn_big_req(&o, 5, 80, XTX_OP_LOCK_EXCL, 12, 0, 0, 0, 0);
	run(&o);
	CHECK(out_op(&o, 0)->status == XTX_ST_OK || out_op(&o, 0)->status == XTX_ST_DEFERRED,
	      "the answered commit kept its lock: %u", out_op(&o, 0)->status);
	bucket_reset();
}

/*
 * A big write's kernel copy serves no more from the moment it goes to
 * xtxd: a clean copy the store holds is freed at once, a dirty one is
 * marked EVICTING, and after a lease takeover an op on it still goes to
 * xtxd, with the way as its victim, instead of reading or writing the old
 * small copy.  A store that could not take it (XTX_FIX_UNEVICT) lets it
 * serve again.
 */
static void test_big_write_evicting(void)
{
	struct timespec ms5 = { 0, 5 * 1000 * 1000 };
	struct xtx_fix_entry fix = {};
	struct xtx_defer_record rec;
	struct xtx_kv_bucket b;
	struct run r, o, t;
	struct xtx_op op;
	int v;

	/* clean, and the store holds it: the way goes now */
	bucket_reset();
	b = bucket_get();
	b.key[3] = 14;
	b.version[3] = 4;
	b.vlen[3] = 8;
	b.flags[3] = XTX_KVF_VALID | XTX_KVF_IN_USER;
	b.bloom = ~0ull;
	bucket_put(&b);
	big_req(&r, 1, next_req++, XTX_OP_UPDATE, 14, 512, 300, 0x64);
	run(&r);
	rec = defer_record_of(&r);
	b = bucket_get();
	CHECK(r.retval == XDP_PASS && (rec.t.e[0].flags & XTX_DEFER_EVICT) &&
	      !(rec.t.e[0].flags & XTX_DEFER_HAS_VICTIM) && b.flags[3] == 0,
	      "clean big update: verdict %d flags %#x way %#x", r.retval, rec.t.e[0].flags,
	      b.flags[3]);
	bucket_reset();

	/* dirty: EVICTING, and after the lease no op answers from it */
	op = kv_do(XTX_OP_INSERT, 15, 8, 0x15, &v);
	big_req(&r, 1, next_req++, XTX_OP_UPDATE, 15, 512, 300, 0x65);
	run(&r);
	b = bucket_get();
	CHECK(r.retval == XDP_PASS && b.flags[0] == (XTX_KVF_VALID | XTX_KVF_DIRTY |
						      XTX_KVF_IN_USER | XTX_KVF_EVICTING),
	      "dirty big update: verdict %d way %#x", r.retval, b.flags[0]);
	set_runtime(2 * 1000 * 1000);
	nanosleep(&ms5, NULL);
	kv_req(&o, XTX_OP_UPDATE, 15, 4, 0x0d);
	run(&o);
	rec = defer_record_of(&o);
	b = bucket_get();
	CHECK(o.retval == XDP_PASS && out_op(&o, 0)->status == XTX_ST_DEFERRED &&
	      (rec.t.e[0].flags & (XTX_DEFER_EVICT | XTX_DEFER_HAS_VICTIM)) ==
	      (XTX_DEFER_EVICT | XTX_DEFER_HAS_VICTIM) && rec.t.e[0].victim.key == 15 &&
	      rec.t.e[0].victim.version == op.version && b.version[0] == op.version,
	      "small update of an EVICTING way after a takeover: verdict %d status %u v%llu "
	      "flags %#x", o.retval, out_op(&o, 0)->status,
	      (unsigned long long)out_op(&o, 0)->version, rec.t.e[0].flags);
	nanosleep(&ms5, NULL);
	kv_req(&o, XTX_OP_GET, 15, 0, 0);
	run(&o);
	rec = defer_record_of(&o);
	CHECK(o.retval == XDP_PASS && out_op(&o, 0)->status == XTX_ST_DEFERRED &&
	      (rec.t.e[0].flags & XTX_DEFER_EVICT),
	      "GET of an EVICTING way after a takeover: verdict %d status %u", o.retval,
	      out_op(&o, 0)->status);
	set_runtime(0);

	/* the store was full: the way serves again */
	fix.action = XTX_FIX_UNEVICT;
	fix.fill_way = 0;
	fix.victim_way = 0;
	fix.token = rec.t.e[0].token;
	fix.bloom = ~0ull;
	out_op(&o, 0)->status = XTX_ST_FULL;
	reply_to(&o, &t, XTX_ST_FULL, 0, &fix);
	CHECK(!run_tc(&t) && t.retval == TC_ACT_OK, "tc verdict %d", t.retval);
	op = kv_do(XTX_OP_GET, 15, 0, 0, &v);
	CHECK(v == XDP_TX && op.status == XTX_ST_OK && op.value[0] == 0x15,
	      "unevicted way: verdict %d status %u", v, op.status);
	bucket_reset();
}

int main(void)
{
	xtx_log_libbpf();
	test_kv_buckets = KV_BUCKETS;
	skel = load_server(TEST_MAX_CLIENTS, TEST_LOCK_SLOTS, false);
	tc = skel ? load_tc_for(skel, true) : NULL;
	if (!skel || !tc) {
		printf("FAIL: load_server (%s)\n", strerror(errno));
		return 1;
	}
	set_runtime(0);
	RUN_CASE(test_insert_get_update_delete);
	RUN_CASE(test_tombstone);
	RUN_CASE(test_bloom_filter_answers_misses);
	RUN_CASE(test_defer_frame);
	RUN_CASE(test_bucket_lease);
	RUN_CASE(test_all_dirty_victim);
	RUN_CASE(test_one_deferral_per_bucket_and_budget);
	RUN_CASE(test_oversized_value);
	RUN_CASE(test_tc_applies_fix);
	RUN_CASE(test_tc_victim_saved);
	RUN_CASE(test_tc_ignores_foreign_fix);
	RUN_CASE(test_replayed_grant_rereads_value);
	RUN_CASE(test_replayed_grant_after_its_hold);
	RUN_CASE(test_replayed_lapsed_grant_alone);
	RUN_CASE(test_replayed_grant_high_gen);
	RUN_CASE(test_redefer_after_lost_round_trip);
	RUN_CASE(test_big_write_deferred);
	RUN_CASE(test_big_write_evicts);
	RUN_CASE(test_too_big_grant);
	RUN_CASE(test_big_write_redefer);
	RUN_CASE(test_deferred_commit_keeps_lock);
	RUN_CASE(test_big_write_evicting);
	xtx_tc__destroy(tc);
	xtx_xdp__destroy(skel);
	printf("# test_kv: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
