#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Brings up and tears down the veth test network (one client and N server namespaces) for the integration tests and the demo.
set -euo pipefail

readonly NET=10.77		# link i is $NET.i.0/24: client end .1, server end .2
readonly NAPI_COMM_MAX=15	# TASK_COMM_LEN - 1: kthread names are cut here

prefix=xtx
nservers=3
nservers_given=0
xdp_obj=
cpu=
queues=1

usage() {
	cat <<EOF
Usage: ${0##*/} [-p PREFIX] [-n NSERVERS] [-x XDP_PASS_OBJ] [-t CPU] COMMAND

Test network: client namespace PREFIX-c joined to server namespaces
PREFIX-s0..PREFIX-s(N-1) by one veth pair each. Link i is $NET.i.0/24:
client end PREFIXc<i> = $NET.i.1 (in PREFIX-c), server end PREFIXs<i> =
$NET.i.2 (in PREFIX-s<i>). Servers reach each other through PREFIX-c.

Commands:
  up              create the network; leftovers of PREFIX are removed first
  down            delete every namespace named PREFIX-*; always exits 0
  exec NS CMD...  run CMD inside namespace NS: c or sN
  info            one line per server:
                  sN ns=.. dev=.. ip=.. peer_dev=.. peer_ip=..
  addr ROLE       print the address of ROLE: sN (server N) or cN (client
                  end of link N)

Options:
  -p PREFIX       name prefix, 1-8 characters of [a-z0-9] (default xtx)
  -n NSERVERS     servers, 1-8 (default 3; info defaults to the servers
                  that exist)
  -x OBJ          up: attach section "xdp" of OBJ (an XDP_PASS program) in
                  native mode to every client-side end
  -t CPUS         up: threaded NAPI on every veth end, server-side NAPI
                  kthreads pinned to CPUS (a number or a comma list: a
                  device's k-th kthread goes to the list's k-th CPU, so
                  with -q Q and Q CPUs each queue has a core of its own)
  -q QUEUES       up: receive and transmit queues of every veth end, 1-8
                  (default 1); AF_XDP clients bind a socket to each
  -h              show this help

Example:
  scripts/topo.sh -p demo -n 3 -x build/bpf/xdp_pass.bpf.o -t 1 up
  scripts/topo.sh -p demo exec s0 ip -br addr
  scripts/topo.sh -p demo addr s2        # prints $NET.2.2
  scripts/topo.sh -p demo down
EOF
}

die() {
	echo "Error: $*" >&2
	exit 1
}

note() {
	echo "topo: $*"
}

client_ns() { echo "$prefix-c"; }
server_ns() { echo "$prefix-s$1"; }
client_dev() { echo "${prefix}c$1"; }
server_dev() { echo "${prefix}s$1"; }
client_ip() { echo "$NET.$1.1"; }
server_ip() { echo "$NET.$1.2"; }

need_root() {
	[ "$(id -u)" -eq 0 ] || die "'$1' changes network namespaces and must run as root"
}

# The '-' ends the prefix (which has none), so prefix xtx never matches xtxt-*.
prefix_namespaces() {
	ip netns list | awk -v p="$prefix-" 'index($1, p) == 1 { print $1 }'
}

ns_exists() {
	[ -e "/run/netns/$1" ]
}

# Best effort, so that it can clean up after any crash.
teardown() {
	local ns pids

	for ns in $(prefix_namespaces); do
		pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ') || true
		[ -z "$pids" ] ||
			echo "Warning: pids ${pids% } still run in $ns; it lives on, unnamed, until they exit" >&2
		ip netns del "$ns" 2>/dev/null ||
			echo "Warning: could not delete namespace $ns" >&2
	done
}

# Legacy ethtool ioctl through perl-base (Essential in Debian), since
# ethtool itself is not installed: SIOCETHTOOL with a struct ethtool_value.
ethtool_set() {
	local ns=$1 dev=$2 cmd=$3 value=$4

	# shellcheck disable=SC2016 # perl's own variables
	ip netns exec "$ns" perl -e '
		use Socket;
		my ($dev, $cmd, $value) = @ARGV;
		socket(my $s, AF_INET, SOCK_DGRAM, 0) or die "Error: socket: $!\n";
		my $ev = pack("L2", hex($cmd), $value);
		# SIOCETHTOOL; struct ifreq is 40 bytes: name, then a pointer.
		ioctl($s, 0x8946, pack("Z16 p x16", $dev, $ev)) or
			die "Error: ethtool ioctl $cmd on $dev: $!\n";
	' "$dev" "$cmd" "$value"
}

mac_of() {
	local mac

	mac=$(ip -n "$1" -br link show dev "$2" | awk '{ print $3 }')
	[ -n "$mac" ] || die "no MAC address on $2 in $1"
	echo "$mac"
}

# ns_sysctl NS KEY VALUE: KEY (a path under /proc/sys) as NS sees it. Written through
# /proc rather than by sysctl(8), which a bare machine running the bundle may lack.
ns_sysctl() {
	ip netns exec "$1" sh -c "echo $3 > /proc/sys/$2"
}

new_namespace() {
	local ns=$1

	ip netns add "$ns"
	ip -n "$ns" link set lo up
	# New namespaces copy rp_filter from the host, which may be strict;
	# packets crafted by tests and XDP programs must not depend on it.
	# The veths come later and inherit "default".  No IPv6 on them:
	# router solicitations and MLD reports would reach the XDP programs
	# and skew their counters.
	ns_sysctl "$ns" net/ipv4/conf/all/rp_filter 0
	ns_sysctl "$ns" net/ipv4/conf/default/rp_filter 0
	ns_sysctl "$ns" net/ipv6/conf/default/disable_ipv6 1
}

create_namespaces() {
	local i

	new_namespace "$(client_ns)"
	# The client namespace is the router between servers.
	ns_sysctl "$(client_ns)" net/ipv4/ip_forward 1
	for ((i = 0; i < nservers; i++)); do
		new_namespace "$(server_ns "$i")"
	done
}

# Both ends are born in the client namespace so that nothing ever appears
# in the host's; then the server end moves to its own namespace.
create_link() {
	local i=$1
	local cns sns cdev sdev

	cns=$(client_ns)
	sns=$(server_ns "$i")
	cdev=$(client_dev "$i")
	sdev=$(server_dev "$i")
	# Both ends get the same queue count: a frame sent on queue q reaches
	# the peer's XDP program only if the peer has a receive queue q.
	ip -n "$cns" link add "$cdev" numtxqueues "$queues" numrxqueues "$queues" type veth \
		peer name "$sdev" numtxqueues "$queues" numrxqueues "$queues"
	ip -n "$cns" link set "$sdev" netns "$sns"
	ip -n "$cns" addr add "$(client_ip "$i")/24" dev "$cdev"
	ip -n "$sns" addr add "$(server_ip "$i")/24" dev "$sdev"
	ip -n "$cns" link set "$cdev" up
	ip -n "$sns" link set "$sdev" up
	# Permanent entries: no ARP traffic for the XDP programs to see, and
	# no first-packet loss while resolution is pending.
	ip -n "$cns" neigh replace "$(server_ip "$i")" \
		lladdr "$(mac_of "$sns" "$sdev")" dev "$cdev" nud permanent
	ip -n "$sns" neigh replace "$(client_ip "$i")" \
		lladdr "$(mac_of "$cns" "$cdev")" dev "$sdev" nud permanent
	ip -n "$sns" route add "$NET.0.0/16" via "$(client_ip "$i")" dev "$sdev"
}

# XDP_TX on a veth is dropped unless the peer has an XDP program attached
# (only then does the peer have the NAPI context that receives the frame),
# so the servers' XDP_TX replies need this XDP_PASS program on the client ends.
attach_xdp() {
	local i

	for ((i = 0; i < nservers; i++)); do
		ip -n "$(client_ns)" link set dev "$(client_dev "$i")" \
			xdpdrv obj "$xdp_obj" sec xdp
	done
}

write_threaded() {
	ip netns exec "$1" sh -c "echo 1 > /sys/class/net/$2/threaded"
}

# A veth has NAPI instances only while it has an XDP program or GRO on, and
# "threaded" needs one.  The server ends get their XDP program only when
# the server starts, so turn GRO on: their NAPI kthreads (and the pinning)
# then survive the server attaching and detaching its program.
enable_threaded() {
	local ns=$1 dev=$2

	if ! write_threaded "$ns" "$dev" 2>/dev/null; then
		ethtool_set "$ns" "$dev" 0x2c 1		# ETHTOOL_SGRO
		write_threaded "$ns" "$dev"
	fi
}

# Prints "PID COMM" for each NAPI kthread of DEV ("napi/DEV-NAPIID", cut
# to NAPI_COMM_MAX characters).  Our device names contain no '-', so the
# key cannot match another prefix's devices.
napi_kthreads() {
	local key="napi/$1-" f comm pid

	key=${key:0:NAPI_COMM_MAX}
	for f in /proc/[0-9]*/comm; do
		{ read -r comm <"$f"; } 2>/dev/null || continue
		[[ $comm == "$key"* ]] || continue
		pid=${f#/proc/}
		echo "${pid%/comm} $comm"
	done
}

# Only the server side is pinned: its NAPI kthreads run the server's XDP
# hot path, so pinning makes benchmarks repeatable.  The client-side ones
# only hand replies to the load generator and are left to the scheduler.
pin_server_napi() {
	local i dev pid comm found cpus to

	IFS=, read -r -a cpus <<<"$cpu"
	for ((i = 0; i < nservers; i++)); do
		dev=$(server_dev "$i")
		found=0
		while read -r pid comm; do
			to=${cpus[found % ${#cpus[@]}]}
			taskset -pc "$to" "$pid" >/dev/null
			note "pinned $comm (pid $pid) to CPU $to"
			found=$((found + 1))
		done < <(napi_kthreads "$dev")
		[ "$found" -ge 1 ] ||
			die "no NAPI kthread for $dev in /proc (is this the host's PID namespace?)"
	done
}

# A veth hands a frame to its peer's NAPI only if the sender cannot build TSO frames (or
# the peer has an XDP program, which turns its peer's TSO off). Otherwise the frame goes to
# the sending CPU's backlog: a server without XDP (xtx-udpd) would have its receive path run
# on the client's CPU, out of the server's NAPI kthread. Client ends send no TSO frames.
setup_threaded_napi() {
	local i

	for ((i = 0; i < nservers; i++)); do
		enable_threaded "$(server_ns "$i")" "$(server_dev "$i")"
		enable_threaded "$(client_ns)" "$(client_dev "$i")"
		ethtool_set "$(client_ns)" "$(client_dev "$i")" 0x1f 0	# ETHTOOL_STSO
	done
	pin_server_napi
}

up_failed() {
	local rc=$?

	echo "Error: 'up' failed; removing what it created for prefix '$prefix'" >&2
	teardown
	exit "$rc"
}

check_up_args() {
	if [ -n "$xdp_obj" ]; then
		[ -f "$xdp_obj" ] || die "XDP object '$xdp_obj' is not a file"
		[ -r "$xdp_obj" ] || die "XDP object '$xdp_obj' is not readable"
	fi
	if [ -n "$cpu" ]; then
		taskset -c "$cpu" true 2>/dev/null ||
			die "CPU $cpu is not available to this process"
	fi
}

cmd_up() {
	local i

	need_root up
	check_up_args
	if [ -n "$(prefix_namespaces)" ]; then
		note "removing leftover namespaces of prefix '$prefix'"
		teardown
	fi
	trap up_failed EXIT
	trap 'exit 130' INT TERM HUP
	create_namespaces
	for ((i = 0; i < nservers; i++)); do
		create_link "$i"
	done
	[ -z "$xdp_obj" ] || attach_xdp
	[ -z "$cpu" ] || setup_threaded_napi
	trap - EXIT INT TERM HUP
	note "up: client namespace $(client_ns), $nservers server(s)"
	cmd_info
}

cmd_down() {
	need_root down
	teardown || true
	exit 0
}

# NS is "c" or "sN"; prints the namespace name.
ns_of_role() {
	case $1 in
	c) client_ns ;;
	s[0-7]) server_ns "${1#s}" ;;
	*) die "namespace '$1' is not c or s0..s7" ;;
	esac
}

cmd_exec() {
	local ns

	[ $# -ge 2 ] || die "usage: exec NS CMD..."
	need_root exec
	ns=$(ns_of_role "$1")
	shift
	ns_exists "$ns" || die "namespace $ns does not exist (run 'up' first)"
	exec ip netns exec "$ns" "$@"
}

# Without -n, describe the servers that exist, so tests need not repeat -n.
info_servers() {
	local n

	if [ "$nservers_given" -eq 0 ]; then
		n=$(prefix_namespaces | awk -v p="$prefix-s" \
			'index($1, p) == 1 && substr($1, length(p) + 1) ~ /^[0-7]$/' | wc -l)
		[ "$n" -eq 0 ] || { echo "$n"; return; }
	fi
	echo "$nservers"
}

cmd_info() {
	local i n

	n=$(info_servers)
	for ((i = 0; i < n; i++)); do
		echo "s$i ns=$(server_ns "$i") dev=$(server_dev "$i") ip=$(server_ip "$i")" \
			"peer_dev=$(client_dev "$i") peer_ip=$(client_ip "$i")"
	done
}

cmd_addr() {
	[ $# -eq 1 ] || die "usage: addr ROLE (sN or cN)"
	case $1 in
	s[0-7]) server_ip "${1#s}" ;;
	c[0-7]) client_ip "${1#c}" ;;
	*) die "role '$1' is not sN or cN with N in 0..7" ;;
	esac
}

parse_options() {
	local opt

	while getopts ":p:n:x:t:q:h" opt; do
		case $opt in
		p) prefix=$OPTARG ;;
		n) nservers=$OPTARG; nservers_given=1 ;;
		x) xdp_obj=$OPTARG ;;
		t) cpu=$OPTARG ;;
		q) queues=$OPTARG ;;
		h) usage; exit 0 ;;
		:) die "option -$OPTARG needs a value (see -h)" ;;
		*) die "unknown option -$OPTARG (see -h)" ;;
		esac
	done
	[[ $prefix =~ ^[a-z0-9]{1,8}$ ]] ||
		die "prefix '$prefix' must be 1-8 characters of [a-z0-9]"
	[[ $nservers =~ ^[1-8]$ ]] ||
		die "number of servers '$nservers' must be 1..8"
	[[ $queues =~ ^[1-8]$ ]] || die "queues '$queues' must be 1..8"
	[ -z "$cpu" ] || [[ $cpu =~ ^[0-9]+(,[0-9]+)*$ ]] ||
		die "CPU '$cpu' must be a CPU number or a comma list of them"
}

main() {
	local cmd

	parse_options "$@"
	shift $((OPTIND - 1))
	[ $# -ge 1 ] || { usage >&2; die "no command given"; }
	cmd=$1
	shift
	case $cmd in
	up) [ $# -eq 0 ] || die "'up' takes no arguments"; cmd_up ;;
	down) cmd_down ;;
	exec) cmd_exec "$@" ;;
	info) [ $# -eq 0 ] || die "'info' takes no arguments"; cmd_info ;;
	addr) cmd_addr "$@" ;;
	*) die "unknown command '$cmd' (see -h)" ;;
	esac
}

main "$@"
