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
log=$(mktemp -d /tmp/xtx-tests.XXXXXX)
trap 'rm -rf "$log"' EXIT

# run_suite NAME TIMEOUT CMD...: counts its PASS:/FAIL: lines; a crash or
# timeout without a verdict line counts as one failure of the suite.
run_suite() {
	local name=$1 limit=$2 rc p f
	shift 2
	echo "== $name"
	timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$log/$name.out"
	rc=${PIPESTATUS[0]}
	p=$(grep -c '^PASS: ' "$log/$name.out")
	f=$(grep -c '^FAIL: ' "$log/$name.out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL: $name (exit status $rc without a failing case)"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

run_suite layout 60 python3 tests/check_layout.py
for t in build/tests/test_*; do
	run_suite "unit-$(basename "$t")" 120 "$t"
done
for t in tests/integration/test_*.sh; do
	run_suite "$(basename "$t" .sh)" 300 bash "$t"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
