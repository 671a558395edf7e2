#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bundle: a copy of the built tree that runs make bench-scale on a machine with only
# glibc, perl, coreutils and util-linux (no iproute2, jq, bpftool, libbpf): the binaries, the
# XDP pass program, the scripts, every shared library they need but glibc's, and this
# machine's `ip` and `taskset`. bench_scale.sh finds lib/ and tools/ beside it.
#   make bundle && scp build/bundle/xtx-scale.tar.gz host: && ssh host \
#       'tar xzf xtx-scale.tar.gz && xtx-scale/scripts/bench_scale.sh'
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
DEST=$BUILD/bundle/xtx-scale
BINS=(xtxd xtx-udpd xtxbench xtxctl)
TOOLS=(ip taskset)
# glibc's own: the target has these, and they must match its loader
GLIBC='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl)[.-]'

rm -rf "$DEST"
mkdir -p "$DEST/build/bpf" "$DEST/scripts" "$DEST/lib" "$DEST/tools"
for b in "${BINS[@]}"; do cp "$BUILD/$b" "$DEST/build/"; done
cp "$BUILD/bpf/xdp_pass.bpf.o" "$DEST/build/bpf/"
cp "$ROOT/scripts/bench_scale.sh" "$ROOT/scripts/scale_report.pl" "$ROOT/scripts/topo.sh" \
	"$DEST/scripts/"
for t in "${TOOLS[@]}"; do cp "$(command -v "$t")" "$DEST/tools/"; done
# libxdp loads its dispatcher from a file at run time (LIBXDP_OBJECT_PATH, set by the bench)
mkdir -p "$DEST/lib/bpf"
cp /usr/lib/x86_64-linux-gnu/bpf/xdp-dispatcher.o /usr/lib/x86_64-linux-gnu/bpf/xsk_def_xdp_prog*.o \
	"$DEST/lib/bpf/"

# every library the binaries and tools load, by the path this machine resolves it to
for f in "$DEST"/build/xtx* "$DEST"/tools/*; do
	ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
	[[ $name =~ $GLIBC ]] && continue
	cp -L "$path" "$DEST/lib/$name"
done

# the bundle must not depend on this machine: every library but glibc's resolves from lib/
stray=$(for f in "$DEST"/build/xtx* "$DEST"/tools/*; do
	LD_LIBRARY_PATH=$DEST/lib ldd "$f" | awk -v lib="$DEST/lib/" -v glibc="$GLIBC" '
		$1 ~ glibc { next }
		/not found/ || ($2 == "=>" && index($3, lib) != 1) { print $1 }'
done | sort -u)
[ -z "$stray" ] || { echo "Error: bundle: libraries not carried: $stray" >&2; exit 1; }

tar -C "$BUILD/bundle" -czf "$BUILD/bundle/xtx-scale.tar.gz" xtx-scale
echo "bundle: $DEST ($(du -sh "$DEST" | cut -f1)), $BUILD/bundle/xtx-scale.tar.gz" \
	"($(find "$DEST/lib" -maxdepth 1 -name '*.so*' | wc -l) libraries)"
