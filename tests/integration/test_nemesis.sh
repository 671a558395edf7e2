#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The nemesis's quick subset (tests/nemesis.sh; make nemesis runs the whole matrix).
# checks: 105 (tests/run.sh fails the suite when fewer verdicts come out; nemesis.sh checks
# its own count against its runs, and prints the sum its quick subset requires)
exec bash "$(dirname "$0")/../nemesis.sh"
