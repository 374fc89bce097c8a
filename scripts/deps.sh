#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install what linerate needs to build, test and benchmark, from Debian's
# packages. Idempotent: installs only what is missing.
set -euo pipefail

pkgs=(
	build-essential clang-format meson ninja-build pkg-config clang libclang-rt-14-dev
	libssl-dev libxxhash-dev libcjson-dev libcmocka-dev
	python3 python3-pytest
	iproute2 iputils-ping ethtool procps psmisc iperf3 universal-ctags
	openssh-server openssh-client passwd nftables
	rsync # the filter tests compare with it
	busybox # the --copy-self script under the shell tools of OpenWrt
	zsh # the completion test runs its script
	systemd # systemd-analyze verify checks the service unit
	librsvg2-bin # rsvg-convert draws linerate plot's SVG for its test
	attr acl # getfattr/setfattr and getfacl/setfacl check -X and -A
	e2fsprogs # mkfs.ext4 makes the test image of -X and -A
	btrfs-progs xfsprogs # images whose extents are shared: the delta clones
	chromium # scripts/render-html.sh: plot's page in a browser (23 s)
)
if [ "${1:-}" = "--bench" ]; then
	pkgs+=(netcat-openbsd fio hyperfine time)
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]}; run as root to install them" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# iperf3's package asks whether to start a daemon; answer no
echo "iperf3 iperf3/start_daemon boolean false" | debconf-set-selections
# nor may openssh-server start the system's sshd: the tests start their
# own, in a namespace (policy-rc.d 101: "action forbidden"), for the
# install only
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
	policy=/usr/sbin/policy-rc.d
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
