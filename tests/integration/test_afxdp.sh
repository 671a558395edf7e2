#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The AF_XDP client transport on 3 servers with R = 3 over 2-queue veths: bank with --check under
# OCC, 2PL and HADES, under loss too; TATP and SmallBank with --verify; the steering program takes
# the place of the topology's XDP_PASS program, UDP clients keep working beside it, and replies
# come through the port's UDP socket once it is gone; 8 threads open and close clients at once.
# Bad input: an interface without native XDP, an unknown neighbour, a queue another process
# holds, and a foreign XDP program, each a clear error within seconds.
# checks: 59 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3
TOPO_QUEUES=2

setup_servers
SERVERS=$(all_server_ips)
CTL=$(all_server_ctls)
CDEV0=${PREFIX}c0

# The name of the XDP program on a client end.
client_prog() {
	local id
	id=$(client bpftool net show dev "$1" 2>/dev/null | awk '/driver id/ { print $NF; exit }')
	[ -n "$id" ] && bpftool prog show id "$id" | awk '{ for (i = 1; i < NF; i++)
		if ($i == "name") { print $(i + 1); exit } }'
}
num_field() { grep -o "\"$2\":[0-9.]*" <<<"$1" | head -n 1 | cut -d: -f2; }
str_field() { grep -o "\"$2\":\"[a-z0-9]*\"" <<<"$1" | head -n 1 | cut -d'"' -f4; }
bank() { client timeout 60 "$BUILD/xtxbench" bank --servers "$SERVERS" "$@"; }

check "client end runs the topology's XDP_PASS program" \
	grep -q "^xtx_xdp_pass" <<<"$(client_prog "$CDEV0")"

# ---- bank over AF_XDP: OCC, 2PL, HADES, each checked ----
for proto in occ 2pl hades; do
	out=$(bank --transport afxdp --protocol "$proto" --accounts 200 --threads 2 --inflight 16 \
		--duration 1s --check --json 2>&1)
	rc=$?
	check "bank $proto afxdp: exit 0 ($rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || grep -E "Error|FAIL" <<<"$out" | head -n 5 | sed 's/^/    /'
	check "bank $proto afxdp: ran over afxdp" test "$(str_field "$out" transport)" = afxdp
	c=$(num_field "$out" committed)
	check "bank $proto afxdp: committed ${c:-0} transfers" test "${c:-0}" -gt 1000
	check "bank $proto afxdp: the total held" grep -q "bank check: total [0-9]* conserved" <<<"$out"
	check "bank $proto afxdp: no malformed frame" test "$(num_field "$out" frames_malformed)" = 0
done
f=$(num_field "$out" udp_fallback)
p=$(num_field "$out" packets)
check "replies came through the AF_XDP sockets (${f:-?} of ${p:-?} the kernel's way)" \
	test "${f:-1}" -le $((${p:-0} / 100))
check "the steering program replaced the XDP_PASS program" \
	grep -q "^xtx_xsk_steer" <<<"$(client_prog "$CDEV0")"
check "... on every link the routes use" grep -q "^xtx_xsk_steer" <<<"$(client_prog "${PREFIX}c2")"

# ---- UDP clients beside it: the steering program passes what is not for an AF_XDP socket ----
out=$(bank --accounts 200 --duration 1s --check --json 2>&1)
rc=$?
check "bank udp beside the steering program: exit 0 ($rc)" test "$rc" -eq 0
check "bank udp: ran over udp" test "$(str_field "$out" transport)" = udp
check "bank udp: the total held" grep -q "bank check: total [0-9]* conserved" <<<"$out"

# ---- the steering program replaced mid-run: replies go the kernel's way, and still arrive ----
# (it runs until replies have come after the swap too: SIGINT ends it)
rx() { local i n=0; for i in 0 1 2; do n=$((n + $(json_field "$(ctl "$i" stats --json)" rx))); done; echo "$n"; }
more_rx() { [ "$(rx)" -gt $(($1 + 300)) ]; }
rx0=$(rx)
client "$BUILD/xtxbench" bank --servers "$SERVERS" --transport afxdp --accounts 200 \
	--duration 600s --check --json >"$BUILD/afxdp_swap.$PREFIX" 2>&1 &
swapper=$!
wait_until 60 more_rx "$rx0"
for i in 0 1 2; do
	client ip -force link set dev "${PREFIX}c$i" xdpdrv obj "$BUILD/bpf/xdp_pass.bpf.o" sec xdp
done
rx1=$(rx)
wait_until 60 more_rx "$rx1"
pkill -INT -P "$swapper"
wait "$swapper"
rc=$?
out=$(cat "$BUILD/afxdp_swap.$PREFIX")
rm -f "$BUILD/afxdp_swap.$PREFIX"
check "steering gone mid-run: exit 0 ($rc)" test "$rc" -eq 0
check "steering gone mid-run: the total held" grep -q "bank check: total [0-9]* conserved" <<<"$out"
f=$(num_field "$out" udp_fallback)
check "steering gone mid-run: replies came through the UDP socket (${f:-0})" test "${f:-0}" -gt 1000

# ---- under loss: 3 % of requests and replies dropped at the servers ----
d0=$(fault_drops)
for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 30000 --drop-reply-ppm 30000 >/dev/null; done
out=$(bank --transport afxdp --accounts 200 --threads 2 --duration 1s --check --json 2>&1)
rc=$?
for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 0 --drop-reply-ppm 0 >/dev/null; done
check "bank afxdp under loss: exit 0 ($rc)" test "$rc" -eq 0
check "bank afxdp under loss: the total held" grep -q "bank check: total [0-9]* conserved" <<<"$out"
r=$(num_field "$out" retransmits)
check "bank afxdp under loss: lost requests were sent again (${r:-0})" test "${r:-0}" -gt 0
check "bank afxdp under loss: the servers dropped packets ($(($(fault_drops) - d0)))" \
	test "$(($(fault_drops) - d0))" -gt 0

# ---- TATP and SmallBank, verified ----
wl() {
	client timeout 120 "$BUILD/xtxbench" "$1" --servers "$SERVERS" --ctl "$CTL" \
		--transport afxdp "${@:2}"
}
total_field() { grep -o '"total":{[^}]*}' <<<"$1" | grep -o "\"$2\":[0-9]*" | cut -d: -f2; }
verified() {
	local name=$1 out=$2 rc=$3 committed
	check "$name: exit 0 ($rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || grep -E "VIOLATION|Error" <<<"$out" | head -n 10 | sed 's/^/    /'
	check "$name: verified with no violation" grep -q '"verify":true,"violations":0}' <<<"$out"
	committed=$(total_field "$out" committed)
	check "$name: transactions committed (${committed:-0})" test "${committed:-0}" -gt 1000
	check "$name: over afxdp" test "$(str_field "$out" transport)" = afxdp
}
out=$(wl tatp --subscribers 2000 --populate --duration 1 --warmup 200ms --threads 2 --json \
	--verify 2>&1)
verified "tatp afxdp" "$out" $?
# loaded through transactions, over AF_XDP too
out=$(wl smallbank --accounts 1000 --populate --populate-via txn -v --duration 1 --warmup 200ms \
	--threads 2 --json \
	--verify 2>&1)
verified "smallbank afxdp" "$out" $?
check "smallbank afxdp: loaded through transactions" \
	grep -q "populated [0-9]* rows in [0-9]* transactions" <<<"$out"

# ---- clients of one process opened and closed by 8 threads at once, one staying throughout ----
out=$(client timeout 60 "$BUILD/tests/afxdp_churn" "$SERVERS" 8 6 2>&1)
rc=$?
check "8 threads opening and closing AF_XDP clients: exit 0 ($rc)" test "$rc" -eq 0
check "... every open worked and every ping came back" \
	grep -q "opened=48 open_failed=0 unanswered=0" <<<"$out"
check "... and the client that stayed still hears every server" grep -q "survivor=50/50" <<<"$out"
[ "$rc" -eq 0 ] || sed 's/^/    /' <<<"$out" | head -n 5

# ---- bad input: each a clear error, in seconds, nothing left behind ----
# errcase NAME PATTERN ARGS...: exits non-zero within 20 s, saying PATTERN
errcase() {
	local name=$1 pat=$2 out rc t0
	shift 2
	t0=$SECONDS
	out=$(client timeout 20 "$BUILD/xtxbench" bank --transport afxdp --no-setup \
		--duration 1s "$@" 2>&1)
	rc=$?
	check "$name: refused (exit $rc, not the timeout's 124)" \
		bash -c "[ $rc -ne 0 ] && [ $rc -ne 124 ]"
	check "$name: says why" grep -q "$pat" <<<"$out"
	[ $? -eq 0 ] || sed 's/^/    /' <<<"$out" | head -n 5
	check "$name: within 10 s ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -le 10
}
# an interface without native XDP: a bridge with a route and a neighbour
client ip link add "${PREFIX}d" type bridge
client ip addr add 10.99.0.1/24 dev "${PREFIX}d"
client ip link set "${PREFIX}d" up
client ip neigh replace 10.99.0.2 lladdr 02:00:00:00:00:02 dev "${PREFIX}d" nud permanent
errcase "no native XDP" "does not support native XDP" --servers 10.99.0.2
# nobody answers ARP for .9 on link 0
errcase "unknown neighbour" "10.77.0.9.*ARP\|neighbour.*10.77.0.9" --servers 10.77.0.9

# a queue held by another client process
# (the first holds the queues until the second has been refused: SIGINT ends it)
client "$BUILD/xtxbench" bank --servers "$SERVERS" --transport afxdp --accounts 200 \
	--duration 600s --check >"$BUILD/afxdp_first.$PREFIX" 2>&1 &
first=$!
ticked() { grep -qs '^t=' "$BUILD/afxdp_first.$PREFIX"; }
wait_until 60 ticked
errcase "queue taken" "taken by another process" --servers "$SERVERS"
pkill -INT -P "$first"
wait "$first"
rc=$?
check "the process holding the queues was undisturbed (exit $rc)" test "$rc" -eq 0
rm -f "$BUILD/afxdp_first.$PREFIX"

# a foreign XDP program on the interface (it does more than pass): left alone
tmp=$(mktemp -d /tmp/xtx-test-afxdp.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM
cat >"$tmp/foreign.c" <<'PROG'
#include <linux/bpf.h>
__attribute__((section("xdp"), used)) int foreign(struct xdp_md *ctx)
{
	return ctx->data_end - ctx->data > 9000 ? XDP_DROP : XDP_PASS;
}
char LICENSE[] __attribute__((section("license"), used)) = "GPL";
PROG
CLANG=$(command -v clang-19 || command -v clang)
"$CLANG" -O2 -g -target bpf -idirafter "/usr/include/$(uname -m)-linux-gnu" -c "$tmp/foreign.c" \
	-o "$tmp/foreign.o"
client ip link set dev "${PREFIX}c1" xdpdrv off
client ip link set dev "${PREFIX}c1" xdpdrv obj "$tmp/foreign.o" sec xdp
check "a foreign program sits on link 1" grep -q "^foreign" <<<"$(client_prog "${PREFIX}c1")"
errcase "foreign XDP program" "runs XDP program 'foreign'" --servers "$(server_ip 1)"
check "the foreign program was left in place" grep -q "^foreign" <<<"$(client_prog "${PREFIX}c1")"
client ip link set dev "${PREFIX}c1" xdpdrv off
client ip link set dev "${PREFIX}c1" xdpdrv obj "$BUILD/bpf/xdp_pass.bpf.o" sec xdp

# ---- a shared secret: every request over AF_XDP MACed, resends and the injector's copies too ----
printf '%s\n' 0f1e2d3c4b5a69788796a5b4c3d2e1f0 >"$tmp/secret"
printf '%s\n' 0f1e2d3c4b5a69788796a5b4c3d2e1f1 >"$tmp/secret.other"
chmod 600 "$tmp/secret" "$tmp/secret.other"
for ((i = 0; i < NSERVERS; i++)); do
	ctl "$i" unload >/dev/null
	make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
		ARGS="--secret-file $tmp/secret" >/dev/null || fail "make load server $i --secret-file"
done
bad_macs() {
	local i n t=0
	for ((i = 0; i < NSERVERS; i++)); do
		n=$(json_field "$(ctl "$i" stats --json)" bad_mac)
		t=$((t + ${n:-0}))
	done
	echo "$t"
}
for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 30000 --drop-reply-ppm 30000 >/dev/null; done
out=$(bank --transport afxdp --accounts 200 --threads 2 --duration 1s --check --json \
	--secret-file "$tmp/secret" --fault-dup-ppm 50000 --fault-reorder-ppm 20000 2>&1)
rc=$?
for i in 0 1 2; do ctl "$i" fault --drop-request-ppm 0 --drop-reply-ppm 0 >/dev/null; done
check "bank afxdp with --secret-file under loss, duplicates and reordering: exit 0, the total \
held ($rc)" bash -c "[ $rc -eq 0 ] && grep -q 'bank check: total [0-9]* conserved' <<<'$out'"
b=$(bad_macs)
check "... resent ($(num_field "$out" retransmits)), duplicated ($(num_field "$out" duplicated)) \
and reordered ($(num_field "$out" reordered)) requests all carried a right MAC (bad_mac $b)" \
	test "$(num_field "$out" retransmits)" -gt 0 -a "$(num_field "$out" duplicated)" -gt 0 \
	-a "$b" -eq 0
out=$(bank --transport afxdp --accounts 200 --duration 1s --json \
	--secret-file "$tmp/secret.other" 2>&1)
c=$(num_field "$out" transfers)
check "bank afxdp with another secret: nothing committed (${c:-0}), dropped as bad_mac ($(bad_macs))" \
	test "${c:-0}" -eq 0 -a "$(bad_macs)" -gt 0

finish
