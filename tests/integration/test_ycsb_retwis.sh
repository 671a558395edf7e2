#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# YCSB and Retwis through libxtx on 3 xtx servers with R = 3, at full size (1016-byte records,
# lists of up to 1 KiB): populate, short runs of every YCSB workload (A, B, C, F; zipf and
# uniform; transactions of 5 requests and single ops) and of Retwis under OCC and 2PL with
# --verify, once each under loss, and --verify failing when a record is torn or set back (a
# lost update) or a follow list is emptied behind the clients' backs; HADES on the same full-size
# data, and on data of its own within the slot; then both against xtx-udpd, populated
# through transactions.
# checks: 108 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

LEASE=300ms
setup_servers --lock-lease "$LEASE"
SERVERS=$(all_server_ips)
CTL=$(all_server_ctls)
tmp=$(mktemp -d /tmp/xtx-test-ycsb.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM
RECORDS=2000
USERS=2000
# Record and list sizes of the OCC and 2PL runs: the workloads' defaults (YCSB's 1016-byte
# records, Retwis's lists of up to 1 KiB), or YCSB_ARGS and RETWIS_ARGS; HADES runs on them too,
# and on a data set of its own at the slot's 40 bytes.
YCSB_SIZE=(${YCSB_ARGS:-})
RETWIS_SIZE=(${RETWIS_ARGS:-})
YCSB_SMALL=(--fields 3 --field-size 8)
RETWIS_SMALL=(--value-max 40 --tweet-size 40 --follows 3)
# Fixed client ids, so the hand-made ops below (client 900) never share one with a run.
# --timeout 20ms: a request is given up after a second, not 100 ms: busy servers answer late
wl() {
	client "$BUILD/xtxbench" "$1" --servers "$SERVERS" --ctl "$CTL" --lock-lease "$LEASE" --timeout 20ms \
		--client-base 100 "${@:2}"
}
ycsb() { wl ycsb --records "$RECORDS" "${YCSB_SIZE[@]}" "$@"; }
retwis() { wl retwis --users "$USERS" "${RETWIS_SIZE[@]}" "$@"; }
RUN=(--duration 1 --warmup 200ms --json --verify)
# after_first_tick FILE: waits (5 s at most) for a run's first progress line, so a change made
# behind its back comes after its snapshot before the run
after_first_tick() {
	local n
	for ((n = 0; n < 100; n++)); do grep -q "^t=" "$1" 2>/dev/null && return; sleep 0.05; done
}

# until_changed TABLE KEY OLD PID: waits until the run PID has written record KEY (its value no
# longer OLD); false if the run ended first.  A lost update needs an update to lose.
until_changed() {
	local v
	while kill -0 "$4" 2>/dev/null; do
		v=$(ctl 0 dump --table "$1" | grep " key=$2 " | grep -o 'value=[0-9a-f]*' | cut -d= -f2)
		[ -n "$v" ] && [ "$v" != "$3" ] && return 0
		sleep 0.05
	done
	return 1
}

total_field() { grep -o '"total":{[^}]*}' <<<"$1" | grep -o "\"$2\":[0-9]*" | cut -d: -f2; }

# verified NAME OUT RC: the verdicts every --verify run shares
verified() {
	local name=$1 out=$2 rc=$3 committed bad
	check "$name: exit 0 ($rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || grep -E "VIOLATION|Error|^ycsb:|^retwis:" <<<"$out" | head -n 10 |
		sed 's/^/    /'
	check "$name: verified with no violation, replicas identical" \
		grep -q '"verify":true,"violations":0}' <<<"$out"
	committed=$(total_field "$out" committed)
	check "$name: transactions committed (${committed:-0})" test "${committed:-0}" -gt 200
	bad=$(total_field "$out" unknown).$(total_field "$out" failed).$(total_field "$out" broken)
	check "$name: no unknown, failed or broken outcome ($bad)" test "$bad" = "0.0.0"
}

# ---- YCSB ----
out=$(ycsb --workload a --populate --duration 0 -v 2>&1)
check "ycsb: populate (exit $?)" grep -q "^ycsb: populated $RECORDS rows" <<<"$out"
n=$(ctl 1 dump --table 10 | wc -l)
check "ycsb: every server holds the $RECORDS records ($n)" test "$n" -eq "$RECORDS"

# WORKLOAD DIST K PROTOCOL: each workload, each distribution, transactions and single ops
for run in "a zipf 5 occ" "a uniform 1 2pl" "b uniform 5 2pl" "c zipf 1 occ" "f zipf 5 occ" \
	"f uniform 1 2pl"; do
	set -- $run
	out=$(ycsb --workload "$1" --distribution "$2" --ops-per-txn "$3" --protocol "$4" \
		--threads 2 "${RUN[@]}" 2>&1)
	rc=$?
	verified "ycsb $run" "$out" "$rc"
	case $1 in
	a | b)
		check "ycsb $run: fields as committed updates left them" \
			grep -q "^verify: every field as loaded or as a committed write" <<<"$out" ;;
	c)
		check "ycsb $run: nothing written" grep -q '"updates":0,"rmws":0' <<<"$out" ;;
	f)
		check "ycsb $run: counters moved by the committed read-modify-writes" \
			grep -q "^verify: counters: .* OK$" <<<"$out" ;;
	esac
done
# the JSON's request counts: 5 per committed transaction
out=$(ycsb --workload a --duration 1 --warmup 0 --json 2>&1)
r=$(json_field "$out" reads)
u=$(json_field "$out" updates)
c=$(total_field "$out" committed)
check "ycsb: 5 requests per committed transaction ($r + $u = 5 x $c)" \
	test "$((${r:-0} + ${u:-0}))" -eq "$((5 * ${c:-1}))"
check "ycsb: ops/s reported" grep -q '"ops_per_s":[1-9]' <<<"$out"

# 3% of requests and replies lost: retransmissions, and the counters still add up.
for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 30000 --drop-reply-ppm 30000 >/dev/null; done
out=$(ycsb --workload f --timeout 1ms --threads 2 "${RUN[@]}" 2>&1)
rc=$?
for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 0 --drop-reply-ppm 0 >/dev/null; done
verified "ycsb f with loss" "$out" "$rc"
retrans=$(json_field "$out" retransmits)
check "ycsb f with loss: requests were resent (${retrans:-0})" test "${retrans:-0}" -gt 0

# ---- --verify must catch what a broken server or library would do ----
op() { client "$BUILD/xtxbench" op --server "$(server_ip "$1")" --client-id 900 "${@:2}"; }
# update_all TABLE KEY HEX: the row rewritten on every replica, again while a transaction
# holds its lock
update_all() {
	local i n
	for i in 0 1 2; do
		for ((n = 0; n < 200; n++)); do
			op "$i" update "$1" "$2" "value=$3" | grep -q "status=ok" && break
			sleep 0.01
		done
	done
}
# record HEX of key K with counter C and its fields' stamps all 0, as the load made it, but
# for the counter: a read-modify-write that no transaction made
rec=$(ctl 0 dump --table 10 | grep " key=1999 " | grep -o 'value=[0-9a-f]*' | cut -d= -f2)
ycsb --workload f --duration 2 --warmup 0 --verify >"$tmp/y.out" 2>&1 &
pid=$!
after_first_tick "$tmp/y.out"
# the counter bumped (byte 8), the checksum left as it was
bad=${rec:0:16}ff${rec:18}
update_all 10 1999 "$bad"
wait "$pid"
rc=$?
out=$(cat "$tmp/y.out")
check "ycsb: a record rewritten behind its back fails --verify (exit $rc)" test "$rc" -eq 1
check "ycsb: ... named as such" grep -q "record 1999: checksum does not match" <<<"$out"
update_all 10 1999 "$rec"

# A lost update: the hottest record set back mid-run to what it held before the run, a
# well-formed record whose counter and fields no longer count the read-modify-writes since.
rec=$(ctl 0 dump --table 10 | grep " key=0 " | grep -o 'value=[0-9a-f]*' | cut -d= -f2)
ycsb --workload f --duration 2 --warmup 0 --verify >"$tmp/y.out" 2>&1 &
pid=$!
until_changed 10 0 "$rec" "$pid" || fail "the run ended before it wrote record 0"
update_all 10 0 "$rec"
wait "$pid"
rc=$?
out=$(cat "$tmp/y.out")
check "ycsb: a lost update fails --verify (exit $rc)" test "$rc" -eq 1
check "ycsb: ... in the counters and in record 0's history" \
	bash -c 'grep -q "VIOLATION: counters: " <<<"$1" && grep -q "VIOLATION: record 0" <<<"$1"' \
	_ "$out"

out=$(ycsb --workload a --protocol hades --threads 2 "${RUN[@]}" 2>&1)
rc=$?
verified "ycsb a zipf 5 hades, full-size records" "$out" "$rc"
check "ycsb a zipf 5 hades: fields as committed updates left them" \
	grep -q "^verify: every field as loaded or as a committed write" <<<"$out"
out=$(wl ycsb --duration 1 2>&1)
check "ycsb: --workload is required (exit $?)" grep -q "workload a|b|c|f is required" <<<"$out"
out=$(wl ycsb --workload e --duration 1 2>&1)
check "ycsb: workload e refused (exit $?)" grep -q "'e' is not a, b, c or f" <<<"$out"

# ---- Retwis ----
out=$(retwis --populate --duration 0 -v 2>&1)
check "retwis: populate (exit $?)" grep -q "^retwis: populated [0-9]* rows" <<<"$out"
for p in occ 2pl; do
	out=$(retwis --protocol "$p" --threads 2 "${RUN[@]}" 2>&1)
	rc=$?
	verified "retwis $p" "$out" "$rc"
	check "retwis $p: the graph and timelines hold" \
		grep -q "^verify: after: .* follow relations the same from both sides" <<<"$out"
	check "retwis $p: users, tweets and relations as committed" \
		grep -q "^verify: .* users added, .* tweets posted, .* as the committed" <<<"$out"
done
out=$(retwis --distribution uniform --fanout 0 "${RUN[@]}" 2>&1)
rc=$?
verified "retwis uniform, no fanout" "$out" "$rc"

for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 30000 --drop-reply-ppm 30000 >/dev/null; done
out=$(retwis --timeout 1ms --threads 2 "${RUN[@]}" 2>&1)
rc=$?
for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 0 --drop-reply-ppm 0 >/dev/null; done
verified "retwis with loss" "$out" "$rc"

out=$(retwis --protocol hades --threads 2 "${RUN[@]}" 2>&1)
rc=$?
verified "retwis hades, full-size lists" "$out" "$rc"
check "retwis hades, full-size lists: the graph and timelines hold" \
	grep -q "^verify: after: .* follow relations the same from both sides" <<<"$out"
check "retwis hades, full-size lists: users, tweets and relations as committed" \
	grep -q "^verify: .* users added, .* tweets posted, .* as the committed" <<<"$out"

# User 0, the hottest, loses its followers list on every replica: the relations are one-sided.
retwis --duration 2 --warmup 0 --verify >"$tmp/r.out" 2>&1 &
pid=$!
after_first_tick "$tmp/r.out"
key=$((2 << 56))
update_all 15 "$key" 0200000000000000
wait "$pid"
rc=$?
out=$(cat "$tmp/r.out")
check "retwis: a follow list emptied behind its back fails (exit $rc)" test "$rc" -eq 1
check "retwis: ... as one-sided relations" \
	grep -Eq "follow lists disagree|follows b on one side only" <<<"$out"



# ---- HADES, on values within the slot, on xtxd servers started afresh: a load does not
# overwrite keys a server holds, and a load over Retwis's rows would leave the users and
# tweets the runs above added ----
for ((i = 0; i < NSERVERS; i++)); do
	ctl "$i" unload --force >/dev/null 2>&1
	rm -rf /var/lib/xtx/"$(server_ns "$i")"-*
	"$BUILD/xtxd" --iface "$(server_dev "$i")" --netns "$(server_ns "$i")" --daemon \
		--lock-lease "$LEASE" >/dev/null || { fail "xtxd $i starts again"; finish; }
done
out=$(wl ycsb --records "$RECORDS" "${YCSB_SMALL[@]}" --workload b --populate --protocol hades \
	--distribution zipf --ops-per-txn 1 --threads 2 "${RUN[@]}" 2>&1)
rc=$?
verified "ycsb b zipf 1 hades, 40-byte records" "$out" "$rc"
check "ycsb b zipf 1 hades: fields as committed updates left them" \
	grep -q "^verify: every field as loaded or as a committed write" <<<"$out"
out=$(wl retwis --users "$USERS" "${RETWIS_SMALL[@]}" --populate --protocol hades --threads 2 \
	"${RUN[@]}" 2>&1)
rc=$?
verified "retwis hades, 40-byte lists" "$out" "$rc"
check "retwis hades: the graph and timelines hold" \
	grep -q "^verify: after: .* follow relations the same from both sides" <<<"$out"
check "retwis hades: users, tweets and relations as committed" \
	grep -q "^verify: .* users added, .* tweets posted, .* as the committed" <<<"$out"
# with room for 8 in a list, hot users' lists fill: follows past the bound are refused
b=$(json_field "$out" follows_at_bound)
check "retwis: follows past a list's bound refused as logical failures (${b:-0})" \
	test "${b:-0}" -gt 0 -a "$(total_field "$out" logical)" = "${b:-x}"

# ---- against xtx-udpd: 1 KiB records and lists, populated through transactions, verified
# through its SIGUSR1 dumps ----
UDPD_DIR=$tmp
trap 'stop_udpds; rm -rf "$tmp"; cleanup' EXIT INT TERM
udpd_dump_script
start_udpds --lock-lease "${LEASE%ms}"
uwl() {
	client "$BUILD/xtxbench" "$1" --servers "$SERVERS" --lock-lease "$LEASE" --client-base 100 --timeout 20ms \
		--dump-cmd "$tmp/dump.sh" "${@:2}"
}
out=$(uwl ycsb --workload a --records "$RECORDS" --populate --duration 0 -v 2>&1)
check "udpd ycsb: 1016-byte records populated through transactions" \
	grep -q "^ycsb: populated $RECORDS rows in [0-9]* transactions" <<<"$out"
for run in "a zipf 5 occ" "f uniform 1 2pl"; do
	set -- $run
	out=$(uwl ycsb --records "$RECORDS" --workload "$1" --distribution "$2" --ops-per-txn "$3" \
		--protocol "$4" "${RUN[@]}" 2>&1)
	rc=$?
	verified "udpd ycsb 1 KiB $run" "$out" "$rc"
	check "udpd ycsb 1 KiB $run: read room declared ahead, no abort to learn it" \
		bash -c '! grep -q "value_room" <<<"$1"' _ "$out"
done
out=$(uwl retwis --users "$USERS" --populate --duration 0 -v 2>&1)
check "udpd retwis: populated through transactions" \
	grep -q "^retwis: populated [0-9]* rows in [0-9]* transactions" <<<"$out"
out=$(uwl retwis --users "$USERS" "${RUN[@]}" 2>&1)
rc=$?
verified "udpd retwis 1 KiB lists" "$out" "$rc"
check "udpd retwis 1 KiB lists: the graph and timelines hold" \
	grep -q "^verify: after: .* follow relations the same from both sides" <<<"$out"
stop_udpds

finish
