#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# End to end: values up to 1 KiB through xtxd's rare path, one op at a time with xtxbench op.
# checks: 56 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"

NSERVERS=1
# 4 buckets: every key shares few ways, so small keys live in the kernel and big ones evict them.
# A long lock lease: a lock left behind shows, instead of going by itself.  No value store:
# every op on a big value takes the rare path here (test_valstore.sh has XDP answer reads).
setup_servers --kv-buckets 4 --rare-threads 2 --kv-lease 10ms --lock-lease 5s --value-store 0
S=$(server_ip 0)
TMP=$(mktemp -d)
XTXD_PID=
# a stopped xtxd must run again before the servers unload
trap '[ -n "$XTXD_PID" ] && kill -CONT "$XTXD_PID" 2>/dev/null; rm -rf "$TMP"; cleanup' EXIT INT TERM

# op ARGS...: one op from client 5; the answer's fields on one line
op() { client "$BUILD/xtxbench" op --server "$S" --client-id "${CID:-5}" "$@" 2>&1; }
field() { grep -o "\\b$2=[0-9a-z_x]*" <<<"$1" | head -n 1 | cut -d= -f2; }
# hexval N SEED: N bytes of a value that differs per size and seed
hexval() { head -c "$1" < <(yes "$2-$1-" | tr -d '\n') | xxd -p | tr -d '\n'; }
counter() { json_field "$(ctl 0 stats --json)" "$1"; }

# Each size: insert, read back, update, read back, delete, read absent.  A new
# key's version starts above its bucket's floor (deletes of its neighbours raise it).
key=100
for n in 1 40 41 512 1024; do
	key=$((key + 1))
	v1=$(hexval "$n" a)
	v2=$(hexval "$n" b)
	out=$(op insert 0 "$key" value="$v1")
	ver=$(field "$out" version)
	check "$n B: insert ok ($(field "$out" status) v$ver)" \
		test "$(field "$out" status)" = ok -a "${ver:-0}" -gt 0
	out=$(op get 0 "$key" room=1024)
	got="$(field "$out" status)/$(field "$out" vlen)/$(field "$out" version)"
	check "$n B: get answers the value ($got)" \
		test "$got/$(field "$out" value)" = "ok/$n/$ver/$v1"
	out=$(op update 0 "$key" value="$v2")
	check "$n B: update ok at the next version ($(field "$out" status))" \
		test "$(field "$out" status)/$(field "$out" version)" = "ok/$((ver + 1))"
	out=$(op get 0 "$key" room=1024)
	check "$n B: get answers the update" \
		test "$(field "$out" status)/$(field "$out" version)/$(field "$out" value)" = \
		"ok/$((ver + 1))/$v2"
	out=$(op delete 0 "$key")
	check "$n B: delete ok ($(field "$out" status))" \
		test "$(field "$out" status)/$(field "$out" version)" = "ok/$((ver + 2))"
	out=$(op get 0 "$key" room=1024)
	check "$n B: gone after the delete ($(field "$out" status))" \
		test "$(field "$out" status)" = not_found
done

# One byte over the limit never reaches the store, nor truncated.
out=$(op insert 0 200 value="$(hexval 1025 c)")
check "1025 B: refused ($out)" grep -Eq "malformed|bad_arg" <<<"$out"
out=$(op get 0 200 room=1024)
check "1025 B: nothing stored ($(field "$out" status))" test "$(field "$out" status)" = not_found

# A read without room for a big value: TOO_BIG with its length, then again with room.
ver=$(field "$(op insert 0 300 value="$(hexval 512 d)")" version)
out=$(op get 0 300)
check "no room: too_big with the length ($(field "$out" status), $(field "$out" vlen))" \
	test "$(field "$out" status)/$(field "$out" vlen)" = too_big/512
out=$(op get 0 300 room=100)
check "room too small: too_big ($(field "$out" status))" \
	test "$(field "$out" status)/$(field "$out" vlen)" = too_big/512
out=$(op get 0 300 room=512)
check "retry with room: the value ($(field "$out" status))" \
	test "$(field "$out" status)/$(field "$out" version)/$(field "$out" value)" = \
	"ok/$ver/$(hexval 512 d)"

# A grant too big for its room takes no lock: another transaction gets it.
out=$(op lock-excl 0 300 txn=1 room=64)
check "grant without room: too_big ($(field "$out" status))" \
	test "$(field "$out" status)" = too_big
out=$(CID=6 op lock-excl 0 300 txn=1 room=1024)
check "then another transaction is granted, with the value ($(field "$out" status))" \
	test "$(field "$out" status)/$(field "$out" value)" = "ok/$(hexval 512 d)"
tok=$(field "$out" token)
out=$(CID=6 op unlock-excl 0 300 txn=1 token="$tok")
check "and releases it ($(field "$out" status))" test "$(field "$out" status)" = ok

# A small value the kernel caches, overwritten by a big one: the kernel copy goes.
ver=$(field "$(op insert 0 400 value=0102030405)" version)
d0=$(counter kv_deferred)
out=$(op get 0 400 room=1024)
d1=$(counter kv_deferred)
check "cached small value answered by XDP, in the slot (deferred $d0 -> $d1)" \
	test "$(field "$out" status)/$(field "$out" value)/$d1" = "ok/0102030405/$d0"
v=$(hexval 700 e)
out=$(op update 0 400 value="$v")
check "big update of a cached key ($(field "$out" status) v$(field "$out" version))" \
	test "$(field "$out" status)/$(field "$out" version)" = "ok/$((ver + 1))"
out=$(op get 0 400 room=1024)
check "read after eviction: the big value from xtxd" \
	test "$(field "$out" status)/$(field "$out" version)/$(field "$out" value)" = \
	"ok/$((ver + 1))/$v"
out=$(op get 0 400)
check "never the stale small copy: too_big ($(field "$out" status))" \
	test "$(field "$out" status)/$(field "$out" vlen)" = too_big/700
d2=$(counter kv_deferred)
out=$(op get 0 400 room=1024)
check "the kernel does not cache it again (deferred $d2 -> $(counter kv_deferred))" \
	test "$(counter kv_deferred)" -gt "$d2"
out=$(op update 0 400 value=0a0b)
check "small update again ($(field "$out" status) v$(field "$out" version))" \
	test "$(field "$out" status)/$(field "$out" version)" = "ok/$((ver + 2))"
out=$(op get 0 400 room=1024)
check "and read back small" test "$(field "$out" status)/$(field "$out" value)" = ok/0a0b

# Lost rare-path answers: a retransmitted grant of a big value is answered with the value.
v=$(hexval 900 f)
ver=$(field "$(op insert 0 500 value="$v")" version)
r0=$(counter replayed)
ctl 0 fault --drop-rare-reply-ppm 600000 >/dev/null
ok=0
for i in 1 2 3 4 5 6; do
	out=$(CID=7 op --timeout 30ms lock-excl 0 500 txn=$i room=1024)
	if [ "$(field "$out" status)/$(field "$out" value)" = "ok/$v" ]; then
		ok=$((ok + 1))
		CID=7 op unlock-excl 0 500 txn=$i token="$(field "$out" token)" >/dev/null
	fi
done
ctl 0 fault --drop-rare-reply-ppm 0 >/dev/null
check "grants under lost answers all carry the value ($ok of 6)" test "$ok" -eq 6
check "answers were lost, and retransmissions went back to xtxd ($r0 -> $(counter replayed))" \
	test "$(counter replayed)" -gt "$r0"
out=$(op get 0 500 room=1024)
check "the value is unchanged ($(field "$out" status) v$(field "$out" version))" \
	test "$(field "$out" status)/$(field "$out" version)/$(field "$out" value)" = "ok/$ver/$v"

# A grant answered TOO_BIG whose first answer is lost: the answer from xtxd's record releases
# the grant too, so another transaction gets the key now, not after the lock lease.
op insert 0 600 value="$(hexval 512 g)" >/dev/null
ctl 0 fault --drop-rare-reply-ppm 600000 >/dev/null
for i in 1 2 3 4 5 6 7 8; do
	out=$(op --timeout 30ms lock-excl 0 600 txn=$((10 + i)) room=64)
	[ "$(field "$out" tries)" -gt 1 ] 2>/dev/null && break
done
ctl 0 fault --drop-rare-reply-ppm 0 >/dev/null
out=$(CID=6 op lock-excl 0 600 txn=2 room=1024)
check "TOO_BIG grant answered again after a lost answer took nothing ($(field "$out" status))" \
	test "$(field "$out" status)" = ok
CID=6 op unlock-excl 0 600 txn=2 token="$(field "$out" token)" >/dev/null

# A big commit of a cached key whose hand-off outlives the KV lease (xtxd stopped): the
# transaction keeps its lock until xtxd answers, so no other one commits over the old copy.
v0=$(field "$(op insert 0 700 value=0102030405)" version)
out=$(op lock-excl 0 700 txn=3)
t1=$(field "$out" token)
XTXD_PID=$(ip netns pids "$(server_ns 0)" | while read -r p; do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = xtxd ] && echo "$p"; done | head -n 1)
big=$(hexval 700 h)
deferred() { json_field "$(ctl 0 stats --json)" kv_defer_packets; }
more_deferred() { [ "$(deferred)" -gt "$1" ]; }
d0=$(deferred)
kill -STOP "$XTXD_PID"
op --timeout 3s commit-primary 0 700 txn=3 version="$v0" token="$t1" value="$big" \
	>"$TMP/t1" &
bg=$!
# the commit is in flight once XDP has handed it to the stopped xtxd
wait_until 60 more_deferred "$d0"
out=$(CID=6 op lock-excl 0 700 txn=3)
st2=$(field "$out" status)
[ "$st2" = ok ] && CID=6 op commit-primary 0 700 txn=3 version="$v0" \
	token="$(field "$out" token)" value=0a0b >/dev/null
kill -CONT "$XTXD_PID"
XTXD_PID=
wait "$bg"
st1=$(field "$(cat "$TMP/t1")" status)
check "no other transaction is granted the key of a commit in flight ($st2)" test "$st2" = rejected
# a RETRY is sent again, as libxtx does
[ "$st1" = retry ] && st1=$(field "$(op commit-primary 0 700 txn=3 version="$v0" token="$t1" \
	value="$big")" status)
check "the big commit is acknowledged ($st1)" test "$st1" = ok
out=$(op get 0 700 room=1024)
check "the key holds the committed big value ($(field "$out" status) v$(field "$out" version))" \
	test "$(field "$out" status)/$(field "$out" version)/$(field "$out" value)" = \
	"ok/$((v0 + 1))/$big"
out=$(CID=6 op lock-excl 0 700 txn=4 room=1024)
check "and its lock is released with xtxd's answer ($(field "$out" status))" \
	test "$(field "$out" status)" = ok
CID=6 op unlock-excl 0 700 txn=4 token="$(field "$out" token)" >/dev/null

# A big update of a cached key whose answer is lost: after the KV lease other ops take the
# bucket over, and still never read or write the old small copy.
v0=$(field "$(op insert 0 800 value=0102030405)" version)
big=$(hexval 700 i)
rare_dropped() { json_field "$(ctl 0 rare-stats --json)" fault_drops; }
more_dropped() { [ "$(rare_dropped)" -gt "$1" ]; }
f0=$(rare_dropped)
ctl 0 fault --drop-rare-reply-ppm 1000000 >/dev/null
op --timeout 400ms update 0 800 value="$big" >"$TMP/a" &
bg=$!
# xtxd ran it: its answer was the one dropped
wait_until 60 more_dropped "$f0"
ctl 0 fault --drop-rare-reply-ppm 0 >/dev/null
out=$(CID=7 op get 0 800 room=1024)
check "a read while the big update's answer is lost sees it ($(field "$out" status) \
v$(field "$out" version) $(field "$out" vlen) B)" \
	test "$(field "$out" status)/$(field "$out" version)/$(field "$out" vlen)" = \
	"ok/$((v0 + 1))/700"
outd=$(CID=6 op update 0 800 value=0a0b)
wait "$bg"
outa=$(cat "$TMP/a")
check "a small update after it comes after it ($(field "$outa" status) \
v$(field "$outa" version), $(field "$outd" status) v$(field "$outd" version))" \
	test "$(field "$outa" status)/$(field "$outa" version)/$(field "$outd" status)/\
$(field "$outd" version)" = "ok/$((v0 + 1))/ok/$((v0 + 2))"
out=$(CID=7 op get 0 800 room=1024)
check "the key holds the small update ($(field "$out" status) v$(field "$out" version))" \
	test "$(field "$out" status)/$(field "$out" version)/$(field "$out" value)" = \
	"ok/$((v0 + 2))/0a0b"

finish
