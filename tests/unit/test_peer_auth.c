// SPDX-License-Identifier: GPL-2.0-only
/*
 * The servers' own messages (resolver and copy ports): the buffer MAC
 * against SipHash-2-4's reference, sealing and checking peer messages
 * (forged, tampered, replayed, stale, reordered), the ration of work a
 * sender without a secret may cause, and the held files a snapshot leaves
 * for the resolver.
 */
/* checks: 6 (tests/run.sh fails the suite when fewer verdicts come out) */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "sipmac.h"
#include "log/held.h"
#include "resolve/peer_msg.h"
#include "copy/copy.h"
#include "copy/copy_wire.h"

static const struct xtx_secret key = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };

static void test_sipmac_reference(void)
{
	uint8_t b[64];
	unsigned int i, cut;

	for (i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)i;
	/* SipHash-2-4, key 00..0f, message 00..0e (the paper's appendix) */
	CHECK(xtx_sipmac(&key, 0, b, 15) == 0xa129ca6149be45e5ull, "reference vector: %#llx",
	      (unsigned long long)xtx_sipmac(&key, 0, b, 15));
	CHECK(xtx_sipmac(&key, XTX_MAC_PEER, b, 15) != xtx_sipmac(&key, 0, b, 15),
	      "another domain, another MAC");
	for (cut = 0; cut <= sizeof(b); cut++) {
		struct xtx_sipmac m;

		xtx_sipmac_init(&m, &key, XTX_MAC_COPY_STREAM);
		xtx_sipmac_update(&m, b, cut);
		xtx_sipmac_update(&m, b + cut, sizeof(b) - cut);
		CHECK(xtx_sipmac_final(&m) == xtx_sipmac(&key, XTX_MAC_COPY_STREAM, b, sizeof(b)),
		      "in two pieces cut at %u: the same MAC", cut);
	}
	CHECK(xtx_sipmac_eq(5, 5) && !xtx_sipmac_eq(5, 4) && !xtx_sipmac_eq(1ull << 63, 0),
	      "the comparison");
}

static struct xtxd_peer_msg msg(uint64_t txn)
{
	struct xtxd_peer_msg m = {};

	m.h.magic = XTX_MAGIC;
	m.h.version = XTX_VERSION;
	m.h.nops = 1;
	m.op.opcode = XTX_OP_RESOLVE_DECIDE;
	m.op.txn = txn;
	m.op.flags = 2;
	m.op.token = 1;
	return m;
}

#define SEC	1000000000ull

/* Seals m as stamped at stamp (the sender's own stamps only ever increase). */
static void seal_at(struct xtxd_peer_msg *m, uint64_t stamp)
{
	m->a.stamp = stamp;
	m->a.mac = xtx_sipmac(&key, XTX_MAC_PEER, m, offsetof(struct xtxd_peer_msg, a.mac));
}

static void test_peer_seal(void)
{
	uint64_t now = 1700000000ull * SEC;
	struct xtxd_peer_msg m = msg(42), t;
	size_t len;

	xtxd_peer_set_secret(NULL);
	len = xtxd_peer_seal(&m, now);
	CHECK(len == XTXD_PEER_MSG_PLAIN && xtxd_peer_check(&m, len, 1, now) == XTXD_PEER_OK,
	      "no secret: the plain message, taken");
	xtxd_peer_set_secret(&key);
	CHECK(xtxd_peer_check(&m, XTXD_PEER_MSG_PLAIN, 1, now) == XTXD_PEER_BAD_FORM,
	      "a secret: a plain message (a forger's) is refused");
	len = xtxd_peer_seal(&m, now);
	CHECK(len == XTXD_PEER_MSG_SEALED, "sealed: %zu bytes", len);
	t = m;
	CHECK(xtxd_peer_check(&t, len, 1, now) == XTXD_PEER_OK, "sealed: taken");
	CHECK(xtxd_peer_check(&t, len, 1, now) == XTXD_PEER_REPLAY, "the same again: a replay");
	t = m;
	t.op.flags = 1;		/* abort instead of commit */
	CHECK(xtxd_peer_check(&t, len, 1, now) == XTXD_PEER_BAD_MAC, "tampered: bad MAC");
	t = m;
	t.op.token = 2;		/* the same bytes claimed by another server */
	CHECK(xtxd_peer_check(&t, len, 2, now) == XTXD_PEER_BAD_MAC, "another sender's: bad MAC");
	t = msg(43);
	seal_at(&t, now - 600 * SEC);
	CHECK(xtxd_peer_check(&t, len, 1, now) == XTXD_PEER_STALE, "ten minutes old: stale");
	t = msg(44);
	seal_at(&t, now + 600 * SEC);
	CHECK(xtxd_peer_check(&t, len, 1, now) == XTXD_PEER_STALE, "ten minutes ahead: stale");
}

static void test_peer_reorder(void)
{
	uint64_t now = 1700000000ull * SEC;
	struct xtxd_peer_msg a = msg(1), b = msg(2), c = msg(3), d = msg(4);
	size_t len;
	unsigned int i;

	xtxd_peer_set_secret(&key);
	len = xtxd_peer_seal(&a, now);
	xtxd_peer_seal(&b, now + SEC / 2);
	xtxd_peer_seal(&c, now + 3 * SEC);
	CHECK(xtxd_peer_check(&b, len, 0, now) == XTXD_PEER_OK, "the later one first");
	CHECK(xtxd_peer_check(&a, len, 0, now) == XTXD_PEER_OK, "an earlier one, reordered");
	CHECK(xtxd_peer_check(&a, len, 0, now) == XTXD_PEER_REPLAY, "... but not twice");
	CHECK(xtxd_peer_check(&c, len, 0, now) == XTXD_PEER_OK, "3 s later");
	seal_at(&d, now + SEC / 4);	/* before c by more than the reorder window */
	CHECK(xtxd_peer_check(&d, len, 0, now) == XTXD_PEER_REPLAY,
	      "older than the newest by more than the window: refused, cannot be told apart");
	for (i = 0; i < 300; i++) {
		struct xtxd_peer_msg e = msg(100 + i);

		xtxd_peer_seal(&e, now + 3 * SEC);
		CHECK(xtxd_peer_check(&e, len, 0, now) == XTXD_PEER_OK, "burst %u taken", i);
	}
}

static void test_peer_ration(void)
{
	uint64_t t = 5 * SEC;
	unsigned int i, ok = 0;

	xtxd_peer_set_secret(NULL);
	for (i = 0; i < 1000; i++)
		ok += xtxd_peer_unknown_allowed(1, t);
	CHECK(ok == XTXD_PEER_UNKNOWN_BURST, "no secret: a burst of %u at once, not %u",
	      XTXD_PEER_UNKNOWN_BURST, ok);
	CHECK(xtxd_peer_unknown_allowed(2, t), "another sender has its own ration");
	for (i = ok = 0; i < 1000; i++)
		ok += xtxd_peer_unknown_allowed(1, t + SEC);
	CHECK(ok == XTXD_PEER_UNKNOWN_RATE, "a second later, %u more, not %u",
	      XTXD_PEER_UNKNOWN_RATE, ok);
	xtxd_peer_set_secret(&key);
	for (i = ok = 0; i < 1000; i++)
		ok += xtxd_peer_unknown_allowed(1, t);
	CHECK(ok == 1000, "a sealed sender proved itself: no ration (%u)", ok);
}

static void test_copy_seals(void)
{
	struct xtxd_copy_req rq = { .magic = XTXD_COPY_MAGIC, .epoch = 7, .from = 3 };
	struct xtxd_copy_hdr h = { .magic = XTXD_COPY_MAGIC };
	struct xtxd_copy_frame f = { .len = 8 };
	uint64_t m, bytes = 0x1122334455667788ull;
	struct xtx_secret other = key;

	xtxd_copy_set_secret(NULL);
	CHECK(!xtxd_copy_sealed() && !xtxd_copy_req_mac(&rq, 1) && xtxd_copy_mac_ok(1, 2),
	      "no secret: nothing sealed, nothing checked");
	xtxd_copy_set_secret(&key);
	m = xtxd_copy_req_mac(&rq, 100);
	CHECK(m && xtxd_copy_mac_ok(m, xtxd_copy_req_mac(&rq, 100)), "a request's seal");
	CHECK(!xtxd_copy_mac_ok(m, xtxd_copy_req_mac(&rq, 101)), "... binds its stamp");
	rq.from = 4;
	CHECK(!xtxd_copy_mac_ok(m, xtxd_copy_req_mac(&rq, 100)), "... and its sender");
	CHECK(xtxd_copy_reply_mac(&h, m) != xtxd_copy_reply_mac(&h, m + 1),
	      "a reply's seal is bound to the request's");
	CHECK(xtxd_copy_frame_mac(1, &f, &bytes) != xtxd_copy_frame_mac(2, &f, &bytes),
	      "a frame's seal is chained to the one before");
	other.k1 ^= 1;
	xtxd_copy_set_secret(&other);
	CHECK(!xtxd_copy_mac_ok(m, xtxd_copy_req_mac(&rq, 100)), "another secret, another seal");
	xtxd_copy_set_secret(NULL);
}

static int count_held_files(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	while (d && (de = readdir(d)))
		n += !strncmp(de->d_name, "held-", 5);
	if (d)
		closedir(d);
	return n;
}

static void test_held_files(void)
{
	char dir[] = "/tmp/xtx-held.XXXXXX";
	uint64_t held[] = { 9, 3, 7 }, valid[] = { 100 }, more[] = { 11 };
	int dirfd, fd;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	xtxd_held_set_keep(0);
	CHECK(!xtxd_held_wanted(), "no resolver: nothing kept");
	xtxd_held_set_keep(600 * SEC);
	CHECK(!xtxd_held_add(dirfd, 1, held, 3, valid, 1), "a snapshot's lists written");
	CHECK(!xtxd_held_add(dirfd, 2, more, 1, NULL, 0), "a second snapshot's");
	CHECK(xtxd_held_has(3) && xtxd_held_has(7) && xtxd_held_has(9) && xtxd_held_has(11) &&
	      !xtxd_held_has(5) && !xtxd_held_has(100), "held: the listed transactions only");
	CHECK(xtxd_held_validated(100) && !xtxd_held_validated(3), "validated: its own list");
	/* a restart reads them back */
	xtxd_held_reset();
	CHECK(!xtxd_held_has(3), "forgotten after a reset");
	CHECK(!xtxd_held_load(dirfd) && xtxd_held_has(3) && xtxd_held_has(11) &&
	      xtxd_held_validated(100) && xtxd_held_count() == 5,
	      "read back at start: %zu ids", xtxd_held_count());
	/* a damaged one is dropped, loudly, the others stay */
	fd = openat(dirfd, "held-000001.xheld", O_WRONLY);
	if (fd >= 0) {
		CHECK(pwrite(fd, "\xff", 1, 60) == 1, "damaging it");
		close(fd);
	}
	CHECK(!xtxd_held_load(dirfd) && !xtxd_held_has(3) && xtxd_held_has(11),
	      "a damaged file is dropped, the other read");
	CHECK(count_held_files(dir) == 1, "... and removed (%d left)", count_held_files(dir));
	/* past --keep-decided they go, in memory and on disk */
	xtxd_held_set_keep(1);
	usleep(1000);
	xtxd_held_expire(dirfd);
	CHECK(!xtxd_held_has(11) && count_held_files(dir) == 0, "expired: gone (%d files)",
	      count_held_files(dir));
	xtxd_held_set_keep(0);
	xtxd_held_reset();
	close(dirfd);
	rmdir(dir);
}

int main(void)
{
	RUN_CASE(test_sipmac_reference);
	RUN_CASE(test_peer_seal);
	RUN_CASE(test_peer_reorder);
	RUN_CASE(test_peer_ration);
	RUN_CASE(test_copy_seals);
	RUN_CASE(test_held_files);
	printf("# test_peer_auth: %d passed, %d failed\n", cases_passed, cases_failed);
	return cases_failed ? 1 : 0;
}
