#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# HADES and OCC/2PL never run on one table at once: HADES transactions take no locks and
# OCC/2PL ones see no HADES filters, so each would commit over the other's checks. While
# bank transfers run under OCC, HADES transactions on the same table are refused (cause
# mixed, nothing written) while HADES elsewhere commits; the table switches once OCC has
# been idle for twice the longer lease, and the history of both phases is serializable.
# checks: 15 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

LEASE=300ms
setup_servers --lock-lease "$LEASE"
SERVERS=$(all_server_ips)
tmp=$(mktemp -d /tmp/xtx-test-mixed.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM

# (2 in flight: the runs last as long as their checks need, and their histories stay small
# enough to check in seconds)
bank() {
	client "$BUILD/xtxbench" bank --servers "$SERVERS" --lease "$LEASE" --accounts 32 \
		--threads 1 --inflight 2 --check --json "$@"
}
jf() { grep -o "\"$2\":[0-9]*" <<<"$1" | head -n 1 | cut -d: -f2; }
mixed_refusals() {
	ctl "$1" stats | awk '$1 ~ /^h(read|write|intend|validate)$/ && $2 == "mixed" { s += $3 }
		END { print s + 0 }'
}

# opsum OP STATUS: how many OP answered STATUS, over every server
opsum() {
	local i n=0
	for i in 0 1 2; do
		n=$((n + $(ctl "$i" stats | awk -v o="$1" -v st="$2" '$1 == o && $2 == st { print $3 }
			END { print 0 }' | head -n 1)))
	done
	echo "$n"
}
more_than() { [ "$(opsum "$1" "$2")" -gt "$3" ]; }
mixed_2pl() { echo $(($(opsum lock_excl mixed) + $(opsum lock_shared mixed))); }
more_2pl_mixed() { [ "$(mixed_2pl)" -gt "$1" ]; }
# stop_run PID: ends a run started in the background for as long as it takes (SIGINT to
# the xtxbench the job's shell runs: it stops, checks and reports), and returns its status
stop_run() { pkill -INT -P "$1"; wait "$1"; }

# OCC owns table 12 (a run that lasts until the checks below are done with it); HADES asks
# for it meanwhile, and uses table 13 freely.
c0=$(opsum commit_primary ok)
bank --table 12 --protocol occ --duration 600 --client-base 100 --history "$tmp/h-occ" \
	>"$tmp/occ.json" 2>"$tmp/occ.err" &
occ=$!
wait_until 60 more_than commit_primary ok $((c0 + 100))
# (no --check: its reads of the table would be refused as its transfers are, for as long as
# occ runs; occ's own check below covers the table)
out=$(client "$BUILD/xtxbench" bank --servers "$SERVERS" --lease "$LEASE" --accounts 32 \
	--threads 1 --inflight 2 --json --table 12 --protocol hades --no-setup --duration 1 \
	--client-base 110 --history "$tmp/h-refused" 2>&1)
check "hades on occ's table: nothing committed ($(jf "$out" committed))" \
	test "$(jf "$out" committed)" = 0
check "... every transaction aborted, cause mixed ($(jf "$out" mixed) of $(jf "$out" aborted))" \
	test "$(jf "$out" mixed)" -gt 0 -a "$(jf "$out" mixed)" = "$(jf "$out" aborted)"
out=$(bank --table 13 --protocol hades --duration 1 --client-base 120 2>&1)
check "hades on another table meanwhile: commits ($(jf "$out" committed))" \
	test "$(jf "$out" committed)" -gt 100
stop_run "$occ"
rc=$?
out=$(cat "$tmp/occ.json" "$tmp/occ.err")
check "occ ran undisturbed: exit 0 ($rc), no mixed abort ($(jf "$out" mixed))" \
	test "$rc" -eq 0 -a "$(jf "$out" mixed)" = 0
check "occ: money conserved" grep -q "total .* conserved" "$tmp/occ.err"
n=0
for i in 0 1 2; do n=$((n + $(mixed_refusals "$i"))); done
check "the servers counted the refusals ($n)" test "$n" -gt 0

# Idle for longer than twice the longer lease (500 ms HADES; the subject: any longer idle
# does): the table goes to HADES, which then keeps it while it runs.
sleep 1.2
v0=$(opsum hvalidate ok)
bank --table 12 --protocol hades --no-setup --duration 600 --client-base 130 \
	--history "$tmp/h-hades" >"$tmp/hades.out" 2>&1 &
hades=$!
wait_until 60 more_than hvalidate ok $((v0 + 300))
# And back: 2PL asks while HADES runs, refused; once HADES has been idle long enough, 2PL's.
m0=$(mixed_2pl)
c0=$(opsum commit_primary ok)
bank --table 12 --protocol 2pl --no-setup --duration 600 --client-base 140 \
	--history "$tmp/h-2pl" >"$tmp/2pl.out" 2>&1 &
twopl=$!
wait_until 60 more_2pl_mixed "$m0"
stop_run "$hades"
out=$(cat "$tmp/hades.out")
check "after occ went idle, hades takes the table: commits ($(jf "$out" committed))" \
	test "$(jf "$out" committed)" -gt 100
check "... no mixed abort ($(jf "$out" mixed))" test "$(jf "$out" mixed)" = 0
check "... money conserved" grep -q "total .* conserved" <<<"$out"
wait_until 60 more_than commit_primary ok $((c0 + 200))
stop_run "$twopl"
out=$(cat "$tmp/2pl.out")
check "2pl while hades ran: refused at first ($(jf "$out" mixed) mixed)" \
	test "$(jf "$out" mixed)" -gt 0
check "... then the table is 2pl's: commits ($(jf "$out" committed))" \
	test "$(jf "$out" committed)" -gt 100
check "... money conserved" grep -q "total .* conserved" <<<"$out"

out=$("$BUILD/xtxbench" check-history "$tmp"/h-* 2>&1)
rc=$?
check "the history of all three phases is serializable (exit $rc)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || head -n 5 <<<"$out" | sed 's/^/    /'
c=$(grep -o "[0-9]* committed" <<<"$out" | head -n 1 | cut -d' ' -f1)
check "... over ${c:-0} committed transactions" test "${c:-0}" -gt 1000

# A server whose locks never expire keeps a table's first family for good.
ctl 0 unload >/dev/null
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--lock-lease 0" >/dev/null
client "$BUILD/xtxbench" op --server "$(server_ip 0)" --client-id 900 lock-excl 11 1 txn=1 \
	>/dev/null 2>&1
client "$BUILD/xtxbench" op --server "$(server_ip 0)" --client-id 900 unlock-excl 11 1 txn=1 \
	>/dev/null 2>&1
sleep 2.2	# idle past twice the leases a server with lock leases would wait (the subject)
out=$(client "$BUILD/xtxbench" op --server "$(server_ip 0)" --client-id 900 hread 11 1 txn=2 2>&1)
check "lock lease 0: a table never switches ($out)" grep -q "status=mixed" <<<"$out"
finish
