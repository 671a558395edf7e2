#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Bulk loads into a used cluster: 3 servers with small kernel caches (so each evicts on its
# own schedule and their bucket floors differ) run TATP, then SmallBank is loaded onto the
# same servers: every replica of every loaded key must get the same version. And a load's
# version given by hand must be above the server's version mark, or nothing is loaded.
# checks: 17 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

LEASE=300ms
# 1024 buckets of 8 ways for ~30000 TATP rows: most live in the overflow store
setup_servers --lock-lease "$LEASE" --kv-buckets 1024
SERVERS=$(all_server_ips)
tmp=$(mktemp -d /tmp/xtx-test-rload.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM
CTL=$(all_server_ctls)

wl() {
	client "$BUILD/xtxbench" "$1" --servers "$SERVERS" --ctl "$CTL" --lock-lease "$LEASE" \
		--client-base 100 --duration 2 --warmup 0 --verify "${@:2}"
}
mark() { ctl "$1" version-mark | sed -n 's/^mark //p'; }

out=$(wl tatp --subscribers 5000 --populate -v 2>&1)
rc=$?
check "tatp on a fresh cluster: verified (exit $rc)" grep -q "verify: OK (0 violations)" <<<"$out"
check "tatp: loaded at version 1 (every mark was 0)" grep -q "at version 1$" <<<"$out"
m0=$(mark 0)
m1=$(mark 1)
m2=$(mark 2)
check "after tatp every server's version mark is above 1 ($m0 $m1 $m2)" \
	test "${m0:-0}" -gt 1 -a "${m1:-0}" -gt 1 -a "${m2:-0}" -gt 1
ev=$(ctl 0 rare-stats | awk '$1 == "victims_saved" { print $2 }')
check "the small cache wrote evicted keys back to xtxd (${ev:-0})" test "${ev:-0}" -gt 0

# The SmallBank load lands on servers whose histories differ.
out=$(wl smallbank --accounts 5000 --populate -v 2>&1)
rc=$?
check "smallbank loaded into the used cluster: exit 0 ($rc)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || grep -E "VIOLATION|Error" <<<"$out" | head -n 5 | sed 's/^/    /'
check "smallbank: no placement broken before the run" \
	bash -c '! grep -q "already breaks" <<<"$1"' _ "$out"
check "smallbank: replicas identical after the run" grep -q "verify: replicas identical" <<<"$out"
v=$(sed -n 's/.*populated .* at version \([0-9]*\)$/\1/p' <<<"$out")
top=$(printf '%s\n' "$m0" "$m1" "$m2" | sort -n | tail -n 1)
check "smallbank: loaded at the highest mark + 1 ($v = $top + 1)" test "${v:-0}" -eq $((top + 1))
same=1
for acct in 1 77 4999; do
	a=$(ctl 0 dump --table 8 | grep "key=$acct " | grep -o 'version=[0-9]*')
	for i in 1 2; do
		b=$(ctl "$i" dump --table 8 | grep "key=$acct " | grep -o 'version=[0-9]*')
		[ -n "$a" ] && [ "$a" = "$b" ] || same=0
	done
done
check "a few loaded keys: one version on every replica" test "$same" -eq 1

# By hand: at or below the mark is refused, whole; above it lands at exactly that version.
m=$(mark 0)
before=$(ctl 0 dump | wc -l)
out=$(echo "12 7 00ff" | ctl 0 load --file - --version "$m" 2>&1)
rc=$?
check "load --version at the mark: refused (exit $rc)" test "$rc" -ne 0
check "... saying why" grep -q "is not above this server's version mark $m" <<<"$out"
check "... and nothing loaded" test "$(ctl 0 dump | wc -l)" -eq "$before"
out=$(echo "12 7 00ff" | ctl 0 load --file - --version $((m + 5)) 2>&1)
check "load --version above the mark: loaded ($?)" grep -q "^loaded 1 keys" <<<"$out"
check "... at exactly that version" grep -q "table=12 key=7 version=$((m + 5)) " \
	<<<"$(ctl 0 dump --table 12)"
out=$(ctl 0 load --count 1 --version 0 2>&1)
check "load --version 0: refused as usage ($?)" grep -q "version" <<<"$out"

# Loaded keys are in no log: the load snapshots before it answers, so a server restarted
# from disk still holds them (else reloading it later would load them again at another
# version than its replicas hold).
ctl 2 dump >"$tmp/before"
ctl 2 unload >/dev/null
make -s -C "$ROOT" load IFACE="$(server_dev 2)" NETNS="$(server_ns 2)" \
	ARGS="--lock-lease $LEASE --kv-buckets 1024" >/dev/null
check "server 2 restarted from disk" test $? -eq 0
check "... holds every loaded key as before ($(wc -l <"$tmp/before") keys)" \
	cmp -s "$tmp/before" <(ctl 2 dump)
finish
