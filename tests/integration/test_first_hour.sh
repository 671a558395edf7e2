#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What an operator meets in the first hour: --version everywhere, durations in m and h,
# examples that run again and say why they failed, progress from long steps, a quiet start,
# leveled UTC log lines and SIGHUP reopening the log, xtxctl log reading the daemon's own
# data directory, /healthz and /readyz, systemd readiness, every snapshot counted, the log's
# sync times and build in the metrics, old --fresh set-asides pruned, and xtxbench ping and
# xtxctl cluster against a cluster held in ZooKeeper.
# checks: 39 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"

TMP=$(mktemp -d /tmp/xtx-firsthour.XXXXXX)
trap 'rm -rf "$TMP"; cleanup' EXIT INT TERM
NS0=$(server_ns 0)
DEV0=$(server_dev 0)
LOG0=/run/xtx/$NS0-$DEV0.log

# ---- every tool says its release ----
v=$(tr -d '\n' <"$ROOT/Makefile" | grep -o 'XTX_VERSION := [0-9.]*' | cut -d' ' -f3)
for tool in xtxd xtxctl xtxbench xtx-udpd xtx-history-check; do
	out=$("$BUILD/$tool" --version 2>&1)
	check "$tool --version ($out)" grep -q "^$tool $v (build [0-9a-f].*)$" <<<"$out"
done

# ---- durations in minutes and hours, as xtxd -h's own example; a quiet start ----
setup_servers --snapshot-every 10m --metrics :9370 --lock-lease 60s
# server 0 with a data directory of its own, not the default
make -s -C "$ROOT" unload IFACE="$DEV0" NETNS="$NS0" >/dev/null 2>&1
make -s -C "$ROOT" load IFACE="$DEV0" NETNS="$NS0" \
	ARGS="--snapshot-every 10m --metrics :9370 --data-dir $TMP/data0 --lock-lease 60s" >/dev/null
check "xtxd --snapshot-every 10m starts (its help's example)" test -e "/run/xtx/$NS0-$DEV0.pid"
check "its start logs no libbpf noise ($(grep -c libbpf "$LOG0") lines)" bash -c "! grep -q libbpf '$LOG0'"
check "its log lines are stamped in UTC and leveled" \
	grep -qE '^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z info  xtxd: serving ' "$LOG0"

# ---- the examples: rerunnable, with help, and a clear failure ----
ips=$(all_server_ips)
ok=0
for run in 1 2; do
	out=$(client "$BUILD/examples/values" --servers "$ips" 2>&1)
	grep -q "^values: ok" <<<"$out" && ok=$((ok + 1))
done
check "values runs twice, ok both times ($(tail -n 1 <<<"$out"))" test "$ok" -eq 2
out=$("$BUILD/examples/transfer" --help 2>&1)
check "transfer --help shows its usage (exit $?)" grep -q "^Usage: .*transfer --servers" <<<"$out"
out=$(client "$BUILD/examples/transfer" --servers 10.77.0.99 1 2 3 2>&1)
check "transfer to no server says so ($out)" grep -q "^failed: no server answered" <<<"$out"

# ---- progress of long steps, and the log's own directory ----
export XTX_PROGRESS_MS=1
# (xtxd tells its progress ten times a second: half a million keys take a while anywhere)
out=$(ctl 0 load --count 500000 2>&1 >/dev/null)
check "xtxctl load shows its progress off a terminal ($(head -n 1 <<<"$out"))" \
	grep -q "^loading: [0-9]* of 500000 keys ([0-9]*%), [0-9]* keys/s" <<<"$out"
out=$(ctl 0 log stats 2>&1)
check "xtxctl log stats reads the running xtxd's --data-dir" grep -q "$TMP/data0" <<<"$out"
make -s -C "$ROOT" unload IFACE="$DEV0" NETNS="$NS0" >/dev/null 2>&1
out=$(make -s -C "$ROOT" load IFACE="$DEV0" NETNS="$NS0" \
	ARGS="--metrics :9370 --data-dir $TMP/data0 --lock-lease 60s" 2>&1)
check "make load shows the recovery's progress ($(grep -m1 'recovery:' <<<"$out"))" \
	grep -qE "^recovery: (reading the snapshot|replaying the logs): [0-9]* .*, [0-9]* (keys|records)/s" <<<"$out"
check "... and where it ends ($(grep "putting the keys back" <<<"$out" | tail -n 1))" grep -q "^recovery: putting the keys back: \([0-9]*\) of \1 keys (100%)" <<<"$out"
out=$(ctl 0 unload 2>&1)
check "xtxctl unload says what it waits for ($(head -n 1 <<<"$out"))" \
	grep -q "^unload: xtxd (pid [0-9]*) stopped after" <<<"$out"
unset XTX_PROGRESS_MS
make -s -C "$ROOT" load IFACE="$DEV0" NETNS="$NS0" \
	ARGS="--metrics :9370 --data-dir $TMP/data0 --lock-lease 60s" >/dev/null 2>&1

# ---- SIGHUP reopens the log (logrotate) ----
mv "$LOG0" "$LOG0.1"
kill -HUP "$(cat "/run/xtx/$NS0-$DEV0.pid")"
wait_log "SIGHUP: log file reopened" 0
check "after SIGHUP xtxd writes to a new log file at its path" grep -q "SIGHUP: log file reopened" "$LOG0"
check "... and still runs" kill -0 "$(cat "/run/xtx/$NS0-$DEV0.pid")"
rm -f "$LOG0.1"

# ---- health, readiness, metrics ----
http() {	# http PATH: "CODE BODY" from the server's namespace
	ip netns exec "$NS0" python3 -c '
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen("http://127.0.0.1:9370" + sys.argv[1], timeout=5)
    print(r.status, r.read().decode().strip())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())' "$1"
}
out=$(http /healthz)
check "/healthz: 200 while alive ($out)" grep -q "^200 ok: alive" <<<"$out"
out=$(http /readyz)
check "/readyz: 200 while serving ($out)" grep -q "^200 ok: serving epoch 0" <<<"$out"
out=$(http /nothing)
check "another path is 404 and names the three ($out)" grep -q "^404 .*/healthz.*/readyz" <<<"$out"
client "$BUILD/xtxbench" bank --servers "$ips" --accounts 16 --duration 1 >/dev/null 2>&1
ctl 0 snapshot >/dev/null
m=$(http /metrics)
check "xtx_snapshots_total counts a snapshot by hand" \
	grep -q '^xtx_snapshots_total{result="ok"} [1-9]' <<<"$m"
check "the log's sync times are a histogram" grep -q '^xtx_log_sync_seconds_count [1-9]' <<<"$m"
check "... with buckets" grep -q '^xtx_log_sync_seconds_bucket{le="0.001"} [0-9]' <<<"$m"
check "drain errors are counted" grep -q '^xtx_log_write_errors_total 0$' <<<"$m"
check "build info names the release" grep -q "^xtx_build_info{version=\"$v\",build=\"[0-9a-f]" <<<"$m"

# ---- systemd readiness (Type=notify): READY=1 once serving, STOPPING=1 at the stop ----
ctl 1 unload >/dev/null
python3 - "$TMP/notify" >"$TMP/notify.out" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
got = []
while not any("STOPPING=1" in g for g in got):
    got.append(s.recv(4096).decode())
    print(got[-1].replace("\n", " "), flush=True)
PY
listener=$!
for ((i = 0; i < 50; i++)); do [ -S "$TMP/notify" ] && break; sleep 0.1; done
NOTIFY_SOCKET=$TMP/notify "$BUILD/xtxd" --iface "$(server_dev 1)" --netns "$(server_ns 1)" \
	--lock-lease 60s >/dev/null 2>&1 &
fg=$!
for ((i = 0; i < 300; i++)); do grep -q READY=1 "$TMP/notify.out" && break; sleep 0.1; done
check "xtxd tells systemd READY=1 once serving ($(head -n 1 "$TMP/notify.out"))" \
	grep -q "READY=1" "$TMP/notify.out"
kill -TERM "$fg"
wait "$fg"
wait "$listener"
check "... and STOPPING=1 at the stop" grep -q "STOPPING=1" "$TMP/notify.out"
unit=$ROOT/scripts/service/xtxd@.service
check "the unit waits for it (Type=notify)" grep -q '^Type=notify$' "$unit"
make -s -C "$ROOT" load IFACE="$(server_dev 1)" NETNS="$(server_ns 1)" ARGS="--lock-lease 60s" >/dev/null

# ---- --fresh sets the store aside, and keeps only the newest two ----
for n in 1 2 3; do
	ctl 0 load --count 1000 --first $((n * 1000)) >/dev/null
	make -s -C "$ROOT" unload IFACE="$DEV0" NETNS="$NS0" >/dev/null 2>&1
	make -s -C "$ROOT" load IFACE="$DEV0" NETNS="$NS0" \
		ARGS="--metrics :9370 --data-dir $TMP/data0 --fresh --lock-lease 60s" >/dev/null 2>&1
	sleep 1.1	# fresh-<seconds>: one a second at most
done
asides=$(ls -d "$TMP"/data0/fresh-* 2>/dev/null | wc -l)
check "three --fresh starts leave the two newest set-asides ($asides)" test "$asides" -eq 2
check "... and say what they removed" grep -q "recovery: --fresh: removed .*fresh-" "$LOG0"

# ---- a cluster held in ZooKeeper: ping takes --zk, a static ping is refused by epoch ----
for i in 0 1 2; do ctl "$i" unload >/dev/null 2>&1; done
zk_up >"$TMP/zk.out" 2>&1 || fail "ZooKeeper up"
NAME=fh$$
out=$(client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --zk-name "$NAME" --servers "$ips" 2>&1)
check "xtxctl cluster init takes --zk-name, as xtxd and xtxbench do ($out)" grep -q "epoch 1" <<<"$out"
out=$(client "$BUILD/xtxctl" cluster status --zk "$ZK_CLIENT" --name "$NAME" 2>&1)
check "... and --name still works" grep -q "epoch 1" <<<"$out"
for i in 0 1 2; do
	make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
		ARGS="--zk $(zk_for_server "$i") --zk-name $NAME --metrics :9370 --lock-lease 60s" \
		>/dev/null 2>&1 || fail "load member $i"
done
out=$(client "$BUILD/xtxbench" ping --servers "$ips" --duration 0.5 2>&1)
rc=$?
check "xtxbench ping of a cluster's servers without --zk fails (exit $rc)" test "$rc" -eq 1
check "... saying the epoch was refused, and what to give" \
	grep -q "refused: the servers serve configuration epoch 1, this client named epoch 0 .*give --zk" <<<"$out"
out=$(client "$BUILD/xtxbench" ping --zk "$ZK_CLIENT" --zk-name "$NAME" --duration 0.5 2>&1)
rc=$?
rt=$(grep -o 'round_trips=[0-9]*' <<<"$out" | cut -d= -f2)
check "xtxbench ping --zk reaches every server at its epoch (exit $rc, ${rt:-0} round trips)" \
	test "$rc" -eq 0 -a "${rt:-0}" -gt 0
out=$(http /readyz)
check "/readyz of a member serving its epoch ($out)" grep -q "^200 ok: serving epoch 1" <<<"$out"
# ZooKeeper gone: the lease runs out and the servers fence themselves
zk_down
for ((i = 0; i < 300; i++)); do
	out=$(http /readyz)
	grep -q "^503" <<<"$out" && break
	sleep 0.1
done
check "/readyz without ZooKeeper: 503, out of its lease or fenced ($out)" grep -qE "^503 not ready: (fenced|out of its lease)" <<<"$out"
out=$(http /healthz)
check "/healthz meanwhile: alive ($out)" grep -q "^200 ok: alive" <<<"$out"
finish
