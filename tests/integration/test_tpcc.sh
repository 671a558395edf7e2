#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# TPC-C through libxtx on 3 servers with R = 3 at a small scale (1 warehouse per server, 1000
# items, 60 customers a district): the standard mix under OCC and NewOrder alone under 2PL,
# each passing --verify (conditions 1-10, 12, the indexes, the run's commits in the store),
# once under loss; the standard mix under HADES, its rows over 40 bytes staged whole; a row
# slipped in behind its back fails --verify; then the standard mix under 2PL against
# xtx-udpd, loaded through transactions.  Servers that refuse values over 40 bytes (an xtxd
# without them) are replaced by xtx-udpd for every run.
# checks: 55 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

LEASE=300ms
setup_servers --lock-lease "$LEASE"
SERVERS=$(all_server_ips)
CTL=$(all_server_ctls)
tmp=$(mktemp -d /tmp/xtx-test-tpcc.XXXXXX)

# ---- the servers: xtxd, or xtx-udpd (lib.sh: SIGUSR1 dumps, faults given at start) ----
UDPD_DIR=$tmp
trap 'stop_udpds; rm -rf "$tmp"; cleanup' EXIT INT TERM
udpd_dump_script

op() { client "$BUILD/xtxbench" op --server "$(server_ip "$1")" --client-id 900 "${@:2}"; }
# TPC-C's rows need values over 40 bytes (a key of table 11, which TPC-C leaves alone): a
# server that refused them would fail every run below, and says so here first.
BACKEND=xtxd
check "xtxd takes a 41-byte value" \
	grep -q "status=ok" <<<"$(op 0 insert 11 1 value="$(printf '%082d' 0)")"
op 0 delete 11 1 >/dev/null
access() {
	if [ "$BACKEND" = xtxd ]; then echo "--ctl $CTL"; else echo "--dump-cmd $tmp/dump.sh"; fi
}
dump_of() { if [ "$BACKEND" = xtxd ]; then ctl "$1" dump; else "$tmp/dump.sh" "$1"; fi; }
tpcc() {
	# shellcheck disable=SC2046
	# --timeout 20ms: a request is given up after a second, not 100 ms: busy servers answer late
	client "$BUILD/xtxbench" tpcc --servers "$SERVERS" $(access) --lock-lease "$LEASE" --timeout 20ms \
		--client-base 100 --warehouses 1 --items 1000 --customers 60 "$@"
}

# A field of the JSON object inside "total":{...}
total_field() { grep -o '"total":{[^}]*}' <<<"$1" | grep -o "\"$2\":[0-9]*" | cut -d: -f2; }
# A field of one type's object "NAME":{...}
type_field() {
	grep -o "\"$2\":{[^}]*}" <<<"$1" | grep -o "\"$3\":[0-9]*" | head -n 1 | cut -d: -f2
}
num_field() { grep -o "\"$2\":[0-9.]*" <<<"$1" | head -n 1 | cut -d: -f2; }

# verified NAME OUT RC: the verdicts every --verify run shares
verified() {
	local name=$1 out=$2 rc=$3 committed oks
	check "$name: exit 0 ($rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || grep -E "VIOLATION|Error" <<<"$out" | head -n 10 | sed 's/^/    /'
	check "$name: verified with no violation" grep -q '"verify":true,"violations":0}' <<<"$out"
	check "$name: replicas identical" grep -q "verify: replicas identical" <<<"$out"
	committed=$(total_field "$out" committed)
	check "$name: transactions committed (${committed:-0})" test "${committed:-0}" -gt 200
	check "$name: no unknown or failed outcome" \
		test "$(total_field "$out" unknown).$(total_field "$out" failed)" = "0.0"
	oks=$(grep -c "^verify: after: .* OK$" <<<"$out")
	check "$name: the 9 groups of conditions hold after the run ($oks)" test "$oks" -eq 9
	check "$name: the run's commits are in the store" \
		grep -q "^verify: across the run: .* OK$" <<<"$out"
}

# ---- the standard mix, OCC ----
out=$(tpcc --populate --duration 3 --warmup 500ms --threads 2 --json --verify 2>&1)
rc=$?
verified "tpcc standard occ ($BACKEND)" "$out" "$rc"
check "tpcc: occ is the default" grep -q '"protocol":"occ"' <<<"$out"
dump_of 1 >"$tmp/dump1"
n=$(grep -c "^table=12 key=$(((3 << 56) | (1 << 40) | (1 << 32) | 60)) " "$tmp/dump1")
m=$(grep -c "^table=12 key=$(((3 << 56) | (1 << 40) | (1 << 32))) " "$tmp/dump1")
check "tpcc: customer 1/1/60 in table 12, 1/1/0 nowhere: ids are 1-based ($n, $m)" \
	test "$n.$m" = "1.0"
n=$(grep -c "^table=7 key=$(((1 << 56) | (3 << 40))) " "$tmp/dump1")
m=$(grep -c "^table=7 key=$((1 << 56)) " "$tmp/dump1")
check "tpcc: warehouse 3 of 3 in table 7, warehouse 0 nowhere ($n, $m)" test "$n.$m" = "1.0"
n=$(grep -c "^table=6 key=$(((6 << 56) | (2 << 40) | (10 << 32) | 60)) " "$tmp/dump1")
check "tpcc: order 2/10/60 in table 6, the small rows' ($n)" test "$n" -eq 1
for t in NO PAY OS DLV SL; do
	c=$(type_field "$out" "$t" committed)
	check "tpcc: $t committed (${c:-0})" test "${c:-0}" -gt 0
done
tpmc=$(num_field "$out" tpmC)
nops=$(num_field "$out" new_orders_per_s)
check "tpcc: tpmC $tpmc = 60 x new orders/s $nops (each to 0.1)" \
	awk -v a="${tpmc:-0}" -v b="${nops:-0}" 'BEGIN { exit !(a > 0 && (a - 60 * b)^2 < 10) }'
ps=$(num_field "$out" new_orders_per_s_per_server)
check "tpcc: per server = a third ($ps)" \
	awk -v a="${ps:-0}" -v b="${nops:-0}" 'BEGIN { exit !(a > 0 && (3 * a - b)^2 < 1) }'
rb=$(num_field "$out" new_order_rollbacks)
check "tpcc: rollbacks are NewOrder's logical failures (${rb:-0})" \
	test "${rb:-0}" -eq "$(type_field "$out" NO logical)"

# ---- NewOrder alone, 2PL ----
out=$(tpcc --mix neworder --protocol 2pl --duration 2 --warmup 500ms --inflight 8 --json \
	--verify 2>&1)
rc=$?
verified "tpcc neworder 2pl ($BACKEND)" "$out" "$rc"
check "tpcc neworder: nothing but NewOrder ran" \
	test "$(type_field "$out" PAY attempted).$(type_field "$out" DLV attempted)" = "0.0"

# ---- 3% of requests and replies lost: retransmissions, every outcome settled, verified ----
if [ "$BACKEND" = xtxd ]; then
	for i in 0 1 2; do
		ctl "$i" fault --drop-request-ppm 30000 --drop-reply-ppm 30000 >/dev/null
	done
	out=$(tpcc --duration 2 --warmup 0 --timeout 1ms --threads 2 --json --verify 2>&1)
	rc=$?
	for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 0 --drop-reply-ppm 0 >/dev/null; done
else
	start_udpds --lock-lease "${LEASE%ms}" --drop-request-ppm 30000 --drop-reply-ppm 30000
	out=$(tpcc --populate --duration 2 --warmup 0 --timeout 1ms --threads 2 --json \
		--verify 2>&1)
	rc=$?
	start_udpds --lock-lease "${LEASE%ms}"
	tpcc --populate --duration 0 >/dev/null 2>&1 || fail "populate again"
fi
verified "tpcc with loss ($BACKEND)" "$out" "$rc"
retrans=$(json_field "$out" retransmits)
check "tpcc with loss: requests were resent (${retrans:-0})" test "${retrans:-0}" -gt 0

# ---- the standard mix under HADES: DISTRICT, STOCK, CUSTOMER ... written through its staging ----
out=$(tpcc --protocol hades --duration 2 --warmup 300ms --threads 2 --json --verify 2>&1)
rc=$?
verified "tpcc standard hades ($BACKEND)" "$out" "$rc"

# ---- text output ----
out=$(tpcc --duration 1 --warmup 0 2>&1)
check "tpcc text: exit 0 ($?)" test $? -eq 0
check "tpcc text: tpmC and new orders/s per server" \
	grep -q "^rates: tpmC=[0-9]* ([0-9]* per server)  new orders/s=" <<<"$out"

# ---- --verify catches a row slipped in behind its back: a new-order far past the orders ----
# (the run goes on until the row is in: its first progress tick says it runs; SIGINT ends it)
tpcc --duration 600 --warmup 0 --verify >"$tmp/t.out" 2>&1 &
pid=$!
ticked() { grep -qs '^t=' "$tmp/t.out"; }
wait_until 60 ticked
key=$(((5 << 56) | (1 << 40) | (1 << 32) | 99999))
for i in 0 1 2; do op "$i" insert 6 "$key" value=9f860100 >/dev/null; done
pkill -INT -P "$pid"
wait "$pid"
rc=$?
out=$(cat "$tmp/t.out")
check "tpcc: a stray new-order row fails --verify (exit $rc)" test "$rc" -eq 1
check "tpcc: ... as condition 2" grep -q "VIOLATION: after: district 1/1: D_NEXT_O_ID" <<<"$out"

# ---- the standard mix under 2PL against xtx-udpd, loaded through transactions ----
BACKEND=udpd
start_udpds --lock-lease "${LEASE%ms}"
out=$(tpcc --protocol 2pl --populate --duration 2 --warmup 300ms --json --verify -v 2>&1)
rc=$?
verified "udpd tpcc standard 2pl" "$out" "$rc"
check "udpd: populated through transactions" grep -q "^tpcc: populated [0-9]* rows" <<<"$out"
stop_udpds

finish
