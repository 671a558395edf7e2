#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The log drain: appends reach disk in order, survive xtxd crashes exactly once, torn tails are cut.
# checks: 30 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=1
CLIENT_ID=42	# 101..140 for the appends sent in parallel
LOAD_ARGS="--log-entries 64"

# 64 entries per CPU: the drain must keep up or appends answer LOG_FULL
setup_servers $LOAD_ARGS
SRV=$(server_ip 0)
DATA=/var/lib/xtx/$(server_ns 0)-$(server_dev 0)
TMP=$(mktemp -d /tmp/xtx-log.XXXXXX)
trap 'rm -rf "$TMP" "$DATA"; cleanup' EXIT INT TERM

# Parallel appends need a client id each: request ids are per-client clock
# readings, and two processes of one client would be deduplicated as one.
cid() { if (($1 > 500 && $1 <= 540)); then echo $(($1 - 400)); else echo $CLIENT_ID; fi; }
field() { grep -o "\b$2=[^ ]*" <<<"$1" | head -n 1 | cut -d= -f2; }
# append I: key I of table 0 in transaction I; every 5th is its transaction's last write
append() {
	local i=$1 extra=""
	((i % 5 == 0)) && extra="flags=last"
	client "$BUILD/xtxbench" op --server "$SRV" --client-id "$(cid "$i")" log-append 0 "$i" \
		txn="$i" version=$((i + 1000)) value="$(printf '%04x' "$i")" replicas=0,1,2 $extra
}
# the line log dump must show for key I, without its cpu= and seq=
expected_line() {
	local i=$1 flags=none
	((i % 5 == 0)) && flags=last
	printf 'txn=%d client=%d table=0 key=%d version=%d flags=%s replicas=0,1,2 vlen=2 value=%04x\n' \
		$(($(cid "$i") << 48 | i)) "$(cid "$i")" "$i" $((i + 1000)) $flags "$i"
}
dump_records() { ctl 0 log dump | grep '^cpu='; }
# every CPU's records in the dump run seq s, s+1, ... with no gap or repeat
seq_ordered() {
	awk '{ split($1, c, "="); split($2, s, "=");
	       if ((c[2] in last) && s[2] != last[c[2]] + 1) { bad = 1; print "break: " $0 }
	       last[c[2]] = s[2] } END { exit bad }' "$1"
}
# the dump has exactly keys 1..N, each once, with the fields it was appended with
same_records() {
	local n=$1 f=$2 i
	for ((i = 1; i <= n; i++)); do expected_line "$i"; done >"$TMP/want"
	cut -d' ' -f3- "$f" | sort -t' ' -k4,4 >"$TMP/got"
	sort -t' ' -k4,4 "$TMP/want" -o "$TMP/want"
	cmp -s "$TMP/want" "$TMP/got" || { diff "$TMP/want" "$TMP/got" | head -n 6; return 1; }
}
stats_json() { ctl 0 log stats --json; }
all_drained() {
	local s
	s=$(stats_json)
	# every CPU's head caught up with its tail
	! grep -o '"tail":[0-9]*,"head":[0-9]*' <<<"$s" | awk -F'[:,]' '$2 != $4 { f = 1 } END { exit !f }'
}
wait_drained() {
	local i
	wait_until 60 all_drained
}
# every seq below each CPU's tail is in the dump: nothing the ring took was lost
covers_tails() {
	local want got
	want=$(stats_json | grep -o '"cpu":[0-9]*,"tail":[0-9]*' | awk -F'[:,]' '$4 > 0 { print $2, $4 }')
	got=$(awk '{ split($1, c, "="); n[c[2]]++ } END { for (k in n) print k, n[k] }' "$1" | sort -n)
	[ "$want" = "$got" ] || { echo "# tails: $want / dump: $got"; return 1; }
}
xtxd_pid() { cat "/run/xtx/$(server_ns 0)-$(server_dev 0).pid"; }
reload() { make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" ARGS="$*" >/dev/null; }

# ---- 500 appends, one at a time ----
full=0 bad=0
: >"$TMP/answers"
for ((i = 1; i <= 500; i++)); do
	a=$(append "$i" 2>&1)
	case "$(field "$a" status)" in
	ok) echo "$i $(field "$a" version)" >>"$TMP/answers" ;;
	log_full) full=$((full + 1)) ;;
	*) bad=$((bad + 1)); [ $bad -le 3 ] && echo "# append $i: $a" ;;
	esac
done
check "500 appends answered ok (log_full $full, other $bad)" test $full -eq 0 -a $bad -eq 0
check "log stats: head caught up with tail on every CPU" wait_drained
s=$(stats_json)
check "log stats: no LOG_FULL counted ($(json_field "$s" full))" \
	test "$(grep -o '"full":[0-9]*' <<<"$s" | cut -d: -f2 | sort -u)" = 0
dump_records >"$TMP/d1"
check "log dump: exactly 500 records ($(wc -l <"$TMP/d1"))" test "$(wc -l <"$TMP/d1")" -eq 500
check "log dump: each CPU's seqs in order, none missing or repeated" seq_ordered "$TMP/d1"
check "log dump: every seq below each CPU's tail" covers_tails "$TMP/d1"
check "log dump: every record as appended" same_records 500 "$TMP/d1"
# the seq each append was answered with is the one on disk
awk '{ split($2, s, "="); split($6, k, "="); print k[2], s[2] }' "$TMP/d1" | sort >"$TMP/seqs"
sort "$TMP/answers" -o "$TMP/answers"
check "log dump: seqs match the appends' answers" cmp -s "$TMP/answers" "$TMP/seqs"

# ---- crash with appends in flight: kill -9 while they arrive ----
for ((i = 501; i <= 540; i++)); do append "$i" >"$TMP/a$i" 2>&1 & done
kill9_xtxd 0
wait
notok=$(for ((i = 501; i <= 540; i++)); do grep -q 'status=ok' "$TMP/a$i" || echo "$i: $(cat "$TMP/a$i")"; done)
check "the 40 appends around the crash were answered ok${notok:+: $notok}" test -z "$notok"
# appends answered while no xtxd ran wait in the ring
check "xtxd restarts and adopts the program" reload $LOAD_ARGS
check "after the restart the ring drains" wait_drained
dump_records >"$TMP/d2"
check "after kill -9: 540 records ($(wc -l <"$TMP/d2")), none lost" test "$(wc -l <"$TMP/d2")" -eq 540
check "after kill -9: seqs in order, none duplicated" seq_ordered "$TMP/d2"
check "after kill -9: every seq below each CPU's tail" covers_tails "$TMP/d2"
check "after kill -9: every record as appended" same_records 540 "$TMP/d2"

# ---- crash between write and sync: the new xtxd must not write them twice ----
# a long sync interval leaves what was written after the first sync unreleased
kill9_xtxd 0
check "xtxd restarts with --log-sync 30s" reload $LOAD_ARGS --log-sync 30s
# the first sync comes at once (none was due before); after it the next is 30s away
append 541 >/dev/null
wait_drained
for ((i = 542; i <= 560; i++)); do append "$i" >/dev/null; done
# the drain writes at its next pass, the sync period longer or not
written560() { [ "$(json_field "$(stats_json)" records)" -ge 560 ] 2>/dev/null; }
wait_until 60 written560
s=$(stats_json)
check "entries written ($(json_field "$s" records) records on disk) but not released wait in the ring" \
	test "$(json_field "$s" records)" -ge 560 -a \
	"$(grep -o '"fill":[0-9]*' <<<"$s" | cut -d: -f2 | awk '{ n += $1 } END { print n + 0 }')" -gt 0
kill9_xtxd 0
check "xtxd restarts with the default sync" reload $LOAD_ARGS
check "the ring drains again" wait_drained
resumed=$(json_field "$(stats_json)" resumed)
check "the new xtxd found them on disk already (resumed ${resumed:-?})" test "${resumed:-0}" -gt 0
dump_records >"$TMP/d3"
check "after the second crash: 560 records ($(wc -l <"$TMP/d3"))" test "$(wc -l <"$TMP/d3")" -eq 560
check "after the second crash: seqs in order, none duplicated" seq_ordered "$TMP/d3"
check "after the second crash: every seq below each CPU's tail" covers_tails "$TMP/d3"
check "after the second crash: every record as appended" same_records 560 "$TMP/d3"

# ---- a clean stop drains everything; a torn tail is reported and cut ----
ctl 0 unload >/dev/null
dump_records >"$TMP/d4"
check "after unload: all 560 records on disk" test "$(wc -l <"$TMP/d4")" -eq 560
read -r name nrec end _ < <(log_segs 0 | awk '$2 > 0' | tail -n 1)
seg=$DATA/$name
tear_record "$seg" "$end"
out=$(ctl 0 log dump)
check "log dump reports the torn tail of $(basename "$seg")" grep -q "^# torn tail: $(basename "$seg")" <<<"$out"
grep '^cpu=' <<<"$out" >"$TMP/d5"
check "log dump lists the 559 good records only" test "$(wc -l <"$TMP/d5")" -eq 559
check "the torn record is the segment's last" \
	test "$(grep -vxFf "$TMP/d5" "$TMP/d4" | cut -d' ' -f1)" = "cpu=$(basename "$seg" | sed 's/log-cpu\([0-9]*\)-.*/\1/')"
check "xtxd loads again" reload $LOAD_ARGS
out=$(ctl 0 log dump)
check "the next xtxd cut the torn tail: no tear, 559 records" \
	test "$(grep -c '^cpu=' <<<"$out").$(grep -c '^# torn' <<<"$out")" = 559.0
finish
