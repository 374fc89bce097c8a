#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job on its embedded default: two test hosts on this machine
# (network namespaces 198.18.0.1 and 198.18.0.2 joined by a veth link shaped
# to 1 Gbit/s), `linerate serve --root` on one, then from the other:
# `linerate bench` (memory to memory), and a 1 GiB file made with
# `linerate gen` sent with `linerate send` (with progress), compared byte
# for byte, both rates side by side, and at the end `linerate doctor`'s
# report (each stage measured, the bottleneck named). Authenticated with a
# fresh token and encrypted; the hosts and files are removed at the end.
# Without root it runs over loopback instead.
#
# Usage: scripts/demo.sh [extra `linerate bench` options, e.g. -t 5 -P 2]
# DEMO_SIZE (default 1G) sets the size of the file sent.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
bin="$PWD/build/linerate"
size=${DEMO_SIZE:-1G}
srv_pid= log= tok= work= benchout=

cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null || true
	[ -n "$srv_pid" ] && wait "$srv_pid" 2>/dev/null || true
	declare -F testhosts_down >/dev/null && testhosts_down
	rm -f "${log:-}" "${tok:-}" "${benchout:-}"
	[ -n "$work" ] && rm -rf "$work"
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wait_port() {
	local i
	for i in $(seq 1 100); do
		if grep -q 'listening' "$1" 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	echo "demo: the server did not start" >&2
	cat "$1" >&2
	return 1
}

log=$(mktemp)
tok=$(mktemp)
benchout=$(mktemp)
chmod 600 "$tok"
"$bin" token >"$tok"
# the file and the server's root on disk, not in memory
work=$(mktemp -d /var/tmp/linerate-demo.XXXXXX)
mkdir "$work/src" "$work/dest"
source scripts/testhosts.sh
if testhosts_require_root 2>/dev/null; then
	testhosts_up 1gbit
	echo "Two test hosts: $TH_ADDR_A ($TH_A) and $TH_ADDR_B ($TH_B)," \
		"veth shaped to 1 Gbit/s with tbf"
	in_a=(ip netns exec "$TH_A")
	ip netns exec "$TH_B" "$bin" serve -B "$TH_ADDR_B" --token-file "$tok" \
		--root "$work/dest" >"$log" 2>&1 &
	srv_pid=$!
	target=$TH_ADDR_B
	speed=(--link-speed 1gbit)
else
	echo "Not root: no test hosts; measuring over loopback instead"
	in_a=()
	"$bin" serve -B 127.0.0.1 -p 0 --token-file "$tok" \
		--root "$work/dest" >"$log" 2>&1 &
	srv_pid=$!
	speed=()
fi
wait_port "$log"
port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$log" | head -n1)
[ -n "${target:-}" ] || target=127.0.0.1
echo
echo "== linerate bench: memory to memory"
"${in_a[@]}" "$bin" bench --token-file "$tok" "${speed[@]}" -p "$port" \
	"$@" "$target" | tee "$benchout"
echo
echo "== linerate gen: a $size file of random bytes"
"$bin" gen "$work/src/file.bin" "$size"
echo
echo "== linerate send: the file to $target, with progress"
"${in_a[@]}" "$bin" send --token-file "$tok" "${speed[@]}" -p "$port" \
	"$work/src/file.bin" "$target:demo/" 2>&1 | tee -a "$benchout"
cmp "$work/src/file.bin" "$work/dest/demo/file.bin"
echo "Same bytes on both sides (cmp)."
echo
echo "== side by side"
awk '
	/receiver$/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /bits\/sec/) {
		v = $i; u = $(i + 1) } }
	/^sent / { for (i = 1; i < NF - 1; i++) if ($i == "s:") {
		s = $(i + 1); if ($(i + 2) ~ /^GB/) s *= 1000; break } }
	END {
		m = (u ~ /^G/) ? v * 1000 / 8 : (u ~ /^M/) ? v / 8 : v / 8000
		printf "  linerate bench, memory to memory:   %7.1f MB/s\n", m
		printf "  linerate send, the file to disk:    %7.1f MB/s", s
		if (m > 0) printf "  (%.2fx the bench)", s / m
		printf "\n"
	}' "$benchout"
echo
echo "== linerate doctor: each stage measured, the bottleneck named"
"${in_a[@]}" "$bin" doctor --token-file "$tok" "${speed[@]}" -p "$port" \
	-t 2 --size 256M "$target" 2>&1
echo
echo "Server log:"
sed 's/^/  /' "$log"
