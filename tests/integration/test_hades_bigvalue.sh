#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# HADES writes of 41, 512 and 1024 bytes on 3 xtx servers: through libxtx, replicas identical;
# a coordinator gone after its Acks (the resolver installs the staged values), validated at one
# replica only (the others roll forward), a stop between Ack and validation (the carry file),
# and a SIGKILL of every xtxd (recovery from the logs).
# checks: 48 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=3

# Leases are not the subject: a hand-played coordinator takes a process start per op, which
# a busy machine stretches past any short lease.  --resolve-after is: the resolver must wait
# out the few ops a coordinator takes between an Ack and its validation (or a stop), and
# then act, which each check waits for.
RARGS="--peers $(all_server_ips) --resolve-after 5s --hades-lease 60s --lock-lease 60s"
setup_servers $RARGS
tmp=$(mktemp -d /tmp/xtx-test-hades-big.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM
SIZES=1,40,41,512,1024
vals() { client "$BUILD/examples/values" --servers "$(all_server_ips)" -P hades "$@"; }
ok() { grep -q '^values: ok' <<<"$1"; }
# field, op and st: the hand-played coordinator, client 9 (lib.sh)
# hexv LEN CHAR: LEN bytes of CHAR, in hex
hexv() { head -c "$1" /dev/zero | tr '\0' "$2" | xxd -p | tr -d '\n'; }
# rows KEY LEN CHAR: how many servers hold table 0's KEY at version 2 with LEN bytes of CHAR
rows() {
	local i n=0 line
	for i in 0 1 2; do
		line=$(ctl "$i" dump --table 0 | grep "^table=0 key=$1 ")
		if [ "$line" = "table=0 key=$1 version=2 vlen=$2 value=$(hexv "$2" "$3")" ]; then
			n=$((n + 1))
		else
			echo "# server $i: $(cut -c1-60 <<<"$line") ($(wc -l <<<"$line") lines)" >&2
		fi
	done
	echo "$n"
}
LENS=(41 512 1024)
# stage TXN BASEKEY CHAR: keys BASEKEY+0..2 (41, 512, 1024 bytes of CHAR) inserted short at
# version 1 everywhere, write-intended at the primary, and the transaction's HINTENDs Acked at
# all three servers (the last of each carries LAST)
stage() {
	local txn=$1 k=$2 c=$3 i j flags out good=1
	for i in 0 1 2; do
		for j in 0 1 2; do
			[ "$(st "$i" insert 0 $((k + j)) value=11)" = ok ] || good=0
		done
	done
	out=$(op 0 hwrite 0 "$k" txn="$txn" flags=begin)
	[ "$(field "$out" version)" = 1 ] || good=0
	for j in 1 2; do
		out=$(op 0 hwrite 0 $((k + j)) txn="$txn")
		[ "$(field "$out" version)" = 1 ] || good=0
	done
	for i in 0 1 2; do
		for j in 0 1 2; do
			flags=""
			[ "$j" = 0 ] && [ "$i" != 0 ] && flags=begin
			[ "$j" = 2 ] && flags+=${flags:+,}last
			[ "$i" != 0 ] && flags+=${flags:+,}replica
			out=$(st "$i" hintend 0 $((k + j)) txn="$txn" version=1 \
				value="$(hexv "${LENS[$j]}" "$c")" participants=0,1,2 ${flags:+flags=$flags})
			[ "$out" = ok ] || { good=0; echo "# server $i key $((k + j)): $out"; }
		done
	done
	[ "$good" = 1 ]
}

# ---- through libxtx: values of every size class, written and read under HADES ----
out=$(vals -k 8000 -c 41 -z "$SIZES" 2>&1)
check "hades: values of $SIZES bytes inserted, read, updated, read again ($(tail -n 1 <<<"$out"))" \
	ok "$out"
out=$(vals -k 8000 -c 42 -z "$SIZES" -g 3 write 2>&1)
check "hades: overwritten blind ($(tail -n 1 <<<"$out"))" ok "$out"
out=$(vals -k 8000 -c 43 -z "$SIZES" -g 3 read 2>&1)
check "... and read back byte for byte ($(tail -n 1 <<<"$out"))" ok "$out"
for ((i = 0; i < NSERVERS; i++)); do
	ctl "$i" dump --table 14 >"$tmp/lib$i" || fail "dump server $i"
done
check "the replicas hold identical values and versions ($(wc -l <"$tmp/lib0") keys, \
$(grep -c 'vlen=1024 ' "$tmp/lib0") of 1024 bytes)" \
	bash -c "[ \$(wc -l <$tmp/lib0) = 5 ] && [ \$(grep -c 'vlen=1024 ' $tmp/lib0) = 1 ] &&
		cmp -s $tmp/lib0 $tmp/lib1 && cmp -s $tmp/lib0 $tmp/lib2"

# ---- (a) Acked at all three participants, then the coordinator vanishes: the resolver installs ----
check "txn 1 stages 41, 512 and 1024 bytes at every participant (Acked)" stage 1 100 a
out=$(op 0 hvalidate 0 102 txn=1)
check "a validation without room answers too_big with the staged length ($out)" \
	test "$(field "$out" status)" = too_big -a "$(field "$out" vlen)" = 1024
check "all three servers validate txn 1 themselves" \
	wait_log "hades txn $(hex_txn 1) validated here: 3 staged writes, 3 installed" 0 1 2
for j in 0 1 2; do
	check "every replica holds key $((100 + j)): ${LENS[$j]} bytes at version 2" \
		test "$(rows $((100 + j)) "${LENS[$j]}" a)" = 3
done
out=$(op 0 get 0 102 room=1024)
check "the primary serves the 1024 bytes from xtxd's store ($(cut -c1-60 <<<"$out"))" \
	grep -q "status=ok version=2 .*vlen=1024 value=$(hexv 1024 a)" <<<"$out"
check "the coordinator's late HVALIDATE: already applied" \
	test "$(st 0 hvalidate 0 102 txn=1 value="$(hexv 1024 a)" flags=last)" = already_applied

# ---- (b) validated at one replica by the coordinator, which then vanishes ----
check "txn 2 stages 41, 512 and 1024 bytes at every participant (Acked)" stage 2 200 b
out=$(op 2 hvalidate 0 202 txn=2 value="$(hexv 1024 b)" flags=replica)
check "replica 2 validates the 1024-byte write (version $(field "$out" version))" \
	test "$(field "$out" status)" = ok -a "$(field "$out" version)" = 2
out=$(op 2 get 0 202 room=1024)
check "... and serves the staged bytes at once" \
	grep -q "status=ok version=2 .*vlen=1024 value=$(hexv 1024 b)" <<<"$out"
check "the others roll forward (replica 2 installs the two left)" \
	wait_log "hades txn $(hex_txn 2) validated here: 3 staged writes, 3 installed" 0 1
check "... and replica 2 installs the two left" \
	wait_log "hades txn $(hex_txn 2) validated here: 3 staged writes, 2 installed" 2
for j in 0 1 2; do
	check "every replica holds key $((200 + j)): ${LENS[$j]} bytes at version 2" \
		test "$(rows $((200 + j)) "${LENS[$j]}" b)" = 3
done

# ---- (c) the primary stopped between its Ack and validation keeps the staged values ----
check "txn 40 stages 41, 512 and 1024 bytes at every participant (Acked)" stage 40 400 c
ctl 0 unload >/dev/null
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="$RARGS" >/dev/null
check "the primary restarts from disk (unload, load)" test $? -eq 0
check "... having saved txn 40's slot at the stop" \
	grep -q "stop: 1 HADES transactions committing here saved" <(XLOG 0)
check "... and put it back before serving" \
	grep -q "recovery: 1 HADES transactions committing at the stop put back" <(XLOG 0)
check "the participants validate txn 40" \
	wait_log "hades txn $(hex_txn 40) validated here: 3 staged writes, 3 installed" 0 1 2
for j in 0 1 2; do
	check "every replica holds key $((400 + j)): ${LENS[$j]} bytes at version 2" \
		test "$(rows $((400 + j)) "${LENS[$j]}" c)" = 3
done
# a carry file of another format is refused by name
d=/var/lib/xtx/$(server_ns 0)-$(server_dev 0)
check "txn 41 stages at every participant (Acked)" stage 41 500 d
ctl 0 unload >/dev/null
check "a clean stop saves it" test -e "$d/hades.xcarry"
cp "$d/hades.xcarry" "$tmp/carry"
printf '\001\000\000\000' | dd of="$d/hades.xcarry" bs=1 seek=8 conv=notrunc status=none
out=$(make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="$RARGS" 2>&1)
check "a carry file of format 1 is refused, naming the format" \
	grep -q "hades.xcarry is of format 1; this xtxd reads format 2" <<<"$out$(XLOG 0)"
ctl 0 unload --force >/dev/null 2>&1
cp "$tmp/carry" "$d/hades.xcarry"
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" ARGS="$RARGS" >/dev/null
check "the file as saved is put back" \
	wait_log "hades txn $(hex_txn 41) validated here: 3 staged writes, 3 installed" 0 1 2
for j in 0 1 2; do
	check "every replica holds key $((500 + j)): ${LENS[$j]} bytes at version 2" \
		test "$(rows $((500 + j)) "${LENS[$j]}" d)" = 3
done

# ---- (d) every xtxd killed, restarted from its logs ----
for ((i = 0; i < NSERVERS; i++)); do
	ctl "$i" dump >"$tmp/before$i" || fail "dump server $i"
done
pids=()
for ((i = 0; i < NSERVERS; i++)); do
	pids+=("$(cat "/run/xtx/$(server_ns "$i")-$(server_dev "$i").pid")")
	kill -9 "${pids[$i]}"
done
gone() { local p; for p in "${pids[@]}"; do [ -e "/proc/$p" ] && return 1; done; return 0; }
wait_until 30 gone
for ((i = 0; i < NSERVERS; i++)); do
	make -s -C "$ROOT" load IFACE="$(server_dev "$i")" NETNS="$(server_ns "$i")" \
		ARGS="$RARGS" >/dev/null || fail "xtxd $i restarts after SIGKILL"
done
for ((i = 0; i < NSERVERS; i++)); do
	ctl "$i" dump >"$tmp/after$i" || fail "dump server $i"
	check "server $i after SIGKILL: its dump is what it was ($(grep -c 'vlen=1024 ' \
"$tmp/after$i") values of 1024 bytes)" cmp -s "$tmp/before$i" "$tmp/after$i"
	diff "$tmp/before$i" "$tmp/after$i" | cut -c1-90 | head -n 6 | sed 's/^/# /'
done
out=$(vals -k 8000 -c 44 -z "$SIZES" -g 3 read 2>&1)
check "... and libxtx reads its values back ($(tail -n 1 <<<"$out"))" ok "$out"

# ---- (e) a big install evicting a cached copy, its bucket taken over while xtxd stands still ----
# XDP has logged the write and released the slot when it hands the install over: xtxd must run
# it all the same, or the transaction would answer committed with its write missing.
T=$(hex_txn 60)
check "server 0: key 900 cached small (version 1)" test "$(st 0 insert 0 900 value=11)" = ok
check "txn 60 intends a 512-byte write of it" \
	test "$(st 0 hwrite 0 900 txn="$T" flags=begin)/$(st 0 hintend 0 900 txn="$T" version=1 \
		value="$(hexv 512 a)" participants=0 flags=last)" = ok/ok
PID0=$(cat "/run/xtx/$(server_ns 0)-$(server_dev 0).pid")
stat0() { json_field "$(ctl 0 stats --json)" "$1"; }
deferred0=$(stat0 kv_defer_packets)
takeovers0=$(stat0 kv_lease_takeover)
kill -STOP "$PID0"
# (resent every 500 ms, not 20: its answer comes once xtxd runs again, seconds later)
op 0 -t 500ms hvalidate 0 900 txn="$T" version=1 value="$(hexv 512 a)" flags=last >"$tmp/hv" &
hv=$!
# XDP handed the install to the stopped xtxd, the bucket locked meanwhile...
handed() { [ "$(stat0 kv_defer_packets)" -gt "$deferred0" ]; }
wait_until 60 handed
sleep 0.1	# ... longer than the KV lease (50 ms), which a read then takes over
op 0 get 0 900 >/dev/null &
taken() { [ "$(stat0 kv_lease_takeover)" -gt "$takeovers0" ]; }
wait_until 60 taken
check "a read took the bucket over while xtxd stood still (kv_lease_takeover $takeovers0 -> $(stat0 kv_lease_takeover))" taken
kill -CONT "$PID0"
wait
out=$(cat "$tmp/hv")
check "its validation is answered ok, though the bucket was taken over ($(field "$out" status))" \
	test "$(field "$out" status)" = ok
out=$(op 0 get 0 900 room=1024)
check "... and the write is there: version 2, 512 bytes ($(field "$out" status) v$(field "$out" version))" \
	test "$(field "$out" version)/$(field "$out" value)" = "2/$(hexv 512 a)"

# ---- (f) a full overflow store: a decided install still goes in, past --overflow-max ----
ctl 0 unload --force >/dev/null 2>&1
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="$RARGS --overflow-max 2 --fresh" >/dev/null ||
	fail "server 0 reloads with --overflow-max 2"
for k in 950 951; do
	op 0 insert 0 "$k" value="$(hexv 100 b)" >/dev/null
done
out=$(op 0 insert 0 953 value="$(hexv 100 b)")
check "server 0's store is full: a third big insert is refused ($(field "$out" status))" \
	test "$(field "$out" status)" = full
T=$(hex_txn 61)
out=$(op 0 hwrite 0 952 txn="$T" flags=begin)
base=$(field "$out" version)
check "txn 61 intends a 512-byte write of new key 952 (base v$base)" \
	test "$(field "$out" status)/$(st 0 hintend 0 952 txn="$T" version="$base" \
		value="$(hexv 512 c)" participants=0 flags=last)" = ok/ok
out=$(op 0 hvalidate 0 952 txn="$T" version="$base" value="$(hexv 512 c)" flags=last)
check "its validation is answered ok, the store full or not ($(field "$out" status))" \
	test "$(field "$out" status)" = ok
out=$(op 0 get 0 952 room=1024)
check "... and the write is there ($(field "$out" status) v$(field "$out" version))" \
	test "$(field "$out" version)/$(field "$out" value)" = "$((base + 1))/$(hexv 512 c)"
finish
