# SPDX-License-Identifier: MIT
#
# testhosts.sh - two throw-away test hosts in network namespaces.
#
# This is a bash library: `source` it, do not execute it.
#
#   source scripts/testhosts.sh
#   testhosts_require_root || exit 77      # reason is printed on stderr
#   trap testhosts_down EXIT INT TERM      # ALWAYS install this trap
#   testhosts_up 1gbit || exit 1           # RATE is optional
#   ip netns exec "$TH_A" ping -c1 -W2 "$TH_ADDR_B"
#
# Topology (198.18.0.0/15 is the RFC 2544 benchmarking range):
#
#   netns $TH_A                         netns $TH_B
#   lo up                               lo up
#   $TH_IF_A 198.18.0.1/24  <-- veth -->  $TH_IF_B 198.18.0.2/24
#
# Names are derived from a tag, ${TESTHOSTS_TAG:-$$} (the pid of the shell
# that sources this file by default); the tag must be [A-Za-z0-9_]{1,12}:
#   TH_A=lr${tag}a  TH_B=lr${tag}b  TH_IF_A=lr${tag}x  TH_IF_B=lr${tag}y
# Interface names therefore stay <= 15 characters.  Set TESTHOSTS_TAG to
# something unique when one shell needs more than one pair (down the first
# pair before changing the tag, testhosts_down only knows the current pair).
#
# testhosts_up [RATE]
#     Creates the topology and exports TH_A, TH_B, TH_IF_A, TH_IF_B,
#     TH_ADDR_A, TH_ADDR_B.  With RATE (a tc rate such as 1gbit or 100mbit),
#     the root qdisc of BOTH veth ends becomes
#       tbf rate RATE burst 64kb latency 20ms overhead 24
#     (overhead 24 = preamble + FCS + inter-frame gap, so the limit behaves
#     like a real Ethernet line of that rate: ~941 Mbit/s TCP goodput at
#     1gbit) and TSO/GSO/GRO are turned off on both ends.  Waits (bounded)
#     until both ends are operationally up.  On any failure it removes
#     everything it created and returns 1.  Refuses to reuse namespaces
#     that already exist (it never deletes what it did not create).
#
# testhosts_down
#     Terminates processes still running inside the two namespaces (TERM,
#     then KILL after ~2 s) and deletes the namespaces, which also deletes
#     the veth pair.  Idempotent, always returns 0.  Only touches namespaces
#     this shell created with testhosts_up.
#
# testhosts_require_root
#     Returns 0 if this process is root and `ip netns add/del` works (checked
#     with a throw-away namespace); otherwise prints the reason on stderr and
#     returns 1.
#
# Note on the trap: with `trap testhosts_down EXIT INT TERM` bash runs
# testhosts_down on the signal and then *continues* the script (now without
# namespaces); the EXIT trap runs it again harmlessly.  To stop on a signal
# instead, use:
#   trap testhosts_down EXIT
#   trap 'exit 130' INT
#   trap 'exit 143' TERM
#
# The library does not change shell options; it works under set -euo pipefail.

TH_ADDR_A=198.18.0.1
TH_ADDR_B=198.18.0.2
TH_PREFIX=24

# Namespaces created (and therefore owned) by this shell.
_TH_OWNED_NS=()

_th_err() {
    printf 'testhosts: %s\n' "$*" >&2
}

# Run a command; on failure report it (with its stderr) and return 1.
_th_run() {
    local out
    if ! out=$("$@" 2>&1); then
        _th_err "command failed: $*"
        [ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/testhosts:   /' >&2
        return 1
    fi
    return 0
}

_th_ns_exists() {
    local line list
    list=$(ip netns list 2>/dev/null) || return 1
    while IFS= read -r line; do
        [ "${line%% *}" = "$1" ] && return 0
    done <<<"$list"
    return 1
}

# Wait (bounded: 50 polls, ~5 s) until IF in NS reports operstate UP.
_th_wait_up() {
    local ns=$1 ifname=$2 i state
    for ((i = 0; i < 50; i++)); do
        state=$(ip netns exec "$ns" cat "/sys/class/net/$ifname/operstate" 2>/dev/null) || state=
        [ "$state" = up ] && return 0
        sleep 0.1
    done
    _th_err "$ifname in $ns did not come up (operstate '${state:-?}')"
    return 1
}

# Terminate every process inside namespace NS (bounded).
_th_kill_ns_pids() {
    local ns=$1 pids i
    pids=$(ip netns pids "$ns" 2>/dev/null) || return 0
    [ -z "$pids" ] && return 0
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do
        pids=$(ip netns pids "$ns" 2>/dev/null) || return 0
        [ -z "$pids" ] && return 0
        sleep 0.1
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    return 0
}

testhosts_require_root() {
    local probe="lrprobe$$"
    if [ "$(id -u 2>/dev/null)" != 0 ]; then
        _th_err "not root (uid $(id -u 2>/dev/null)); network namespaces need root"
        return 1
    fi
    if ! command -v ip >/dev/null 2>&1; then
        _th_err "'ip' (iproute2) not found"
        return 1
    fi
    if ! ip netns list >/dev/null 2>&1; then
        _th_err "'ip netns list' does not work"
        return 1
    fi
    if ! _th_run ip netns add "$probe"; then
        _th_err "cannot create a network namespace"
        return 1
    fi
    if ! _th_run ip netns del "$probe"; then
        _th_err "cannot delete network namespace $probe"
        return 1
    fi
    return 0
}

testhosts_down() {
    local ns
    for ns in "${_TH_OWNED_NS[@]}"; do
        _th_kill_ns_pids "$ns"
        ip netns del "$ns" >/dev/null 2>&1 || true
    done
    _TH_OWNED_NS=()
    return 0
}

testhosts_up() {
    local rate=${1:-} tag=${TESTHOSTS_TAG:-$$} end ns ifname

    if [ "${#_TH_OWNED_NS[@]}" -ne 0 ]; then
        _th_err "testhosts_up called twice; call testhosts_down first"
        return 1
    fi
    if ! [[ $tag =~ ^[A-Za-z0-9_]{1,12}$ ]]; then
        _th_err "TESTHOSTS_TAG '$tag' must match [A-Za-z0-9_]{1,12}"
        return 1
    fi
    if [ -n "$rate" ]; then
        if ! [[ $rate =~ ^[0-9]+(\.[0-9]+)?[A-Za-z]*$ ]]; then
            _th_err "bad rate '$rate' (expected a tc rate such as 1gbit)"
            return 1
        fi
        local tool
        for tool in tc ethtool; do
            if ! command -v "$tool" >/dev/null 2>&1; then
                _th_err "'$tool' not found (needed for RATE)"
                return 1
            fi
        done
    fi

    export TH_A="lr${tag}a" TH_B="lr${tag}b"
    export TH_IF_A="lr${tag}x" TH_IF_B="lr${tag}y"
    export TH_ADDR_A TH_ADDR_B

    for ns in "$TH_A" "$TH_B"; do
        if _th_ns_exists "$ns"; then
            _th_err "namespace $ns already exists (stale? remove it with: ip netns del $ns)"
            testhosts_down
            return 1
        fi
        if ! _th_run ip netns add "$ns"; then
            testhosts_down
            return 1
        fi
        _TH_OWNED_NS+=("$ns")
    done

    # Create the pair directly inside the namespaces: nothing is ever left
    # behind in (or collides with names in) the caller's namespace.
    if ! _th_run ip link add "$TH_IF_A" netns "$TH_A" type veth \
            peer name "$TH_IF_B" netns "$TH_B" ||
       ! _th_run ip -n "$TH_A" addr add "$TH_ADDR_A/$TH_PREFIX" dev "$TH_IF_A" ||
       ! _th_run ip -n "$TH_B" addr add "$TH_ADDR_B/$TH_PREFIX" dev "$TH_IF_B" ||
       ! _th_run ip -n "$TH_A" link set lo up ||
       ! _th_run ip -n "$TH_B" link set lo up; then
        testhosts_down
        return 1
    fi

    if [ -n "$rate" ]; then
        for end in A B; do
            if [ "$end" = A ]; then ns=$TH_A ifname=$TH_IF_A; else ns=$TH_B ifname=$TH_IF_B; fi
            if ! _th_run ip netns exec "$ns" ethtool -K "$ifname" tso off gso off gro off ||
               ! _th_run ip netns exec "$ns" tc qdisc add dev "$ifname" root tbf \
                    rate "$rate" burst 64kb latency 20ms overhead 24; then
                testhosts_down
                return 1
            fi
        done
    fi

    if ! _th_run ip -n "$TH_A" link set "$TH_IF_A" up ||
       ! _th_run ip -n "$TH_B" link set "$TH_IF_B" up ||
       ! _th_wait_up "$TH_A" "$TH_IF_A" ||
       ! _th_wait_up "$TH_B" "$TH_IF_B"; then
        testhosts_down
        return 1
    fi
    return 0
}
