#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cross builds for the boards of the field reports, and their tests under
# qemu-user:
#
#   scripts/cross.sh [--no-test] {aarch64,armhf,mipsel,s390x,i386,
#                                 static-x86_64,static-aarch64,static-mipsel,all}
#
# Each target builds into build-TARGET/ (build-TARGET/linerate) with
# Debian's cross compiler (gcc-TRIPLET) against the target's own Debian
# packages of libc, OpenSSL, xxHash, cJSON and cmocka, downloaded and
# unpacked into build-TARGET/sysroot (nothing of the target is installed
# into this machine's package database: a multiarch install would need
# the same version on every architecture, which Debian's mirrors do not
# always have). The Meson cross files are under cross/. Then, unless
# --no-test: the unit tests under qemu-user (meson's exe_wrapper), and
# the integration subset tests/integration/test_cross.py between the
# namespace test hosts, with the target's linerate on one end and this
# machine's on the other (byte order across machines with s390x, the
# big-endian one). Installs what it needs from Debian (root; idempotent).
# static-TARGET is the self-contained build against musl, for a router:
# scripts/static.sh does it. all is every target, the static ones too.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(aarch64 armhf mipsel s390x i386)
declare -A DEB_ARCH=([aarch64]=arm64 [armhf]=armhf [mipsel]=mipsel [s390x]=s390x [i386]=i386)
declare -A GCC=([aarch64]=gcc-aarch64-linux-gnu [armhf]=gcc-arm-linux-gnueabihf
	[mipsel]=gcc-mipsel-linux-gnu [s390x]=gcc-s390x-linux-gnu [i386]=gcc-i686-linux-gnu)
declare -A QEMU=([aarch64]=qemu-aarch64 [armhf]=qemu-arm [mipsel]=qemu-mipsel
	[s390x]=qemu-s390x [i386]=qemu-i386)
# the target's packages unpacked into its sysroot
SYSROOT_PKGS=(libc6 libgcc-s1 libatomic1 libssl3 libssl-dev libxxhash0 libxxhash-dev
	libcjson1 libcjson-dev libcmocka0 libcmocka-dev)

usage() {
	echo "usage: scripts/cross.sh [--no-test] {$(IFS=,; echo "${TARGETS[*]}"),static-x86_64,static-aarch64,static-mipsel,all}" >&2
	exit 2
}

test_too=1
no_test=()
[ "${1:-}" = "--no-test" ] && { test_too=0; no_test=(--no-test); shift; }
[ $# -eq 1 ] || usage
statics=()
case $1 in
all) targets=("${TARGETS[@]}") statics=(x86_64 aarch64 mipsel) ;;
aarch64 | armhf | mipsel | s390x | i386) targets=("$1") ;;
static-x86_64 | static-aarch64 | static-mipsel) exec bash scripts/static.sh "${no_test[@]}" "${1#static-}" ;;
*) usage ;;
esac

say() { echo "cross: $*" >&2; }

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# The cross compilers, qemu-user and the build tools; the targets'
# architectures known to apt (for apt-get download).
deps() {
	local -a want=(meson ninja-build pkg-config qemu-user python3-pytest file) missing=()
	local t a updated=0
	for t in "${targets[@]}"; do
		want+=("${GCC[$t]}" "libc6-dev-${DEB_ARCH[$t]}-cross")
	done
	for a in "${want[@]}"; do installed "$a" || missing+=("$a"); done
	for t in "${targets[@]}"; do
		a=${DEB_ARCH[$t]}
		if ! dpkg --print-foreign-architectures | grep -qx "$a"; then
			[ "$(id -u)" -eq 0 ] || { say "run as root to add the $a architecture"; exit 1; }
			dpkg --add-architecture "$a"
			updated=1
		fi
	done
	if [ ${#missing[@]} -gt 0 ] || [ $updated = 1 ]; then
		[ "$(id -u)" -eq 0 ] || { say "missing packages: ${missing[*]}; run as root"; exit 1; }
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q >/dev/null
		if [ ${#missing[@]} -gt 0 ]; then
			say "installing ${missing[*]}"
			apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
		fi
	fi
}

# specs (PKG:ARCH=VERSION) and want (them, one per line): what apt
# would download now for target $1
sysroot_specs() {
	local arch=${DEB_ARCH[$1]} p v
	local -a names=()
	local -A cand=()
	specs=()
	want=""
	for p in "${SYSROOT_PKGS[@]}"; do names+=("$p:$arch"); done
	# one apt-cache call for all (each reads every architecture's lists)
	while read -r p v; do cand[$p]=$v; done < <(apt-cache policy "${names[@]}" |
		awk '/^[^ ].*:$/ { sub(/:$/, ""); p = $0 } /Candidate:/ { print p, $2 }')
	for p in "${names[@]}"; do
		v=${cand[$p]:-}
		[ -n "$v" ] && [ "$v" != "(none)" ] || { say "$t: no package $p"; exit 1; }
		specs+=("$p=$v")
		want+="$p=$v"$'\n'
	done
}

# build-TARGET/sysroot: the target's packages, unpacked; redone when the
# list of versions apt would download changes.
sysroot() {
	local t=$1 dir=build-$1 p
	local -a specs=()
	local want=""
	sysroot_specs "$t"
	if [ -f "$dir/sysroot.list" ] && [ "$(cat "$dir/sysroot.list")" = "${want%$'\n'}" ]; then
		return
	fi
	say "$t: unpacking ${#specs[@]} packages of ${DEB_ARCH[$t]} into $dir/sysroot"
	rm -rf "$dir/sysroot" "$dir/debs"
	mkdir -p "$dir/sysroot" "$dir/debs"
	# (a stale package list names versions the mirror has dropped:
	# refresh it once and try again)
	if ! (cd "$dir/debs" && apt-get download -q "${specs[@]}" >/dev/null 2>&1); then
		say "$t: download failed; refreshing apt's lists"
		apt-get update -q >/dev/null
		sysroot_specs "$t"
		(cd "$dir/debs" && apt-get download -q "${specs[@]}" >/dev/null)
	fi
	for p in "$dir"/debs/*.deb; do dpkg-deb -x "$p" "$dir/sysroot"; done
	printf '%s' "$want" >"$dir/sysroot.list"
}

build() {
	local t=$1 dir=build-$1
	local root
	root=$(cd "$dir/sysroot" && pwd)
	case $root in *"'"* | *" "*) say "$root: no quote or space in the path, please"; exit 1 ;; esac
	printf "[constants]\nsysroot = '%s'\n" "$root" >"$dir/paths.ini"
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" --buildtype=release --cross-file "$dir/paths.ini" \
			--cross-file "cross/$t.ini" >/dev/null
	fi
	ninja -C "$dir" >"$dir/ninja.log" 2>&1 || { grep -v "^\[" "$dir/ninja.log" | tail -40; exit 1; }
	# the target's linerate as a program this machine runs
	printf '#!/bin/sh\nexec %s -L %s %s "$@"\n' "${QEMU[$t]}" "$root" \
		"$(cd "$dir" && pwd)/linerate" >"$dir/linerate-qemu"
	chmod +x "$dir/linerate-qemu"
	say "$t: $dir/linerate ($(file -b "$dir/linerate" | cut -d, -f1-2))"
}

run_tests() {
	local t=$1 dir=build-$1
	local log=$dir/cross-test.log
	say "$t: unit tests under ${QEMU[$t]}"
	if ! meson test -C "$dir" --suite unit --print-errorlogs --timeout-multiplier 4 >"$log" 2>&1; then
		cat "$log"
		exit 1
	fi
	grep -E "^(Ok|Fail):" "$log"
	[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
	ninja -C build >/dev/null
	say "$t: integration subset (tests/integration/test_cross.py)"
	# every case must run here: a skip (no root, no namespaces) fails
	LINERATE_BIN="$PWD/build/linerate" LINERATE_CROSS_BIN="$PWD/$dir/linerate-qemu" \
		LINERATE_CROSS_NAME="$t" \
		/usr/bin/python3 -m pytest -q -rs tests/integration/test_cross.py | tee "$log"
	if grep -q "skipped" "$log"; then
		say "$t: some cases were skipped (above): they must run"
		exit 1
	fi
}

bash scripts/deps.sh # this machine's build and the test hosts
deps
for t in "${targets[@]}"; do
	sysroot "$t"
	build "$t"
	[ $test_too = 1 ] && run_tests "$t"
done
for t in "${statics[@]}"; do bash scripts/static.sh "${no_test[@]}" "$t"; done
say "done: ${targets[*]}"
