#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs a command with a CPU hog on every core beside it (one busy loop per core, at the
# command's own priority), and stops the hogs when it ends, whichever way: make test-loaded.
set -uo pipefail

if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
	cat <<USAGE
Usage: ${0##*/} COMMAND [ARGS...]
Runs COMMAND with one busy loop per core (HOGS=N for another count) running beside it;
exits with COMMAND's status.

Example: ${0##*/} tests/run.sh
USAGE
	[ $# -eq 0 ] && exit 2 || exit 0
fi
n=${HOGS:-$(nproc)}
pids=()
stop() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
}
trap stop EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < n; i++)); do
	# a subshell spinning on a builtin: no fork per turn, all CPU
	( while :; do :; done ) &
	pids+=($!)
done
echo "cpu_hog: $n busy loops beside: $*"
t0=$SECONDS
"$@"
rc=$?
echo "cpu_hog: '$*' exited $rc after $((SECONDS - t0)) s with $n busy loops beside it"
exit "$rc"
