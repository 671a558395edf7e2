#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Values of 1, 40, 41, 512 and 1024 bytes on 3 xtx servers with R = 3: through OCC and 2PL
# transactions, over keys the kernel cached with short values (evicted to xtxd's store), the
# log, a SIGKILL of every xtxd and the recovery; 1025 bytes refused; replicas identical.
# checks: 22 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

setup_servers
tmp=$(mktemp -d /tmp/xtx-test-bigvalue.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM
SIZES=1,40,41,512,1024
vals() { client "$BUILD/examples/values" --servers "$(all_server_ips)" "$@"; }
op() { client "$BUILD/xtxbench" op --server "$(server_ip "$1")" --client-id 60 "${@:2}"; }
ok() { grep -q '^values: ok' <<<"$1"; }

# ---- transactions of every size class, under both protocols ----
for p in occ 2pl; do
	[ "$p" = occ ] && base=8000 || base=9000
	out=$(vals -P "$p" -k "$base" -c 41 -z "$SIZES" 2>&1)
	check "$p: values of $SIZES bytes inserted, read, updated, read again ($(tail -n 1 <<<"$out"))" \
		ok "$out"
done

# ---- keys the kernel holds with short values, overwritten with long ones ----
out=$(vals -k 7000 -c 42 -z 8,8,8,8,8 write 2>&1)
check "short values written ($(tail -n 1 <<<"$out"))" ok "$out"
out=$(op 0 get 14 7004)
check "the short value is served in the slot ($out)" grep -q 'status=ok .*vlen=8 ' <<<"$out"
before=$(ctl 0 rare-stats --json)
out=$(vals -k 7000 -c 43 -z "$SIZES" -g 2 write 2>&1)
check "the same keys overwritten with $SIZES bytes ($(tail -n 1 <<<"$out"))" ok "$out"
out=$(vals -k 7000 -c 44 -z "$SIZES" -g 2 read 2>&1)
check "... and read back byte for byte ($(tail -n 1 <<<"$out"))" ok "$out"
out=$(op 0 get 14 7004 room=1024)
check "the 1024-byte value comes from xtxd's store, in the area ($(cut -c1-80 <<<"$out"))" \
	grep -q 'status=ok .*vlen=1024 ' <<<"$out"
out=$(op 0 get 14 7004)
check "a read with no room for it answers too_big with its length" \
	grep -q 'status=too_big .*vlen=1024 ' <<<"$out"
n=$(ctl 0 dump --table 14 | grep -c 'vlen=1024 ')
check "the dump shows the long values whole ($n of length 1024)" test "$n" -ge 3
out=$(vals -k 7000 -c 45 -z 8,8,8,8,8 -g 3 write 2>&1)
check "long values shrink back to 8 bytes ($(tail -n 1 <<<"$out"))" ok "$out"
out=$(vals -k 7000 -c 46 -z 8,8,8,8,8 -g 3 read 2>&1)
check "... and read back ($(tail -n 1 <<<"$out"))" ok "$out"
out=$(vals -k 7000 -c 47 -z "$SIZES" -g 4 write 2>&1)
check "and grow again ($(tail -n 1 <<<"$out"))" ok "$out"

# ---- one byte over the limit ----
hex1025=$(head -c 1025 /dev/zero | tr '\0' 'a' | xxd -p | tr -d '\n')
out=$(op 0 insert 14 7100 value="$hex1025" 2>&1)
check "a 1025-byte insert is refused bad_arg ($(cut -c1-60 <<<"$out"))" \
	grep -q 'refused: bad_arg' <<<"$out"
out=$(op 0 get 14 7100)
check "... and stored nothing ($out)" grep -q 'status=not_found' <<<"$out"
hex1024=${hex1025:2}
out=$(op 0 insert 14 7101 value="$hex1024")
check "a 1024-byte insert by a single op is stored ($(cut -c1-60 <<<"$out"))" \
	grep -q 'status=ok' <<<"$out"

# ---- every xtxd killed, restarted from its logs (the rings outlive xtxd: nothing waits) ----
for ((i = 0; i < NSERVERS; i++)); do kill9_xtxd "$i"; done
for ((i = 0; i < NSERVERS; i++)); do
	make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" >/dev/null ||
		fail "xtxd $i restarts after SIGKILL"
done
for k in 8000 9000; do
	out=$(vals -k "$k" -c 48 -z "$SIZES" -g 2 read 2>&1)
	check "after SIGKILL, keys $k.. of $SIZES bytes recovered ($(tail -n 1 <<<"$out"))" \
		ok "$out"
done
out=$(vals -k 7000 -c 49 -z "$SIZES" -g 4 read 2>&1)
check "after SIGKILL, the evicted-then-grown keys recovered ($(tail -n 1 <<<"$out"))" ok "$out"
out=$(op 0 get 14 7101 room=1024)
check "after SIGKILL, the single-op 1024-byte insert recovered" \
	grep -q 'status=ok .*vlen=1024 ' <<<"$out"
for ((i = 0; i < NSERVERS; i++)); do
	ctl "$i" dump --table 14 >"$tmp/dump$i" || fail "dump server $i"
done
# the single-op insert went to server 0 alone: compare the replicated keys
for ((i = 0; i < NSERVERS; i++)); do
	grep -v ' key=7101 ' "$tmp/dump$i" >"$tmp/rep$i"
done
check "the replicas hold identical values and versions ($(wc -l <"$tmp/rep0") keys)" \
	bash -c "[ \$(wc -l <$tmp/rep0) = 15 ] && cmp -s $tmp/rep0 $tmp/rep1 && cmp -s $tmp/rep0 $tmp/rep2"

# ---- a snapshot holds long values, and a restart from it keeps them ----
check "snapshot with long values" ctl 0 snapshot
kill9_xtxd 0
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" >/dev/null ||
	fail "xtxd 0 restarts from its snapshot"
ctl 0 dump --table 14 >"$tmp/after"
check "restarted from the snapshot, server 0's dump is what it was" cmp -s "$tmp/dump0" "$tmp/after"
finish
