#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bench-scale: how one server scales with its cores. One server (R = 1) on a veth with Q
# queues; its NAPI threads and its process (xtxd or xtx-udpd) on Q cores of their own; an
# AF_XDP client on the other cores. For Q = 1, 2, 4, ... up to half the machine: the XDP echo,
# xtx and xtx-udpd side by side on TATP and SmallBank; committed/s, server CPU per committed
# transaction, both sides' utilisation, and which side was the limit.
#
# Needs bash, perl (core modules), coreutils, taskset and an `ip` with netns: it runs from
# the built tree or from the bundle `make bundle` writes (build/bundle, see docs/performance.md).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=${OUT:-$BUILD/bench}
# a bundle carries its own libraries and tools
if [ -d "$ROOT/lib" ]; then
	export LD_LIBRARY_PATH=$ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LIBXDP_OBJECT_PATH=$ROOT/lib/bpf
fi
if [ -d "$ROOT/tools" ]; then export PATH=$ROOT/tools:$PATH; fi

NCPU=$(nproc)
DURATION=${DURATION:-5}
INFLIGHT=${INFLIGHT:-256}
TATP_P=${TATP_P:-100000}
SB_ACCOUNTS=${SB_ACCOUNTS:-100000}
WORKLOADS=${WORKLOADS:-tatp smallbank}
KINDS=${KINDS:-echo xtx udpd}
# TATP's ~10.75 rows per subscriber and SmallBank's 2 per account, with headroom
CAPACITY=${CAPACITY:-$(((TATP_P * 11 + SB_ACCOUNTS * 2) * 6 / 5))}
# a side this busy or busier was the limit
BUSY=${BUSY:-90}
PREFIX=xtxq$(printf '%04x' $RANDOM)
SERVER_IP=10.77.0.2

default_qs() {
	local q=1 qs=""
	while ((q <= NCPU / 2 || q == 1)); do
		qs+="$q "
		q=$((q * 2))
	done
	echo "$qs"
}
QS=${QS:-$(default_qs)}

[ "$(id -u)" = 0 ] || { echo "Error: bench-scale needs root (network namespaces, XDP)" >&2; exit 1; }
for t in ip taskset perl; do
	command -v "$t" >/dev/null || { echo "Error: bench-scale needs $t on PATH" >&2; exit 1; }
done
for b in xtxd xtx-udpd xtxbench xtxctl bpf/xdp_pass.bpf.o; do
	[ -e "$BUILD/$b" ] || { echo "Error: $BUILD/$b is missing: run make first" >&2; exit 1; }
done
mkdir -p "$OUT"
report=$OUT/report_scale.md
runs=$OUT/scale_runs.jsonl
: >"$runs"

ns_s=$PREFIX-s0
dev_s=${PREFIX}s0
topo() { "$ROOT/scripts/topo.sh" -p "$PREFIX" -n 1 "$@"; }

# Cores: the client keeps CPU 0 (housekeeping lands there), the server takes 1..Q, the
# client every core above Q as well.
server_cpus() { seq -s, 1 "$1"; }
client_cpus() {
	local c l=""
	for ((c = $1 + 1; c < NCPU; c++)); do l+=",$c"; done
	echo "$l"
}

SERVER_KIND=none
udpd_pid=""
stop_server() {
	case $SERVER_KIND in
	xtx | echo) "$BUILD/xtxctl" --netns "$ns_s" --iface "$dev_s" unload --force >/dev/null 2>&1 ||
		true ;;
	udpd)
		if [ -n "$udpd_pid" ]; then
			kill "$udpd_pid" 2>/dev/null || true
			while kill -0 "$udpd_pid" 2>/dev/null; do sleep 0.1; done
		fi
		udpd_pid="" ;;
	esac
	SERVER_KIND=none
	rm -rf "/var/lib/xtx/$PREFIX-udpd" "/var/lib/xtx/$ns_s-$dev_s"
}
cleanup() {
	stop_server
	topo down >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

# start_server KIND Q: the server on cores 1..Q, its process there too.
start_server() {
	local kind=$1 q=$2 cpus
	cpus=$(server_cpus "$q")
	stop_server
	case $kind in
	echo) "$BUILD/xtxd" --netns "$ns_s" --iface "$dev_s" --daemon --cpus "$cpus" --echo >/dev/null ;;
	xtx) "$BUILD/xtxd" --netns "$ns_s" --iface "$dev_s" --daemon --cpus "$cpus" \
		--capacity "$CAPACITY" >/dev/null 2>&1 ;;
	udpd)
		taskset -c "$cpus" "$BUILD/xtx-udpd" --netns "$ns_s" --bind "$SERVER_IP" \
			--threads "$q" --cpus "$cpus" --data-dir "/var/lib/xtx/$PREFIX-udpd" --daemon \
			--pidfile "$OUT/scale_udpd.pid" >/dev/null
		udpd_pid=$(cat "$OUT/scale_udpd.pid") ;;
	esac
	SERVER_KIND=$kind
}

# The server's NAPI kthreads ("napi/DEV-ID", cut at 15 characters) and its process.
napi_pids() {
	local f comm key="napi/$dev_s-"
	key=${key:0:15}
	for f in /proc/[0-9]*/comm; do
		{ read -r comm <"$f"; } 2>/dev/null || continue
		[[ $comm == "$key"* ]] || continue
		f=${f#/proc/}
		echo "${f%/comm}"
	done | paste -sd,
}
daemon_pid() {
	if [ "$SERVER_KIND" = udpd ]; then echo "$udpd_pid"; else cat "/run/xtx/$ns_s-$dev_s.pid"; fi
}

bench() { ip netns exec "$PREFIX-c" taskset -c "$CPUS_C" "$BUILD/xtxbench" "$@"; }
wl_args() {
	case $1 in
	tatp) echo "--subscribers $TATP_P" ;;
	smallbank) echo "--accounts $SB_ACCOUNTS" ;;
	esac
}
populate() {
	local how=$1 w wa
	for w in $WORKLOADS; do
		read -r -a wa <<<"$(wl_args "$w")"
		if [ "$how" = ctl ]; then
			bench "$w" --servers "$SERVER_IP" "${wa[@]}" --ctl "$ns_s:$dev_s" --populate \
				--duration 0 >/dev/null 2>&1
		else
			bench "$w" --servers "$SERVER_IP" "${wa[@]}" --populate --populate-via txn \
				--timeout 20ms --duration 0 >/dev/null 2>&1
		fi || { echo "Error: populating $w for $SERVER_KIND failed" >&2; return 1; }
	done
}

# Busy jiffies and all jiffies of each CPU: "cpuN busy total" lines.
cpu_jiffies() {
	awk '/^cpu[0-9]/ { print $1, $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat
}
# util BEFORE AFTER CPULIST: the average busy % of those CPUs between two cpu_jiffies.
util() {
	perl -e '
		my ($a, $b, $list) = @ARGV; my (%p, $busy, $all);
		for (split /\n/, $a) { my @f = split; $p{$f[0]} = [$f[1], $f[2]] }
		my %want = map { ("cpu$_" => 1) } grep { length } split /,/, $list;
		for (split /\n/, $b) { my @f = split; next unless $want{$f[0]};
			$busy += $f[1] - $p{$f[0]}[0]; $all += $f[2] - $p{$f[0]}[1] }
		printf "%.0f", $all ? 100 * $busy / $all : 0' "$1" "$2" "$3"
}

# row Q KIND WORKLOAD: one measured run; appends its JSON (with Q, kind, utilisations) to runs.
row() {
	local q=$1 kind=$2 w=$3 c0 c1 js extra=() us uc wa
	[ "$kind" = echo ] && extra=(--echo)
	read -r -a wa <<<"$(wl_args "$w")"
	c0=$(cpu_jiffies)
	js=$(bench "$w" --servers "$SERVER_IP" "${wa[@]}" --transport afxdp \
		--threads "$THREADS" --inflight "$INFLIGHT" --duration "$DURATION" --warmup 1 \
		--cpu-of "napi=$(napi_pids)" --cpu-of "daemon=$(daemon_pid)" --json "${extra[@]}" \
		2>/dev/null) || true
	c1=$(cpu_jiffies)
	us=$(util "$c0" "$c1" "$CPUS_S")
	uc=$(util "$c0" "$c1" "$CPUS_C")
	perl -MJSON::PP -e '
		my ($js, $q, $kind, $w, $us, $uc, $thr) = @ARGV;
		my $r = eval { decode_json($js) } || { failed => JSON::PP::true };
		@$r{qw(q kind workload server_util client_util client_threads)} =
			($q + 0, $kind, $w, $us + 0, $uc + 0, $thr + 0);
		print encode_json($r), "\n"' "$js" "$q" "$kind" "$w" "$us" "$uc" "$THREADS" >>"$runs"
	echo "Q=$q $kind $w: server $us% busy, client $uc% busy" >&2
}

echo "bench-scale: Q = $QS on $NCPU CPUs; $WORKLOADS; $KINDS; ${DURATION}s runs" >&2
for q in $QS; do
	if ((q >= NCPU)); then
		echo "Q=$q: skipped, this machine has $NCPU CPUs" >&2
		continue
	fi
	CPUS_S=$(server_cpus "$q")
	CPUS_C=0$(client_cpus "$q")
	# one client thread per client core
	THREADS=$(($(tr , '\n' <<<"$CPUS_C" | wc -l)))
	topo -q "$q" -x "$BUILD/bpf/xdp_pass.bpf.o" -t "$CPUS_S" up >/dev/null
	for kind in $KINDS; do
		start_server "$kind" "$q"
		case $kind in
		xtx) populate ctl ;;
		udpd) populate txn ;;
		esac
		for w in $WORKLOADS; do row "$q" "$kind" "$w"; done
	done
	stop_server
	topo down >/dev/null
done

# ---- the report: a table, ratios, a plot ----
perl "$ROOT/scripts/scale_report.pl" "$runs" "$OUT/scale.svg" "$BUSY" \
	"$(date -u '+%Y-%m-%d %H:%M UTC')" "$NCPU" "$DURATION" "$TATP_P" "$SB_ACCOUNTS" \
	"$INFLIGHT" | tee "$report"
echo "bench-scale: report $report, plot $OUT/scale.svg, runs $runs" >&2
