#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bench, failover: SmallBank on 3 servers and a spare (NSERVERS in all; R = 3, 12
# shards, a private ZooKeeper, 2 s sessions) while one server dies (xtxd SIGKILL, its link
# down).  Writes the committed rate per 100 ms through the failure, the promotion, the
# recovery and the spare's copy as a table and a PNG; the unavailability window (from the
# kill to the first 100 ms back at half the rate before) and the re-replication rate.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
OUT=${OUT:-$BUILD/bench}
NSERVERS=${NSERVERS:-4}
PREFIX=xtxf$(printf '%04x' $RANDOM)
NAME=bench$$
ACCOUNTS=${ACCOUNTS:-100000}
DURATION=${DURATION:-14}
KILL_AT=${KILL_AT:-4}
VICTIM=${VICTIM:-1}
ZK_PORT=$((21000 + RANDOM % 8000))
ZK_DIR=$(mktemp -d /tmp/xtx-bench-zk.XXXXXX)
# How long to wait, after the run, for an event the report names (the manager counts the
# spare whole a moment after its copy ends, later still on a busy machine).
EVENT_WAIT=${EVENT_WAIT:-60}

# Whatever stops the scene says why, on stderr: set -e alone would end it silently.
trap 'echo "failover: stopped at line $LINENO: $BASH_COMMAND (exit $?)" >&2' ERR
fail() {
	echo "failover: $*" >&2
	exit 1
}

mkdir -p "$OUT"
report=$OUT/report_failover.md
timeline=$OUT/failover_timeline.txt

server_ns() { echo "$PREFIX-s$1"; }
server_dev() { echo "${PREFIX}s$1"; }
server_ips() { local i ips=; for ((i = 0; i < NSERVERS - 1; i++)); do ips+="${ips:+,}10.77.$i.2"; done; echo "$ips"; }
SPARE=$((NSERVERS - 1))
topo() { "$ROOT/scripts/topo.sh" -p "$PREFIX" -n "$NSERVERS" "$@"; }
client() { ip netns exec "$PREFIX-c" "$@"; }
ZK_CLIENT=127.0.0.1:$ZK_PORT

cleanup() {
	local i
	for ((i = 0; i < NSERVERS; i++)); do
		"$BUILD/xtxctl" --netns "$(server_ns "$i")" --iface "$(server_dev "$i")" \
			unload --force >/dev/null 2>&1 || true
	done
	topo down >/dev/null 2>&1 || true
	"$ROOT/scripts/zk.sh" stop -d "$ZK_DIR" >/dev/null 2>&1 || true
	rm -rf "$ZK_DIR" /var/lib/xtx/"$PREFIX"-*
}
trap cleanup EXIT INT TERM

topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null
"$ROOT/scripts/zk.sh" start -d "$ZK_DIR" -P "$ZK_PORT" -n "$PREFIX-c" >/dev/null
client "$BUILD/xtxctl" cluster init --zk "$ZK_CLIENT" --zk-name "$NAME" --servers "$(server_ips)" \
	--spares "10.77.$SPARE.2" --shards 12 >/dev/null
ctls=
for ((i = 0; i < NSERVERS; i++)); do
	make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
		ARGS="--zk 10.77.$i.1:$ZK_PORT --zk-name $NAME" >/dev/null
	ctls+="${ctls:+,}$(server_ns "$i"):$(server_dev "$i")"
done
sb() {
	client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" \
		--accounts "$ACCOUNTS" --ctl "$ctls" --threads 2 "$@"
}
echo "failover: populating $ACCOUNTS SmallBank accounts on $((NSERVERS - 1)) servers (R = 3) and a spare..."
sb --populate --duration 0 >/dev/null 2>&1

sb --duration "${DURATION}s" --warmup 0 --verify --timeline "$timeline" --json \
	>"$OUT/failover_run.json" 2>"$OUT/failover_run.log" &
run=$!
sleep "$KILL_AT"
kill -KILL "$(cat "/run/xtx/$(server_ns "$VICTIM")-$(server_dev "$VICTIM").pid")"
killed=$(date +%s.%N)
ip -n "$(server_ns "$VICTIM")" link set "$(server_dev "$VICTIM")" down
set +e
wait "$run"
rc=$?
set -e
[ -s "$timeline" ] || fail "the run wrote no timeline (xtxbench exit $rc): $(tail -n 5 "$OUT/failover_run.log")"
[ "$rc" = 0 ] || fail "the SmallBank run failed (xtxbench exit $rc): $(tail -n 10 "$OUT/failover_run.log")"

# wait_event WHAT PATTERN FILE...: the first line matching PATTERN in FILEs, once one is
# there; after EVENT_WAIT s without one the scene fails, naming the event that never came.
wait_event() {
	local what=$1 pat=$2 t=0 line
	shift 2
	while :; do
		line=$(cat "$@" 2>/dev/null | grep -m1 -- "$pat" || true)
		[ -n "$line" ] && { echo "$line"; return 0; }
		[ "$t" -ge $((EVENT_WAIT * 10)) ] && break
		sleep 0.1
		t=$((t + 1))
	done
	echo "failover: $what never happened: no \"$pat\" in $* within ${EVENT_WAIT} s of the run's end" >&2
	return 1
}
logs=(/run/xtx/"$PREFIX"-s*.log)
spare_log=/run/xtx/$(server_ns "$SPARE")-$(server_dev "$SPARE").log
# the events the report names, each waited for: the promotion's recovery, the spare
# made a copier, its copy whole, the manager counting it as a replica
recovered=$(wait_event "the promoted servers' recovery" "recovered in [0-9]* ms" "${logs[@]}" |
	grep -o "recovered in [0-9]* ms") || exit 1
copy_from=$(wait_event "the spare becoming a copier" "is a replica of no shard: epoch" "${logs[@]}" |
	cut -d' ' -f1) || exit 1
whole=$(wait_event "the spare's copy ending" "whole here: [0-9]* keys in [0-9]* ms" "$spare_log" |
	grep -o "whole here: [0-9]* keys in [0-9]* ms") || exit 1
copy_done=$(wait_event "the manager counting the spare whole" "counts it whole" "${logs[@]}" |
	cut -d' ' -f1) || exit 1
# the kill on the run's own clock (the timeline's third column is the wall clock)
KILL_AT=$(awk -v w="$killed" 'NR == 1 { printf "%.1f", $1 + w - $3 }' "$timeline")
# the run's clock of a log line's wall-clock stamp (2026-11-28T19:33:54.123Z)
on_run_clock() {
	awk -v w="$(date -u -d "$1" +%s.%N)" 'NR == 1 { printf "%.1f", $1 + w - $3 }' "$timeline"
}
# the streams alone: keys and ms summed over the primaries the spare copied from
wait_event "a primary's stream to the spare" "copy: sent server $SPARE " "${logs[@]}" >/dev/null ||
	exit 1
stream=$(grep -h "copy: sent server $SPARE " "${logs[@]}" |
	sed 's/.* \([0-9]*\) keys for epoch [0-9]* in \([0-9]*\) ms.*/\1 \2/' |
	awk '{ k += $1; ms += $2 } END { printf "%d keys in %d ms: %.0f keys/s", k, ms, ms ? k * 1000 / ms : 0 }')
violations=$(grep -o '"violations":[0-9]*' "$OUT/failover_run.json" | cut -d: -f2)

# The window: the kill to the first sample back at half the mean rate before it, after the dip.
before=$(awk -v k="$KILL_AT" '$1 > 0.5 && $1 <= k { s += $2; n++ } END { printf "%.0f", n ? s / n : 0 }' \
	"$timeline")
window=$(awk -v k="$KILL_AT" -v b="$before" '$1 > k && $2 < b / 2 { dipped = 1 }
	$1 > k && $2 >= b / 2 && dipped { printf "%.1f", $1 - k; found = 1; exit }
	END { if (!found) printf "none" }' "$timeline")
after=$(awk -v k="$KILL_AT" -v w="${window/none/0}" '$1 > k + w + 1 { s += $2; n++ } END { printf "%.0f", n ? s / n : 0 }' "$timeline")
if [ "$window" = none ]; then
	# not back by the run's end: say how long it was out at least
	window="over $(awk -v k="$KILL_AT" 'END { printf "%.1f", $1 - k }' "$timeline")"
	echo "failover: the rate was not back at half by the run's end (DURATION=$DURATION is short for this machine)" >&2
fi

{
	echo "## Failover: SmallBank while a server dies ($(date -u +%F))"
	echo
	echo "$((NSERVERS - 1)) servers and a spare, R = 3, 12 shards, ZooKeeper sessions of 2 s; $ACCOUNTS"
	echo "accounts, 2 client threads (2PL); server $VICTIM killed (xtxd SIGKILL, link down) ${KILL_AT} s into a"
	echo "${DURATION} s run."
	echo
	echo "| before (committed/s) | unavailability window | after (committed/s) | promoted server's recovery | --verify |"
	echo "|---:|---:|---:|---:|---|"
	echo "| $before | ${window} s | $after | ${recovered#recovered in } | $([ "${violations:-1}" = 0 ] && echo "0 violations" || echo "FAILED (exit $rc)") |"
	echo
	echo "The window runs from the kill to the first 100 ms back at half the rate before:"
	echo "the lease (2/3 of the session) and the session run out, the manager waits half a"
	echo "session more, writes epoch 2, and the promoted servers recover before serving."
	echo "The next epoch makes the spare a copier of every shard left short of R; it takes new"
	echo "writes at once and the rest from the primaries, and counts as a replica once whole."
	echo
	echo "Re-replication: the spare copied from $([ -n "$copy_from" ] && on_run_clock "$copy_from") s and"
	echo "counted as a replica from $([ -n "$copy_done" ] && on_run_clock "$copy_done") s on the run's clock."
	echo "The copy streams: $stream (goal: 500,000 keys/s); the whole copy, waits"
	echo "included: ${whole#whole here: }."
	echo
	echo "What the servers logged:"
	echo
	grep -h "manager: \|recovered in\|moved out: deciding\|copy: " \
		/run/xtx/"$PREFIX"-s*.log | sort | sed 's/^[0-9TZ:.-]* [a-z]* */    /'
	echo
	echo "Committed/s through the run, per 500 ms:"
	echo
	awk '{ s += $2; n++ } n == 5 { printf "    %5.1f s %7.0f %s\n", $1, s / 5, substr("################################################################", 1, int(s / 5 / 1500)); s = n = 0 }' "$timeline"
	echo "Timeline: $timeline; plot: $OUT/failover.png."
} | tee "$report"

gnuplot <<-EOF
	set terminal png size 900,500
	set output "$OUT/failover.png"
	set title "SmallBank, $((NSERVERS - 1)) servers and a spare, R = 3: server $VICTIM killed at ${KILL_AT} s"
	set xlabel "seconds"
	set ylabel "committed transactions/s (per 100 ms)"
	set arrow from $KILL_AT, graph 0 to $KILL_AT, graph 1 nohead dt 2
	set label "kill" at $KILL_AT, graph 0.95 offset 0.5,0
	$([ -n "$copy_done" ] && c=$(on_run_clock "$copy_done") &&
	  echo "set arrow from $c, graph 0 to $c, graph 1 nohead dt 3" &&
	  echo "set label \"spare whole\" at $c, graph 0.88 right offset -0.5,0")
	plot "$timeline" using 1:2 with lines title "committed/s"
EOF
[ "${violations:-1}" = 0 ] || fail "--verify found ${violations:-no count of} violations"
