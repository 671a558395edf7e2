#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The resolver port with a shared secret: a forger of a server's address cannot decide a
# transaction, a captured message cannot be sent again, and a flood of questions about
# unknown transactions from strangers or forgers costs no fence, no sync and no decision.
# checks: 24 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

TMP=$(mktemp -d /tmp/xtx-peerauth.XXXXXX)
trap 'rm -rf "$TMP"; cleanup' EXIT INT TERM
printf '%s\n' 00112233445566778899aabbccddeeff >"$TMP/secret"
chmod 600 "$TMP/secret"
printf '%s\n' ffeeddccbbaa99887766554433221100 >"$TMP/wrong"
chmod 600 "$TMP/wrong"
ARGS="--peers $(all_server_ips) --resolve-after 120s"
setup_servers $ARGS
txn() { printf '0x%x' $(((9 << 48) | $1)); }
rstat() { json_field "$(ctl "$1" rare-stats --json)" "$2"; }
PEER="python3 $ROOT/tests/integration/peer_msg.py resolver"
# forge FROM TO ARGS...: a resolver message to server TO that claims to come from server FROM
forge() {
	local from=$1 to=$2
	shift 2
	client $PEER --src "$(server_ip "$from")" --dst "$(server_ip "$to")" --from "$from" "$@" \
		>/dev/null
}
# settle SERVER COUNTER MIN: waits until the counter reached MIN; prints it
settle() {
	local n i
	for ((i = 0; i < 100; i++)); do
		n=$(rstat "$1" "$2")
		[ "${n:-0}" -ge "$3" ] && break
		sleep 0.1
	done
	echo "${n:-0}"
}

# ---- two transactions left to the resolver: txn 1 complete everywhere, txn 2 on server 0 ----
for i in 0 1 2; do
	check "server $i: keys 100 and 200 inserted" \
		test "$(st "$i" insert 0 100 value=aa)/$(st "$i" insert 0 200 value=bb)" = ok/ok
done
check "primary: txns 1 and 2 lock keys 100 and 200" \
	test "$(st 0 occ-lock 0 100 txn=1)/$(st 0 occ-lock 0 200 txn=2)" = ok/ok
for i in 0 1 2; do
	check "server $i: txn 1 logs key 100 version 2" \
		test "$(st "$i" log-append 0 100 txn=1 version=2 value=a2a2 replicas=0,1,2 \
			flags=last)" = ok
done
check "server 0 alone: txn 2 logs key 200 version 2" \
	test "$(st 0 log-append 0 200 txn=2 version=2 value=b2b2 replicas=0,1,2 flags=last)" = ok
# the servers now take the secret (adopting what runs): XDP and the peers want its MAC
ARGS="$ARGS --secret-file $TMP/secret"
restart_all() {
	local i pid n
	for i in 0 1 2; do
		pid=$(cat "/run/xtx/$(server_ns "$i")-$(server_dev "$i").pid")
		kill -9 "$pid"
		for ((n = 0; n < 100; n++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
		make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
			ARGS="$ARGS" >/dev/null || return 1
	done
}
check "the servers restart with --secret-file, adopting what runs" restart_all

# ---- forged decisions, without the secret or with another ----
forge 1 0 --op decide --txn "$(txn 1)" --flags 2
forge 1 0 --op decide --txn "$(txn 2)" --flags 1
forge 2 0 --op decide --txn "$(txn 1)" --flags 2 --secret "$TMP/wrong"
n=$(settle 0 resolve_unauthenticated 3)
check "server 0 counted the three forged decisions as unauthenticated ($n)" test "$n" -ge 3
# (the restart's scan of the logs may decide them with the replicas: txn 1 commits, txn 2,
# logged on server 0 alone, aborts; what the forgers asked is the other way round)
decided=$(XLOG 0 | grep -E "txn $(txn 1) decided abort|txn $(txn 2) decided commit")
check "... and decided neither transaction as they said${decided:+: $decided}" test -z "$decided"
check "... key 200 is still at version 1 there ($(field "$(row 0 200)" version))" \
	test "$(field "$(row 0 200)" version)" = 1

# ---- a sealed question, then the same bytes again, then one too old ----
fenced0=$(rstat 0 resolve_fenced)
forge 1 0 --op query --txn "$(txn 77)" --secret "$TMP/secret" --twice
n=$(settle 0 resolve_replayed 1)
check "a sealed question sent twice: the copy counted as replayed ($n)" test "$n" -ge 1
check "... the first answered: txn 77, unknown, fenced and aborted once" \
	test "$(XLOG 0 | grep -c "txn $(txn 77) decided abort (not held here)")" = 1
forge 1 0 --op query --txn "$(txn 78)" --secret "$TMP/secret" --stamp-age 600
n=$(settle 0 resolve_replayed 2)
check "a sealed question stamped ten minutes ago: refused ($n)" test "$n" -ge 2
check "... nothing done for it" test -z "$(XLOG 0 | grep "txn $(txn 78) ")"

# ---- a flood about unknown transactions: from a forger, and from a stranger ----
fenced1=$(rstat 0 resolve_fenced)
size1=$(stat -c %s "/var/lib/xtx/$(server_ns 0)-$(server_dev 0)/decided.xdec")
u1=$(rstat 0 resolve_unauthenticated)
s1=$(rstat 0 resolve_strangers)
forge 1 0 --op query --txn "$(txn 1000)" --distinct --count 2000
forge 1 0 --op hquery --txn "$(txn 5000)" --distinct --count 500
client $PEER --dst "$(server_ip 0)" --op query --txn "$(txn 9000)" --distinct --count 500 >/dev/null
u2=$(settle 0 resolve_unauthenticated $((u1 + 100)))
s2=$(settle 0 resolve_strangers $((s1 + 100)))
check "forged questions counted unauthenticated ($((u2 - u1)) of 2500)" test $((u2 - u1)) -ge 100
check "a stranger's counted as strangers ($((s2 - s1)) of 500)" test $((s2 - s1)) -ge 100
check "none cost a fence ($fenced1 -> $(rstat 0 resolve_fenced) fences)" \
	test "$(rstat 0 resolve_fenced)" = "$fenced1"
check "... nor a decision (decided.xdec $size1 -> $(stat -c %s \
	"/var/lib/xtx/$(server_ns 0)-$(server_dev 0)/decided.xdec") bytes)" \
	test "$(stat -c %s "/var/lib/xtx/$(server_ns 0)-$(server_dev 0)/decided.xdec")" = "$size1"

# ---- the servers decide both transactions themselves, sealed, and agree ----
resolve() {
	client "$BUILD/xtxbench" resolve --servers "$(all_server_ips)" --client-id 9 --protocol occ \
		--secret-file "$TMP/secret" --witnesses 0,1,2 "$@" 2>&1
}
out=$(resolve --txn 1)
check "txn 1, logged everywhere: committed ($out)" grep -q "outcome=committed" <<<"$out"
out=$(resolve --txn 2)
check "txn 2, logged on server 0 alone: aborted ($out)" grep -q "outcome=aborted" <<<"$out"
same() {
	local i n
	for ((n = 0; n < 100; n++)); do
		for i in 0 1 2; do
			[ "$(field "$(row "$i" 100)" version)/$(field "$(row "$i" 200)" version)" = 2/1 ] ||
				break
		done
		[ "$i" = 2 ] && [ "$(field "$(row 2 100)" version)/$(field "$(row 2 200)" version)" = 2/1 ] &&
			return 0
		sleep 0.1
	done
	return 1
}
check "every replica: key 100 at version 2, key 200 at version 1" same
check "fence count moved only for txns 1..2 and 77 ($fenced0 -> $(rstat 0 resolve_fenced))" \
	test "$(rstat 0 resolve_fenced)" -le $((fenced0 + 3))
finish
