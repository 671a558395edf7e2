#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Starts and stops a private standalone ZooKeeper (Debian's zookeeper package) for the tests,
# the demo and the benchmarks: its own port, data directory and network namespace.
set -euo pipefail

readonly ZK_JAR=/usr/share/java/zookeeper.jar
readonly TICK_MS=500	# sessions may last 2..20 ticks: 1..10 s

usage() {
	cat <<EOF
Usage: ${0##*/} start -d DIR -P PORT [-n NETNS]
       ${0##*/} stop -d DIR

start  runs a standalone ZooKeeper listening on PORT (every address of NETNS, or of
       this namespace), its data and log in DIR, and returns once it answers
       (at most 30 s); sessions of 1..10 s are granted
stop   stops the one started in DIR and removes DIR; exits 0 when none runs

Example:
  scripts/zk.sh start -d /tmp/xtx-zk.demo -P 21810 -n demo-c
  xtxctl cluster status --zk 10.77.0.1:21810
  scripts/zk.sh stop -d /tmp/xtx-zk.demo
EOF
}

die() {
	echo "Error: $*" >&2
	exit 1
}

dir= port= netns=
cmd=${1:-}
[ $# -gt 0 ] && shift
while getopts "d:P:n:h" o; do
	case $o in
	d) dir=$OPTARG ;;
	P) port=$OPTARG ;;
	n) netns=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ -n "$dir" ] || { usage >&2; exit 2; }

in_ns() {
	if [ -n "$netns" ]; then ip netns exec "$netns" "$@"; else "$@"; fi
}

answers() {	# the server says imok to ruok
	in_ns timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && echo ruok >&3 &&
		head -c 4 <&3" 2>/dev/null | grep -q imok
}

case $cmd in
start)
	[[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 65535 ] ||
		die "-P PORT: 1024..65535"
	[ -r "$ZK_JAR" ] || die "$ZK_JAR missing: install Debian's zookeeper (scripts/deps.sh)"
	command -v java >/dev/null || die "java missing: install Debian's zookeeper (scripts/deps.sh)"
	[ -z "$netns" ] || [ -e "/run/netns/$netns" ] || die "no network namespace $netns"
	[ ! -e "$dir/pid" ] || ! kill -0 "$(cat "$dir/pid")" 2>/dev/null ||
		die "a ZooKeeper already runs from $dir (pid $(cat "$dir/pid"))"
	mkdir -p "$dir/data"
	if answers; then
		die "port $port already answers in ${netns:-this namespace}: pick another"
	fi
	# the package's config directory supplies log4j's settings; nothing else is shared
	in_ns setsid java -Xmx256m -Dzookeeper.admin.enableServer=false \
		-Dzookeeper.4lw.commands.whitelist=ruok -Dzookeeper.root.logger=WARN,CONSOLE \
		-cp "/etc/zookeeper/conf:$ZK_JAR" org.apache.zookeeper.server.ZooKeeperServerMain \
		"$port" "$dir/data" "$TICK_MS" >"$dir/log" 2>&1 </dev/null &
	echo $! >"$dir/pid"
	for _ in $(seq 1 120); do
		if answers; then
			# the JVM itself: the launcher's pid may be a parent that outlives nothing
			pgrep -f -- "ZooKeeperServerMain $port $dir/data" | head -n 1 >"$dir/pid"
			exit 0
		fi
		kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
		sleep 0.25
	done
	tail -n 5 "$dir/log" >&2 || true
	kill "$(cat "$dir/pid")" 2>/dev/null || true
	die "ZooKeeper did not answer on port $port within 30 s (log above)"
	;;
stop)
	# the pid recorded, and any JVM still serving this directory (a start cut short)
	pids=$(cat "$dir/pid" 2>/dev/null; pgrep -f -- "ZooKeeperServerMain [0-9]* $dir/data" || true)
	for pid in $pids; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in $pids; do
		for _ in $(seq 1 40); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	done
	rm -rf "$dir"
	;;
*)
	usage >&2
	exit 2
	;;
esac
