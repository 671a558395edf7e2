#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The installed tree works on its own: make install into a DESTDIR, both examples built from
# it with pkg-config alone (shared and static), run against servers with the installed
# libxtx.so, the installed xtxbench populating and verifying through the installed xtxctl,
# and make uninstall leaving nothing behind.
# checks: 13 (tests/run.sh fails the suite when fewer verdicts come out)
source "$(dirname "$0")/lib.sh"

D=$(mktemp -d /tmp/xtx-install.XXXXXX)
trap 'rm -rf "$D"; cleanup' EXIT INT TERM
P=/usr/local
out=$(make -s -C "$ROOT" install DESTDIR="$D" PREFIX="$P" 2>&1)
check "make install DESTDIR= PREFIX=$P" test -x "$D$P/bin/xtxbench" -a -x "$D$P/sbin/xtxctl"
check "libxtx.so with its soname, headers under include/xtx" \
	bash -c "readelf -d '$D$P/lib/libxtx.so' | grep -q 'SONAME.*libxtx.so.0' &&
		test -f '$D$P/include/xtx/libxtx.h' -a ! -e '$D$P/include/libxtx.h' -a ! -e '$D$P/include/cluster.h'"

# what a user of the installed tree runs, nothing of the source tree on its paths
export PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_LIBDIR=$D$P/lib/pkgconfig
flags=$(pkg-config --cflags --libs libxtx)
check "pkg-config --cflags --libs libxtx ($flags)" \
	bash -c "[[ '$flags' == *'-I$D$P/include'* && '$flags' == *-lxtx* && '$flags' != *'$ROOT'* ]]"
built=0
for e in transfer values; do
	# the examples as installed, built outside the tree
	(cd "$D" && cc -Wall -Wextra -Werror -o "$D/$e" "$D$P/share/xtx/examples/$e.c" $flags) &&
		built=$((built + 1))
done
check "both examples build against the installed tree ($built of 2)" test "$built" -eq 2
check "and link libxtx.so.0 from it" \
	bash -c "LD_LIBRARY_PATH='$D$P/lib' ldd '$D/transfer' | grep -q 'libxtx.so.0 => $D$P/lib/'"
static=$(pkg-config --static --libs libxtx)
check "transfer links statically too (pkg-config --static)" \
	cc -o "$D/transfer-static" "$D$P/share/xtx/examples/transfer.c" \
	$(pkg-config --cflags libxtx) "$D$P/lib/libxtx.a" ${static//-lxtx/}

setup_servers --lock-lease 60s
ips=$(all_server_ips)
run_installed() { client env LD_LIBRARY_PATH="$D$P/lib" PATH=/usr/bin:/bin "$@"; }
out=$(run_installed "$D/transfer" --servers "$ips" 1 2 30 2>&1)
check "the installed transfer commits ($out)" grep -q "^committed: account 1 = 70, account 2 = 130" <<<"$out"
out=$(run_installed "$D/values" --servers "$ips" 2>&1)
rc=$?
check "the installed values example runs (exit $rc)" test "$rc" -eq 0
out=$(run_installed "$D/transfer-static" --servers "$ips" 2 1 30 2>&1)
check "the static transfer commits ($out)" grep -q "^committed: account 2 = 100, account 1 = 100" <<<"$out"

# xtxbench in bin/ runs the xtxctl in sbin/ for --ctl (populate, verify)
out=$(run_installed "$D$P/bin/xtxbench" smallbank --servers "$ips" --ctl "$(all_server_ctls)" \
	--accounts 200 --populate --duration 1 --verify 2>&1)
rc=$?
check "the installed xtxbench populates and verifies through the installed xtxctl (exit $rc)" \
	test "$rc" -eq 0
[ "$rc" -eq 0 ] || tail -n 5 <<<"$out" | sed 's/^/    /'
out=$(run_installed "$D$P/bin/xtxbench" smallbank --servers "$ips" --ctl "$(all_server_ctls)" \
	--xtxctl /nonexistent/xtxctl --accounts 200 --populate --duration 0 2>&1)
check "a missing xtxctl is named ($(grep -m1 Error <<<"$out"))" \
	grep -q "cannot run /nonexistent/xtxctl: give --xtxctl PATH" <<<"$out"

make -s -C "$ROOT" uninstall DESTDIR="$D" PREFIX="$P" >/dev/null 2>&1
left=$(find "$D" -path "$D/transfer*" -prune -o -path "$D/values" -prune -o -type f -print -o -type l -print)
check "make uninstall removes every file it installed (${left:-none left})" test -z "$left"
left=$(ls -d "$D$P/include/xtx" "$D$P/share/xtx" "$D$P/lib/pkgconfig" "$D$P/lib/xtx" 2>/dev/null)
check "and its own directories (${left:-none left})" test -z "$left"
finish
