#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a server's map sizes cost: the same TATP keys served on xtxd's default sizes and on
# --capacity sized for spec scale, alternated ROUNDS times in one run. Three servers, R = 3,
# client on CPU 0, the servers' NAPI threads and xtxd on CPU 1 (as make bench); PIN=0 leaves
# every thread to the scheduler. SETTLE=1 waits, between sizings, until the memory the last
# servers held is available again.
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
# MiB of memory available, and of vmalloc in use (BPF maps are vmalloc'd, and freed after
# their xtxd has gone, by a kernel worker)
mem_now() { awk '/^MemAvailable/ { a = $2 } /^VmallocUsed/ { v = $2 }
	END { printf "%d %d\n", a / 1024, v / 1024 }' /proc/meminfo; }
read -r mem_base _ < <(mem_now)
# SETTLE=1: after stopping servers, wait (up to 120 s) until the memory they held is back
settle() {
	local a
	[ "${SETTLE:-0}" = 1 ] || return 0
	for _ in $(seq 1 1200); do
		read -r a _ < <(mem_now)
		[ "$a" -ge $((mem_base - 1024)) ] && return 0
		sleep 0.1
	done
}
stalls=$OUT/footprint_stalls.md
{
	echo
	echo "SETTLE=${SETTLE:-0}: memory available before the servers start, $mem_base MiB at the bench's start."
	echo
	echo "| sizing | committed/s | max latency ms | client retransmits | op retries |" \
		"server busy (dup in flight) | lock busy | kv busy | replayed | dropped |" \
		"MiB available at start / at run / after | vmalloc MiB at start / at run |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$stalls"
for ((r = 0; r < ROUNDS; r++)); do
	for sizing in default "--capacity $BIG"; do
		stop_servers
		settle
		read -r m0 v0 < <(mem_now)
		if [ "$sizing" = default ]; then start_servers xtx; else start_servers xtx "$sizing"; fi
		PROG_IDS=$(prog_ids)
		populate ctl tatp
		read -r m1 v1 < <(mem_now)
		c0=$(server_counters)
		WL_LABEL="$sizing" wl_row xtx tatp | tail -n 1
		c1=$(server_counters)
		read -r m2 _ < <(mem_now)
		tail -n 1 "$OUT/txn_runs.jsonl" | jq -r --arg s "$sizing" --argjson a "$c0" \
			--argjson b "$c1" --arg mem "$m0 / $m1 / $m2" --arg vm "$v0 / $v1" '
			"| \($s) | \(.committed_per_s | round) | " +
			"\(.latency_us.max / 1000 | round) | \(.retransmits) | \(.op_retries) | " +
			"\($b.busy - $a.busy) | \($b.lock_busy - $a.lock_busy) | \($b.kv_busy - $a.kv_busy) | " +
			"\($b.replayed - $a.replayed) | \($b.drop - $a.drop) | \($mem) | \($vm) |"' >>"$stalls"
	done
done
cat "$stalls" | tee -a "$report"
cp "$OUT/txn_runs.jsonl" "$OUT/footprint_runs.jsonl"
