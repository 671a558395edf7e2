#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Snapshot and recovery: a fresh xtxd rebuilds the store from the snapshot and the logs after it.
# checks: 64 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=1

setup_servers
SRV=$(server_ip 0)
DATA=/var/lib/xtx/$(server_ns 0)-$(server_dev 0)
TMP=$(mktemp -d /tmp/xtx-recover.XXXXXX)
trap 'rm -rf "$TMP"; cleanup' EXIT INT TERM

field() { grep -o "\b$2=[^ ]*" <<<"$1" | head -n 1 | cut -d= -f2; }
# log KEY VERSION VALUE [flags=...]: one logged write of table 0, answered ok
TXN=0
logw() {
	local out
	TXN=$((TXN + 1))
	out=$(client "$BUILD/xtxbench" op --server "$SRV" --client-id 42 log-append 0 "$1" \
		txn=$TXN version="$2" value="$3" replicas=0 "${@:4}" 2>&1)
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
# set KEY VERSION VALUE / del KEY on the expected dump
set_key() {
	grep -v "^table=0 key=$1 " "$TMP/want" >"$TMP/w2"
	echo "table=0 key=$1 version=$2 vlen=$((${#3} / 2)) value=$3" >>"$TMP/w2"
	sort -t' ' -k1,1 -k2.5,2n "$TMP/w2" >"$TMP/want"
}
del_key() { grep -v "^table=0 key=$1 " "$TMP/want" >"$TMP/w2"; mv "$TMP/w2" "$TMP/want"; }
same_dump() {
	ctl 0 dump >"$TMP/got" 2>&1
	cmp -s "$TMP/want" "$TMP/got" && return 0
	diff "$TMP/want" "$TMP/got" | head -n 8 | sed 's/^/    /'
	return 1
}
XTXD_LOG=/run/xtx/$(server_ns 0)-$(server_dev 0).log
xlog() { grep -E 'recovery:|snapshot:' "$XTXD_LOG" | tail -n "$1"; }

# ---- 500 keys at version 1, a write logged before the snapshot, the snapshot ----
check "load --count 500" ctl 0 load --count 500 >/dev/null
ctl 0 dump >"$TMP/want"
check "500 keys loaded" test "$(wc -l <"$TMP/want")" -eq 500
# a key created and deleted before the snapshot: only its bucket's floor remembers it
op() { client "$BUILD/xtxbench" op --server "$SRV" --client-id 43 "$@"; }
op insert 0 900000 value=01 >/dev/null
op update 0 900000 value=02 >/dev/null
gone=$(field "$(op delete 0 900000)" version)
# logged only (its commit still to come): the snapshot's position covers it, its keys lack it,
# so the snapshot carries the record and recovery replays it like any one-replica write
check "a write logged before the snapshot" logw 1 3 aa01
set_key 1 3 aa01
out=$(ctl 0 snapshot 2>&1)
echo "# $(head -n 1 <<<"$out")"
check "snapshot: 500 keys" grep -q '^snapshot: 500 keys, log positions cpu0=' <<<"$out"
# (the load above took one too: its keys are in no log)
first=$(ls "$DATA"/snapshot-*.xsnap 2>/dev/null | tail -n 1)
check "snapshot file written (${first##*/})" test -f "$first"

# ---- writes logged after it: newer versions, a new key, a stale version, a delete ----
logw 10 5 beef && logw 20 6 0102030405 && logw 1000 3 77 && logw 50 1 dead &&
	logw 30 7 "" flags=delete && logw 60 9 6060
check "six writes logged after the snapshot" test $? -eq 0
check "the drain wrote them" wait_drained
set_key 10 5 beef
set_key 20 6 0102030405
set_key 1000 3 77
del_key 30

# ---- stop (pins removed), tear the last record, start again ----
ctl 0 unload >/dev/null
rec=$(ctl 0 log dump | grep ' key=60 ')
cpu=$(field "$rec" cpu)
seg=$(ls "$DATA"/log-cpu"$cpu"-*.xlog | tail -n 1)
read -r _ nrec end _ < <(log_segs 0 | grep "^${seg##*/} ")
tear_record "$seg" "$end"
check "xtxd starts and recovers" reload
check "dump: the snapshot with the later writes applied, the torn one not" same_dump
again=$(field "$(op insert 0 900000 value=03)" version)
check "a key deleted before the snapshot never reuses a version ($again > $gone)" \
	test "${again:-0}" -gt "${gone:-99}"
op delete 0 900000 >/dev/null
read -r _ nrec2 end2 st2 < <(log_segs 0 | grep "^${seg##*/} ")
check "the torn record was cut off ${seg##*/} ($nrec2 records to $end2, $st2)" \
	test "$nrec2.$end2.$st2" = "$((nrec - 1)).$((end - 92)).ok"
check "xtxd logged the cut and what it left out" \
	test "$(xlog 20 | grep -c 'cut a torn last record\|0 of undecided or aborted')" -ge 2
echo "# $(xlog 3 | grep 'keys live' | sed 's/.*recovery: //')"

# ---- a new ring incarnation starts at seq 0: its records must come after the old ones ----
check "a write logged after recovery" logw 10 8 cafe
check "the drain wrote it" wait_drained
set_key 10 8 cafe
ctl 0 unload >/dev/null
check "xtxd recovers a second time" reload
check "dump: the old logs did not undo the new write" same_dump
out=$(ctl 0 snapshot 2>&1)
echo "# $(head -n 1 <<<"$out")"
check "second snapshot removes the covered segments" \
	test "$(grep -o 'removed [0-9]*' <<<"$out" | cut -d' ' -f2)" -gt 0
check "the first snapshot is gone" test ! -e "$first"
ctl 0 unload >/dev/null
check "xtxd recovers from the second snapshot" reload
check "dump: unchanged" same_dump

# ---- a snapshot when every segment is an older incarnation's: what is logged after it counts ----
check "a write logged before a reload" logw 20 10 2020
check "the drain wrote it" wait_drained
set_key 20 10 2020
ctl 0 unload >/dev/null
check "xtxd recovers a third time" reload
out=$(ctl 0 snapshot 2>&1)
check "a snapshot covering every segment ($(head -n 1 <<<"$out"))" grep -q '^snapshot: ' <<<"$out"
ctl 0 unload >/dev/null
check "xtxd recovers from it" reload
check "a write logged after that snapshot" logw 20 11 2121
check "the drain wrote it" wait_drained
set_key 20 11 2121
ctl 0 unload >/dev/null
check "xtxd recovers once more" reload
check "dump: the write logged after the snapshot is there" same_dump

# ---- damage before the end: refuse to start ----
ctl 0 unload >/dev/null
last=$(ls "$DATA"/snapshot-*.xsnap | tail -n 1)
cp "$last" "$TMP/snap"
printf '\xff' | dd of="$last" bs=1 seek=200 conv=notrunc status=none
reload 2>"$TMP/err"
check "a damaged snapshot: xtxd refuses to start" test $? -ne 0
check "... saying why" grep -q 'fails its CRC' "$TMP/err"
cp "$TMP/snap" "$last"

# ---- --fresh starts empty ----
check "xtxd --fresh starts" reload --fresh
check "dump: empty" test -z "$(ctl 0 dump)"
check "the old state was moved aside" test -n "$(ls -d "$DATA"/fresh-* 2>/dev/null)"

# ---- requests are held from the attach until recovery is done: never an empty store's answer ----
check "load --count 50000" ctl 0 load --count 50000 >/dev/null
check "snapshot of 50000 keys" ctl 0 snapshot >/dev/null
ctl 0 unload >/dev/null
# asker KEY: gets KEY until $TMP/stop, each answer's status to $TMP/gets, each try to $TMP/tries
asker() {
	rm -f "$TMP/stop" "$TMP/tries"
	(
		end=$((SECONDS + 300))
		while ((SECONDS < end)); do
			echo . >>"$TMP/tries"
			client "$BUILD/xtxbench" op --server "$SRV" --client-id 44 --timeout 5ms \
				get 0 "$1" 2>&1 | grep -o 'status=[a-z_]*'
			[ -e "$TMP/stop" ] && break
		done
	) >"$TMP/gets" &
	getter=$!
	wait_until 60 test -s "$TMP/tries"
}
# once an answer came after the restart, the asker stops
answered_since() { [ "$(grep -c 'status=ok' "$TMP/gets")" -gt "$1" ]; }
stop_asker() { wait_until 60 answered_since "$1"; touch "$TMP/stop"; wait "$getter"; }
asker 49999
check "xtxd recovers 50000 keys while a client keeps asking" reload
stop_asker 0
wait "$getter"
check "no answer came from a store still being rebuilt ($(sort "$TMP/gets" | uniq -c |
	tr '\n' ' '))" test "$(grep -vc 'status=ok' "$TMP/gets")" -eq 0
check "... and the key was answered once recovered" grep -q 'status=ok' "$TMP/gets"
ctl 0 unload >/dev/null
check "xtxd --fresh" reload --fresh

# ---- several replicas: a write is replayed only once its transaction's record is complete ----
check "a txn logged complete on replicas 0,1" logw 70 3 7070 replicas=0,1 flags=last
check "a txn logged without its last write" logw 71 3 7171 replicas=0,1
check "the drain wrote them" wait_drained
ctl 0 unload >/dev/null
check "xtxd recovers" reload
check "dump: the complete txn's write only" \
	test "$(ctl 0 dump)" = "table=0 key=70 version=3 vlen=2 value=7070"

# ---- SIGKILL: the overflow store died with xtxd and is rebuilt before anything is served ----
ctl 0 unload >/dev/null
check "xtxd --fresh with 16 kernel buckets" reload --fresh --kv-buckets 16
check "load --count 300" ctl 0 load --count 300 >/dev/null
ctl 0 dump --json >"$TMP/where"
nstore=$(grep -c '"where":"overflow"' "$TMP/where")
check "keys evicted to the overflow store ($nstore of 300)" test "$nstore" -gt 100
check "snapshot" ctl 0 snapshot >/dev/null
# a store key committed after the snapshot: logged, then installed
K=$(grep '"where":"overflow"' "$TMP/where" | head -n 1 | grep -o '"key":[0-9]*' | cut -d: -f2)
check "a write to store key $K logged after the snapshot" logw "$K" 7 c0ffee
out=$(op commit-backup 0 "$K" txn=1 version=7 value=c0ffee)
check "... and committed" test "$(field "$out" status)" = ok
check "the drain wrote it" wait_drained
ctl 0 dump >"$TMP/want"
asker "$K"
wait_until 60 answered_since 0
kill9_xtxd 0
before=$(grep -c 'status=ok' "$TMP/gets")
check "xtxd restarts after SIGKILL and adopts the program" reload --kv-buckets 16
stop_asker "$before"
asked=$(grep -c 'status=ok' "$TMP/gets")
check "store key $K asked throughout: never a wrong answer ($(sort "$TMP/gets" | uniq -c |
	tr '\n' ' '))" test "$asked" -gt 0 -a "$(grep -vc 'status=ok' "$TMP/gets")" -eq 0
check "xtxd rebuilt the overflow store" \
	grep -q 'keys rebuilt into the overflow store' "$XTXD_LOG"
echo "# $(grep 'keys rebuilt into the overflow store' "$XTXD_LOG" | tail -n 1 |
	sed 's/.*recovery: //')"
check "dump after SIGKILL: every key, kernel and store, as before" same_dump
out=$(op get 0 "$K")
check "store key $K reads back at version 7 ($out)" \
	test "$(field "$out" status)/$(field "$out" version)/$(field "$out" value)" = ok/7/c0ffee
K2=$(grep '"where":"overflow"' "$TMP/where" | sed -n 2p | grep -o '"key":[0-9]*' | cut -d: -f2)
out=$(op get 0 "$K2")
check "store key $K2 reads back at version 1" \
	test "$(field "$out" status)/$(field "$out" version)" = ok/1

# ---- plain writes outside transactions survive a SIGKILL: XDP and xtxd log them ----
check "snapshot before the plain writes" ctl 0 snapshot >/dev/null
ctl 0 dump --json >"$TMP/where2"
keys_in() { grep "\"where\":\"$1\"" "$TMP/where2" | grep -o '"key":[0-9]*' | cut -d: -f2 | head -n "$2"; }
mapfile -t inkern < <(keys_in kernel 20)
mapfile -t instore < <(keys_in overflow 20)
bad=0
for k in "${inkern[@]}"; do [ "$(field "$(op update 0 "$k" value=aa01)" status)" = ok ] || bad=1; done
for k in "${instore[@]}"; do [ "$(field "$(op update 0 "$k" value=bb02)" status)" = ok ] || bad=1; done
# new keys push the updated kernel keys out to the store, dirty
for ((k = 700000; k < 700060; k++)); do
	[ "$(field "$(op insert 0 "$k" value=cc03)" status)" = ok ] || bad=1
done
for k in "${instore[@]:0:5}"; do [ "$(field "$(op delete 0 "$k")" status)" = ok ] || bad=1; done
check "${#inkern[@]} kernel and ${#instore[@]} store keys updated, 60 inserted, 5 deleted" \
	test "$bad" -eq 0 -a "${#inkern[@]}" -eq 20 -a "${#instore[@]}" -eq 20
check "the drain wrote XDP's part" wait_drained
ctl 0 dump --json >"$TMP/where3"
moved=0
for k in "${inkern[@]}"; do
	grep -q "\"key\":$k,.*\"where\":\"overflow\"" "$TMP/where3" && moved=$((moved + 1))
done
check "updated kernel keys evicted to the store since ($moved)" test "$moved" -gt 0
# key $K: a clean copy in the kernel (the reads above filled it) when xtxd died, the store's
# copy gone with it; the restart put it back in the store before the kernel could drop it
check "key $K read into the kernel before the SIGKILL, evicted after it: still there" \
	grep -q "\"key\":$K,\"version\":7,.*\"where\":\"overflow\"" "$TMP/where3"
n=$(ls "$DATA"/log-cpu65535-*.xlog 2>/dev/null | wc -l)
check "xtxd's own log holds the store keys' writes ($n segments)" test "$n" -gt 0
ctl 0 dump >"$TMP/want"
kill9_xtxd 0
check "xtxd restarts after SIGKILL" reload --kv-buckets 16
check "dump after SIGKILL: every plain write kept" same_dump
out=$(op get 0 "${instore[7]}")
check "a store key's update reads back (${instore[7]}: $out)" \
	test "$(field "$out" status)/$(field "$out" value)" = ok/bb02
out=$(op get 0 "${instore[0]}")
check "a store key's delete holds (${instore[0]}: $out)" test "$(field "$out" status)" = not_found
ctl 0 unload >/dev/null
check "a fresh start recovers them too" reload --kv-buckets 16
check "dump after recovery from disk: the same" same_dump
finish
