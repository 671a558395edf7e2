#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fuzz of xtxd's other doors: its control socket (random and overlong request lines, junk
# arguments) and its resolver port (random datagrams, broken and random queries from a
# listed peer and from strangers). xtxd must answer or ignore each, keep running, and keep
# its store byte for byte. The seed is printed; XTX_FUZZ_SEED=S replays it.
# checks: 10 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
NSERVERS=1

# the client's end is listed as server 1: its messages get past the peer check
setup_servers --peers "$(server_ip 0),10.77.0.1" --metrics :9371
SEED=${XTX_FUZZ_SEED:-$RANDOM$RANDOM}
echo "# fuzz seed $SEED (XTX_FUZZ_SEED=$SEED replays it)"
tmp=$(mktemp -d /tmp/xtx-test-fuzzd.XXXXXX)
trap 'rm -rf "$tmp"; cleanup' EXIT INT TERM
SOCK=/run/xtx/$(server_ns 0)-$(server_dev 0).sock
PID=$(cat "/run/xtx/$(server_ns 0)-$(server_dev 0).pid")

scrape() {
	ip netns exec "$(server_ns 0)" python3 -c '
import sys, urllib.request
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9371/metrics", timeout=5).read().decode())'
}
metric() { awk -v n="$2" '$1 == n { print $2; exit }' <<<"$1"; }

ctl 0 load --count 300 --table 2 >/dev/null
client "$BUILD/xtxbench" bank --servers "$(server_ip 0)" --accounts 16 --duration 1 >/dev/null 2>&1
ctl 0 dump >"$tmp/before"
m0=$(scrape)

# ---- the control socket: 4000 request lines that are not requests ----
python3 - "$SOCK" "$SEED" >"$tmp/ctl.out" <<'PY'
import random, socket, sys
sock, seed = sys.argv[1], int(sys.argv[2])
rnd = random.Random(seed)
words = ["dump", "stats", "load", "gen", "file", "at", "--json", "--table", "mark", "snapshot",
         "-1", "0", "99999999999999999999999", "0x", "0xffffffffffffffffff", "nan", "", "ERR"]

def line():
    k = rnd.randrange(6)
    if k == 0:	# binary junk, newlines stripped
        return bytes(rnd.randrange(1, 256) for _ in range(rnd.randrange(1, 120))).replace(b"\n", b"")
    if k == 1:	# overlong
        return b"dump " + b"x" * rnd.randrange(300, 3000)
    if k == 2:	# load with arguments it refuses (never 'gen' with 5 numbers, never 'file')
        args = [rnd.choice(words[3:]) for _ in range(rnd.randrange(0, 9))]
        said = [a for a in args if a]	# what xtxd's tokenizer sees: "" words vanish
        if said[:1] == ["file"] or (said[:1] == ["gen"] and len(said) == 6):
            args = ["bogus"] + args
        return ("load " + " ".join(args)).encode()
    if k == 3:	# a known request with arguments it does not take
        return (rnd.choice(["dump", "mark", "snapshot", "stats"]) + " " +
                " ".join(rnd.choice(["bogus", "--xml", "7", "--table", "300"])
                         for _ in range(1, 4))).encode()
    if k == 4:	# words at random, never a known request first
        return ("zz" + " ".join(rnd.choice(words) for _ in range(rnd.randrange(1, 12)))).encode()
    return b"\t \r"	# blank
sent = answered = errs = 0
for conn in range(40):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock)
    f = s.makefile("rb")
    for _ in range(100):
        s.sendall(line() + b"\n")
        sent += 1
        while True:	# every line of the answer up to its last: OK or ERR
            a = f.readline()
            if not a:
                break
            if a.startswith(b"OK") or a.startswith(b"ERR"):
                answered += 1
                errs += a.startswith(b"ERR")
                break
        if not a:
            break
    s.close()
print(sent, answered, errs)
PY
read -r sent answered errs <"$tmp/ctl.out"
check "control socket: every one of ${sent:-0} junk requests answered (${answered:-0})" \
	test "${sent:-0}" -ge 4000 -a "${answered:-0}" = "${sent:-x}"
check "... each with ERR (${errs:-0})" test "${errs:-0}" = "${sent:-x}"

# ---- the resolver port: 30000 datagrams from a peer and 2000 from a stranger ----
cat >"$tmp/resolver.py" <<'PY'
import random, socket, struct, sys
dst, seed, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(seed + n)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
HDR = "<IBBBBIIQQ"			# magic version flags nops status client reserved req_id mac
def query():
    nops = rnd.randrange(0, 20)
    h = struct.pack(HDR, rnd.choice([0x31585458, 0x31585458, rnd.getrandbits(32)]),
                    rnd.choice([2, 2, rnd.getrandbits(8)]), rnd.getrandbits(8), nops, 0,
                    rnd.getrandbits(32), 0, rnd.getrandbits(64), rnd.choice([0, 0, rnd.getrandbits(64)]))
    ops = b""
    for _ in range(nops):
        # queries only: a decision is the one message a peer may use to change state
        opc = rnd.choice([24, 26, 28, rnd.choice([0, 1, 20, 63, 200])])
        ops += struct.pack("<BBBBIQQQQ", opc, rnd.getrandbits(8), rnd.getrandbits(8),
                           rnd.getrandbits(8), rnd.getrandbits(32), rnd.getrandbits(64),
                           rnd.getrandbits(64), rnd.getrandbits(64), rnd.getrandbits(64))
        ops += bytes(rnd.getrandbits(8) for _ in range(40))
    b = h + ops
    cut = rnd.randrange(4)
    if cut == 0 and b:
        b = b[:rnd.randrange(len(b))]
    elif cut == 1:
        b += bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(1, 50)))
    return b
for i in range(n):
    b = query() if i % 3 else bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 300)))
    s.sendto(b, (dst, 7371))
PY
client python3 "$tmp/resolver.py" "$(server_ip 0)" "$SEED" 30000 || fuzz_resolver_failed=1
# well-formed queries from an address that is no server of the cluster, 100 at a time: each
# batch waits until the server has counted the one before (a socket buffer holds a few
# hundred, and a busy machine's resolver thread takes its time)
ip netns exec "$(server_ns 0)" python3 -c '
import re, socket, struct, time, urllib.request
def strangers():
    t = urllib.request.urlopen("http://127.0.0.1:9371/metrics", timeout=10).read().decode()
    m = re.search(r"^xtx_resolver_refused_total\{reason=\"not_a_peer\"\} (\d+)", t, re.M)
    return int(m.group(1)) if m else 0
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
base = strangers()
for b in range(20):
    for i in range(b * 100, b * 100 + 100):
        hdr = struct.pack("<IBBBBIIQQ", 0x31585458, 2, 0, 1, 0, 5, 0, i + 1, 0)
        op = struct.pack("<BBBBIQQQQ", 24, 0, 0, 0, 0, 0, 0x1234 + i, 0, 0) + bytes(40)
        s.sendto(hdr + op, ("127.0.0.1", 7371))
    end = time.monotonic() + 60
    while strangers() < base + b * 100 + 100 and time.monotonic() < end:
        time.sleep(0.05)'
m1=$(scrape)
mal=$(( $(metric "$m1" 'xtx_resolver_refused_total{reason="malformed"}') -
	$(metric "$m0" 'xtx_resolver_refused_total{reason="malformed"}') ))
str=$(( $(metric "$m1" 'xtx_resolver_refused_total{reason="not_a_peer"}') -
	$(metric "$m0" 'xtx_resolver_refused_total{reason="not_a_peer"}') ))
check "resolver port: the fuzz ran (${fuzz_resolver_failed:-0} failures)" \
	test "${fuzz_resolver_failed:-0}" = 0
check "resolver port: malformed messages counted ($mal)" test "$mal" -gt 1000
check "resolver port: strangers counted, every one ($str of 2000)" test "$str" -ge 2000
bad=$(( $(metric "$m1" 'xtx_resolver_refused_total{reason="bad_client"}') -
	$(metric "$m0" 'xtx_resolver_refused_total{reason="bad_client"}') ))
check "resolver port: clients' status questions about others' transactions refused ($bad)" \
	test "$bad" -gt 10
check "resolver port: no decision taken on junk" \
	test "$(metric "$m1" 'xtx_resolver_decisions_total{protocol="lock",outcome="commit"}')" = \
	"$(metric "$m0" 'xtx_resolver_decisions_total{protocol="lock",outcome="commit"}')"

# ---- and through it all ----
check "xtxd still running, the same process" kill -0 "$PID"
ctl 0 dump >"$tmp/after"
check "the store byte for byte as before ($(wc -l <"$tmp/before") keys)" \
	cmp -s "$tmp/before" "$tmp/after"
out=$(client "$BUILD/xtxbench" bank --servers "$(server_ip 0)" --accounts 16 --no-setup \
	--duration 1 --check 2>&1)
check "and still serving: a bank run after the fuzz conserves the money" \
	grep -q "total .* conserved" <<<"$out"
finish
