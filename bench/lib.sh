# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# lib.sh - what the bench scripts share: messages and the common options
# (-t SEC, --repeat N, --rows LIST, --out FILE, --help; --tools LIST for
# scripts that set opt_tools). Source it after
# setting BENCH_NAME and BENCH_SCRIPT (the script's path, for --help) and
# the opt_* defaults; then call bench_parse_options "$@".

usage() {
    sed -n '/^# usage:/,/^# 1 some run failed/s/^# \{0,1\}//p' "$BENCH_SCRIPT"
}

die_usage() {
    printf '%s: %s\n' "$BENCH_NAME" "$*" >&2
    printf "Try '%s --help'.\n" "$BENCH_SCRIPT" >&2
    exit 2
}

log() {
    printf '%s: %s\n' "$BENCH_NAME" "$*" >&2
}

bench_parse_options() {
    while [ $# -gt 0 ]; do
        case $1 in
        -t | --time)
            [ $# -ge 2 ] || die_usage "$1 needs a value"
            opt_time=$2
            shift 2
            ;;
        -t*) opt_time=${1#-t}; shift ;;
        --time=*) opt_time=${1#*=}; shift ;;
        --repeat)
            [ $# -ge 2 ] || die_usage "$1 needs a value"
            opt_repeat=$2
            shift 2
            ;;
        --repeat=*) opt_repeat=${1#*=}; shift ;;
        --rows)
            [ $# -ge 2 ] || die_usage "$1 needs a value"
            opt_rows=$2
            shift 2
            ;;
        --rows=*) opt_rows=${1#*=}; shift ;;
        --tools | --tools=*)
            # only scripts that set opt_tools take it
            [ -n "${opt_tools+x}" ] || die_usage "unknown argument '$1'"
            if [ "$1" = --tools ]; then
                [ $# -ge 2 ] || die_usage "$1 needs a value"
                opt_tools=$2
                shift 2
            else
                opt_tools=${1#*=}
                shift
            fi
            ;;
        --out)
            [ $# -ge 2 ] || die_usage "$1 needs a value"
            opt_out=$2
            shift 2
            ;;
        --out=*) opt_out=${1#*=}; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die_usage "unknown argument '$1'" ;;
        esac
    done

    if ! [[ $opt_time =~ ^[0-9]{1,4}$ ]] || [ "$opt_time" -lt 1 ] || [ "$opt_time" -gt 3600 ]; then
        die_usage "-t wants whole seconds 1-3600, not '$opt_time'"
    fi
    if ! [[ $opt_repeat =~ ^[0-9]{1,3}$ ]] || [ "$opt_repeat" -lt 1 ] || [ "$opt_repeat" -gt 100 ]; then
        die_usage "--repeat wants 1-100, not '$opt_repeat'"
    fi
}

# PID and all its descendants, one per line.
descendants() {
    local child
    echo "$1"
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        descendants "$child"
    done
}

# bench_wait_listen ADDR PORT PID [POLLS]: wait (bounded: POLLS polls of
# 50 ms, default 400, ~20 s; a server held to 20% of a core starts
# slowly) until our server (PID or a descendant) listens on exactly
# ADDR:PORT in the server's namespace (the array NS_SERVER, the command
# prefix that enters it). Polls with ss: a connect would be iperf3 -s -1's
# one client; and checking the owner keeps a stranger's listener on the
# same port from passing for ours.
bench_wait_listen() {
    local addr=$1 port=$2 pid=$3 polls=${4:-400} i out p
    for ((i = 0; i < polls; i++)); do
        out=$("${NS_SERVER[@]}" ss -ltnpH "( src $addr:$port )" 2>/dev/null) || out=
        if [ -n "$out" ]; then
            for p in $(descendants "$pid"); do
                [[ $out == *"pid=$p,"* ]] && return 0
            done
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# The last line of a /usr/bin/time -o file (an earlier line may say
# "Command exited with non-zero status N"): "elapsed user sys maxrss_kb".
time_line() {
    [ -s "$1" ] || return 1
    tail -n 1 "$1"
}
