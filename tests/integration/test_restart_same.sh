#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a server serves after a restart is what it served before: writes logged on it alone
# whose coordinator never installed them (xtxbench log writes only log records) are
# installed live after --resolve-after, as recovery installs them at the next start; dumps
# compared across a clean restart and across a SIGKILL and adoption.
# checks: 11 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=1

setup_servers --resolve-after 1s
TMP=$(mktemp -d /tmp/xtx-restart.XXXXXX)
trap 'rm -rf "$TMP"; cleanup' EXIT INT TERM
reload() { make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--resolve-after 1s" >/dev/null; }
# dump_to FILE: the dump, sorted
dump_to() { ctl 0 dump | sort >"$1"; }
same() {
	cmp -s "$1" "$2" && return 0
	diff "$1" "$2" | head -n 6 | sed 's/^/    /'
	return 1
}

# log records only (a transaction per op, one replica, never committed) and transactions
out=$(client "$BUILD/xtxbench" log --servers "$(server_ip 0)" --duration 1 --client-id 70)
appends=$(kv_field "$out" appends)
[ -n "$appends" ] || appends=$(grep -o 'appends=[0-9]*' <<<"$out" | head -n 1 | cut -d= -f2)
client "$BUILD/xtxbench" bank --servers "$(server_ip 0)" --accounts 16 --duration 1 \
	--client-base 80 >/dev/null 2>&1
# the event: every logged write is in the store (16 accounts besides), within 30 s
for ((i = 0; i < 300; i++)); do
	n=$(ctl 0 dump | wc -l)
	[ "$n" -ge $((${appends:-0} + 16)) ] && break
	sleep 0.1
done
check "xtxbench log's ${appends:-no} records are served, with the 16 accounts ($n keys)" \
	test "${appends:-0}" -gt 0 -a "$n" -eq $((${appends:-0} + 16))
check "the server said it installed what nobody committed" \
	grep -q "settle: [0-9]* writes logged on this server alone" <(XLOG 0)
dump_to "$TMP/before"

make -s -C "$ROOT" unload IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" >/dev/null
reload
dump_to "$TMP/clean"
check "a clean restart serves the same ($(wc -l <"$TMP/clean") keys, recovered from the log)" \
	same "$TMP/before" "$TMP/clean"
check "recovery applied nothing the server had not served" \
	grep -q "recovery: $n keys back" <(XLOG 0)

# the kill leaves the program and maps; the overflow store is rebuilt from the data directory
kill9_xtxd 0
reload
dump_to "$TMP/adopted"
check "the restart after the SIGKILL adopted the program" \
	grep -q "serving $(server_dev 0) in netns $(server_ns 0) port .* (adopted)" <(XLOG 0)
check "after a SIGKILL the adopting xtxd serves the same" same "$TMP/before" "$TMP/adopted"

# and once more with writes the coordinator left in the log just before a clean stop
out=$(client "$BUILD/xtxbench" log --servers "$(server_ip 0)" --duration 0.3 --client-id 71)
more=$(kv_field "$out" appends)
[ -n "$more" ] || more=$(grep -o 'appends=[0-9]*' <<<"$out" | head -n 1 | cut -d= -f2)
for ((i = 0; i < 300; i++)); do
	[ "$(ctl 0 dump | wc -l)" -ge $((n + ${more:-0})) ] && break
	sleep 0.1
done
dump_to "$TMP/before2"
check "the new records are served too ($(wc -l <"$TMP/before2") keys)" \
	test "$(wc -l <"$TMP/before2")" -eq $((n + ${more:-0}))
make -s -C "$ROOT" unload IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" >/dev/null
reload
dump_to "$TMP/clean2"
check "a second clean restart serves the same" same "$TMP/before2" "$TMP/clean2"

# ---- killed between draining single-replica writes and installing them ----
# (--resolve-after 60s: none is installed before the kill; the adopting xtxd's drain never
# sees them again, so only its scan of the logs can)
make -s -C "$ROOT" unload IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" >/dev/null
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--resolve-after 60s" >/dev/null
k0=$(ctl 0 dump | wc -l)
out=$(client "$BUILD/xtxbench" log --servers "$(server_ip 0)" --duration 0.3 --client-id 72)
late=$(kv_field "$out" appends)
[ -n "$late" ] || late=$(grep -o 'appends=[0-9]*' <<<"$out" | head -n 1 | cut -d= -f2)
drained() {
	! ctl 0 log stats --json | grep -o '"tail":[0-9]*,"head":[0-9]*' |
		awk -F'[:,]' '$2 != $4 { f = 1 } END { exit !f }'
}
wait_until 60 drained
check "${late:-no} more records drained and released, none installed yet ($(ctl 0 dump | wc -l) of $k0 keys)" \
	test "${late:-0}" -gt 0 -a "$(ctl 0 dump | wc -l)" -eq "$k0"
kill9_xtxd 0
reload
all_in() { [ "$(ctl 0 dump | wc -l)" -ge $((k0 + late)) ]; }
wait_until 60 all_in
check "the adopting xtxd installs what the killed one drained and left ($(ctl 0 dump | wc -l) keys)" \
	test "$(ctl 0 dump | wc -l)" -eq $((k0 + late))
check "... having found them in the logs at its start" \
	grep -q "settle: [0-9]* single-replica writes of the logs not in the store at this adopted start" \
	<(XLOG 0)
finish
