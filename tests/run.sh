#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs every test suite (unit, then netns integration) and prints "N passed, N failed".
set -uo pipefail

cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "Error: the tests load BPF programs and create network namespaces: run as root" >&2
	exit 1
fi

passed=0
failed=0
# A suite's time limit: what stops a hang, never what a passing suite comes near, on a
# machine busy with something else too (make test-loaded); XTX_SUITE_LIMIT overrides.
LIMIT=${XTX_SUITE_LIMIT:-900}
times=""
log=$(mktemp -d /tmp/xtx-tests.XXXXXX)
trap 'rm -rf "$log"' EXIT

# The number of verdicts a suite's source declares ("checks: N" in a comment):
# a suite that stops early or skips its checks must not pass by saying less.
declared_checks() {
	grep -m1 -o 'checks: [0-9]*' "$1" 2>/dev/null | cut -d' ' -f2
}

# execute NAME TIMEOUT CMD...: runs a suite, its output to $log/NAME.out (and the screen,
# unless QUIET=1: a suite running beside another), its exit status and seconds to
# $log/NAME.rc.
execute() {
	local name=$1 limit=$2 t0=$SECONDS rc
	shift 2
	if [ "${QUIET:-0}" = 1 ]; then
		timeout --kill-after=10 "$limit" "$@" >"$log/$name.out" 2>&1
		rc=$?
	else
		echo "== $name"
		timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$log/$name.out"
		rc=${PIPESTATUS[0]}
	fi
	echo "$rc $((SECONDS - t0)) ${QUIET:-0}" >"$log/$name.rc"
}

# tally NAME SOURCE: prints a suite's output and counts its PASS:/FAIL: lines; a crash or
# timeout without a verdict line, or fewer verdicts than SOURCE declares, counts as one
# failure of the suite.
tally() {
	local name=$1 src=$2 rc secs quiet p f want
	read -r rc secs quiet <"$log/$name.rc"
	if [ "$quiet" = 1 ]; then
		echo "== $name"
		cat "$log/$name.out"
	fi
	# where the time goes: make test is kept under 15 minutes
	echo "# $name took $secs s"
	times+="$secs $name"$'\n'
	p=$(grep -c '^PASS: ' "$log/$name.out")
	f=$(grep -c '^FAIL: ' "$log/$name.out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL: $name (exit status $rc without a failing case)"
		f=1
	fi
	want=$(declared_checks "$src")
	if [ -z "$want" ]; then
		echo "FAIL: $name: $src declares no \"checks: N\""
		f=$((f + 1))
	elif [ $((p + f)) -lt "$want" ]; then
		echo "FAIL: $name: $((p + f)) verdicts, $src declares $want"
		f=$((f + 1))
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

# run_suite NAME TIMEOUT SOURCE CMD...: one suite, counted as it ends.
run_suite() {
	local name=$1 limit=$2 src=$3
	shift 3
	execute "$name" "$limit" "$@"
	tally "$name" "$src"
}

run_suite layout 60 tests/check_layout.py python3 tests/check_layout.py
# The unit suites built with AddressSanitizer and UBSan (make SAN=1) run beside the plain
# ones: both are CPU-bound, a core each. Any sanitizer error, leak included, ends a suite
# with a non-zero status, which fails it. The XDP fuzz checks the harness's own memory
# with 10^5 packets there (10^6 in the plain run), the history checker 10^5 transactions.
(
	export QUIET=1
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	export XTX_FUZZ_PACKETS=${XTX_FUZZ_PACKETS:-100000}
	export HISTORY_TEST_TXNS=${HISTORY_TEST_TXNS:-100000}
	for t in build-san/tests/test_*; do
		[ -x "$t" ] && execute "san-unit-$(basename "$t")" "$LIMIT" "$t"
	done
) &
san=$!
for t in build/tests/test_*; do
	run_suite "unit-$(basename "$t")" "$LIMIT" "tests/unit/$(basename "$t").c" "$t"
done
wait "$san"
for t in build-san/tests/test_*; do
	[ -x "$t" ] && tally "san-unit-$(basename "$t")" "tests/unit/$(basename "$t").c"
done
# Functional suites that assert no rate and no tight timing run beside the others, one at a
# time: the integration suites mostly wait (leases, drains, processes), and the whole run
# stays under 15 minutes.
BESIDE="test_bigvalue test_bigvalue_ops test_valstore test_bigvalue_log test_kv test_load
	test_txn_ops test_replicated_load test_fuzz_daemon test_service test_log test_udpd
	test_hades_bigvalue test_snapshot_inflight test_peer_auth test_fence_full test_history
	test_tpcc test_restart_same test_one_daemon test_quickstart test_workloads test_ycsb_retwis
	test_cluster_recover test_zk_ensemble test_first_hour test_recover"
(
	export QUIET=1
	for n in $BESIDE; do
		execute "$n" "$LIMIT" bash "tests/integration/$n.sh"
	done
) &
beside=$!
for t in tests/integration/test_*.sh; do
	n=$(basename "$t" .sh)
	[[ " $(echo $BESIDE) " == *" $n "* ]] && continue
	run_suite "$n" "$LIMIT" "$t" bash "$t"
done
wait "$beside"
for n in $BESIDE; do
	tally "$n" "tests/integration/$n.sh"
done

echo "# slowest suites:"
sort -rn <<<"$times" | head -n 5 | sed 's/^/#   /'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
