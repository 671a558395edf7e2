#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The newcomer's tour: three servers in namespaces, a client driving them, stats, teardown.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
N=3
PREFIX=xtxd$(printf '%04x' $RANDOM)

topo() { "$ROOT/scripts/topo.sh" -p "$PREFIX" -n "$N" "$@"; }
cleanup() {
	for ((i = 0; i < N; i++)); do
		make -s -C "$ROOT" unload IFACE="${PREFIX}s$i" NETNS="$PREFIX-s$i" >/dev/null 2>&1 || true
	done
	topo down >/dev/null 2>&1 || true
	rm -rf /var/lib/xtx/"$PREFIX"-*	# the servers' logs belong to this run only
}
trap cleanup EXIT INT TERM

if [ "$(id -u)" -ne 0 ]; then
	echo "Error: the demo creates network namespaces and loads XDP programs: run as root" >&2
	exit 1
fi

echo "== 1. Test network: $N server namespaces and a client namespace joined by veth links"
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up

echo
echo "== 2. make load: xtxd attaches the XDP server on each server link"
ips=""
for ((i = 0; i < N; i++)); do
	# a small cache, so the demo's keys also exercise xtxd's overflow store
	make -s -C "$ROOT" load IFACE="${PREFIX}s$i" NETNS="$PREFIX-s$i" ARGS="--kv-buckets 64"
	ips+="${ips:+,}10.77.$i.2"
	echo "   server $i: $("$BUILD/xtxctl" --netns "$PREFIX-s$i" --iface "${PREFIX}s$i" info |
		grep prog_id | tr -s ' ')"
done

echo
echo "== 3. xtxbench ping: 16 ops per packet, 2 threads, 3 seconds"
ip netns exec "$PREFIX-c" "$BUILD/xtxbench" ping --servers "$ips" --threads 2 --ops 16 \
	--duration 3

echo
echo "== 4. xtxbench lock2pl: DINT's 2PL lock-manager microbenchmark with the safety check"
ip netns exec "$PREFIX-c" "$BUILD/xtxbench" lock2pl --servers "$ips" --threads 2 --ops 8 \
	--keys 10000 --duration 3 --check

echo
echo "== 5. xtxbench kv --check: random KV ops, every answer checked against a reference model"
ip netns exec "$PREFIX-c" "$BUILD/xtxbench" kv --servers "$ips" --threads 2 --keys 500 --ops 8 \
	--count 5000 --check --client-id 300 | grep -v '^  '

echo
echo "== 6. A transaction by hand (xtxbench op): lock with read, commit at the primary"
op() { ip netns exec "$PREFIX-c" "$BUILD/xtxbench" op --server 10.77.0.2 --client-id 400 "$@"; }
op insert 0 424242 value=0badcafe
l=$(op occ-lock 0 424242 txn=1)
echo "   $l"
v=$(grep -o 'version=[0-9]*' <<<"$l" | cut -d= -f2)
t=$(grep -o 'token=[0-9]*' <<<"$l" | cut -d= -f2)
echo "   $(op commit-primary 0 424242 txn=1 version="$v" token="$t" value=0defaced)"
echo "   $(op read 0 424242)"

echo
echo "== 7. Server 0 counters (xtxctl stats)"
"$BUILD/xtxctl" --netns "$PREFIX-s0" --iface "${PREFIX}s0" stats | grep -v ' 0$'

echo
echo "== 8. Teardown"
cleanup
trap - EXIT
echo "demo: done"
