#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Transaction ops driven by hand (lock, validate, commit, abort) on keys in the kernel and in xtxd.
# checks: 129 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=1

# One bucket of eight ways, filled first: the eight keys below go through
# xtxd's overflow store, so every op below also runs its rare path.
# Locks here are held across hand-run ops, a process start each: the lease (not the subject)
# outlasts any busy machine's gaps between them.
setup_servers --kv-buckets 1 --rare-threads 1 --lock-lease 60s
SRV=$(server_ip 0)

op() { client "$BUILD/xtxbench" op --server "$SRV" --client-id 60 "$@"; }
field() { grep -o "\b$2=[^ ]*" <<<"$1" | head -n 1 | cut -d= -f2; }
# expect DESC WANT-STATUS ANSWER
expect() { check "$1: $(field "$3" status) (want $2)" test "$(field "$3" status)" = "$2"; }

deferred() { json_field "$(ctl 0 stats --json)" kv_deferred; }

fillers=""
for k in 201 202 203 204 205 206 207 208; do
	a=$(op insert 0 "$k" value=ee)
	[ "$(field "$a" status)" = ok ] || fail "insert $k: $a"
	fillers+="table=0 key=$k version=$(field "$a" version) vlen=1 value=ee"$'\n'
done
for k in 1 2 3 4 5 6 7 8; do
	a=$(op insert 0 "$k" value="0${k}0${k}")
	[ "$(field "$a" status)" = ok ] || fail "insert $k: $a"
done
d0=$(deferred)
check "some inserts went to the overflow store (kv_deferred=$d0)" test "${d0:-0}" -gt 0

expected=$(mktemp /tmp/xtx-txn.XXXXXX)
trap 'rm -f "$expected"; cleanup' EXIT INT TERM
printf '%s' "$fillers" >"$expected"
for k in 1 2 3 4 5 6 7 8; do
	# T1 (OCC) takes the key, reading value and version in the same op
	l=$(op occ-lock 0 "$k" txn=$((k * 10 + 1)))
	expect "key $k: occ-lock by T1" ok "$l"
	v=$(field "$l" version)
	t=$(field "$l" token)
	check "key $k: the lock read the value" test "$(field "$l" value)" = "0${k}0${k}"
	expect "key $k: occ-lock by T2 (no-wait)" rejected "$(op occ-lock 0 "$k" txn=$((k * 10 + 2)))"
	expect "key $k: T2 validates a key T1 locked" locked \
		"$(op validate 0 "$k" txn=$((k * 10 + 2)) version="$v")"
	expect "key $k: T1 validates its own lock" ok \
		"$(op validate 0 "$k" txn=$((k * 10 + 1)) version="$v")"
	c=$(op commit-primary 0 "$k" txn=$((k * 10 + 1)) version="$v" token="$t" value="aa0$k")
	expect "key $k: T1 commits at the primary" ok "$c"
	check "key $k: the commit bumped the version" test "$(field "$c" version)" = $((v + 1))
	expect "key $k: T2's read set is stale" changed \
		"$(op validate 0 "$k" txn=$((k * 10 + 2)) version="$v")"
	expect "key $k: a retransmitted commit is idempotent" already_applied \
		"$(op commit-primary 0 "$k" txn=$((k * 10 + 1)) version="$v" token="$t" value="bb0$k")"
	r=$(op read 0 "$k")
	check "key $k: read sees the commit and no lock" \
		test "$(field "$r" value).$(field "$r" version).$(( $(field "$r" flags) & 1 ))" = "aa0$k.$((v + 1)).0"

	# 2PL: two readers share, a writer is refused, then abort frees the key
	s1=$(op lock-shared 0 "$k" txn=$((k * 10 + 3)))
	s2=$(op lock-shared 0 "$k" txn=$((k * 10 + 4)))
	expect "key $k: shared by T3" ok "$s1"
	expect "key $k: shared by T4" ok "$s2"
	expect "key $k: exclusive refused while shared" rejected \
		"$(op lock-excl 0 "$k" txn=$((k * 10 + 5)))"
	op unlock-shared 0 "$k" txn=$((k * 10 + 3)) token="$(field "$s1" token)" >/dev/null
	op unlock-shared 0 "$k" txn=$((k * 10 + 4)) token="$(field "$s2" token)" >/dev/null
	x=$(op lock-excl 0 "$k" txn=$((k * 10 + 5)))
	expect "key $k: exclusive after the readers left" ok "$x"
	op unlock-excl 0 "$k" txn=$((k * 10 + 5)) token="$(field "$x" token)" >/dev/null
	expect "key $k: free again after the abort" ok \
		"$(op lock-excl 0 "$k" txn=$((k * 10 + 6)) flags=no-value)"
	printf 'table=0 key=%d version=%d vlen=2 value=aa%02d\n' "$k" $((v + 1)) "$k" >>"$expected"
done

# backups: install at the coordinator's version, once; a delete at a backup
for k in 101 102; do
	expect "backup $k: install" ok "$(op commit-backup 0 $k txn=900 version=5 value=cc)"
	expect "backup $k: again" already_applied "$(op commit-backup 0 $k txn=900 version=5 value=dd)"
done
expect "backup 102: delete" ok "$(op commit-backup 0 102 txn=901 version=6 flags=delete)"
printf 'table=0 key=101 version=5 vlen=1 value=cc\n' >>"$expected"

check "the ops ran on keys in the overflow store too (kv_deferred $d0 -> $(deferred))" \
	test "$(deferred)" -gt "$d0"
# the locks left by the last step of each key are the only ones held
held=$(ctl 0 stats --json | grep -o '"held":[0-9]*' | cut -d: -f2)
check "only the 8 locks still held are held ($held)" test "$held" = 8
ctl 0 dump | sort -t= -k3,3n >"$expected.dump"
sort -t= -k3,3n -o "$expected" "$expected"
check "the store ends exactly as the ops say" cmp -s "$expected" "$expected.dump"
cmp -s "$expected" "$expected.dump" || diff "$expected" "$expected.dump" | head -n 6
rm -f "$expected.dump"
finish
