#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# TATP and SmallBank through libxtx on 3 servers with R = 3: populate, short runs under OCC, 2PL
# and HADES with --verify, and --verify failing when a replica or the money is tampered with;
# then both against xtx-udpd, populated through transactions and verified through its dumps.
# checks: 82 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

LEASE=300ms
setup_servers --lock-lease "$LEASE"
SERVERS=$(all_server_ips)
CTL=$(all_server_ctls)
tmp=$(mktemp -d /tmp/xtx-test-workloads.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM
SUBS=5000
ACCTS=1000
# Fixed client ids, so the hand-made ops below (client 900) never share one with a run.
# --timeout 20ms: a request is given up after 50 sends, a second; a busy machine's servers
# answer late, not never, and "no failed outcome" is what the runs check
wl() {
	client "$BUILD/xtxbench" "$1" --servers "$SERVERS" --ctl "$CTL" --lock-lease "$LEASE" --timeout 20ms \
		--client-base 100 "${@:2}"
}
tatp() { wl tatp --subscribers "$SUBS" "$@"; }
smallbank() { wl smallbank --accounts "$ACCTS" "$@"; }

# A field of the JSON object inside "total":{...}
total_field() { grep -o '"total":{[^}]*}' <<<"$1" | grep -o "\"$2\":[0-9]*" | cut -d: -f2; }
# A number (with decimals) of the JSON summary
num_field() { grep -o "\"$2\":[0-9.]*" <<<"$1" | head -n 1 | cut -d: -f2; }
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# verified NAME OUT RC: the verdicts every --verify run shares
verified() {
	local name=$1 out=$2 rc=$3 committed
	check "$name: exit 0 ($rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || grep -E "VIOLATION|Error" <<<"$out" | head -n 10 | sed 's/^/    /'
	check "$name: verified with no violation" grep -q '"verify":true,"violations":0}' <<<"$out"
	check "$name: replicas identical" grep -q "verify: replicas identical" <<<"$out"
	committed=$(total_field "$out" committed)
	check "$name: transactions committed (${committed:-0})" test "${committed:-0}" -gt 1000
	[ "${committed:-0}" -gt 1000 ] || grep -E "^t=|^Error" <<<"$out" | sed 's/^/    /'
	check "$name: no unknown or failed outcome" \
		test "$(total_field "$out" unknown).$(total_field "$out" failed)" = "0.0"
}

# ---- TATP ----
out=$(tatp --populate --duration 2 --warmup 500ms --threads 2 --json --verify 2>&1)
rc=$?
verified "tatp occ" "$out" "$rc"
check "tatp: occ is the default" grep -q '"protocol":"occ"' <<<"$out"
n=$(ctl 1 dump --table 1 | wc -l)
check "tatp: every server holds the $SUBS subscribers ($n)" test "$n" -eq "$SUBS"
check "tatp: §1.7 checks ran" test "$(grep -c '^verify: .* OK$' <<<"$out")" -ge 6
logical=$(total_field "$out" logical)
check "tatp: logical failures counted apart (${logical:-0})" test "${logical:-0}" -gt 100
a=$(num_field "$out" attempts_per_s)
m=$(num_field "$out" committed_mqth_per_s)
s=$(num_field "$out" successful_per_s)
check "tatp: attempts/s $a >= MQTh/s $m > successful/s $s" \
	bash -c "awk -v a=$a -v m=$m -v s=$s 'BEGIN { exit !(a >= m && m > s && s > 0) }'"
ratio=$(awk -v m="$m" -v s="$s" 'BEGIN { printf "%.3f", s / m }')
check "tatp: successful/MQTh $ratio near the expected 0.76" \
	awk -v r="$ratio" 'BEGIN { exit !(r > 0.68 && r < 0.84) }'

out=$(tatp --protocol 2pl --duration 2 --warmup 500ms --inflight 32 --json --verify 2>&1)
rc=$?
verified "tatp 2pl" "$out" "$rc"

out=$(tatp --protocol hades --duration 2 --warmup 500ms --json --verify 2>&1)
rc=$?
verified "tatp hades" "$out" "$rc"

# text summary: every type's row, the three rates
out=$(tatp --duration 2 --warmup 0 --dist uniform --end-time 0-23 2>&1)
check "tatp text: exit 0" test $? -eq 0
bad=0
for t in GSD GND GAD USD UL ICF DCF total; do
	grep -Eq "^$t +[0-9]+ +[0-9]+" <<<"$out" || bad=1
done
check "tatp text: a row per type and a total" test $bad -eq 0
check "tatp text: the three rates" grep -q "^rates: attempts/s=.*committed/s=.*successful/s=" \
	<<<"$out"
check "tatp text: progress lines" grep -q "^t=1s  txn/s=" <<<"$out"

# ---- SmallBank: a small hot set, so transactions conflict ----
out=$(smallbank --populate --duration 2 --warmup 500ms --threads 2 --json --verify 2>&1)
rc=$?
verified "smallbank 2pl" "$out" "$rc"
check "smallbank: 2pl is the default" grep -q '"protocol":"2pl"' <<<"$out"
check "smallbank: money conserved" grep -q "^verify: conservation: .* OK$" <<<"$out"
aborted=$(total_field "$out" aborted)
check "smallbank: contention aborts (${aborted:-0})" test "${aborted:-0}" -gt 0
sp=$(json_field "$out" sp_insufficient_funds)
check "smallbank: SendPayments without funds (${sp:-0}) are logical failures" \
	test "${sp:-0}" -gt 0 -a "${sp:-0}" = "$(total_field "$out" logical)"

# aborted transactions retried with the same inputs, as attempts of their own
out=$(smallbank --protocol occ --retry same --duration 2 --warmup 500ms --json --verify 2>&1)
rc=$?
verified "smallbank occ" "$out" "$rc"
check "smallbank occ: money conserved" grep -q "^verify: conservation: .* OK$" <<<"$out"
retried=$(total_field "$out" retried)
check "smallbank occ: aborted transactions retried (${retried:-0})" test "${retried:-0}" -gt 0

out=$(smallbank --protocol hades --duration 2 --warmup 500ms --json --verify 2>&1)
rc=$?
verified "smallbank hades" "$out" "$rc"
check "smallbank hades: money conserved" grep -q "^verify: conservation: .* OK$" <<<"$out"

# 3% of requests and replies lost in every server's XDP: retransmissions, and still every
# transaction resolves and the money adds up.
for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 30000 --drop-reply-ppm 30000 >/dev/null; done
out=$(smallbank --duration 2 --warmup 0 --timeout 1ms --threads 2 --json --verify 2>&1)
rc=$?
for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 0 --drop-reply-ppm 0 >/dev/null; done
verified "smallbank with loss" "$out" "$rc"
retrans=$(json_field "$out" retransmits)
check "smallbank with loss: requests were resent (${retrans:-0})" test "${retrans:-0}" -gt 0

# ---- --verify must catch what a broken server or library would do ----
op() { client "$BUILD/xtxbench" op --server "$(server_ip "$1")" --client-id 900 "${@:2}"; }

# running FILE: a run writing its progress to FILE has begun (its first tick is out);
# stop_run PID: SIGINT to the xtxbench of a background job, which then checks and reports
running() { grep -qs '^t=' "$1"; }
stop_run() { pkill -INT -P "$1"; wait "$1"; }
# Money from nowhere: a cold account's savings rewritten on every replica mid-run.
smallbank --duration 600 --warmup 0 --verify >"$tmp/sb.out" 2>&1 &
pid=$!
wait_until 60 running "$tmp/sb.out"
for i in 0 1 2; do op "$i" update 8 999 value=15cd5b0700000000 >/dev/null; done
stop_run "$pid"
rc=$?
out=$(cat "$tmp/sb.out")
check "smallbank: a balance changed behind its back fails --verify (exit $rc)" test "$rc" -eq 1
check "smallbank: ... as a conservation violation" grep -q "VIOLATION: money" <<<"$out"

# A replica that differs: --verify refuses before running.
op 2 update 9 5 value=0100000000000000 >/dev/null
out=$(smallbank --duration 1 --warmup 0 --verify 2>&1)
check "smallbank: a replica differing fails --verify (exit $?)" grep -q "replicas differ" <<<"$out"

# An immutable TATP row rewritten mid-run: the index row of subscriber 5 now names 6.
tatp --duration 600 --warmup 0 --verify >"$tmp/tatp.out" 2>&1 &
pid=$!
wait_until 60 running "$tmp/tatp.out"
for i in 0 1 2; do op "$i" update 2 5 value=0600000053000000 >/dev/null; done
stop_run "$pid"
rc=$?
out=$(cat "$tmp/tatp.out")
check "tatp: a rewritten index row fails --verify (exit $rc)" test "$rc" -eq 1
check "tatp: ... named as such" grep -q "SEC\[BCD(5)\] does not lead back" <<<"$out"

# ---- bad command lines: a clear error, exit 2 ----
out=$(tatp --verify --ctl x:y --duration 1 2>&1)
check "--ctl with too few servers refused (exit $?)" grep -q "one NETNS:IFACE per server" <<<"$out"
out=$(wl tatp --mix 1,2,3 2>&1)
check "a TATP mix of 3 weights refused" grep -q "want 7 weights" <<<"$out"
out=$(wl smallbank --protocol bogus 2>&1)
check "an unknown protocol refused" grep -q "not occ, 2pl or hades" <<<"$out"
out=$(wl smallbank --populate-via bulk 2>&1)
check "an unknown --populate-via refused (exit $?)" grep -q "'bulk' is not ctl or txn" <<<"$out"
out=$(client "$BUILD/xtxbench" tatp --servers "$SERVERS" --populate-via ctl --populate 2>&1)
check "--populate-via ctl without --ctl refused (exit $?)" \
	grep -q "populate-via ctl needs --ctl" <<<"$out"
out=$(client "$BUILD/xtxbench" tatp --servers "$SERVERS" --verify 2>&1)
check "--verify without --ctl or --dump-cmd refused (exit $?)" grep -q "or --dump-cmd" <<<"$out"

# ---- the same workloads against xtx-udpd: populated through transactions, verified ----
# through its SIGUSR1 dumps
UDPD_DIR=$tmp
trap 'stop_udpds; rm -rf "$tmp"; cleanup' EXIT INT TERM
udpd_dump_script
start_udpds --lock-lease "${LEASE%ms}"
uwl() {
	client "$BUILD/xtxbench" "$1" --servers "$SERVERS" --lock-lease "$LEASE" --client-base 100 --timeout 20ms \
		--dump-cmd "$tmp/dump.sh" "${@:2}"
}
out=$(uwl tatp --subscribers "$SUBS" --populate --duration 0 --threads 2 -v 2>&1)
check "udpd: --populate without --ctl loads through transactions" \
	grep -q "^tatp: populated [0-9]* rows in [0-9]* transactions (occ" <<<"$out"
n=$("$tmp/dump.sh" 1 | grep -c "^table=1 ")
check "udpd: every server holds the $SUBS subscribers (${n:-0})" test "${n:-0}" -eq "$SUBS"
out=$(uwl tatp --subscribers "$SUBS" --duration 2 --warmup 500ms --threads 2 --json --verify 2>&1)
rc=$?
verified "udpd tatp occ" "$out" "$rc"
out=$(uwl smallbank --accounts "$ACCTS" --populate --duration 2 --warmup 500ms --threads 2 --json \
	--verify 2>&1)
rc=$?
verified "udpd smallbank 2pl" "$out" "$rc"
check "udpd smallbank: money conserved" grep -q "^verify: conservation: .* OK$" <<<"$out"

# The ceiling: servers answering every op OK without state.  Reads come back empty; with
# --echo those are logical failures and the attempts are the measure.
start_udpds --echo
out=$(uwl tatp --subscribers "$SUBS" --echo --duration 1 --warmup 0 --threads 2 --json 2>&1)
rc=$?
check "echo tatp: exit 0 ($rc)" test "$rc" -eq 0
a=$(num_field "$out" attempts_per_s)
check "echo tatp: attempts/s reported (${a:-0})" gt "${a:-0}" 1000
check "echo tatp: empty reads are logical failures, nothing broken or unknown" \
	test "$(total_field "$out" broken).$(total_field "$out" unknown)" = "0.0" -a \
	"$(total_field "$out" logical)" -gt 1000
out=$(uwl smallbank --accounts "$ACCTS" --duration 1 --warmup 0 2>&1)
rc=$?
check "echo smallbank without --echo: exit 1 ($rc)" test "$rc" -eq 1
check "echo smallbank without --echo: the error points at --echo" \
	grep -q "servers in --echo mode? then say --echo" <<<"$out"
stop_udpds

finish
