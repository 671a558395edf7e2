#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# End to end: XDP answers reads of values over the slot from its value store (XTX_MAP_BIGVAL).
# checks: 28 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"

NSERVERS=1
# 4 buckets: small and big keys share buckets, so a key moves between the kernel cache and the
# store.  A short KV lease: a lost answer's bucket is taken over at once.
ARGS_BASE="--kv-buckets 4 --rare-threads 2 --kv-lease 10ms --lock-lease 5s"
setup_servers $ARGS_BASE
S=$(server_ip 0)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; cleanup' EXIT INT TERM

op() { client "$BUILD/xtxbench" op --server "$S" --client-id "${CID:-5}" "$@" 2>&1; }
field() { grep -o "\\b$2=[0-9a-z_x]*" <<<"$1" | head -n 1 | cut -d= -f2; }
hexval() { head -c "$1" < <(yes "$2-$1-" | tr -d '\n') | xxd -p | tr -d '\n'; }
counter() { json_field "$(ctl 0 stats --json)" "$1"; }
# answered KV_BIG_SERVED DEFERRED: how the last op was answered, from the counters before it
served_by() {
	local s d
	s=$(counter kv_big_served)
	d=$(counter kv_deferred)
	echo "served+$((s - $1)) deferred+$((d - $2))"
}

# ---- reads of a big value are answered by XDP, never by xtxd ----
v1=$(hexval 512 a)
ver=$(field "$(op insert 0 101 value="$v1")" version)
s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op get 0 101 room=1024)
how=$(served_by "$s0" "$d0")
check "get: the value and version ($(field "$out" status) v$(field "$out" version))" \
	test "$(field "$out" status)/$(field "$out" vlen)/$(field "$out" version)/$(field "$out" value)" \
	= "ok/512/$ver/$v1"
check "get: answered in XDP from the value store ($how)" test "$how" = "served+1 deferred+0"

s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op read 0 101 txn=1 room=600)
how=$(served_by "$s0" "$d0")
check "read (a transaction's): the value ($(field "$out" status), $how)" \
	test "$(field "$out" status)/$(field "$out" value)/$how" = "ok/$v1/served+1 deferred+0"

s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op lock-shared 0 101 txn=2 room=1024)
how=$(served_by "$s0" "$d0")
check "shared grant with the value, in XDP ($(field "$out" status), $how)" \
	test "$(field "$out" status)/$(field "$out" value)/$how" = "ok/$v1/served+1 deferred+0"
out=$(op unlock-shared 0 101 txn=2 token="$(field "$out" token)")
check "... released ($(field "$out" status))" test "$(field "$out" status)" = ok

s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op lock-excl 0 101 txn=3 room=1024)
how=$(served_by "$s0" "$d0")
check "exclusive grant with the value, in XDP ($(field "$out" status), $how)" \
	test "$(field "$out" status)/$(field "$out" version)/$(field "$out" value)/$how" = \
	"ok/$ver/$v1/served+1 deferred+0"
tok=$(field "$out" token)
out=$(CID=6 op lock-excl 0 101 txn=1 room=1024)
check "... and held: another transaction is refused ($(field "$out" status))" \
	test "$(field "$out" status)" = rejected
out=$(op unlock-excl 0 101 txn=3 token="$tok")
check "... released ($(field "$out" status))" test "$(field "$out" status)" = ok

s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op validate 0 101 txn=4 version="$ver")
how=$(served_by "$s0" "$d0")
check "validate at the version read: ok, in XDP ($(field "$out" status), $how)" \
	test "$(field "$out" status)/$how" = "ok/served+1 deferred+0"
out=$(op validate 0 101 txn=4 version=$((ver - 1)))
check "validate at another version: changed, with the current one ($(field "$out" status))" \
	test "$(field "$out" status)/$(field "$out" version)" = "changed/$ver"

# ---- a read whose room is short goes to xtxd, which says how long the value is ----
s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op get 0 101 room=100)
how=$(served_by "$s0" "$d0")
check "room too small: too_big/512 from xtxd ($(field "$out" status), $how)" \
	test "$(field "$out" status)/$(field "$out" vlen)/$how" = "too_big/512/served+0 deferred+1"

# ---- writes keep the copy in step: never an older value ----
v2=$(hexval 700 b)
out=$(op update 0 101 value="$v2")
check "big update ($(field "$out" status) v$(field "$out" version))" \
	test "$(field "$out" status)/$(field "$out" version)" = "ok/$((ver + 1))"
s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op get 0 101 room=1024)
how=$(served_by "$s0" "$d0")
check "read after the update: the new value, in XDP ($how)" \
	test "$(field "$out" version)/$(field "$out" value)/$how" = "$((ver + 1))/$v2/served+1 deferred+0"
out=$(op update 0 101 value=0a0b)
check "small update over the big value ($(field "$out" status))" \
	test "$(field "$out" status)/$(field "$out" version)" = "ok/$((ver + 2))"
s0=$(counter kv_big_served)
out=$(op get 0 101 room=1024)
check "read: the small value, not the copy of the big one ($(field "$out" value))" \
	test "$(field "$out" status)/$(field "$out" value)/$(field "$out" version)" = \
	"ok/0a0b/$((ver + 2))"
check "... and not from the value store ($s0 -> $(counter kv_big_served))" \
	test "$(counter kv_big_served)" = "$s0"
v3=$(hexval 1024 c)
out=$(op update 0 101 value="$v3")
out=$(op get 0 101 room=1024)
check "big again: the 1024-byte value at the next version" \
	test "$(field "$out" version)/$(field "$out" value)" = "$((ver + 3))/$v3"
out=$(op delete 0 101)
out=$(op get 0 101 room=1024)
check "deleted: not found, never the copy ($(field "$out" status))" \
	test "$(field "$out" status)" = not_found

# ---- a big write whose answer was lost: xtxd ran it and logged it, so XDP answers from its copy ----
v4=$(hexval 300 d)
ver=$(field "$(op insert 0 102 value="$v4")" version)
ctl 0 fault --drop-rare-reply-ppm 1000000 >/dev/null
v5=$(hexval 300 e)
out=$(op --timeout 15ms update 0 102 value="$v5")
ctl 0 fault --drop-rare-reply-ppm 0 >/dev/null
check "the update's answers were all lost ($(cut -c1-40 <<<"$out"))" \
	test "$(field "$out" status)" != ok
sleep 0.05
s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op get 0 102 room=1024)
how=$(served_by "$s0" "$d0")
check "a read then gets the logged update from its copy, in XDP ($how)" \
	test "$(field "$out" version)/$(field "$out" value)/$how" = "$((ver + 1))/$v5/served+1 deferred+0"
v6=$(hexval 300 f)
out=$(op update 0 102 value="$v6")
check "the next big write is answered ($(field "$out" status))" \
	test "$(field "$out" status)/$(field "$out" version)" = "ok/$((ver + 2))"
s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op get 0 102 room=1024)
how=$(served_by "$s0" "$d0")
check "and XDP answers with it ($how)" \
	test "$(field "$out" value)/$how" = "$v6/served+1 deferred+0"

# ---- SIGKILL: the new xtxd empties the copies and rebuilds them from its recovered store ----
v7=$(hexval 300 g)
ctl 0 fault --drop-rare-reply-ppm 1000000 >/dev/null
out=$(op --timeout 15ms update 0 102 value="$v7")
ctl 0 fault --drop-rare-reply-ppm 0 >/dev/null
check "before the kill, a big write whose answers were all lost ($(cut -c1-40 <<<"$out"))" \
	test "$(field "$out" status)" != ok
# (xtxd logs the writes it runs before it answers them: on disk before any answer was lost)
kill9_xtxd 0
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" ARGS="$ARGS_BASE" \
	>/dev/null || fail "xtxd restarts after SIGKILL"
s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op get 0 102 room=1024)
how=$(served_by "$s0" "$d0")
check "after SIGKILL: the last (logged) value, from the rebuilt value store ($how)" \
	test "$(field "$out" version)/$(field "$out" value)/$how" = "$((ver + 3))/$v7/served+1 deferred+0"

# ---- a full value store keeps no copy of what it cannot take: those reads go to xtxd ----
ctl 0 unload --force >/dev/null 2>&1
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="$ARGS_BASE --fresh --value-store 2" >/dev/null || fail "reload with --value-store 2"
for k in 1 2 3 4; do
	out=$(op insert 0 $((200 + k)) value="$(hexval 400 "g$k")")
done
s0=$(counter kv_big_served); d0=$(counter kv_deferred)
good=0
for k in 1 2 3 4; do
	out=$(op get 0 $((200 + k)) room=1024)
	[ "$(field "$out" value)" = "$(hexval 400 "g$k")" ] && good=$((good + 1))
done
how=$(served_by "$s0" "$d0")
check "full at 2: all 4 values read back ($good of 4)" test "$good" -eq 4
check "... 2 from the value store, 2 by xtxd ($how)" test "$how" = "served+2 deferred+2"
out=$(op delete 0 201)
out=$(op update 0 203 value="$(hexval 400 h3)")
s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op get 0 203 room=1024)
how=$(served_by "$s0" "$d0")
check "a delete makes room: the next write of another key is copied ($how)" \
	test "$(field "$out" value)/$how" = "$(hexval 400 h3)/served+1 deferred+0"

# ---- --value-store 0: none kept, xtxd answers every big read ----
ctl 0 unload --force >/dev/null 2>&1
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="$ARGS_BASE --fresh --value-store 0" >/dev/null || fail "reload with --value-store 0"
out=$(op insert 0 301 value="$(hexval 600 i)")
s0=$(counter kv_big_served); d0=$(counter kv_deferred)
out=$(op get 0 301 room=1024)
how=$(served_by "$s0" "$d0")
check "--value-store 0: the value from xtxd ($how)" \
	test "$(field "$out" value)/$how" = "$(hexval 600 i)/served+0 deferred+1"
finish
