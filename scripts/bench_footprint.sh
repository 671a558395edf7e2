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
for ((r = 0; r < ROUNDS; r++)); do
	for sizing in default "--capacity $BIG"; do
		if [ "$sizing" = default ]; then start_servers xtx; else start_servers xtx "$sizing"; fi
		PROG_IDS=$(prog_ids)
		populate ctl tatp
		WL_LABEL="$sizing" wl_row xtx tatp | tail -n 1
	done
done
