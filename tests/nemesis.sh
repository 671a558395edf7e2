#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The nemesis: bank, SmallBank and TATP under OCC, 2PL and HADES on 3 servers (R = 3) with several
# clients while faults are injected, one kind per run and then mixed: client pauses past the
# leases, request and reply loss, requests duplicated and reordered, requests duplicated onto
# another CPU at the same instant (the server runs both copies at once, and the two answers
# must agree), xtxd's answers lost after it ran them with a kernel cache too small for the
# data (the rare path taken, requests re-deferred), xtxd SIGKILLed and adopted, a server
# unloaded and loaded again (recovery from disk), coordinators killed for good, bulk loads
# during traffic, a second workload sharing the servers. Every run ends with the invariant
# checks (money or --verify, replicas, locks) and the exact history check of every
# transaction it ran, and must show that its faults happened. NEMESIS_FULL=1 (make nemesis)
# runs the whole matrix; by default a quick subset. NEMESIS_FAULTS="KIND..." keeps only the
# runs with one of those fault kinds (e.g. "dupcpu rareloss"); NEMESIS_RUNS names the runs.
# checks: 84 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/integration/lib.sh"
NSERVERS=3
# A queue per CPU (up to topo.sh's 8) on every link: a request sent on CPU c leaves on queue
# c % queues and reaches the server's receive queue of that number, whose NAPI runs the
# server's XDP program on c. With one queue the server's XDP runs on one CPU at a time, its
# NAPI taking every CPU's frames in turn (spread_queues below chooses per run).
NCPUS=$(getconf _NPROCESSORS_CONF)
TOPO_QUEUES=${NEMESIS_QUEUES:-$((NCPUS < 2 ? 2 : NCPUS > 8 ? 8 : NCPUS))}

LEASE=200ms
RESOLVE_AFTER=1s
# the runs that lose xtxd's answers serve from a kernel cache of this many buckets of 8 ways
# (far fewer than the keys), and take a bucket held across a lost round trip over after
# RARE_LEASE: well inside the clients' 50 tries of --timeout 1ms
RARE_BUCKETS=${NEMESIS_KV_BUCKETS:-2}
RARE_LEASE=20ms
BASE_ARGS="--lock-lease $LEASE --hades-lease $LEASE --peers $(all_server_ips)"
BASE_ARGS+=" --resolve-after $RESOLVE_AFTER"
SERVER_ARGS=$BASE_ARGS
CACHE=default
setup_servers $SERVER_ARGS
SERVERS=$(all_server_ips)
DEFAULT_BUCKETS=$(json_field "$("$BUILD/xtxctl" --netns "$(server_ns 0)" --iface "$(server_dev 0)" \
	info --json)" kv_buckets)
CTL=$(all_server_ctls)
# the whole matrix runs each fault a second shorter, to stay within 15 minutes
if [ "${NEMESIS_FULL:-0}" = 1 ]; then RUN_SECS=${NEMESIS_SECS:-5}; else RUN_SECS=${NEMESIS_SECS:-6}; fi
NCLIENTS=${NEMESIS_CLIENTS:-4}
ACCOUNTS=${NEMESIS_ACCOUNTS:-16}
BANK_TABLE=15
RUNS=0
ANOMALIES=0
declare -A FIRED FIRED_RUNS FIRED_WHAT	# per fault kind: how often it fired, in how many runs
PAUSES_COUNTED=0	# pause runs in which a lease was taken back
CHECKED=0		# transactions the history checker went through, over all runs
WORK=${NEMESIS_WORK:-$(mktemp -d /tmp/xtx-nemesis.XXXXXX)}
# a signal ends the run (the handler alone would let it go on, over torn-down servers)
trap 'cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

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
		ARGS="$SERVER_ARGS" >/dev/null
}
rare_counter_sum() {	# rare_counter_sum NAME: one of xtxctl rare-stats' counters (xtxd's), summed
	local i n t=0
	for ((i = 0; i < NSERVERS; i++)); do
		n=$(json_field "$(ctl "$i" rare-stats --json)" "$1")
		t=$((t + ${n:-0}))
	done
	echo "$t"
}
client_sum() {	# client_sum FIELD FILE...: a field of the clients' JSON summaries, summed
	local f n t=0
	for f in "${@:2}"; do
		n=$(json_field "$(cat "$f")" "$1")
		t=$((t + ${n:-0}))
	done
	echo "$t"
}

# set_cache default|small: every server unloaded (its store stays on disk) and loaded again,
# recovering it, with the default kernel cache or one far smaller than the keys, so that most
# ops go to xtxd (the rare path). Runs change it only when they need the other.
set_cache() {
	local i n want=$DEFAULT_BUCKETS ok=1
	[ "$1" = "$CACHE" ] && return 0
	CACHE=$1
	SERVER_ARGS=$BASE_ARGS
	if [ "$CACHE" = small ]; then
		SERVER_ARGS+=" --kv-buckets $RARE_BUCKETS --kv-lease $RARE_LEASE"
		want=$RARE_BUCKETS
	fi
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" unload >/dev/null 2>&1 || ok=0
		restart_xtxd "$i" || ok=0
		n=$(json_field "$(ctl "$i" info --json)" kv_buckets)
		[ "$n" = "$want" ] || ok=0
	done
	check "servers loaded again, recovered, with a kernel cache of $want buckets" test "$ok" = 1
}

# xps_mask Q N: the CPUs c with c % N == Q, as a cpumask file takes them (32-bit hex words, the
# highest first)
xps_mask() {
	local q=$1 nq=$2 w c v out=""
	for ((w = (NCPUS + 31) / 32 - 1; w >= 0; w--)); do
		v=0
		for ((c = w * 32; c < (w + 1) * 32 && c < NCPUS; c++)); do
			[ $((c % nq)) = "$q" ] && v=$((v | 1 << (c - w * 32)))
		done
		out+="${out:+,}$(printf %08x "$v")"
	done
	echo "$out"
}
# spread_queues cpu|one: what the clients send leaves on their CPU's queue (XPS), so requests
# sent from two CPUs at once run at once on the server; or every CPU sends on queue 0, one
# NAPI, as a one-queue link does (the other runs: what they tested so far).
spread_queues() {
	local i q m n=$TOPO_QUEUES
	[ "$1" = "${SPREAD:-}" ] && return 0
	SPREAD=$1
	for ((i = 0; i < NSERVERS; i++)); do
		for ((q = 0; q < n; q++)); do
			if [ "$SPREAD" = cpu ]; then
				m=$(xps_mask "$q" "$n")
			else
				m=$(xps_mask "$q" 1)
			fi
			client sh -c "echo $m >/sys/class/net/${PREFIX}c$i/queues/tx-$q/xps_cpus" ||
				return 1
		done
	done
}

# ---- faults: each records that it happened in $WORK/faults ----

note_fault() { echo "$1" >>"$WORK/faults"; }
faults_of() { local n; n=$(grep -c "^$1\$" "$WORK/faults" 2>/dev/null); echo "${n:-0}"; }
# fired KIND N WHAT: the run's fault KIND happened N times (WHAT: what N counts), for the summary
fired() {
	FIRED[$1]=$((${FIRED[$1]:-0} + $2))
	[ "$2" -gt 0 ] && FIRED_RUNS[$1]=$((${FIRED_RUNS[$1]:-0} + 1))
	FIRED_WHAT[$1]=$3
}

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

# The clients send 5% of their requests twice at the same instant, the copy from a thread on
# another CPU through the same socket, and hold the two answers against each other
# (--fault-dup-cpu-ppm; the clients pass it when the run names this fault).
nemesis_dupcpu() {
	note_fault dupcpu
}

# Every server's xtxd loses 2% of the answers it ran (xtxctl fault --drop-rare-reply-ppm; the
# run serves from the small kernel cache, so most ops go to xtxd): the bucket and the request
# record stay held, the client retransmits, and after RARE_LEASE XDP takes the bucket over and
# defers the request again, which xtxd answers from its own record.
nemesis_rareloss() {
	local i
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" fault --drop-rare-reply-ppm 20000 >/dev/null && note_fault rareloss
	done
	sleep $((RUN_SECS - 1))
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" fault --drop-rare-reply-ppm 0 >/dev/null
	done
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

# prepare_run FAULT...: the servers and links the run's faults need, and the counters its
# checks compare with afterwards (BEFORE_*).
prepare_run() {
	local f cache=default spread=one
	for f in "$@"; do
		case $f in
		rareloss) cache=small ;;
		dupcpu) spread=cpu ;;
		esac
	done
	set_cache "$cache"
	spread_queues "$spread" || fail "client queues spread: $spread"
	BEFORE_DEFERRED=$(counter_sum kv_deferred)
	BEFORE_TAKEOVER=$(counter_sum kv_lease_takeover)
	BEFORE_REPLAYED=$(counter_sum replayed)
	BEFORE_RARE_DROPS=$(rare_counter_sum fault_drops)
	BEFORE_RARE_REPLAYS=$(rare_counter_sum replays)
}

# check_new_faults NAME CLIENT-OUTPUTS FAULT...: that the run's concurrent duplicates and lost
# rare-path answers happened (with numbers), and the anomaly the duplicates can find: two
# complete answers to one request that disagree.
check_new_faults() {
	local name=$1 outs=$2 f n sent apart busy compared differ
	shift 2
	for f in "$@"; do
		case $f in
		dupcpu)
			sent=$(client_sum dup_cpu_sent $outs)
			apart=$(client_sum dup_cpu_apart $outs)
			busy=$(client_sum dup_cpu_busy $outs)
			compared=$(client_sum dup_cpu_compared $outs)
			differ=$(client_sum dup_cpu_mismatched $outs)
			check "$name: requests sent twice at once from two CPUs ($sent, $apart on two CPUs)" \
				test "$apart" -gt 0
			check "$name: the servers ran both copies at once ($busy copies refused busy)" \
				test "$busy" -gt 0
			check "$name: answer pairs compared ($compared)" test "$compared" -gt 0
			invariant "$name: each request sent twice answered the same ($differ of $compared not)" \
				test "$differ" = 0
			[ "$differ" = 0 ] || grep -h -A 3 '^anomaly: dup-cpu' $outs | head -n 12 | sed 's/^/    /'
			fired dupcpu "$sent" "requests sent twice at once" ;;
		rareloss)
			n=$(($(counter_sum kv_deferred) - BEFORE_DEFERRED))
			check "$name: the rare path was taken ($n ops deferred to xtxd)" test "$n" -gt 0
			n=$(($(rare_counter_sum fault_drops) - BEFORE_RARE_DROPS))
			check "$name: xtxd's answers lost after it ran them ($n)" test "$n" -gt 0
			fired rareloss "$n" "xtxd answers lost"
			n=$(($(counter_sum kv_lease_takeover) - BEFORE_TAKEOVER))
			check "$name: buckets held across a lost round trip taken over ($n)" test "$n" -gt 0
			n=$(($(counter_sum replayed) - BEFORE_REPLAYED))
			check "$name: requests re-deferred or replayed by XDP ($n)" test "$n" -gt 0
			n=$(($(rare_counter_sum replays) - BEFORE_RARE_REPLAYS))
			check "$name: re-deferred ops answered from xtxd's record ($n)" test "$n" -gt 0 ;;
		esac
	done
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
	local name=$1 proto=$2 f before_drop before_reclaim committed=0 i n d r total rc bad=0 args
	shift 2
	RUNS=$((RUNS + 1))
	COUNTED=1
	PROTO=$proto
	: >"$WORK/faults"
	rm -rf "$WORK/hist" "$WORK/cohist"
	mkdir -p "$WORK/hist"
	prepare_run "$@"
	before_drop=$(counter_sum fault_drop)
	before_reclaim=$(($(counter_sum lock_lease_reclaim) + $(counter_sum hades_lease_reclaim)))
	args=()
	[[ " $* " == *" dupreorder "* ]] && args+=(--fault-dup-ppm 50000 --fault-reorder-ppm 50000)
	[[ " $* " == *" dupcpu "* ]] && args+=(--fault-dup-cpu-ppm 50000)
	# an audit holds a lock on every account, and from the rare path it holds them long:
	# under no-wait 2PL one in ten left the transfers about nothing to commit
	[ "$CACHE" = small ] && args+=(--audit-pct 2)
	bank_clients "$proto" "${args[@]}"
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
	# what a client saw that cannot be: an audit's other total, an account without its value
	n=$(client_sum bad_audits "$WORK"/client*.out)
	d=$(client_sum missing "$WORK"/client*.out)
	invariant "$name: the clients read every account whole, and audits the total ($d, $n not)" \
		test "$n" = 0 -a "$d" = 0
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
			fired pause "$(faults_of pause)" "clients paused"
			# a pause that took no lock back tested nothing about leases: not counted
			if [ "$n" -gt 0 ]; then
				PAUSES_COUNTED=$((PAUSES_COUNTED + 1))
			else
				echo "# $name: no lease was reclaimed: this run does not count"
				COUNTED=0
			fi ;;
		loss)
			n=$(($(counter_sum fault_drop) - before_drop))
			check "$name: packets dropped ($n)" test "$n" -gt 0
			fired loss "$n" "packets dropped" ;;
		kill_xtxd)
			check "$name: xtxd killed and restarted" \
				test "$(faults_of xtxd_kill)" -eq 1 -a "$(faults_of xtxd_restart)" -eq 1
			fired kill_xtxd "$(faults_of xtxd_kill)" "xtxd SIGKILLed" ;;
		kill_client)
			check "$name: a coordinator killed for good" test "$(faults_of client_kill)" -eq 1
			fired kill_client "$(faults_of client_kill)" "coordinators killed" ;;
		reload)
			check "$name: server 2 unloaded and loaded again, recovering from disk" \
				test "$(faults_of unload)" -eq 1 -a "$(faults_of reload)" -eq 1
			fired reload "$(faults_of reload)" "servers unloaded and reloaded" ;;
		dupreorder)
			n=0
			for ((i = 0; i < NCLIENTS; i++)); do
				d=$(json_field "$(cat "$WORK/client$i.out")" duplicated)
				r=$(json_field "$(cat "$WORK/client$i.out")" reordered)
				n=$((n + ${d:-0} + ${r:-0}))
			done
			check "$name: requests duplicated and reordered ($n)" test "$n" -gt 0
			fired dupreorder "$n" "requests duplicated or held back" ;;
		bulk_load)
			check "$name: bulk loads during traffic ($(faults_of bulk_load))" \
				test "$(faults_of bulk_load)" -eq "$NSERVERS"
			fired bulk_load "$(faults_of bulk_load)" "bulk loads" ;;
		cotenant)
			n=$(json_field "$(cat "$WORK/co.out")" committed)
			r=$(json_field "$(cat "$WORK/co.out")" violations)
			check "$name: SmallBank ran beside the bank (${n:-0} committed)" \
				test "$(faults_of cotenant)" -eq 1 -a "${n:-0}" -gt 0
			fired cotenant "$(faults_of cotenant)" "co-tenant workloads"
			invariant "$name: SmallBank beside: --verify passes (${r:-no} violations, exit $(cat "$WORK/co.rc"))" \
				test "${r:-1}" = 0 -a "$(cat "$WORK/co.rc")" = 0
			[ "${r:-1}" = 0 ] || tail -n 8 "$WORK/co.out"
			doubts_answered "$name: SmallBank beside" "$WORK/co.out"
			history_ok "$name: SmallBank beside" -f "$WORK/cohist/wl.final" "$WORK"/cohist/wl.[0-9]* ;;
		esac
	done
	check_new_faults "$name" "$(echo "$WORK"/client*.out)" "$@"
	ANOMALIES=$((ANOMALIES + bad))
	[ "$COUNTED" = 1 ] || RUNS=$((RUNS - 1))
	echo "# nemesis run: bank $proto under $* -> $committed committed, $bad anomalies"
	[ "$bad" = 0 ] || fresh_servers
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
	prepare_run "$@"
	before_drop=$(counter_sum fault_drop)
	before_reclaim=$(($(counter_sum lock_lease_reclaim) + $(counter_sum hades_lease_reclaim)))
	size=(--accounts 2000)
	[ "$wl" = tatp ] && size=(--subscribers 2000)
	[[ " $* " == *" dupcpu "* ]] && size+=(--fault-dup-cpu-ppm 50000)
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
		pause)
			check "$name: client paused ($(faults_of pause))" test "$(faults_of pause)" -gt 0
			fired pause "$(faults_of pause)" "clients paused" ;;
		loss)
			n=$(($(counter_sum fault_drop) - before_drop))
			check "$name: packets dropped ($n)" test "$n" -gt 0
			fired loss "$n" "packets dropped" ;;
		bulk_load)
			check "$name: bulk loads during traffic ($(faults_of bulk_load))" \
				test "$(faults_of bulk_load)" -eq "$NSERVERS"
			fired bulk_load "$(faults_of bulk_load)" "bulk loads" ;;
		esac
	done
	check_new_faults "$name" "$WORK/wl.out" "$@"
	ANOMALIES=$((ANOMALIES + bad))
	echo "# nemesis run $RUNS: $wl $proto under $* -> $bad anomalies"
	[ "$bad" = 0 ] || fresh_servers
}

create_accounts() {
	client "$BUILD/xtxbench" bank --servers "$SERVERS" --table "$BANK_TABLE" \
		--accounts "$ACCOUNTS" --duration 1s --inflight 1 >/dev/null 2>&1
}

# fresh_servers: every server emptied (unloaded, loaded again with --fresh) and the accounts
# created again, after a run that found anomalies: data it left broken (money, replicas that
# differ) would fail every later run that uses it, for nothing of its own.
fresh_servers() {
	local i ok=1
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" unload --force >/dev/null 2>&1 || ok=0
		make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
			ARGS="$SERVER_ARGS --fresh" >/dev/null || ok=0
	done
	create_accounts || ok=0
	check "servers emptied and the accounts created again after the anomalies" test "$ok" = 1
}

# The accounts, once.
create_accounts
check "bank accounts created" test $? -eq 0

# The runs: PROTOCOL:FAULT[+FAULT...]; NEMESIS_RUNS picks others.
# The quick subset meets every fault kind and every protocol in as few runs as it can; the
# runs that lose xtxd's answers come last: the servers are loaded again once, with the small
# kernel cache they need.
QUICK="occ:pause+kill_xtxd 2pl:pause+loss+bulk_load hades:pause+dupreorder+cotenant
	occ:kill_client 2pl:reload smallbank:2pl:pause+loss tatp:occ:loss hades:dupcpu
	occ:dupcpu+rareloss"
FULL=""
for p in occ 2pl hades; do
	for f in pause loss dupreorder dupcpu kill_xtxd reload kill_client bulk_load \
		pause+loss+kill_xtxd pause+dupreorder+reload pause+loss+cotenant; do
		FULL+=" $p:$f"
	done
	for w in smallbank tatp; do
		for f in pause loss bulk_load pause+loss dupcpu; do
			FULL+=" $w:$p:$f"
		done
	done
done
for p in occ 2pl hades; do
	for f in rareloss dupcpu+rareloss; do
		FULL+=" $p:$f"
	done
	for w in smallbank tatp; do
		FULL+=" $w:$p:rareloss"
	done
done
[ "${NEMESIS_FULL:-0}" = 1 ] && QUICK=$FULL
SELECTED=""
for r in ${NEMESIS_RUNS:-$QUICK}; do
	f=${r##*:}
	if [ -n "${NEMESIS_FAULTS:-}" ]; then
		keep=0
		for k in $NEMESIS_FAULTS; do [[ "+$f+" == *"+$k+"* ]] && keep=1; done
		[ "$keep" = 1 ] || continue
	fi
	SELECTED+=" $r"
done
for r in $SELECTED; do
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

for f in $(printf '%s\n' "${!FIRED[@]}" | sort); do
	echo "nemesis: fault $f fired in ${FIRED_RUNS[$f]:-0} runs: ${FIRED[$f]} ${FIRED_WHAT[$f]}"
done
echo "nemesis: $RUNS runs, $ANOMALIES anomalies, $CHECKED transactions checked"
if [[ " $SELECTED " == *":pause"* || " $SELECTED " == *"+pause"* ]]; then
	check "pause runs took leases back ($PAUSES_COUNTED of them)" test "$PAUSES_COUNTED" -gt 0
fi
check "nemesis: no anomaly over $RUNS runs" test "$ANOMALIES" -eq 0
exit "$TEST_FAILED"
