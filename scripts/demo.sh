#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job on its embedded default: two test hosts on this machine
# (network namespaces 198.18.0.1 and 198.18.0.2 joined by a veth link shaped
# to 1 Gbit/s), `linerate serve` on one, `linerate bench` from the other,
# authenticated with a fresh token and encrypted, then the hosts are
# removed. Without root it runs over loopback instead.
#
# Usage: scripts/demo.sh [extra `linerate bench` options, e.g. -t 5 -P 2]
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
bin="$PWD/build/linerate"
srv_pid= log= tok=

cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null || true
	[ -n "$srv_pid" ] && wait "$srv_pid" 2>/dev/null || true
	declare -F testhosts_down >/dev/null && testhosts_down
	rm -f "${log:-}" "${tok:-}"
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Wait (bounded) for the server to print its port.
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
chmod 600 "$tok"
"$bin" token >"$tok"
source scripts/testhosts.sh
if testhosts_require_root 2>/dev/null; then
	testhosts_up 1gbit
	echo "Two test hosts: $TH_ADDR_A ($TH_A) and $TH_ADDR_B ($TH_B)," \
		"veth shaped to 1 Gbit/s with tbf"
	ip netns exec "$TH_B" "$bin" serve -B "$TH_ADDR_B" --token-file "$tok" \
		>"$log" 2>&1 &
	srv_pid=$!
	wait_port "$log"
	echo
	ip netns exec "$TH_A" "$bin" bench --token-file "$tok" \
		--link-speed 1gbit "$@" "$TH_ADDR_B"
else
	echo "Not root: no test hosts; measuring over loopback instead"
	"$bin" serve -B 127.0.0.1 -p 0 --token-file "$tok" >"$log" 2>&1 &
	srv_pid=$!
	wait_port "$log"
	port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$log" | head -n1)
	"$bin" bench --token-file "$tok" "$@" "127.0.0.1:$port"
fi
echo
echo "Server log:"
sed 's/^/  /' "$log"
rm -f "$log" "$tok"
