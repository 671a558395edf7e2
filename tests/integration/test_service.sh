#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Running xtx as a service: Prometheus metrics scraped during a workload, the control channel
# root-only, make install laying out binaries, man pages and a unit systemd accepts.
# checks: 37 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=1

setup_servers --metrics :9370 --peers "$(server_ip 0)" --snapshot-every 1s
SERVERS=$(all_server_ips)
tmp=$(mktemp -d /tmp/xtx-test-service.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM

# scrape: GET /metrics from inside the server's namespace, where xtxd bound it.
scrape() {
	ip netns exec "$(server_ns 0)" python3 -c '
import sys, urllib.request
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9370/metrics", timeout=5).read().decode())'
}
# metric TEXT NAME{LABELS}: the value of one sample line.
metric() { awk -v n="$2" '$1 == n { print $2; exit }' <<<"$1"; }

before=$(scrape)
check "scrape answers before any traffic" test -n "$before"
# (the bank run lasts until top and a scrape have seen it: SIGINT ends it)
rx() { metric "$(scrape)" 'xtx_xdp_events_total{event="rx"}'; }
more_rx() { [ "$(rx)" -gt $(($1 + 100)) ]; }
rx0=$(rx)
client "$BUILD/xtxbench" bank --servers "$SERVERS" --accounts 16 --duration 600s >/dev/null 2>&1 &
bank=$!
wait_until 60 more_rx "${rx0:-0}"
top=$(ctl 0 top --interval 300 --refreshes 2)
rc=$?
check "xtxctl top refreshes with live rates (exit $rc)" \
	test "$rc" -eq 0 -a "$(grep -c '^packets in' <<<"$top")" -eq 2
rate=$(awk '/^ops /{v=$2} END{print v+0}' <<<"$top")
check "... showing the ops the run sends (${rate}/s)" test "${rate%%/*}" -gt 0
during=$(scrape)
pkill -INT -P "$bank"
wait "$bank"
rc=$?
check "a bank run against the server (exit $rc)" test "$rc" -eq 0
after=$(scrape)

# Prometheus text format: families announced before their samples, names and labels well formed.
printf '%s\n' "$after" >"$tmp/metrics.txt"
out=$(python3 - "$tmp/metrics.txt" <<'PY'
import re, sys
name_re = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
sample = re.compile(r'^(' + name_re + r')(\{(' + name_re[:-1] + r'*="[^"\\\n]*"(,' + name_re + r'="[^"\\\n]*")*)\})? (-?[0-9.eE+-]+|NaN|\+Inf|-Inf)$')
typed, samples, bad = {}, 0, []
for ln in open(sys.argv[1]).read().splitlines():
    if not ln:
        continue
    m = re.match(r'^# (HELP|TYPE) (' + name_re + r') (.*)$', ln)
    if m:
        if m.group(1) == 'TYPE':
            if m.group(3) not in ('counter', 'gauge', 'histogram', 'summary', 'untyped'):
                bad.append(ln)
            typed[m.group(2)] = m.group(3)
        continue
    m = sample.match(ln)
    # a histogram's samples are its family's name with _bucket, _sum or _count
    fam = m and (m.group(1) if m.group(1) in typed else re.sub(r'_(bucket|sum|count)$', '', m.group(1)))
    if not m or typed.get(fam) is None or (fam != m.group(1) and typed[fam] != 'histogram'):
        bad.append(ln)
        continue
    if typed[fam] == 'counter' and not m.group(1).endswith('_total'):
        bad.append('counter without _total: ' + ln)
    samples += 1
print(f'{samples} samples, {len(typed)} families, {len(bad)} bad')
for b in bad[:5]:
    print('bad:', b)
PY
)
check "the exposition parses as Prometheus text ($out)" grep -q ' 0 bad$' <<<"$out"
rx0=$(metric "$before" 'xtx_xdp_events_total{event="rx"}')
rx1=$(metric "$after" 'xtx_xdp_events_total{event="rx"}')
check "received packets counted, and moving (${rx0:-?} -> ${rx1:-?})" \
	test "${rx1:-0}" -gt "${rx0:-0}" -a "${rx1:-0}" -gt 1000
ok=$(metric "$after" 'xtx_ops_total{op="occ_lock",status="ok"}')
check "per-op and per-status counters (occ_lock ok: ${ok:-none})" test "${ok:-0}" -gt 0
logged=$(metric "$after" 'xtx_log_entries_total{state="appended"}')
check "log appends counted (${logged:-none})" test "${logged:-0}" -gt 0
held=$(metric "$during" 'xtx_locks_held{mode="any"}')
slots=$(metric "$after" 'xtx_lock_slots')
check "lock occupancy reported (held during the run ${held:-none} of ${slots:-none} slots)" \
	test "${slots:-0}" -gt 0 -a -n "$held"
check "HADES slot occupancy reported" grep -q '^xtx_hades_slots_in_use{state="any"} ' <<<"$after"
check "resolver decisions reported" \
	grep -q '^xtx_resolver_decisions_total{protocol="lock",outcome="commit"} ' <<<"$after"
code=$(ip netns exec "$(server_ns 0)" python3 -c '
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://127.0.0.1:9370/nothing", timeout=5)
except urllib.error.HTTPError as e:
    print(e.code)')
check "another path answers 404 ($code)" test "$code" = 404

# Who may talk to it: the allowlist in XDP, changed at run time.
bank_once() {
	client "$BUILD/xtxbench" bank --servers "$SERVERS" --accounts 16 --duration 1s --no-setup \
		--json 2>/dev/null
}
events() { metric "$(scrape)" "xtx_xdp_events_total{event=\"$1\"}"; }
out=$(ctl 0 allow add 10.0.0.0/33 2>&1)
check "a bad prefix is refused with a clear error ($out)" grep -q 'not an IPv4 address or CIDR\|prefix length' <<<"$out"
out=$(ctl 0 allow list)
check "... and changes nothing (still off)" grep -q '^allowlist off' <<<"$out"
n0=$(events not_allowed)
ops0=$(events ops)
ctl 0 allow add 10.99.0.0/16 >/dev/null
out=$(bank_once)
n1=$(events not_allowed)
ops1=$(events ops)
check "a client outside the allowlist is dropped and counted (${n0:-?} -> ${n1:-?})" \
	test "${n1:-0}" -gt "${n0:-0}"
check "... and nothing it sent ran (ops ${ops0:-?} -> ${ops1:-?})" test "${ops1:-x}" = "${ops0:-y}"
ctl 0 allow add "$(server_ip 0 | cut -d. -f1-3).0/24" >/dev/null
out=$(ctl 0 allow list --json)
check "allow list shows both prefixes, enforced ($out)" \
	grep -q '"enforced":true,"prefixes":\[.*10.99.0.0/16.*\]' <<<"$out"
out=$(bank_once)
committed=$(json_field "$out" transfers)
check "a listed client is served (${committed:-0} transfers)" test "${committed:-0}" -gt 0
ctl 0 allow del 10.99.0.0/16 >/dev/null
out=$(ctl 0 allow del 10.99.0.0/16 2>&1)
check "deleting a prefix that is not listed says so" grep -q 'not in the allowlist' <<<"$out"
ctl 0 allow off >/dev/null
check "allow off: enforcement off, the list kept" grep -q '^allowlist off' <<<"$(ctl 0 allow list)"

# The resolver port takes only the cluster's servers: strangers are ignored and counted.
ip netns exec "$PREFIX-c" python3 - "$(server_ip 0)" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
hdr = struct.pack('<IBBBBIIQQ', 0x31585458, 2, 0, 1, 0, 5, 0, 1, 0)
op = struct.pack('<BBBBIQQQQ', 24, 0, 0, 0, 0, 0, 0x1234, 0, 0) + bytes(40)
s.sendto(hdr + op, (sys.argv[1], 7371))		# well formed, but not from a peer
s.sendto(b'\x00' * 7, (sys.argv[1], 7371))	# malformed
PY
counted() {
	m=$(scrape)
	[ "$(metric "$m" 'xtx_resolver_refused_total{reason="not_a_peer"}')" -ge 1 ] &&
		[ "$(metric "$m" 'xtx_resolver_refused_total{reason="malformed"}')" -ge 1 ]
}
wait_until 60 counted
n=$(metric "$m" 'xtx_resolver_refused_total{reason="not_a_peer"}')
k=$(metric "$m" 'xtx_resolver_refused_total{reason="malformed"}')
check "a resolver message from a non-peer is ignored and counted (${n:-?}), a malformed one too (${k:-?})" \
	test "${n:-0}" -ge 1 -a "${k:-0}" -ge 1

# Housekeeping: --snapshot-every snapshots on its own, and old ones and covered logs go.
snapshots() { metric "$(scrape)" 'xtx_snapshots_total{result="ok"}'; }
two_snapshots() { [ "$(snapshots)" -ge 2 ]; }
wait_until 60 two_snapshots
snaps=$(snapshots)
dir=/var/lib/xtx/$(server_ns 0)-$(server_dev 0)
files=$(ls "$dir"/snapshot-*.xsnap 2>/dev/null | wc -l)
check "--snapshot-every took snapshots (${snaps:-0}) and kept only the newest (${files} on disk)" \
	test "${snaps:-0}" -ge 2 -a "$files" -ge 1 -a "$files" -le 2

sock=/run/xtx/$(server_ns 0)-$(server_dev 0).sock
mode=$(stat -c '%a %U' "$sock" 2>/dev/null)
check "the control socket is root's alone ($mode)" test "$mode" = "600 root"
out=$("$BUILD/xtxd" -h 2>&1)
check "xtxd -h says the control channel is root-only" grep -q 'only root' <<<"$out"

# A shared secret: requests without its MAC are dropped and counted, with it they are served.
printf '%s\n' 00112233445566778899aabbccddeeff >"$tmp/secret"
chmod 600 "$tmp/secret"
cp "$tmp/secret" "$tmp/secret.open"
chmod 644 "$tmp/secret.open"
out=$("$BUILD/xtxd" --iface lo --secret-file "$tmp/secret.open" 2>&1)
check "a secret file others can read is refused ($out)" grep -q 'readable by others' <<<"$out"
ctl 0 unload >/dev/null
printf '%s\n' 00112233445566778899aabbccddeefe >"$tmp/secret.other"
chmod 600 "$tmp/secret.other"
make -s -C "$ROOT" load IFACE="$(server_dev 0)" NETNS="$(server_ns 0)" \
	ARGS="--secret-file $tmp/secret --metrics :9370 --peers $(server_ip 0)" >/dev/null
check "xtxd loads with --secret-file" test $? -eq 0
b0=$(json_field "$(ctl 0 stats --json)" bad_mac)
out=$(client "$BUILD/xtxbench" bank --servers "$SERVERS" --accounts 16 --duration 1s --json 2>&1)
b1=$(json_field "$(ctl 0 stats --json)" bad_mac)
n=$(json_field "$out" transfers)
check "a client without the secret is dropped and counted (${n:-0} transfers, bad_mac ${b0:-?} -> ${b1:-?})" \
	test "${n:-0}" -eq 0 -a "${b1:-0}" -gt "${b0:-0}"
out=$(client "$BUILD/xtxbench" bank --servers "$SERVERS" --accounts 16 --duration 1s --json \
	--secret-file "$tmp/secret" 2>&1)
n=$(json_field "$out" transfers)
check "with --secret-file it is served (${n:-0} transfers)" test "${n:-0}" -gt 0
m0=$(scrape)
b0=$(json_field "$(ctl 0 stats --json)" bad_mac)
out=$(client "$BUILD/xtxbench" bank --servers "$SERVERS" --accounts 16 --duration 1s --json \
	--secret-file "$tmp/secret.other" 2>&1)
n=$(json_field "$out" transfers)
b1=$(json_field "$(ctl 0 stats --json)" bad_mac)
m1=$(scrape)
x0=$(metric "$m0" 'xtx_bad_mac_requests_total{path="xdp"}')
x1=$(metric "$m1" 'xtx_bad_mac_requests_total{path="xdp"}')
check "with another secret nothing is served (${n:-0} transfers); xtxctl stats bad_mac \
${b0:-?} -> ${b1:-?}, metric xtx_bad_mac_requests_total{path=\"xdp\"} ${x0:-?} -> ${x1:-?}" \
	test "${n:-0}" -eq 0 -a "${b1:-0}" -gt "${b0:-0}" -a "${x1:-0}" -gt "${x0:-0}" \
	-a "$((${x1:-0} - ${x0:-0}))" -eq "$((${b1:-0} - ${b0:-0}))"
# every byte of a request is covered (include/xtx/mac.h): changed on the way, it is dropped
b0=$(json_field "$(ctl 0 stats --json)" bad_mac)
out=$(client python3 "$ROOT/tests/integration/mac_attack.py" "$(server_ip 0)" 7370 "$tmp/secret" \
	flips 61)
b1=$(json_field "$(ctl 0 stats --json)" bad_mac)
sent=$(kv_field "$out" sent)
# the magic's 4 bytes, and the flags byte (then a reply's), are dropped before the MAC
check "each byte of a request flipped: XDP drops it as bad_mac; as signed it runs once \
($out; bad_mac +$((${b1:-0} - ${b0:-0})))" \
	test "$(kv_field "$out" replies)" = 1 -a "$(kv_field "$out" version)" = 1 \
	-a "$((${b1:-0} - ${b0:-0}))" -eq "$((${sent:-0} - 5))"
out=$(client python3 "$ROOT/tests/integration/mac_attack.py" "$(server_ip 0)" 7370 "$tmp/secret" \
	swap 62)
c=$(client "$BUILD/xtxbench" op --server "$(server_ip 0)" --secret-file "$tmp/secret" \
	counter-add 0 62 version=0 2>&1)
check "a GET's header and MAC over a COUNTER_ADD of 1000000: dropped ($out; $c)" \
	test "$out" = "get=ok swapped=noreply" -a -n "$(grep -o 'status=ok version=0 ' <<<"$c")"
# the resolver port: a client's question about its transaction carries the MAC too
a=$(client "$BUILD/xtxbench" op --server "$(server_ip 0)" --port 7371 --client-id 5 \
	--secret-file "$tmp/secret" txn-status 0 0 txn=1 2>&1)
b=$(client "$BUILD/xtxbench" op --server "$(server_ip 0)" --port 7371 --client-id 5 \
	--timeout 2ms --secret-file "$tmp/secret.other" txn-status 0 0 txn=1 2>&1)
r=$(metric "$(scrape)" 'xtx_bad_mac_requests_total{path="resolver"}')
check "the resolver answers a question with the MAC ($a), drops one without (${b:0:40}; \
metric ${r:-?})" \
	test -n "$(grep -o 'status=ok' <<<"$a")" -a -n "$(grep -o 'no answer' <<<"$b")" \
	-a "${r:-0}" -ge 1

# make install into a staging root lays out every file; the unit passes systemd's checks.
dest=$tmp/root
make -s -C "$ROOT" install DESTDIR="$dest" PREFIX=/usr >/dev/null 2>&1
rc=$?
missing=""
for f in usr/sbin/xtxd usr/sbin/xtxctl usr/sbin/xtx-udpd usr/bin/xtxbench usr/lib/xtx/xtx_xdp.bpf.o \
	usr/lib/libxtx.a usr/include/xtx/libxtx.h usr/share/man/man8/xtxd.8 usr/share/man/man8/xtxctl.8 \
	usr/share/man/man1/xtxbench.1 lib/systemd/system/xtxd@.service etc/xtx/example.conf; do
	[ -s "$dest/$f" ] || missing+=" $f"
done
check "make install DESTDIR= lays out binaries, BPF objects, man pages, unit (rc $rc;${missing:- none missing})" \
	test "$rc" -eq 0 -a -z "$missing"
check "the man page is xtxd's own help" grep -q -- '--metrics ADDR:PORT' "$dest/usr/share/man/man8/xtxd.8"
unit=$dest/lib/systemd/system/xtxd@.service
check "the unit runs the installed xtxd with the interface's options" \
	grep -q '^ExecStart=/usr/sbin/xtxd --iface %i $XTXD_ARGS$' "$unit"
# systemd-analyze checks that ExecStart exists: point it at the staged binary
mkdir -p "$tmp/units"
sed "s|/usr/sbin/xtxd|$dest/usr/sbin/xtxd|" "$unit" >"$tmp/units/xtxd@eth0.service"
out=$(systemd-analyze verify --man=no "$tmp/units/xtxd@eth0.service" 2>&1)
check "systemd-analyze verify accepts the unit (${out:-no complaint})" test -z "$out"
make -s -C "$ROOT" uninstall DESTDIR="$dest" PREFIX=/usr >/dev/null 2>&1
left=$(find "$dest" -type f | wc -l)
check "make uninstall removes what install put there ($left files left)" test "$left" -eq 0

exit "$TEST_FAILED"
