#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_proto: the first bytes of connections.

Each file is a preamble followed by one or more messages, as a client or a
server sends them (src/core/proto.h describes the format), plus a few
malformed ones that stop at each stage of the parser. The encoder here is
written from the format, not from src/core/proto/, so that the two check each
other: the fuzzer's regression test decodes every file.

    python3 tests/fuzz/gen_corpus.py [OUTDIR]

OUTDIR defaults to tests/fuzz/corpus/proto next to this script. Files
with the names below are overwritten; others (inputs saved from fuzzing
runs) are left alone.
"""

import os
import struct
import sys

MAGIC = b"LNRT"
VERSION = 2

# message types
CTRL_OPEN = 0x01
DATA_OPEN = 0x02
ERROR = 0x03
TEST_REQUEST = 0x10
TEST_ACCEPT = 0x11
TEST_START = 0x12
TEST_STOP = 0x13
TEST_RESULTS = 0x14

# TLV tags
T_SOFTWARE = 0x0001
T_FEATURES = 0x0002
T_TEST_ID = 0x0003
T_STREAM = 0x0004
T_DIR = 0x0005
T_CODE = 0x0006
T_TEXT = 0x0007
T_MODE = 0x0010
T_STREAMS = 0x0011
T_DURATION_MS = 0x0012
T_BYTES = 0x0013
T_BLKSIZE = 0x0014
T_WINDOW = 0x0015
T_CC = 0x0016
T_MSS = 0x0017
T_ZEROCOPY = 0x0018
T_OMIT_MS = 0x0019
T_OVERLAP = 0x0020
T_CPU = 0x0021
T_STREAM_RESULT = 0x0022
T_MAX_DURATION_MS = 0x0023
CRITICAL = 0x8000

TEST_ID = bytes(range(0x40, 0x50))


def preamble(vmin=VERSION, vmax=VERSION, chosen=0, flags=0):
    return MAGIC + bytes([vmin, vmax, chosen, flags])


def tlv(tag, value):
    return struct.pack(">HH", tag, len(value)) + value


def u8(tag, v):
    return tlv(tag, struct.pack(">B", v))


def u16(tag, v):
    return tlv(tag, struct.pack(">H", v))


def u32(tag, v):
    return tlv(tag, struct.pack(">I", v))


def u64(tag, v):
    return tlv(tag, struct.pack(">Q", v))


def text(tag, s):
    return tlv(tag, s.encode("ascii"))


def msg(mtype, body, flags=0, reserved=0, length=None):
    if length is None:
        length = len(body)
    return struct.pack(">BBHI", mtype, flags, reserved, length) + body


def ctrl_open(software="linerate 0.1.0", features=0):
    return msg(CTRL_OPEN, text(T_SOFTWARE, software) +
               u64(T_FEATURES, features))


def data_open(stream, direction):
    return msg(DATA_OPEN, tlv(T_TEST_ID, TEST_ID) + u16(T_STREAM, stream) +
               u8(T_DIR, direction))


def error(code, message):
    return msg(ERROR, u32(T_CODE, code) + text(T_TEXT, message))


def test_request(mode=0, streams=1, duration_ms=10000, nbytes=0,
                 blksize=131072, window=0, cc="", mss=0, zerocopy=0,
                 omit_ms=0):
    body = (u8(T_MODE, mode) + u16(T_STREAMS, streams) +
            u64(T_DURATION_MS, duration_ms) + u64(T_BYTES, nbytes) +
            u32(T_BLKSIZE, blksize) + u32(T_WINDOW, window))
    if cc:
        body += text(T_CC, cc)
    body += u32(T_MSS, mss) + u8(T_ZEROCOPY, zerocopy) + \
        u64(T_OMIT_MS, omit_ms)
    return msg(TEST_REQUEST, body)


def test_accept(software="linerate 0.1.0", overlap=0,
                max_duration_ms=3600000):
    return msg(TEST_ACCEPT, tlv(T_TEST_ID, TEST_ID) +
               text(T_SOFTWARE, software) + u16(T_OVERLAP, overlap) +
               u64(T_MAX_DURATION_MS, max_duration_ms))


def stream_result(stream, direction, nbytes, duration_us=10000000,
                  retrans=0, max_cwnd=0, rtts=(0, 0, 0), flags=0):
    return tlv(T_STREAM_RESULT, struct.pack(
        ">HBBQQIIIII", stream, direction, flags, nbytes, duration_us,
        retrans, max_cwnd, *rtts))


def results(streams, cc="cubic", overlap=0, cpu=(812000, 2900000,
                                                  10000000)):
    body = tlv(T_CPU, struct.pack(">QQQ", *cpu))
    if cc:
        body += text(T_CC, cc)
    body += u16(T_OVERLAP, overlap)
    for s in streams:
        body += s
    return msg(TEST_RESULTS, body)


def corpus():
    """Name -> bytes of every seed file."""
    p = preamble()
    four = [stream_result(i, 0, 294 * 2**20 + i, retrans=i,
                          max_cwnd=1 << 20, rtts=(30, 45 + i, 900))
            for i in range(4)]
    c = {}

    # what a client sends
    c["client_ctrl_open"] = p + ctrl_open(features=0x3)
    c["client_first_flight"] = p + ctrl_open() + test_request(
        mode=2, streams=4, duration_ms=10000, cc="cubic", omit_ms=1000)
    c["client_request_bytes"] = p + ctrl_open() + test_request(
        mode=1, streams=128, duration_ms=0, nbytes=1 << 30,
        blksize=1 << 24, window=4 << 20, cc="bbr", mss=1448, zerocopy=2)
    c["client_data_open"] = p + data_open(5, 1)
    c["client_stop_results"] = p + msg(TEST_STOP, b"") + results(four)
    # what a server sends
    c["server_accept_start"] = preamble(1, 1, 1) + test_accept(overlap=2) + \
        msg(TEST_START, b"")
    c["server_busy"] = preamble(1, 1, 1) + error(2, "server busy: 4 tests")
    c["server_results"] = preamble(1, 1, 1) + results(
        [stream_result(i, 1, 10**9 + i) for i in range(3)], cc="",
        overlap=1)
    c["unknown_skipped_tag"] = p + msg(
        CTRL_OPEN, tlv(0x0100, b"future") + text(T_SOFTWARE, "linerate 9"))

    # malformed, one per stage of the parser
    c["bad_http"] = b"GET / HTTP/1.1\r\nHost: 198.18.0.1\r\n\r\n"
    c["bad_version_range"] = preamble(9, 3, 0) + ctrl_open()
    c["bad_hdr_reserved"] = p + msg(CTRL_OPEN, b"", reserved=1)
    c["bad_hdr_length_ffffffff"] = p + msg(CTRL_OPEN, b"",
                                           length=0xFFFFFFFF)
    c["bad_hdr_short_body"] = p + msg(CTRL_OPEN, b"\x00\x01", length=100)
    c["bad_tlv_truncated"] = p + msg(CTRL_OPEN, b"\x00\x01\x00")
    c["bad_tlv_past_body"] = p + msg(DATA_OPEN, struct.pack(">HH", T_TEST_ID,
                                                             40) + TEST_ID)
    c["bad_critical_tag"] = p + msg(TEST_START, tlv(CRITICAL | 0x0100,
                                                    b"\x01"))
    c["bad_duplicate_field"] = p + msg(
        DATA_OPEN, tlv(T_TEST_ID, TEST_ID) + u16(T_STREAM, 1) +
        u16(T_STREAM, 2) + u8(T_DIR, 0))
    c["bad_string_escape"] = p + msg(CTRL_OPEN,
                                     text(T_SOFTWARE, "linerate\x1b[2J"))
    c["bad_request_streams_0"] = p + test_request(streams=0)
    c["bad_results_over_cap"] = p + results(
        [stream_result(i % 256, i // 256, i) for i in range(257)])
    return c


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus",
                                                             "proto")
    os.makedirs(out, exist_ok=True)
    files = corpus()
    for name, data in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files to {out}")


if __name__ == "__main__":
    main()
