#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# End to end: KV ops on a tiny cache, each answer checked against a model, the store diffed with it.
# checks: 17 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"

# Ops per packet; KV_OPS=2 etc. narrows a failure down to the packing.
KV_OPS=${KV_OPS:-8}
COUNT=${KV_COUNT:-3000}
# KV_LEASE=100us takes buckets over all the time: late rare-path answers
# race with the ops that took their buckets over.
LEASE=${KV_LEASE:-10ms}

# Sums the named counters of `xtxctl stats --json` over the servers into srv[NAME].
declare -A srv
server_counters() {
	local i name js v
	for name in "$@"; do srv[$name]=0; done
	for ((i = 0; i < NSERVERS; i++)); do
		js=$(ctl "$i" stats --json)
		for name in "$@"; do
			v=$(json_field "$js" "$name")
			srv[$name]=$((srv[$name] + ${v:-0}))
		done
	done
}

# Every server's dump, concatenated and sorted by table, then key, as
# xtxbench writes its --dump-file.
server_dump() {
	local i
	for ((i = 0; i < NSERVERS; i++)); do
		ctl "$i" dump || return 1
	done | sort -t= -k2,2n -k3,3n
}

# run DESC ARGS...: a --check run from 4 threads over 200 keys each, the
# checks every run must pass, and the servers' dump against $expect (the
# model's live keys of this and every earlier run: runs use disjoint keys).
run() {
	local what=$1 rc
	shift
	out=$(client "$BUILD/xtxbench" kv --servers "$(all_server_ips)" --threads 4 --keys 200 \
		--ops "$KV_OPS" --count "$COUNT" --check --dump-file "$tmp/model" --json "$@" \
		2>"$tmp/err")
	rc=$?
	check "$what: exits 0 (no answer disagreed with the model)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || grep -v '^t=' "$tmp/err" | head -n 12 | sed 's/^/    /'
	check "$what: every op answered ($(json_field "$out" kv_ops) of $((4 * COUNT)))" \
		test "$(json_field "$out" kv_ops)" = $((4 * COUNT))
	cat "$tmp/model" >>"$tmp/expect"
	sort -t= -k2,2n -k3,3n -o "$tmp/expect" "$tmp/expect"
	if server_dump >"$tmp/dump"; then
		check "$what: the servers hold exactly the model's $(wc -l <"$tmp/expect") keys" \
			cmp -s "$tmp/expect" "$tmp/dump"
		cmp -s "$tmp/expect" "$tmp/dump" ||
			diff "$tmp/expect" "$tmp/dump" | head -n 8 | sed 's/^/    /'
	else
		fail "$what: xtxctl dump"
	fi
}

# Four buckets of eight ways: the keys of all threads collide, so eviction,
# write-back and the Bloom filters are at work all the time.
setup_servers --kv-buckets 4 --rare-threads 2 --kv-lease "$LEASE"
tmp=$(mktemp -d /tmp/xtx-test-kv.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM
: >"$tmp/expect"

run "kv on $NSERVERS servers" --client-id 100
server_counters kv_deferred kv_victims kv_fixes kv_bloom_miss
for name in kv_deferred kv_victims kv_fixes kv_bloom_miss; do
	check "the rare path was used: $name=${srv[$name]}" test "${srv[$name]}" -gt 0
done

# The same under 2% loss of requests and of replies: retransmissions are
# answered from the dedupe records (kernel and xtxd), never run twice.
for ((i = 0; i < NSERVERS; i++)); do
	ctl "$i" fault --drop-request-ppm 20000 --drop-reply-ppm 20000 >/dev/null
done
run "kv under 2% loss" --client-id 200 --key-base 1000000
check "requests were retransmitted ($(json_field "$out" retransmits))" \
	test "$(json_field "$out" retransmits)" -gt 0
server_counters fault_drop
check "the servers dropped packets (fault_drop=${srv[fault_drop]})" test "${srv[fault_drop]}" -gt 0
for ((i = 0; i < NSERVERS; i++)); do
	ctl "$i" fault --drop-request-ppm 0 --drop-reply-ppm 0 >/dev/null
done

# xtxd loses 5% of the answers it already executed: the bucket stays held
# until its lease ($LEASE) runs out, the retransmission is re-deferred, and
# xtxd answers it from its record instead of running it again.
for ((i = 0; i < NSERVERS; i++)); do
	ctl "$i" fault --drop-rare-reply-ppm 50000 >/dev/null
done
run "kv with lost rare-path answers" --client-id 300 --key-base 2000000 --timeout 5ms
server_counters kv_lease_takeover replayed
check "buckets were taken over after their lease (${srv[kv_lease_takeover]})" \
	test "${srv[kv_lease_takeover]}" -gt 0
rare_replays=0
for ((i = 0; i < NSERVERS; i++)); do
	v=$(ctl "$i" rare-stats --json | grep -o '"replays":[0-9]*' | cut -d: -f2)
	rare_replays=$((rare_replays + ${v:-0}))
	ctl "$i" fault --drop-rare-reply-ppm 0 >/dev/null
done
check "xtxd answered re-deferred ops from its record ($rare_replays)" test "$rare_replays" -gt 0
finish
