# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the transaction benchmarks (bench_txn.sh, bench_transport.sh): one topology of
# NSERVERS servers served three ways (xtx, its XDP echo, xtx-udpd), their CPU time, populate.
# The caller sets ROOT, BUILD, OUT, NSERVERS, PREFIX, SERVER_CPU and CLIENT_CPU first, and may
# set XTXD_CPUS (where the server processes run, xtxd and xtx-udpd alike; default the server's
# CPU, where its NAPI thread runs).

server_ns() { echo "$PREFIX-s$1"; }
server_dev() { echo "${PREFIX}s$1"; }
server_ips() { echo 10.77.0.2,10.77.1.2,10.77.2.2; }
topo() { "$ROOT/scripts/topo.sh" -p "$PREFIX" -n "$NSERVERS" "$@"; }

SERVER_KIND=none
stop_servers() {
	local i
	case $SERVER_KIND in
	xtx | echo)
		for ((i = 0; i < NSERVERS; i++)); do
			make -s -C "$ROOT" unload FORCE=1 IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
				>/dev/null 2>&1 || true
		done
		;;
	udpd)
		local pids="" pid t
		for ((i = 0; i < NSERVERS; i++)); do
			[ -f "$OUT/udpd$i.pid" ] && pids+=" $(cat "$OUT/udpd$i.pid")"
			rm -f "$OUT/udpd$i.pid"
		done
		# xtx-udpd syncs its log on the way out: its directory and port are its own until then
		for pid in $pids; do kill "$pid" 2>/dev/null || true; done
		for pid in $pids; do
			for ((t = 0; t < 100; t++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -9 "$pid" 2>/dev/null || true
		done
		;;
	esac
	SERVER_KIND=none
	rm -rf /var/lib/xtx/"$PREFIX"-*
}
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	sysctl -qw kernel.bpf_stats_enabled="$stats_was"
	stop_servers
	topo down >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM


# Where the server processes run: the same cores for xtxd and xtx-udpd.
server_proc_cpus() { echo "${XTXD_CPUS:-$SERVER_CPU}"; }

# start_servers xtx|echo|udpd [XTXD-ARGS]: the same three addresses, served three ways.
# xtx-udpd logs as xtxd does: segments on the same disk, fdatasync every 2 ms (both defaults).
start_servers() {
	local i
	stop_servers
	for ((i = 0; i < NSERVERS; i++)); do
		case $1 in
		xtx) make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
			ARGS="--cpus $(server_proc_cpus) ${2:-}" >/dev/null ;;
		echo) make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
			ARGS="--cpus $(server_proc_cpus) --echo" >/dev/null ;;
		udpd) taskset -c "$(server_proc_cpus)" "$BUILD/xtx-udpd" --netns "$(server_ns "$i")" \
			--data-dir "/var/lib/xtx/$PREFIX-udpd$i" --daemon --pidfile "$OUT/udpd$i.pid" \
			>/dev/null ;;
		esac
	done
	SERVER_KIND=$1
}

# The NAPI threads of this run's server ends (s) or client ends (c).
napi_pids() {
	local f comm
	for f in /proc/[0-9]*/comm; do
		{ read -r comm <"$f"; } 2>/dev/null || continue
		# kernel thread names are cut at 15 characters: the prefix is enough
		[[ $comm == "napi/${PREFIX}$1"* ]] || continue
		f=${f#/proc/}
		echo "${f%/comm}"
	done
}
# CPU time (ns) of these processes, every thread summed.
cpu_ns() {
	local pid t ns sum=0
	for pid in "$@"; do
		for t in /proc/"$pid"/task/*/schedstat; do
			{ read -r ns _ <"$t"; } 2>/dev/null || continue
			sum=$((sum + ns))
		done
	done
	echo "$sum"
}

# This run's server processes: xtxd or xtx-udpd.
daemon_pids() {
	local f i
	for ((i = 0; i < NSERVERS; i++)); do
		for f in "/run/xtx/$(server_ns "$i")-$(server_dev "$i").pid" "$OUT/udpd$i.pid"; do
			[ -f "$f" ] && cat "$f"
		done
	done
}
# This run's servers: their NAPI threads (where XDP runs), xtxd or xtx-udpd.
server_pids() {
	napi_pids s
	daemon_pids
}
# shellcheck disable=SC2046 # one pid per word
server_cpu_ns() { cpu_ns $(server_pids); }
# xtxbench options that report the servers' CPU time over its measured window alone (no
# populate, no warmup): cpu_of.napi (NAPI threads: XDP, or the UDP stack under xtx-udpd)
# and cpu_of.daemon (xtxd or xtx-udpd), in ns.
cpu_of_args() {
	echo "--cpu-of napi=$(napi_pids s | paste -sd,) --cpu-of daemon=$(daemon_pids | paste -sd,)"
}

client() { ip netns exec "$PREFIX-c" taskset -c "$CLIENT_CPU" "$BUILD/xtxbench" "$@"; }

TATP_P=${TATP_P:-10000}
# enough in flight that a server or the client, not latency, limits the rate
WL_INFLIGHT=${WL_INFLIGHT:-64}
SB_ACCOUNTS=${SB_ACCOUNTS:-10000}
ctl_list() {
	local i l=""
	for ((i = 0; i < NSERVERS; i++)); do l+="${l:+,}$(server_ns "$i"):$(server_dev "$i")"; done
	echo "$l"
}
# TPC-C warehouses per server, YCSB records of 1 KiB, Retwis users (all with R = 3).
TPCC_W=${TPCC_W:-1}
YCSB_RECORDS=${YCSB_RECORDS:-100000}
RETWIS_USERS=${RETWIS_USERS:-10000}
wl_args() {
	case $1 in
	tatp) echo "--subscribers $TATP_P" ;;
	smallbank) echo "--accounts $SB_ACCOUNTS" ;;
	tpcc) echo "--warehouses $TPCC_W" ;;
	ycsb) echo "--records $YCSB_RECORDS" ;;
	retwis) echo "--users $RETWIS_USERS" ;;
	esac
}
# populate ctl|txn [WORKLOAD...]: TATP and SmallBank unless named; POPULATE_FAILED=1 when one
# did not load whole.
POPULATE_FAILED=0
populate() {
	local how=$1 w ws=("${@:2}") extra
	[ ${#ws[@]} -gt 0 ] || ws=(tatp smallbank)
	POPULATE_FAILED=0
	for w in "${ws[@]}"; do
		# YCSB's mix is required; its records are the same for every mix
		extra=()
		[ "$w" = ycsb ] && extra=(--workload a)
		if [ "$how" = ctl ]; then
			client "$w" --servers "$(server_ips)" $(wl_args "$w") --ctl "$(ctl_list)" \
				--populate --duration 0 "${extra[@]}" >/dev/null 2>&1
		else
			# a long retransmit timeout: a server's stalls under a bulk of inserts
			# would otherwise read as unreachable
			client "$w" --servers "$(server_ips)" $(wl_args "$w") --populate \
				--populate-via txn --timeout 20ms --duration 0 "${extra[@]}" \
				>/dev/null 2>&1
		fi || { echo "populating $w ($how) failed" >&2; POPULATE_FAILED=1; }
	done
}

# CPU time (ns) of the client side's NAPI threads: where a client's replies are received
# (the UDP stack for sockets, the copy into the UMEM for AF_XDP).
# shellcheck disable=SC2046 # one pid per word
client_napi_ns() { cpu_ns $(napi_pids c); }
