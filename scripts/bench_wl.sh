# SPDX-License-Identifier: GPL-2.0-only
# Sourced after bench_lib.sh by the workload benchmarks (bench_txn.sh, bench_values.sh): one
# xtxbench workload run as a table row, with the servers' XDP time, rare-path share and CPU.
# The caller sets report (the markdown file rows go to) and WL_INFLIGHT.

prog_ids() {
	local i
	for ((i = 0; i < NSERVERS; i++)); do
		"$BUILD/xtxctl" --netns "$(server_ns "$i")" --iface "$(server_dev "$i")" info --json |
			jq .prog_id
	done
}
# Summed run_time_ns and run_cnt of the servers' XDP programs (bpf_stats).
xdp_stats() {
	local id t c tt=0 cc=0
	for id in $PROG_IDS; do
		read -r t c < <(bpftool prog show id "$id" --json |
			jq -r '"\(.run_time_ns // 0) \(.run_cnt // 0)"')
		tt=$((tt + t))
		cc=$((cc + c))
	done
	echo "$tt $cc"
}
# Ops and ops deferred to xtxd, summed over the servers.
rare_stats() {
	local i js o=0 d=0
	for ((i = 0; i < NSERVERS; i++)); do
		js=$("$BUILD/xtxctl" --netns "$(server_ns "$i")" --iface "$(server_dev "$i")" stats \
			--json)
		o=$((o + $(jq '.counters.ops // 0' <<<"$js")))
		d=$((d + $(jq '.counters.kv_deferred // 0' <<<"$js")))
	done
	echo "$o $d"
}
cpu_jiffies() { awk '/^cpu[0-9]/ { print $1, $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
cpu_util() {
	paste <(echo "$1") <(echo "$2") | awk '{ u = ($6 > $3) ? 100 * ($5 - $2) / ($6 - $3) : 0
		printf "%s%d%%", (NR > 1 ? " / " : ""), u }'
}

# The workload tables' header: the columns wl_row prints.
wl_table_header() {
	echo "| workload | server | attempts/s | committed/s | p50 µs | p99 µs | server CPU µs/txn |" \
		"NAPI (XDP) µs/txn | xtxd or xtx-udpd µs/txn | XDP ns/pkt | rare path | ops/pkt |" \
		"CPU util (cpu0 / cpu1) |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
}

# wl_row KIND WORKLOAD [ARGS]: one run; a table row, and its committed/s and attempts/s.
# Server CPU comes from xtxbench (--cpu-of), read at the end of its warmup and at its stop.
wl_row() {
	local kind=$1 w=$2 js x0 x1 r0 r1 c0 c1 xdp rare
	shift 2
	c0=$(cpu_jiffies)
	[ "$kind" = udpd ] || { x0=$(xdp_stats); r0=$(rare_stats); }
	# the ceiling's transactions see no data and fail their checks: keep the numbers anyway
	js=$(client "$w" --servers "$(server_ips)" $(wl_args "$w") --duration "$DURATION" \
		--warmup 1 --inflight "$WL_INFLIGHT" $(cpu_of_args) --json "$@" 2>/dev/null) || true
	jq -e .bench <<<"$js" >/dev/null 2>&1 || js=""
	c1=$(cpu_jiffies)
	xdp="-"
	rare="-"
	if [ "$kind" != udpd ]; then
		x1=$(xdp_stats)
		r1=$(rare_stats)
		xdp=$(awk -v a="$x0" -v b="$x1" 'BEGIN { split(a, p); split(b, q);
			if (q[2] > p[2]) printf "%.0f", (q[1] - p[1]) / (q[2] - p[2]); else print "-" }')
		rare=$(awk -v a="$r0" -v b="$r1" 'BEGIN { split(a, p); split(b, q);
			if (q[1] > p[1]) printf "%.3f%%", 100 * (q[2] - p[2]) / (q[1] - p[1]); else print "-" }')
	fi
	if [ -z "$js" ]; then
		echo "| $w | $kind | (run failed) | | | | | | | | | | |" | tee -a "$report" >&2
		echo "0 0 0 0 0 0"
		return
	fi
	echo "$js" | jq -c --arg k "$kind" '. + {"label": "workloads", "server": $k}' \
		>>"$OUT/txn_runs.jsonl"
	# per transaction: committed and logically failed ones alike did their work
	jq -r --arg kind "$kind" --arg xdp "$xdp" --arg rare "$rare" --arg lbl "${WL_LABEL:-}" \
		--arg cpu "$(cpu_util "$c0" "$c1")" '
		def r(x): (x * 10 | round) / 10;
		def r2(x): (x * 100 | round) / 100;
		(.total.committed + .total.logical) as $n |
		def per(x): if .total.committed > 0 then r2(x / 1000 / $n) else "-" end;
		"| \(if $lbl != "" then $lbl else .bench end) \(.protocol) | \($kind) | " +
		"\(.attempts_per_s | round) | " +
		"\(.committed_per_s | round) | \(r(.latency_us.p50)) | \(r(.latency_us.p99)) | " +
		"\(per(.cpu_of.napi + .cpu_of.daemon)) | \(per(.cpu_of.napi)) | " +
		"\(per(.cpu_of.daemon)) | \($xdp) | \($rare) | \(r(.ops_per_packet_avg)) | \($cpu) |"' \
		<<<"$js" | tee -a "$report" >&2
	# committed/s attempts/s packets/s server-µs/txn napi-µs/txn daemon-µs/txn
	jq -r '(.total.committed + .total.logical) as $n |
		def per(x): if .total.committed > 0 then x / 1000 / $n else 0 end;
		"\(.committed_per_s) \(.attempts_per_s) \(.packets / .duration_s) " +
		"\(per(.cpu_of.napi + .cpu_of.daemon)) \(per(.cpu_of.napi)) \(per(.cpu_of.daemon))"' \
		<<<"$js"
}
