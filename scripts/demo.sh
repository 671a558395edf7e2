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
	make -s -C "$ROOT" load IFACE="${PREFIX}s$i" NETNS="$PREFIX-s$i"
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
echo "== 5. Server 0 counters (xtxctl stats)"
"$BUILD/xtxctl" --netns "$PREFIX-s0" --iface "${PREFIX}s0" stats | grep -v ' 0$'

echo
echo "== 6. Teardown"
cleanup
trap - EXIT
echo "demo: done"
