#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bench, values up to 1 KiB: TPC-C, YCSB and Retwis over libxtx on 3 servers with 3
# replicas, served by the XDP echo (the ceiling), xtx and xtx-udpd on one topology in one run.
# Client on CPU 0, the servers' NAPI threads (XDP) on CPU 1, as in bench_txn.sh.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
OUT=$BUILD/bench
DURATION=${DURATION:-4}
NSERVERS=3
PREFIX=xtxv$(printf '%04x' $RANDOM)
SERVER_CPU=1
CLIENT_CPU=0

mkdir -p "$OUT"
report=$OUT/report_values.md
: >"$OUT/txn_runs.jsonl"

source "$ROOT/scripts/bench_lib.sh"
source "$ROOT/scripts/bench_wl.sh"

{
	echo "# xtx with values up to 1 KiB"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs," \
		"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), ${DURATION}s per row"
} | tee "$report"
topo -x "$BUILD/bpf/xdp_pass.bpf.o" -t "$SERVER_CPU" up >/dev/null
sysctl -qw kernel.bpf_stats_enabled=1

# ---- TPC-C, YCSB and Retwis (values up to 1 KiB): ceiling, xtx, xtx-udpd ----
{
	echo
	echo "## TPC-C, YCSB and Retwis (values up to 1 KiB): ceiling (XDP echo), xtx, xtx-udpd"
	echo
	echo "TPC-C: $TPCC_W warehouse(s) per server, NewOrder alone and the standard mix (committed/s"
	echo "counts every committed part; new orders below); YCSB: $YCSB_RECORDS records of 10 x 100 B,"
	echo "zipf 0.99, transactions of 5 requests; Retwis: $RETWIS_USERS users. Values over 40 bytes live"
	echo "in xtxd's overflow store, and XDP answers their reads from copies in its value store; their"
	echo "writes go to xtxd: the rare-path column is the share of ops XDP defers to xtxd."
	echo
	wl_table_header
} | tee -a "$report"
BIG_ROWS=("tpcc --mix neworder" "tpcc --mix standard" "ycsb --workload a" "ycsb --workload b"
	"ycsb --workload c" "ycsb --workload f" "retwis")
: >"$OUT/big_rows.jsonl"
for kind in echo xtx udpd; do
	start_servers "$kind"
	PROG_IDS=""
	[ "$kind" = udpd ] || PROG_IDS=$(prog_ids)
	case $kind in
	xtx) populate ctl tpcc ycsb retwis ;;
	udpd) populate txn tpcc ycsb retwis ;;
	esac
	for row in "${BIG_ROWS[@]}"; do
		read -r -a args <<<"$row"
		[ "$kind" = echo ] && args+=(--echo)
		n0=$(wc -l <"$OUT/txn_runs.jsonl")
		WL_LABEL="${row}" wl_row "$kind" "${args[@]}" >/dev/null
		# a failed run added nothing: keep no numbers for it
		[ "$(wc -l <"$OUT/txn_runs.jsonl")" -gt "$n0" ] || continue
		tail -n 1 "$OUT/txn_runs.jsonl" | jq -c --arg k "$kind" --arg r "$row" \
			'{row: $r, server: $k, committed_per_s, rates, ops_per_s}' >>"$OUT/big_rows.jsonl"
	done
done
{
	echo
	echo "Per server (3 servers): TPC-C new orders/s and tpmC, YCSB committed requests/s:"
	echo
	echo "| row | xtx | xtx-udpd |"
	echo "|---|---|---|"
	for row in "${BIG_ROWS[@]}"; do
		v=()
		for kind in xtx udpd; do
			v+=("$(jq -r --arg k "$kind" --arg r "$row" 'select(.server == $k and .row == $r) |
				if .rates.new_orders_per_s_per_server then
					"\(.rates.new_orders_per_s_per_server | round) new orders/s, tpmC \(.rates.tpmC_per_server | round)"
				elif .ops_per_s then "\(.ops_per_s / 3 | round) requests/s"
				else "\(.committed_per_s / 3 | round) txns/s" end' "$OUT/big_rows.jsonl" |
				tail -n 1)")
		done
		echo "| $row | ${v[0]:--} | ${v[1]:--} |"
	done
} | tee -a "$report"


echo
echo "report: $report, raw runs: $OUT/txn_runs.jsonl"
