#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bench: XDP cost per op (BPF_PROG_TEST_RUN) and end-to-end runs on one topology, one run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
OUT=$BUILD/bench
DURATION=${DURATION:-4}
PREFIX=xtxb$(printf '%04x' $RANDOM)
# Two cores: the server's NAPI thread (where XDP runs) on CPU 1, the client on CPU 0,
# so the server's CPU time is its own and readable from bpf_stats.
SERVER_CPU=1
CLIENT_CPU=0

mkdir -p "$OUT"
report=$OUT/report.md
stats_was=$(sysctl -n kernel.bpf_stats_enabled)

topo() { "$ROOT/scripts/topo.sh" -p "$PREFIX" -n 1 "$@"; }
cleanup() {
	sysctl -qw kernel.bpf_stats_enabled="$stats_was"
	make -s -C "$ROOT" unload FORCE=1 IFACE="${PREFIX}s0" NETNS="$PREFIX-s0" >/dev/null 2>&1 || true
	topo down >/dev/null 2>&1 || true
	rm -rf /var/lib/xtx/"$PREFIX"-*	# the servers' logs belong to this run only
}
trap cleanup EXIT INT TERM

client() { ip netns exec "$PREFIX-c" taskset -c "$CLIENT_CPU" "$BUILD/xtxbench" "$@"; }
# The server's log cursors and drain counters (xtxctl log stats).
log_stats() { "$BUILD/xtxctl" --netns "$PREFIX-s0" --iface "${PREFIX}s0" log stats --json; }
prog_stats() { bpftool prog show id "$1" --json | jq -r '"\(.run_time_ns // 0) \(.run_cnt // 0)"'; }

# run_row LABEL OPS_PER_PKT XTXBENCH-ARGS...: one table row from a --json run and bpf_stats.
run_row() {
	local label=$1 ops=$2 before after js
	shift 2
	read -r t0 c0 < <(prog_stats "$PROG_ID")
	js=$(client "$@" --duration "$DURATION" --json)
	read -r t1 c1 < <(prog_stats "$PROG_ID")
	echo "$js" >>"$OUT/runs.jsonl"
	jq -r --arg name "$label" --argjson ops "$ops" --argjson dt $((t1 - t0)) \
		--argjson dc $((c1 - c0)) '
		def r(x): (x * 10 | round) / 10;
		"| \($name) | \($ops) | \(.round_trips_per_s // .packets_per_s | round) | " +
		"\(.ops_per_s // .lock_ops_per_s // .appends_per_s | round) | " +
		"\(r(.latency_us.p50)) | \(r(.latency_us.p99)) | " +
		"\(if $dc > 0 then r($dt / $dc) else "-" end) | " +
		"\(if $dc > 0 then r($dt / $dc / $ops) else "-" end) |"' <<<"$js" | tee -a "$report"
}

: >"$OUT/runs.jsonl"
: >"$OUT/log_stats.jsonl"
{
	echo "# xtx benchmark report"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs, $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
	echo
	echo "## Cost inside XDP (BPF_PROG_TEST_RUN, one frame per run)"
	echo
	echo '```'
	"$BUILD/bench/xdp_cost"
	echo '```'
	echo
	echo "The empty-program row is the harness's fixed cost per run (an XDP program that only"
	echo "returns XDP_PASS); subtract it for the program's own time. The pass-through row is"
	echo "xtx's own cost for a frame that is not xtx's. The cold rows run on tables of the"
	echo "default size (120 MB), every op on a new random key, with and without the warm pass"
	echo "(bpf/lib/warm.h; xtxd --no-warm): what an op costs when its lines are not cached."
	echo
	echo "## End to end on veth (1 server, NAPI thread on CPU $SERVER_CPU, client on CPU $CLIENT_CPU, ${DURATION}s per row)"
	echo
	echo "| run | ops/pkt | packets/s | ops/s | p50 µs | p99 µs | XDP ns/pkt | XDP ns/op |"
	echo "|---|---|---|---|---|---|---|---|"
} | tee "$report"

topo -x "$BUILD/bpf/xdp_pass.bpf.o" -t "$SERVER_CPU" up >/dev/null
make -s -C "$ROOT" load IFACE="${PREFIX}s0" NETNS="$PREFIX-s0" ARGS="--cpus $CLIENT_CPU"
PROG_ID=$("$BUILD/xtxctl" --netns "$PREFIX-s0" --iface "${PREFIX}s0" info --json | jq .prog_id)
sysctl -qw kernel.bpf_stats_enabled=1
SRV=10.77.0.2

run_row "ping" 1 ping --servers $SRV --ops 1 --client-id 10
run_row "ping" 16 ping --servers $SRV --ops 16 --client-id 11
if "$BUILD/xtxbench" help lock2pl >/dev/null 2>&1; then
	for k in 1 8 16; do
		run_row "lock2pl (80% shared, zipf 0.99)" "$k" lock2pl --servers $SRV --ops "$k" \
			--keys 1000000 --client-id $((20 + k))
	done
	for k in 1 16; do
		run_row "lockocc (80% validate, zipf 0.99)" "$k" lockocc --servers $SRV --ops "$k" \
			--keys 1000000 --client-id $((40 + k))
	done
fi
# LOG_FULL is the measurement: the ring filled because xtxd's drain fell behind.
drain_rows=()
if "$BUILD/xtxbench" help log >/dev/null 2>&1; then
	for k in 1 16; do
		before=$(log_stats)
		run_row "log_append" "$k" log --servers $SRV --ops "$k" --client-id $((60 + k))
		after=$(log_stats)
		echo "$after" >>"$OUT/log_stats.jsonl"
		# How long the drain needs to empty what the run left (head == tail), up to 5 s.
		for ((w = 0; w < 50; w++)); do
			[[ $(log_stats | jq '[.cpus[] | .tail - .head] | add') == 0 ]] && break
			sleep 0.1
		done
		# Cursors are cumulative since load: this row's share is after - before.
		drain_rows+=("$(jq -rn --argjson a "$before" --argjson b "$after" --argjson k "$k" \
			--arg w "$(if ((w < 50)); then echo "$((w / 10)).$((w % 10))"; else echo ">5"; fi)" '
			def s(x; f): [x.cpus[] | f] | add;
			"| \($k) | \(s($b; .tail) - s($a; .tail)) | \(s($b; .head) - s($a; .head)) | " +
			"\(s($b; .full) - s($a; .full)) | \(s($b; .tail - .head)) | \($w) | " +
			"\($b.drain.max_lag // "-") |"')")
	done
fi
if ((${#drain_rows[@]})); then
	{
		echo
		echo "## Log drain (server cursors summed over CPUs, read as each log_append row ends)"
		echo
		echo "| ops/pkt | appended | drained (head) | log_full | fill at end | s to head == tail |" \
			"xtxd max lag |"
		echo "|---|---|---|---|---|---|---|"
		printf '%s\n' "${drain_rows[@]}"
	} | tee -a "$report"
fi
echo
echo "report: $report, raw runs: $OUT/runs.jsonl"
