#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The coordination service under fault: 3 servers and a spare (R = 3) on a three-member
# ZooKeeper ensemble (scripts/zk_ensemble.sh), bank and SmallBank running with their
# histories recorded while, round after round, the ensemble takes one of four faults:
#   leader   its leader is killed while an xtxd is killed too: the manager's failover (the
#            spare copies the shards left short) runs through the newly elected leader;
#   cut      one member, the leader or a follower, is partitioned away and healed;
#   restart  the whole ensemble stops and starts again on its data;
#   wipe     the whole ensemble restarts with its data gone: no xtxd serves (no lease),
#            xtxctl cluster recover rebuilds the configuration from the servers' records,
#            and every xtxd is started again on its own data; the clients find it.
# Every fault is asserted to have happened; every round ends with money conserved,
# --verify on every replica and the exact history check of every transaction.
# NEMESIS_ZK_ROUNDS rounds (default 8: each fault twice); NEMESIS_ZK_KINDS="KIND..." cycles
# through those faults only.
# checks: 65 with 8 rounds
source "$(dirname "$0")/integration/lib.sh"
source "$(dirname "$0")/nemesis_checks.sh"
NSERVERS=4
NAME=nz$$
ROUNDS=${NEMESIS_ZK_ROUNDS:-8}
WORK=$(mktemp -d /tmp/xtx-nemesis-zk.XXXXXX)
declare -A FIRED=()
trap 'cleanup; rm -rf "$WORK"' EXIT INT TERM
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }

status_json() { client "$BUILD/xtxctl" cluster status --zk "$ZK_CLIENT" --zk-name "$NAME" --json 2>/dev/null; }
sfield() { grep -o "\"$1\":[0-9-]*" <<<"$2" | head -n 1 | cut -d: -f2; }
replica_of() { grep -o "\"index\":$1,[^}]*" <<<"$2" | grep -o '"replica_of":[0-9]*' | cut -d: -f2; }
record_of() { echo "/var/lib/xtx/$(server_ns "$1")-$(server_dev "$1")/cluster.conf"; }
pid_of() { cat "/run/xtx/$(server_ns "$1")-$(server_dev "$1").pid"; }
load_member() {
	make -s -C "$ROOT" load IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")" \
		ARGS="--zk $(zk_for_server "$1") --zk-name $NAME --lock-lease 200ms"
}
unload() { make -s -C "$ROOT" unload IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")"; }
leads() { zke leader >/dev/null; }
leader_is_not() { local l; l=$(zke leader) && [ "$l" != "$1" ]; }
mode_is() { [ "$(zke mode -k "$1")" = "$2" ]; }
all_down() { mode_is 0 down && mode_is 1 down && mode_is 2 down; }
running() { kill -0 "$pb" 2>/dev/null && kill -0 "$ps" 2>/dev/null; }
# commits made since the count given: the workloads go on after the fault
committed_after() {
	local n
	n=$(grep -c 'committed/s=[1-9]' "$WORK/sb$round.out" 2>/dev/null)
	[ "${n:-0}" -gt "$1" ]
}

zke_up >"$WORK/zke.out" 2>&1 || { fail "ZooKeeper ensemble up"; cat "$WORK/zke.out"; exit 1; }
client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --zk-name "$NAME" \
	--servers "$(server_ip 0),$(server_ip 1),$(server_ip 2)" --spares "$(server_ip 3)" \
	--shards 12 >/dev/null 2>&1
for i in 0 1 2 3; do
	load_member "$i" >"$WORK/load$i.out" 2>&1 || { fail "load server $i"; cat "$WORK/load$i.out"; exit 1; }
done
client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 5000 \
	--ctl "$(all_server_ctls)" --populate --duration 0 >/dev/null 2>&1
check "3 servers and a spare on a ZooKeeper ensemble, SmallBank populated (exit $?)" test $? -eq 0

for ((round = 1; round <= ROUNDS; round++)); do
	if [ -n "${NEMESIS_ZK_KINDS:-}" ]; then
		kinds=($NEMESIS_ZK_KINDS)
		kind=${kinds[$(((round - 1) % ${#kinds[@]}))]}
	else
		case $((round % 4)) in 1) kind=leader ;; 2) kind=cut ;; 3) kind=restart ;; *) kind=wipe ;; esac
	fi
	case $((round % 3)) in 1) bp=occ sp=2pl ;; 2) bp=2pl sp=occ ;; *) bp=hades sp=2pl ;; esac
	# HADES keeps its own table: a table serves one protocol family at a time
	if [ "$bp" = hades ]; then
		btable=14
		[ "$round" -gt 3 ] && bsetup=--no-setup || bsetup=
	else
		btable=15
		[ "$round" -gt 1 ] && bsetup=--no-setup || bsetup=
	fi
	s=$(status_json)
	epoch=$(sfield epoch "$s")
	echo "# round $round: $kind; bank $bp, SmallBank $sp (epoch $epoch)"
	client "$BUILD/xtxbench" bank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 64 \
		--client-base 10 --threads 2 --check --json --duration 600s --protocol "$bp" \
		--table "$btable" $bsetup --history "$WORK/bank$round" >"$WORK/bank$round.out" 2>&1 &
	pb=$!
	client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 5000 \
		--ctl "$(all_server_ctls)" --warmup 0 --threads 2 --json --duration 600s \
		--protocol "$sp" --verify --client-base 40 --history "$WORK/sb$round" \
		>"$WORK/sb$round.out" 2>&1 &
	ps=$!
	wait_until 60 committed_after 0
	case $kind in
	leader)
		# a whole server too, never the spare's copies' only source: one of R whole ones
		victims=()
		for i in 0 1 2 3; do [ "$(replica_of "$i" "$s")" = 12 ] && victims+=("$i"); done
		victim=${victims[$((RANDOM % ${#victims[@]}))]}
		old=$(zke leader)
		zke kill -k "$old"
		kill -KILL "$(pid_of "$victim")"
		ip -n "$(server_ns "$victim")" link set "$(server_dev "$victim")" down
		check "round $round: the ZooKeeper leader (member $old) killed: another leads" \
			wait_until 60 leader_is_not "$old"
		whole() {
			s=$(status_json)
			[ "$(sfield epoch "$s")" -ge $((epoch + 3)) ] &&
				[ "$(sfield under_replicated "$s")" = 0 ] &&
				[ "$(replica_of "$victim" "$s")" = 0 ]
		}
		check "round $round: server $victim killed with it: moved out, the spare copied and counts" \
			wait_until 120 whole
		zke start-member -k "$old"
		check "round $round: member $old back, following" wait_until 60 mode_is "$old" follower
		;;
	cut)
		# the leader in one round, a follower in the next
		l=$(zke leader)
		if [ $((round / 4 % 2)) = 0 ]; then cut=$l; else cut=$(((l + 1 + RANDOM % 2) % 3)); fi
		zke cut -k "$cut"
		cut_over() { mode_is "$cut" down && leads; }
		check "round $round: member $cut ($([ "$cut" = "$l" ] && echo leader || echo follower)) cut off: it stops serving, a quorum serves" \
			wait_until 60 cut_over
		zke heal -k "$cut"
		check "round $round: member $cut healed, following" wait_until 60 mode_is "$cut" follower
		;;
	restart)
		zke stop-all
		check "round $round: the whole ensemble stopped" all_down
		zke start-all >"$WORK/restart$round.out" 2>&1
		check "round $round: the ensemble started again on its data: a quorum serves" leads
		;;
	wipe)
		members=()
		for i in 0 1 2 3; do kill -0 "$(pid_of "$i")" 2>/dev/null && members+=("$i"); done
		zke stop-all
		zke wipe
		zke start-all >"$WORK/restart$round.out" 2>&1
		check "round $round: the ensemble restarted with its data wiped: no cluster there" \
			bash -c "! ip netns exec '$PREFIX-c' '$BUILD/xtxctl' cluster status --zk '$ZK_CLIENT' --zk-name '$NAME' >/dev/null 2>&1"
		records=()
		for i in "${members[@]}"; do records+=("$(record_of "$i")"); done
		out=$(client "$BUILD/xtxctl" cluster recover --zk "$ZK_CLIENT" --zk-name "$NAME" \
			"${records[@]}" 2>&1)
		rc=$?
		check "round $round: cluster recover from ${#records[@]} records (exit $rc)" test "$rc" -eq 0
		[ "$rc" -eq 0 ] || sed 's/^/    /' <<<"$out"
		for i in "${members[@]}"; do
			unload "$i" >/dev/null 2>&1
			load_member "$i" >"$WORK/reload$round.$i.out" 2>&1 ||
				{ fail "round $round: server $i started again"; cat "$WORK/reload$round.$i.out"; }
		done
		s=$(status_json)
		check "round $round: epoch $(sfield epoch "$s") after epoch $epoch, servers live again" \
			test "$(sfield epoch "$s")" -gt "$epoch" -a \
			"$(grep -o '"live":true' <<<"$s" | wc -l)" = "${#members[@]}"
		;;
	esac
	FIRED[$kind]=$((${FIRED[$kind]:-0} + 1))
	n=$(grep -c 'committed/s=[1-9]' "$WORK/sb$round.out")
	went_on() { running && wait_until 120 committed_after "$n"; }
	check "round $round: the workloads ran through the fault and commit after it" went_on
	# the workloads end on a signal as on Ctrl-C: their checks run all the same
	for p in "$pb" "$ps"; do pkill -TERM -P "$p" || kill -TERM "$p"; done
	wait "$pb"
	rc_b=$?
	wait "$ps"
	rc_s=$?
	invariant "round $round: bank ($bp): money conserved, every doubt resolved (exit $rc_b)" \
		test "$rc_b" -eq 0
	[ "$rc_b" -eq 0 ] || grep -v "connection loss" "$WORK/bank$round.out" | tail -n 6 | sed 's/^/    /'
	invariant "round $round: SmallBank ($sp): --verify passes on every replica (exit $rc_s)" \
		test "$rc_s" -eq 0 -a -n "$(grep -o '"violations":0' "$WORK/sb$round.out")"
	[ "$rc_s" -eq 0 ] || grep -v -e '^{' -e "connection loss" "$WORK/sb$round.out" | tail -n 10 |
		sed 's/^/    /'
	history_ok "round $round: bank" "$WORK/bank$round".[0-9]*
	history_ok "round $round: SmallBank" -f "$WORK/sb$round.final" "$WORK/sb$round".[0-9]*
	if [ "$kind" = leader ]; then
		# back, empty: the next spare
		ip -n "$(server_ns "$victim")" link set "$(server_dev "$victim")" up
		ip -n "$(server_ns "$victim")" route replace 10.77.0.0/16 via "10.77.$victim.1" \
			dev "$(server_dev "$victim")"
		load_member "$victim" >"$WORK/back$round.out" 2>&1
		check "round $round: server $victim back as a spare (exit $?)" \
			grep -q "replica of no shard: it starts empty" \
			"/run/xtx/$(server_ns "$victim")-$(server_dev "$victim").log"
	fi
done
s=$(status_json)
fired=""
for k in leader cut restart wipe; do fired+=" $k ${FIRED[$k]:-0},"; done
echo "nemesis zk: $ROUNDS rounds (faults fired:${fired%,}), $ANOMALIES anomalies, $CHECKED transactions checked"
check "every round ended whole: no shard short of R (epoch $(sfield epoch "$s"))" \
	test "$(sfield under_replicated "$s")" = 0
for i in 0 1 2 3; do ctl "$i" unload --force >/dev/null 2>&1; done
zke stop
check "no ZooKeeper member left behind" test -z "$(pgrep -f -- "QuorumPeerMain $ZKE_DIR/")"
finish
