#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The cluster on a three-member ZooKeeper ensemble (scripts/zk_ensemble.sh), every xtxd and
# client given all three members. Under bank (2PL) and SmallBank (OCC), both recording their
# histories, the ensemble takes three faults in turn: its leader is killed (the others elect
# another), the new leader is partitioned away (its link cut: the last two elect again), and
# the whole ensemble stops and starts again on its data. Each fault is asserted to have
# happened; the workloads (one thread each: the suite runs beside others) start before the
# first and stop after the last. Through all of it no server is fenced or moved out and the
# epoch stays; the runs end with money conserved, --verify on every replica, and the exact
# history check.
# checks: 16 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NAME=e$$
tmp=$(mktemp -d /tmp/xtx-test-zke.XXXXXX)
trap 'cleanup; rm -rf "$tmp"' EXIT INT TERM
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }

status_json() { client "$BUILD/xtxctl" cluster status --zk "$ZK_CLIENT" --zk-name "$NAME" --json 2>&1; }
sfield() { grep -o "\"$1\":[0-9-]*" <<<"$2" | head -n 1 | cut -d: -f2; }
load_member() {
	make -s -C "$ROOT" load IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")" \
		ARGS="--zk $(zk_for_server "$1") --zk-name $NAME --lock-lease 200ms"
}
history_ok() {	# history_ok WHAT CHECKER-ARGS...
	local out rc n
	out=$("$BUILD/xtxbench" check-history --max-print 3 "${@:2}" 2>&1)
	rc=$?
	n=$(grep -o '^history: [0-9]* transactions' <<<"$out" | grep -o '[0-9]*')
	check "$1: history serializable, ${n:-0} transactions (exit $rc)" \
		test "$rc" -eq 0 -a "${n:-0}" -gt 0
	[ "$rc" -eq 0 ] || head -n 6 <<<"$out" | sed 's/^/    /'
}
leader_is_not() {	# a member other than $1 leads
	local l
	l=$(zke leader) && [ "$l" != "$1" ]
}
mode_is() { [ "$(zke mode -k "$1")" = "$2" ]; }
running() { kill -0 "$pb" 2>/dev/null && kill -0 "$ps" 2>/dev/null; }
# every server's log: no fence, no move out (their lines, counted)
fenced_lines() {
	local i n=0
	for ((i = 0; i < NSERVERS; i++)); do
		n=$((n + $(XLOG "$i" | grep -c -e "stops serving" -e "failed: epoch")))
	done
	echo "$n"
}

zke_up >"$tmp/zke.out" 2>&1 || { fail "ZooKeeper ensemble up"; cat "$tmp/zke.out"; exit 1; }
leads() { zke leader >/dev/null; }
check "a three-member ensemble serves ($ZK_CLIENT), one leading" leads
client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --zk-name "$NAME" \
	--servers "$(all_server_ips)" --shards 6 >/dev/null 2>&1
for ((i = 0; i < NSERVERS; i++)); do
	load_member "$i" >"$tmp/load$i.out" 2>&1 || { fail "load server $i"; cat "$tmp/load$i.out"; exit 1; }
done
client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 1000 \
	--ctl "$(all_server_ctls)" --populate --duration 0 >/dev/null 2>&1
check "3 servers on the ensemble, SmallBank populated (exit $?)" test $? -eq 0
epoch=$(sfield epoch "$(status_json)")

client "$BUILD/xtxbench" bank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 64 --client-base 10 \
	--threads 1 --check --json --duration 300s --protocol 2pl --history "$tmp/bank" \
	>"$tmp/bank.out" 2>&1 &
pb=$!
client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 1000 \
	--ctl "$(all_server_ctls)" --warmup 0 --threads 1 --json --duration 300s --protocol occ --verify \
	--client-base 40 --history "$tmp/sb" >"$tmp/sb.out" 2>&1 &
ps=$!

# ---- the leader killed: the other two elect one ----
old=$(zke leader)
zke kill -k "$old"
check "the leader (member $old) killed: another leads within 30 s" wait_until 30 leader_is_not "$old"
zke start-member -k "$old"
check "member $old back, following" wait_until 60 mode_is "$old" follower

# ---- the new leader partitioned away: the last two elect again ----
cut=$(zke leader)
zke cut -k "$cut"
cut_over() { mode_is "$cut" down && leader_is_not "$cut"; }
check "the leader (member $cut) cut off: it stops serving, another leads" wait_until 30 cut_over
zke heal -k "$cut"
check "member $cut healed, following" wait_until 60 mode_is "$cut" follower

# ---- the whole ensemble stopped and started again on its data ----
zke stop-all
all_down() { mode_is 0 down && mode_is 1 down && mode_is 2 down; }
check "the whole ensemble stopped: no member serves" all_down
zke start-all >"$tmp/restart.out" 2>&1
check "the ensemble started again: a quorum serves" leads
check "every fault came while both workloads ran" running
# the workloads end on a signal as on Ctrl-C: their checks run all the same
# (the xtxbench itself: a background function may run it in a subshell of its own)
for p in "$pb" "$ps"; do pkill -TERM -P "$p" || kill -TERM "$p"; done

wait "$pb"
rc_b=$?
wait "$ps"
rc_s=$?
check "bank (2PL) through the faults: money conserved, every doubt resolved (exit $rc_b, $(json_field "$(cat "$tmp/bank.out")" transfers) transfers)" \
	test "$rc_b" -eq 0
[ "$rc_b" -eq 0 ] || tail -n 6 "$tmp/bank.out" | sed 's/^/    /'
check "SmallBank (OCC) through the faults: --verify passes on every replica (exit $rc_s)" \
	test "$rc_s" -eq 0 -a -n "$(grep -o '"violations":0' "$tmp/sb.out")"
[ "$rc_s" -eq 0 ] || grep -v '^{' "$tmp/sb.out" | tail -n 10 | sed 's/^/    /'
history_ok "bank" "$tmp/bank".[0-9]*
history_ok "SmallBank" -f "$tmp/sb.final" "$tmp/sb".[0-9]*
s=$(status_json)
check "no server fenced or moved out: epoch $epoch still, every server live ($(fenced_lines) fence lines)" \
	test "$(sfield epoch "$s")" = "$epoch" -a "$(fenced_lines)" = 0 \
	-a "$(grep -o '"live":true' <<<"$s" | wc -l)" = "$NSERVERS"
out=$(client "$BUILD/xtxbench" bank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 64 \
	--client-base 70 --check --json --duration 1s --no-setup 2>&1)
rc=$?
check "after the faults the cluster serves: bank commits (exit $rc, $(json_field "$out" transfers) transfers)" \
	test "$rc" -eq 0 -a "$(json_field "$out" transfers)" -gt 0
for ((i = 0; i < NSERVERS; i++)); do ctl "$i" unload --force >/dev/null 2>&1; done
zke stop
check "no ZooKeeper member left behind" test -z "$(pgrep -f -- "QuorumPeerMain $ZKE_DIR/")"
finish
