#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs every Debian package that building, testing, the demo and the benchmarks need.
# Idempotent: quiet and fast when everything is already present.
set -euo pipefail

packages=(
	make gcc pkg-config
	clang-19 llvm-19 lld-19
	libbpf-dev libxdp-dev xdp-tools bpftool
	libelf-dev zlib1g-dev liburcu-dev libmicrohttpd-dev libzookeeper-mt-dev zookeeper
	iproute2 gnuplot-nox jq python3 binutils systemd procps xxd curl
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "Error: missing packages (${missing[*]}) and not root; run: sudo $0" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
