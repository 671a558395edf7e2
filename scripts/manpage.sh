#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# manpage.sh BINARY SECTION SUMMARY: a man page made from BINARY -h, on stdout.
# The help text is the reference; the page keeps it verbatim so the two never disagree.
set -euo pipefail
bin=$1 section=$2 summary=$3
name=$(basename "$bin")
help=$("$bin" -h 2>&1 || true)
[ -n "$help" ] || { echo "Error: $bin -h printed nothing" >&2; exit 1; }
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"; }
printf '.TH %s %s "%s" "xtx" "xtx manual"\n' "$(tr a-z A-Z <<<"$name")" "$section" "$(date -u +%Y-%m-%d)"
printf '.SH NAME\n%s \\- %s\n' "$name" "$summary"
printf '.SH SYNOPSIS\n.nf\n'
grep -m1 '^Usage:' <<<"$help" | sed 's/^Usage: *//' | esc
printf '.fi\n.SH DESCRIPTION\n.nf\n'
grep -v '^Usage:' <<<"$help" | esc
printf '.fi\n.SH SEE ALSO\nxtxd(8), xtxctl(8), xtxbench(1), xtx-udpd(8)\n'
