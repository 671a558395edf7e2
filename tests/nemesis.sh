#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The nemesis: bank, SmallBank and TATP under OCC, 2PL and HADES on 3 servers (R = 3) with several
# clients while faults are injected, one kind per run and then mixed: client pauses past the
# leases, request and reply loss, requests duplicated and reordered, xtxd SIGKILLed and adopted,
# a server unloaded and loaded again (recovery from disk), coordinators killed for good, bulk
# loads during traffic, a second workload sharing the servers. Every run ends with the
# invariant checks (money or --verify, replicas, locks) and the exact history check of every
# transaction it ran, and must show that its faults happened. NEMESIS_FULL=1 (make nemesis)
# runs the whole matrix; by default a quick subset.
# checks: 74 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/integration/lib.sh"
NSERVERS=3

LEASE=200ms
RESOLVE_AFTER=1s
setup_servers --lock-lease "$LEASE" --hades-lease "$LEASE" --peers "$(all_server_ips)" \
	--resolve-after "$RESOLVE_AFTER"
SERVERS=$(all_server_ips)
CTL=$(all_server_ctls)
# the whole matrix runs each fault a second shorter, to stay within 15 minutes
if [ "${NEMESIS_FULL:-0}" = 1 ]; then RUN_SECS=${NEMESIS_SECS:-5}; else RUN_SECS=${NEMESIS_SECS:-6}; fi
NCLIENTS=${NEMESIS_CLIENTS:-4}
ACCOUNTS=${NEMESIS_ACCOUNTS:-16}
BANK_TABLE=15
RUNS=0
ANOMALIES=0
PAUSES_COUNTED=0	# pause runs in which a lease was taken back
CHECKED=0		# transactions the history checker went through, over all runs
WORK=${NEMESIS_WORK:-$(mktemp -d /tmp/xtx-nemesis.XXXXXX)}
trap 'cleanup; rm -rf "$WORK"' EXIT INT TERM

# invariant DESCRIPTION CONDITION...: a check whose failure counts as an anomaly of the run.
invariant() {
	local what=$1
	shift
	if "$@"; then
		pass "$what"
	else
		fail "$what"
		bad=$((bad + 1))
	fi
}

counter() {	# counter SERVER NAME: one of xtxctl stats' counters
	json_field "$(ctl "$1" stats --json)" "$2"
}
counter_sum() {
	local i n t=0
	for ((i = 0; i < NSERVERS; i++)); do
		n=$(counter "$i" "$1")
		t=$((t + ${n:-0}))
	done
	echo "$t"
}
# lock slots that would refuse a new request, on every server, from the lock table walk: held
# and either within their lease or logged (the resolver's to free). One held past its lease
# and never logged is taken back by the next request that touches it (a vanished reader's
# share, say, when nobody asks for that key again), so it blocks nothing.
locks_held() {
	local i l n r t=0
	for ((i = 0; i < NSERVERS; i++)); do
		l=$(ctl "$i" stats --json | grep -o '"locks":{[^}]*}')
		n=$(grep -o '"held":[0-9]*' <<<"$l" | cut -d: -f2)
		r=$(grep -o '"reclaimable":[0-9]*' <<<"$l" | cut -d: -f2)
		[ -n "$n" ] && [ -n "$r" ] || { echo "unreadable"; return; }
		t=$((t + n - r))
	done
	echo "$t"
}
locks_report() {	# the lock counters of every server, as comment lines
	local i
	for ((i = 0; i < NSERVERS; i++)); do
		echo "# server $i: $(ctl "$i" stats --json | grep -o '"locks":{[^}]*}')"
	done
}
replicas_identical() {	# replicas_identical TABLE: every server holds the same rows
	local a b c
	a=$(ctl 0 dump --table "$1" | sort)
	b=$(ctl 1 dump --table "$1" | sort)
	c=$(ctl 2 dump --table "$1" | sort)
	[ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ]
}
# history_ok NAME ARGS...: the run's recorded transactions are serializable (check-history).
history_ok() {
	local name=$1 out rc n
	shift
	out=$("$BUILD/xtxbench" check-history --max-print 3 "$@" 2>&1)
	rc=$?
	n=$(grep -o '^history: [0-9]* transactions' <<<"$out" | grep -o '[0-9]*')
	CHECKED=$((CHECKED + ${n:-0}))
	invariant "$name: history serializable, ${n:-0} transactions (check-history exit $rc)" \
		test "$rc" -eq 0 -a "${n:-0}" -gt 0
	[ "$rc" -eq 0 ] || head -n 6 <<<"$out" | sed 's/^/    /'
}
xtxd_pid() { cat "/run/xtx/$(server_ns "$1")-$(server_dev "$1").pid"; }
restart_xtxd() {
	make -s -C "$ROOT" load IFACE="$(server_dev "$1")" NETNS="$(server_ns "$1")" \
		ARGS="--lock-lease $LEASE --hades-lease $LEASE --peers $SERVERS \
		--resolve-after $RESOLVE_AFTER" >/dev/null
}

# ---- faults: each records that it happened in $WORK/faults ----

note_fault() { echo "$1" >>"$WORK/faults"; }
faults_of() { local n; n=$(grep -c "^$1\$" "$WORK/faults" 2>/dev/null); echo "${n:-0}"; }

# Pauses client processes past the lease: SIGSTOP for 10 ms..2 s, then SIGCONT.
nemesis_pause() {
	local end=$((SECONDS + RUN_SECS - 1)) pid ms
	while [ "$SECONDS" -lt "$end" ]; do
		pid=$(shuf -n 1 "$WORK/pids" 2>/dev/null)
		[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || { sleep 0.1; continue; }
		# mostly around the lease, sometimes long: the pauses that lose locks
		if [ $((RANDOM % 4)) = 0 ]; then ms=$((10 + RANDOM % 1990)); else ms=$((300 + RANDOM % 700)); fi
		kill -STOP "$pid" 2>/dev/null && note_fault pause
		sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
		kill -CONT "$pid" 2>/dev/null
		sleep 0.0$((RANDOM % 10))
	done
}

# Loses requests and replies in every server's XDP.
nemesis_loss() {
	local i
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" fault --drop-request-ppm 20000 --drop-reply-ppm 20000 >/dev/null
	done
	sleep $((RUN_SECS - 1))
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" fault --drop-request-ppm 0 --drop-reply-ppm 0 >/dev/null
	done
}

# SIGKILLs server 1's xtxd mid-run; make load adopts the running program.
nemesis_kill_xtxd() {
	sleep 1
	kill -9 "$(xtxd_pid 1)" 2>/dev/null && note_fault xtxd_kill
	sleep 0.3
	restart_xtxd 1 && note_fault xtxd_restart
}

# Stops server 2 entirely (xtxctl unload: program detached, maps gone) mid-run and loads it
# again: it recovers its store from its snapshot and logs, with no locks and no slots.
nemesis_reload() {
	sleep 1
	ctl 2 unload >/dev/null 2>&1 && note_fault unload
	sleep 0.3
	restart_xtxd 2 && note_fault reload
}

# The clients send 5% of their requests twice and hold 5% back behind later ones
# (bank_clients passes the flags when the run names this fault; nothing to do here).
nemesis_dupreorder() {
	note_fault dupreorder
}

# Kills one coordinator for good mid-commit: the resolver finishes what it left.
nemesis_kill_client() {
	local pid
	sleep 2
	pid=$(head -n 1 "$WORK/pids")
	kill -9 "$pid" 2>/dev/null && note_fault client_kill
}

# Bulk-loads fresh keys into another table of every server during the traffic.
nemesis_bulk_load() {
	local i
	sleep 1
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" load --table 12 --first $((RUNS * 100000)) --count 50000 >/dev/null &&
			note_fault bulk_load
	done
}

# Runs a second workload on the same servers during the bank traffic: SmallBank in its own
# tables under the next protocol (the bank's OCC beside 2PL, 2PL beside HADES, HADES beside
# OCC), populated while the bank runs, then verified and its history checked with the run's.
nemesis_cotenant() {
	local proto
	case $PROTO in occ) proto=2pl ;; 2pl) proto=hades ;; *) proto=occ ;; esac
	mkdir -p "$WORK/cohist"
	client "$BUILD/xtxbench" smallbank --servers "$SERVERS" --ctl "$CTL" --protocol "$proto" \
		--accounts 2000 --threads 1 --inflight 8 --duration "$((RUN_SECS - 2))s" --warmup 0 \
		--timeout 1ms --populate --verify --json --history "$WORK/cohist/wl" \
		>"$WORK/co.out" 2>&1
	echo $? >"$WORK/co.rc"
	note_fault cotenant
}

# ---- workloads ----

# doubts_answered NAME OUTPUT...: what the clients left in doubt, and that asking the servers
# got an answer for each (their history files record the answers, which the checker holds
# against the versions)
doubts_answered() {
	local name=$1 d n
	shift
	d=$(cat "$@" | grep -h 'transactions in doubt, asked')
	[ -n "$d" ] || return 0
	sed "s/^/# $name: /" <<<"$d"
	n=$(grep -o '[0-9]* still in doubt' <<<"$d" | awk '{s += $1} END {print s + 0}')
	invariant "$name: the servers answered for every transaction left in doubt ($n not)" \
		test "$n" = 0
}

bank_clients() {	# bank_clients PROTOCOL [ARGS]: NCLIENTS processes of contended transfers
	local i
	: >"$WORK/pids"
	for ((i = 0; i < NCLIENTS; i++)); do
		# the pid that signals must reach is xtxbench's own, not a wrapper's
		client bash -c 'echo $$ >>"$0"; exec "$@"' "$WORK/pids" \
			"$BUILD/xtxbench" bank --servers "$SERVERS" --table "$BANK_TABLE" \
			--protocol "$1" --accounts "$ACCOUNTS" --no-setup --inflight 8 \
			--duration "${RUN_SECS}s" --timeout 1ms --json --history "$WORK/hist/bank$i" \
			"${@:2}" \
			>"$WORK/client$i.out" 2>&1 &
	done
}

bank_total() {	# the sum of every account as server 0 holds it, read from its dump
	ctl 0 dump --table "$BANK_TABLE" | python3 -c '
import sys
t = 0
for line in sys.stdin:
    f = dict(w.split("=", 1) for w in line.split() if "=" in w)
    t += int.from_bytes(bytes.fromhex(f["value"]), "little", signed=True)
print(t)'
}

# run NAME PROTOCOL FAULT...: one bank run under the faults, then its checks.
run_bank() {
	local name=$1 proto=$2 f before_drop before_reclaim committed=0 i n d r total rc bad=0
	shift 2
	RUNS=$((RUNS + 1))
	COUNTED=1
	PROTO=$proto
	: >"$WORK/faults"
	rm -rf "$WORK/hist" "$WORK/cohist"
	mkdir -p "$WORK/hist"
	before_drop=$(counter_sum fault_drop)
	before_reclaim=$(($(counter_sum lock_lease_reclaim) + $(counter_sum hades_lease_reclaim)))
	if [[ " $* " == *" dupreorder "* ]]; then
		bank_clients "$proto" --fault-dup-ppm 50000 --fault-reorder-ppm 50000
	else
		bank_clients "$proto"
	fi
	while [ "$(wc -l <"$WORK/pids")" -lt "$NCLIENTS" ]; do sleep 0.05; done
	for f in "$@"; do "nemesis_$f" & done
	wait
	# what the faults left behind goes by lease (200 ms), and the resolver decides what was
	# logged (1 s after it was left)
	sleep 2
	for ((i = 0; i < NCLIENTS; i++)); do
		n=$(json_field "$(cat "$WORK/client$i.out")" transfers)
		committed=$((committed + ${n:-0}))
	done
	check "$name: transfers committed ($committed)" test "$committed" -gt 0
	doubts_answered "$name" "$WORK"/client*.out
	total=$(bank_total)
	invariant "$name: money conserved ($total of $((ACCOUNTS * 1000)))" \
		test "$total" = $((ACCOUNTS * 1000))
	invariant "$name: replicas identical" replicas_identical "$BANK_TABLE"
	n=$(locks_held)
	invariant "$name: no lock refuses requests past its lease ($n)" test "$n" = 0
	[ "$n" = 0 ] || locks_report
	# a coordinator killed for good recorded nothing of what it left to the resolver
	if [[ " $* " != *" kill_client "* ]]; then
		history_ok "$name" "$WORK"/hist/*
	fi
	for f in "$@"; do
		case $f in
		pause)
			n=$(($(counter_sum lock_lease_reclaim) + $(counter_sum hades_lease_reclaim) - before_reclaim))
			check "$name: clients paused ($(faults_of pause))" test "$(faults_of pause)" -gt 0
			# a pause that took no lock back tested nothing about leases: not counted
			if [ "$n" -gt 0 ]; then
				PAUSES_COUNTED=$((PAUSES_COUNTED + 1))
			else
				echo "# $name: no lease was reclaimed: this run does not count"
				COUNTED=0
			fi ;;
		loss)
			n=$(($(counter_sum fault_drop) - before_drop))
			check "$name: packets dropped ($n)" test "$n" -gt 0 ;;
		kill_xtxd)
			check "$name: xtxd killed and restarted" \
				test "$(faults_of xtxd_kill)" -eq 1 -a "$(faults_of xtxd_restart)" -eq 1 ;;
		kill_client)
			check "$name: a coordinator killed for good" test "$(faults_of client_kill)" -eq 1 ;;
		reload)
			check "$name: server 2 unloaded and loaded again, recovering from disk" \
				test "$(faults_of unload)" -eq 1 -a "$(faults_of reload)" -eq 1 ;;
		dupreorder)
			n=0
			for ((i = 0; i < NCLIENTS; i++)); do
				d=$(json_field "$(cat "$WORK/client$i.out")" duplicated)
				r=$(json_field "$(cat "$WORK/client$i.out")" reordered)
				n=$((n + ${d:-0} + ${r:-0}))
			done
			check "$name: requests duplicated and reordered ($n)" test "$n" -gt 0 ;;
		bulk_load)
			check "$name: bulk loads during traffic ($(faults_of bulk_load))" \
				test "$(faults_of bulk_load)" -eq "$NSERVERS" ;;
		cotenant)
			n=$(json_field "$(cat "$WORK/co.out")" committed)
			r=$(json_field "$(cat "$WORK/co.out")" violations)
			check "$name: SmallBank ran beside the bank (${n:-0} committed)" \
				test "$(faults_of cotenant)" -eq 1 -a "${n:-0}" -gt 0
			invariant "$name: SmallBank beside: --verify passes (${r:-no} violations, exit $(cat "$WORK/co.rc"))" \
				test "${r:-1}" = 0 -a "$(cat "$WORK/co.rc")" = 0
			[ "${r:-1}" = 0 ] || tail -n 8 "$WORK/co.out"
			doubts_answered "$name: SmallBank beside" "$WORK/co.out"
			history_ok "$name: SmallBank beside" -f "$WORK/cohist/wl.final" "$WORK"/cohist/wl.[0-9]* ;;
		esac
	done
	ANOMALIES=$((ANOMALIES + bad))
	[ "$COUNTED" = 1 ] || RUNS=$((RUNS - 1))
	echo "# nemesis run: bank $proto under $* -> $committed committed, $bad anomalies"
}

# run_workload NAME WORKLOAD PROTOCOL FAULT...: one client process of several threads
# (its coordinators pause together) under the faults, then the workload's --verify.
run_workload() {
	local name=$1 wl=$2 proto=$3 f out rc before_drop before_reclaim n bad=0 size i
	shift 3
	RUNS=$((RUNS + 1))
	: >"$WORK/faults"
	rm -rf "$WORK/hist"
	mkdir -p "$WORK/hist"
	before_drop=$(counter_sum fault_drop)
	before_reclaim=$(($(counter_sum lock_lease_reclaim) + $(counter_sum hades_lease_reclaim)))
	size=(--accounts 2000)
	[ "$wl" = tatp ] && size=(--subscribers 2000)
	: >"$WORK/pids"
	client bash -c 'echo $$ >>"$0"; exec "$@"' "$WORK/pids" \
		"$BUILD/xtxbench" "$wl" --servers "$SERVERS" --ctl "$CTL" --protocol "$proto" "${size[@]}" \
		--threads 2 --inflight 8 --duration "${RUN_SECS}s" --warmup 0 --timeout 1ms \
		--populate --verify --json --history "$WORK/hist/wl" >"$WORK/wl.out" 2>&1 &
	while [ "$(wc -l <"$WORK/pids")" -lt 1 ]; do sleep 0.05; done
	# the faults start once the population is in and the run has begun (its first progress
	# line): a pause during a long populate would push the run past the loss window
	for ((i = 0; i < 1200; i++)); do
		grep -q '^t=' "$WORK/wl.out" 2>/dev/null && break
		kill -0 "$(head -n 1 "$WORK/pids")" 2>/dev/null || break
		sleep 0.05
	done
	for f in "$@"; do "nemesis_$f" & done
	wait
	doubts_answered "$name" "$WORK/wl.out"
	rc=$(json_field "$(cat "$WORK/wl.out")" violations)
	n=$(json_field "$(cat "$WORK/wl.out")" committed)
	check "$name: transactions committed (${n:-0})" test "${n:-0}" -gt 0
	invariant "$name: --verify passes (${rc:-no} violations)" test "${rc:-1}" = 0
	grep -q '"violations":0' "$WORK/wl.out" || tail -n 8 "$WORK/wl.out"
	sleep 1
	n=$(locks_held)
	invariant "$name: no lock refuses requests past its lease ($n)" test "$n" = 0
	history_ok "$name" -f "$WORK/hist/wl.final" "$WORK"/hist/wl.[0-9]*
	for f in "$@"; do
		case $f in
		pause) check "$name: client paused ($(faults_of pause))" test "$(faults_of pause)" -gt 0 ;;
		loss)
			n=$(($(counter_sum fault_drop) - before_drop))
			check "$name: packets dropped ($n)" test "$n" -gt 0 ;;
		bulk_load)
			check "$name: bulk loads during traffic ($(faults_of bulk_load))" \
				test "$(faults_of bulk_load)" -eq "$NSERVERS" ;;
		esac
	done
	ANOMALIES=$((ANOMALIES + bad))
	echo "# nemesis run $RUNS: $wl $proto under $* -> $bad anomalies"
}

# The accounts, once.
out=$(client "$BUILD/xtxbench" bank --servers "$SERVERS" --table "$BANK_TABLE" \
	--accounts "$ACCOUNTS" --duration 1s --inflight 1 2>&1)
check "bank accounts created" test $? -eq 0

# The runs: PROTOCOL:FAULT[+FAULT...]; NEMESIS_RUNS picks others.
# The quick subset meets every fault kind and every protocol in as few runs as it can.
QUICK="occ:pause+kill_xtxd 2pl:pause+loss+bulk_load hades:pause+dupreorder+cotenant
	occ:kill_client 2pl:reload smallbank:2pl:pause+loss tatp:occ:loss"
FULL=""
for p in occ 2pl hades; do
	for f in pause loss dupreorder kill_xtxd reload kill_client bulk_load \
		pause+loss+kill_xtxd pause+dupreorder+reload pause+loss+cotenant; do
		FULL+=" $p:$f"
	done
	for w in smallbank tatp; do
		for f in pause loss bulk_load pause+loss; do
			FULL+=" $w:$p:$f"
		done
	done
done
[ "${NEMESIS_FULL:-0}" = 1 ] && QUICK=$FULL
for r in ${NEMESIS_RUNS:-$QUICK}; do
	f=${r##*:}
	case $r in
	smallbank:* | tatp:*)
		w=${r%%:*}
		p=${r#*:}
		p=${p%%:*}
		run_workload "$w $p, ${f//+/ and }" "$w" "$p" ${f//+/ } ;;
	*)
		p=${r%%:*}
		run_bank "$p, ${f//+/ and }" "$p" ${f//+/ } ;;
	esac
done

echo "nemesis: $RUNS runs, $ANOMALIES anomalies, $CHECKED transactions checked"
check "pause runs took leases back ($PAUSES_COUNTED of them)" test "$PAUSES_COUNTED" -gt 0
check "nemesis: no anomaly over $RUNS runs" test "$ANOMALIES" -eq 0
exit "$TEST_FAILED"
