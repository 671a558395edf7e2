#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# End to end against xtx-udpd: the XDP server's xtxbench checks, bad packets, logs and leases.
# checks: 127 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"

UDPD=$BUILD/xtx-udpd
tmp=$(mktemp -d /tmp/xtx-test-udpd.XXXXXX)

pidfile() { echo "$tmp/udpd$1.pid"; }
dumpfile() { echo "$tmp/dump$1"; }

# start_udpd I ARGS...: xtx-udpd on server I's address, in its namespace, logging durably
# into $tmp/data$I (each start adds segments of its own).
start_udpd() {
	local i=$1
	shift
	"$UDPD" --netns "$(server_ns "$i")" --bind "$(server_ip "$i")" -d --pidfile "$(pidfile "$i")" \
		--dump-file "$(dumpfile "$i")" --daemon-log "$tmp/udpd$i.log" \
		--data-dir "$tmp/data$i" "$@"
}

# log_records DIR: the records xtxctl's log reader verifies in DIR (CRC, seqs, headers);
# "bad" when it finds a torn or corrupt record.
log_records() {
	local out
	out=$("$BUILD/xtxctl" --iface lo --data-dir "$1" log dump 2>&1) || { echo bad; return; }
	sed -n 's/^# \([0-9]*\) records on disk.*/\1/p' <<<"$out"
}

# log_writes DIR: the whole writes on disk in DIR; at_least_writes DIR N: N or more
log_writes() {
	"$BUILD/xtxctl" --iface lo --data-dir "$1" log dump 2>&1 |
		sed -n 's/^# [0-9]* records on disk in [0-9]* files, [0-9]* in the ring, \([0-9]*\) writes.*/\1/p'
}
at_least_writes() { local n; n=$(log_writes "$1"); [ "${n:-0}" -ge "$2" ]; }

# Alive and not a zombie: a daemon's reaper may be slow to collect it, or never do.
running() {
	[ -r "/proc/$1/stat" ] && ! grep -qE '^[0-9]+ \(.*\) [ZX] ' "/proc/$1/stat" 2>/dev/null
}

# stop_udpd I: SIGTERM, then wait until it has exited (it removes its pidfile).
stop_udpd() {
	local f pid n
	f=$(pidfile "$1")
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	kill "$pid" 2>/dev/null
	for ((n = 0; n < 100; n++)); do
		running "$pid" || return 0
		sleep 0.05
	done
	kill -9 "$pid" 2>/dev/null
	rm -f "$f"
	return 1
}

# restart_all ARGS...: every server anew (state starts empty) with ARGS.
restart_all() {
	local i
	for ((i = 0; i < NSERVERS; i++)); do
		stop_udpd "$i"
		start_udpd "$i" "$@" || { fail "xtx-udpd $i starts with $*"; finish; }
	done
}

udpd_cleanup() {
	local i
	for ((i = 0; i < NSERVERS; i++)); do stop_udpd "$i"; done
	rm -rf "$tmp"
	cleanup
}
trap udpd_cleanup EXIT INT TERM

# dump_of I: server I's store as `xtxctl dump` prints it (SIGUSR1 writes the dump files).
dump_of() {
	local f n
	f=$(dumpfile "$1")
	rm -f "$f" "$f.locks"
	kill -USR1 "$(cat "$(pidfile "$1")")" || return 1
	wait_until 60 test -f "$f" || return 1
	cat "$f"
}

all_dumps() {
	local i
	for ((i = 0; i < NSERVERS; i++)); do dump_of "$i" || return 1; done | sort -t= -k2,2n -k3,3n
}

# Locks held on every server right now (dump_of writes them to DUMP.locks).
locks_held() {
	local i held=0
	for ((i = 0; i < NSERVERS; i++)); do
		dump_of "$i" >/dev/null || { echo x; return; }
		held=$((held + $(wc -l <"$(dumpfile "$i").locks")))
	done
	echo "$held"
}

# op I ARGS...: xtxbench op to server I ($OP_SECRET: --secret-file F against a server with one)
# shellcheck disable=SC2086 # OP_SECRET is empty or an option and its argument
op() { local i=$1; shift; client "$BUILD/xtxbench" op --server "$(server_ip "$i")" $OP_SECRET "$@"; }
OP_SECRET=

# counter I INDEX: packet counter INDEX (enum xtx_counter) of server I, read with a STATS op.
counter() {
	local out hex word
	out=$(op "$1" --client-id 900 stats 0 $(($2 / 5))) || { echo x; return; }
	hex=$(grep -o 'value=[0-9a-f]*' <<<"$out" | cut -d= -f2)
	word=${hex:$((($2 % 5) * 16)):16}
	# little-endian bytes to a number
	echo $((16#$(sed -E 's/(..)(..)(..)(..)(..)(..)(..)(..)/\8\7\6\5\4\3\2\1/' <<<"$word")))
}
CTR_RX=0 CTR_TX=1 CTR_LOCK_CONFLICT=16 CTR_BAD_MAC=41

sum_counter() {
	local i s=0 v
	for ((i = 0; i < NSERVERS; i++)); do
		v=$(counter "$i" "$1")
		[[ $v =~ ^[0-9]+$ ]] || { echo x; return; }
		s=$((s + v))
	done
	echo "$s"
}

# --- bad command lines change nothing and say why ---
# refused PATTERN ARGS...: exit status 2 and an error matching PATTERN.
refused() {
	local pattern=$1 out rc
	shift
	out=$("$UDPD" "$@" 2>&1)
	rc=$?
	[ "$rc" -eq 2 ] && grep -q -- "$pattern" <<<"$out"
}
check "--threads 0 is refused with a clear error" refused 'Error: --threads' --threads 0
check "--bind of a non-address is refused" refused 'Error: --bind' --bind 10.1.2
check "--log-ring must be a power of two" refused 'power of two' --log-ring 1000
check "--log-sync takes a duration" refused 'Error: --log-sync' --log-sync soon
check "a stray argument is refused" refused 'unexpected argument' extra
out=$("$UDPD" --netns "$PREFIX-none" -d --pidfile "$tmp/none.pid" 2>&1)
rc=$?
check "a missing namespace is refused, no pidfile left" test "$rc" -ne 0 -a ! -e "$tmp/none.pid"

topo -x "$BUILD/bpf/xdp_pass.bpf.o" up >/dev/null || { fail "topology up"; exit 1; }
for ((i = 0; i < NSERVERS; i++)); do
	start_udpd "$i" || { fail "xtx-udpd $i starts"; finish; }
done
all_running() {
	local f
	for f in "$tmp"/udpd*.pid; do running "$(cat "$f")" || return 1; done
}
check "every xtx-udpd runs (pidfiles name live processes)" all_running
out=$(start_udpd 0 2>&1)
check "a second xtx-udpd on the same pidfile is refused" \
	test -n "$(grep -o 'already runs' <<<"$out")"
out=$("$UDPD" --netns "$(server_ns 0)" --bind "$(server_ip 0)" -d --pidfile "$tmp/other.pid" 2>&1)
check "a second xtx-udpd on the same address and port is refused" \
	test -n "$(grep -o 'another server runs there' <<<"$out")" -a ! -e "$tmp/other.pid"

# --- ping: every packet answered, every op counted once ---
out=$(client "$BUILD/xtxbench" ping --servers "$(all_server_ips)" --threads 2 --duration 1 \
	--ops 16 --client-id 100)
check "xtxbench ping exits 0" test $? -eq 0
sent=$(kv_field "$out" sent_packets)
replies=$(kv_field "$out" replies)
check "ping got replies ($replies of $sent)" test "${replies:-0}" -gt 0
# each STATS request is itself counted in rx before it reads: one per server
rx=$(( $(sum_counter $CTR_RX) - NSERVERS ))
check "servers received every packet sent (rx $rx, sent $sent)" test "$rx" -eq "${sent:-x}"
tx=$(sum_counter $CTR_TX)
# the rx reads above were answered too
check "servers answered every packet (tx $tx, rx $rx + $NSERVERS stats reads)" \
	test "$tx" -eq $((rx + NSERVERS))

# --- locks: the lock microbenchmarks' --check, 2 serving threads per server ---
# (a lease no pause of a busy machine outlasts: a client thread stalled past it would hold a
# grant the server gave to another, which --check reports; the lease is not the subject)
restart_all --threads 2 --lock-lease 60000
# race DESC BENCH ARGS...: 4 client threads on 8 keys, as tests/integration/test_locks.sh.
race() {
	local what=$1 bench=$2 rc c0 c1 held
	shift 2
	c0=$(sum_counter $CTR_LOCK_CONFLICT)
	out=$(client "$BUILD/xtxbench" "$bench" --servers "$(all_server_ips)" --threads 4 \
		--keys 8 --zipf 0 --check --duration 2 --json "$@" 2>"$tmp/err")
	rc=$?
	check "$what: exits 0 (no conflicting grant, no bad reply)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || grep -v '^t=' "$tmp/err" | head -n 12 | sed 's/^/    /'
	check "$what: --check saw no violation" test "$(json_field "$out" violations)" = 0
	conflicts=$(json_field "$out" conflicts)
	check "$what: threads really raced (conflicts=$conflicts)" test "${conflicts:-0}" -gt 0
	c1=$(sum_counter $CTR_LOCK_CONFLICT)
	check "$what: servers counted the same conflicts ($((c1 - c0)))" \
		test "$((c1 - c0))" -eq "${conflicts:-x}"
	held=$(locks_held)
	check "$what: every grant released (locks held on servers: $held)" test "$held" = 0
}
race "lock2pl" lock2pl --ops 8
race "lock2pl 50% exclusive" lock2pl --read-pct 50 --inflight 1 --ops 4
check "lock2pl 50% exclusive: exclusive and shared grants both happened" \
	test "$(json_field "$out" granted_excl)" -gt 0 -a "$(json_field "$out" granted_shared)" -gt 0
race "lockocc" lockocc --ops 8
check "lockocc: validates saw held locks ($(json_field "$out" validate_locked))" \
	test "$(json_field "$out" validate_locked)" -gt 0
check "lockocc: try-locks were granted ($(json_field "$out" granted_excl))" \
	test "$(json_field "$out" granted_excl)" -gt 0

# --- KV: every answer checked against the model, the stores diffed with it ---
# kv_run DESC ARGS...: 4 client threads over 200 keys each; the servers must hold
# exactly the model's live keys afterwards.
kv_run() {
	local what=$1 rc
	shift
	out=$(client "$BUILD/xtxbench" kv --servers "$(all_server_ips)" --threads 4 --keys 200 \
		--ops 8 --count 3000 --check --dump-file "$tmp/model" --json "$@" 2>"$tmp/err")
	rc=$?
	check "$what: exits 0 (no answer disagreed with the model)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || grep -v '^t=' "$tmp/err" | head -n 12 | sed 's/^/    /'
	check "$what: every op answered ($(json_field "$out" kv_ops) of 12000)" \
		test "$(json_field "$out" kv_ops)" = 12000
	if all_dumps >"$tmp/dump"; then
		check "$what: the servers hold exactly the model's $(wc -l <"$tmp/model") keys" \
			cmp -s "$tmp/model" "$tmp/dump"
		cmp -s "$tmp/model" "$tmp/dump" || diff "$tmp/model" "$tmp/dump" | head -n 8 |
			sed 's/^/    /'
	else
		fail "$what: dumping the servers"
	fi
}
kv_run "kv" --client-id 100 --key-base 1000000

# --- retransmissions: 2% of requests and replies lost; nothing runs twice ---
restart_all --threads 2 --drop-request-ppm 20000 --drop-reply-ppm 20000
kv_run "kv under 2% loss" --client-id 200 --key-base 2000000
check "requests were retransmitted ($(json_field "$out" retransmits))" \
	test "$(json_field "$out" retransmits)" -gt 0
out=$(client "$BUILD/xtxbench" counter --servers "$(server_ip 0)" --count 1000 --client-id 300 \
	--timeout 5ms)
check "counter sequence intact under loss" test $? -eq 0
check "retransmissions were replayed, not re-executed (replayed=$(kv_field "$out" replayed))" \
	test "$(kv_field "$out" replayed)" -gt 0

# --- libxtx transactions (3 replicas): money conserved, replicas identical, no lock left ---
# bank DESC ARGS...: a contended run on fresh servers.
bank() {
	local what=$1 rc n i
	shift
	restart_all --threads 2 --lock-lease 300
	out=$(client "$BUILD/xtxbench" bank --servers "$(all_server_ips)" --table 15 --lease 300ms \
		--check --json --threads 2 --duration 2s "$@" 2>"$tmp/err")
	rc=$?
	check "$what: money conserved, every transaction resolved (exit $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || tail -n 12 "$tmp/err" | sed 's/^/    /'
	n=$(json_field "$out" transfers)
	check "$what: transfers committed (${n:-0})" test "${n:-0}" -gt 50
	for ((i = 0; i < NSERVERS; i++)); do dump_of "$i" >"$tmp/bank$i" || fail "dump server $i"; done
	check "$what: replicas hold identical accounts ($(wc -l <"$tmp/bank0") keys)" \
		bash -c "[ -s $tmp/bank0 ] && cmp -s $tmp/bank0 $tmp/bank1 && cmp -s $tmp/bank0 $tmp/bank2"
	n=$(locks_held)
	check "$what: no lock left held ($n)" test "$n" = 0
	# which: a lock left is a release that never came
	if [ "$n" != 0 ]; then
		for ((i = 0; i < NSERVERS; i++)); do sed "s/^/    server $i: /" "$(dumpfile "$i").locks"; done
	fi
	for ((i = 0; i < NSERVERS; i++)); do stop_udpd "$i"; done
	n=$(for ((i = 0; i < NSERVERS; i++)); do log_records "$tmp/data$i"; done | tr '\n' ' ')
	check "$what: every server's log verifies and holds records ($n)" \
		bash -c "! grep -qE 'bad|(^| )0( |$)' <<<'$n' && [ -n '${n// /}' ]"
}
bank "bank occ" --protocol occ --inflight 4 --accounts 16
bank "bank 2pl" --protocol 2pl --inflight 16 --accounts 8

# --- refused packets: the culprit op's status, the others NOT_EXECUTED, nothing changed ---
restart_all --value-size 8
cat >"$tmp/raw.py" <<'PYEOF'
"""Usage: raw.py SERVER_IP PORT CASE

Prints "status=N ops=S0,S1,..." for the reply (numeric XTX_ST_* codes) or
"noreply" when nothing came back within 300 ms.  Cases:
  unknown-op   INSERT table 0 key 9000, then opcode 63 (never assigned)
  bad-table    INSERT table 0 key 9001, then a GET of table 16
  foreign-txn  LOCK_EXCL with a transaction of client 8 in client 7's packet
  short        nops=2 but one op slot in the datagram
  bad-version  protocol version 9
  reserved     reserved header field not zero
  mac          a MAC (hdr.mac not zero) to a server without a secret
  reply-flag   a datagram already flagged as a reply
  truncated    10 bytes
"""
import os
import socket
import struct
import sys

MAGIC = 0x31585458
HDR = struct.Struct("<IBBBBIIQQ")  # struct xtx_hdr
OP = struct.Struct("<BBBBIQQQQ40s")  # struct xtx_op
CLIENT = 7
OP_GET, OP_INSERT, OP_LOCK_EXCL = 16, 17, 5


def hdr(nops, version=2, flags=0, reserved=0, mac=0):
    # a fresh request id per run: the server keeps a window of ids per client
    req_id = (int.from_bytes(os.urandom(6), "little") | 1) << 8
    return HDR.pack(MAGIC, version, flags, nops, 0, CLIENT, reserved, req_id, mac)


def op(opcode, table, key, txn=0, value=b""):
    return OP.pack(opcode, 0, table, len(value), 0, key, txn, 0, 0, value.ljust(40, b"\0"))


def txn_of(client, seq):
    return (client << 48) | seq


def build(case):
    ins = op(OP_INSERT, 0, 9000, value=b"\xaa")
    if case == "unknown-op":
        return hdr(2) + ins + op(63, 0, 1)
    if case == "bad-table":
        return hdr(2) + op(OP_INSERT, 0, 9001, value=b"\xaa") + op(OP_GET, 16, 1)
    if case == "foreign-txn":
        return hdr(1) + op(OP_LOCK_EXCL, 0, 9002, txn=txn_of(8, 1))
    if case == "short":
        return hdr(2) + ins
    if case == "bad-version":
        return hdr(1, version=9) + ins
    if case == "reserved":
        return hdr(1, reserved=1) + ins
    if case == "mac":
        return hdr(1, mac=0x123456789abcdef) + ins
    if case == "reply-flag":
        return hdr(1, flags=1) + ins
    if case == "truncated":
        return hdr(1)[:10]
    raise SystemExit("unknown case " + case)


def main():
    server, port, case = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.3)
    s.sendto(build(case), (server, port))
    try:
        data = s.recv(2048)
    except socket.timeout:
        print("noreply")
        return
    _, _, _, nops, status, _, _, _, _ = HDR.unpack_from(data)
    sts = []
    for i in range(min(nops, (len(data) - HDR.size) // OP.size)):
        sts.append(str(OP.unpack_from(data, HDR.size + i * OP.size)[1]))
    print("status=%d ops=%s" % (status, ",".join(sts)))


main()
PYEOF
raw() { client python3 "$tmp/raw.py" "$(server_ip 0)" "$XTX_PORT" "$1"; }
XTX_PORT=7370
out=$(op 0 --client-id 7 insert 0 5 value=00112233445566778899aabbccddeeff 2>&1)
check "an insert longer than --value-size is refused BAD_ARG ($out)" \
	test -n "$(grep -o 'refused: bad_arg' <<<"$out")"
out=$(op 0 --client-id 7 get 0 5)
check "... and nothing was inserted ($out)" test -n "$(grep -o 'status=not_found' <<<"$out")"
out=$(op 0 --client-id 7 insert 0 5 value=0011223344556677)
check "an insert of --value-size bytes runs ($out)" \
	test -n "$(grep -o 'status=ok version=1' <<<"$out")"
out=$(raw unknown-op)
check "an unknown opcode refuses the packet UNKNOWN_OP ($out)" test "$out" = "status=5 ops=9,5"
out=$(op 0 --client-id 7 get 0 9000)
check "... and its other op did not run ($out)" test -n "$(grep -o 'status=not_found' <<<"$out")"
out=$(raw bad-table)
check "table 16 refuses the packet BAD_ARG ($out)" test "$out" = "status=6 ops=9,6"
out=$(op 0 --client-id 7 get 0 9001)
check "... and its other op did not run ($out)" test -n "$(grep -o 'status=not_found' <<<"$out")"
out=$(raw foreign-txn)
check "another client's transaction is refused BAD_TXN ($out)" test "$out" = "status=11 ops=11"
out=$(op 0 --client-id 7 lock-excl 0 9002 txn=1)
check "... and took no lock ($out)" test -n "$(grep -o 'status=ok' <<<"$out")"
check "fewer op slots than nops: MALFORMED ($(raw short))" test "$(raw short)" = "status=3 ops=9"
out=$(raw bad-version)
check "protocol version 9: BAD_VERSION ($out)" test "$out" = "status=4 ops=9"
check "reserved bits set: MALFORMED ($(raw reserved))" test "$(raw reserved)" = "status=3 ops=9"
check "a MAC without a secret: MALFORMED ($(raw mac))" test "$(raw mac)" = "status=3 ops=9"
check "a datagram flagged as a reply gets no answer" test "$(raw reply-flag)" = noreply
check "a truncated datagram gets no answer" test "$(raw truncated)" = noreply
out=$(op 0 --client-id 2000 ping 0 0 2>&1)
check "a client id over --max-clients is refused BAD_CLIENT ($out)" \
	test -n "$(grep -o 'refused: bad_client' <<<"$out")"

# --- values up to 1 KiB: the value area (include/xtx/proto.h), stored, read back, logged ---
ext() { client python3 "$ROOT/tests/integration/ext_values.py" "$(server_ip "$1")" "$XTX_PORT" "${@:2}"; }
out=$(ext 0 put insert 50 41 | tr '\n' ' ')
check "with --value-size 8 a 41-byte insert in an area is refused BAD_ARG ($out)" \
	test -n "$(grep -o 'status=6 ops=6' <<<"$out")"
restart_all
for n in 1 40 41 512 1024; do
	ext 0 put insert $((3000 + n)) "$n" >/dev/null
	out=$(ext 0 get $((3000 + n)) 1024 | tr '\n' ' ')
	[ "$n" -gt 40 ] && want="vlen=0 ext=1 len=$n value=ok" || want="vlen=$n ext=0 len=[0-9]* value=ok"
	check "a $n-byte value round-trips, in the $( ((n > 40)) && echo area || echo slot) ($out)" \
		test -n "$(grep -oE "op=1 $want" <<<"$out")"
done
out=$(ext 0 get 3041 0 | tr '\n' ' ')
check "a 41-byte value read without an area answers TOO_BIG with its length ($out)" \
	test -n "$(grep -o 'op=29 vlen=0 ext=1 len=41' <<<"$out")"
out=$(ext 0 get 3512 511 | tr '\n' ' ')
check "a 512-byte value read with 511 bytes of room answers TOO_BIG 512 ($out)" \
	test -n "$(grep -o 'op=29 vlen=0 ext=1 len=512' <<<"$out")"
ext 0 put update 3041 1024 >/dev/null
a=$(ext 0 get 3041 1024 | tail -n 1)
ext 0 put update 3041 2 >/dev/null
b=$(ext 0 get 3041 0 | tail -n 1)
ext 0 put update 3041 700 >/dev/null
c=$(ext 0 get 3041 800 | tail -n 1)
check "updates move a value between slot and area (41 -> 1024 -> 2 -> 700: $a; $b; $c)" \
	test "$a $b $c" = "op=1 vlen=0 ext=1 len=1024 value=ok op=1 vlen=2 ext=0 len=0 value=ok \
op=1 vlen=0 ext=1 len=700 value=ok"
out=$(ext 0 two 3100 41 3101 1000 | tr '\n' ' ')
a=$(ext 0 get 3100 48 | tail -n 1)
b=$(ext 0 get 3101 1000 | tail -n 1)
check "two areas in one packet both land ($out: $a; $b)" \
	test "$out $a $b" = "status=1 ops=1,1  op=1 vlen=0 ext=1 len=41 value=ok \
op=1 vlen=0 ext=1 len=1000 value=ok"
for c in ext-over ext-small len-over-cap ext-vlen ext-delete read-len; do
	out=$(ext 0 "$c")
	check "$c: the op is refused BAD_ARG, the packet with it ($out)" test "$out" = "status=6 ops=6"
done
for c in bad-off trailing short-area over-request cap-zero; do
	out=$(ext 0 "$c" | sed 's/,9//g')
	check "$c: the packet is refused MALFORMED ($out)" test "$out" = "status=3 ops=9"
done
out=$(ext 0 get 1 1024 | tail -n 1)
check "... and none of them inserted anything ($out)" test -n "$(grep -o 'op=12' <<<"$out")"
out=$(dump_of 0 | grep '^table=0 key=3101 ')
check "the dump prints a 1000-byte value whole (${#out} characters)" \
	test -n "$(grep -E "vlen=1000 value=[0-9a-f]{2000}$" <<<"$out")"
# logged writes come back after a crash: SIGKILL, then --recover from the log (once the
# seven writes are on disk: a SIGKILL loses what xtx-udpd's ring held, which is its design)
w0=$(log_writes "$tmp/data0")
ext 0 log 1 5 3200 41 3201 1024 3202 3 >/dev/null
ext 0 log 2 6 3203 1000 >/dev/null
ext 0 log 3 7 3204 100 3205 50 >/dev/null
ext 0 log 4 8 3206 512 >/dev/null
wait_until 60 at_least_writes "$tmp/data0" $((${w0:-0} + 7))
kill -9 "$(cat "$(pidfile 0)")"
rm -f "$(pidfile 0)"
start_udpd 0 --recover || fail "xtx-udpd 0 restarts with --recover"
got=""
for k in 3200:41 3201:1024 3202:3 3203:1000 3204:100 3205:50 3206:512; do
	out=$(ext 0 get "${k%:*}" 1024 | tail -n 1)
	grep -q "op=1 .*len=${k#*:} value=ok\|op=1 vlen=${k#*:} .*value=ok" <<<"$out" || got+=" ${k%:*}: $out"
done
check "after SIGKILL, --recover brings back every logged value of 3..1024 bytes${got:-}" \
	test -z "$got"
out=$(ext 0 get 3041 1024 | tail -n 1)
check "... and a plain (unlogged) insert does not come back ($out)" \
	test -n "$(grep -o 'op=12' <<<"$out")"
out=$("$BUILD/xtxctl" --iface lo --data-dir "$tmp/data0" log dump 2>&1)
check "the log dump prints a logged 1024-byte value whole" \
	test -n "$(grep -E "key=3201 .*vlen=1024 value=[0-9a-f]{2048}$" <<<"$out")"

# --- transactions (3 replicas) with values of 1..1024 bytes, then every server crashes ---
restart_all
for ((i = 0; i < NSERVERS; i++)); do wv[$i]=$(log_writes "$tmp/data$i"); done
vals() { client "$BUILD/examples/values" --servers "$(all_server_ips)" "$@"; }
for p in occ 2pl; do
	[ "$p" = occ ] && base=8000 || base=9000
	out=$(vals -P "$p" -k "$base" -c 41 2>&1)
	check "$p: 1..1024-byte values inserted, read, updated, read again ($(tail -n 1 <<<"$out"))" \
		grep -q '^values: ok' <<<"$out"
	check "$p: the first long read learnt its room (a value_room abort, retried)" \
		grep -q 'value_room aborts [1-9]' <<<"$out"
done
out=$(vals -P 2pl -k 9500 -c 42 --declare 2>&1)
check "a room declared ahead reads long values without an abort ($(tail -n 1 <<<"$out"))" \
	grep -q '^values: ok.*value_room aborts 0$' <<<"$out"
out=$(vals -k 8000 -c 43 -g 3 read 2>&1)
check "a read expecting other bytes is caught ($(tail -n 1 <<<"$out"))" \
	grep -q '^values: WRONG' <<<"$out"
# every replica logged the 30 committed writes (an insert of 5 keys and 5 updates, three
# times) before the SIGKILLs: what its ring still held would be lost with it
for ((i = 0; i < NSERVERS; i++)); do
	wait_until 60 at_least_writes "$tmp/data$i" $((${wv[$i]:-0} + 30))
done
for ((i = 0; i < NSERVERS; i++)); do
	kill -9 "$(cat "$(pidfile "$i")")"
	rm -f "$(pidfile "$i")"
done
for ((i = 0; i < NSERVERS; i++)); do
	start_udpd "$i" --recover || fail "xtx-udpd $i restarts with --recover"
done
for k in 8000 9000 9500; do
	out=$(vals -k "$k" -c 44 -g 2 read 2>&1)
	check "after SIGKILL of every server, --recover keeps keys $k.. of 1..1024 bytes \
($(tail -n 1 <<<"$out"))" grep -q '^values: ok' <<<"$out"
done
for ((i = 0; i < NSERVERS; i++)); do
	dump_of "$i" | grep '^table=14 ' >"$tmp/vals$i" || fail "dump server $i"
done
check "the replicas recovered identical long values ($(wc -l <"$tmp/vals0") keys)" \
	bash -c "[ \$(wc -l <$tmp/vals0) = 15 ] && cmp -s $tmp/vals0 $tmp/vals1 && cmp -s $tmp/vals0 $tmp/vals2"
# lost requests and replies: grants with areas, and TOO_BIG answers, replayed from the record
restart_all --threads 2 --drop-request-ppm 30000 --drop-reply-ppm 30000
rt=0
for p in occ 2pl; do
	[ "$p" = occ ] && base=10000 || base=11000
	out=$(vals -P "$p" -k "$base" -c 45 2>&1)
	check "$p under 3% loss: long values written and read back ($(tail -n 1 <<<"$out"))" \
		grep -q '^values: ok' <<<"$out"
	rt=$((rt + $(sed -n 's/.*retransmits \([0-9]*\).*/\1/p' <<<"$out" | tail -n 1)))
done
check "... with requests retransmitted ($rt)" test "$rt" -gt 0

# --- logs and leases: a logged holder keeps its lock past the lease, others lose it ---
stop_udpd 1
start_udpd 1 --lock-lease 100 --data-dir "$tmp/txlog" || fail "xtx-udpd 1 with --data-dir"
out=$(op 1 --client-id 7 lock-excl 0 1 txn=1)
check "txn 1 locks key 1 ($out)" test -n "$(grep -o 'status=ok' <<<"$out")"
out=$(op 1 --client-id 7 lock-excl 0 2 txn=1)
check "txn 1 locks key 2 ($out)" test -n "$(grep -o 'status=ok' <<<"$out")"
out=$(op 1 --client-id 7 log-append 0 1 txn=1 version=5 value=aa)
check "the first append is entry 0 ($out)" test -n "$(grep -o 'status=ok version=0' <<<"$out")"
out=$(op 1 --client-id 7 log-append 0 1 txn=1 version=5 value=aa flags=last)
check "the second append is entry 1 ($out)" test -n "$(grep -o 'status=ok version=1' <<<"$out")"
out=$(op 1 --client-id 7 read 0 1 txn=1)
check "the logged lock says LOGGED and MINE ($out)" test -n "$(grep -o 'flags=0x45' <<<"$out")"
sleep 0.3	# past the lease (100 ms, the subject)
out=$(op 1 --client-id 7 lock-excl 0 1 txn=2)
check "past the lease a logged lock is not reclaimed ($out)" \
	test -n "$(grep -o 'status=rejected' <<<"$out")"
out=$(op 1 --client-id 7 lock-excl 0 2 txn=2 flags=no-value)
check "past the lease an unlogged lock is reclaimed ($out)" \
	test -n "$(grep -o 'status=ok.*flags=0x15' <<<"$out")"
stop_udpd 1
check "the drained log holds both entries, CRCs and seqs verified" \
	test "$(log_records "$tmp/txlog")" = 2
out=$("$BUILD/xtxctl" --iface lo --data-dir "$tmp/txlog" log dump 2>&1)
check "the entries on disk are the ones appended ($(grep -c '^cpu=' <<<"$out") lines)" \
	test -n "$(grep 'seq=1 .*key=1 version=5 flags=last.*value=aa' <<<"$out")"

# --- an entry leaves the ring only once synced: a full ring answers LOG_FULL till then ---
# the drain's first sync is a whole period (10 s) after start: these appends come well before
start_udpd 1 --log-ring 2 --log-sync 10s --data-dir "$tmp/fulllog" || fail "xtx-udpd 1, ring of 2"
op 1 --client-id 7 log-append 0 1 txn=3 version=1 value=aa >/dev/null
op 1 --client-id 7 log-append 0 1 txn=3 version=1 value=aa >/dev/null
out=$(op 1 --client-id 7 log-append 0 1 txn=3 version=1 value=aa)
check "a third append to a ring of 2 before the sync is refused ($out)" \
	test -n "$(grep -o 'status=log_full' <<<"$out")"
for ((i = 0; i < 120; i++)); do
	out=$(op 1 --client-id 7 log-append 0 1 txn=3 version=1 value=aa)
	grep -q 'status=log_full' <<<"$out" || break
	sleep 0.5
done
check "once synced the ring takes appends again ($out)" \
	test -n "$(grep -o 'status=ok version=2' <<<"$out")"
stop_udpd 1
check "all 3 accepted entries are on disk" test "$(log_records "$tmp/fulllog")" = 3

# --- echo mode answers without touching state ---
stop_udpd 2
start_udpd 2 --echo || fail "xtx-udpd --echo"
op 2 --client-id 7 insert 0 77 value=aa >/dev/null
out=$(op 2 --client-id 7 delete 0 77)
check "echo mode: a delete answers OK without a stored key ($out)" \
	test -n "$(grep -o 'status=ok version=0' <<<"$out")"

# --- the same ops by hand against the XDP server (server 0) and xtx-udpd (server 1) ---
# Every answer must match but for grant tokens (numbered per slot vs per stripe) and
# log sequence numbers (per CPU vs per thread).  Leases long enough to never expire here.
stop_udpd 0
stop_udpd 1
start_udpd 1 --lock-lease 60000 || fail "xtx-udpd 1 for the comparison"
if make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--lock-lease 60s" >/dev/null; then
	ops=(
	"insert 0 1 value=01" "get 0 1" "update 0 1 value=0202" "delete 0 1" "get 0 1"
	"delete 0 1" "insert 0 1 value=03" "update 0 2 value=01" "insert 0 1 value=04"
	"occ-lock 0 1 txn=1" "occ-lock 0 1 txn=1" "occ-lock 0 1 txn=2"
	"validate 0 1 txn=2 version=4" "validate 0 1 txn=1 version=4"
	"validate 0 1 txn=1 version=2" "read 0 1 txn=1" "read 0 1 txn=2"
	"lock-shared 0 1 txn=1" "unlock-excl 0 1 txn=1 token=999"
	"unlock-shared 0 1 txn=3 token=999" "occ-lock 0 5 txn=7" "validate 0 5 txn=8 version=0"
	"validate 0 6 txn=7 version=1" "lock-shared 0 9 txn=10" "lock-shared 0 9 txn=11"
	"lock-excl 0 9 txn=10" "lock-shared 0 10 txn=12" "lock-excl 0 10 txn=12"
	"read 0 10 txn=13" "commit-backup 0 20 txn=1 version=5 value=cc"
	"commit-backup 0 20 txn=1 version=5 value=dd" "commit-backup 0 20 txn=1 version=6 value=ee"
	"get 0 20" "commit-backup 0 20 txn=1 version=7 flags=delete" "get 0 20"
	"occ-lock 0 20 txn=30" "commit-backup 0 21 txn=1 version=3 flags=delete"
	"occ-lock 0 21 txn=31" "commit-primary 0 22 txn=1 version=0 value=aa"
	"commit-primary 0 22 txn=1 version=0 value=aa" "commit-primary 0 22 txn=1 version=5"
	"commit-primary 0 22 txn=1 version=1 flags=delete" "get 0 22" "insert 0 22 value=01"
	"lock-excl 0 23 txn=40" "log-append 0 23 txn=40 version=1 value=aa" "read 0 23 txn=40"
	"counter-add 0 3 version=5" "counter-add 0 3 version=7" "stats 0 1000"
	)
	same=0
	answered=0
	for o in "${ops[@]}"; do
		# shellcheck disable=SC2086 # each entry is an op and its fields
		a=$(op 0 --client-id 7 $o 2>&1 | sed -E 's/ (token|tries)=[0-9]+//g')
		# shellcheck disable=SC2086
		b=$(op 1 --client-id 7 $o 2>&1 | sed -E 's/ (token|tries)=[0-9]+//g')
		if [[ $o == log-append* ]]; then
			a=$(sed -E 's/ version=[0-9]+//' <<<"$a")
			b=$(sed -E 's/ version=[0-9]+//' <<<"$b")
		fi
		# both down would also agree: only answers count
		grep -q "status=" <<<"$a" && grep -q "status=" <<<"$b" && answered=$((answered + 1))
		if [ "$a" = "$b" ]; then
			same=$((same + 1))
		else
			echo "    $o: xtxd '$a', xtx-udpd '$b'"
		fi
	done
	check "both servers answered all ${#ops[@]} hand-made ops ($answered)" \
		test "$answered" -eq "${#ops[@]}"
	check "xtx-udpd answers $same of ${#ops[@]} hand-made ops as the XDP server does" \
		test "$same" -eq "${#ops[@]}"
	make -s -C "$ROOT" unload IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" >/dev/null
else
	fail "make load (XDP server) for the comparison"
fi

# --- a shared secret: the MAC of every byte of a request, as XDP checks it (include/xtx/mac.h) ---
printf '%s\n' 8899aabbccddeeff0011223344556677 >"$tmp/secret"
printf '%s\n' 8899aabbccddeeff0011223344556676 >"$tmp/secret.other"
chmod 600 "$tmp/secret" "$tmp/secret.other"
restart_all --secret-file "$tmp/secret"
OP_SECRET="--secret-file $tmp/secret"
out=$(op 0 --client-id 7 counter-add 0 40 version=2 2>&1)
check "xtx-udpd --secret-file: an op with the secret's MAC is served ($out)" \
	test -n "$(grep -o 'status=ok version=2' <<<"$out")"
OP_SECRET=
a=$(op 0 --client-id 7 --timeout 2ms counter-add 0 40 version=2 2>&1)
b=$(op 0 --client-id 7 --timeout 2ms --secret-file "$tmp/secret.other" counter-add 0 40 \
	version=2 2>&1)
OP_SECRET="--secret-file $tmp/secret"
out=$(op 0 --client-id 7 counter-add 0 40 version=0 2>&1)
check "... one without a MAC, or with another secret's, gets no answer and runs nothing ($out)" \
	test -n "$(grep -o 'no answer' <<<"$a")" -a -n "$(grep -o 'no answer' <<<"$b")" \
	-a -n "$(grep -o 'status=ok version=2' <<<"$out")"
bad0=$(sum_counter $CTR_BAD_MAC)
out=$(client "$BUILD/xtxbench" bank --servers "$(all_server_ips)" --accounts 16 --duration 1s \
	--json --secret-file "$tmp/secret" 2>&1)
n=$(json_field "$out" transfers)
check "... xtxbench bank with the secret commits transfers (${n:-0})" test "${n:-0}" -gt 0
out=$(client "$BUILD/xtxbench" bank --servers "$(all_server_ips)" --accounts 16 --duration 1s \
	--json --secret-file "$tmp/secret.other" 2>&1)
n=$(json_field "$out" transfers)
bad1=$(sum_counter $CTR_BAD_MAC)
check "... with another secret none (${n:-0}), dropped as bad_mac ($bad0 -> $bad1)" \
	test "${n:-0}" -eq 0 -a "$bad1" -gt "$bad0"
bad0=$(counter 0 $CTR_BAD_MAC)
out=$(client python3 "$ROOT/tests/integration/mac_attack.py" "$(server_ip 0)" "$XTX_PORT" \
	"$tmp/secret" flips 41)
sent=$(kv_field "$out" sent)
bad1=$(counter 0 $CTR_BAD_MAC)
# the magic's 4 bytes, and the flags byte (then a reply's), are dropped before the MAC
check "... each byte of a request flipped: dropped, as bad_mac; the request as signed runs \
once ($out; bad_mac +$((bad1 - bad0)))" \
	test "$(kv_field "$out" replies)" = 1 -a "$(kv_field "$out" version)" = 1 \
	-a "$((bad1 - bad0))" -eq "$((${sent:-0} - 5))"
out=$(client python3 "$ROOT/tests/integration/mac_attack.py" "$(server_ip 0)" "$XTX_PORT" \
	"$tmp/secret" swap 42)
c=$(op 0 --client-id 7 counter-add 0 42 version=0 2>&1)
check "... a GET's header and MAC over a COUNTER_ADD: dropped ($out; $c)" \
	test "$out" = "get=ok swapped=noreply" -a -n "$(grep -o 'status=ok version=0' <<<"$c")"
OP_SECRET=

for ((i = 0; i < NSERVERS; i++)); do stop_udpd "$i"; done
check "every xtx-udpd stopped on SIGTERM and removed its pidfile" \
	bash -c "! ls $tmp/udpd*.pid 2>/dev/null | grep -q ."
finish
