# SPDX-License-Identifier: GPL-2.0-only
# Shared helpers for netns integration tests: a private topology, servers, verdict lines.
# Sourced by tests/integration/test_*.sh; each test gets its own name prefix.

set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$ROOT/build
NSERVERS=${NSERVERS:-3}
# Unique per run so leftovers or parallel runs never collide: xtx + 5 chars.
PREFIX=xtx$(printf '%05x' $((RANDOM * 32 + RANDOM % 32)))
# An earlier run's files under this name (logs are kept after a run, for reading): the
# checks that grep a server's log must see this run's lines only
rm -f /run/xtx/"$PREFIX"-*
TEST_FAILED=0

topo() { "$ROOT/scripts/topo.sh" -p "$PREFIX" -n "$NSERVERS" "$@"; }
server_ns() { echo "$PREFIX-s$1"; }
server_dev() { echo "${PREFIX}s$1"; }
server_ip() { echo "10.77.$1.2"; }
client() { ip netns exec "$PREFIX-c" "$@"; }
ctl() { local i=$1; shift; "$BUILD/xtxctl" --netns "$(server_ns "$i")" --iface "$(server_dev "$i")" "$@"; }
# log_segs I: "name records end status" for each of server I's log segments (log dump --json)
log_segs() {
	ctl "$1" log dump --json | grep -o '{"name":"[^"]*","cpu":[^}]*}' |
		sed 's/.*"name":"\([^"]*\)".*"records":\([0-9]*\),.*"end":\([0-9]*\),"status":"\([a-z_]*\)".*/\1 \2 \3 \4/'
}
# tear_record FILE END: the record that ends at END loses its last 10 bytes to zeros, as a
# crash mid-write leaves it (segments are preallocated: cutting the file short tears nothing)
tear_record() { dd if=/dev/zero of="$1" bs=1 seek=$(($2 - 10)) count=10 conv=notrunc status=none; }

all_server_ips() {
	local i ips=""
	for ((i = 0; i < NSERVERS; i++)); do ips+="${ips:+,}$(server_ip "$i")"; done
	echo "$ips"
}

# Every server's NS:IF, comma-separated in server order: xtxbench's --ctl.
all_server_ctls() {
	local i c=""
	for ((i = 0; i < NSERVERS; i++)); do c+="${c:+,}$(server_ns "$i"):$(server_dev "$i")"; done
	echo "$c"
}

# A private ZooKeeper in the client namespace (scripts/zk.sh): clients reach it at
# 127.0.0.1, server i through its own link (so cutting the link cuts it off, too).
ZK_PORT=21810
ZK_DIR=/tmp/xtx-zk.$PREFIX
zk_up() { "$ROOT/scripts/zk.sh" start -d "$ZK_DIR" -P "$ZK_PORT" -n "$PREFIX-c"; }
zk_down() { "$ROOT/scripts/zk.sh" stop -d "$ZK_DIR" >/dev/null 2>&1; }
zk_for_server() { echo "10.77.$1.1:$ZK_PORT"; }
ZK_CLIENT=127.0.0.1:$ZK_PORT

# A private three-member ensemble instead (scripts/zk_ensemble.sh): each member in a
# namespace of its own behind the client namespace; clients and servers are given all three.
ZKE_DIR=/tmp/xtx-zke.$PREFIX
zke() { "$ROOT/scripts/zk_ensemble.sh" "$1" -d "$ZKE_DIR" "${@:2}"; }
zke_up() {
	zke start -P "$ZK_PORT" -p "$PREFIX" -r "$PREFIX-c" || return 1
	ZK_CLIENT=$(zke hosts)
	zk_for_server() { echo "$ZK_CLIENT"; }
}

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; TEST_FAILED=1; }
# check DESCRIPTION CONDITION...: one verdict line from a test expression.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}

# A field of a flat JSON object: json_field '{"rx":5}' rx -> 5
json_field() { grep -o "\"$2\":[0-9]*" <<<"$1" | head -n 1 | cut -d: -f2; }
# A "key=value" token from text output.
kv_field() { grep -o "\\b$2=[0-9]*" <<<"$1" | head -n 1 | cut -d= -f2; }

cleanup() {
	local i
	# --force: a test's data goes with it, committing HADES slots included
	for ((i = 0; i < NSERVERS; i++)); do
		"$BUILD/xtxctl" --netns "$(server_ns "$i")" --iface "$(server_dev "$i")" \
			unload --force >/dev/null 2>&1
	done
	topo down >/dev/null 2>&1
	# after the servers: a stopping xtxd closes its session
	[ -e "$ZK_DIR" ] && zk_down
	[ -e "$ZKE_DIR" ] && zke stop >/dev/null 2>&1
	# each server's data directory (its logs) belongs to this run only
	rm -rf /var/lib/xtx/"$PREFIX"-*
}

# Brings up the topology and loads a server on each link with make load.
setup_servers() {
	trap cleanup EXIT INT TERM
	topo -x "$BUILD/bpf/xdp_pass.bpf.o" ${TOPO_QUEUES:+-q "$TOPO_QUEUES"} up >/dev/null ||
		{ fail "topology up"; exit 1; }
	local i
	for ((i = 0; i < NSERVERS; i++)); do
		make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
			ARGS="$*" >/dev/null || { fail "make load server $i"; exit 1; }
	done
}

# Requests and replies the servers' fault knobs dropped, summed over the servers.
fault_drops() {
	local i n t=0
	for ((i = 0; i < NSERVERS; i++)); do
		n=$(json_field "$(ctl "$i" stats --json)" fault_drop)
		t=$((t + ${n:-0}))
	done
	echo "$t"
}

finish() {
	exit "$TEST_FAILED"
}

# wait_until SECONDS CMD...: runs CMD every 0.1 s until it succeeds (0) or SECONDS have
# passed (1).  A check waits for the event it asserts, never for a time: on a busy
# machine a time is always too short.
wait_until() {
	local end=$((SECONDS + $1))
	shift
	while :; do
		"$@" && return 0
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.1
	done
}

# gone PID...: none of the processes is left (a zombie its parent has yet to reap counts)
gone() {
	local p
	for p in "$@"; do
		[ -e "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && return 1
	done
	return 0
}
# kill9_xtxd I: SIGKILLs server I's xtxd and returns once it is gone
kill9_xtxd() {
	local pid
	pid=$(cat "/run/xtx/$(server_ns "$1")-$(server_dev "$1").pid")
	kill -9 "$pid"
	wait_until 30 gone "$pid"
}

# The hand-played coordinator of the resolver suites: client 9, one op at a time.
# field TEXT NAME: NAME's value in an answer of "name=value" words
field() { grep -o "\b$2=[^ ]*" <<<"$1" | head -n 1 | cut -d= -f2; }
# op SERVER [OPTIONS] OP TABLE KEY [FIELD=VALUE...]: one op as client 9
op() {
	local s=$1
	shift
	client "$BUILD/xtxbench" op --server "$(server_ip "$s")" --client-id 9 "$@" 2>&1
}
st() { field "$(op "$@")" status; }
# the key's line in a server's dump of table 0, or nothing
row() { ctl "$1" dump | grep "^table=0 key=$2 "; }
# client 9's transaction number N as the daemon's log writes it
hex_txn() { printf '0x%x' $(((9 << 48) | $1)); }

# XLOG I: server I's xtxd log so far.
XLOG() { cat "/run/xtx/$(server_ns "$1")-$(server_dev "$1").log"; }
# wait_log PATTERN SERVER...: every server's log has PATTERN within 60 s (a bound for a
# failure, not a time anything waits for)
wait_log() {
	local pat=$1 i s ok
	shift
	for ((i = 0; i < 600; i++)); do
		ok=1
		for s in "$@"; do XLOG "$s" | grep -q "$pat" || ok=0; done
		[ "$ok" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

# ---- xtx-udpd, the baseline, in place of xtxd: its files go under UDPD_DIR (the suite's) ----
udpd_pid() { echo "$UDPD_DIR/udpd$1.pid"; }
# Stops every xtx-udpd start_udpds started, and waits for each to be gone.
stop_udpds() {
	local i pid n
	for ((i = 0; i < NSERVERS; i++)); do
		[ -f "$(udpd_pid "$i")" ] || continue
		pid=$(cat "$(udpd_pid "$i")")
		kill "$pid" 2>/dev/null
		for ((n = 0; n < 100; n++)); do [ -e "/proc/$pid" ] || break; sleep 0.05; done
		rm -f "$(udpd_pid "$i")"
	done
}
# start_udpds ARGS...: an empty xtx-udpd on every server's address (xtxd unloaded, earlier
# ones stopped), writing its store to UDPD_DIR/dumpI on SIGUSR1.
start_udpds() {
	local i
	stop_udpds
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" unload >/dev/null 2>&1
		"$BUILD/xtx-udpd" --netns "$(server_ns "$i")" --bind "$(server_ip "$i")" -d \
			--pidfile "$(udpd_pid "$i")" --daemon-log "$UDPD_DIR/udpd$i.log" \
			--dump-file "$UDPD_DIR/dump$i" "$@" || { fail "xtx-udpd $i starts"; finish; }
	done
}
# Writes UDPD_DIR/dump.sh, for --dump-cmd: `dump.sh I` prints server I's store as xtxctl dump.
udpd_dump_script() {
	cat >"$UDPD_DIR/dump.sh" <<DUMP
#!/usr/bin/env bash
f=$UDPD_DIR/dump\$1
rm -f "\$f"
kill -USR1 "\$(cat "$UDPD_DIR/udpd\$1.pid")" || exit 1
for ((n = 0; n < 100; n++)); do [ -f "\$f" ] && exec cat "\$f"; sleep 0.05; done
exit 1
DUMP
	chmod +x "$UDPD_DIR/dump.sh"
}
