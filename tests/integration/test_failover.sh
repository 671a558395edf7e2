#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A server dies under load and the cluster goes on: 4 servers, R = 3, bank and SmallBank
# running; the server that manages the configuration is killed (xtxd SIGKILL, its link
# down).  Another takes the manager's role, moves it out of every shard and promotes a
# backup where it led; the promoted servers decide what it replicated before they serve.
# Both runs end checked for money conserved, --verify (replicas identical, every key on the
# replicas left), every doubt resolved, and the histories serializable with no committed
# write lost.  Then a partition: a server cut off past its session never serves again.
# checks: 26 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=4
NAME=f$$
tmp=$(mktemp -d /tmp/xtx-test-failover.XXXXXX)
trap 'cleanup; rm -rf "$tmp"' EXIT INT TERM
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }

status_json() { client "$BUILD/xtxctl" cluster status --zk "$ZK_CLIENT" --name "$NAME" --json 2>&1; }
field() { grep -o "\"$1\":[0-9-]*" <<<"$2" | head -n 1 | cut -d: -f2; }
server_json() { grep -o "\"index\":$1,[^}]*" <<<"$2"; }
log_of() { echo "/run/xtx/$(server_ns "$1")-$(server_dev "$1").log"; }
load_member() {
	make -s -C "$ROOT" load IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")" \
		ARGS="--zk $(zk_for_server "$1") --zk-name $NAME --lock-lease 200ms --metrics :9371"
}
metric() {	# metric I NAME: a counter from server I's /metrics
	ip netns exec "$(server_ns "$1")" python3 -c 'import urllib.request,sys
for l in urllib.request.urlopen("http://127.0.0.1:9371/metrics", timeout=5).read().decode().splitlines():
    if l.startswith(sys.argv[1] + " "): print(l.split()[1])' "$2" 2>/dev/null
}
bank() {
	client "$BUILD/xtxbench" bank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 64 --client-base 10 \
		--threads 2 --check --json "$@"
}
smallbank() {
	client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 2000 \
		--ctl "$(all_server_ctls)" --warmup 0 --threads 2 --json "$@"
}
link_up() {	# link_up I: the server's link back, with the route to the others it lost
	ip -n "$(server_ns "$1")" link set "$(server_dev "$1")" up
	ip -n "$(server_ns "$1")" route replace 10.77.0.0/16 via "10.77.$1.1" dev "$(server_dev "$1")"
}
op() {	# op I EPOCH ARGS...
	local i=$1 e=$2
	shift 2
	client "$BUILD/xtxbench" op --server "$(server_ip "$i")" --epoch "$e" --timeout 50ms "$@" 2>&1
}
history_clean() {	# history_clean NAME CHECKER-ARGS...
	local out rc
	out=$("$BUILD/xtxbench" check-history "${@:2}" 2>&1)
	rc=$?
	check "$1: history serializable, no committed write lost (exit $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || head -n 5 <<<"$out" | sed 's/^/    /'
}

zk_up >"$tmp/zk.out" 2>&1 || { fail "ZooKeeper up"; cat "$tmp/zk.out"; exit 1; }
out=$(client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --name "$NAME" \
	--servers "$(all_server_ips)" --shards 12 2>&1)
check "a cluster of 4 servers, R = 3, 12 shards ($out)" grep -q "epoch 1, 4 servers" <<<"$out"
for i in 0 1 2 3; do
	load_member "$i" >"$tmp/load$i.out" 2>&1 || { fail "load server $i"; cat "$tmp/load$i.out"; }
done
out=$(smallbank --populate --duration 0 2>&1)
check "smallbank populated through the cluster's placement (exit $?)" test $? -eq 0

# ---- the manager's server dies under bank and SmallBank ----
s=$(status_json)
victim=$(field manager "$s")
check "a server manages the configuration (server ${victim:-none})" \
	test -n "$victim" -a "${victim:--1}" -ge 0
[ -n "$victim" ] && [ "$victim" -ge 0 ] || victim=1
led=$(server_json "$victim" "$s" | grep -o '"primary_of":[0-9]*' | cut -d: -f2)
bank --duration 9s --protocol occ --history "$tmp/bank" >"$tmp/bank.out" 2>&1 &
pb=$!
smallbank --duration 9s --protocol 2pl --verify --history "$tmp/sb" --client-base 40 >"$tmp/sb.out" 2>&1 &
ps=$!
sleep 2.5
kill -KILL "$(cat "/run/xtx/$(server_ns "$victim")-$(server_dev "$victim").pid")"
ip -n "$(server_ns "$victim")" link set "$(server_dev "$victim")" down
t_kill=$SECONDS
wait "$pb"
rc_bank=$?
wait "$ps"
rc_sb=$?

s=$(status_json)
check "the manager's role moved to a live server ($(field manager "$s"))" \
	test "$(field manager "$s")" != "$victim" -a "$(field manager "$s")" != -1
check "epoch 2: server $victim moved out of all its shards, a backup leads its ${led:-?}" \
	grep -q "\"index\":$victim,[^}]*\"live\":false,\"primary_of\":0,\"replica_of\":0" <<<"$s"
check "... 9 shards under-replicated, 12 still served" \
	grep -q '"epoch":2,"replication":3,"shards":12,"under_replicated":9' <<<"$s"
promoted=$(grep -l "epoch 2: recovered in" /run/xtx/"$PREFIX"-s*.log 2>/dev/null | wc -l)
check "the servers that took shards over recovered first ($promoted of them)" test "$promoted" -ge 1
grep -h "recovered in" /run/xtx/"$PREFIX"-s*.log | sed 's/^/    /'
rec=0
for i in 0 1 2 3; do
	[ "$i" = "$victim" ] && continue
	n=$(metric "$i" xtx_recoveries_total)
	rec=$((rec + ${n:-0}))
done
check "every survivor ran the recovery (xtx_recoveries_total summed: $rec)" test "$rec" -eq 3
taken=0
for f in $(grep -l "epoch 2: recovered in" /run/xtx/"$PREFIX"-s*.log); do
	i=$(sed 's/.*-s\([0-9]\)-.*/\1/' <<<"$f")
	n=$(metric "$i" xtx_recovered_transactions_total)
	taken=$((taken + ${n:-0}))
done
check "... and the servers that took over decided transactions the failed one replicated ($taken)" \
	test "$taken" -gt 0

n=$(json_field "$(cat "$tmp/bank.out")" transfers)
check "bank through the failure: money conserved, every doubt resolved (exit $rc_bank)" \
	test "$rc_bank" -eq 0
[ "$rc_bank" -eq 0 ] || tail -n 8 "$tmp/bank.out" | sed 's/^/    /'
check "... transfers committed (${n:-0})" test "${n:-0}" -gt 200
check "smallbank through the failure: --verify passes on the replicas left (exit $rc_sb)" \
	test "$rc_sb" -eq 0 -a -n "$(grep -o '"violations":0' "$tmp/sb.out")"
[ "$rc_sb" -eq 0 ] || { grep -v '^{' "$tmp/sb.out" | tail -n 30; grep '^{' "$tmp/sb.out"; } | sed 's/^/    /'
history_clean "bank" "$tmp"/bank.[0-9]*
history_clean "smallbank" -f "$tmp/sb.final" "$tmp"/sb.[0-9]*

# ---- traffic after the failure: the promoted primaries serve ----
out=$(bank --duration 2s --no-setup 2>&1)
check "a new bank run on the 3 left commits, money conserved (exit $?)" \
	test "$(json_field "$out" transfers)" -gt 100 -a -n "$(grep -o 'conserved' <<<"$out")"
out=$(smallbank --duration 2s --verify 2>&1)
rc=$?
check "a new smallbank run passes --verify (exit $rc, $(grep -o '"violations":[0-9]*' <<<"$out"))" \
	test "$rc" -eq 0 -a -n "$(grep -o '"violations":0' <<<"$out")"

# ---- a second failure: its shards would keep one replica, so nothing moves ----
s=$(status_json)
second=
for i in 0 1 2 3; do
	[ "$i" = "$victim" ] || [ "$i" = "$(field manager "$s")" ] || { second=$i; break; }
done
ctl "$second" unload >/dev/null 2>&1
sleep 2
s=$(status_json)
check "a second server stopping changes nothing: its shards would keep one replica (epoch 2)" \
	grep -q "\"epoch\":2,.*\"index\":$second,[^}]*\"live\":false,[^}]*\"replica_of\":[1-9]" <<<"$s"

# ---- a partition, on a fresh cluster of the 4: cut off past its session, never again ----
echo "    failure to the second failure's checks: $((SECONDS - t_kill)) s"
for i in 0 1 2 3; do ctl "$i" unload --force >/dev/null 2>&1; done
link_up "$victim"
NAME=${NAME}p
client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --name "$NAME" --servers "$(all_server_ips)" \
	--shards 12 >/dev/null 2>&1
for i in 0 1 2 3; do
	load_member "$i" >"$tmp/load$i.out" 2>&1 || { fail "load server $i"; cat "$tmp/load$i.out"; }
done
s=$(status_json)
part=
for i in 0 1 2 3; do
	[ "$i" = "$(field manager "$s")" ] || { part=$i; break; }
done
t_kill=$SECONDS
bank --duration 8s --protocol 2pl --history "$tmp/bank2" >"$tmp/bank2.out" 2>&1 &
pb=$!
sleep 1.5
ip -n "$(server_ns "$part")" link set "$(server_dev "$part")" down
sleep 4.5	# past the session (2 s) and the manager's grace
link_up "$part"
before=$(ctl "$part" dump | sort)
w0=$(json_field "$(ctl "$part" stats --json)" wrong_epoch)
out2=$(op "$part" 1 insert 3 901 value=01)
out3=$(op "$part" 2 insert 3 902 value=01)
check "back from the partition, server $part refuses its old epoch ($out2)" \
	grep -q "fenced" <<<"$out2"
check "... and the new one ($out3)" grep -q "fenced" <<<"$out3"
check "... changing nothing" test "$before" = "$(ctl "$part" dump | sort)"
check "... each refusal counted" \
	test "$(json_field "$(ctl "$part" stats --json)" wrong_epoch)" -ge $((${w0:-0} + 2))
for _ in $(seq 1 30); do	# once its ZooKeeper client reconnects and hears
	grep -q "session expired" "$(log_of "$part")" && break
	sleep 0.1
done
check "... and it says why in its log" grep -q "session expired" "$(log_of "$part")"
wait "$pb"
rc=$?
check "bank through the partition: money conserved, every doubt resolved (exit $rc)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || tail -n 8 "$tmp/bank2.out" | sed 's/^/    /'
s=$(status_json)
check "epoch 2: server $part moved out of every shard" \
	grep -q "\"epoch\":2,.*\"index\":$part,[^}]*\"primary_of\":0,\"replica_of\":0" <<<"$s"
history_clean "bank through the partition" "$tmp"/bank2.[0-9]*
echo "    failure to the end of the checks: $((SECONDS - t_kill)) s"

for i in 0 1 2 3; do ctl "$i" unload --force >/dev/null 2>&1; done
zk_down
check "no ZooKeeper left behind" test -z "$(pgrep -f -- "$ZK_DIR/data")"
finish
