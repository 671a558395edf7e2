#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Repeated failovers: 3 servers and a spare in a cluster held in ZooKeeper (R = 3), bank and
# SmallBank running with their histories recorded while, round after round, a whole server
# (the manager's too) is killed (xtxd SIGKILL, its link down): a backup is promoted, the
# spare copies the shards left short of R, and the killed server comes back empty as the
# next spare.  Every round must show its failover and copy happened, and ends with money
# conserved, --verify on every replica, and the exact history check of every transaction.
# Bank runs OCC, 2PL and HADES in turn (HADES in its own table), SmallBank OCC and 2PL.
# NEMESIS_FAILOVERS rounds (default 6).
# checks: 39 with 6 rounds
source "$(dirname "$0")/integration/lib.sh"
NSERVERS=4
NAME=nf$$
ROUNDS=${NEMESIS_FAILOVERS:-6}
WORK=$(mktemp -d /tmp/xtx-nemesis-failover.XXXXXX)
ANOMALIES=0
CHECKED=0
trap 'cleanup; rm -rf "$WORK"' EXIT INT TERM
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }

status_json() { client "$BUILD/xtxctl" cluster status --zk "$ZK_CLIENT" --name "$NAME" --json 2>&1; }
field() { grep -o "\"$1\":[0-9-]*" <<<"$2" | head -n 1 | cut -d: -f2; }
replica_of() { grep -o "\"index\":$1,[^}]*" <<<"$2" | grep -o '"replica_of":[0-9]*' | cut -d: -f2; }
load_member() {
	make -s -C "$ROOT" load IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")" \
		ARGS="--zk $(zk_for_server "$1") --zk-name $NAME --lock-lease 200ms"
}
link_up() {
	ip -n "$(server_ns "$1")" link set "$(server_dev "$1")" up
	ip -n "$(server_ns "$1")" route replace 10.77.0.0/16 via "10.77.$1.1" dev "$(server_dev "$1")"
}
# invariant DESCRIPTION CONDITION...: a failed one is an anomaly
invariant() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; ANOMALIES=$((ANOMALIES + 1)); fi
}
history_ok() {	# history_ok NAME CHECKER-ARGS...
	local out rc n
	out=$("$BUILD/xtxbench" check-history --max-print 3 "${@:2}" 2>&1)
	rc=$?
	n=$(grep -o '^history: [0-9]* transactions' <<<"$out" | grep -o '[0-9]*')
	CHECKED=$((CHECKED + ${n:-0}))
	invariant "$1: history serializable, ${n:-0} transactions (exit $rc)" \
		test "$rc" -eq 0 -a "${n:-0}" -gt 0
	[ "$rc" -eq 0 ] || head -n 6 <<<"$out" | sed 's/^/    /'
}

zk_up >"$WORK/zk.out" 2>&1 || { fail "ZooKeeper up"; cat "$WORK/zk.out"; exit 1; }
client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --name "$NAME" \
	--servers "$(server_ip 0),$(server_ip 1),$(server_ip 2)" --spares "$(server_ip 3)" \
	--shards 12 >/dev/null 2>&1
for i in 0 1 2 3; do
	load_member "$i" >"$WORK/load$i.out" 2>&1 || { fail "load server $i"; cat "$WORK/load$i.out"; exit 1; }
done
client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 5000 \
	--ctl "$(all_server_ctls)" --populate --duration 0 >/dev/null 2>&1
check "a cluster of 3 servers and a spare, SmallBank populated (exit $?)" test $? -eq 0

for ((round = 1; round <= ROUNDS; round++)); do
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
	epoch=$(field epoch "$s")
	# a whole server, chosen at random, the manager included
	victims=()
	for i in 0 1 2 3; do [ "$(replica_of "$i" "$s")" = 12 ] && victims+=("$i"); done
	victim=${victims[$((RANDOM % ${#victims[@]}))]}
	echo "# round $round: bank $bp, SmallBank $sp; server $victim dies (manager: $(field manager "$s"))"
	client "$BUILD/xtxbench" bank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 64 \
		--client-base 10 --threads 2 --check --json --duration 11s --protocol "$bp" \
		--table "$btable" $bsetup --history "$WORK/bank$round" \
		>"$WORK/bank$round.out" 2>&1 &
	pb=$!
	client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 5000 \
		--ctl "$(all_server_ctls)" --warmup 0 --threads 2 --json --duration 11s \
		--protocol "$sp" --verify --client-base 40 --history "$WORK/sb$round" \
		>"$WORK/sb$round.out" 2>&1 &
	ps=$!
	sleep 2
	kill -KILL "$(cat "/run/xtx/$(server_ns "$victim")-$(server_dev "$victim").pid")"
	ip -n "$(server_ns "$victim")" link set "$(server_dev "$victim")" down
	t0=$SECONDS
	for _ in $(seq 1 300); do
		s=$(status_json)
		[ "$(field epoch "$s")" -ge $((epoch + 3)) ] && [ "$(field under_replicated "$s")" = 0 ] && break
		sleep 0.1
	done
	check "round $round: server $victim moved out, the spare copied and counts, in $((SECONDS - t0)) s (epoch $(field epoch "$s"))" \
		test "$(field epoch "$s")" -ge $((epoch + 3)) -a "$(field under_replicated "$s")" = 0 \
		-a "$(replica_of "$victim" "$s")" = 0
	wait "$pb"
	rc_b=$?
	wait "$ps"
	rc_s=$?
	invariant "round $round: bank ($bp): money conserved, every doubt resolved (exit $rc_b)" \
		test "$rc_b" -eq 0
	[ "$rc_b" -eq 0 ] || tail -n 6 "$WORK/bank$round.out" | sed 's/^/    /'
	invariant "round $round: SmallBank ($sp): --verify passes on every replica (exit $rc_s)" \
		test "$rc_s" -eq 0 -a -n "$(grep -o '"violations":0' "$WORK/sb$round.out")"
	[ "$rc_s" -eq 0 ] || grep -v '^{' "$WORK/sb$round.out" | tail -n 10 | sed 's/^/    /'
	history_ok "round $round: bank" "$WORK/bank$round".[0-9]*
	history_ok "round $round: SmallBank" -f "$WORK/sb$round.final" "$WORK/sb$round".[0-9]*
	# back, empty: the next round's spare
	link_up "$victim"
	load_member "$victim" >"$WORK/back$round.out" 2>&1
	check "round $round: server $victim back as a spare (exit $?)" \
		grep -q "replica of no shard: it starts empty" \
		"/run/xtx/$(server_ns "$victim")-$(server_dev "$victim").log"
	sleep 1
done
s=$(status_json)
echo "nemesis failover: $ROUNDS failovers, $ANOMALIES anomalies, $CHECKED transactions checked"
check "every round ended whole: no shard short of R (epoch $(field epoch "$s"))" \
	test "$(field under_replicated "$s")" = 0
for i in 0 1 2 3; do ctl "$i" unload --force >/dev/null 2>&1; done
zk_down
check "no ZooKeeper left behind" test -z "$(pgrep -f -- "$ZK_DIR/data")"
finish
