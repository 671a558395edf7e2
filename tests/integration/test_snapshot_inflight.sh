#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Snapshots between a transaction's log and commit round trips: a restart after one loses no
# acknowledged write, and a replica whose log a snapshot pruned still answers for what it held.
# checks: 38 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

# the resolver never starts on its own here: each case asks it when the test is ready
ARGS="--peers $(all_server_ips) --resolve-after 120s"
setup_servers $ARGS
reload() {
	ctl "$1" unload >/dev/null 2>&1
	make -s -C "$ROOT" load IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")" ARGS="$ARGS" \
		>/dev/null
}
restart_killed() {
	kill -9 "$(cat "/run/xtx/$(server_ns "$1")-$(server_dev "$1").pid")"
	for ((n = 0; n < 100; n++)); do
		[ -e "/run/xtx/$(server_ns "$1")-$(server_dev "$1").pid" ] &&
			kill -0 "$(cat "/run/xtx/$(server_ns "$1")-$(server_dev "$1").pid")" 2>/dev/null ||
			break
		sleep 0.05
	done
	make -s -C "$ROOT" load IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")" ARGS="$ARGS" \
		>/dev/null
}
big=$(printf 'b7%.0s' $(seq 64))	# 64 bytes: the value lives in the overflow store

# ---- (1) logged on every replica, snapshot, then committed: a restart keeps the commit ----
for i in 0 1 2; do
	check "server $i: insert keys 100 and 160 (version 1)" \
		test "$(st "$i" insert 0 100 value=aa)/$(st "$i" insert 0 160 value=cc)" = ok/ok
done
check "server 0: insert key 150 (version 1)" test "$(st 0 insert 0 150 value=dd)" = ok
out=$(op 0 occ-lock 0 100 txn=1)
tok1=$(field "$out" token)
out3=$(op 0 occ-lock 0 160 txn=3 room=1024)
tok3=$(field "$out3" token)
check "primary: txns 1 and 3 lock keys 100 and 160" \
	test "$(field "$out" status)/$(field "$out3" status)" = ok/ok
for i in 0 1 2; do
	check "server $i: txn 1 logs key 100 version 2, txn 3 key 160 version 2 (64 bytes)" \
		test "$(st "$i" log-append 0 100 txn=1 version=2 value=bbbb replicas=0,1,2 \
			flags=last)/$(st "$i" log-append 0 160 txn=3 version=2 value="$big" \
			replicas=0,1,2 flags=last)" = ok/ok
done
check "server 0: txn 2 logs key 150 version 2 on its one replica" \
	test "$(st 0 log-append 0 150 txn=2 version=2 value=eeee replicas=0 flags=last)" = ok
for i in 0 1 2; do
	out=$(ctl "$i" snapshot 2>&1)
	check "server $i: a snapshot between the logs and the commits ($(head -n 1 <<<"$out"))" \
		grep -q '^snapshot: ' <<<"$out"
done
check "the commits: primary, backups, the one-replica write" \
	test "$(st 0 commit-primary 0 100 txn=1 version=1 value=bbbb token="$tok1")/$(
		st 1 commit-backup 0 100 txn=1 version=2 value=bbbb)/$(
		st 2 commit-backup 0 100 txn=1 version=2 value=bbbb)/$(
		st 0 commit-primary 0 160 txn=3 version=1 value="$big" token="$tok3")/$(
		st 1 commit-backup 0 160 txn=3 version=2 value="$big")/$(
		st 2 commit-backup 0 160 txn=3 version=2 value="$big")/$(
		st 0 commit-backup 0 150 txn=2 version=2 value=eeee)" = ok/ok/ok/ok/ok/ok/ok
check "server 0 holds them before the restart" \
	test "$(field "$(row 0 100)" version)" = 2
check "server 0 unloaded and loaded again (recovery from disk)" reload 0
check "server 0 after recovery: key 100 at version 2 ($(row 0 100))" \
	grep -q 'version=2 vlen=2 value=bbbb$' <<<"$(row 0 100)"
check "... key 150 at version 2, the one-replica write ($(row 0 150))" \
	grep -q 'version=2 vlen=2 value=eeee$' <<<"$(row 0 150)"
check "... key 160 at version 2 with its 64 bytes" \
	grep -q "version=2 vlen=64 value=$big\$" <<<"$(row 0 160)"
check "server 1 SIGKILLed and started again (its store rebuilt from disk)" restart_killed 1
check "server 1 after the restart: key 160 at version 2 with its 64 bytes ($(field "$(row 1 160)" version))" \
	grep -q "version=2 vlen=64 value=$big\$" <<<"$(row 1 160)"
check "... key 100 at version 2" grep -q 'version=2 vlen=2 value=bbbb$' <<<"$(row 1 100)"
# what the snapshot carried goes when the next one finds it installed
for i in 0 1 2; do ctl "$i" snapshot >/dev/null 2>&1; done
check "server 2 unloaded and loaded again after a second snapshot" reload 2
check "server 2: keys 100 and 160 at version 2" \
	test "$(field "$(row 2 100)" version)/$(field "$(row 2 160)" version)" = 2/2

# ---- (2) installed at the primary only, its log pruned there by a snapshot ----
for i in 0 1 2; do
	check "server $i: insert key 200 (version 1)" test "$(st "$i" insert 0 200 value=11)" = ok
done
out=$(op 0 occ-lock 0 200 txn=5)
tok=$(field "$out" token)
check "primary: txn 5 locks key 200" test "$(field "$out" status)" = ok
for i in 0 1 2; do
	check "server $i: txn 5 logs key 200 version 2" \
		test "$(st "$i" log-append 0 200 txn=5 version=2 value=2222 replicas=0,1,2 \
			flags=last)" = ok
done
check "primary: txn 5 commits there; its coordinator vanishes before the backups" \
	test "$(st 0 commit-primary 0 200 txn=5 version=1 value=2222 token="$tok")" = ok
# a new ring incarnation, a write on each CPU (each log's last segment stays), then a snapshot:
# the segment holding txn 5 goes
check "server 0 unloaded and loaded again" reload 0
# (the server's XDP runs where its NAPI runs, which a client's CPU only suggests: writes go
# from each CPU in turn until every CPU's ring has taken one)
every_cpu_logged() {
	! ctl 0 log stats --json | grep -o '"tail":[0-9]*' | cut -d: -f2 | grep -qx 0
}
spread_writes() {
	local k
	for ((k = 901; k < 1400; k++)); do
		client taskset -c $((k % $(nproc))) "$BUILD/xtxbench" op --server "$(server_ip 0)" \
			--client-id 9 insert 0 "$k" value=01 | grep -q 'status=ok' || return 1
		every_cpu_logged && return 0
	done
	return 1
}
check "a write logged on each CPU of server 0 since" spread_writes
out=$(ctl 0 snapshot 2>&1)
check "server 0: a snapshot removes the segments before it ($(head -n 1 <<<"$out"))" \
	test "$(grep -o 'removed [0-9]*' <<<"$out" | cut -d' ' -f2)" -gt 0
check "... and txn 5's record with them: no segment holds it" \
	test -z "$(ctl 0 log dump | grep " txn=$(((9 << 48) | 5)) ")"
out=$(client "$BUILD/xtxbench" resolve --servers "$(all_server_ips)" --client-id 9 \
	--protocol occ --txn 5 --witnesses 1 2>&1)
check "asked, server 1 decides txn 5 with the others: committed ($out)" \
	grep -q 'outcome=committed' <<<"$out"
wait_commit() {
	local n
	for ((n = 0; n < 100; n++)); do
		[ "$(field "$(row 1 200)" version)/$(field "$(row 2 200)" version)" = 2/2 ] &&
			return 0
		sleep 0.1
	done
	return 1
}
check "... and every replica holds key 200 at version 2" wait_commit
check "server 0 answered that it held txn 5, never 'not held'" \
	test -z "$(XLOG 0 | grep "txn $(hex_txn 5) decided abort")"
for i in 0 1 2; do XLOG "$i" | grep -E 'resolve: txn|snapshot:' | sed "s/^[0-9.]* /# server $i: /"; done
finish
