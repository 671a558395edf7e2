#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# One xtxd per interface: a second, with its own pidfile and data directory, is refused (it
# would drain the first's log rings and take the program away when it stopped); the lock is
# the pin directory's, so xtxctl finds a daemon started with another pidfile, and a killed
# one leaves no lock behind.
# checks: 15 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=1

other=$(mktemp -d /tmp/xtx-other.XXXXXX)
trap 'rm -rf "$other"; cleanup' EXIT INT TERM
setup_servers --lock-lease 60s
NS=$(server_ns 0)
DEV=$(server_dev 0)
pidfile=/run/xtx/$NS-$DEV.pid
first=$(cat "$pidfile")
prog() { ip -n "$NS" -d link show "$DEV" | grep -o 'prog/xdp id [0-9]*'; }
ping_ok() {
	local out
	out=$(client "$BUILD/xtxbench" ping --servers "$(server_ip 0)" --duration 0.3 --client-id 9)
	[ "$(kv_field "$out" replies)" -gt 0 ]
}
prog0=$(prog)

# a second xtxd on the same interface, as `xtxd --pidfile OTHER --data-dir OTHER` would start
out=$("$BUILD/xtxd" --iface "$DEV" --netns "$NS" --pidfile "$other/xtxd.pid" \
	--data-dir "$other/data" --daemon 2>&1)
rc=$?
check "a second xtxd on $DEV is refused (exit $rc)" test "$rc" -ne 0
check "it names the xtxd that serves and the lock (${out//$'\n'/ })" \
	grep -q "xtxd (pid $first) already serves $DEV in netns $NS: it holds /sys/fs/bpf/xtx/$NS/$DEV" <<<"$out"
check "it wrote no pidfile and no log" test ! -e "$other/xtxd.pid" -a ! -e "$other/data"
out=$("$BUILD/xtxd" --iface "$DEV" --netns "$NS" --pidfile "$other/xtxd.pid" --replace 2>&1)
check "--replace is refused too ($(tail -n 1 <<<"$out"))" grep -q "already serves" <<<"$out"
check "the first still runs, with its program ($(prog))" \
	test "$(prog)" = "$prog0" -a -d "/proc/$first"
check "the first still serves" ping_ok

# a daemon started with another pidfile is still found through the lock
make -s -C "$ROOT" unload IFACE="$DEV" NETNS="$NS" >/dev/null
check "unloaded: no program, no pins" test -z "$(prog)" -a ! -e "/sys/fs/bpf/xtx/$NS"
"$BUILD/xtxd" --iface "$DEV" --netns "$NS" --pidfile "$other/xtxd.pid" --data-dir "$other/data" \
	--lock-lease 60s --daemon >/dev/null 2>&1
second=$(cat "$other/xtxd.pid" 2>/dev/null)
check "xtxd starts with its own pidfile (pid ${second:-none})" test -n "$second"
info=$(ctl 0 info --json)
check "xtxctl info finds it through the lock (xtxd_pid $(json_field "$info" xtxd_pid))" \
	test "$(json_field "$info" xtxd_pid)" = "$second"
out=$(make -s -C "$ROOT" load IFACE="$DEV" NETNS="$NS" ARGS="--lock-lease 60s" 2>&1)
check "make load beside it is refused (${out//$'\n'/ })" grep -q "(pid $second) already serves" <<<"$out"
ctl 0 unload >/dev/null
check "xtxctl unload stopped it (pid $second)" gone "$second"
check "and removes its program and pins" test -z "$(prog)" -a ! -e "/sys/fs/bpf/xtx/$NS"

# a killed xtxd leaves the program and maps, and no lock: the next one adopts them
make -s -C "$ROOT" load IFACE="$DEV" NETNS="$NS" ARGS="--lock-lease 60s" >/dev/null
kill9_xtxd 0
out=$(make -s -C "$ROOT" load IFACE="$DEV" NETNS="$NS" ARGS="--lock-lease 60s" 2>&1)
check "after a SIGKILL the next xtxd starts (${out//$'\n'/ })" test -d "/proc/$(cat "$pidfile")"
check "it adopted the program left attached" grep -q "serving $DEV in netns $NS port .* (adopted)" \
	"/run/xtx/$NS-$DEV.log"
check "and serves" ping_ok
finish
