# SPDX-License-Identifier: MIT
"""--save LABEL on bench, send, get and doctor, and `linerate results`:
each run appended as one JSON line (its JSON, label, time, both ends'
facts) to the results file; the table, the JSON list, --compare's ratios;
a bad, truncated or foreign line named and skipped, never the others."""

import json
import os
import re
import statistics
import subprocess

import pytest

from lrproc import describe, strict_json
from xferutil import env_without_token, write_random

LOOP = "127.0.0.1"


@pytest.fixture
def world(serve, linerate_bin, tmp_path):
    tok = tmp_path / "token"
    res = subprocess.run([linerate_bin, "token"], capture_output=True,
                         text=True, timeout=10)
    tok.write_text(res.stdout.strip() + "\n")
    root = tmp_path / "root"
    root.mkdir()
    srv = serve("--no-iperf3", "--root", str(root), "--token-file", str(tok))
    return {"bin": linerate_bin, "tok": str(tok), "port": str(srv.port),
            "root": root, "tmp": tmp_path,
            "results": str(tmp_path / "runs.jsonl")}


def lr(w, *args, env=None, timeout=120):
    return subprocess.run([w["bin"], *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout,
                          env=env or env_without_token())


def bench_save(w, label, *extra):
    res = lr(w, "bench", "-p", w["port"], "--token-file", w["tok"], "-t",
             "0.5", "--save", label, "--results", w["results"], *extra, LOOP)
    assert res.returncode == 0, describe(res)
    return res


def listed(w, *extra):
    res = lr(w, "results", "--results", w["results"], "--json", *extra)
    assert res.returncode == 0, describe(res)
    return strict_json(res.stdout)


def test_bench_runs_saved_listed_and_compared(world):
    w = world
    res = bench_save(w, "cable")
    assert re.search(r"saved as run 1, label 'cable', in .*runs\.jsonl",
                     res.stdout), res.stdout
    bench_save(w, "cable", "-R")
    bench_save(w, "cable")
    res = bench_save(w, "wifi", "-J")
    # JSON output stays one document; the note goes to standard error
    assert "end" in strict_json(res.stdout)
    assert "saved as run 4" in res.stderr, res.stderr
    runs = listed(w)
    assert [r["id"] for r in runs] == [1, 2, 3, 4]
    assert [r["summary"]["direction"] for r in runs] == [
        "send", "receive", "send", "send"]
    for r in runs:
        assert r["command"] == "bench" and r["label"] in ("cable", "wifi")
        assert r["run"]["end"]["sum_received"]["bytes"] == \
            r["summary"]["bytes"], r["summary"]
        assert r["summary"]["bytes_per_second"] > 0
        assert r["summary"]["cipher"] == "aes-256-gcm"
        assert r["summary"]["cpu_seconds_per_gb_here"] > 0
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["time"])
        here, there = r["facts"]["here"], r["facts"]["there"]
        assert here["host"] == os.uname().nodename
        assert here["cores_usable"] > 0 and "storage" in here
        # the server's own facts, asked for with the token
        assert there["host"] == LOOP and there["cores_usable"] > 0
        assert r["facts"]["link"]["kind"] == "loopback"
        assert "--save" in r["arguments"]
    # the table: one row a run, the rate in MB/s
    res = lr(w, "results", "--results", w["results"])
    assert res.returncode == 0, describe(res)
    rows = [line for line in res.stdout.splitlines()
            if re.match(r"\s+\d+\s", line)]
    assert len(rows) == 4, res.stdout
    mbs = runs[1]["summary"]["bytes_per_second"] / 1e6
    assert f"{mbs:.1f}" in rows[1] and "receive" in rows[1], rows[1]
    # --compare: medians per command and direction, B over A
    doc = listed(w, "--compare", "cable", "wifi")
    assert doc["a"] == "cable" and doc["b"] == "wifi"
    send = [g for g in doc["groups"] if g["direction"] == "send"][0]
    a = statistics.median(r["summary"]["bytes_per_second"] for r in runs
                          if r["label"] == "cable"
                          and r["summary"]["direction"] == "send")
    b = runs[3]["summary"]["bytes_per_second"]
    assert send["a"]["runs"] == 2 and send["b"]["runs"] == 1
    assert send["ratio"] == pytest.approx(b / a, rel=1e-9)
    back = [g for g in doc["groups"] if g["direction"] == "receive"][0]
    assert back["a"]["runs"] == 1 and back["b"]["runs"] == 0
    assert "ratio" not in back
    res = lr(w, "results", "--results", w["results"], "--compare", "cable",
             "wifi")
    assert res.returncode == 0, describe(res)
    assert re.search(rf"bench\s+send\s+.*\(2\).*\(1\)\s+{b / a:.2f}x",
                     res.stdout), res.stdout
    res = lr(w, "results", "--results", w["results"], "--compare", "cable",
             "nothere")
    assert res.returncode == 1, describe(res)
    assert "no run saved with the label 'nothere'" in res.stderr


def test_transfers_and_doctor_saved(world):
    w = world
    src = w["tmp"] / "big.bin"
    write_random(src, 8 << 20)
    res = lr(w, "send", "-p", w["port"], "--token-file", w["tok"], "--save",
             "push", "--results", w["results"], str(src), f"{LOOP}:in/")
    assert res.returncode == 0, describe(res)
    assert (w["root"] / "in" / "big.bin").stat().st_size == 8 << 20
    dest = w["tmp"] / "back"
    res = lr(w, "get", "-p", w["port"], "--token-file", w["tok"], "--json",
             "--save", "pull", "--results", w["results"],
             f"{LOOP}:in/big.bin", str(dest))
    assert res.returncode == 0, describe(res)
    assert dest.read_bytes() == src.read_bytes()  # one file: named DEST
    assert "saved as run 2" in res.stderr, res.stderr
    res = lr(w, "doctor", "-p", w["port"], "--token-file", w["tok"], "-t",
             "0.5", "--size", "16M", "--no-ssh", "--save", "doc",
             "--results", w["results"], LOOP)
    assert res.returncode == 0, describe(res)
    runs = listed(w)
    assert [(r["id"], r["command"], r["summary"]["direction"])
            for r in runs] == [(1, "send", "send"), (2, "get", "receive"),
                               (3, "doctor", "send")]
    for r in runs[:2]:
        events = [e["event"] for e in r["run"]["events"]]
        assert events[0] == "start" and events[-1] == "end", events
        end = r["run"]["events"][-1]
        assert end["bytes"] == 8 << 20 == r["summary"]["bytes"]
        assert r["facts"]["there"]["cpu_model"]
    assert runs[2]["run"]["transfer"]["bytes"] == 16 << 20
    assert runs[2]["facts"]["there"]["storage"]
    # a run that moved nothing (all there already) has no rate to keep
    res = lr(w, "send", "-p", w["port"], "--token-file", w["tok"], "--save",
             "push", "--results", w["results"], str(src), f"{LOOP}:in/")
    assert res.returncode == 0, describe(res)
    assert "nothing was moved" in res.stderr and "not saved" in res.stderr
    assert len(listed(w)) == 3
    # a failed run is not saved
    res = lr(w, "send", "-p", w["port"], "--token-file", w["tok"], "--save",
             "push", "--results", w["results"], str(w["tmp"] / "missing"),
             f"{LOOP}:in/")
    assert res.returncode != 0
    assert len(listed(w)) == 3


def test_a_saved_transfer_keeps_its_rate_not_every_event(world):
    """A tree of many files: no per-file events in the line (the end
    counts them), the progress thinned; UTF-8 labels line up in the
    table, cut on a character."""
    w = world
    tree = w["tmp"] / "many"
    tree.mkdir()
    for i in range(300):
        (tree / f"f{i:03}").write_bytes(os.urandom(1000))
    label = "caf\u00e9-" + "\u00e9" * 10 + "x" * 30
    res = lr(w, "send", "-p", w["port"], "--token-file", w["tok"], "--save",
             label, "--results", w["results"], str(tree), f"{LOOP}:t")
    assert res.returncode == 0, describe(res)
    (run,) = listed(w)
    events = [e["event"] for e in run["run"]["events"]]
    assert "file" not in events and events[-1] == "end", set(events)
    assert run["run"]["events"][-1]["files_ok"] == 300
    assert run["label"] == label
    res = lr(w, "results", "--results", w["results"])
    assert res.returncode == 0, describe(res)
    head, row = res.stdout.splitlines()[:2]
    # the columns after the label start where the header's do
    assert row.index(" send ") + 1 == head.index("Command"), (head, row)
    assert "~" in row and "\ufffd" not in row


def test_saves_at_the_same_time_get_their_own_ids_and_lines(world, serve):
    """Twelve transfers saved into one file at once: ids 1..12, none
    twice, each a whole line of its own run (an flock around the id scan
    and the append)."""
    w = world
    srv = serve("--no-iperf3", "--max-tests", "16", "--root",
                str(w["root"]), "--token-file", w["tok"])
    src = w["tmp"] / "small.bin"
    write_random(src, 64 << 10)
    procs = [subprocess.Popen(
        [w["bin"], "send", "-q", "-p", str(srv.port), "--token-file",
         w["tok"], "-P", "1", "--save", f"c{i}", "--results", w["results"], str(src),
         f"{LOOP}:c{i}/"], stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env_without_token()) for i in range(12)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, (out, err)
    lines = open(w["results"]).read().splitlines()
    assert len(lines) == 12, lines
    runs = [json.loads(line) for line in lines]
    assert sorted(r["id"] for r in runs) == list(range(1, 13))
    assert sorted(r["label"] for r in runs) == sorted(
        f"c{i}" for i in range(12))
    assert len(listed(w)) == 12


def test_a_bad_line_is_named_and_never_costs_the_others(world):
    w = world
    bench_save(w, "good")
    good = open(w["results"]).read()
    iperf3_doc = json.dumps({"start": {"version": "iperf 3.12"},
                             "end": {}})
    with open(w["results"], "a") as f:
        f.write("\n" + iperf3_doc + "\n")
        f.write('{"format": "linerate run 1", "id": 7, "label": "x"}\n')
        f.write(good[:len(good) // 2])        # cut short, no newline
    before = open(w["results"]).read()
    res = lr(w, "results", "--results", w["results"])
    assert res.returncode == 0, describe(res)
    assert len([line for line in res.stdout.splitlines()
                if re.match(r"\s+\d+\s", line)]) == 1, res.stdout
    warn = res.stderr
    assert re.search(r"runs\.jsonl:3: not a saved run .*another tool", warn)
    assert re.search(r"runs\.jsonl:4: a saved run with a field missing",
                     warn)
    assert re.search(r"runs\.jsonl:5: not JSON \(cut short\?\)", warn)
    assert "runs.jsonl:2" not in warn     # an empty line is no error
    # the next save goes on a line of its own after all that, id 2
    bench_save(w, "good")
    after = open(w["results"]).read()
    assert after.startswith(before + "\n"), "earlier lines changed"
    assert [r["id"] for r in listed(w)] == [1, 2]
    # NUL bytes: a line holding one (here a saved run's, a NUL in its
    # label) is named and skipped, never the end of the file; a crash's
    # zero-filled tail (no newline) is a bad last line
    second = after.splitlines()[5]
    assert json.loads(second)["id"] == 2
    nul_run = second.replace('"id":2,', '"id":7,').replace(
        '"label":"good"', '"label":"go\0od"')
    assert "\0" in nul_run and '"id":7,' in nul_run
    with open(w["results"], "a") as f:
        f.write("\0x\n" + nul_run + "\n")
    bench_save(w, "good")                 # id 8: one more than any
    with open(w["results"], "ab") as f:
        f.write(b"\0" * 5000)
    before = open(w["results"], "rb").read()
    for extra in ([], ["--json"], ["--compare", "good", "good"]):
        res = lr(w, "results", "--results", w["results"], *extra)
        assert res.returncode == 0, describe(res)
        for n in (7, 8, 10):
            assert re.search(rf"runs\.jsonl:{n}: holds a NUL byte.*; "
                             r"skipped", res.stderr), (n, res.stderr)
        assert "runs.jsonl:9:" not in res.stderr, res.stderr
    rows = [line.split()[0] for line in lr(
        w, "results", "--results", w["results"]).stdout.splitlines()
        if re.match(r"\s+\d+\s", line)]
    assert rows == ["1", "2", "8"], rows
    send = listed(w, "--compare", "good", "good")["groups"][0]
    assert send["a"]["runs"] == 3, send
    # the next save: a new id, on a line of its own after the zeros
    bench_save(w, "good")
    after = open(w["results"], "rb").read()
    assert after.startswith(before + b"\n"), "earlier lines changed"
    assert after.count(b"\n") == before.count(b"\n") + 2
    assert [r["id"] for r in listed(w)] == [1, 2, 8, 9]


def test_default_file_and_refusals(world, tmp_path):
    w = dict(world)
    data = tmp_path / "xdg"
    env = env_without_token({"XDG_DATA_HOME": str(data)})
    res = lr(w, "bench", "-p", w["port"], "--token-file", w["tok"], "-t",
             "0.5", "--save", "here", LOOP, env=env)
    assert res.returncode == 0, describe(res)
    path = data / "linerate" / "results.jsonl"
    assert path.exists() and (path.stat().st_mode & 0o777) == 0o600
    res = lr(w, "results", "--json", env=env)
    assert res.returncode == 0, describe(res)
    assert [r["label"] for r in strict_json(res.stdout)] == ["here"]
    # without XDG_DATA_HOME: under HOME
    home = tmp_path / "home"
    home.mkdir()
    env = env_without_token({"HOME": str(home)})
    env.pop("XDG_DATA_HOME", None)
    res = lr(w, "results", env=env)
    assert res.returncode == 1, describe(res)
    assert str(home / ".local/share/linerate/results.jsonl") in res.stderr
    for bad in ("", "a\tb", "x" * 65, b"caf\xe9"):
        res = subprocess.run([w["bin"], "bench", "--save", bad, LOOP],
                             stdin=subprocess.DEVNULL, capture_output=True,
                             timeout=30, env=env_without_token())
        assert res.returncode == 2, (bad, res.stderr)
        assert b"--save" in res.stderr and b"Try" in res.stderr
    # the list takes no --save; an empty list is an exit 1, also in JSON
    res = lr(w, "results", "--save", "x")
    assert res.returncode == 2, describe(res)
    empty = str(tmp_path / "empty.jsonl")
    res = lr(w, "results", "--results", empty, "--json")
    assert res.returncode == 1 and strict_json(res.stdout) == [], \
        describe(res)
    res = lr(w, "results", "--compare", "a")
    assert res.returncode == 2, describe(res)


def test_a_results_file_that_cannot_be_written_is_said_before_the_run(
        world):
    """--save into a results file that cannot be appended to (a directory,
    a path below a file): each command says so before it moves anything,
    exit 1, and the server saw no transfer."""
    w = world
    src = w["tmp"] / "s.bin"
    write_random(src, 4096)
    (w["root"] / "there.bin").write_bytes(b"x")
    below_file = str(src) + "/runs.jsonl"
    runs = (
        (["bench", "-t", "0.5", LOOP], w["tmp"], "Is a directory"),
        (["send", str(src), f"{LOOP}:in/"], below_file, "Not a directory"),
        (["get", f"{LOOP}:there.bin", str(w["tmp"] / "got.bin")], w["tmp"],
         "Is a directory"),
        (["doctor", "-t", "0.5", "--size", "8M", LOOP], w["tmp"],
         "Is a directory"),
    )
    for argv, results, words in runs:
        res = lr(w, argv[0], "-p", w["port"], "--token-file", w["tok"],
                 "--save", "x", "--results", str(results), *argv[1:])
        assert res.returncode == 1, describe(res)
        assert f"linerate {argv[0]}: --save: {results}: {words}" in \
            res.stderr, describe(res)
    assert not (w["root"] / "in").exists()
    assert not (w["tmp"] / "got.bin").exists()
    # doctor --local too, before it measures
    res = lr(w, "doctor", "--local", str(w["tmp"]), "--save", "x",
             "--results", str(w["tmp"]))
    assert res.returncode == 1, describe(res)
    assert f"--save: {w['tmp']}: Is a directory" in res.stderr, describe(res)
