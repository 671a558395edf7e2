#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a server's map sizes cost: the same TATP keys served on xtxd's default sizes and on
# --capacity sized for spec scale, alternated ROUNDS times in one run. Three servers, R = 3,
# client on CPU 0, the servers' NAPI threads and xtxd on CPU 1 (as make bench); PIN=0 leaves
# every thread to the scheduler.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
OUT=$BUILD/bench
DURATION=${DURATION:-4}
ROUNDS=${ROUNDS:-2}
BIG=${BIG:-12000000}
NSERVERS=3
PREFIX=xtxf$(printf '%04x' $RANDOM)
SERVER_CPU=1
CLIENT_CPU=0
TATP_P=${TATP_P:-100000}

mkdir -p "$OUT"
report=$OUT/report_footprint.md
: >"$report"
: >"$OUT/txn_runs.jsonl"

source "$ROOT/scripts/bench_lib.sh"
source "$ROOT/scripts/bench_wl.sh"

if [ "${PIN:-1}" = 1 ]; then
	topo -x "$BUILD/bpf/xdp_pass.bpf.o" -t "$SERVER_CPU" up >/dev/null
else
	SERVER_CPU=0-1
	CLIENT_CPU=0-1
	topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null
fi
sysctl -qw kernel.bpf_stats_enabled=1
{
	echo "## The same TATP keys on default sizes and on --capacity $BIG"
	echo
	echo "TATP $TATP_P subscribers, OCC, 3 servers, R = 3, $WL_INFLIGHT in flight, $ROUNDS rounds alternated."
	echo
	wl_table_header
} | tee -a "$report"
# Counters summed over the servers: what a stalled run shows (requests answered RETRY,
# replayed, dropped), read before and after each run.
server_counters() {
	local i
	for ((i = 0; i < NSERVERS; i++)); do
		"$BUILD/xtxctl" --netns "$(server_ns "$i")" --iface "$(server_dev "$i")" stats --json
	done | jq -s '[.[].counters] | {busy: (map(.busy) | add), lock_busy: (map(.lock_busy) | add),
		kv_busy: (map(.kv_busy) | add), replayed: (map(.replayed) | add),
		drop: (map(.drop) | add), tx: (map(.tx) | add)}'
}
stalls=$OUT/footprint_stalls.md
{
	echo
	echo "| sizing | committed/s | max latency ms | client retransmits | op retries |" \
		"server busy (dup in flight) | lock busy | kv busy | replayed | dropped | memory free MiB |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
} >"$stalls"
for ((r = 0; r < ROUNDS; r++)); do
	for sizing in default "--capacity $BIG"; do
		if [ "$sizing" = default ]; then start_servers xtx; else start_servers xtx "$sizing"; fi
		PROG_IDS=$(prog_ids)
		populate ctl tatp
		c0=$(server_counters)
		WL_LABEL="$sizing" wl_row xtx tatp | tail -n 1
		c1=$(server_counters)
		free=$(awk '/^MemAvailable/ { printf "%d", $2 / 1024 }' /proc/meminfo)
		tail -n 1 "$OUT/txn_runs.jsonl" | jq -r --arg s "$sizing" --argjson a "$c0" \
			--argjson b "$c1" --arg free "$free" '"| \($s) | \(.committed_per_s | round) | " +
			"\(.latency_us.max / 1000 | round) | \(.retransmits) | \(.op_retries) | " +
			"\($b.busy - $a.busy) | \($b.lock_busy - $a.lock_busy) | \($b.kv_busy - $a.kv_busy) | " +
			"\($b.replayed - $a.replayed) | \($b.drop - $a.drop) | \($free) |"' >>"$stalls"
	done
done
cat "$stalls" | tee -a "$report"
cp "$OUT/txn_runs.jsonl" "$OUT/footprint_runs.jsonl"
