#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make demo: three replicated servers in namespaces, TATP and SmallBank checked, a results table,
# then a server killed under SmallBank in a cluster held in ZooKeeper.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
N=3
PREFIX=xtxd$(printf '%04x' $RANDOM)
SECONDS_PER_RUN=${SECONDS_PER_RUN:-3}
out=$(mktemp -d /tmp/xtx-demo.XXXXXX)

topo() { "$ROOT/scripts/topo.sh" -p "$PREFIX" -n "$N" "$@"; }
cleanup() {
	for ((i = 0; i < N; i++)); do
		make -s -C "$ROOT" unload FORCE=1 IFACE="${PREFIX}s$i" NETNS="$PREFIX-s$i" >/dev/null 2>&1 || true
	done
	topo down >/dev/null 2>&1 || true
	rm -rf /var/lib/xtx/"$PREFIX"-* "$out"	# the servers' logs belong to this run only
}
trap cleanup EXIT INT TERM

if [ "$(id -u)" -ne 0 ]; then
	echo "Error: the demo creates network namespaces and loads XDP programs: run as root" >&2
	exit 1
fi

ips=""
ctls=""
for ((i = 0; i < N; i++)); do
	ips+="${ips:+,}10.77.$i.2"
	ctls+="${ctls:+,}$PREFIX-s$i:${PREFIX}s$i"
done
client() { ip netns exec "$PREFIX-c" "$BUILD/xtxbench" "$@"; }

echo "== 1. Test network: $N server namespaces and a client namespace joined by veth links"
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null

echo "== 2. make load: xtxd attaches the XDP server on each link; every key has 3 replicas"
for ((i = 0; i < N; i++)); do
	make -s -C "$ROOT" load IFACE="${PREFIX}s$i" NETNS="$PREFIX-s$i" ARGS="--peers $ips" \
		>/dev/null
	echo "   server $i (10.77.$i.2): $("$BUILD/xtxctl" --netns "$PREFIX-s$i" \
		--iface "${PREFIX}s$i" info | grep prog_id | tr -s ' ')"
done

# run NAME XTXBENCH-ARGS...: a --json run kept for the table; its progress on the screen.
run() {
	local name=$1
	shift
	echo
	echo "== $name"
	if client "$@" --json >"$out/$name.json" 2>"$out/$name.err"; then
		echo "   passed its checks"
	else
		echo "   FAILED:"
		sed 's/^/   /' "$out/$name.err" | tail -n 15
		failed=1
	fi
}
failed=0

run "tatp-occ" tatp --servers "$ips" --ctl "$ctls" --subscribers 2000 --populate \
	--duration "$SECONDS_PER_RUN" --warmup 1 --verify
run "smallbank-2pl" smallbank --servers "$ips" --ctl "$ctls" --accounts 1000 --populate \
	--duration "$SECONDS_PER_RUN" --warmup 1 --verify
run "tatp-hades" tatp --servers "$ips" --ctl "$ctls" --subscribers 2000 --protocol hades \
	--duration "$SECONDS_PER_RUN" --warmup 1 --verify
run "smallbank-occ" smallbank --servers "$ips" --ctl "$ctls" --accounts 1000 --protocol occ \
	--duration "$SECONDS_PER_RUN" --warmup 1 --verify

echo
echo "== An application transaction (build/examples/transfer, libxtx)"
{ ip netns exec "$PREFIX-c" "$BUILD/examples/transfer" --servers "$ips" 7 8 25 || true; } |
	sed 's/^/   /'

echo
echo "== Results (3 servers, 3 replicas, 1 client thread, 16 transactions in flight)"
echo
printf '%-16s %12s %12s %9s %9s %9s %8s %8s\n' workload "attempts/s" "committed/s" "p50 us" \
	"p99 us" "aborts" "ops/pkt" verify
for f in "$out"/*.json; do
	name=$(basename "$f" .json)
	jq -r --arg n "$name" '
		def pct(a; b): if b > 0 then (a * 1000 / b | round) / 10 else 0 end;
		[$n, (.attempts_per_s | round), (.committed_per_s | round), .latency_us.p50,
		 .latency_us.p99, "\(pct(.total.aborted; .total.attempted))%",
		 .ops_per_packet_avg, (if .violations == 0 then "ok" else "FAILED" end)] |
		@tsv' "$f" 2>/dev/null |
		awk -F'\t' '{ printf "%-16s %12s %12s %9s %9s %9s %8s %8s\n", $1, $2, $3, $4, $5, \
			$6, $7, $8 }' || echo "$name: no result"
done
echo
echo "TATP committed/s counts logically successful transactions (FaSST/DINT); verify"
echo "checks each workload's invariants (clients/bench/bench_tatp.c, bench_smallbank.c) and"
echo "that all 3 replicas hold identical data."

echo
echo "== A server dies under SmallBank: 3 servers and a spare in a cluster held in ZooKeeper,"
echo "   server 1 killed (the lease and session run out, the manager promotes a backup, the"
echo "   servers decide what it replicated before serving, the spare copies the shards left short"
echo "   of R and counts as a replica once whole, --verify checks every replica;"
echo "   scripts/bench_failover.sh)"
echo
if NSERVERS=4 ACCOUNTS=2000 DURATION=12 KILL_AT=3 OUT="$out" "$ROOT/scripts/bench_failover.sh" \
	>"$out/failover.txt" 2>&1; then
	grep -v "^Timeline\|^failover: populating\|^## " "$out/failover.txt" | sed 's/^/   /'
else
	echo "   FAILED:"
	tail -n 30 "$out/failover.txt" | sed 's/^/   /'
	failed=1
fi

echo
echo "== Teardown"
cleanup

trap - EXIT
[ "$failed" = 0 ] || { echo "demo: a run failed its checks"; exit 1; }
echo "demo: done"
