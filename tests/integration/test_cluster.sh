#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A cluster held in a real ZooKeeper: xtxctl cluster init/status, xtxd --zk joining it (its
# peers and epoch from the configuration, its lease a live node), clients placing keys by its
# shard map with --zk, requests of another epoch refused and changing nothing, and a server
# that loses ZooKeeper (its link cut, or its xtxd stopped) refusing requests before its
# session can expire, and for good once it did; the manager moving a failed server out of
# every shard (a backup promoted where it led), a new manager taking over, and a failure
# that would leave a shard one replica changing nothing.
# checks: 53 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=4
NAME=t$$
tmp=$(mktemp -d /tmp/xtx-test-cluster.XXXXXX)
trap 'cleanup; rm -rf "$tmp"' EXIT INT TERM
topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }

# ZooKeeper for the servers at an address of its own in the client namespace, so that a
# route blackholed in a server's namespace cuts it off from ZooKeeper, not from clients
ZK_ADDR=10.77.200.1
ip -n "$PREFIX-c" addr add "$ZK_ADDR/32" dev lo
# Sessions of 9 s: the lease (2/3) and the failure detection (1.5 sessions) are what these
# checks are about, and each step they take must fit inside them on a busy machine.
SESSION=9s
zkc() { client "$BUILD/xtxctl" cluster "$@"; }
status_json() { zkc status --zk "$ZK_CLIENT" --zk-name "$NAME" --json 2>&1; }
# live SERVER: "true" or "false" as status says
live() { grep -o "\"index\":$1,[^}]*" <<<"$(status_json)" | grep -o '"live":[a-z]*' | cut -d: -f2; }
load_member() {	# load_member I [ARGS...]: xtxd of server I in the cluster
	local i=$1
	shift
	make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
		ARGS="--zk $ZK_ADDR:$ZK_PORT --zk-name $NAME --zk-session $SESSION --lock-lease 200ms $*"
}
counter() { json_field "$(ctl "$1" stats --json)" "$2"; }
# op I EPOCH ARGS...: one op to server I naming EPOCH; prints the answer or the refusal
op() {
	local i=$1 e=$2
	shift 2
	client "$BUILD/xtxbench" op --server "$(server_ip "$i")" --epoch "$e" --timeout 50ms "$@" 2>&1
}

# ---- ZooKeeper and the cluster's definition ----
zk_up >"$tmp/zk.out" 2>&1
check "a private ZooKeeper answers in the client namespace" test $? -eq 0
# R = 3 of 4: each key on three servers, so placing by any other map shows
out=$(zkc init --zk "$ZK_CLIENT" --zk-name "$NAME" --servers "$(all_server_ips)" --shards 12 2>&1)
check "cluster init creates it ($out)" grep -q "epoch 1, 4 servers, replication 3, 12 shards" <<<"$out"
out=$(zkc init --zk "$ZK_CLIENT" --name "$NAME" --servers 10.77.0.2 2>&1)
rc=$?
check "a second init is refused, nothing changed (exit $rc)" \
	test "$rc" -eq 1 -a -n "$(grep -o 'exists' <<<"$out")"
s=$(status_json)
check "status: epoch 1, 12 shards, none under-replicated" \
	grep -q '"epoch":1,"replication":3,"shards":12,"under_replicated":0' <<<"$s"
check "status: every server primary of 3 shards and in 9, none live yet" \
	test "$(grep -o '"live":false,"primary_of":3,"replica_of":9' <<<"$s" | wc -l)" -eq 4
out=$(zkc init --zk "$ZK_CLIENT" --name dup --servers 10.77.0.2,10.77.0.2 2>&1)
check "init with a server twice is refused (exit $?)" grep -q "listed twice" <<<"$out"
out=$(zkc init --zk "$ZK_CLIENT" --name r4 --servers "$(all_server_ips)" --replication 4 2>&1)
check "init with replication 4 is refused" grep -q "replication" <<<"$out"
out=$(zkc status --zk "$ZK_CLIENT" --name 'Bad!' 2>&1)
rc=$?
check "a bad cluster name is refused (exit $rc)" test "$rc" -eq 2
out=$(zkc status --zk "$ZK_CLIENT" --name nosuch 2>&1)
check "status of a cluster that does not exist says so" grep -q "no cluster 'nosuch'" <<<"$out"
t0=$SECONDS
out=$(zkc status --zk 10.77.0.1:1 --name "$NAME" 2>&1)
rc=$?
check "an ensemble nobody answers at: a clear error within 10 s (exit $rc, $((SECONDS - t0)) s)" \
	test "$rc" -eq 1 -a $((SECONDS - t0)) -le 10 -a -n "$(grep -o 'no session' <<<"$out")"

# ---- xtxd joins ----
out=$(make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--zk $(zk_for_server 0) --zk-name nosuch" 2>&1)
check "xtxd --zk of a cluster that does not exist refuses to start" \
	grep -q "no cluster 'nosuch'" <<<"$out"
out=$(make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--zk $(zk_for_server 0) --peers $(all_server_ips)" 2>&1)
check "xtxd --zk with --peers is refused" grep -q "static cluster" <<<"$out"
check "... and nothing serves there" test ! -e "/run/xtx/$(server_ns 0)-$(server_dev 0).pid"
for i in 0 1 2 3; do
	load_member "$i" >"$tmp/load$i.out" 2>&1 || { fail "load server $i"; cat "$tmp/load$i.out"; }
done
s=$(status_json)
check "every xtxd holds its live node" test "$(grep -o '"live":true' <<<"$s" | wc -l)" -eq 4
check "xtxd found itself in the configuration" \
	grep -q "this is server 1 (10.77.1.2) of 4" "/run/xtx/$(server_ns 1)-$(server_dev 1).log"

# ---- clients by the shard map ----
out=$(client "$BUILD/xtxbench" bank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 32 \
	--threads 2 --duration 2s --check --json 2>&1)
rc=$?
n=$(json_field "$out" transfers)
check "bank through --zk: money conserved, every transaction resolved (exit $rc)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || tail -n 5 <<<"$out"
check "bank through --zk: transfers committed (${n:-0})" test "${n:-0}" -gt 100
n=$(for i in 0 1 2 3; do ctl "$i" dump --table 15; done | grep -c "^table=15 ")
check "every account on exactly three servers (96 rows of 32 accounts: $n)" test "$n" -eq 96
out=$(client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 500 \
	--ctl "$(all_server_ctls)" --populate --verify --duration 2s --warmup 0 --json 2>&1)
check "smallbank through --zk: --verify passes the cluster's placement (exit $?)" \
	grep -q '"violations":0' <<<"$out"
out=$(client "$BUILD/xtxbench" bank --servers "$(all_server_ips)" --zk "$ZK_CLIENT" 2>&1)
check "a client given both --servers and --zk is refused" grep -q "once" <<<"$out"

# ---- another epoch changes nothing ----
before=$(ctl 0 dump | sort)
w0=$(counter 0 wrong_epoch)
out=$(op 0 0 insert 3 77 value=01)
check "a static client's write (epoch 0) is refused: epoch ($out)" \
	grep -q "refused: epoch (the server serves epoch 1)" <<<"$out"
out=$(op 0 2 insert 3 77 value=01)
check "a write naming epoch 2 is refused too" grep -q "serves epoch 1" <<<"$out"
out=$(op 0 65535 insert 3 77 value=01)
check "... and one naming the fenced epoch" grep -q "serves epoch 1" <<<"$out"
check "... counted (wrong_epoch $w0 -> $(counter 0 wrong_epoch))" \
	test "$(counter 0 wrong_epoch)" -ge $((w0 + 3))
check "... and nothing changed" test "$before" = "$(ctl 0 dump | sort)"
out=$(op 0 1 insert 3 77 value=01)
check "the same write naming epoch 1 runs ($out)" grep -q "status=ok" <<<"$out"

# ---- a server cut off from ZooKeeper stops serving before its session can expire ----
zk_cut() { ip -n "$(server_ns "$1")" route add blackhole "$ZK_ADDR/32"; }
zk_heal() { ip -n "$(server_ns "$1")" route del blackhole "$ZK_ADDR/32"; }
fenced_now() { out=$(op "$1" "$2" read 3 77); grep -q "serves epoch 65535: fenced" <<<"$out"; }
serves_now() { out=$(op "$1" "$2" read 3 77); grep -q "op=read status=" <<<"$out"; }
zk_cut 2
wait_until 60 fenced_now 2 1
check "cut off from ZooKeeper past its lease, server 2 refuses ($out)" \
	grep -q "serves epoch 65535: fenced" <<<"$out"
check "... while ZooKeeper still holds its session: it stopped first" test "$(live 2)" = true
# the route is back: once the session reconnects, the lease is renewed
zk_heal 2
wait_until 60 serves_now 2 1
check "reconnected within its session, server 2 serves again ($out)" grep -q "op=read status=" <<<"$out"
zk_cut 2
down2() { test "$(live 2)" = false; }
wait_until 60 down2
check "past its session, ZooKeeper lists server 2 as down" test "$(live 2)" = false
zk_heal 2
expired2() { grep -q "session expired: this server stops serving" "/run/xtx/$(server_ns 2)-$(server_dev 2).log"; }
wait_until 60 expired2
out=$(op 2 1 read 3 77)
check "back in touch, server 2 stays fenced ($out)" grep -q "fenced" <<<"$out"
check "... and says why in its log" expired2

# ---- the manager: the failed server out of every shard, a backup promoted where it led ----
epoch2() { s=$(status_json); grep -q '"epoch":2,' <<<"$s"; }
wait_until 60 epoch2
# shard s is on s, s+1, s+2 (mod 4): server 2 leads 3 shards and backs up 6
check "the manager took server 2 out of the 9 shards it was in: epoch 2" \
	grep -q '"epoch":2,"replication":3,"shards":12,"under_replicated":9' <<<"$s"
check "... a backup leads the 3 it led" \
	grep -q '"index":2,"addr":"10.77.2.2","live":false,"primary_of":0,"replica_of":0' <<<"$s"
check "... server 3, the first backup of each, leads them now (6 shards)" \
	grep -q '"index":3,"addr":"10.77.3.2","live":true,"primary_of":6,"replica_of":9' <<<"$s"
check "... and the manager said so in its log" \
	grep -q "server 2 (10.77.2.2) failed: epoch 2 without it in 9 shards, a backup promoted in the 3 it led" \
	/run/xtx/"$PREFIX"-s[013]-*.log
recovered_e2() { test "$(grep -l "epoch 2: recovered in" /run/xtx/"$PREFIX"-s[013]-*.log | wc -l)" -ge 1; }
wait_until 60 recovered_e2
check "... the servers taking shards over recovered before serving them" recovered_e2
wait_until 60 serves_now 0 2
out=$(op 0 2 insert 3 78 value=02)
check "the survivors serve epoch 2 (a write: $out)" grep -q "status=ok" <<<"$out"
out=$(op 1 1 read 3 77)
check "... and refuse epoch 1, so a client by the old map writes nothing ($out)" \
	grep -q "serves epoch 2" <<<"$out"

# ---- an xtxd that stops renewing: its XDP stops serving on its own ----
pid=$(cat "/run/xtx/$(server_ns 1)-$(server_dev 1).pid")
kill -STOP "$pid"
wait_until 60 fenced_now 1 2
kill -CONT "$pid"
check "xtxd of server 1 stopped: its XDP refuses once the lease passed ($out)" \
	grep -q "fenced" <<<"$out"
wait_until 60 serves_now 1 2
check "xtxd going again within its session: server 1 serves ($out)" grep -q "op=read status=" <<<"$out"

# ---- the manager itself goes: another takes over; it stays in, its shards would keep one ----
s=$(status_json)
mgr=$(grep -o '"manager":[0-9-]*' <<<"$s" | cut -d: -f2)
check "a live server manages (server ${mgr:-none})" \
	test "${mgr:-x}" = 0 -o "${mgr:-x}" = 1 -o "${mgr:-x}" = 3
[ "${mgr:-x}" = 0 ] || [ "${mgr:-x}" = 1 ] || [ "${mgr:-x}" = 3 ] || mgr=0
replicas_of() { grep -o "\"index\":$1,[^}]*" <<<"$2" | grep -o '"replica_of":[0-9]*' | cut -d: -f2; }
before=$(replicas_of "$mgr" "$s")
ctl "$mgr" unload >/dev/null 2>&1
gone_node() { test "$(live "$mgr")" = false; }
# at once: its session closes with it, far sooner than one would expire
wait_until 3 gone_node
check "a stopped server's live node goes at once" gone_node
other_manages() {
	s=$(status_json)
	now=$(grep -o '"manager":[0-9-]*' <<<"$s" | cut -d: -f2)
	test -n "$now" -a "$now" != "$mgr" -a "$now" != -1 -a "$now" != 2
}
wait_until 60 other_manages
# once it judged the server gone (half a session): the epoch it would write, or not
gone_said() { grep -q "server $mgr (.*) failed" /run/xtx/"$PREFIX"-s[0-3]-*.log; }
wait_until 60 gone_said
s=$(status_json)
check "another live server manages now (server ${now:-none})" \
	test -n "$now" -a "$now" != "$mgr" -a "$now" != -1 -a "$now" != 2
after=$(replicas_of "$mgr" "$s")
# server 2's going left 9 shards at two replicas, some of them server $mgr's
check "... and leaves server $mgr in: a shard of it would keep one replica (epoch 2, in ${before:-?} -> ${after:-?})" \
	test -n "$(grep -o '"epoch":2,' <<<"$s")" -a "${after:-0}" = "${before:-1}"
check "... saying so in its log" grep -q "server $mgr (.*) failed: a shard of it would keep one whole replica" \
	/run/xtx/"$PREFIX"-s[0-3]-*.log
out=$(load_member "$mgr" 2>&1)
check "server $mgr joins again ($out)" test "$(live "$mgr")" = true
wait_until 60 serves_now "$mgr" 2
check "... serving epoch 2 ($out)" grep -q "op=read status=" <<<"$out"

# ---- the participant list: shards that share no server decide a transaction alike ----
for i in 0 1 2 3; do
	ctl "$i" unload --force >/dev/null 2>&1
	# the servers talk among themselves here: the route a link going down took goes back
	ip -n "$(server_ns "$i")" route replace 10.77.0.0/16 via "10.77.$i.1" dev "$(server_dev "$i")"
done
NAME=${NAME}m
zkc init --zk "$ZK_CLIENT" --name "$NAME" --servers "$(all_server_ips)" --replication 2 \
	--shards 4 >/dev/null 2>&1
for i in 0 1 2 3; do
	load_member "$i" --resolve-after 1s --fresh >"$tmp/m$i.out" 2>&1 || { fail "load server $i"; cat "$tmp/m$i.out"; }
done
opfield() { grep -o "\b$2=[^ ]*" <<<"$1" | head -n 1 | cut -d= -f2; }
# a key of table 3 in the shard replicated on A,B: the first append naming A,B it takes
# (a probe of client 50, never completed, so decided aborted)
find_key() {	# find_key SERVER A,B
	local k
	for k in $(seq 1 64); do
		[ "$(opfield "$(op "$1" 1 --client-id 50 log-append 3 "$k" txn="$k" version=1 \
			replicas="$2")" status)" = ok ] && { echo "$k"; return; }
	done
}
a=$(find_key 0 0,1)
b=$(find_key 2 2,3)
check "R = 2 on 4 servers: key ${a:-none} on servers 0,1 and key ${b:-none} on 2,3, no server shared" \
	test -n "$a" -a -n "$b"
app() {	# app SERVER KEY TXN REPLICAS [FIELD...]: a write of client 60's transaction
	op "$1" 1 --client-id 60 log-append 3 "$2" txn="$3" version=9 value=77 replicas="$4" "${@:5}"
}
meta() { op "$1" 1 --client-id 60 log-append 3 0 txn="$2" version=15 flags=meta; }	# servers 0-3
# txn 500 as a coordinator without the list logs it: complete on 0 and 1, on 2 only of 2,3
app 0 "$a" 500 0,1 flags=last >/dev/null
app 1 "$a" 500 0,1 flags=last >/dev/null
app 2 "$b" 500 2,3 flags=last >/dev/null
# txn 501 the same, each server told the participants before its last write
for s in 0 1; do meta "$s" 501 >/dev/null; app "$s" "$a" 501 0,1 flags=last >/dev/null; done
meta 2 501 >/dev/null
app 2 "$b" 501 2,3 flags=last >/dev/null
told() { opfield "$(op "$1" 1 --client-id 60 --port 7371 -t 100ms txn-status 0 0 txn="$2")" flags; }
# past --resolve-after the servers decide: 0x2 committed, 0x3 aborted
decided() { local f; f=$(told "$1" "$2"); [ "$f" = 0x2 ] || [ "$f" = 0x3 ]; }
for q in "0 500" "2 500" "0 501" "2 501"; do wait_until 60 decided $q; done
s0=$(told 0 500)
s2=$(told 2 500)
check "without the list, each group decides alone: server 0 says ${s0:-nothing}, server 2 ${s2:-nothing} (2 committed, 3 aborted)" \
	test "$s0" = 0x2 -a "$s2" = 0x3
s0=$(told 0 501)
s2=$(told 2 501)
check "with it, every server asks all four: both say aborted (server 0 ${s0:-nothing}, server 2 ${s2:-nothing})" \
	test "$s0" = 0x3 -a "$s2" = 0x3
out=$(client "$BUILD/xtxbench" smallbank --zk "$ZK_CLIENT" --zk-name "$NAME" --accounts 500 \
	--ctl "$(all_server_ctls)" --populate --duration 2s --warmup 0 --verify --json 2>&1)
rc=$?
n=0
for i in 0 1 2 3; do
	m=$(ctl "$i" log dump 2>/dev/null | grep -c "meta")
	n=$((n + m))
done
check "libxtx sends it: SmallBank over these shards passes --verify (exit $rc) with $n participant lists logged" \
	test "$rc" -eq 0 -a "$n" -gt 0
[ "$rc" -eq 0 ] || grep -v '^{' <<<"$out" | tail -n 12 | sed 's/^/    /'

# ---- teardown leaves no ZooKeeper behind ----
for i in 0 1 2 3; do ctl "$i" unload --force >/dev/null 2>&1; done
zk_down
check "ZooKeeper stopped with the test: no JVM serves its directory" \
	test -z "$(pgrep -f -- "$ZK_DIR/data")"
finish
