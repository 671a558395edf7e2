#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Histories recorded by xtxbench --history on 3 servers (R = 3) and checked exactly by
# xtxbench check-history: bank, TATP and SmallBank under OCC, 2PL and HADES come out
# serializable; with OCC validation broken on purpose in every server the checker finds
# the cycles, in the bank's and in SmallBank's; bad history files are refused.
# checks: 46 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

LEASE=300ms
setup_servers --lock-lease "$LEASE"
SERVERS=$(all_server_ips)
CTL=$(all_server_ctls)
tmp=$(mktemp -d /tmp/xtx-test-history.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM

# A number of check-history's summary line: history: N transactions, N committed, ...
summary() { grep -o "[0-9]* $2" <<<"$1" | head -n 1 | cut -d' ' -f1; }
anomalies() { grep -o "$2=[0-9]*" <<<"$1" | cut -d= -f2; }

# clean NAME BASE: the recorded files are serializable, and not trivially
clean() {
	local name=$1 out rc n c
	out=$("$BUILD/xtxbench" check-history "${@:2}" 2>&1)
	rc=$?
	n=$(summary "$out" transactions)
	c=$(summary "$out" committed)
	check "$name: check-history exit 0 ($rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || head -n 5 <<<"$out" | sed 's/^/    /'
	check "$name: ${c:-0} committed of ${n:-0} checked" test "${c:-0}" -gt 1000
}

bank() {
	client "$BUILD/xtxbench" bank --servers "$SERVERS" --table 14 --lease "$LEASE" \
		--accounts 32 --audit-pct 20 --threads 2 --duration 2 --check "$@"
}

# ---- serializable histories: every protocol, three workloads ----
base=100
for p in occ 2pl hades; do
	out=$(bank --protocol "$p" --client-base "$base" --history "$tmp/bank-$p" 2>&1)
	check "bank $p --history: exit 0 ($?)" grep -q "total .* conserved" <<<"$out"
	n=$(ls "$tmp"/bank-"$p".* 2>/dev/null | wc -l)
	check "bank $p: one history file per thread ($n)" test "$n" -eq 2
	clean "bank $p" "$tmp"/bank-"$p".*
	base=$((base + 10))
done

wl() {
	client "$BUILD/xtxbench" "$1" --servers "$SERVERS" --ctl "$CTL" --lock-lease "$LEASE" \
		--duration 2 --warmup 300ms --threads 2 --verify "${@:2}"
}
out=$(wl tatp --subscribers 2000 --populate --client-base 200 --history "$tmp/tatp" 2>&1)
check "tatp occ --history: exit 0 ($?)" grep -q "verify: OK" <<<"$out"
check "tatp: the store afterwards written for the checker" test -s "$tmp/tatp.final"
clean "tatp occ (with the final state)" -f "$tmp/tatp.final" "$tmp"/tatp.[0-9]*
out=$(wl tatp --subscribers 2000 --protocol 2pl --client-base 210 --history "$tmp/tatp2" 2>&1)
check "tatp 2pl --history: exit 0 ($?)" grep -q "verify: OK" <<<"$out"
clean "tatp 2pl" -f "$tmp/tatp2.final" "$tmp"/tatp2.[0-9]*

out=$(wl smallbank --accounts 1000 --populate --protocol hades --client-base 220 \
	--history "$tmp/sb" 2>&1)
check "smallbank hades --history: exit 0 ($?)" grep -q "verify: OK" <<<"$out"
clean "smallbank hades" -f "$tmp/sb.final" "$tmp"/sb.[0-9]*
# OCC and 2PL: Amalgamate, WriteCheck and TransactSaving read keys they do not write, which
# must be validated (OCC) or held (2PL) like the rest: a client that skipped those reads
# would pass the bank, and SmallBank's history shows it (below, with validation broken)
base=230
for p in occ 2pl; do
	base=$((base + 10))
	out=$(wl smallbank --accounts 1000 --protocol "$p" --client-base "$base" \
		--history "$tmp/sb-$p" 2>&1)
	check "smallbank $p --history: exit 0 ($?)" grep -q "verify: OK" <<<"$out"
	clean "smallbank $p (plain reads inside read-write transactions)" -f "$tmp/sb-$p.final" \
		"$tmp"/sb-"$p".[0-9]*
done

# Histories of several processes merge: two bank runs at once on one table (the second
# after the first's setup, which writes the accounts outside any recorded transaction).
# (the first runs until the second is done: its first progress tick says its setup is over)
bank --protocol occ --client-base 300 --history "$tmp/two-a" --duration 600 >/dev/null \
	2>"$tmp/first.err" &
pa=$!
ticked() { grep -qs '^t=' "$tmp/first.err"; }
wait_until 60 ticked
# (the second checks no total: its check's reads would meet the first's transfers for as long
# as they ran; the first's check, once both are done, covers both)
client "$BUILD/xtxbench" bank --servers "$SERVERS" --table 14 --lease "$LEASE" --accounts 32 \
	--audit-pct 20 --threads 2 --duration 2 --protocol occ --client-base 310 --no-setup \
	--history "$tmp/two-b" >/dev/null 2>&1
rb=$?
pkill -INT -P "$pa"
wait "$pa"
ra=$?
check "two bank processes at once: both exit 0 ($ra, $rb)" test "$ra.$rb" = "0.0"
clean "two processes merged" "$tmp"/two-a.* "$tmp"/two-b.*

# ---- broken on purpose: OCC validation answers OK whatever it finds ----
for i in 0 1 2; do ctl "$i" fault --break-validate on >/dev/null; done
st=$(ctl 0 fault)
check "fault --break-validate on took effect" grep -q "break_validate on" <<<"$st"
out=$(bank --protocol occ --audit-pct 50 --accounts 8 --client-base 400 \
	--history "$tmp/broken" 2>&1)
rc=$?
# SmallBank's read-only keys of read-write transactions go unvalidated too
wl smallbank --accounts 100 --protocol occ --client-base 420 --history "$tmp/sb-broken" \
	>/dev/null 2>&1
for i in 0 1 2; do ctl "$i" fault --break-validate off >/dev/null; done
check "fault --break-validate off took effect" grep -q "break_validate off" <<<"$(ctl 0 fault)"
check "broken validation: bank's own audits notice (exit $rc)" grep -q "audits saw a wrong total" \
	<<<"$out"
out=$("$BUILD/xtxbench" check-history --max-print 3 "$tmp"/broken.* 2>&1)
rc=$?
check "broken validation: check-history exits 1 ($rc)" test "$rc" -eq 1
g2=$(anomalies "$out" G2)
check "broken validation: G2 cycles found (${g2:-0})" test "${g2:-0}" -gt 0
check "broken validation: each cycle printed with its transactions and keys" \
	grep -Eq "^anomaly G2: txns [0-9]+ [0-9]+.*\| [0-9]+-cycle: .*-(rw|wr|ww)\([0-9]+:[0-9]+@[0-9]+\)->" \
	<<<"$out"
out=$("$BUILD/xtxbench" check-history --json "$tmp"/broken.* 2>&1)
check "broken validation: --json counts them too" grep -q "\"G2\":[1-9]" <<<"$out"
out=$("$BUILD/xtxbench" check-history --max-print 3 "$tmp"/sb-broken.[0-9]* 2>&1)
rc=$?
check "broken validation: SmallBank OCC's history is not serializable (exit $rc, G2=$(anomalies "$out" G2))" \
	test "$rc" -eq 1 -a "$(anomalies "$out" G2)" -gt 0
# and the same servers, repaired, are serializable again
out=$(bank --protocol occ --audit-pct 50 --accounts 8 --client-base 410 \
	--history "$tmp/repaired" 2>&1)
check "repaired: bank exit 0 ($?)" grep -q "total .* conserved" <<<"$out"
clean "repaired" "$tmp"/repaired.*

# ---- bad files: a clear error, exit 2 ----
# refused NAME PATTERN FILE: check-history exits 2 saying PATTERN
refused() {
	local out rc
	out=$("$BUILD/xtxbench" check-history "$3" 2>&1)
	rc=$?
	check "$1: exit 2 ($rc), \"$2\"" bash -c '[ "$1" -eq 2 ] && grep -q "$2" <<<"$3"' _ \
		"$rc" "$2" "$out"
}
f=$(ls "$tmp"/repaired.* | head -n 1)
head -c 100 "$f" >"$tmp/torn.1"
refused "a torn file" "truncated record" "$tmp/torn.1"
printf 'not a history file at all, but long enough to have a header' >"$tmp/junk.1"
refused "a stranger's file" "not a history file" "$tmp/junk.1"
refused "a missing file" "No such file" "$tmp/none"
out=$(bank --history "" 2>&1)
check "bank --history '': refused ($?)" grep -q "empty path" <<<"$out"
finish
