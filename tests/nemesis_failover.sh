#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Repeated failovers: 3 servers and a spare in a cluster held in ZooKeeper (R = 3), bank and
# SmallBank running with their histories recorded while, round after round, a whole server
# (the manager's too) is killed (xtxd SIGKILL, its link down): a backup is promoted, the
# spare copies the shards left short of R, and the killed server comes back empty as the
# next spare.  Every round must show its failover and copy happened, and ends with money
# conserved, --verify on every replica, and the exact history check of every transaction.
# Bank runs OCC, 2PL and HADES in turn (HADES in its own table), SmallBank OCC and 2PL.
# Every other round the server is not killed but its xtxd suspended (SIGSTOP) past its
# session: XDP must stop serving by itself, the others move it out, and resumed it must
# find itself fenced. The cluster shares a secret: strangers on the copy port are closed
# at once, and a request without the seal is refused, while the real copies go on.
# NEMESIS_FAILOVERS rounds (default 6).
# checks: 48 with 6 rounds
source "$(dirname "$0")/integration/lib.sh"
source "$(dirname "$0")/nemesis_checks.sh"
NSERVERS=4
NAME=nf$$
ROUNDS=${NEMESIS_FAILOVERS:-6}
WORK=$(mktemp -d /tmp/xtx-nemesis-failover.XXXXXX)
trap 'cleanup; rm -rf "$WORK"' EXIT INT TERM
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }
printf '%s\n' 00112233445566778899aabbccddeeff >"$WORK/secret"
chmod 600 "$WORK/secret"
SEC="--secret-file $WORK/secret"
# (with a timeout: a suspended xtxd never answers its control socket)
rstat() {
	grep -o "\"$2\":[0-9]*" <<<"$(timeout 5 "$BUILD/xtxctl" --netns "$(server_ns "$1")" \
		--iface "$(server_dev "$1")" rare-stats --json 2>/dev/null)" | cut -d: -f2
}
rstat_sum() {	# rstat_sum NAME: summed over the servers but the victim
	local i t=0 n
	for i in 0 1 2 3; do
		[ "$i" = "${victim:-}" ] && continue
		n=$(rstat "$i" "$1")
		t=$((t + ${n:-0}))
	done
	echo "$t"
}

status_json() { client "$BUILD/xtxctl" cluster status --zk "$ZK_CLIENT" --name "$NAME" --json 2>&1; }
field() { grep -o "\"$1\":[0-9-]*" <<<"$2" | head -n 1 | cut -d: -f2; }
replica_of() { grep -o "\"index\":$1,[^}]*" <<<"$2" | grep -o '"replica_of":[0-9]*' | cut -d: -f2; }
load_member() {
	make -s -C "$ROOT" load IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")" \
		ARGS="--zk $(zk_for_server "$1") --zk-name $NAME --lock-lease 200ms $SEC"
}
link_up() {
	ip -n "$(server_ns "$1")" link set "$(server_dev "$1")" up
	ip -n "$(server_ns "$1")" route replace 10.77.0.0/16 via "10.77.$1.1" dev "$(server_dev "$1")"
}

zk_up >"$WORK/zk.out" 2>&1 || { fail "ZooKeeper up"; cat "$WORK/zk.out"; exit 1; }
client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --name "$NAME" \
	--servers "$(server_ip 0),$(server_ip 1),$(server_ip 2)" --spares "$(server_ip 3)" \
	--shards 12 >/dev/null 2>&1
for i in 0 1 2 3; do
	load_member "$i" >"$WORK/load$i.out" 2>&1 || { fail "load server $i"; cat "$WORK/load$i.out"; exit 1; }
done
client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 5000 \
	--ctl "$(all_server_ctls)" --populate --duration 0 $SEC >/dev/null 2>&1
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
		--table "$btable" $bsetup --history "$WORK/bank$round" $SEC \
		>"$WORK/bank$round.out" 2>&1 &
	pb=$!
	client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 5000 \
		--ctl "$(all_server_ctls)" --warmup 0 --threads 2 --json --duration 11s \
		--protocol "$sp" --verify --client-base 40 --history "$WORK/sb$round" $SEC \
		>"$WORK/sb$round.out" 2>&1 &
	ps=$!
	sleep 2
	vpid=$(cat "/run/xtx/$(server_ns "$victim")-$(server_dev "$victim").pid")
	suspend=$((round % 2 == 0))
	expired0=$(XLOG "$victim" | grep -c "session expired")
	if [ "$suspend" = 1 ]; then
		# a stall past its session (a suspend, a stop): the link stays up
		kill -STOP "$vpid"
	else
		kill -KILL "$vpid"
		ip -n "$(server_ns "$victim")" link set "$(server_dev "$victim")" down
	fi
	# strangers on the copy ports while the shards are copied
	cs0=$(rstat_sum copy_strangers)
	cr0=$(rstat_sum copy_refused)
	for i in 0 1 2 3; do
		[ "$i" = "$victim" ] && continue
		# a server's address, not the victim's (its link may be down)
		for j in 1 2 3; do
			src=$(((i + j) % 4))
			[ "$src" != "$victim" ] && break
		done
		client python3 "$ROOT/tests/integration/peer_msg.py" copy-silent \
			--dst "$(server_ip "$i")" --wait 10 >>"$WORK/strangers$round" 2>&1 &
		ip netns exec "$(server_ns "$src")" python3 \
			"$ROOT/tests/integration/peer_msg.py" copy-request --dst "$(server_ip "$i")" \
			--from "$src" --epoch "$epoch" --wait 10 >>"$WORK/strangers$round" 2>&1 &
	done
	t0=$SECONDS
	for _ in $(seq 1 300); do
		s=$(status_json)
		[ "$(field epoch "$s")" -ge $((epoch + 3)) ] && [ "$(field under_replicated "$s")" = 0 ] && break
		sleep 0.1
	done
	check "round $round: server $victim $([ "$suspend" = 1 ] && echo suspended || echo killed) moved out, the spare copied and counts, in $((SECONDS - t0)) s (epoch $(field epoch "$s"))" \
		test "$(field epoch "$s")" -ge $((epoch + 3)) -a "$(field under_replicated "$s")" = 0 \
		-a "$(replica_of "$victim" "$s")" = 0
	wait_bg_strangers() {
		local n
		for ((n = 0; n < 150; n++)); do
			[ "$(grep -c after "$WORK/strangers$round" 2>/dev/null)" -ge 6 ] && return
			sleep 0.1
		done
	}
	wait_bg_strangers
	check "round $round: copy ports closed on strangers, refused unsealed requests ($(grep -c '^closed' "$WORK/strangers$round") of 6 closed; strangers $((
		$(rstat_sum copy_strangers) - cs0)), refused $(($(rstat_sum copy_refused) - cr0)))" \
		test "$(grep -c '^closed' "$WORK/strangers$round")" -ge 6 \
		-a "$(($(rstat_sum copy_strangers) - cs0))" -ge 3 \
		-a "$(($(rstat_sum copy_refused) - cr0))" -ge 1
	if [ "$suspend" = 1 ]; then
		# resumed past its session: it must have stopped serving, and say it is fenced
		kill -CONT "$vpid"
		expired() {
			local n
			for ((n = 0; n < 200; n++)); do
				[ "$(XLOG "$victim" | grep -c "session expired")" -gt "$expired0" ] && return 0
				sleep 0.1
			done
			return 1
		}
		check "round $round: server $victim resumed finds its session expired and fences itself" \
			expired
		kill -KILL "$vpid"
		for ((n = 0; n < 100; n++)); do kill -0 "$vpid" 2>/dev/null || break; sleep 0.05; done
	fi
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
