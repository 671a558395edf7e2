#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A HADES coordinator that vanishes after intend-to-commit: the participants decide its transaction.
# checks: 108 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

setup_servers --peers "$(all_server_ips)" --resolve-after 1s
all_rows() { local i; for i in 0 1 2; do row "$i" "$1"; done; }
# intend SERVER TXN KEY VALUE [replica]: the transaction's last HINTEND there (Ack expected)
intend() {
	local flags=begin,last
	[ "${5:-}" = replica ] && flags+=,replica
	st "$1" hintend 0 "$3" txn="$2" version=1 value="$4" participants=0,1,2 flags="$flags"
}

# ---- (a) Acked at all three participants, then the coordinator vanishes: validated ----
for i in 0 1 2; do
	check "server $i: insert key 100 (version 1)" test "$(st "$i" insert 0 100 value=aa)" = ok
done
out=$(op 0 hwrite 0 100 txn=1 flags=begin)
check "primary: txn 1 intends to write key 100 at version $(field "$out" version)" \
	test "$(field "$out" status)" = ok -a "$(field "$out" version)" = 1
check "primary: txn 1's last HINTEND is Acked" test "$(intend 0 1 100 bbbb)" = ok
for i in 1 2; do
	check "replica $i: txn 1's last HINTEND is Acked" test "$(intend "$i" 1 100 bbbb replica)" = ok
done
check "while txn 1 commits, its filters keep another txn's HREAD of key 100 out" \
	test "$(st 0 -t 5ms hread 0 100 txn=2 flags=begin)" != ok
check "all three servers decide txn 1" \
	wait_log "hades txn $(hex_txn 1) decided validate" 0 1 2
check "... and validate it everywhere" \
	wait_log "hades txn $(hex_txn 1) validated here: 1 staged writes" 0 1 2
rows=$(all_rows 100)
echo "$rows" | sed 's/^/# /'
check "every replica holds key 100 at version 2 (base + 1) with the new value" \
	test "$(grep -c 'version=2 vlen=2 value=bbbb$' <<<"$rows")" -eq 3
out=$(op 0 hread 0 100 txn=3 flags=begin)
check "the slot is free: another txn reads key 100 at version 2 ($(field "$out" status))" \
	test "$(field "$out" status)" = ok -a "$(field "$out" version)" = 2
check "the coordinator's late HVALIDATE at the primary: already applied" \
	test "$(st 0 hvalidate 0 100 txn=1 flags=last)" = already_applied
check "... and at a replica" test "$(st 2 hvalidate 0 100 txn=1 flags=last)" = already_applied
rows=$(all_rows 100)
check "... and nothing moved: key 100 still at version 2 everywhere" \
	test "$(grep -c 'version=2 vlen=2 value=bbbb$' <<<"$rows")" -eq 3

# ---- (b) Acked at 2 of 3 participants only: aborted everywhere ----
for i in 0 1 2; do
	check "server $i: insert key 200 (version 1)" test "$(st "$i" insert 0 200 value=cc)" = ok
done
check "primary: txn 4 intends to write key 200" \
	test "$(st 0 hwrite 0 200 txn=4 flags=begin)" = ok
check "primary: txn 4's last HINTEND is Acked" test "$(intend 0 4 200 dddd)" = ok
check "replica 1: txn 4's last HINTEND is Acked" test "$(intend 1 4 200 dddd replica)" = ok
check "servers 0 and 1 decide txn 4 as abort" \
	wait_log "hades txn $(hex_txn 4) decided abort" 0 1
check "server 2, asked, fenced txn 4 (it never held it)" \
	wait_log "hades txn $(hex_txn 4) not committing here: fenced" 2
check "... and is told the abort" wait_log "hades txn $(hex_txn 4) decided abort (told by" 2
check "servers 0 and 1 discard its staged writes" \
	wait_log "hades txn $(hex_txn 4) aborted here" 0 1
check "no server decided validate" \
	test "$(for i in 0 1 2; do XLOG "$i" | grep -c "txn $(hex_txn 4) decided validate"; done |
		paste -sd+ | bc)" -eq 0
rows=$(all_rows 200)
echo "$rows" | sed 's/^/# /'
check "no replica has the new value: key 200 at version 1 everywhere" \
	test "$(grep -c 'version=1 vlen=1 value=cc$' <<<"$rows")" -eq 3
out=$(op 0 hwrite 0 200 txn=5 flags=begin)
check "the slot is free: another txn intends to write key 200 ($(field "$out" status))" \
	test "$(field "$out" status)" = ok -a "$(field "$out" version)" = 1
op 0 habort 0 200 txn=5 >/dev/null
check "a late HINTEND of txn 4 to the third participant is refused" \
	test "$(intend 2 4 200 dddd replica)" = nack
check "... and to the primary" test "$(intend 0 4 200 dddd)" = nack
check "... and one without BEGIN too" \
	test "$(st 2 hintend 0 200 txn=4 version=1 value=dddd participants=0,1,2 \
		flags=last,replica)" = nack
check "the coordinator's late HVALIDATE at the primary: the txn is gone" \
	test "$(st 0 hvalidate 0 200 txn=4 flags=last)" = txn_gone
rows=$(all_rows 200)
check "... and key 200 is still at version 1 everywhere" \
	test "$(grep -c 'version=1 vlen=1 value=cc$' <<<"$rows")" -eq 3

# ---- (c) Acked everywhere, validated at one replica only: the others roll forward ----
for i in 0 1 2; do
	check "server $i: insert key 300 (version 1)" test "$(st "$i" insert 0 300 value=ee)" = ok
done
check "primary: txn 6 intends to write key 300" \
	test "$(st 0 hwrite 0 300 txn=6 flags=begin)" = ok
check "primary: txn 6's last HINTEND is Acked" test "$(intend 0 6 300 ffff)" = ok
for i in 1 2; do
	check "replica $i: txn 6's last HINTEND is Acked" test "$(intend "$i" 6 300 ffff replica)" = ok
done
out=$(op 2 hvalidate 0 300 txn=6 flags=last)
check "replica 2 validates txn 6 (version $(field "$out" version)), then the coordinator vanishes" \
	test "$(field "$out" status)" = ok -a "$(field "$out" version)" = 2
check "servers 0 and 1 decide txn 6 as validate (server 2 validated it)" \
	wait_log "hades txn $(hex_txn 6) validated here: 1 staged writes, 1 installed" 0 1
check "no server decided abort" \
	test "$(for i in 0 1 2; do XLOG "$i" | grep -c "txn $(hex_txn 6) decided abort"; done |
		paste -sd+ | bc)" -eq 0
rows=$(all_rows 300)
echo "$rows" | sed 's/^/# /'
check "every replica holds key 300 at version 2 with the new value" \
	test "$(grep -c 'version=2 vlen=2 value=ffff$' <<<"$rows")" -eq 3
check "the coordinator's late HVALIDATE at the primary: already applied" \
	test "$(st 0 hvalidate 0 300 txn=6 flags=last)" = already_applied

# ---- (d) a client in doubt asks (xtxbench resolve, xtx_txn_resolve) ----
resolve() {
	client "$BUILD/xtxbench" resolve --servers "$(all_server_ips)" --client-id 9 \
		--protocol hades "$@" 2>&1
}
for i in 0 1 2; do
	check "server $i: insert keys 400 and 500 (version 1)" \
		test "$(st "$i" insert 0 400 value=44)$(st "$i" insert 0 500 value=55)" = okok
done
check "primary: txn 30 intends to write key 400" test "$(st 0 hwrite 0 400 txn=30 flags=begin)" = ok
check "primary: txn 30's last HINTEND is Acked" test "$(intend 0 30 400 4040)" = ok
for i in 1 2; do
	check "replica $i: txn 30's last HINTEND is Acked" test "$(intend "$i" 30 400 4040 replica)" = ok
done
out=$(resolve --txn 30 --witnesses 0,1,2)
check "txn 30, Acked everywhere: committed ($out)" grep -q "outcome=committed" <<<"$out"
check "... and validated everywhere" \
	wait_log "hades txn $(hex_txn 30) validated here: 1 staged writes" 0 1 2
check "... every replica holds key 400 at version 2" \
	test "$(all_rows 400 | grep -c 'version=2 vlen=2 value=4040$')" -eq 3
check "primary: txn 31 intends to write key 500" test "$(st 0 hwrite 0 500 txn=31 flags=begin)" = ok
check "primary: txn 31's last HINTEND is Acked" test "$(intend 0 31 500 5050)" = ok
check "replica 1: txn 31's last HINTEND is Acked" test "$(intend 1 31 500 5050 replica)" = ok
out=$(resolve --txn 31 --witnesses 0,1,2)
check "txn 31, Acked at 2 of 3: aborted ($out)" grep -q "outcome=aborted" <<<"$out"
check "server 2 fenced it when asked" \
	wait_log "hades txn $(hex_txn 31) not committing here: fenced" 2
check "... so its late HINTEND there is refused" test "$(intend 2 31 500 5050 replica)" = nack
check "servers 0 and 1 discard its staged writes" \
	wait_log "hades txn $(hex_txn 31) aborted here" 0 1
check "... and key 500 is at version 1 everywhere" \
	test "$(all_rows 500 | grep -c 'version=1 vlen=1 value=55$')" -eq 3
check "txn 32, sent nowhere: aborted" \
	grep -q "outcome=aborted" <<<"$(resolve --txn 32 --witnesses 0,1,2)"

# ---- (e) the primary restarted from disk between its Ack and validation keeps the staged write ----
for i in 0 1 2; do
	check "server $i: insert key 700 (version 1)" test "$(st "$i" insert 0 700 value=77)" = ok
done
check "primary: txn 40 intends to write key 700" test "$(st 0 hwrite 0 700 txn=40 flags=begin)" = ok
check "primary: txn 40's last HINTEND is Acked" test "$(intend 0 40 700 7070)" = ok
for i in 1 2; do
	check "replica $i: txn 40's last HINTEND is Acked" test "$(intend "$i" 40 700 7070 replica)" = ok
done
ctl 0 unload >/dev/null
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--peers $(all_server_ips) --resolve-after 1s" >/dev/null
check "the primary restarts from disk (unload, load)" test $? -eq 0
check "... having saved txn 40's staged write at the stop" \
	grep -q "stop: 1 HADES transactions committing here saved" <(XLOG 0)
check "... and put it back before serving" \
	grep -q "recovery: 1 HADES transactions committing at the stop put back" <(XLOG 0)
check "the participants decide txn 40 as validate" \
	wait_log "hades txn $(hex_txn 40) validated here: 1 staged writes" 0 1 2
check "no server decided abort" \
	test "$(for i in 0 1 2; do XLOG "$i" | grep -c "txn $(hex_txn 40) decided abort"; done |
		paste -sd+ | bc)" -eq 0
rows=$(all_rows 700)
echo "$rows" | sed 's/^/# /'
check "every replica holds key 700 at version 2 with the new value" \
	test "$(grep -c 'version=2 vlen=2 value=7070$' <<<"$rows")" -eq 3
check "the carried slots' file is gone once they are back" \
	test ! -e "/var/lib/xtx/$(server_ns 0)-$(server_dev 0)/hades.xcarry"

# ---- (f) once a participant told the resolver it holds a transaction, a late HABORT waits ----
# the resolvers of servers 1 and 2 are stopped, so server 0 asks and cannot decide yet
xtxd_pid() { cat "/run/xtx/$(server_ns "$1")-$(server_dev "$1").pid"; }
for i in 0 1 2; do
	check "server $i: insert key 800 (version 1)" test "$(st "$i" insert 0 800 value=88)" = ok
done
check "primary: txn 50 intends to write key 800" test "$(st 0 hwrite 0 800 txn=50 flags=begin)" = ok
check "primary: txn 50's last HINTEND is Acked" test "$(intend 0 50 800 8080)" = ok
for i in 1 2; do
	check "replica $i: txn 50's last HINTEND is Acked" test "$(intend "$i" 50 800 8080 replica)" = ok
done
kill -STOP "$(xtxd_pid 1)" "$(xtxd_pid 2)"
resolve --txn 50 --witnesses 0 --timeout 300ms >/dev/null
check "asked about it, server 0 holds it and asks the others" \
	wait_log "hades txn $(hex_txn 50) committing here for" 0
out=$(st 0 -t 5ms habort 0 800 txn=50)
kill -CONT "$(xtxd_pid 1)" "$(xtxd_pid 2)"
check "... so the coordinator's late HABORT there is told to retry, not obeyed ($out)" \
	test "$out" = retry
check "once the others answer, every participant validates it" \
	wait_log "hades txn $(hex_txn 50) validated here: 1 staged writes" 0 1 2
check "... key 800 at version 2 everywhere" \
	test "$(all_rows 800 | grep -c 'version=2 vlen=2 value=8080$')" -eq 3
check "... and the HABORT, sent again, finds it decided" \
	test "$(st 0 habort 0 800 txn=50)" = ok

# ---- (g) what a stop carries is put back only under the settings its filters were made with,
# and an unload that would drop it unsaved (xtxd killed) is refused ----
load0() {
	make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
		ARGS="--peers $(all_server_ips) --resolve-after 1s $*" 2>&1
}
for i in 0 1 2; do
	check "server $i: insert key 900 (version 1)" test "$(st "$i" insert 0 900 value=99)" = ok
done
check "primary: txn 60 intends to write key 900" test "$(st 0 hwrite 0 900 txn=60 flags=begin)" = ok
check "primary: txn 60's last HINTEND is Acked" test "$(intend 0 60 900 9090)" = ok
for i in 1 2; do
	check "replica $i: txn 60's last HINTEND is Acked" test "$(intend "$i" 60 900 9090 replica)" = ok
done
kill -STOP "$(xtxd_pid 1)" "$(xtxd_pid 2)"
kill9_xtxd 0
out=$(ctl 0 unload 2>&1)
rc=$?
check "with xtxd killed, unload refuses to drop the committing slot (rc $rc)" \
	test "$rc" -ne 0 -a "$(grep -c 'HADES transactions are committing here' <<<"$out")" = 1
out=$(load0)
check "a start adopts the maps, the slot with them ($out)" grep -q adopting <(XLOG 0)
ctl 0 unload >/dev/null
check "a clean stop saves it" test -e "/var/lib/xtx/$(server_ns 0)-$(server_dev 0)/hades.xcarry"
out=$(load0 --hades-bf-bits 512)
check "a start with other filter bits refuses to put it back" \
	grep -q 'saved under --hades-bf-bits 1024' <<<"$out"
check "... and keeps the file" test -e "/var/lib/xtx/$(server_ns 0)-$(server_dev 0)/hades.xcarry"
ctl 0 unload --force >/dev/null 2>&1
out=$(load0)
check "a start with the same settings puts it back" \
	test "$(XLOG 0 | grep -c 'recovery: 1 HADES transactions committing at the stop put back')" -ge 2
kill -CONT "$(xtxd_pid 1)" "$(xtxd_pid 2)"
check "every participant validates txn 60" \
	wait_log "hades txn $(hex_txn 60) validated here: 1 staged writes" 0 1 2
check "... key 900 at version 2 everywhere" \
	test "$(all_rows 900 | grep -c 'version=2 vlen=2 value=9090$')" -eq 3

# ---- (h) bank clients SIGKILLed mid-run: what they left committing is decided alike everywhere ----
bank() {
	ip netns exec "$PREFIX-c" "$BUILD/xtxbench" bank --servers "$(all_server_ips)" \
		--protocol hades --threads 2 --inflight 16 --accounts 16 "$@" 2>&1
}
out=$(bank --duration 1s --check)
check "bank: accounts set up, money conserved" grep -q "conserved" <<<"$out"
for k in 1 2 3; do
	# not through a function: ip netns exec becomes the client, so the kill reaches it
	ip netns exec "$PREFIX-c" "$BUILD/xtxbench" bank --servers "$(all_server_ips)" \
		--protocol hades --threads 2 --inflight 16 --accounts 16 --duration 20s \
		--no-setup -c $((500 + 40 * k)) >/dev/null 2>&1 &
	pid=$!
	sleep "1.$((RANDOM % 9 + 1))"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
done
# past --resolve-after the servers decide what the killed clients left committing: wait
# until no server holds a committing slot (xtxctl top shows them)
committing() { ctl "$1" top --interval 100 --refreshes 1 | sed -n 's/.*(\([0-9]*\) committing).*/\1/p'; }
none_committing() { local i; for i in 0 1 2; do [ "$(committing "$i")" = 0 ] || return 1; done; }
wait_until 60 none_committing
# "TXN OUTCOME" per decision, every server
decisions() {
	local i
	for i in 0 1 2; do XLOG "$i" | grep -o 'hades txn 0x[0-9a-f]* decided [a-z]*'; done |
		awk '$3 !~ /^0x9000000000/ {print $3, $5}'
}
n=$(decisions | awk '{print $1}' | sort -u | wc -l)
echo "# transactions the killed clients left committing: $n"
check "no transaction decided both ways, over the $n the killed clients left" \
	test "$n" -gt 0 -a "$(decisions | sort -u | awk '{print $1}' | uniq -d | wc -l)" -eq 0
out=$(timeout 30 ip netns exec "$PREFIX-c" "$BUILD/xtxbench" bank --servers "$(all_server_ips)" \
	--protocol hades --threads 2 --inflight 16 --accounts 16 --duration 2s --no-setup --check \
	-c 900 2>&1)
rc=$?
echo "$out" | grep -E 'conserved|committed ' | sed 's/^/# /'
check "a new client runs on every account afterwards, money conserved (rc $rc)" \
	test "$rc" -eq 0 -a "$(grep -c conserved <<<"$out")" -eq 1

for i in 0 1 2; do XLOG "$i" | grep 'resolve: hades' | sed "s/^[0-9TZ:.-]* [a-z]* */# server $i: /"; done
finish
