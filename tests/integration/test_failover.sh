#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A server dies under load and the cluster goes on, then gets back to R: 3 servers and a
# spare, R = 3, bank and SmallBank running; the server that manages the configuration is
# killed (xtxd SIGKILL, its link down).  Another takes the manager's role, moves it out of
# every shard and promotes a backup where it led; the promoted servers decide what it
# replicated before they serve; the spare copies every shard and counts as a replica once
# whole.  Both runs end checked for money conserved, --verify (replicas identical, the
# spare's copy included), every doubt resolved, and the histories serializable with no
# committed write lost.  A second failure is then survived too, and the first server,
# back, starts empty and copies its way in.  Last, a partition: a server cut off past its
# session never serves again.
# checks: 39 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=4
NAME=f$$
tmp=$(mktemp -d /tmp/xtx-test-failover.XXXXXX)
trap 'cleanup; rm -rf "$tmp"' EXIT INT TERM
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }

status_json() { client "$BUILD/xtxctl" cluster status --zk "$ZK_CLIENT" --zk-name "$NAME" --json 2>&1; }
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
whole_again() {	# whole_again EPOCH: waits up to 30 s for no shard short of R past EPOCH
	local s
	for _ in $(seq 1 300); do
		s=$(status_json)
		[ "$(field under_replicated "$s")" = 0 ] && [ "$(field epoch "$s")" -gt "$1" ] && break
		sleep 0.1
	done
	echo "$s"
}
verify_all() {	# verify_all WHAT: a short SmallBank run whose --verify compares every replica
	local out rc
	out=$(smallbank --duration 2s --verify 2>&1)
	rc=$?
	check "$1 (exit $rc, $(grep -o '"violations":[0-9]*' <<<"$out"))" \
		test "$rc" -eq 0 -a -n "$(grep -o '"violations":0' <<<"$out")"
	[ "$rc" -eq 0 ] || grep -v '^{' <<<"$out" | tail -n 10 | sed 's/^/    /'
}

zk_up >"$tmp/zk.out" 2>&1 || { fail "ZooKeeper up"; cat "$tmp/zk.out"; exit 1; }
out=$(client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --zk-name "$NAME" \
	--servers "$(server_ip 0),$(server_ip 1),$(server_ip 2)" --spares "$(server_ip 3)" \
	--shards 12 2>&1)
check "3 servers and a spare, R = 3, 12 shards ($out)" grep -q "epoch 1, 4 servers (1 spare)" <<<"$out"
for i in 0 1 2 3; do
	load_member "$i" >"$tmp/load$i.out" 2>&1 || { fail "load server $i"; cat "$tmp/load$i.out"; }
done
check "the spare is a replica of no shard" \
	grep -q '"index":3,[^}]*"live":true,"primary_of":0,"replica_of":0' <<<"$(status_json)"
out=$(client python3 "$ROOT/tests/integration/peer_msg.py" copy-request --dst "$(server_ip 0)" \
	--from 3 --epoch 1 --wait 10 2>&1)
check "a copy asked for from a stranger's address: closed before a byte is read ($out)" \
	grep -q '^closed' <<<"$out"
out=$(smallbank --populate --duration 0 2>&1)
check "smallbank populated through the cluster's placement (exit $?)" test $? -eq 0

# ---- the manager's server dies under bank and SmallBank; the spare copies its way in ----
s=$(status_json)
victim=$(field manager "$s")
check "a server manages the configuration (server ${victim:-none})" \
	test -n "$victim" -a "${victim:--1}" -ge 0
[ -n "$victim" ] && [ "$victim" -ge 0 ] && [ "$victim" -le 2 ] || victim=1
led=$(server_json "$victim" "$s" | grep -o '"primary_of":[0-9]*' | cut -d: -f2)
declare -a rec0
for i in 0 1 2 3; do rec0[$i]=$(metric "$i" xtx_recoveries_total); done
bank --duration 10s --protocol occ --history "$tmp/bank" >"$tmp/bank.out" 2>&1 &
pb=$!
smallbank --duration 10s --protocol 2pl --verify --history "$tmp/sb" --client-base 40 >"$tmp/sb.out" 2>&1 &
ps=$!
sleep 2.5
kill -KILL "$(cat "/run/xtx/$(server_ns "$victim")-$(server_dev "$victim").pid")"
ip -n "$(server_ns "$victim")" link set "$(server_dev "$victim")" down
t_kill=$SECONDS
wait "$pb"
rc_bank=$?
wait "$ps"
rc_sb=$?

s=$(whole_again 2)
mgr=$(field manager "$s")
check "the manager's role moved to a live server ($mgr)" \
	test "$mgr" != "$victim" -a "$mgr" != -1
check "epoch 2: server $victim moved out of all 12 shards, a backup leads its ${led:-?}" \
	grep -q "failed: epoch 2 without it in 12 shards, a backup promoted in the ${led:-?} it led" \
	"$(log_of "$mgr")"
check "epoch 3: the spare copies the 12 shards short of R" \
	grep -q "server 3 (.*) is a replica of no shard: epoch 3 has it copying 12" "$(log_of "$mgr")"
copied=$(grep -o "12 shards whole here: [0-9]* keys" "$(log_of 3)" | tail -n 1 | awk '{print $5}')
check "... the spare copied them (${copied:-no} keys) from the primaries" \
	test "${copied:-0}" -gt 2000
grep -h "manager: \|copy: sent server 3\|whole here" /run/xtx/"$PREFIX"-s*.log | sort | sed 's/^/    /'
check "epoch 4: it counts as a replica, no shard short of R, $((SECONDS - t_kill)) s after the kill" \
	grep -q '"epoch":4,"replication":3,"shards":12,"under_replicated":0' <<<"$s"
check "... the spare is a replica of 12 shards, the failed server of none" \
	test -n "$(grep -o '"index":3,[^}]*"replica_of":12' <<<"$s")" -a \
	-n "$(grep -o "\"index\":$victim,[^}]*\"replica_of\":0" <<<"$s")"
promoted=$(grep -l "epoch [0-9]*: recovered in" /run/xtx/"$PREFIX"-s*.log 2>/dev/null | wc -l)
check "the servers that took shards over recovered first ($promoted of them)" test "$promoted" -ge 1
grep -h "recovered in" /run/xtx/"$PREFIX"-s*.log | sed 's/^/    /'
rec=0
for i in 0 1 2 3; do
	[ "$i" = "$victim" ] && continue
	n=$(metric "$i" xtx_recoveries_total)
	rec=$((rec + ${n:-0} - ${rec0[$i]:-0}))
done
check "every survivor ran the recovery (xtx_recoveries_total, summed increase: $rec)" test "$rec" -eq 3
taken=0
for f in $(grep -l "epoch [0-9]*: recovered in" /run/xtx/"$PREFIX"-s*.log); do
	i=$(sed 's/.*-s\([0-9]\)-.*/\1/' <<<"$f")
	n=$(metric "$i" xtx_recovered_transactions_total)
	taken=$((taken + ${n:-0}))
done
check "... and the servers that took over decided transactions the failed one replicated ($taken)" \
	test "$taken" -gt 0

n=$(json_field "$(cat "$tmp/bank.out")" transfers)
check "bank through the failure and the copy: money conserved, every doubt resolved (exit $rc_bank)" \
	test "$rc_bank" -eq 0
[ "$rc_bank" -eq 0 ] || tail -n 8 "$tmp/bank.out" | sed 's/^/    /'
check "... transfers committed (${n:-0})" test "${n:-0}" -gt 200
check "smallbank through the failure and the copy: --verify passes (exit $rc_sb)" \
	test "$rc_sb" -eq 0 -a -n "$(grep -o '"violations":0' "$tmp/sb.out")"
[ "$rc_sb" -eq 0 ] || { grep -v '^{' "$tmp/sb.out" | tail -n 30; grep '^{' "$tmp/sb.out"; } | sed 's/^/    /'
history_clean "bank" "$tmp"/bank.[0-9]*
history_clean "smallbank" -f "$tmp/sb.final" "$tmp"/sb.[0-9]*

# ---- after it: the promoted primaries serve, the spare's copy equals the others' ----
out=$(bank --duration 2s --no-setup 2>&1)
check "a new bank run commits, money conserved (exit $?)" \
	test "$(json_field "$out" transfers)" -gt 100 -a -n "$(grep -o 'conserved' <<<"$out")"
verify_all "a new smallbank run's --verify finds the spare's copy equal to the others'"

# ---- a second failure: back at R, the cluster survives it too ----
second=
for i in 0 1 2; do
	[ "$i" = "$victim" ] || [ "$i" = "$mgr" ] || { second=$i; break; }
done
# HADES this time: its committing slots naming the stopped server are decided without it
bank --duration 6s --protocol hades --table 14 --client-base 20 --history "$tmp/hbank" \
	>"$tmp/hbank.out" 2>&1 &
ph=$!
sleep 2
kill -KILL "$(cat "/run/xtx/$(server_ns "$second")-$(server_dev "$second").pid")"
ip -n "$(server_ns "$second")" link set "$(server_dev "$second")" down
for _ in $(seq 1 100); do
	[ "$(field epoch "$(status_json)")" -ge 5 ] && break
	sleep 0.1
done
s=$(status_json)
check "a second server dying is survived: epoch 5 moves server $second out" \
	grep -q "\"epoch\":5,.*\"index\":$second,[^}]*\"live\":false,[^}]*\"replica_of\":0" <<<"$s"
wait "$ph"
rc=$?
check "bank under HADES through it: money conserved, every doubt resolved (exit $rc)" \
	test "$rc" -eq 0 -a "$(json_field "$(cat "$tmp/hbank.out")" transfers)" -gt 100
[ "$rc" -eq 0 ] || tail -n 8 "$tmp/hbank.out" | sed 's/^/    /'
history_clean "bank under HADES" "$tmp"/hbank.[0-9]*
echo "    HADES transactions the survivors decided without server $second: $(grep -h "hades txn .*moved out: $(printf 0x%x $((1 << second)))" /run/xtx/"$PREFIX"-s*.log | wc -l)"
verify_all "... and SmallBank runs on the two left, --verify passing"

# ---- the first server comes back: it starts empty and copies its way in, under TATP ----
tatp() {
	client "$BUILD/xtxbench" tatp --zk "$ZK_CLIENT" --zk-name "$NAME" --subscribers 2000 \
		--ctl "$(all_server_ctls)" --warmup 0 --threads 2 --client-base 70 --json "$@"
}
tatp --populate --duration 0 >"$tmp/tatp-pop.out" 2>&1
rc=$?
check "TATP populated on the two whole replicas, the servers of no shard skipped (exit $rc)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || tail -n 5 "$tmp/tatp-pop.out" | sed 's/^/    /'
# TATP deletes and re-inserts call forwardings: deletes racing the copy of their keys
tatp --duration 6s --verify >"$tmp/tatp.out" 2>&1 &
pt=$!
sleep 1
link_up "$victim"
load_member "$victim" >"$tmp/load-back.out" 2>&1 || { fail "load server $victim again"; cat "$tmp/load-back.out"; }
check "back, server $victim starts empty" grep -q "replica of no shard: it starts empty" "$(log_of "$victim")"
s=$(whole_again 5)
check "... copies, and counts as a replica: no shard short of R ($(field epoch "$s"))" \
	grep -q '"epoch":7,"replication":3,"shards":12,"under_replicated":0' <<<"$s"
grep -h "whole here" "$(log_of "$victim")" | sed 's/^/    /'
wait "$pt"
rc=$?
check "TATP through the copy: --verify passes, the returning server's copy included (exit $rc)" \
	test "$rc" -eq 0 -a -n "$(grep -o '"violations":0' "$tmp/tatp.out")"
[ "$rc" -eq 0 ] || grep -v '^{' "$tmp/tatp.out" | tail -n 10 | sed 's/^/    /'
verify_all "... its copy equal to the others'"

# ---- a partition, on a fresh cluster of the 4: cut off past its session, never again ----
echo "    failure to the second failure's checks: $((SECONDS - t_kill)) s"
for i in 0 1 2 3; do ctl "$i" unload --force >/dev/null 2>&1; done
# a new cluster of empty servers: each refuses another cluster while its data dir says it
# served one (user/lib/cluster_record.h)
rm -rf /var/lib/xtx/"$PREFIX"-*
link_up "$second"
NAME=${NAME}p
client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --zk-name "$NAME" --servers "$(all_server_ips)" \
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
