# SPDX-License-Identifier: GPL-2.0-only
# The verdicts the round-based nemeses share (nemesis_failover.sh, nemesis_zk.sh), sourced
# after tests/integration/lib.sh: a failed invariant is an anomaly, and the history check
# counts the transactions it checked.
ANOMALIES=0
CHECKED=0
# invariant DESCRIPTION CONDITION...: a failed one is an anomaly
invariant() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; ANOMALIES=$((ANOMALIES + 1)); fi
}
history_ok() {	# history_ok NAME CHECKER-ARGS...
	local out rc n
	out=$("$BUILD/xtxbench" check-history --max-print 3 "${@:2}" 2>&1)
	rc=$?
	n=$(grep -o '^history: [0-9]* transactions' <<<"$out" | grep -o '[0-9]*')
	CHECKED=$((CHECKED + ${n:-0}))
	invariant "$1: history serializable, ${n:-0} transactions (exit $rc)" \
		test "$rc" -eq 0 -a "${n:-0}" -gt 0
	[ "$rc" -eq 0 ] || head -n 6 <<<"$out" | sed 's/^/    /'
}
