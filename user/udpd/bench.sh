#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# xtxd (XDP) and xtx-udpd (one thread) side by side: the same xtxbench runs, server CPU per op.
#
# One veth link as in scripts/bench.sh: the server's NAPI kthread pinned to CPU 1, the
# client on CPU 0, xtx-udpd pinned to CPU 1 too.  For the xtx-udpd rows the server end gets
# an XDP_PASS program, so that its receive path runs in that same NAPI kthread (without one
# veth delivers in the sender's softirq, on the client's CPU).  Server CPU per op is then
#   xtxd:     the NAPI kthread's time (driver, XDP, XDP_TX), and bpf_stats' XDP share
#   xtx-udpd: the NAPI kthread's time (receive up to the socket) plus the process's time
# from /proc/PID/task/*/schedstat (and, as a cross-check, /proc/PID/stat utime + stime).
# Usage: user/udpd/bench.sh [DURATION_S [REPS]]   (root; make all first)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
DURATION=${1:-4}
REPS=${2:-1}
P=xtxu$(printf '%04x' $RANDOM)
SRV=10.77.0.2
PIDFILE=/run/$P-udpd.pid
UPID=
PROG=

topo() { "$ROOT/scripts/topo.sh" -p "$P" -n 1 "$@"; }
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	[ -n "$UPID" ] && kill "$UPID" 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled="$stats_was"
	make -s -C "$ROOT" unload IFACE="${P}s0" NETNS="$P-s0" >/dev/null 2>&1
	topo down >/dev/null 2>&1
	rm -rf /var/lib/xtx/"$P"-* "$PIDFILE"
}
trap cleanup EXIT INT TERM

client() { ip netns exec "$P-c" taskset -c 0 "$BUILD/xtxbench" "$@"; }
# CPU time in ns of every thread of a process
sched_ns() {
	local s=0 t a
	for t in /proc/"$1"/task/*/schedstat; do
		read -r a _ <"$t"
		s=$((s + a))
	done
	echo "$s"
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
prog_ns() { bpftool prog show id "$1" --json | jq -r '.run_time_ns // 0'; }
# per A B OPS [MULT]: (B - A) * MULT / OPS, rounded
per() {
	awk -v a="$1" -v b="$2" -v o="$3" -v m="${4:-1}" 'BEGIN { printf "%.0f", (b - a) * m / o }'
}

# row SERVER LABEL XTXBENCH-ARGS...: one table row.
row() {
	local server=$1 label=$2 js n0 n1 s0=0 s1=0 t0=0 t1=0 p0=0 p1=0 ops total napi own rest
	shift 2
	n0=$(sched_ns "$NAPI")
	[ -n "$UPID" ] && { s0=$(sched_ns "$UPID"); t0=$(ticks "$UPID"); }
	[ -n "$PROG" ] && p0=$(prog_ns "$PROG")
	if ! js=$(client "$@" --duration "$DURATION" --json 2>/dev/null); then
		echo "| $server | $label | failed |"
		return
	fi
	n1=$(sched_ns "$NAPI")
	[ -n "$UPID" ] && { s1=$(sched_ns "$UPID"); t1=$(ticks "$UPID"); }
	[ -n "$PROG" ] && p1=$(prog_ns "$PROG")
	ops=$(jq -r '.ops_per_s // .kv_ops_per_s' <<<"$js")
	total=$(jq -r '(.ops_per_s // .kv_ops_per_s) * .duration_s | floor' <<<"$js")
	napi=$(per "$n0" "$n1" "$total")
	if [ -n "$UPID" ]; then
		own=$(per "$s0" "$s1" "$total")
		# stat counts clock ticks of 10 ms
		rest="$own | $(per "$t0" "$t1" "$total" 10000000) | - | $((napi + own))"
	else
		rest="- | - | $(per "$p0" "$p1" "$total") | $napi"
	fi
	printf '| %s | %s | %.0f | %.0f | %.1f | %.1f | %s | %s |\n' "$server" "$label" \
		"$(jq -r '.packets_per_s // .round_trips_per_s' <<<"$js")" "$ops" \
		"$(jq -r .latency_us.p50 <<<"$js")" "$(jq -r .latency_us.p99 <<<"$js")" "$napi" "$rest"
}

KV=(kv --servers "$SRV" --threads 2 --keys 100000 --exist-pct 100 --value-size 40 --ops 16)
rows() {
	local who=$1 base=$2
	row "$who" "ping, 1 op/pkt" ping --servers "$SRV" --ops 1 --client-id $((base + 1))
	row "$who" "ping, 16 ops/pkt" ping --servers "$SRV" --ops 16 --client-id $((base + 2))
	client "${KV[@]}" --preload-only --client-id $((base + 10)) --json >/dev/null 2>&1 ||
		echo "preload failed" >&2
	row "$who" "kv zipf .99 80:0:20:0, 16 ops/pkt" "${KV[@]}" --zipf 0.99 --mix 80:0:20:0 \
		--client-id $((base + 20))
}

topo -x "$BUILD/bpf/xdp_pass.bpf.o" -t 1 up >/dev/null || exit 1
NAPI=$(for f in /proc/[0-9]*/comm; do
	read -r c <"$f" 2>/dev/null || continue
	[[ $c == "napi/${P}s0-"* ]] && { f=${f#/proc/}; echo "${f%/comm}"; }
done | head -n 1)
[ -n "$NAPI" ] || { echo "Error: no NAPI kthread for ${P}s0" >&2; exit 1; }

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs," \
	"load $(cut -d' ' -f1-3 /proc/loadavg), ${DURATION}s per row"
echo
echo "| server | run | packets/s | ops/s | p50 µs | p99 µs | NAPI ns/op | udpd ns/op |" \
	"udpd ns/op (stat) | XDP ns/op | server ns/op |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for ((rep = 0; rep < REPS; rep++)); do
	sysctl -qw kernel.bpf_stats_enabled=1
	make -s -C "$ROOT" load IFACE="${P}s0" NETNS="$P-s0" ARGS="--cpus 0" >/dev/null ||
		{ echo "Error: make load" >&2; exit 1; }
	PROG=$("$BUILD/xtxctl" --netns "$P-s0" --iface "${P}s0" info --json | jq .prog_id)
	rows xtxd $((100 + rep * 200))
	make -s -C "$ROOT" unload IFACE="${P}s0" NETNS="$P-s0" >/dev/null
	PROG=
	sysctl -qw kernel.bpf_stats_enabled="$stats_was"

	ip -n "$P-s0" link set dev "${P}s0" xdpdrv obj "$BUILD/bpf/xdp_pass.bpf.o" sec xdp
	"$BUILD/xtx-udpd" --netns "$P-s0" --bind "$SRV" --cpus 1 -d --pidfile "$PIDFILE" ||
		{ echo "Error: xtx-udpd" >&2; exit 1; }
	UPID=$(cat "$PIDFILE")
	rows xtx-udpd $((200 + rep * 200))
	kill "$UPID"
	while [ -e "$PIDFILE" ]; do sleep 0.05; done
	UPID=
	ip -n "$P-s0" link set dev "${P}s0" xdpdrv off
done
