#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Values over 40 bytes in the logs: logged whole, kept across a SIGKILL, recovered, snapshotted.
# checks: 43 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=1

setup_servers
SRV=$(server_ip 0)
DATA=/var/lib/xtx/$(server_ns 0)-$(server_dev 0)
TMP=$(mktemp -d /tmp/xtx-bigvalue.XXXXXX)
trap 'rm -rf "$TMP"; cleanup' EXIT INT TERM

field() { grep -o "\b$2=[^ ]*" <<<"$1" | head -n 1 | cut -d= -f2; }
# hexval LEN SEED: LEN bytes of a pattern that differs by position and seed, as hex
hexval() { awk -v n="$1" -v s="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%02x", (s * 31 + i * 7 + int(i / 256)) % 256 }'; }
op() { client "$BUILD/xtxbench" op --server "$SRV" --client-id 42 "$@"; }
TXN=0
# logw KEY VERSION VALUE: one logged write of table 0 with one replica (decided by being logged)
logw() {
	local out
	TXN=$((TXN + 1))
	out=$(op log-append 0 "$1" txn=$TXN version="$2" value="$3" replicas=0 flags=last 2>&1)
	[ "$(field "$out" status)" = ok ] || { echo "# log-append $1: $out"; return 1; }
}
reload() {
	make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" ARGS="$*" >/dev/null
}
all_drained() {
	! ctl 0 log stats --json | grep -o '"tail":[0-9]*,"head":[0-9]*' |
		awk -F'[:,]' '$2 != $4 { f = 1 } END { exit !f }'
}
wait_drained() {
	local i
	wait_until 60 all_drained
}
# logged KEY VERSION VALUE: xtxctl log dump shows that write whole, once
logged() {
	local n
	n=$(ctl 0 log dump | grep -c " key=$1 version=$2 .* vlen=$((${#3} / 2)) value=$3\$")
	[ "$n" -eq 1 ] || { echo "# key $1: $n whole records in the log dump"; return 1; }
}
# dumped KEY VERSION VALUE: xtxctl dump holds the key at that version with that value
dumped() {
	grep -qx "table=0 key=$1 version=$2 vlen=$((${#3} / 2)) value=$3" "$TMP/dump" ||
		{ echo "# key $1: $(grep "^table=0 key=$1 " "$TMP/dump" | cut -c1-120)"; return 1; }
}
clean_log() { ctl 0 log dump >"$TMP/log" && ! grep -q 'CORRUPTION\|# damaged\|# cut short' "$TMP/log"; }

# to_v1 FILE: rewrites a snapshot of values up to 40 bytes in format 1, as an older xtxd wrote it
to_v1() {
	python3 - "$1" <<'PY'
import struct, sys
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
def crc32c(crc, b):
    crc ^= 0xffffffff
    for x in b:
        crc = T[(crc ^ x) & 0xff] ^ (crc >> 8)
    return crc ^ 0xffffffff
assert crc32c(0, b"123456789") == 0xe3069283
d = bytearray(open(sys.argv[1], "rb").read())
ncpu, count = struct.unpack_from("<IQ", d, 12)
struct.pack_into("<I", d, 8, 1)
off = 64 + 16 * ncpu
for i in range(count):
    vlen = struct.unpack_from("<H", d, off + 18)[0]
    assert vlen <= 40
    d[off + 17] = vlen
    struct.pack_into("<HI", d, off + 18, 0, 0)
    struct.pack_into("<I", d, off + 20, crc32c(0, bytes(d[off:off + 64])))
    off += 64
# format 3 ends with the records it carries and their trailer: format 1 has none
assert off == len(d) or d[-32:-24] == b"XTXCARY\n"
del d[off:]
struct.pack_into("<I", d, 60, crc32c(crc32c(0, bytes(d[:60])), bytes(d[64:64 + 16 * ncpu])))
open(sys.argv[1], "wb").write(d)
PY
}

# ---- a snapshot of format 1 (values up to 40 bytes) is still read ----
check "load --count 50" eval 'ctl 0 load --count 50 >/dev/null'
ctl 0 dump >"$TMP/want"
ctl 0 unload >/dev/null
snap=$(ls "$DATA"/snapshot-*.xsnap | tail -n 1)
check "the load's snapshot rewritten in format 1 (${snap##*/})" to_v1 "$snap"
check "xtxd recovers from a format 1 snapshot" reload
ctl 0 dump >"$TMP/dump"
check "dump: the 50 keys as loaded" cmp -s "$TMP/want" "$TMP/dump"
ctl 0 unload >/dev/null
check "xtxd --fresh" reload --fresh

V41=$(hexval 41 1)
V512=$(hexval 512 2)
V1024=$(hexval 1024 3)
V700=$(hexval 700 4)
V40=$(hexval 40 5)

# ---- big writes logged whole: a head and its continuations, one write in the dump ----
check "LOG_APPEND of 41 bytes" logw 1 3 "$V41"
check "LOG_APPEND of 512 bytes" logw 2 3 "$V512"
check "LOG_APPEND of 1024 bytes" logw 3 3 "$V1024"
check "LOG_APPEND of 40 bytes (one entry, as before)" logw 4 3 "$V40"
out=$(op log-append 0 9 txn=99 version=3 value="${V1024}aa" replicas=0 2>&1)
check "LOG_APPEND of 1025 bytes refused ($(tail -n 1 <<<"$out"))" \
	grep -Eq 'refused: (bad_arg|malformed)' <<<"$out"
check "the drain wrote them" wait_drained
check "log dump: 41 bytes whole" logged 1 3 "$V41"
check "log dump: 512 bytes whole" logged 2 3 "$V512"
check "log dump: 1024 bytes whole" logged 3 3 "$V1024"
check "log dump: 40 bytes" logged 4 3 "$V40"
n=$(ctl 0 log dump --json | grep -o '"disk_records":[0-9]*' | cut -d: -f2)
check "2 + 8 + 14 + 1 entries on disk ($n)" test "$n" -eq 25
check "log dump: no damage" clean_log

# ---- SIGKILL: the drain starts again on the same ring, the logs stay whole ----
kill9_xtxd 0
check "xtxd restarts after SIGKILL" reload
check "a big write after the restart" logw 5 4 "$V700"
check "the drain wrote it" wait_drained
check "log dump after SIGKILL: the big writes whole" \
	eval 'logged 1 3 "$V41" && logged 3 3 "$V1024" && logged 5 4 "$V700" && clean_log'

# ---- recovery from disk: the logged big values go back, into the overflow store ----
ctl 0 unload >/dev/null
check "xtxd recovers from the logs" reload
ctl 0 dump >"$TMP/dump"
check "dump: 41 bytes recovered" dumped 1 3 "$V41"
check "dump: 512 bytes recovered" dumped 2 3 "$V512"
check "dump: 1024 bytes recovered" dumped 3 3 "$V1024"
check "dump: 700 bytes recovered" dumped 5 4 "$V700"
check "dump: 40 bytes recovered" dumped 4 3 "$V40"
check "the big keys are in the overflow store, not the kernel cache" \
	test "$(ctl 0 dump --json | grep -c '"key":[1235],.*"where":"overflow"')" -eq 4
out=$(op get 0 3 room=1024)
check "GET of the 1024-byte key ($(field "$out" status) vlen=$(field "$out" vlen))" \
	test "$(field "$out" status)/$(field "$out" value)" = "ok/$V1024"

# ---- a snapshot holds big values; a restart from it and a big write after it ----
out=$(ctl 0 snapshot 2>&1)
check "snapshot ($(head -n 1 <<<"$out"))" grep -q '^snapshot: 5 keys' <<<"$out"
printf '0 10 %s\n0 11 %s\n' "$V1024" "$V41" >"$TMP/load"
# (the load takes a snapshot of its own: its keys are in no log)
check "load --file with values of 1024 and 41 bytes" ctl 0 load --file "$TMP/load"
check "a big write after the snapshots" logw 2 5 "$V700"
check "the drain wrote it" wait_drained
ctl 0 unload >/dev/null
check "xtxd recovers from the snapshot and the log after it" reload
ctl 0 dump >"$TMP/dump"
check "dump: the snapshot's big values and the later write" \
	eval 'dumped 1 3 "$V41" && dumped 3 3 "$V1024" && dumped 5 4 "$V700" && dumped 2 5 "$V700"'
check "dump: the loaded big values (in the load's snapshot)" \
	eval 'grep -q "^table=0 key=10 version=[0-9]* vlen=1024 value=$V1024\$" "$TMP/dump" &&
	      grep -q "^table=0 key=11 version=[0-9]* vlen=41 value=$V41\$" "$TMP/dump"'
check "the loaded big keys are in the overflow store" \
	test "$(ctl 0 dump --json | grep -c '"key":1[01],.*"where":"overflow"')" -eq 2

# ---- a plain write of a big value, logged in xtxd's own log, survives a SIGKILL ----
out=$(op insert 0 20 value="$V1024")
check "INSERT of 1024 bytes ($(field "$out" status))" test "$(field "$out" status)" = ok
out=$(op insert 0 21 value="$V512")
check "INSERT of 512 bytes ($(field "$out" status))" test "$(field "$out" status)" = ok
kill9_xtxd 0
check "xtxd restarts after SIGKILL" reload
out=$(op get 0 20 room=1024)
check "GET after SIGKILL: the 1024 bytes back ($(field "$out" status))" \
	test "$(field "$out" status)/$(field "$out" value)" = "ok/$V1024"
ctl 0 unload >/dev/null
check "xtxd recovers from disk" reload
ctl 0 dump >"$TMP/dump"
check "dump: the inserted big values" \
	eval 'grep -q "^table=0 key=20 version=[0-9]* vlen=1024 value=$V1024\$" "$TMP/dump" &&
	      grep -q "^table=0 key=21 version=[0-9]* vlen=512 value=$V512\$" "$TMP/dump"'
finish
