#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The warm pass (bpf/lib/warm.h) end to end: XDP ns per op (bpf_stats) and committed/s of TATP
# and SmallBank on 3 servers with 3 replicas, the program with and without it (xtxd --no-warm),
# alternating on one topology so both see the same machine.  SPEC=1: the spec-scale data sets
# (TATP 1M subscribers, SmallBank 100k accounts) on servers sized by --capacity.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
OUT=$BUILD/bench
DURATION=${DURATION:-4}
ROUNDS=${ROUNDS:-$([ "${SPEC:-0}" = 1 ] && echo 1 || echo 2)}
NSERVERS=3
PREFIX=xtxw$(printf '%04x' $RANDOM)
SERVER_CPU=1
CLIENT_CPU=0
mkdir -p "$OUT"

source "$ROOT/scripts/bench_lib.sh"

CAPACITY=""
if [ "${SPEC:-0}" = 1 ]; then
	TATP_P=1000000
	SB_ACCOUNTS=100000
	CAPACITY="--capacity ${SPEC_CAPACITY:-11500000}"
fi

# XDP run time (ns), runs and ops over the servers.
xdp_sums() {
	local i id t c tt=0 cc=0 o=0
	for ((i = 0; i < NSERVERS; i++)); do
		id=$("$BUILD/xtxctl" --netns "$(server_ns "$i")" --iface "$(server_dev "$i")" info \
			--json | jq .prog_id)
		read -r t c < <(bpftool prog show id "$id" --json |
			jq -r '"\(.run_time_ns // 0) \(.run_cnt // 0)"')
		tt=$((tt + t))
		cc=$((cc + c))
		o=$((o + $("$BUILD/xtxctl" --netns "$(server_ns "$i")" --iface "$(server_dev "$i")" \
			stats --json | jq '.counters.ops // 0')))
	done
	echo "$tt $cc $o"
}

topo -x "$BUILD/bpf/xdp_pass.bpf.o" -t "$SERVER_CPU" up >/dev/null
sysctl -qw kernel.bpf_stats_enabled=1
echo "TATP $TATP_P subscribers, SmallBank $SB_ACCOUNTS accounts, ${DURATION}s per row," \
	"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo
echo "| round | program | workload | XDP ns/packet | XDP ns/op | ops/packet | committed/s |"
echo "|---|---|---|---|---|---|---|"
for ((round = 1; round <= ROUNDS; round++)); do
	for variant in warm no-warm; do
		args=$CAPACITY
		[ "$variant" = no-warm ] && args+=" --no-warm"
		start_servers xtx "$args"
		populate ctl
		if [ "$POPULATE_FAILED" = 1 ]; then
			echo "| $round | $variant | (populate failed) | | | | |"
			continue
		fi
		for w in tatp smallbank; do
			read -r t0 c0 o0 < <(xdp_sums)
			js=$(client "$w" --servers "$(server_ips)" $(wl_args "$w") \
				--duration "$DURATION" --warmup 1 --inflight 64 --json 2>/dev/null) || js=""
			read -r t1 c1 o1 < <(xdp_sums)
			awk -v r="$round" -v v="$variant" -v w="$w" -v t=$((t1 - t0)) -v c=$((c1 - c0)) \
				-v o=$((o1 - o0)) -v cps="$(jq -r '.committed_per_s // 0 | round' <<<"${js:-{\}}")" \
				'BEGIN { if (c > 0 && o > 0)
					printf "| %s | %s | %s | %.0f | %.1f | %.1f | %s |\n",
						r, v, w, t / c, t / o, o / c, cps
				else printf "| %s | %s | %s | (no packets) | | | |\n", r, v, w }'
		done
	done
done
