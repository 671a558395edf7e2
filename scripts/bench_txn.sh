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

mkdir -p "$OUT"
report=$OUT/report_txn.md
: >"$OUT/txn_runs.jsonl"

source "$ROOT/scripts/bench_lib.sh"
source "$ROOT/scripts/bench_wl.sh"

# bank_row LABEL ARGS...: one transfer run; prints a table row and keeps the JSON.
bank_row() {
	local label=$1 js t0 t1
	shift
	t0=$(server_cpu_ns)
	js=$(client bank --servers "$(server_ips)" --no-setup --accounts 100000 --audit-pct 0 \
		--duration "${DURATION}s" --json "$@")
	t1=$(server_cpu_ns)
	echo "$js" | jq -c --arg name "$label" '. + {"label": $name}' >>"$OUT/txn_runs.jsonl"
	jq -r --arg name "$label" --argjson us $(((t1 - t0) / 1000)) '
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
	echo "NAPI threads (XDP) on CPU $SERVER_CPU, xtxd and xtx-udpd on CPU $(server_proc_cpus)."
	echo "Server CPU µs/txn = NAPI threads + xtxd (or xtx-udpd) CPU time over committed"
	echo "transactions; in the workload tables over xtxbench's measured window alone (no"
	echo "populate, no warmup), with xtx-udpd logging durably as xtxd does (segments with"
	echo "CRCs, fdatasync every 2 ms)."
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


# ---- the three protocols by messages (bank transfers, xtx) ----
{
	echo
	echo "## OCC, 2PL and HADES per committed transfer (bank, 10k accounts, xtx)"
	echo
	echo "| protocol | in flight | committed/s | p50 µs | p99 µs | round trips | packets | ops |" \
		"aborts |"
	echo "|---|---|---|---|---|---|---|---|---|"
} | tee -a "$report"
client bank --servers "$(server_ips)" --accounts 10000 --duration 1s --audit-pct 0 >/dev/null
for inflight in 1 16; do
	for proto in occ 2pl hades; do
		# a table changes hands between HADES and the lock protocols only once the other
		# family's last use is a lease old (bpf/lib/family.h): let that pass unmeasured
		client bank --servers "$(server_ips)" --no-setup --accounts 10000 --audit-pct 0 \
			--duration 1.5s --protocol "$proto" >/dev/null 2>&1 || true
		js=$(client bank --servers "$(server_ips)" --no-setup --accounts 10000 --audit-pct 0 \
			--duration "${DURATION}s" --json --protocol "$proto" --inflight "$inflight") ||
			continue
		echo "$js" | jq -c '. + {"label": "protocols"}' >>"$OUT/txn_runs.jsonl"
		jq -r 'def r(x): (x * 100 | round) / 100;
			"| \(.protocol) | \(.inflight) | \(.committed_per_s | round) | \(.p50_us) | " +
			"\(.p99_us) | \(r(.rounds_per_committed_rw)) | \(r(.packets_per_committed_rw)) | " +
			"\(r(.ops_per_committed_rw)) | \(if .committed + .aborted > 0 then
			(.aborted * 1000 / (.committed + .aborted) | round) / 10 else 0 end)% |"' \
			<<<"$js" | tee -a "$report"
	done
done

# ---- TATP and SmallBank: ceiling, xtx, xtx-udpd ----

{
	echo
	echo "## TATP and SmallBank, cache-resident: ceiling (XDP echo), xtx, xtx-udpd (same client, same topology)"
	echo
	echo "Cache-resident data sets (every key fits xtxd's default kernel cache; the spec-scale"
	echo "rows follow below). TATP: $TATP_P subscribers, OCC; SmallBank: $SB_ACCOUNTS accounts, 2PL; 1 client thread,"
	echo "$WL_INFLIGHT transactions in flight. committed/s: TATP's successful transactions (FaSST/DINT),"
	echo "SmallBank's commits. The ceiling answers every op OK without state, so its"
	echo "transactions mostly end as logical failures: compare attempts/s there. Server CPU"
	echo "µs/txn counts committed and logically failed transactions (both did their work)."
	echo
	wl_table_header
} | tee -a "$report"
declare -A RES
sysctl -qw kernel.bpf_stats_enabled=1
for kind in echo xtx udpd; do
	start_servers "$kind"
	PROG_IDS=""
	if [ "$kind" != udpd ]; then PROG_IDS=$(prog_ids); fi
	case $kind in
	xtx) populate ctl ;;
	udpd) populate txn ;;
	esac
	for w in tatp smallbank; do
		if [ "$kind" = echo ]; then
			RES[$kind,$w]=$(wl_row "$kind" "$w" --echo | tail -n 1)
		else
			RES[$kind,$w]=$(wl_row "$kind" "$w" | tail -n 1)
		fi
	done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
{
	echo
	echo "The ceiling's transactions end after their first reads (echoed values are empty),"
	echo "so its transactions/s are not comparable; what it measures is the packets/s this"
	echo "client and link sustain, and xtx's share of that is the ratio below."
	echo
	for w in tatp smallbank; do
		read -r xc xa xp xu xn xd <<<"${RES[xtx,$w]}"
		read -r uc ua up uu un ud <<<"${RES[udpd,$w]}"
		read -r ec ea ep eu en ed <<<"${RES[echo,$w]}"
		echo "- $w: xtx/udpd committed/s $(ratio "$xc" "$uc"); server CPU per transaction" \
			"xtx/udpd $(ratio "$xu" "$uu") (xtx $(printf '%.2f' "$xu") µs: NAPI+XDP" \
			"$(printf '%.2f' "$xn"), xtxd $(printf '%.2f' "$xd"); xtx-udpd $(printf '%.2f' "$uu")" \
			"µs: NAPI $(printf '%.2f' "$un"), process $(printf '%.2f' "$ud"));" \
			"xtx/ceiling packets/s $(ratio "$xp" "$ep")" \
			"(xtx $(printf '%.0f' "$xp"), ceiling $(printf '%.0f' "$ep"))"
	done
} | tee -a "$report"

# ---- TATP and SmallBank at spec scale: xtx and xtx-udpd side by side ----
# TATP's 1M subscribers are 10.7M rows, SmallBank's 100k accounts per client thread 200k;
# with R = 3 on 3 servers every server holds all of them: xtxd --capacity sizes for that.
SPEC_TATP_P=${SPEC_TATP_P:-1000000}
SPEC_SB_ACCOUNTS=${SPEC_SB_ACCOUNTS:-100000}
SPEC_CAPACITY=${SPEC_CAPACITY:-11500000}
{
	echo
	echo "## TATP and SmallBank at spec scale: xtx (xtxd --capacity $SPEC_CAPACITY) and xtx-udpd"
	echo
	echo "TATP: $SPEC_TATP_P subscribers (about 10.75 rows each), OCC; SmallBank: $SPEC_SB_ACCOUNTS accounts,"
	echo "2PL; each server holds every row (R = 3 on 3 servers). xtx is populated through xtxctl"
	echo "load, xtx-udpd through transactions; populated once per server kind. Columns as above."
	echo
	wl_table_header
} | tee -a "$report"
declare -A SPEC_POP
cache_tatp_p=$TATP_P
cache_sb_accounts=$SB_ACCOUNTS
TATP_P=$SPEC_TATP_P
SB_ACCOUNTS=$SPEC_SB_ACCOUNTS
for kind in xtx udpd; do
	if [ "$kind" = xtx ]; then
		start_servers xtx "--capacity $SPEC_CAPACITY"
		PROG_IDS=$(prog_ids)
		t0=$(date +%s.%N)
		populate ctl
	else
		start_servers udpd
		t0=$(date +%s.%N)
		populate txn
	fi
	SPEC_POP[$kind]=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	for w in tatp smallbank; do
		# a partial data set is not spec scale: no row measured on it
		if [ "$POPULATE_FAILED" = 1 ]; then
			echo "| $w | $kind | (populate failed) | | | | | | | | | | |" | tee -a "$report"
			continue
		fi
		wl_row "$kind" "$w" >/dev/null
	done
done
TATP_P=$cache_tatp_p
SB_ACCOUNTS=$cache_sb_accounts
{
	echo
	echo "Populate wall time (TATP and SmallBank, every replica): xtx ${SPEC_POP[xtx]} s," \
		"xtx-udpd ${SPEC_POP[udpd]} s."
} | tee -a "$report"

# ---- load-latency curves (DINT Figures 6-7): TATP on xtx and xtx-udpd ----
curve="$OUT/load_latency.dat"
: >"$curve"
for kind in xtx udpd; do
	start_servers "$kind"
	if [ "$kind" = xtx ]; then populate ctl; else populate txn; fi
	echo "# $kind" >>"$curve"
	for inflight in 1 2 4 8 16 32 64; do
		client tatp --servers "$(server_ips)" $(wl_args tatp) --duration 2 --warmup 0.5 \
			--inflight "$inflight" --json 2>/dev/null |
			jq -r '"\(.committed_per_s) \(.latency_us.p50) \(.latency_us.p99)"' >>"$curve" ||
			true
	done
	printf '\n\n' >>"$curve"
done
if command -v gnuplot >/dev/null; then
	gnuplot <<-EOF
		set terminal png size 900,600
		set output "$OUT/load_latency.png"
		set title "TATP (OCC, 3 servers x 3 replicas): load vs latency, 1 client thread"
		set xlabel "committed transactions/s"
		set ylabel "median latency (us)"
		set logscale y
		set key top left
		plot "$curve" index 0 using 1:2 with linespoints title "xtx (XDP)", \
		     "$curve" index 1 using 1:2 with linespoints title "xtx-udpd (kernel UDP)"
	EOF
	echo "Load-latency plot: $OUT/load_latency.png (data: $curve)" | tee -a "$report"
fi

# ---- protocols on the workloads, and HADES' filter size (xtx) ----
{
	echo
	echo "## OCC, 2PL and HADES on TATP and SmallBank (xtx)"
	echo
	wl_table_header
} | tee -a "$report"
start_servers xtx
PROG_IDS=$(prog_ids)
populate ctl
for w in tatp smallbank; do
	for proto in occ 2pl hades; do
		wl_row xtx "$w" --protocol "$proto" >/dev/null
	done
done

{
	echo
	echo "## HADES filter size (SmallBank, xtxd --hades-bf-bits M --hades-exact)"
	echo
	echo "| bits | committed/s | p50 µs | squashes | false-positive squashes | nacks |"
	echo "|---|---|---|---|---|---|"
} | tee -a "$report"
hades_counter() {
	local i n=0
	for ((i = 0; i < NSERVERS; i++)); do
		n=$((n + $("$BUILD/xtxctl" --netns "$(server_ns "$i")" --iface "$(server_dev "$i")" \
			stats --json | jq ".counters.$1 // 0")))
	done
	echo "$n"
}
for bits in 256 512 1024 2048; do
	start_servers xtx "--hades-bf-bits $bits --hades-exact"
	client smallbank --servers "$(server_ips)" $(wl_args smallbank) --ctl "$(ctl_list)" \
		--populate --duration 0 >/dev/null 2>&1 || true
	js=$(client smallbank --servers "$(server_ips)" $(wl_args smallbank) --protocol hades \
		--duration "$DURATION" --warmup 1 --json 2>/dev/null) || continue
	echo "| $bits | $(jq '.committed_per_s | round' <<<"$js") |" \
		"$(jq '.latency_us.p50' <<<"$js") | $(hades_counter hades_squash) |" \
		"$(hades_counter hades_fp_squash) | $(hades_counter hades_nack) |" | tee -a "$report"
done
{
	echo
	echo "False positives per membership probe (build/bench/bloom_fp; HADES Table IV reports"
	echo "0.04% squashes at 1 Kbit):"
	echo
	echo '```'
	"$BUILD/bench/bloom_fp" 2>&1
	echo '```'
} | tee -a "$report"

echo
echo "report: $report, raw runs: $OUT/txn_runs.jsonl"

