#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The nemesis: bank, SmallBank and TATP under OCC, 2PL and HADES on 3 servers (R = 3) with several
# clients while faults are injected, one kind per run and then mixed: client pauses past the
# leases, request and reply loss, requests duplicated and reordered, requests duplicated onto
# another CPU at the same instant (the server runs both copies at once, and the two answers
# must agree), xtxd's answers lost after it ran them with a kernel cache too small for the
# data (the rare path taken, requests re-deferred), xtxd SIGKILLed and adopted, a server
# unloaded and loaded again (recovery from disk), coordinators killed for good, bulk loads
# during traffic, a second workload sharing the servers; and against durability and
# the servers' own ports: snapshots during traffic then SIGKILL and reload (every store the
# same after), strangers and forgers on the resolver port, a log disk that fails its sync or
# hangs (fail-stop, then the ring written out). Every run ends with the invariant checks
# (money or --verify, replicas, locks) and the exact history check of every transaction it
# ran against the servers' final state, and must show that its faults happened.
# NEMESIS_FULL=1 (make nemesis) runs the whole matrix; by default a quick subset.
# NEMESIS_FAULTS="KIND..." keeps only the runs with one of those fault kinds (e.g. "dupcpu
# rareloss"); NEMESIS_RUNS names the runs. The servers and clients share a secret
# (--secret-file), so forged peer messages must fail.
# checks: 105 in the quick subset (tests/integration/test_nemesis.sh); the script ends by holding
# the verdicts it printed against what its runs require, so a run cut short fails either way
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
WORK=${NEMESIS_WORK:-$(mktemp -d /tmp/xtx-nemesis.XXXXXX)}
SECRET=$WORK/secret
printf '%s\n' 0123456789abcdef0123456789abcdef >"$SECRET"
chmod 600 "$SECRET"
# a disk that fails or hangs on demand (disk_* faults), idle while $FAILDISK is absent
FAILDISK=$WORK/faildisk
export LD_PRELOAD=$BUILD/tests/libfaildisk.so XTX_FAILDISK=$FAILDISK
# the runs that lose xtxd's answers serve from a kernel cache of this many buckets of 8 ways
# (far fewer than the keys), and take a bucket held across a lost round trip over after
# RARE_LEASE: well inside the clients' 50 tries of --timeout 1ms
RARE_BUCKETS=${NEMESIS_KV_BUCKETS:-2}
RARE_LEASE=20ms
BASE_ARGS="--lock-lease $LEASE --hades-lease $LEASE --peers $(all_server_ips) \
	--resolve-after $RESOLVE_AFTER --secret-file $SECRET --log-stall 15s"
SERVER_ARGS=$BASE_ARGS
CACHE=default
setup_servers $SERVER_ARGS
# only xtxd takes the shim: the clients and tools run without it
unset LD_PRELOAD
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
PAUSES_COUNTED=0	# pause runs in which a lease was taken back
KILLS_COUNTED=0		# kill_client runs whose victim left the resolvers work
CHECKED=0		# transactions the history checker went through, over all runs
declare -A FIRED FIRED_RUNS FIRED_WHAT	# per fault kind: how often it fired, in how many runs
# a signal ends the run (the handler alone would let it go on, over torn-down servers)
trap 'cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
# every verdict line this script prints, to hold against what its runs require
VERDICTS=0
pass() { VERDICTS=$((VERDICTS + 1)); echo "PASS: $*"; }
fail() { VERDICTS=$((VERDICTS + 1)); echo "FAIL: $*"; TEST_FAILED=1; }
# check, returning its verdict, so `check ... && fired KIND` counts only faults that passed
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; return 1; fi
}
client_secret() { echo --secret-file "$SECRET"; }

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
# history_ok_but_unknown NAME FILES...: as history_ok, but reads of versions whose writer's
# record died with a killed coordinator are allowed (kind "unknown"); every other count 0
history_ok_but_unknown() {
	local name=$1 out rc n a others
	shift
	out=$("$BUILD/xtxbench" check-history --max-print 3 "$@" 2>&1)
	rc=$?
	n=$(grep -o '^history: [0-9]* transactions' <<<"$out" | grep -o '[0-9]*')
	CHECKED=$((CHECKED + ${n:-0}))
	a=$(grep -o 'anomalies .*' <<<"$out")
	others=$(grep -o '[A-Za-z0-9]*=[0-9]*' <<<"$a" | grep -v '^unknown=' | grep -vc '=0$')
	invariant "$name: history serializable but for reads of the killed one's writes, ${n:-0} transactions ($a)" \
		test "${n:-0}" -gt 0 -a "$others" = 0 -a "$rc" -le 1
	[ "$others" = 0 ] || head -n 6 <<<"$out" | sed 's/^/    /'
}
xtxd_pid() { cat "/run/xtx/$(server_ns "$1")-$(server_dev "$1").pid"; }
restart_xtxd() {
	LD_PRELOAD=$BUILD/tests/libfaildisk.so make -s -C "$ROOT" load IFACE="$(server_dev "$1")" \
		NETNS="$(server_ns "$1")" ARGS="$SERVER_ARGS" >/dev/null
}
# gone PID [TRIES]: waits (up to 10 s, or TRIES of 50 ms) for a process to end
gone() {
	local n
	for ((n = 0; n < ${2:-200}; n++)); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done
	return 1
}
# the store of server I as "table key version" lines: the checker's --final-state
final_state() {
	ctl "$1" dump --table "$2" | sed 's/^table=\([0-9]*\) key=\([0-9]*\) version=\([0-9]*\).*/\1 \2 \3/'
}
rstat_sum() {	# rstat_sum NAME: one of xtxd's own counters (rare-stats), summed over the servers
	local i n t=0
	for ((i = 0; i < NSERVERS; i++)); do
		n=$(json_field "$(ctl "$i" rare-stats --json)" "$1")
		t=$((t + ${n:-0}))
	done
	echo "$t"
}
# the locks or slots a lease took back, of the family PROTOCOL runs in
reclaims_of() {
	case $1 in
	hades) counter_sum hades_lease_reclaim ;;
	*) counter_sum lock_lease_reclaim ;;
	esac
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
	REQUIRED=$((REQUIRED + 1))
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
# fired KIND [N WHAT]: the run saw its fault kind happen, N times (WHAT: what N counts), for
# the summary; N = 0 is no firing
fired() {
	[ "${2:-1}" -gt 0 ] || return 0
	FIRED_RUNS[$1]=$((${FIRED_RUNS[$1]:-0} + 1))
	[ -n "${3:-}" ] || return 0
	FIRED[$1]=$((${FIRED[$1]:-0} + $2))
	FIRED_WHAT[$1]=$3
}
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

# Kills one coordinator for good mid-commit: the resolver finishes what it left. Server 2
# loses every request for half a second first, so each transaction of it that reaches its
# log appends then sits logged on the other replicas, its locks held: when it dies, the
# resolvers have those to decide for certain. (The other clients see a lossy half second.)
nemesis_kill_client() {
	local pid
	sleep 2
	pid=$(head -n 1 "$WORK/pids")
	ctl 2 fault --drop-request-ppm 1000000 >/dev/null
	sleep 0.5
	kill -9 "$pid" 2>/dev/null && note_fault client_kill
	ctl 2 fault --drop-request-ppm 0 >/dev/null
}

# Bulk-loads fresh keys into the table the traffic uses (BULK_TABLE), above every key it
# touches, on every server at one version so the replicas agree, during the traffic.
nemesis_bulk_load() {
	local i m v=0
	sleep 1
	# above every replica's version mark (xtxctl load --version)
	for ((i = 0; i < NSERVERS; i++)); do
		m=$(ctl "$i" version-mark | sed -n 's/^mark //p')
		[ "${m:-0}" -gt "$v" ] && v=$m
	done
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" load --table "$BULK_TABLE" --first $((BULK_FIRST + RUNS * 100000)) \
			--count 50000 --version $((v + 1)) >/dev/null && note_fault bulk_load
	done
}

# Runs a second workload on the same servers during the bank traffic: SmallBank in its own
# tables under the next protocol (the bank's OCC beside 2PL, 2PL beside HADES, HADES beside
# OCC), populated while the bank runs, then verified and its history checked with the run's.
nemesis_cotenant() {
	local proto
	# the other family: a lease taken back is then the bank's own (reclaims_of)
	case $PROTO in occ | 2pl) proto=hades ;; *) proto=$COTENANT_LOCKS ;; esac
	mkdir -p "$WORK/cohist"
	client "$BUILD/xtxbench" smallbank --servers "$SERVERS" --ctl "$CTL" --protocol "$proto" \
		$(client_secret) \
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
	BEFORE_RARE_DROPS=$(rstat_sum fault_drops)
	BEFORE_RARE_REPLAYS=$(rstat_sum replays)
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
			[ "$apart" -gt 0 ] && [ "$busy" -gt 0 ] &&
				fired dupcpu "$sent" "requests sent twice at once" ;;
		rareloss)
			n=$(($(counter_sum kv_deferred) - BEFORE_DEFERRED))
			check "$name: the rare path was taken ($n ops deferred to xtxd)" test "$n" -gt 0
			n=$(($(rstat_sum fault_drops) - BEFORE_RARE_DROPS))
			check "$name: xtxd's answers lost after it ran them ($n)" test "$n" -gt 0
			fired rareloss "$n" "xtxd answers lost"
			n=$(($(counter_sum kv_lease_takeover) - BEFORE_TAKEOVER))
			check "$name: buckets held across a lost round trip taken over ($n)" test "$n" -gt 0
			n=$(($(counter_sum replayed) - BEFORE_REPLAYED))
			check "$name: requests re-deferred or replayed by XDP ($n)" test "$n" -gt 0
			n=$(($(rstat_sum replays) - BEFORE_RARE_REPLAYS))
			check "$name: re-deferred ops answered from xtxd's record ($n)" test "$n" -gt 0 ;;
		esac
	done
}

# ---- faults against durability and the servers' own ports (their own section) ----

# Snapshots on every server, again and again, while the traffic runs: each one's log
# positions fall between some transaction's log and commit round trips. What a snapshot
# must keep is checked after the run (same_after_restarts): SIGKILL and restart every
# server, reload one, and each store must be what it was.
nemesis_snapshots() {
	local end=$((SECONDS + RUN_SECS - 1)) i
	while [ "$SECONDS" -lt "$end" ]; do
		for ((i = 0; i < NSERVERS; i++)); do
			ctl "$i" snapshot 2>/dev/null | grep -q '^snapshot: ' && note_fault snapshot
		done
		sleep 0.2
	done
}

# same_after_restarts NAME: every server's store, before and after its xtxd is SIGKILLed
# and started again (adopting the program, its overflow store rebuilt from the snapshot and
# the logs), then server 0 unloaded and loaded (all of it rebuilt from disk).
same_after_restarts() {
	local name=$1 i pid same=0
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" dump >"$WORK/before$i"
		pid=$(xtxd_pid "$i")
		kill -9 "$pid" && gone "$pid" && restart_xtxd "$i" && note_fault snapshot_kill
		ctl "$i" dump >"$WORK/after$i"
		cmp -s "$WORK/before$i" "$WORK/after$i" && same=$((same + 1)) ||
			diff "$WORK/before$i" "$WORK/after$i" | head -n 6 | sed 's/^/    /'
	done
	invariant "$name: every store the same after SIGKILL and restart ($same of $NSERVERS)" \
		test "$same" = "$NSERVERS"
	ctl 0 dump >"$WORK/before0"
	ctl 0 unload >/dev/null 2>&1 && restart_xtxd 0 && note_fault snapshot_reload
	ctl 0 dump >"$WORK/after0"
	invariant "$name: server 0's store the same after unload and load ($(wc -l <"$WORK/after0") keys)" \
		cmp -s "$WORK/before0" "$WORK/after0"
	cmp -s "$WORK/before0" "$WORK/after0" ||
		diff "$WORK/before0" "$WORK/after0" | head -n 6 | sed 's/^/    /'
}

# Strangers and forgers on the resolver port: unsealed DECIDEs (abort and commit) for the
# running clients' transaction ids, and questions about unknown ones, sent from the
# servers' own addresses (forged) and from the client's (a stranger). With the secret all
# are counted and dropped before any work; none may change an outcome.
nemesis_strangers() {
	local end=$((SECONDS + RUN_SECS - 1)) i from to c
	local peer="python3 $ROOT/tests/integration/peer_msg.py resolver"
	sleep 0.5
	while [ "$SECONDS" -lt "$end" ]; do
		for ((to = 0; to < NSERVERS; to++)); do
			from=$(((to + 1) % NSERVERS))
			for ((c = 0; c < NCLIENTS; c++)); do
				# the bank clients' ids (bank_clients): forge their decisions
				client $peer --src "$(server_ip "$from")" --dst "$(server_ip "$to")" \
					--from "$from" --op decide --flags $((RANDOM % 2 + 1)) \
					--txn $((((100 + 2 * c) << 48) + RANDOM % 4096)) --distinct --count 50 \
					>/dev/null 2>&1 && note_fault forged
			done
			client $peer --src "$(server_ip "$from")" --dst "$(server_ip "$to")" \
				--from "$from" --op query --txn $(((999 << 48) + RANDOM)) --distinct \
				--count 200 >/dev/null 2>&1 && note_fault forged
			client $peer --dst "$(server_ip "$to")" --op hquery \
				--txn $(((998 << 48) + RANDOM)) --distinct --count 100 >/dev/null 2>&1 &&
				note_fault stranger
		done
		sleep 0.3
	done
}

# A log disk that fails its fdatasync (disk_fail) or hangs (disk_hang) under server 0 at
# 1 s (server 1 is kill_xtxd's): xtxd must stop (XDP holding every request) with the ring
# kept; the disk healed, the next start writes the ring out. Nothing acknowledged may be
# lost (the histories against the final state say so).
nemesis_disk() {
	local mode=$1 pid fatal
	sleep 1
	pid=$(xtxd_pid 0)
	fatal=$(XLOG 0 | grep -c "FATAL: .*requests held")
	echo "$mode /var/lib/xtx/$(server_ns 0)-$(server_dev 0)/" >"$FAILDISK"
	# a hang is found after --log-stall (15 s: this machine's shared disk stalls for seconds)
	if gone "$pid" 600 && [ "$(XLOG 0 | grep -c "FATAL: .*requests held")" -gt "$fatal" ]; then
		note_fault disk_stop
	fi
	rm -f "$FAILDISK"
	restart_xtxd 0 && note_fault disk_restart
}
nemesis_disk_fail() { nemesis_disk fail; }
nemesis_disk_hang() { nemesis_disk hang; }

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
			--client-base $((100 + 2 * i)) $(client_secret) "${@:2}" \
			>"$WORK/client$i.out" 2>&1 &
	done
}

bank_total() {	# the sum of every account as server 0 holds it, read from its dump
	ctl 0 dump --table "$BANK_TABLE" | python3 -c '
import sys
t = 0
for line in sys.stdin:
    f = dict(w.split("=", 1) for w in line.split() if "=" in w)
    if int(f["key"]) < '"$ACCOUNTS"':
        t += int.from_bytes(bytes.fromhex(f["value"]), "little", signed=True)
print(t)'
}

# recovered_records SERVER: the log records the last recovery there read (its log line)
recovered_records() {
	XLOG "$1" | grep -o 'recovery: .* \([0-9]*\) records' | tail -n 1 | grep -o '[0-9]* records' |
		cut -d' ' -f1
}

# check_common NAME PROTOCOL FAULT...: the checks every kind of run makes of its faults
# (bank and workload runs alike); sets COUNTED=0 for a pause run that lost no lease
check_faults() {
	local name=$1 proto=$2 f n d r i
	shift 2
	# the snapshots' restarts reset counters the others compare: they go last
	for f in $(printf '%s\n' "$@" | grep -vx snapshots) $(printf '%s\n' "$@" | grep -x snapshots); do
		case $f in
		pause)
			n=$(($(reclaims_of "$proto") - before_reclaim))
			check "$name: clients paused ($(faults_of pause))" test "$(faults_of pause)" -gt 0
			# a pause that took no lease of this run's family back tested nothing about leases
			if [ "$n" -gt 0 ]; then
				PAUSES_COUNTED=$((PAUSES_COUNTED + 1))
				fired pause
			else
				echo "# $name: no lease of $proto's family was taken back: this run does not count"
				COUNTED=0
			fi ;;
		loss)
			n=$(($(counter_sum fault_drop) - before_drop))
			check "$name: packets dropped ($n)" test "$n" -gt 0 && fired loss ;;
		kill_xtxd)
			check "$name: xtxd killed and restarted" \
				test "$(faults_of xtxd_kill)" -eq 1 -a "$(faults_of xtxd_restart)" -eq 1 &&
				fired kill_xtxd ;;
		reload)
			n=$(recovered_records 2)
			check "$name: server 2 unloaded and loaded again, recovering from disk (${n:-no} log records replayed)" \
				test "$(faults_of unload)" -eq 1 -a "$(faults_of reload)" -eq 1 \
				-a "${n:-0}" -gt 0 && fired reload ;;
		dupreorder)
			n=0
			for ((i = 0; i < NCLIENTS; i++)); do
				d=$(json_field "$(cat "$WORK/client$i.out")" duplicated)
				r=$(json_field "$(cat "$WORK/client$i.out")" reordered)
				n=$((n + ${d:-0} + ${r:-0}))
			done
			r=$(($(counter_sum replayed) - before_replayed))
			check "$name: requests duplicated and reordered ($n), duplicates answered from the servers' records ($r)" \
				test "$n" -gt 0 -a "$r" -gt 0 && fired dupreorder ;;
		bulk_load)
			check "$name: bulk loads into table $BULK_TABLE during traffic ($(faults_of bulk_load))" \
				test "$(faults_of bulk_load)" -eq "$NSERVERS" && fired bulk_load ;;
		kill_client)
			n=$(($(rstat_sum resolve_commits) + $(rstat_sum resolve_aborts) +
				$(rstat_sum resolve_hades_validated) + $(rstat_sum resolve_hades_aborted) -
				before_decided))
			check "$name: a coordinator killed for good ($(faults_of client_kill))" \
				test "$(faults_of client_kill)" -eq 1
			# one that left nothing logged gave the resolvers nothing to test
			if [ "$n" -gt 0 ]; then
				KILLS_COUNTED=$((KILLS_COUNTED + 1))
				fired kill_client
				echo "# $name: the resolvers decided $n transactions it left"
			else
				echo "# $name: the killed coordinator left nothing logged: this run does not count"
				COUNTED=0
			fi ;;
		snapshots)
			check "$name: snapshots during the traffic ($(faults_of snapshot))" \
				test "$(faults_of snapshot)" -ge "$((NSERVERS * 2))" && fired snapshots
			same_after_restarts "$name"
			check "$name: every server SIGKILLed and restarted, one reloaded" \
				test "$(faults_of snapshot_kill)" -eq "$NSERVERS" \
				-a "$(faults_of snapshot_reload)" -eq 1 ;;
		strangers)
			# each kind counted as itself: the forgers' messages fail the seal, the
			# stranger's address is no server's
			n=$(($(rstat_sum resolve_unauthenticated) - before_unauth))
			r=$(($(rstat_sum resolve_strangers) - before_strangers))
			check "$name: forged messages on the resolver ports dropped unsealed ($n), strangers' dropped ($r)" \
				test "$(faults_of forged)" -gt 0 -a "$(faults_of stranger)" -gt 0 \
				-a "$n" -gt 0 -a "$r" -gt 0 && fired strangers ;;
		disk_fail | disk_hang)
			check "$name: server 0's log disk $([ "$f" = disk_fail ] && echo "failed a sync" ||
				echo hung): xtxd stopped itself, restarted with its ring" \
				test "$(faults_of disk_stop)" -eq 1 -a "$(faults_of disk_restart)" -eq 1 &&
				fired "$f" ;;
		esac
	done
}

# before_counters: what check_faults compares with, read before the run
before_counters() {
	before_drop=$(counter_sum fault_drop)
	before_reclaim=$(reclaims_of "$1")
	before_replayed=$(counter_sum replayed)
	before_decided=$(($(rstat_sum resolve_commits) + $(rstat_sum resolve_aborts) +
		$(rstat_sum resolve_hades_validated) + $(rstat_sum resolve_hades_aborted)))
	before_unauth=$(rstat_sum resolve_unauthenticated)
	before_strangers=$(rstat_sum resolve_strangers)
}

# run NAME PROTOCOL FAULT...: one bank run under the faults, then its checks.
run_bank() {
	local name=$1 proto=$2 f committed=0 i n r total bad=0 args
	shift 2
	RUNS=$((RUNS + 1))
	COUNTED=1
	PROTO=$proto
	BULK_TABLE=$BANK_TABLE
	BULK_FIRST=1000000
	[ "$proto" = hades ] && COTENANT_LOCKS=$([ "${COTENANT_LOCKS:-2pl}" = occ ] && echo 2pl || echo occ)
	: >"$WORK/faults"
	rm -rf "$WORK/hist" "$WORK/cohist"
	mkdir -p "$WORK/hist"
	prepare_run "$@"
	before_counters "$proto"
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
	doubts_answered "$name" "$WORK"/client*.out
	total=$(bank_total)
	invariant "$name: money conserved ($total of $((ACCOUNTS * 1000)))" \
		test "$total" = $((ACCOUNTS * 1000))
	invariant "$name: replicas identical" replicas_identical "$BANK_TABLE"
	n=$(locks_held)
	invariant "$name: no lock refuses requests past its lease ($n)" test "$n" = 0
	[ "$n" = 0 ] || locks_report
	# against the store afterwards, so a lost write shows; a coordinator killed for good
	# recorded nothing of what it left to the resolver: the survivors' histories are checked
	final_state 0 "$BANK_TABLE" >"$WORK/bank.final"
	if [[ " $* " == *" kill_client "* ]]; then
		# what the killed coordinator left, the resolvers installed, and no history
		# recorded: the others' reads of those versions are "unknown", every other kind
		# of anomaly must be absent, and its own history is checked with theirs
		history_ok_but_unknown "$name (a coordinator killed)" "$WORK"/hist/*
	else
		history_ok "$name" -f "$WORK/bank.final" "$WORK"/hist/*
	fi
	# (before check_faults: a snapshots run restarts every server, and counters with it)
	check_new_faults "$name" "$(echo "$WORK"/client*.out)" "$@"
	check_faults "$name" "$proto" "$@"
	for f in "$@"; do
		[ "$f" = cotenant ] || continue
		n=$(json_field "$(cat "$WORK/co.out")" committed)
		r=$(json_field "$(cat "$WORK/co.out")" violations)
		check "$name: SmallBank ran beside the bank (${n:-0} committed)" \
			test "$(faults_of cotenant)" -eq 1 -a "${n:-0}" -gt 0 && fired cotenant
		invariant "$name: SmallBank beside: --verify passes (${r:-no} violations, exit $(cat "$WORK/co.rc"))" \
			test "${r:-1}" = 0 -a "$(cat "$WORK/co.rc")" = 0
		[ "${r:-1}" = 0 ] || tail -n 8 "$WORK/co.out"
		doubts_answered "$name: SmallBank beside" "$WORK/co.out"
		history_ok "$name: SmallBank beside" -f "$WORK/cohist/wl.final" "$WORK"/cohist/wl.[0-9]*
	done
	ANOMALIES=$((ANOMALIES + bad))
	[ "$COUNTED" = 1 ] || RUNS=$((RUNS - 1))
	echo "# nemesis run: bank $proto under $* -> $committed committed, $bad anomalies"
	[ "$bad" = 0 ] || fresh_servers
}

# run_workload NAME WORKLOAD PROTOCOL FAULT...: one client process of several threads
# (its coordinators pause together) under the faults, then the workload's --verify.
run_workload() {
	local name=$1 wl=$2 proto=$3 f out rc n bad=0 size i
	shift 3
	RUNS=$((RUNS + 1))
	COUNTED=1
	PROTO=$proto
	: >"$WORK/faults"
	rm -rf "$WORK/hist"
	mkdir -p "$WORK/hist"
	prepare_run "$@"
	before_counters "$proto"
	size=(--accounts 2000)
	[ "$wl" = tatp ] && size=(--subscribers 2000)
	[[ " $* " == *" dupcpu "* ]] && size+=(--fault-dup-cpu-ppm 50000)
	# (no bulk load here: --verify wants exactly the workload's rows in its tables)
	: >"$WORK/pids"
	client bash -c 'echo $$ >>"$0"; exec "$@"' "$WORK/pids" \
		"$BUILD/xtxbench" "$wl" --servers "$SERVERS" --ctl "$CTL" --protocol "$proto" "${size[@]}" \
		--threads 2 --inflight 8 --duration "${RUN_SECS}s" --warmup 0 --timeout 1ms \
		$(client_secret) --populate --verify --json --history "$WORK/hist/wl" \
		>"$WORK/wl.out" 2>&1 &
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
	check_new_faults "$name" "$WORK/wl.out" "$@"
	check_faults "$name" "$proto" "$@"
	ANOMALIES=$((ANOMALIES + bad))
	[ "$COUNTED" = 1 ] || RUNS=$((RUNS - 1))
	echo "# nemesis run $RUNS: $wl $proto under $* -> $bad anomalies"
	[ "$bad" = 0 ] || fresh_servers
}

# required NAME FAULT...: the verdicts a run of these faults prints (what check_faults and
# the run's own checks make), so a run cut short cannot pass by saying less
required() {
	local kind=$1 n f
	shift
	case $kind in
	bank) n=6 ;;		# committed, money, replicas, locks, history, ...
	*) n=4 ;;		# committed, --verify, locks, history
	esac
	for f in "$@"; do
		case $f in
		snapshots) n=$((n + 4)) ;;
		cotenant) n=$((n + 3)) ;;
		dupcpu) n=$((n + 4)) ;;		# sent, both run, compared, the same
		rareloss) n=$((n + 5)) ;;	# deferred, lost, taken over, replayed, answered
		*) n=$((n + 1)) ;;
		esac
	done
	# a bank run's history verdict comes out once; its fault list adds the rest
	[ "$kind" = bank ] && n=$((n - 1))
	echo "$n"
}

create_accounts() {
	client "$BUILD/xtxbench" bank --servers "$SERVERS" --table "$BANK_TABLE" \
		--accounts "$ACCOUNTS" --duration 1s --inflight 1 $(client_secret) >/dev/null 2>&1
}

# fresh_servers: every server emptied (unloaded, loaded again with --fresh) and the accounts
# created again, after a run that found anomalies: data it left broken (money, replicas that
# differ) would fail every later run that uses it, for nothing of its own.
fresh_servers() {
	local i ok=1
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" unload --force >/dev/null 2>&1 || ok=0
		LD_PRELOAD=$BUILD/tests/libfaildisk.so make -s -C "$ROOT" load \
			IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
			ARGS="$SERVER_ARGS --fresh" >/dev/null || ok=0
	done
	create_accounts || ok=0
	check "servers emptied and the accounts created again after the anomalies" test "$ok" = 1
}

# The accounts, once.
create_accounts
check "bank accounts created" test $? -eq 0

# The runs: PROTOCOL:FAULT[+FAULT...]; NEMESIS_RUNS picks others.
# The quick subset meets every fault kind, and every protocol under loss, an xtxd kill and a
# reload, in as few runs as it can.
# (a bulk load or SmallBank's populate needs every server up at 1 s, and a reload resets
# server 2's counters: they meet no kill, reload or disk fault, and a reload meets no loss)
# The runs that lose xtxd's answers come last: the servers are loaded again once, with the
# small kernel cache they need.
QUICK="occ:pause+loss+kill_xtxd 2pl:loss+kill_xtxd+disk_hang hades:loss+kill_xtxd+dupreorder
	occ:reload+snapshots 2pl:pause+reload hades:reload+strangers hades:pause+bulk_load+cotenant
	occ:kill_client+disk_fail smallbank:2pl:pause+loss tatp:occ:loss hades:dupcpu
	occ:dupcpu+rareloss"
FULL=""
for p in occ 2pl hades; do
	for f in pause loss dupreorder dupcpu kill_xtxd reload kill_client bulk_load snapshots strangers \
		disk_fail disk_hang pause+loss+kill_xtxd pause+dupreorder+reload pause+loss+cotenant \
		snapshots+loss+kill_client strangers+cotenant; do
		FULL+=" $p:$f"
	done
	# (bulk loads go into the bank's table: the workloads' --verify counts every row of theirs)
	for w in smallbank tatp; do
		for f in pause loss pause+loss dupcpu; do
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
REQUIRED=1	# the accounts
for r in $SELECTED; do
	f=${r##*:}
	case $r in
	smallbank:* | tatp:*)
		w=${r%%:*}
		p=${r#*:}
		p=${p%%:*}
		REQUIRED=$((REQUIRED + $(required workload ${f//+/ })))
		run_workload "$w $p, ${f//+/ and }" "$w" "$p" ${f//+/ } ;;
	*)
		p=${r%%:*}
		REQUIRED=$((REQUIRED + $(required bank ${f//+/ })))
		run_bank "$p, ${f//+/ and }" "$p" ${f//+/ } ;;
	esac
done

for f in $(printf '%s\n' "${!FIRED_RUNS[@]}" | sort); do
	echo "nemesis: fault $f fired in ${FIRED_RUNS[$f]} runs${FIRED_WHAT[$f]:+: ${FIRED[$f]} ${FIRED_WHAT[$f]}}"
done
echo "nemesis: $RUNS runs, $ANOMALIES anomalies, $CHECKED transactions checked"
REQUIRED=$((REQUIRED + 2))
if [[ " $SELECTED " == *":pause"* || " $SELECTED " == *"+pause"* ]]; then
	check "pause runs took leases back ($PAUSES_COUNTED of them)" test "$PAUSES_COUNTED" -gt 0
	REQUIRED=$((REQUIRED + 1))
fi
if [[ " $SELECTED " == *"kill_client"* ]]; then
	check "a killed coordinator left the resolvers work ($KILLS_COUNTED runs)" \
		test "$KILLS_COUNTED" -gt 0
	REQUIRED=$((REQUIRED + 1))
fi
check "nemesis: no anomaly over $RUNS runs" test "$ANOMALIES" -eq 0
check "nemesis: $((VERDICTS + 1)) verdicts, as its runs require ($REQUIRED)" \
	test "$((VERDICTS + 1))" -ge "$REQUIRED"
exit "$TEST_FAILED"
