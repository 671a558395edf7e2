#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A log disk that fails its fdatasync, then one that hangs: xtxd stops serving and ends
# (fail-stop), the maps keep every acknowledged entry, an ordinary unload refuses to drop
# them, and the next start writes them out: nothing acknowledged is lost.
# checks: 23 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=1

FAULT=$(mktemp /tmp/xtx-faildisk.XXXXXX)
rm -f "$FAULT"
trap 'rm -f "$FAULT"; cleanup' EXIT INT TERM
SHIM=$BUILD/tests/libfaildisk.so
PIDFILE=/run/xtx/$(server_ns 0)-$(server_dev 0).pid
field() { grep -o "\b$2=[^ ]*" <<<"$1" | head -n 1 | cut -d= -f2; }
op() { client "$BUILD/xtxbench" op --server "$(server_ip 0)" --client-id 5 "$@" 2>&1; }
# load_shimmed ARGS...: xtxd with the failing disk preloaded (idle while $FAULT is absent)
load_shimmed() {
	LD_PRELOAD=$SHIM XTX_FAILDISK=$FAULT XTX_FAILDISK_MATCH=/var/lib/xtx/ \
		make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" ARGS="$*" \
		>/dev/null
}
load_plain() {
	make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" >/dev/null
}
gone() {
	local pid=$1 n
	for ((n = 0; n < 200; n++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}
has_keys() {	# has_keys FIRST LAST: every key of the range is in server 0's dump
	local d k
	d=$(ctl 0 dump --table 0)
	for ((k = $1; k <= $2; k++)); do
		grep -q "^table=0 key=$k " <<<"$d" || { echo "# key $k missing"; return 1; }
	done
}

topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }
# one case: MODE (fail or hang) and the first key it writes
one_case() {
	local mode=$1 base=$2 pid k acked=0 out
	check "$mode: xtxd starts with the disk shim preloaded" load_shimmed --log-stall 5s
	pid=$(cat "$PIDFILE")
	for ((k = base; k < base + 5; k++)); do
		[ "$(field "$(op insert 0 "$k" value=0a)" status)" = ok ] && acked=$((acked + 1))
	done
	check "$mode: 5 writes acknowledged while the disk works" test "$acked" = 5
	echo "$mode" >"$FAULT"
	# write on until the server stops answering: each ok is an acknowledged, logged write
	for ((k = base + 5; k < base + 400; k++)); do
		out=$(op -t 20ms insert 0 "$k" value=0b)
		[ "$(field "$out" status)" = ok ] || break
		acked=$((acked + 1))
	done
	last=$((base + acked - 1))
	check "$mode: xtxd stopped on its own ($acked writes acknowledged in all)" gone "$pid"
	check "$mode: ... saying why, with requests held" \
		grep -q "FATAL: .*requests held" <(XLOG 0)
	[ "$mode" = hang ] && check "hang: ... the watchdog found the log stalled" \
		grep -q "no log write and sync has completed" <(XLOG 0)
	check "$mode: nothing is answered any more" grep -q "no answer" <<<"$(op -t 20ms get 0 "$base")"
	out=$(ctl 0 unload 2>&1)
	check "$mode: an ordinary unload refuses to drop what the ring holds" \
		grep -q "not on disk" <<<"$out"
	rm -f "$FAULT"
	check "$mode: the disk works again; make load adopts and writes the ring out" load_plain
	check "$mode: serving again" test "$(field "$(op get 0 "$base")" status)" = ok
	check "$mode: every acknowledged write is there (keys $base..$last)" has_keys "$base" "$last"
	ctl 0 unload >/dev/null 2>&1
	check "$mode: unloaded and loaded again (recovery from disk)" load_plain
	check "$mode: every acknowledged write survived (keys $base..$last)" has_keys "$base" "$last"
	ctl 0 unload >/dev/null 2>&1
}
one_case fail 1000
one_case hang 2000
finish
