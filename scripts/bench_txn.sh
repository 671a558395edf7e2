#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bench, transactions: libxtx over 3 servers with 3 replicas, on one topology in one run.
# The client runs on CPU 0; every server's NAPI thread (where XDP runs) on CPU 1, so the
# server CPU time per transaction is the NAPI threads' time plus the server processes'.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
OUT=$BUILD/bench
DURATION=${DURATION:-4}
NSERVERS=3
PREFIX=xtxt$(printf '%04x' $RANDOM)
SERVER_CPU=1
CLIENT_CPU=0
TICK_US=$((1000000 / $(getconf CLK_TCK)))

mkdir -p "$OUT"
report=$OUT/report_txn.md
: >"$OUT/txn_runs.jsonl"

server_ns() { echo "$PREFIX-s$1"; }
server_dev() { echo "${PREFIX}s$1"; }
server_ips() { echo 10.77.0.2,10.77.1.2,10.77.2.2; }
topo() { "$ROOT/scripts/topo.sh" -p "$PREFIX" -n "$NSERVERS" "$@"; }

SERVER_KIND=none
stop_servers() {
	local i
	case $SERVER_KIND in
	xtx | echo)
		for ((i = 0; i < NSERVERS; i++)); do
			make -s -C "$ROOT" unload IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
				>/dev/null 2>&1 || true
		done
		;;
	udpd)
		for ((i = 0; i < NSERVERS; i++)); do
			[ -f "$OUT/udpd$i.pid" ] && kill "$(cat "$OUT/udpd$i.pid")" 2>/dev/null || true
			rm -f "$OUT/udpd$i.pid"
		done
		sleep 0.3
		;;
	esac
	SERVER_KIND=none
	rm -rf /var/lib/xtx/"$PREFIX"-*
}
cleanup() {
	stop_servers
	topo down >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

# start_servers xtx|echo|udpd: the same three addresses, served three ways.
start_servers() {
	local i
	stop_servers
	for ((i = 0; i < NSERVERS; i++)); do
		case $1 in
		xtx) make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
			ARGS="--cpus $CLIENT_CPU" >/dev/null ;;
		echo) make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
			ARGS="--cpus $CLIENT_CPU --echo" >/dev/null ;;
		udpd) taskset -c "$SERVER_CPU" "$BUILD/xtx-udpd" --netns "$(server_ns "$i")" \
			--daemon --pidfile "$OUT/udpd$i.pid" >/dev/null ;;
		esac
	done
	SERVER_KIND=$1
}

# CPU ticks of the servers: every server-side NAPI thread, xtxd or xtx-udpd.
server_ticks() {
	local f comm pid sum=0 i
	for f in /proc/[0-9]*/comm; do
		read -r comm <"$f" 2>/dev/null || continue
		case $comm in
		"napi/${PREFIX}s"* | xtxd | xtx-udpd) ;;
		*) continue ;;
		esac
		pid=${f#/proc/}
		pid=${pid%/comm}
		read -r -a st <"/proc/$pid/stat" 2>/dev/null || continue
		# utime and stime: fields 14 and 15, after "pid (comm)" with no spaces in comm
		sum=$((sum + st[13] + st[14]))
	done
	echo "$sum"
}

client() { ip netns exec "$PREFIX-c" taskset -c "$CLIENT_CPU" "$BUILD/xtxbench" "$@"; }

# bank_row LABEL ARGS...: one transfer run; prints a table row and keeps the JSON.
bank_row() {
	local label=$1 js t0 t1
	shift
	t0=$(server_ticks)
	js=$(client bank --servers "$(server_ips)" --no-setup --accounts 100000 --audit-pct 0 \
		--duration "${DURATION}s" --json "$@")
	t1=$(server_ticks)
	echo "$js" | jq -c --arg name "$label" '. + {"label": $name}' >>"$OUT/txn_runs.jsonl"
	jq -r --arg name "$label" --argjson us $(((t1 - t0) * TICK_US)) '
		def r(x): (x * 10 | round) / 10;
		"| \($name) | \(.committed_per_s | round) | \(r(.packets_per_committed_rw)) | " +
		"\(r(.ops_per_packet)) | \(r(.p50_us)) | \(r(.p99_us)) | " +
		"\(if .committed > 0 then r($us / .committed) else "-" end) | " +
		"\(.cpu_util | map(. * 100 | round | tostring + "%") | join(" / ")) |"' <<<"$js" |
		tee -a "$report" >&2
	echo "$js" | jq -r .committed_per_s
}

{
	echo "# xtx transaction benchmarks"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs," \
		"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), ${DURATION}s per row"
	echo
	echo "3 servers, 3 replicas per key; client on CPU $CLIENT_CPU (1 thread), the servers'"
	echo "NAPI threads (XDP) on CPU $SERVER_CPU. Server CPU µs/txn = NAPI threads + xtxd CPU time"
	echo "over committed transactions."
} | tee "$report"

topo -x "$BUILD/bpf/xdp_pass.bpf.o" -t "$SERVER_CPU" up >/dev/null

# ---- libxtx: aggregation on and off (bank transfers, uniform over 100k accounts) ----
{
	echo
	echo "## Bank transfers: aggregation on vs off"
	echo
	echo "| run | committed/s | packets per committed txn | ops/packet | p50 µs | p99 µs |" \
		"server CPU µs/txn | CPU util (cpu0 / cpu1) |"
	echo "|---|---|---|---|---|---|---|---|"
} | tee -a "$report"
start_servers xtx
client bank --servers "$(server_ips)" --accounts 100000 --duration 1s --audit-pct 0 >/dev/null
ratios=()
for proto in occ 2pl; do
	off=$(bank_row "$proto, 1 op/packet" --protocol "$proto" --inflight 32 --ops-per-packet 1 |
		tail -n 1)
	on=$(bank_row "$proto, up to 16 ops/packet" --protocol "$proto" --inflight 32 | tail -n 1)
	ratios+=("$proto: $(jq -n --argjson a "$on" --argjson b "$off" \
		'if $b > 0 then ($a / $b * 100 | round) / 100 else "-" end')x")
done
{
	echo
	echo "Aggregation speedup (committed txns/s, on / off): ${ratios[*]}"
} | tee -a "$report"

echo
echo "report: $report, raw runs: $OUT/txn_runs.jsonl"
