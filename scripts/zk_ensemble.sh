#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A private three-member ZooKeeper ensemble (Debian's zookeeper package) for the tests and the
# nemesis, and the faults they inject into it.  Member k runs in a network namespace of its
# own, linked to the router namespace (the topology's client namespace, scripts/topo.sh) at
# NET.(200+k).2, so that cutting that one link partitions that one member away from the
# other two, the servers and the clients alike.
set -euo pipefail

readonly ZK_JAR=/usr/share/java/zookeeper.jar
readonly TICK_MS=500	# sessions may last 2..20 ticks: 1..10 s
readonly MEMBERS=3
readonly PEER_PORT=2888 ELECT_PORT=3888

usage() {
	cat <<EOF
Usage: ${0##*/} start -d DIR -P PORT -p PREFIX -r ROUTER_NS [-N NET]
       ${0##*/} hosts|leader|stop|stop-all|start-all|wipe -d DIR
       ${0##*/} kill|start-member|cut|heal|mode -d DIR -k K

start         three members, member k (0..2) in namespace PREFIX-zk, its data in DIR/zk,
              serving clients on NET.(200+k).2:PORT (NET default 10.77); returns once a
              quorum answers (at most 60 s); sessions of 1..10 s are granted
hosts         the ensemble as --zk takes it: HOST:PORT,HOST:PORT,HOST:PORT
leader        the index of the member that leads now (exit 1: none answers as leader)
mode K        leader, follower, or down (member K does not serve)
kill K        SIGKILL member K;  start-member K: start it again on its data
cut K / heal K  member K's link down / up again: partitioned away from everyone
stop-all      every member stopped, data kept;  start-all: started again, waits for a quorum
wipe          every member's data removed (after stop-all): ZooKeeper lost everything
stop          every member stopped, namespaces and DIR removed; exits 0 when none runs

Example:
  scripts/topo.sh -p demo -n 3 up
  scripts/zk_ensemble.sh start -d /tmp/xtx-zke.demo -P 21810 -p demo -r demo-c
  xtxctl cluster status --zk "\$(scripts/zk_ensemble.sh hosts -d /tmp/xtx-zke.demo)"
  scripts/zk_ensemble.sh stop -d /tmp/xtx-zke.demo
EOF
}

die() {
	echo "Error: $*" >&2
	exit 1
}

dir= port= prefix= router= net=10.77 k=
cmd=${1:-}
[ $# -gt 0 ] && shift
while getopts "d:P:p:r:N:k:h" o; do
	case $o in
	d) dir=$OPTARG ;;
	P) port=$OPTARG ;;
	p) prefix=$OPTARG ;;
	r) router=$OPTARG ;;
	N) net=$OPTARG ;;
	k) k=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ -n "$dir" ] || { usage >&2; exit 2; }

# What start decided, for every later command.
load_env() {
	[ -r "$dir/ensemble.env" ] || die "no ensemble started in $dir"
	# shellcheck source=/dev/null
	source "$dir/ensemble.env"
}
member_ns() { echo "$prefix-z$1"; }
member_dev() { echo "${prefix}z$1"; }	# in the member's namespace
router_dev() { echo "${prefix}Z$1"; }	# its peer, in the router namespace
member_ip() { echo "$net.$((200 + $1)).2"; }
router_ip() { echo "$net.$((200 + $1)).1"; }
member_cfg() { echo "$dir/zk$1/zoo.cfg"; }
member_pids() { pgrep -f -- "QuorumPeerMain $(member_cfg "$1")\$" || true; }

need_k() {
	[[ "$k" =~ ^[0-2]$ ]] || die "-k K: 0..$((MEMBERS - 1))"
}

# four_letter K WORD: member K's answer to a four-letter command, from inside its namespace
four_letter() {
	ip netns exec "$(member_ns "$1")" timeout 2 bash -c \
		"exec 3<>/dev/tcp/127.0.0.1/$port && echo $2 >&3 && cat <&3" 2>/dev/null || true
}

mode_of() {
	local m
	m=$(four_letter "$1" srvr | sed -n 's/^Mode: //p')
	echo "${m:-down}"
}

start_member() {
	local i=$1
	[ -z "$(member_pids "$i")" ] || return 0
	mkdir -p "$dir/zk$i/data"
	echo $((i + 1)) >"$dir/zk$i/data/myid"
	# the package's config directory supplies log4j's settings; nothing else is shared
	ip netns exec "$(member_ns "$i")" setsid java -Xmx192m -Dzookeeper.root.logger=WARN,CONSOLE \
		-cp "/etc/zookeeper/conf:$ZK_JAR" org.apache.zookeeper.server.quorum.QuorumPeerMain \
		"$(member_cfg "$i")" >>"$dir/zk$i/log" 2>&1 </dev/null &
}

stop_member() {
	local i=$1 pid pids
	pids=$(member_pids "$i")
	for pid in $pids; do kill "${2:--TERM}" "$pid" 2>/dev/null || true; done
	for pid in $pids; do
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	done
}

# A quorum serves: some member leads and another follows.
quorum() {
	local i leaders=0 followers=0
	for ((i = 0; i < MEMBERS; i++)); do
		case $(mode_of "$i") in
		leader) leaders=$((leaders + 1)) ;;
		follower) followers=$((followers + 1)) ;;
		esac
	done
	[ "$leaders" = 1 ] && [ "$followers" -ge 1 ]
}

wait_quorum() {
	for _ in $(seq 1 240); do
		quorum && return 0
		sleep 0.25
	done
	local i
	for ((i = 0; i < MEMBERS; i++)); do tail -n 3 "$dir/zk$i/log" >&2 || true; done
	die "no quorum within 60 s (the members' logs above)"
}

start() {
	local i j
	[[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 65535 ] ||
		die "-P PORT: 1024..65535"
	[ -n "$prefix" ] && [ ${#prefix} -le 12 ] || die "-p PREFIX: 1..12 characters"
	[ -n "$router" ] && [ -e "/run/netns/$router" ] || die "-r: no network namespace '$router'"
	[[ "$net" =~ ^[0-9]+\.[0-9]+$ ]] || die "-N NET: two octets, as 10.77"
	[ -r "$ZK_JAR" ] || die "$ZK_JAR missing: install Debian's zookeeper (scripts/deps.sh)"
	command -v java >/dev/null || die "java missing: install Debian's zookeeper (scripts/deps.sh)"
	[ ! -e "$dir/ensemble.env" ] || die "an ensemble was started in $dir: stop it first"
	mkdir -p "$dir"
	printf 'port=%s\nprefix=%s\nrouter=%s\nnet=%s\n' "$port" "$prefix" "$router" "$net" \
		>"$dir/ensemble.env"
	for ((i = 0; i < MEMBERS; i++)); do
		ip netns add "$(member_ns "$i")"
		ip -n "$(member_ns "$i")" link set lo up
		ip -n "$router" link add "$(router_dev "$i")" type veth peer name "$(member_dev "$i")"
		ip -n "$router" link set "$(member_dev "$i")" netns "$(member_ns "$i")"
		ip -n "$router" addr add "$(router_ip "$i")/24" dev "$(router_dev "$i")"
		ip -n "$(member_ns "$i")" addr add "$(member_ip "$i")/24" dev "$(member_dev "$i")"
		ip -n "$router" link set "$(router_dev "$i")" up
		ip -n "$(member_ns "$i")" link set "$(member_dev "$i")" up
		ip -n "$(member_ns "$i")" route add "$net.0.0/16" via "$(router_ip "$i")"
		mkdir -p "$dir/zk$i/data"
		{
			echo "tickTime=$TICK_MS"
			echo "initLimit=20"
			echo "syncLimit=4"
			echo "dataDir=$dir/zk$i/data"
			echo "clientPort=$port"
			echo "admin.enableServer=false"
			echo "4lw.commands.whitelist=ruok,srvr"
			for ((j = 0; j < MEMBERS; j++)); do
				echo "server.$((j + 1))=$(member_ip "$j"):$PEER_PORT:$ELECT_PORT"
			done
		} >"$(member_cfg "$i")"
	done
	for ((i = 0; i < MEMBERS; i++)); do start_member "$i"; done
	wait_quorum
}

hosts() {
	local i h=""
	for ((i = 0; i < MEMBERS; i++)); do h+="${h:+,}$(member_ip "$i"):$port"; done
	echo "$h"
}

stop() {
	local i
	# the namespaces say which prefix an interrupted start got to
	[ -r "$dir/ensemble.env" ] || { rm -rf "$dir"; return 0; }
	load_env
	for ((i = 0; i < MEMBERS; i++)); do stop_member "$i"; done
	for ((i = 0; i < MEMBERS; i++)); do
		ip -n "$router" link del "$(router_dev "$i")" 2>/dev/null || true
		ip netns del "$(member_ns "$i")" 2>/dev/null || true
	done
	rm -rf "$dir"
}

case $cmd in
start) start ;;
stop) stop ;;
hosts) load_env; hosts ;;
leader)
	load_env
	for ((i = 0; i < MEMBERS; i++)); do
		[ "$(mode_of "$i")" = leader ] && { echo "$i"; exit 0; }
	done
	exit 1
	;;
mode) load_env; need_k; mode_of "$k" ;;
kill) load_env; need_k; stop_member "$k" -KILL ;;
start-member) load_env; need_k; start_member "$k" ;;
cut) load_env; need_k; ip -n "$router" link set "$(router_dev "$k")" down ;;
heal) load_env; need_k; ip -n "$router" link set "$(router_dev "$k")" up ;;
stop-all)
	load_env
	for ((i = 0; i < MEMBERS; i++)); do stop_member "$i"; done
	;;
start-all)
	load_env
	for ((i = 0; i < MEMBERS; i++)); do start_member "$i"; done
	wait_quorum
	;;
wipe)
	load_env
	for ((i = 0; i < MEMBERS; i++)); do
		[ -z "$(member_pids "$i")" ] || die "member $i runs: stop-all first"
		rm -rf "$dir/zk$i/data"
	done
	;;
*)
	usage >&2
	exit 2
	;;
esac
