#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bench, transports: TATP and SmallBank from one client over UDP sockets and over AF_XDP,
# against the XDP echo (the ceiling), xtx and xtx-udpd, all in one run on one topology.
# Client CPU = the xtxbench process plus the client-side NAPI threads (where replies are
# received); server CPU = the servers' NAPI threads (where XDP runs) plus xtxd or xtx-udpd.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
OUT=$BUILD/bench
DURATION=${DURATION:-4}
NSERVERS=3
PREFIX=xtxa$(printf '%04x' $RANDOM)
SERVER_CPU=1
CLIENT_CPU=0
# Every server process on the servers' core (xtx-udpd is there too): the client's core is
# the client's alone, so its CPU time is what the transport costs, not what it waited.
XTXD_CPUS=$SERVER_CPU
QUEUES=2
TATP_P=${TATP_P:-10000}
SB_ACCOUNTS=${SB_ACCOUNTS:-10000}
WL_INFLIGHT=${WL_INFLIGHT:-64}

mkdir -p "$OUT"
report=$OUT/report_transport.md
: >"$OUT/transport_runs.jsonl"
source "$ROOT/scripts/bench_lib.sh"

# row KIND WORKLOAD TRANSPORT [ARGS]: one run, a table row; prints
# "committed/s packets/s client-µs/txn server-µs/txn" for the ratios.
row() {
	local kind=$1 w=$2 tr=$3 js n0 n1 t0 t1
	shift 3
	n0=$(client_napi_ns)
	t0=$(server_cpu_ns)
	js=$(client "$w" --servers "$(server_ips)" $(wl_args "$w") --transport "$tr" \
		--duration "$DURATION" --warmup 0 --inflight "$WL_INFLIGHT" --json "$@" 2>/dev/null) ||
		true
	t1=$(server_cpu_ns)
	n1=$(client_napi_ns)
	if ! jq -e .bench <<<"$js" >/dev/null 2>&1; then
		echo "| $w | $kind | $tr | | (run failed) | | | | | | |" | tee -a "$report" >&2
		echo "0 0 0 0 0"
		return
	fi
	echo "$js" | jq -c --arg k "$kind" '. + {"label": "transport", "server": $k}' \
		>>"$OUT/transport_runs.jsonl"
	# per transaction: committed and logically failed ones alike did their work
	jq -r --arg kind "$kind" --arg tr "$tr" --argjson napi $(((n1 - n0) / 1000)) \
		--argjson srv $(((t1 - t0) / 1000)) '
		def r(x): (x * 10 | round) / 10;
		(.total.committed + .total.logical) as $n |
		(if $n > 0 then r((.client_cpu_s * 1e6 + $napi) / $n) else "-" end) as $c |
		(if $n > 0 then r($napi / $n) else "-" end) as $k |
		(if $n > 0 then r($srv / $n) else "-" end) as $s |
		"| \(.bench) | \($kind) | \($tr) | \(.threads) | \(.attempts_per_s | round) | " +
		"\(.committed_per_s | round) | \(.packets / .duration_s | round) | \($c) | \($k) | " +
		"\($s) | \(r(.latency_us.p50)) |"' <<<"$js" | tee -a "$report" >&2
	jq -r --argjson napi $(((n1 - n0) / 1000)) --argjson srv $(((t1 - t0) / 1000)) '
		(.total.committed + .total.logical) as $n |
		"\(.committed_per_s) \(.packets / .duration_s) " +
		"\(if $n > 0 then (.client_cpu_s * 1e6 + $napi) / $n else 0 end) " +
		"\(if $n > 0 then $srv / $n else 0 end) " +
		"\(if $n > 0 then .client_cpu_s * 1e6 / $n else 0 end)"' <<<"$js"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

# Seconds of CPU a shell's finished children used, from its `times` output (second line).
children_cpu_s() {
	tail -n 1 | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }'
}

# ping_row TRANSPORT: PING round trips (16 requests in flight to each server), a table row;
# prints "round-trips/s client-µs/rt".
ping_row() {
	local tr=$1 out js n0 n1 t0 t1 cpu
	n0=$(client_napi_ns)
	t0=$(server_cpu_ns)
	# `times` in the same subshell as the client: its children are that subshell's
	out=$( (client ping --servers "$(server_ips)" --transport "$tr" --duration "$DURATION" \
		--inflight 15 --json 2>/dev/null || true; times) )
	t1=$(server_cpu_ns)
	n1=$(client_napi_ns)
	js=$(grep '^{' <<<"$out" || true)
	cpu=$(grep -E '^[0-9]+m' <<<"$out" | children_cpu_s)
	if ! jq -e .round_trips_per_s <<<"$js" >/dev/null 2>&1; then
		echo "| ping | echo | $tr | (run failed) | | | | |" | tee -a "$report" >&2
		echo "0 0 0"
		return
	fi
	jq -r --arg tr "$tr" --argjson cpu "$cpu" --argjson napi $(((n1 - n0) / 1000)) \
		--argjson srv $(((t1 - t0) / 1000)) '
		def r(x): (x * 100 | round) / 100;
		(.round_trips_per_s * .duration_s) as $n |
		"| ping | echo | \($tr) | \(.round_trips_per_s | round) | " +
		"\(if $n > 0 then r(($cpu * 1e6 + $napi) / $n) else "-" end) | " +
		"\(if $n > 0 then r($napi / $n) else "-" end) | " +
		"\(if $n > 0 then r($srv / $n) else "-" end) | \(r(.latency_us.p50)) |"' <<<"$js" |
		tee -a "$report" >&2
	jq -r --argjson cpu "$cpu" --argjson napi $(((n1 - n0) / 1000)) '
		(.round_trips_per_s * .duration_s) as $n |
		"\(.round_trips_per_s) \(if $n > 0 then ($cpu * 1e6 + $napi) / $n else 0 end) " +
		"\(if $n > 0 then $cpu * 1e6 / $n else 0 end)"' <<<"$js"
}

{
	echo "# xtx client transports: UDP sockets and AF_XDP"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs," \
		"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), ${DURATION}s per row"
	echo
	echo "3 servers, R = 3, veths with $QUEUES queues; 1 client thread on CPU $CLIENT_CPU with"
	echo "$WL_INFLIGHT transactions in flight; the servers' NAPI threads, xtxd and xtx-udpd on"
	echo "CPU $SERVER_CPU."
	echo "TATP $TATP_P subscribers (OCC), SmallBank $SB_ACCOUNTS accounts (2PL). CPU µs per"
	echo "transaction counts committed and logically failed ones (TATP's misses did their work)."
	echo "The echo answers every op without state: its transactions end early, so compare its"
	echo "packets/s."
	echo
} | tee "$report"

topo -x "$BUILD/bpf/xdp_pass.bpf.o" -t "$SERVER_CPU" -q "$QUEUES" up >/dev/null
declare -A RES

# ---- the ceiling: PING round trips against the XDP echo ----
{
	echo
	echo "## The ceiling: PING round trips against the XDP echo"
	echo
	echo "1 op per request, 15 requests in flight to each of the 3 servers. Client CPU counts"
	echo "xtxbench's whole process (setup included) and the client-side NAPI threads."
	echo
	echo "| bench | server | transport | round trips/s | client CPU µs/rt | of which NAPI |" \
		"server CPU µs/rt | p50 µs |"
	echo "|---|---|---|---|---|---|---|---|"
} | tee -a "$report"
start_servers echo
for tr in udp afxdp; do
	RES[ping,$tr]=$(ping_row "$tr" | tail -n 1)
done

{
	echo
	echo "## TATP and SmallBank: echo, xtx, xtx-udpd over each transport"
	echo
	echo "| workload | server | transport | threads | attempts/s | committed/s | packets/s |" \
		"client CPU µs/txn | of which NAPI | server CPU µs/txn | p50 µs |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
} | tee -a "$report"
for kind in echo xtx udpd; do
	start_servers "$kind"
	case $kind in
	xtx) populate ctl ;;
	udpd) populate txn ;;
	esac
	for w in tatp smallbank; do
		for tr in udp afxdp; do
			if [ "$kind" = echo ]; then
				RES[$kind,$w,$tr]=$(row "$kind" "$w" "$tr" --echo | tail -n 1)
			else
				RES[$kind,$w,$tr]=$(row "$kind" "$w" "$tr" | tail -n 1)
			fi
		done
	done
done

{
	echo
	read -r pu pucl pupr <<<"${RES[ping,udp]}"
	read -r pa pacl papr <<<"${RES[ping,afxdp]}"
	echo "- ceiling: round trips/s afxdp/udp $(ratio "$pa" "$pu"); client CPU per round trip" \
		"afxdp/udp $(ratio "$pacl" "$pucl") (the process alone: $(ratio "$papr" "$pupr"))"
	for w in tatp smallbank; do
		read -r xuc xup xucl _ xupr <<<"${RES[xtx,$w,udp]}"
		read -r xac xap xacl _ xapr <<<"${RES[xtx,$w,afxdp]}"
		read -r dac _ _ _ _ <<<"${RES[udpd,$w,afxdp]}"
		read -r _ eup _ _ _ <<<"${RES[echo,$w,udp]}"
		read -r _ eap _ _ _ <<<"${RES[echo,$w,afxdp]}"
		echo "- $w: client CPU per transaction afxdp/udp $(ratio "$xacl" "$xucl") (xtx;" \
			"the process alone $(ratio "$xapr" "$xupr"));" \
			"committed/s afxdp/udp $(ratio "$xac" "$xuc") (xtx);" \
			"xtx/xtx-udpd committed/s over afxdp $(ratio "$xac" "$dac");" \
			"echo packets/s with $w's transactions afxdp/udp $(ratio "$eap" "$eup")"
	done
} | tee -a "$report"

# ---- client threads: each its own AF_XDP sockets (xtx, TATP) ----
{
	echo
	echo "## Client threads over AF_XDP (xtx, TATP)"
	echo
	echo "The client threads share CPU $CLIENT_CPU: this machine has two cores, and the other"
	echo "runs the servers' XDP."
	echo
	echo "| workload | server | transport | threads | attempts/s | committed/s | packets/s |" \
		"client CPU µs/txn | of which NAPI | server CPU µs/txn | p50 µs |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
} | tee -a "$report"
start_servers xtx
populate ctl
for threads in 1 2 4; do
	row xtx tatp afxdp --threads "$threads" >/dev/null
done
echo "Report: $report"
