#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Losing ZooKeeper's data does not lose ours: 3 servers and a spare, R = 3; a server fails,
# the spare copies its way in (epoch 4, the spare holds current copies, the failed server
# stale ones). Then ZooKeeper dies with its data. Made again by hand (cluster init: epoch 1,
# the initial map), the cluster is refused by every server that served a later epoch or
# another cluster, before anything on it changes: the spare is not wiped, and the failed
# server with stale data does not serve as a replica. xtxctl cluster recover rebuilds the
# configuration from the servers' records; the servers come back with every acknowledged
# write (their dumps identical to before), bank's money conserved, replicas identical.
# checks: 24 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=4
NAME=r$$
tmp=$(mktemp -d /tmp/xtx-test-recover.XXXXXX)
trap 'cleanup; rm -rf "$tmp"' EXIT INT TERM
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }

status_json() { client "$BUILD/xtxctl" cluster status --zk "$ZK_CLIENT" --zk-name "$NAME" --json 2>&1; }
field() { grep -o "\"$1\":[0-9-]*" <<<"$2" | head -n 1 | cut -d: -f2; }
log_of() { echo "/run/xtx/$(server_ns "$1")-$(server_dev "$1").log"; }
record_of() { echo "/var/lib/xtx/$(server_ns "$1")-$(server_dev "$1")/cluster.conf"; }
load_member() {
	make -s -C "$ROOT" load IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")" \
		ARGS="--zk $(zk_for_server "$1") --zk-name $NAME --lock-lease 200ms"
}
unload() { make -s -C "$ROOT" unload IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")"; }
init() {
	client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --zk-name "$NAME" \
		--servers "$(server_ip 0),$(server_ip 1),$(server_ip 2)" --spares "$(server_ip 3)" \
		--shards 6 2>&1
}
bank() {
	client "$BUILD/xtxbench" bank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 64 \
		--client-base 10 --check --json "$@"
}
smallbank() {
	client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 500 \
		--ctl "$(all_server_ctls)" --warmup 0 --json "$@"
}
whole_at() {	# whole_at EPOCH: waits up to 60 s for that epoch with no shard short of R
	local s
	for _ in $(seq 1 600); do
		s=$(status_json)
		[ "$(field under_replicated "$s")" = 0 ] && [ "$(field epoch "$s")" = "$1" ] && break
		sleep 0.1
	done
	echo "$s"
}
dump_to() { ctl "$1" dump | sort >"$2"; }

zk_up >"$tmp/zk.out" 2>&1 || { fail "ZooKeeper up"; cat "$tmp/zk.out"; exit 1; }
out=$(init)
check "3 servers and a spare, R = 3, 6 shards ($out)" grep -q "epoch 1, 4 servers (1 spare)" <<<"$out"
for i in 0 1 2 3; do
	load_member "$i" >"$tmp/load$i.out" 2>&1 || { fail "load server $i"; cat "$tmp/load$i.out"; }
done
n=0
for i in 0 1 2 3; do
	grep -qx "server $i" "$(record_of "$i")" && grep -qx "epoch 1" "$(record_of "$i")" &&
		n=$((n + 1))
done
check "each of the 4 servers recorded epoch 1, as server i, in its data directory ($n)" \
	test "$n" -eq 4
out=$(smallbank --populate --duration 0 2>&1)
check "smallbank populated through the cluster (exit $?)" test $? -eq 0

# ---- server 0 fails; the spare copies its way in: epoch 4 ----
kill -KILL "$(cat "/run/xtx/$(server_ns 0)-$(server_dev 0).pid")"
ip -n "$(server_ns 0)" link set "$(server_dev 0)" down
s=$(whole_at 4)
check "epoch 4: server 0 out, the spare a whole replica of every shard" \
	test -n "$(grep -o '"index":3,[^}]*"replica_of":6' <<<"$s")" -a \
	-n "$(grep -o '"index":0,[^}]*"replica_of":0' <<<"$s")"
out=$(bank --duration 2s --threads 2 2>&1)
rc=$?
check "bank at epoch 4: money conserved (exit $rc, $(json_field "$out" transfers) transfers)" \
	test "$rc" -eq 0 -a "$(json_field "$out" transfers)" -gt 0
for i in 1 2 3; do
	check "server $i recorded epoch 4" grep -q "^epoch 4$" "$(record_of "$i")"
	dump_to "$i" "$tmp/before$i"
done
check "server 0, dead since epoch 1, recorded epoch 1" grep -q "^epoch 1$" "$(record_of 0)"

# ---- ZooKeeper dies with its data; the servers stop ----
zk_down
for i in 1 2 3; do unload "$i" >/dev/null 2>&1; done
zk_up >"$tmp/zk2.out" 2>&1 || { fail "ZooKeeper up again"; cat "$tmp/zk2.out"; exit 1; }

# ---- the cluster made again by hand: epoch 1, the initial map, a new id ----
out=$(init)
check "cluster init on the empty ZooKeeper: epoch 1 again ($out)" grep -q "epoch 1, 4 servers" <<<"$out"
load_member 3 >"$tmp/spare.out" 2>&1
rc=$?
check "the spare (epoch 4's replica of every shard) refuses it (exit $rc)" \
	test "$rc" -ne 0 -a -n "$(grep "ZooKeeper holds another cluster .*recover" "$tmp/spare.out")"
[ "$rc" -ne 0 ] || sed 's/^/    /' "$tmp/spare.out"
check "... and its store and record are as they were (nothing set aside, epoch 4)" \
	test -z "$(ls -d "$(dirname "$(record_of 3)")"/fresh-* 2>/dev/null)" -a \
	-n "$(grep -x "epoch 4" "$(record_of 3)")"
ip -n "$(server_ns 0)" link set "$(server_dev 0)" up
ip -n "$(server_ns 0)" route replace 10.77.0.0/16 via 10.77.0.1 dev "$(server_dev 0)"
load_member 0 >"$tmp/stale.out" 2>&1
rc=$?
check "the failed server with stale data refuses it too: not a replica again (exit $rc)" \
	test "$rc" -ne 0 -a -n "$(grep "ZooKeeper holds another cluster" "$tmp/stale.out")"
s=$(status_json)
check "no server of the remade cluster is live" test -z "$(grep -o '"live":true' <<<"$s")"

# ---- recover from the servers' records ----
recover() { client "$BUILD/xtxctl" cluster recover --zk "$ZK_CLIENT" --zk-name "$NAME" "$@" 2>&1; }
epoch_now() { field epoch "$(status_json)"; }
out=$(recover --force "$(record_of 0)")
check "recover from the stale server's record alone is refused: the others' may be newer" \
	test -n "$(grep "no record of server 1" <<<"$out")" -a "$(epoch_now)" = 1
sed 's/^id .*/id 00000000000000aa/' "$(record_of 2)" >"$tmp/other.conf"
out=$(recover "$(record_of 1)" "$tmp/other.conf")
check "records of two clusters are refused ($(grep -o 'records of different clusters' <<<"$out"))" \
	test -n "$(grep "records of different clusters" <<<"$out")" -a "$(epoch_now)" = 1
all=("$(record_of 0)" "$(record_of 1)" "$(record_of 2)" "$(record_of 3)")
out=$(recover "${all[@]}")
check "the cluster made again by hand is not replaced without --force" \
	test -n "$(grep "is another cluster .* --force replaces it" <<<"$out")" -a "$(epoch_now)" = 1
out=$(recover --force "${all[@]}")
check "cluster recover --force: epoch 20, epoch 4's map from the 4 records ($out)" \
	grep -q "recovered at .*: epoch 20, the map of epoch 4 (.*-s1-.*), from the records of 4 servers," <<<"$out"
for i in 1 2 3; do
	load_member "$i" >"$tmp/reload$i.out" 2>&1 || { fail "reload server $i"; cat "$tmp/reload$i.out"; }
done
s=$(whole_at 20)
check "epoch 20 served: no shard short of R, the spare a replica of all 6, server 0 of none" \
	test "$(field epoch "$s")" = 20 -a -n "$(grep -o '"index":3,[^}]*"replica_of":6' <<<"$s")" \
	-a -n "$(grep -o '"index":0,[^}]*"replica_of":0' <<<"$s")"
same=0
for i in 1 2 3; do
	dump_to "$i" "$tmp/after$i"
	cmp -s "$tmp/before$i" "$tmp/after$i" && same=$((same + 1))
done
check "servers 1-3 serve exactly what they held before ZooKeeper was lost ($same of 3 dumps, $(wc -l <"$tmp/before1") keys)" \
	test "$same" -eq 3
out=$(bank --duration 2s --threads 2 2>&1)
rc=$?
check "bank after the recovery: the money of every transfer before it is there (exit $rc)" \
	test "$rc" -eq 0
out=$(smallbank --duration 2s --verify 2>&1)
rc=$?
check "smallbank after the recovery: --verify, replicas identical (exit $rc)" \
	test "$rc" -eq 0 -a -n "$(grep -o '"violations":0' <<<"$out")"
[ "$rc" -eq 0 ] || grep -v '^{' <<<"$out" | tail -n 10 | sed 's/^/    /'
# the failed server, started under the recovered epoch, holds nothing and copies nothing stale
load_member 0 >"$tmp/back0.out" 2>&1
check "server 0 back under epoch 20: a replica of no shard, it starts empty" \
	grep -q "replica of no shard: it starts empty" "$(log_of 0)"
echo garbage >"$tmp/bad.conf"
out=$(recover --force "$tmp/bad.conf")
check "a record nobody wrote is refused, not taken as epoch 0" \
	test -n "$(grep "not a server's record" <<<"$out")" -a "$(epoch_now)" = 20
finish
