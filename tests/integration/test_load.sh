#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Bulk load: generated and file keys into a tiny cache, checked through dump and the data path.
# checks: 45 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=1

# 64 buckets of 8 ways: of 2000 keys at most 512 fit the kernel cache.
setup_servers --kv-buckets 64 --rare-threads 1
SRV=$(server_ip 0)
tmp=$(mktemp -d /tmp/xtx-test-load.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM

# The generator's documented value function, recomputed here independently
# (splitmix64 in bash's wrapping 64-bit arithmetic; >> is arithmetic, so
# logical shifts are masked).
lsr() { echo $((($1 >> $2) & ((1 << (64 - $2)) - 1))); }
mix64() {
	local x=$(($1 + 0x9e3779b97f4a7c15))
	x=$(((x ^ $(lsr $x 30)) * 0xbf58476d1ce4e5b9))
	x=$(((x ^ $(lsr $x 27)) * 0x94d049bb133111eb))
	echo $((x ^ $(lsr $x 31)))
}
# gen_value SEED TABLE KEY VSIZE: the value's hex
gen_value() {
	local h base w i hex=""
	h=$(mix64 $(($3 ^ ($2 << 56) ^ ($2 * 0x2545f4914f6cdd1d))))
	base=$((h ^ $(mix64 "$1")))
	for ((i = 0; i < $4; i++)); do
		((i % 8)) || w=$(mix64 $((base + i / 8)))
		hex+=$(printf '%02x' $(((w >> (8 * (i % 8))) & 255)))
	done
	echo "$hex"
}

# The final line, and its numbers N K U D
FINAL='^loaded [0-9]+ keys in [0-9.]+ s \([0-9]+ keys/s\): [0-9]+ in the kernel cache, '
FINAL+='[0-9]+ in the overflow store, [0-9]+ duplicates skipped$'
counts() { grep -E "$FINAL" <<<"$1" | awk '{ print $2, $9, $14, $19 }'; }
# `xtxctl load --print` lines as `xtxctl dump` prints keys loaded at version 1
as_dump() {
	awk '{ printf "table=%s key=%s version=1 vlen=%d value=%s\n", $1, $2, length($3) / 2, $3 }'
}
field() { grep -o "\b$2=[^ ]*" <<<"$1" | head -n 1 | cut -d= -f2; }
store_keys() { ctl 0 rare-stats --json | grep -o '"store_keys":[0-9]*' | cut -d: -f2; }

# ---- generated keys: most of them land in the overflow store ----
out=$(ctl 0 load --count 2000 --table 3 --first 1000 --seed 42 2>"$tmp/err")
check "load --count 2000 exits 0 ($(head -c 200 "$tmp/err"))" test $? -eq 0
read -r n k u d <<<"$(counts "$out")"
check "the final line: '$out'" grep -Eq "$FINAL" <<<"$out"
check "2000 keys loaded, none duplicate" test "${n:-0}.${d:-x}" = "2000.0"
check "kernel $k + store $u = 2000" test $((${k:-0} + ${u:-0})) -eq 2000
check "the kernel cache took what fits ($k of 512 ways)" test "${k:-0}" -gt 0 -a "${k:-0}" -le 512
check "xtxd's store holds the other $u" test "$(store_keys)" = "${u:-x}"

ctl 0 load --count 2000 --table 3 --first 1000 --seed 42 --print | as_dump >"$tmp/expect"
ctl 0 dump >"$tmp/dump"
check "dump holds exactly the 2000 generated keys at version 1" cmp -s "$tmp/expect" "$tmp/dump"
cmp -s "$tmp/expect" "$tmp/dump" || diff "$tmp/expect" "$tmp/dump" | head -n 6 | sed 's/^/    /'
bad=0
for key in 1000 1001 1777 2999; do
	want="table=3 key=$key version=1 vlen=40 value=$(gen_value 42 3 "$key" 40)"
	grep -qx "$want" "$tmp/dump" || { bad=1; echo "    key $key: not '$want'"; }
done
check "values match the documented generator, recomputed in bash" test $bad -eq 0

# ---- the data path: XDP answers kernel keys, xtxd the stored ones (its filter bits are set) ----
bad=0
for key in 1000 1001 1002 1100 1234 1500 1666 1999 2000 2500 2998 2999; do
	a=$(client "$BUILD/xtxbench" op --server "$SRV" --client-id 71 get 3 "$key")
	if [ "$(field "$a" status).$(field "$a" version).$(field "$a" value)" != \
	     "ok.1.$(gen_value 42 3 "$key" 40)" ]; then
		bad=1
		echo "    get 3 $key: $a"
	fi
done
check "GET through the data path returns loaded keys, version 1" test $bad -eq 0
a=$(client "$BUILD/xtxbench" op --server "$SRV" --client-id 71 get 3 3000)
check "a key past the range is not found ($(field "$a" status))" \
	test "$(field "$a" status)" = not_found
# those GETs wrote dirty kernel keys back to make room: still the same keys and versions
ctl 0 dump >"$tmp/dump"
check "after the GETs, dump still holds exactly the loaded keys" cmp -s "$tmp/expect" "$tmp/dump"

# ---- the same range again: every key a duplicate, nothing changes ----
out=$(ctl 0 load --count 2000 --table 3 --first 1000 --seed 7)
read -r n k u d <<<"$(counts "$out")"
check "a second load reports 2000 duplicates ($out)" test "${n:-x}.${d:-x}" = "0.2000"
ctl 0 dump >"$tmp/dump"
check "a second load overwrites nothing" cmp -s "$tmp/expect" "$tmp/dump"

# ---- a file: comments, blank lines, short and empty values, hex keys ----
cat >"$tmp/good" <<EOF
# table key value
5 1 0a0b0c   # trailing comment

5 2
	5   0x10   $(printf 'ff%.0s' {1..40})
3 1000 00
EOF
out=$(ctl 0 load --file "$tmp/good" 2>"$tmp/err")
check "load --file exits 0 ($(head -c 200 "$tmp/err"))" test $? -eq 0
read -r n k u d <<<"$(counts "$out")"
check "the file loaded 3 keys and skipped 1 duplicate ($out)" test "${n:-x}.${d:-x}" = "3.1"
ctl 0 dump --table 5 >"$tmp/dump5"
{
	echo "table=5 key=1 version=1 vlen=3 value=0a0b0c"
	echo "table=5 key=2 version=1 vlen=0 value="
	echo "table=5 key=16 version=1 vlen=40 value=$(printf 'ff%.0s' {1..40})"
} >"$tmp/expect5"
check "dump --table 5 holds the file's keys" cmp -s "$tmp/expect5" "$tmp/dump5"
cmp -s "$tmp/expect5" "$tmp/dump5" || diff "$tmp/expect5" "$tmp/dump5" | sed 's/^/    /'
check "the duplicate in the file did not overwrite key 1000" \
	grep -qx "table=3 key=1000 version=1 vlen=40 value=$(gen_value 42 3 1000 40)" \
	<(ctl 0 dump --table 3)

# ---- a bad line: its number in the error, and nothing loaded ----
ctl 0 dump >"$tmp/before"
printf '6 100 00\n6 101 01\n# fine so far\n6 102 0g\n6 103 03\n' >"$tmp/bad"
ctl 0 load --file "$tmp/bad" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "a bad line fails the load (exit $rc)" test $rc -ne 0
check "the error names line 4: $(cat "$tmp/err")" grep -q "line 4: value '0g' is not hex" "$tmp/err"
ctl 0 dump >"$tmp/after"
check "nothing of the bad file was loaded" cmp -s "$tmp/before" "$tmp/after"

# ---- loads while the server serves: the buckets are shared with XDP and the rare path ----
# (the kv run lasts until the loads are done: SIGINT ends it, checked as a timed end)
rx() { json_field "$(ctl 0 stats --json)" rx; }
more_rx() { [ "$(rx)" -gt $(($1 + 100)) ]; }
rx0=$(rx)
client "$BUILD/xtxbench" kv --servers "$SRV" --threads 2 --keys 200 --key-base 5000000 \
	--duration 600 --check --dump-file "$tmp/model" --json >"$tmp/kv" 2>"$tmp/kverr" &
bench=$!
wait_until 60 more_rx "$rx0"
bad=0
for ((i = 0; i < 20; i++)); do
	out=$(ctl 0 load --count 1500 --first $((i * 1500)) --table 7 2>&1)
	read -r n k u d <<<"$(counts "$out")"
	[ "${n:-x}" = 1500 ] || { bad=1; echo "    load $i: $out"; }
	sleep 0.1
done
pkill -INT -P "$bench"
wait "$bench"
rc=$?
check "20 loads of 1500 keys while xtxbench kv ran" test $bad -eq 0
check "xtxbench kv --check agreed with its model throughout (exit $rc)" test $rc -eq 0
[ "$rc" -eq 0 ] || grep -v '^t=' "$tmp/kverr" | head -n 6 | sed 's/^/    /'
ctl 0 dump >"$tmp/dump"
check "the traffic's keys are exactly the model's" \
	cmp -s "$tmp/model" <(grep -E '^table=0 key=5[0-9]{6} ' "$tmp/dump")
# sharing buckets with deletes, the loaded keys start above the floors those raised
ctl 0 load --count 30000 --table 7 --print | as_dump | sed 's/ version=[0-9]*//' >"$tmp/expect7"
check "the 30000 keys loaded meanwhile hold the generator's values" \
	cmp -s "$tmp/expect7" <(grep '^table=7 ' "$tmp/dump" | sed 's/ version=[0-9]*//')

# ---- a tiny overflow store: a clear error, and what was loaded stays ----
ctl 0 unload >/dev/null
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--fresh --kv-buckets 64 --rare-threads 1 --overflow-max 100" >/dev/null ||
	{ fail "reload with --overflow-max 100"; finish; }
out=$(ctl 0 load --count 2000 2>"$tmp/err")
rc=$?
check "a load past --overflow-max fails (exit $rc)" test $rc -ne 0
full="overflow store full (100 keys, xtxd --overflow-max) after [0-9]* keys: those stay loaded"
check "the error says so: $(cat "$tmp/err")" grep -q "$full" "$tmp/err"
read -r n k u d <<<"$(counts "$out")"
check "the final line still counts them: $out" \
	test "${u:-x}" = 100 -a $((${k:-0} + 100)) = "${n:-x}"
check "dump holds the $n keys loaded" test "$(ctl 0 dump | wc -l)" = "${n:-x}"

# ---- --capacity: one knob sizes the maps; info shows how full; a populate that cannot fit ----
ctl 0 unload >/dev/null
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--fresh --capacity 5000 --rare-threads 1" >/dev/null ||
	{ fail "reload with --capacity 5000"; finish; }
info=$(ctl 0 info --json)
# 1.5 x 5000 slots: 7500 lock slots, 938 buckets of 8 ways (7504 slots); the store takes 5000 + 1/8
check "--capacity 5000 sizes the maps: $info" test "$(json_field "$info" capacity)" = 5000 \
	-a "$(json_field "$info" kv_buckets)" = 938 -a "$(json_field "$info" kv_slots)" = 7504 \
	-a "$(json_field "$info" lock_slots)" = 7500 -a "$(json_field "$info" store_max)" = 5625
log=/run/xtx/$(server_ns 0)-$(server_dev 0).log
sizes="xtxd: sizes for --capacity 5000 keys: kernel cache 938 buckets x 8 ways \\(0 MiB\\), lock "
sizes+="table 7500 slots \\(0 MiB\\), overflow store up to 5625 keys"
check "xtxd printed those sizes and their memory" \
	grep -Eq "$sizes \(~[0-9]+ MiB expected: ~[0-9]+ keys spill\); total ~[0-9]+ MiB, [0-9]+ B per key" "$log"
check "an empty server: no keys anywhere" \
	test "$(json_field "$info" keys).$(json_field "$info" kv_keys).$(json_field "$info" store_keys)" = 0.0.0
out=$(ctl 0 load --count 3000 --table 2 2>&1)
read -r n k u d <<<"$(counts "$out")"
info=$(ctl 0 info --json)
check "info counts the $n keys loaded: $k in the cache, $u in the store ($info)" \
	test "$(json_field "$info" kv_keys)" = "${k:-x}" -a "$(json_field "$info" store_keys)" = "${u:-x}" \
	-a "$(json_field "$info" keys)" = 3000
check "and the fill levels: $(grep -o '"kv_fill_pct":[0-9.]*' <<<"$info")" \
	grep -q "\"kv_fill_pct\":$(awk -v k="$k" 'BEGIN { printf "%.1f", 100 * k / 7504 }')" <<<"$info"
check "info's text shows them too" \
	grep -Eq "^store +$u of 5625 keys \([0-9.]+%\)$" <<<"$(ctl 0 info)"
# a reload with the same --capacity adopts what runs (the same sizes)
pid=$(cat "/run/xtx/$(server_ns 0)-$(server_dev 0).pid")
adopted=$(grep -c "adopting xtx program" "$log")
kill9_xtxd 0
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--capacity 5000 --rare-threads 1" >/dev/null 2>"$tmp/err"
check "xtxd restarted with the same --capacity adopts the program ($(head -c 200 "$tmp/err"))" \
	test "$(grep -c "adopting xtx program" "$log")" -gt "$adopted"
check "... and still holds the 3000 keys" test "$(json_field "$(ctl 0 info --json)" keys)" = 3000
# TATP with 2000 subscribers is 21,000+ rows, R = 1 on this one server: more than its store's 5625
bench() {
	client "$BUILD/xtxbench" tatp --servers "$SRV" --ctl "$(server_ns 0):$(server_dev 0)" \
		--client-base 300 --duration 0 --populate "$@"
}
bench --subscribers 2000 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "a populate too big for the capacity fails (exit $rc)" test $rc -ne 0
want="need [0-9]+ keys on server $SRV; its overflow store, which must be able to take every key its "
want+="kernel cache \(7504 slots\) may evict, holds at most 5625 keys \([0-9]+ held\); restart its xtxd "
want+="with --capacity [0-9]+ or more. Nothing was loaded"
check "before loading, naming a capacity that fits: $(head -c 300 "$tmp/err")" grep -Eq "$want" "$tmp/err"
need=$(grep -Eo "with --capacity [0-9]+" "$tmp/err" | grep -Eo "[0-9]+$")
check "that capacity is the rows it needs (${need:-none})" test "${need:-0}" -gt 20000
check "nothing was loaded: still 3000 keys" test "$(json_field "$(ctl 0 info --json)" keys)" = 3000
# one that fits loads, and info counts its rows
out=$(bench --subscribers 200 2>&1)
rows=$(sed -n 's/^loaded \([0-9]*\) keys in .*/\1/p' <<<"$out")
check "a populate that fits loads (${rows:-no} rows)" test "${rows:-0}" -gt 1000
check "info counts them: 3000 + $rows keys" \
	test "$(json_field "$(ctl 0 info --json)" keys)" = $((3000 + ${rows:-0}))

# ---- values over the slot: generated the same way, into the overflow store ----
out=$(ctl 0 load --count 300 --table 12 --value-size 700 --seed 7 2>&1 | tail -n 1)
check "300 keys of 700 bytes loaded ($out)" grep -q "^loaded 300 keys" <<<"$out"
ctl 0 load --count 300 --table 12 --value-size 700 --seed 7 --print | as_dump >"$tmp/expect12"
ctl 0 dump --table 12 >"$tmp/dump12"
check "dump holds the 300 generated 700-byte values at version 1" cmp -s "$tmp/expect12" "$tmp/dump12"
cmp -s "$tmp/expect12" "$tmp/dump12" || diff "$tmp/expect12" "$tmp/dump12" | head -n 4 | cut -c1-150
check "... the generator's bytes, recomputed in bash" \
	grep -qx "table=12 key=123 version=1 vlen=700 value=$(gen_value 7 12 123 700)" "$tmp/dump12"
finish
