#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A replica told a decision must make it true for all it holds: one whose fence map is full
# decides nothing it cannot fence (a late log append of the transaction would be taken), and
# decides it, fenced, once there is room again; one that restarted after logging, and knows
# the transaction only from its log, frees the lock it logged when told, and decides on its
# own what it was left alone with (committed elsewhere, its coordinator gone).
# checks: 24 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

TMP=$(mktemp -d /tmp/xtx-fencefull.XXXXXX)
trap 'rm -rf "$TMP"; cleanup' EXIT INT TERM
setup_servers --peers "$(all_server_ips)" --resolve-after 120s
field() { grep -o "\b$2=[^ ]*" <<<"$1" | head -n 1 | cut -d= -f2; }
st() {
	local s=$1
	shift
	field "$(client "$BUILD/xtxbench" op --server "$(server_ip "$s")" --client-id 9 "$@" 2>&1)" \
		status
}
txn() { printf '0x%x' $(((9 << 48) | $1)); }
FENCE=/sys/fs/bpf/xtx/$(server_ns 2)/$(server_dev 2)/xtx_fence
# fence_batch VERB FIRST COUNT: a bpftool batch file updating or deleting COUNT keys from FIRST
fence_batch() {
	python3 - "$1" "$2" "$3" "$FENCE" >"$TMP/batch" <<'EOF'
import struct, sys
verb, first, count, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
for k in range(first, first + count):
    key = " ".join("%02x" % b for b in struct.pack("<Q", k))
    if verb == "update":
        print("map update pinned %s key hex %s value hex 01 00 00 00 00 00 00 00" % (path, key))
    else:
        print("map delete pinned %s key hex %s" % (path, key))
EOF
	bpftool batch file "$TMP/batch" >/dev/null 2>&1
}

for i in 0 1 2; do
	check "server $i: insert key 300" test "$(st "$i" insert 0 300 value=aa)" = ok
done
check "txn 3 locks key 300 at the primary and logs it there alone" \
	test "$(st 0 occ-lock 0 300 txn=3)/$(st 0 log-append 0 300 txn=3 version=2 value=bb \
		replicas=0,1,2 flags=last)" = ok/ok
# every slot of server 2's fence map taken by transactions nobody runs (the batch stops at
# the first key refused)
fence_batch update $((1 << 40)) 70000
full() {
	! bpftool map update pinned "$FENCE" key hex ff ff ff ff ff ff ff 7f \
		value hex 01 00 00 00 00 00 00 00 2>/dev/null
}
check "server 2's fence map is full: one more key is refused" full
client "$BUILD/xtxbench" resolve --servers "$(all_server_ips)" --client-id 9 --protocol occ \
	--txn 3 --witnesses 0,1,2 --timeout 1s >/dev/null 2>&1
wait_log "txn $(txn 3) decided abort" 0 1
check "servers 0 and 1 decide txn 3 aborted (server 1 never held it)" test $? -eq 0
check "server 2, told so, will not decide it without a fence" \
	wait_log "txn $(txn 3): not deciding abort without a fence" 2
check "... and has not" test -z "$(XLOG 2 | grep "txn $(txn 3) decided")"
fence_batch delete $((1 << 40)) 100
check "with room again, server 2 decides it aborted" wait_log "txn $(txn 3) decided abort" 2
check "... fenced: a late log append of txn 3 there is refused" \
	test "$(st 2 log-append 0 300 txn=3 version=2 value=bb replicas=0,1,2 flags=last)" = fenced

# ---- told the decision after a restart: the records are on disk only ----
for i in 0 1 2; do
	check "server $i: insert key 400" test "$(st "$i" insert 0 400 value=aa)" = ok
done
check "txn 6 locks key 400 at the primary and logs it there and on server 1" \
	test "$(st 0 occ-lock 0 400 txn=6)/$(st 0 log-append 0 400 txn=6 version=2 value=bb \
		replicas=0,1,2 flags=last)/$(st 1 log-append 0 400 txn=6 version=2 value=bb \
		replicas=0,1,2 flags=last)" = ok/ok/ok
pid=$(cat "/run/xtx/$(server_ns 0)-$(server_dev 0).pid")
kill -9 "$pid"
for ((n = 0; n < 100; n++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
# server 1 decides without server 0 (gone): server 2 never held it
client "$BUILD/xtxbench" resolve --servers "$(all_server_ips)" --client-id 9 --protocol occ \
	--txn 6 --witnesses 1,2 --timeout 1s >/dev/null 2>&1
check "server 1 decides txn 6 aborted while server 0's xtxd is dead" \
	wait_log "txn $(txn 6) decided abort" 1
restart0() {
	make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
		ARGS="--peers $(all_server_ips) --resolve-after 120s" >/dev/null
}
check "server 0 starts again, adopting its program and its logged lock" restart0
check "server 0 decides the abort too, and frees the lock it logged" \
	wait_log "txn $(txn 6) decided abort (.*): 1 writes here, 0 installed, 1 locks" 0
check "... so another transaction takes key 400's lock" test "$(st 0 occ-lock 0 400 txn=8)" = ok

# ---- committed at the other replicas, then this one restarted: nobody tells it ----
for i in 0 1 2; do
	check "server $i: insert key 500" test "$(st "$i" insert 0 500 value=aa)" = ok
done
out=$(client "$BUILD/xtxbench" op --server "$(server_ip 0)" --client-id 9 occ-lock 0 500 txn=10)
tok=$(field "$out" token)
check "txn 10 logged on every replica, committed at servers 0 and 1, its coordinator gone" \
	test "$(st 0 log-append 0 500 txn=10 version=2 value=cc replicas=0,1,2 flags=last)/$(
		st 1 log-append 0 500 txn=10 version=2 value=cc replicas=0,1,2 flags=last)/$(
		st 2 log-append 0 500 txn=10 version=2 value=cc replicas=0,1,2 flags=last)/$(
		st 0 commit-primary 0 500 txn=10 version=1 value=cc token="$tok")/$(
		st 1 commit-backup 0 500 txn=10 version=2 value=cc)" = ok/ok/ok/ok/ok
pid=$(cat "/run/xtx/$(server_ns 2)-$(server_dev 2).pid")
kill -9 "$pid"
for ((n = 0; n < 100; n++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
restart2() {
	make -s -C "$ROOT" load IFACE="$(server_dev 2)" NETNS="$(server_ns 2)" \
		ARGS="--peers $(all_server_ips) --resolve-after 1s" >/dev/null
}
check "server 2 SIGKILLed and started again (its table knows nothing of txn 10)" restart2
check "server 2 finds txn 10 in its log unfinished, and the replicas decide it committed" \
	wait_log "txn $(txn 10) decided commit" 2
check "... key 500 at version 2 there too" \
	grep -q 'version=2 vlen=1 value=cc$' <<<"$(ctl 2 dump | grep '^table=0 key=500 ')"
finish
