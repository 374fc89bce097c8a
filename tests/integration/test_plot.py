# SPDX-License-Identifier: MIT
"""linerate plot: the SVG is drawn by a real renderer (rsvg-convert) and
the pixels are checked where the data must be: the summed rate a line of
its colour across the plot area, above its streams' lines; one bar per
label, their heights in the ratio of the labels' medians, and the runs
over time in their label's colour. The HTML page
holds the chart and the table and asks nothing of the network (its
rendering by a browser: scripts/render-html.sh). Errors name the file
and the line."""

import os
import re
import shutil
import subprocess

import pytest

from lrproc import describe, strict_json
from pngread import (bars_of, check_bar_heights, check_run_over_time,
                     columns_with, panels, read_png)
from xferutil import env_without_token

LOOP = "127.0.0.1"
SUM, STREAM1, STREAM2 = "#0072b2", "#d55e00", "#009e73"


def lr(binary, *args, timeout=120):
    return subprocess.run([binary, *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout,
                          env=env_without_token())


@pytest.fixture
def plotting(linerate_bin):
    res = lr(linerate_bin, "plot", "--help")
    if res.returncode != 0:
        pytest.skip("built without plotting (meson -Dplot=false)")
    if not shutil.which("rsvg-convert"):
        pytest.skip("rsvg-convert is not installed (scripts/deps.sh "
                    "installs librsvg2-bin)")
    return linerate_bin


@pytest.fixture
def server(serve, linerate_bin, tmp_path):
    tok = tmp_path / "token"
    tok.write_text(lr(linerate_bin, "token").stdout)
    root = tmp_path / "root"
    root.mkdir()
    srv = serve("--no-iperf3", "--root", str(root), "--token-file", str(tok))
    return str(srv.port), str(tok)


def render(svg, tmp_path):
    png = tmp_path / (svg.stem + ".png")
    res = subprocess.run(["rsvg-convert", "-o", str(png), str(svg)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, describe(res)
    return read_png(png)


def test_bench_run_over_time(plotting, server, tmp_path):
    port, tok = server
    run = tmp_path / "two.json"
    res = lr(plotting, "bench", "-p", port, "--token-file", tok, "-t", "2",
             "-i", "0.25", "-P", "2", "-J", LOOP)
    assert res.returncode == 0, describe(res)
    run.write_text(res.stdout)
    svg = tmp_path / "two.svg"
    res = lr(plotting, "plot", str(run), "-o", str(svg), "--results",
             str(tmp_path / "none.jsonl"))
    assert res.returncode == 0, describe(res)
    assert "1 run drawn in" in res.stderr
    text = svg.read_text()
    assert "two.json, sum" in text and "two.json, stream 2" in text
    assert ">seconds<" in text and "MB/s" in text
    w, h, rows = render(svg, tmp_path)
    (area,) = panels(w, h, rows)
    # the sum a line across the plot area, above its streams' lines
    check_run_over_time(rows, area, SUM, (STREAM1, STREAM2))


def test_transfer_progress_over_time(plotting, server, tmp_path):
    """A send's --json (its progress events) drawn over time: one line of
    the first series' colour across the plot area, the rate held by
    --limit, in MB/s against seconds."""
    port, tok = server
    src = tmp_path / "f.bin"
    src.write_bytes(os.urandom(12 << 20))
    res = lr(plotting, "send", "-p", port, "--token-file", tok, "--json",
             "--limit", "6M", "--progress", str(src), f"{LOOP}:in/")
    assert res.returncode == 0, describe(res)
    run = tmp_path / "send.json"
    run.write_text(res.stdout)
    assert sum('"event":"progress"' in l for l in res.stdout.splitlines()) \
        >= 4, res.stdout[:2000]
    svg = tmp_path / "send.svg"
    res = lr(plotting, "plot", str(run), "-o", str(svg), "--results",
             str(tmp_path / "none.jsonl"))
    assert res.returncode == 0, describe(res)
    text = svg.read_text()
    assert ">seconds<" in text and "MB/s" in text, text[:2000]
    w, h, rows = render(svg, tmp_path)
    (area,) = panels(w, h, rows)
    cols = columns_with(rows, area, SUM)
    width = area[2] - area[0] - 1
    assert len(cols) >= 0.8 * width, \
        f"the transfer's line in {len(cols)} of {width} columns"


def test_saved_labels_compared(plotting, server, tmp_path):
    port, tok = server
    results = str(tmp_path / "runs.jsonl")
    src = tmp_path / "file.bin"
    src.write_bytes(os.urandom(4 << 20))
    for label, cmd in (("one", []), ("one", []), ("one", [str(src)]),
                       ("four", ["-P", "4"])):
        what = ["send", *cmd, f"{LOOP}:in/"] if cmd[:1] == [str(src)] \
            else ["bench", "-t", "0.5", *cmd, LOOP]
        res = lr(plotting, what[0], "-p", port, "--token-file", tok,
                 "--save", label, "--results", results, *what[1:])
        assert res.returncode == 0, describe(res)
    svg = tmp_path / "cmp.svg"
    res = lr(plotting, "plot", "one", "four", "-o", str(svg), "--results",
             results)
    assert res.returncode == 0, describe(res)
    w, h, rows = render(svg, tmp_path)
    times, bars = panels(w, h, rows)
    res = lr(plotting, "results", "--results", results, "--compare", "one",
             "four", "--json")
    groups = {(g["command"], g["direction"]): g
              for g in strict_json(res.stdout)["groups"]}
    bench, send = groups[("bench", "send")], groups[("send", "send")]
    assert send["a"]["runs"] == 1 and send["b"]["runs"] == 0, send
    # a bar a label and command: "one"'s bench runs and its file send
    # apart (the medians --compare gives), "four" a bench bar only
    (one_bench, one_send), (four_bench,) = (bars_of(rows, bars, c)
                                            for c in (SUM, STREAM1))
    assert one_bench[0] < four_bench[0] < one_send[0]
    check_bar_heights([
        ("one's bench", one_bench[1], bench["a"]["median_bytes_per_second"]),
        ("four's bench", four_bench[1],
         bench["b"]["median_bytes_per_second"]),
        ("one's send", one_send[1], send["a"]["median_bytes_per_second"])])
    # each group says its command under its bars
    text = svg.read_text()
    names = re.findall(r'<text x="\d+" y="\d+" font-size="13" '
                       r'text-anchor="middle">(.*?)</text>', text)
    assert [re.sub(r"<[^>]+>", " ", n).split() for n in names
            if n != "seconds" and "direction" not in n] == [
        ["bench", "send"], ["send"]], names
    # the runs over time above, in their label's colour (the bars'): the
    # two runs of "one" in the first, told apart by a dash, "four" in the
    # second, and no third colour
    for colour in (SUM, STREAM1):
        assert len(columns_with(rows, times, colour)) > 0.5 * (
            times[2] - times[0]), colour
    assert not columns_with(rows, times, STREAM2)
    lines = re.findall(r'<polyline fill="none" stroke="([^"]+)"'
                       r'( stroke-dasharray="[^"]+")?', svg.read_text())
    assert [c for c, _ in lines] == [SUM, SUM, SUM, STREAM1], lines
    assert lines[0][1] == "" and len({d for _, d in lines[:3]}) == 3, lines
    # no RUN: the label saved last
    res = lr(plotting, "plot", "-o", str(tmp_path / "last.svg"),
             "--results", results)
    assert res.returncode == 0, describe(res)
    assert "four #4" in (tmp_path / "last.svg").read_text()
    # the page: the chart, the table, nothing from the network
    page = tmp_path / "cmp.html"
    res = lr(plotting, "plot", "one", "four", "-o", str(page), "--results",
             results, "--title", "one <and> four")
    assert res.returncode == 0, describe(res)
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html
    assert "<title>one &lt;and&gt; four</title>" in html
    assert len(re.findall(r"<tr><td>", html)) == 4
    assert "<td>bench</td>" in html and "<td>send</td>" in html
    assert "<script" not in html
    assert not re.search(r"(src|href)=", html)


def test_refusals_name_the_file_and_line(plotting, tmp_path):
    none = str(tmp_path / "none.jsonl")
    other = tmp_path / "other.json"
    other.write_text('{"tool": "something else", "values": [1, 2]}\n')
    res = lr(plotting, "plot", str(other), "-o", str(tmp_path / "o.svg"),
             "--results", none)
    assert res.returncode == 1, describe(res)
    assert "other.json: not a run linerate wrote" in res.stderr
    assert not (tmp_path / "o.svg").exists()
    cut = tmp_path / "cut.json"
    cut.write_text('{"event":"start","seconds":0}\n{"event":"progr\n')
    res = lr(plotting, "plot", str(cut), "-o", str(tmp_path / "o.svg"),
             "--results", none)
    assert res.returncode == 1, describe(res)
    assert "cut.json:2: not JSON" in res.stderr
    res = lr(plotting, "plot", "nosuchrun", "-o", str(tmp_path / "o.svg"),
             "--results", none)
    assert res.returncode == 1, describe(res)
    assert "nosuchrun: no such file" in res.stderr
    for args in (["-o", str(tmp_path / "o.png"), str(other)], [str(other)]):
        res = lr(plotting, "plot", *args)
        assert res.returncode == 2, describe(res)
        assert "Try 'linerate plot --help'" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cut.json", "other.json"]
