#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A server dies and the cluster goes on: 3 servers, R = 3, the configuration in a real
# ZooKeeper. Server 1 is cut off (its link down for good); bank clients that started by the
# old configuration find it silent, fail what needed it (nothing written), log past it where it
# was a backup, and take on the new epoch once the manager moved it out of every shard (its
# backups promoted): money conserved, the history serializable (FAILED ones wrote nothing),
# the replicas left identical, and a new run commits through the two servers left.
# Not covered: a transaction whose log append to the dying primary was in flight (the promoted
# primary does not take over logged transactions' locks yet; such a transaction keeps trying).
# checks: 14 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3
NAME=f$$
tmp=$(mktemp -d /tmp/xtx-test-failover.XXXXXX)
trap 'cleanup; rm -rf "$tmp"' EXIT INT TERM
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }
zk_up >"$tmp/zk.out" 2>&1 || { fail "ZooKeeper up"; cat "$tmp/zk.out"; exit 1; }

status_json() { client "$BUILD/xtxctl" cluster status --zk "$ZK_CLIENT" --name "$NAME" --json 2>&1; }
bank() {
	client "$BUILD/xtxbench" bank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 32 \
		--timeout 1ms --json "$@"
}

client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --name "$NAME" \
	--servers "$(all_server_ips)" --shards 12 >/dev/null
for i in 0 1 2; do
	make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
		ARGS="--zk $(zk_for_server "$i") --zk-name $NAME --lock-lease 200ms \
		--resolve-after 1s" >/dev/null || { fail "load server $i"; exit 1; }
done
out=$(bank --duration 1s 2>&1)
check "accounts created through the cluster (exit $?)" grep -q '"transfers"' <<<"$out"

# ---- server 1 cut off for good; clients by the old configuration run on ----
ip -n "$(server_ns 1)" link set "$(server_dev 1)" down
t0=$SECONDS
bank --no-setup --threads 2 --duration 8s --check --history "$tmp/hist" >"$tmp/bank.out" 2>&1 &
pid=$!
# the session expires 2 s after the last heartbeat, and the manager waits 1 s more
for _ in $(seq 1 80); do
	grep -q '"epoch":2' <<<"$(status_json)" && break
	sleep 0.1
done
moved=$((SECONDS - t0))
s=$(status_json)
check "the manager moved server 1 out (epoch 2 after ${moved} s)" \
	grep -q '"index":1,"addr":"10.77.1.2","live":false,"primary_of":0,"replica_of":0' <<<"$s"
wait "$pid"
rc=$?
out=$(cat "$tmp/bank.out")
n=$(json_field "$out" transfers)
check "the run through the failure: money conserved, every transaction resolved (exit $rc)" \
	test "$rc" -eq 0
[ "$rc" -eq 0 ] || tail -n 5 <<<"$out"
check "... transfers committed (${n:-0})" test "${n:-0}" -gt 100
f=$(json_field "$out" failed)
check "... it met the silent server: transactions failed before the move (${f:-0})" \
	test "${f:-0}" -gt 0
r=$(json_field "$out" reconfigurations)
check "... the clients took on the new epoch (${r:-0} times)" test "${r:-0}" -gt 0
out=$("$BUILD/xtxbench" check-history --max-print 3 "$tmp"/hist* 2>&1)
rc=$?
check "... its history is serializable ($(grep -o '^history: [0-9]* transactions' <<<"$out"), exit $rc)" \
	test "$rc" -eq 0
a=$(ctl 0 dump --table 15 | sort)
check "the replicas left hold identical accounts ($(wc -l <<<"$a") rows)" \
	test -n "$a" -a "$a" = "$(ctl 2 dump --table 15 | sort)"
check "... all 32 of them" test "$(wc -l <<<"$a")" -eq 32

# ---- a new client after the failure: the cluster serves every shard ----
out=$(bank --no-setup --threads 2 --duration 2s --check 2>&1)
rc=$?
n=$(json_field "$out" transfers)
check "a run after the failure: money conserved (exit $rc)" test "$rc" -eq 0
check "... and every transfer went through the two servers left (${n:-0})" test "${n:-0}" -gt 500
f=$(json_field "$out" failed)
check "... none failed for an unreachable server (${f:-0})" test "${f:-1}" -eq 0
sleep 0.5
h=0
for i in 0 2; do
	l=$(ctl "$i" stats --json | grep -o '"locks":{[^}]*}')
	h=$((h + $(grep -o '"held":[0-9]*' <<<"$l" | cut -d: -f2) - \
		$(grep -o '"reclaimable":[0-9]*' <<<"$l" | cut -d: -f2)))
done
check "no lock left refusing requests on the servers left ($h)" test "$h" -eq 0
out=$(client "$BUILD/xtxbench" op --server "$(server_ip 1)" --epoch 1 --timeout 50ms read 15 1 2>&1)
check "server 1 never answers again: it is cut off (and fenced)" grep -q "no answer" <<<"$out"
finish
