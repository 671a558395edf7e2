#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The README's "By hand" section, run as written: the commands between its quickstart markers,
# each in turn, with only the namespace prefix xtxq replaced by this run's own (so parallel or
# leftover runs never meet). Every command must succeed, and each must do what the README
# says it does: servers loaded, bank money conserved, TATP verified, packets counted, health
# answered; after the teardown nothing of the prefix is left.
# checks: 29 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"
# the README's servers are 0..2: lib.sh's cleanup unloads as many and removes the prefix's
# namespaces and data directories, on every way out
NSERVERS=3
# curl from inside a namespace must not go to a proxy of the caller's environment
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY

TMP=$(mktemp -d /tmp/xtx-quickstart.XXXXXX)
# (the daemons' own log files under /run/xtx go too: this run's alone)
trap 'cleanup; rm -rf "$TMP" /run/xtx/"$PREFIX"-*' EXIT INT TERM

# The sh block between the markers, continuation lines joined into one command each (kept
# with their backslash-newlines, as a shell reads them), comments and blank lines dropped.
awk '/<!-- quickstart:begin -->/ { on = 1; next }
	/<!-- quickstart:end -->/ { on = 0 }
	on && /^```sh$/ { code = 1; next }
	on && /^```$/ { code = 0 }
	on && code' "$ROOT/README.md" >"$TMP/block.sh"
sed "s/xtxq/$PREFIX/g" "$TMP/block.sh" >"$TMP/block.run"
cmds=()
cur=""
while IFS= read -r line; do
	if [ -z "$cur" ] && [[ $line =~ ^[[:space:]]*(#.*)?$ ]]; then
		continue
	fi
	cur+="${cur:+$'\n'}$line"
	[[ $line == *\\ ]] && continue
	cmds+=("$cur")
	cur=""
done <"$TMP/block.run"
[ -z "$cur" ] || cmds+=("$cur")
n=${#cmds[@]}
# what the substitution may change: the prefix alone, so the lines are the README's otherwise
same=$(sed "s/$PREFIX/xtxq/g" "$TMP/block.run" | cmp -s - "$TMP/block.sh" && echo yes)
check "README.md has a quickstart block of commands ($n found)" test "$n" -ge 10 -a "$same" = yes

# step_of PATTERN: the index of the first command matching PATTERN (grep -E), or -1
step_of() {
	local i
	for ((i = 0; i < n; i++)); do
		grep -qE -- "$1" <<<"${cmds[i]}" && { echo "$i"; return; }
	done
	echo -1
}
short() { sed 's/\\$//' <<<"$1" | tr '\n' ' ' | tr -s ' ' | cut -c1-90; }
out() { [ "$1" -ge 0 ] && cat "$TMP/out.$1"; }
cmd() { [ "$1" -ge 0 ] && printf '%s\n' "${cmds[$1]}"; }
rc_of() { if [ "$1" -ge 0 ]; then cat "$TMP/rc.$1"; else echo none; fi; }
# the steps whose outcome is checked, by what they run (the first command that matches)
S_MAKE=$(step_of '^make[[:space:]]*(#.*)?$')
S_UP=$(step_of 'scripts/topo.sh .* up([[:space:]]|$)')
S_LOAD=$(step_of 'make load ')
S_BANK=$(step_of 'xtxbench bank ')
S_TATP=$(step_of 'xtxbench tatp ')
S_STATS=$(step_of 'xtxctl .* stats')
S_HEALTH=$(step_of 'curl .*/healthz')
S_READY=$(step_of 'curl .*/readyz')
S_METRICS=$(step_of 'curl .*/metrics')
S_UNLOAD=$(step_of 'make unload ')
S_DOWN=$(step_of 'scripts/topo.sh .* down([[:space:]]|$)')
check "the block builds, brings a topology up, loads, runs bank and tatp, reads stats and \
/healthz, /readyz, /metrics, unloads and tears down, in that order" \
	test "$S_MAKE" -eq 0 -a "$S_UP" -gt "$S_MAKE" -a "$S_LOAD" -gt "$S_UP" \
	-a "$S_BANK" -gt "$S_LOAD" -a "$S_TATP" -gt "$S_LOAD" -a "$S_STATS" -gt "$S_BANK" \
	-a "$S_HEALTH" -gt "$S_LOAD" -a "$S_READY" -gt "$S_LOAD" -a "$S_METRICS" -gt "$S_BANK" \
	-a "$S_UNLOAD" -gt "$S_METRICS" -a "$S_DOWN" -gt "$S_UNLOAD"

# serving S: server S's xtxd runs and its maps are pinned
serving() {
	local f=/run/xtx/$(server_ns "$1")-$(server_dev "$1").pid
	[ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null &&
		[ -e "/sys/fs/bpf/xtx/$(server_ns "$1")/$(server_dev "$1")" ]
}
ns_count() { ip netns list | awk -v p="$PREFIX-" 'index($1, p) == 1' | wc -l; }

# What a step left, checked as soon as it ends: the state the next steps stand on.
after_step() {
	local i=$1 s ok
	case $i in
	"$S_UP")
		check "topo up: the client namespace and 3 server namespaces exist ($(ns_count))" \
			test "$(ns_count)" -eq 4
		;;
	"$S_LOAD")
		ok=0
		for s in 0 1 2; do serving "$s" && ok=$((ok + 1)); done
		check "make load: an xtxd serves each of the 3 links, its maps pinned ($ok)" \
			test "$ok" -eq 3
		;;
	"$S_UNLOAD")
		ok=0
		for s in 0 1 2; do serving "$s" || ok=$((ok + 1)); done
		check "make unload: no xtxd serves any of them any more ($ok of 3 stopped)" \
			test "$ok" -eq 3
		;;
	esac
}

# Runs every command in order, from the repository's root as a reader would, each under a
# bound (a hang fails it rather than the suite's limit); its output and status kept.
for ((i = 0; i < n; i++)); do
	(cd "$ROOT" && timeout --kill-after=10 600 bash -c "${cmds[i]}") >"$TMP/out.$i" 2>&1
	rc=$?
	echo "$rc" >"$TMP/rc.$i"
	check "step $((i + 1)) of $n: $(short "${cmds[i]}") (exit $rc)" test "$rc" -eq 0
	# a failing step shows its last lines, indented so that none reads as a verdict
	[ "$rc" -eq 0 ] || tail -n 8 "$TMP/out.$i" | sed 's/^/    | /'
	after_step "$i"
done

# ---- what each step showed ----
check "xtxbench runs in the client namespace" \
	test -n "$(cmd "$S_BANK" | grep "^ip netns exec $PREFIX-c ")" \
	-a -n "$(cmd "$S_TATP" | grep "^ip netns exec $PREFIX-c ")"
c=$(grep -o 'bank check: total [0-9]* conserved over [0-9]* committed transfers' <(out "$S_BANK"))
t=$(grep -o 'conserved over [0-9]*' <<<"$c" | grep -o '[0-9]*$')
check "bank --check: money conserved (${c:-no such line})" test "${t:-0}" -gt 0
v=$(grep -o '^verify: [A-Z]* ([0-9]* violations)' <(out "$S_TATP"))
check "tatp --populate --verify: verified (${v:-no verdict})" test "$v" = "verify: OK (0 violations)"
r=$(grep -c '^verify: .* OK$' <(out "$S_TATP"))
check "... TATP's consistency checks passed, the replicas identical ($r checks said OK)" \
	grep -q '^verify: replicas identical' <(out "$S_TATP")
rx=$(awk '$1 == "rx" { print $2; exit }' <(out "$S_STATS"))
check "xtxctl stats shows the packets received (rx ${rx:-none})" test "${rx:-0}" -gt 0
check "/healthz answers 200 ($(head -n 1 <(out "$S_HEALTH") | tr -d '\r'))" \
	grep -q '^HTTP/1\.[01] 200' <(out "$S_HEALTH")
check "/readyz says it serves ($(out "$S_READY" | tr -d '\r'))" \
	grep -q '^ok: serving epoch ' <(out "$S_READY")
ops=$(awk '{ s += $2 } END { print s + 0 }' <(out "$S_METRICS"))
check "/metrics counts the ops run ($(out "$S_METRICS" | wc -l) xtx_ops_total samples, $ops ops)" \
	test "$ops" -gt 0

# ---- nothing of the prefix is left once the block's own teardown ran ----
no_ns() { [ -z "$(ip netns list | awk -v p="$PREFIX-" 'index($1, p) == 1')" ]; }
no_pins() { ! compgen -G "/sys/fs/bpf/xtx/$PREFIX-*" >/dev/null; }
no_daemons() {
	local s f
	for s in 0 1 2; do
		f=/run/xtx/$(server_ns "$s")-$(server_dev "$s")
		[ -e "$f.pid" ] || [ -e "$f.sock" ] && return 1
	done
	return 0
}
no_data() { ! compgen -G "/var/lib/xtx/$PREFIX-*" >/dev/null; }
wait_until 30 no_ns
check "after the teardown no namespace $PREFIX-* is left" no_ns
wait_until 30 no_pins
check "... no pinned maps under /sys/fs/bpf/xtx/$PREFIX-*" no_pins
check "... no xtxd pid file or control socket of those servers" no_daemons
check "... no data directory /var/lib/xtx/$PREFIX-*" no_data
finish
