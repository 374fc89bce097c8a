# SPDX-License-Identifier: MIT
"""A PNG's pixels (8-bit RGB or RGBA, not interlaced, as rsvg-convert
and Chromium write them), with the standard library only, and the
checks of linerate plot's charts in them: where the data must be drawn.
test_plot.py draws the SVG with rsvg-convert, scripts/render-html.sh
the HTML page with Chromium; both check the pixels here."""

import struct
import zlib


def read_png(path):
    """(width, height, rows): rows[y][x] is an (r, g, b) tuple."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, lace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and not lace, \
                (depth, ctype, lace)
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pred) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return w, h, rows


def hex_rgb(colour):
    """'#0072b2' -> (0, 114, 178)."""
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


FRAME = (0x44, 0x44, 0x44)


def panels(w, h, rows):
    """The plot areas (left, top, right, bottom), found by their frame."""
    x = w // 4
    ys = [y for y in range(h) if rows[y][x] == FRAME]
    # each frame: a top and a bottom edge (one pixel each, crisp)
    edges = [y for i, y in enumerate(ys) if i == 0 or ys[i - 1] != y - 1]
    assert len(edges) % 2 == 0 and edges, \
        f"no plot area's frame (#444444) at x={x}: its rows {edges}"
    out = []
    for top, bottom in zip(edges[::2], edges[1::2]):
        # the top edge: no data reaches it (5% headroom), while a line
        # may cross the side edges anywhere below
        xs = [i for i in range(w) if rows[top][i] == FRAME]
        out.append((xs[0], top, xs[-1], bottom))
    return out


def columns_with(rows, area, colour):
    """{x: [y...]}: where colour is inside the area."""
    left, top, right, bottom = area
    c = hex_rgb(colour)
    got = {}
    for y in range(top + 1, bottom):
        for x in range(left + 1, right):
            if rows[y][x] == c:
                got.setdefault(x, []).append(y)
    return got


def across(rows, area, colour, share, what):
    """colour's columns in the area ({x: [y...]}), at least SHARE of the
    area's width: a line across the plot area."""
    cols = columns_with(rows, area, colour)
    width = area[2] - area[0] - 1
    assert len(cols) >= share * width, \
        (f"{what} ({colour}) in {len(cols)} of the plot area's {width} "
         f"columns, not across it (at least {share:.0%})")
    return cols


def check_run_over_time(rows, area, total, streams):
    """One run's chart: its sum (colour TOTAL) a line across the plot
    area, above its STREAMS' (two colours) thinner lines, which may cover
    each other where equal: together across the plot area, each seen,
    and the sum of two about twice each."""
    width = area[2] - area[0] - 1
    sums = across(rows, area, total, 0.95, "the sum's line")
    one, two = (columns_with(rows, area, c) for c in streams)
    for cols, colour in ((one, streams[0]), (two, streams[1])):
        assert len(cols) > 0.1 * width, \
            (f"a stream's line ({colour}) in {len(cols)} of the plot "
             f"area's {width} columns")
    both = {x: one.get(x, []) + two.get(x, []) for x in set(one) | set(two)}
    assert len(both) >= 0.9 * width, \
        (f"the streams' lines in {len(both)} of the plot area's {width} "
         f"columns, not across it")
    # the sum above them (smaller y)
    ys = sorted(min(v) for v in both.values())
    ysum = sorted(min(v) for v in sums.values())
    bottom = area[3]
    hs, hsum = bottom - ys[len(ys) // 2], bottom - ysum[len(ysum) // 2]
    assert 1.4 * hs < hsum < 2.8 * hs, \
        (f"the sum's line {hsum} px high, not about twice its streams' "
         f"({hs} px)")


def bars_of(rows, area, colour):
    """[(x, height)]: the bars of colour left to right, each a block of
    columns side by side, every column filled from the bar's top down to
    the plot area's bottom."""
    cols = columns_with(rows, area, colour)
    blocks = []
    for x in sorted(cols):
        if blocks and blocks[-1][-1] == x - 1:
            blocks[-1].append(x)
        else:
            blocks.append([x])
    bottom = area[3]
    out = []
    for b in blocks:
        assert len(b) >= 10, \
            f"a bar of {colour} only {len(b)} px wide at x={b[0]}"
        top = min(min(cols[x]) for x in b)
        for x in b:
            assert cols[x] == list(range(top, bottom)), \
                (f"the bar of {colour} at x={b[0]}: column {x} not filled "
                 f"from y={top} to the plot area's bottom ({bottom})")
        out.append((b[0], bottom - top))
    return out


def check_bar_heights(bars):
    """bars: [(what, height in px, median)]: the heights in the ratio of
    the medians (the tallest bar's scale), within 2 px or 3%."""
    tallest = max(px for _, px, _ in bars)
    top = max(m for _, _, m in bars)
    for what, got, median in bars:
        px = tallest * median / top
        assert abs(got - px) <= max(2, 0.03 * px), \
            (f"{what}'s bar {got} px high, want {px:.1f} (its median "
             f"{median:.0f} B/s, the tallest bar {tallest} px for "
             f"{top:.0f} B/s)")
