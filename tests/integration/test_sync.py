# SPDX-License-Identifier: MIT
"""What to send, as rsync users write it: --exclude, --include,
--exclude-from and --include-from, and the trailing '/' of a source
directory, between the namespace hosts (push: `send` in host A to `serve
--root` in host B; pull: `get` from it). Each case gives the same tree
and the same rules to rsync (`rsync -a`, here, from directory to
directory) and requires the two destinations to hold the same entries
with the same contents. Needs root for the namespaces (the fixtures skip
with the reason otherwise).
"""

import os
import subprocess

import pytest

from lrproc import describe
from xferutil import (as_nobody, compare_tree, end_event, immutable,
                      json_events, temp_leftovers)

RSYNC = "/usr/bin/rsync"


def build_tree(top):
    """Names that each rule of the documented list can tell apart."""
    files = [
        "a.log", "b.txt", "f1.txt", "f22.txt", "img1.jpg", "imgx.jpg",
        "notes.jpeg", "lit*", "litx", "build", "keep/k1.c", "keep/sub/k2.c",
        "cache/c1", "cache/deep/c2", "src/build/o.o", "src/main.c",
        "src/tmp/t1", "tmp/t2", "photos/raw/r1.cr2", "photos/raw/r2.cr2",
        "photos/jpg/p1.jpg", "a/b", "x/a/b", "xa/b", "docs/a.txt",
        "docs/deeper/b.txt", "docs/deeper/c.log", "sp ace/f s.txt",
        "br[ack", "brack", "lit\\x",
    ]
    for i, rel in enumerate(files):
        p = top / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(f"{rel} {i}\n".encode() * (i + 1))
    os.symlink("b.txt", top / "link.txt")
    os.symlink("../src", top / "docs" / "srclink")
    (top / "empty").mkdir()


def listing(top):
    """Every entry below top, '/' after directories."""
    out = set()
    for d, dirs, files in os.walk(top):
        for n in dirs:
            rel = os.path.relpath(os.path.join(d, n), top)
            out.add(rel + ("" if os.path.islink(os.path.join(d, n))
                           else "/"))
        for n in files:
            out.add(os.path.relpath(os.path.join(d, n), top))
    return out


def same_entries(got, ref):
    """got and ref (directories) hold the same entries, the files with
    the same bytes and the symlinks with the same targets."""
    a, b = listing(got), listing(ref)
    assert a == b, (f"linerate has {sorted(a - b)} that rsync has not; "
                    f"rsync has {sorted(b - a)} that linerate has not")
    for rel in a:
        p, q = got / rel.rstrip("/"), ref / rel.rstrip("/")
        if os.path.islink(q):
            assert os.readlink(p) == os.readlink(q), rel
        elif os.path.isfile(q):
            assert p.read_bytes() == q.read_bytes(), rel


def rsync_ref(rules, src_arg, dst):
    dst.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([RSYNC, "-a", *rules, str(src_arg), str(dst) + "/"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, describe(res)
    return dst


@pytest.fixture(scope="module", autouse=True)
def have_rsync():
    if not os.path.exists(RSYNC):
        pytest.skip("rsync is not installed (scripts/deps.sh installs it)")


# One case per rule of the documented list (docs/linerate.1, "Filter
# rules"); "{top}" is the source's name when it is sent with it, for the
# anchored rules.
CASES = {
    "star": ["--exclude", "*.log"],
    "star-never-crosses-slash": ["--exclude", "a*b"],
    "question-mark": ["--exclude", "f?.txt"],
    "set-and-range": ["--exclude", "img[0-9].jpg"],
    "negated-set": ["--exclude", "img[!0-9].jpg"],
    "double-star-contents": ["--exclude", "cache/**"],
    "double-star-any-depth": ["--exclude", "**/tmp"],
    "double-star-inside": ["--exclude", "docs/**/*.txt"],
    "anchored": ["--exclude", "{top}photos/raw"],
    "anchored-top-level-name": ["--exclude", "{top}build"],
    "trailing-slash-dirs-only": ["--exclude", "build/"],
    "slash-inside-matches-the-end": ["--exclude", "a/b"],
    "triple-star-dir-and-contents": ["--include", "keep/***",
                                     "--exclude", "*"],
    "first-match-wins": ["--include", "*.jpg", "--exclude", "*.j*"],
    "dirs-then-only-txt": ["--include", "*/", "--include", "*.txt",
                           "--exclude", "*"],
    "plus-minus-prefixes": ["--exclude", "+ b.txt", "--exclude", "*.txt"],
    "escaped-wildcard": ["--exclude", "lit\\*"],
    "symlinks-filtered-by-name": ["--exclude", "*link*"],
    "space-in-name": ["--exclude", "f s.*"],
    "caret-negated-set": ["--exclude", "img[^0-9].jpg"],
    "class": ["--exclude", "img[[:digit:]].jpg"],
    "unclosed-set-is-literal": ["--exclude", "br[ack"],
    "backslash-without-wildcard": ["--exclude", "lit\\x"],
    "clear-with-bang": ["--exclude", "*.txt", "--exclude", "!",
                        "--exclude", "*.log"],
}


def rules_for(case, top):
    return [r.replace("{top}", top) for r in CASES[case]]


@pytest.mark.parametrize("slash", [False, True], ids=["dir", "dir-slash"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_push_filters_as_rsync(xsrv, case, slash):
    x = xsrv
    top = x.src / "tree"
    build_tree(top)
    rules = rules_for(case, "/" if slash else "/tree/")
    arg = str(top) + ("/" if slash else "")
    x.send_ok("-q", *rules, arg, x.dest("out"))
    ref = rsync_ref(rules, arg, x.tmp / "ref")
    same_entries(x.root / "out", ref)
    assert not temp_leftovers(x.root)


@pytest.mark.parametrize("case", sorted(CASES))
def test_pull_filters_as_rsync(xsrv, case):
    """The server walks for a pull: the rules travel in the request."""
    x = xsrv
    top = x.root / "tree"
    build_tree(top)
    rules = rules_for(case, "/tree/")
    x.get_ok("-q", *rules, x.dest("tree"), x.tmp / "got")
    ref = rsync_ref(rules, top, x.tmp / "ref")
    same_entries(x.tmp / "got", ref)


def test_exclude_from_and_include_from_files(xsrv):
    x = xsrv
    top = x.src / "tree"
    build_tree(top)
    ex = x.tmp / "ex.rules"
    ex.write_text("# what the nightly job leaves out\n; old comment style\n"
                  "\n+ keep.log\n*.log\r\n- /cache/\ntmp/\n")
    inc = x.tmp / "inc.rules"
    inc.write_text("*/\n*.c\n- *\n")
    for rules in (["--exclude-from", ex],
                  ["--include-from", inc],
                  ["--exclude-from", ex, "--include-from", inc]):
        (top / "keep.log").write_text("kept\n")
        argv = [str(r) for r in rules]
        x.send_ok("-q", *argv, str(top) + "/", x.dest("o"))
        ref = rsync_ref(argv, str(top) + "/", x.tmp / "ref")
        same_entries(x.root / "o", ref)
        subprocess.run(["rm", "-rf", str(x.root / "o"), str(x.tmp / "ref")],
                       check=True)


# --files-from: the list given to rsync -a --files-from as well (no
# comment lines: the rsync here may predate their skipping)
FILES_FROM = ["b.txt", "keep/sub/k2.c", "/docs/a.txt", "./photos//jpg",
              "docs/deeper", "sp ace/f s.txt", "link.txt", "b.txt",
              "empty"]


@pytest.mark.parametrize("recurse", [False, True], ids=["list", "list-r"])
@pytest.mark.parametrize("mode", ["push", "pull"])
def test_files_from_as_rsync(xsrv, mode, recurse):
    """--files-from FILE: only the listed paths, relative to the source
    directory, with their parent directories; a listed directory alone
    (with -r: and what is below it), as rsync -a --files-from (-r)."""
    x = xsrv
    top = (x.root if mode == "pull" else x.src) / "t"
    build_tree(top)
    lst = x.tmp / "list"
    lst.write_text("\n".join(FILES_FROM) + "\n")
    more = ["-r"] if recurse else []
    if mode == "pull":
        dest = x.tmp / "got"
        dest.mkdir()
        x.get_ok("-q", "--files-from", lst, *more, x.dest("t"), dest)
    else:
        x.send_ok("-q", "--files-from", lst, *more, top, x.dest("ff"))
        dest = x.root / "ff"
    ref = rsync_ref([f"--files-from={lst}", *more], str(top) + "/",
                    x.tmp / "ref")
    same_entries(dest, ref)
    assert ("docs/deeper/b.txt" in listing(dest)) == recurse
    assert not temp_leftovers(dest)


def test_files_from_missing_paths_and_comments(xsrv):
    """A listed path that is not there is told in one line and the rest
    goes, exit 23 (rsync's too); blank lines and lines starting with
    '#' or ';' are skipped (write ./#name for such a name); --from0
    takes NUL-separated names; '..' is refused before anything moves."""
    x = xsrv
    top = x.src / "m"
    (top / "d").mkdir(parents=True)
    (top / "d" / "f").write_text("f\n")
    (top / "#not-a-comment").write_text("h\n")
    (top / "sp ace").write_text("n\n")
    lst = x.tmp / "list"
    lst.write_text("# a comment\n\nd/f\n;another\nnope/x\n")
    res = x.send("--json", "--files-from", lst, top, x.dest("mm"))
    assert res.returncode == 23, describe(res)
    fails = [e for e in json_events(res.stdout)
             if e.get("event") == "file" and e.get("status") == "failed"]
    assert [e["path"] for e in fails] == ["nope/x"], fails
    assert "listed in --files-from" in fails[0]["error"], fails
    assert listing(x.root / "mm") == {"d/", "d/f"}
    lst0 = x.tmp / "list0"
    lst0.write_bytes(b"#comment\0./#not-a-comment\0sp ace\0")
    x.send_ok("-q", "--from0", "--files-from", lst0, top, x.dest("m0"))
    assert listing(x.root / "m0") == {"#not-a-comment", "sp ace"}
    lst.write_text("d/f\nd/../../etc/passwd\n")
    res = x.send("--files-from", lst, top, x.dest("bad"))
    assert res.returncode == 2, describe(res)
    assert "entry 2" in res.stderr and ".." in res.stderr, describe(res)
    assert not (x.root / "bad").exists()


def test_files_from_refusals(xsrv):
    """--files-from takes one source directory; not with --delete; a
    pull's list travels in its request and is bounded by it."""
    x = xsrv
    top = x.src / "r"
    top.mkdir()
    (top / "f").write_text("f\n")
    lst = x.tmp / "list"
    lst.write_text("f\n")
    for args, words in (
            ([top, top, x.dest()], "one source directory"),
            (["--delete", top, x.dest()], "--delete"),
            ([top / "f", x.dest()], "not a directory")):
        res = x.send("--files-from", lst, *args)
        assert res.returncode == 2, describe(res)
        assert words in res.stderr, describe(res)
    (x.root / "r").mkdir()
    lst.write_text("".join(f"some/longer/directory/name/file-{i:06d}\n"
                           for i in range(2000)))
    res = x.get("--files-from", lst, x.dest("r"), x.tmp / "g")
    assert res.returncode != 0, describe(res)
    assert "split it" in res.stderr, describe(res)


def test_trailing_slash_sends_the_contents(xsrv):
    """`send photos/ host:backup` fills backup/ (rsync's habit), `send
    photos host:backup` makes backup/photos; `.` is the current
    directory's contents; `get host:backup/ d` fills d."""
    x = xsrv
    photos = x.src / "photos"
    build_tree(photos)
    x.send_ok("-q", str(photos) + "/", x.dest("backup"))
    compare_tree(photos, x.root / "backup", top_mtime=False)
    assert (x.root / "backup" / "a.log").exists()
    assert not (x.root / "backup" / "photos" / "a.log").exists()
    x.send_ok("-q", photos, x.dest("backup2"))
    compare_tree(photos, x.root / "backup2" / "photos")
    assert sorted(os.listdir(x.root / "backup2")) == ["photos"]
    # "." and "dir/." as rsync reads them: the contents
    res = x.h.run_a(x.client_argv("send", "-q", ".", x.dest("dot")),
                    cwd=str(photos), stdin=subprocess.DEVNULL,
                    capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, describe(res)
    compare_tree(photos, x.root / "dot", top_mtime=False)
    x.send_ok("-q", str(photos) + "/.", x.dest("dot2"))
    compare_tree(photos, x.root / "dot2", top_mtime=False)
    # pull: HOST:DIR/ fills DEST; HOST:DIR makes DEST/DIR
    x.get_ok("-q", x.dest("backup/"), x.tmp / "g1")
    compare_tree(photos, x.tmp / "g1", top_mtime=False)
    x.get_ok("-q", x.dest("backup"), x.tmp / "g2")
    compare_tree(photos, x.tmp / "g2" / "backup", top_mtime=False)
    # the same as rsync, both ways
    ref = rsync_ref([], str(photos) + "/", x.tmp / "ref")
    same_entries(x.root / "backup", ref)
    same_entries(x.tmp / "g1", ref)


def test_trailing_slash_on_a_file_is_refused(xsrv):
    x = xsrv
    f = x.src / "f.txt"
    f.write_text("x\n")
    res = x.send("-q", str(f) + "/", x.dest("o"))
    assert res.returncode != 0, describe(res)
    assert "Not a directory" in res.stderr, describe(res)
    assert not (x.root / "o" / "f.txt").exists()
    (x.root / "g.txt").write_text("y\n")
    res = x.get("-q", x.dest("g.txt/"), x.tmp / "got")
    assert res.returncode != 0, describe(res)
    assert not (x.tmp / "got" / "g.txt").exists()


@pytest.mark.parametrize("bad,why", [
    ("", "empty"),
    ("/", "matches nothing"),
    ("a\tb", "control character"),
    ("x" * 1025, "longer than 1024"),
], ids=["empty", "slash", "tab", "too-long"])
def test_bad_patterns_are_refused_before_anything_moves(xsrv, bad, why):
    x = xsrv
    (x.src / "f").write_text("x\n")
    res = x.send("--exclude", bad, x.src / "f", x.dest("o"))
    assert res.returncode == 2, describe(res)
    assert why in res.stderr, describe(res)
    assert not (x.root / "o").exists()


def test_pull_filter_rules_bounded(xsrv):
    """More rules than one request carries: refused with the reason,
    before anything moves."""
    x = xsrv
    (x.root / "f").write_text("x\n")
    rules = x.tmp / "many.rules"
    rules.write_text("".join(f"pattern-number-{i:05d}-" + "y" * 40 + "\n"
                             for i in range(1024)))
    res = x.get("--exclude-from", rules, x.dest("f"), x.tmp / "got")
    assert res.returncode != 0, describe(res)
    assert "65,536 at most" in res.stderr, describe(res)
    assert not (x.tmp / "got").exists()


def test_update_keeps_what_is_newer_at_the_destination(xsrv):
    """--update is rsync's -u: a destination file newer than the source's
    is kept (counted as skipped), an older one or one of another size with
    the same mtime is replaced; compared with rsync -a -u from the same
    starting point."""
    x = xsrv
    top = x.src / "t"
    top.mkdir()
    t0 = 1_700_000_000
    cases = {  # name: (source mtime, destination mtime, dest content)
        "newer-there": (t0, t0 + 60, b"edited at the destination\n"),
        # whole seconds, as rsync compares them: replaced
        "newer-there-by-1ns": (t0, None, b"edited, 1 ns later\n"),
        "older-there": (t0 + 60, t0, b"old\n"),
        "same-mtime-other-size": (t0, t0, b"other size\n"),
        "same": (t0, t0, None),
        "only-here": (t0, None, None),
    }
    for i, (name, (smt, dmt, dcontent)) in enumerate(cases.items()):
        (top / name).write_bytes(f"source {i}\n".encode() * 3)
        os.utime(top / name, (smt, smt))
    for dest in (x.root / "u", x.tmp / "ref"):
        dest.mkdir()
        for name, (smt, dmt, dcontent) in cases.items():
            if name == "only-here":
                continue
            d = dest / name
            if dcontent is None:
                d.write_bytes((top / name).read_bytes())
                os.utime(d, (smt, smt))
                continue
            d.write_bytes(dcontent)
            if dmt is None:  # 1 ns after the source
                os.utime(d, ns=(smt * 10**9 + 1,) * 2)
            else:
                os.utime(d, (dmt, dmt))
    res = x.send_ok("--json", "--update", str(top) + "/", x.dest("u"))
    end = end_event(res.stdout)
    # kept: the newer one and the identical one
    assert end["files_skipped"] == 2, end
    assert end["files_ok"] == 4, end
    assert (x.root / "u" / "newer-there").read_bytes() == \
        b"edited at the destination\n"
    assert (x.root / "u" / "older-there").read_bytes() == \
        (top / "older-there").read_bytes()
    ref = x.tmp / "ref"
    res = subprocess.run([RSYNC, "-a", "-u", str(top) + "/", str(ref) + "/"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, describe(res)
    same_entries(x.root / "u", ref)


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_an_up_to_date_file_gets_the_sources_mode(xsrv, mode):
    """A file whose data is up to date but whose mode changed at the
    source gets the new mode, as rsync -a gives it (compared); one with
    another name (a hard link that may be outside the destination) keeps
    its mode and says so; setuid is not given without the consent."""
    x = xsrv
    top = x.src / "m"
    top.mkdir()
    for name in ("plain", "linked", "setuid", "same"):
        (top / name).write_bytes(name.encode() * 5)
        os.chmod(top / name, 0o644)
    if mode == "push":
        x.send_ok(str(top) + "/", x.dest("m/"))
        dest = x.root / "m"
    else:
        (x.root / "m").mkdir()
        for p in top.iterdir():
            (x.root / "m" / p.name).write_bytes(p.read_bytes())
            os.chmod(x.root / "m" / p.name, 0o644)
            st = p.stat()
            os.utime(x.root / "m" / p.name, ns=(st.st_atime_ns,
                                                st.st_mtime_ns))
        x.get_ok(x.dest("m/"), str(x.tmp / "pulled") + "/")
        top, dest = x.root / "m", x.tmp / "pulled"
    ref = x.tmp / "ref"
    res = subprocess.run([RSYNC, "-a", str(top) + "/", str(ref) + "/"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, describe(res)
    os.link(dest / "linked", x.tmp / "outside")
    os.chmod(top / "plain", 0o600)
    os.chmod(top / "linked", 0o755)
    os.chmod(top / "setuid", 0o4755)
    mtimes = {p.name: p.stat().st_mtime_ns for p in dest.iterdir()}
    if mode == "push":
        res = x.send_ok("--json", "--update", str(top) + "/", x.dest("m/"))
    else:
        res = x.get_ok("--json", "--update", x.dest("m/"),
                       str(dest) + "/")
    end = end_event(res.stdout)
    assert end["files_skipped"] == 4 and end["files_ok"] == 0, end
    assert end["bytes"] == 0, end
    got = {p.name: p.stat().st_mode & 0o7777 for p in dest.iterdir()}
    assert got["plain"] == 0o600, oct(got["plain"])
    assert got["setuid"] == 0o755, oct(got["setuid"])  # no consent
    assert got["same"] == 0o644, oct(got["same"])
    assert got["linked"] == 0o644, oct(got["linked"])  # other names
    assert (x.tmp / "outside").stat().st_mode & 0o777 == 0o644
    assert {p.name: p.stat().st_mtime_ns for p in dest.iterdir()} == mtimes
    if mode == "pull":  # the receiver's words reach this side
        said = [e for e in json_events(res.stdout)
                if e.get("event") == "file" and e.get("path") == "linked"]
        assert len(said) == 1 and said[0]["status"] == "skipped" and \
            "other names" in said[0].get("reason", ""), said
    # its owner too (-o -g, a root receiver): kept, and said with the mode
    os.chown(top / "linked", 65534, 65534)
    os.chmod(top / "linked", 0o700)
    if mode == "push":
        res = x.send_ok("-v", "-o", "-g", "--update", str(top) + "/",
                        x.dest("m/"))
    else:
        res = x.get_ok("-v", "-o", "-g", "--update", x.dest("m/"),
                       str(dest) + "/")
    st = (dest / "linked").stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o644), st
    if mode == "pull":
        assert "up to date linked (its owner and mode are kept: the file " \
            "has other names" in res.stdout + res.stderr, describe(res)
    res = subprocess.run([RSYNC, "-a", str(top) + "/", str(ref) + "/"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, describe(res)
    assert (ref / "plain").stat().st_mode & 0o7777 == 0o600


@pytest.fixture
def world_dir(tmp_path_factory):
    """A directory an unprivileged user can enter (pytest's are 0700),
    removed afterwards."""
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="lr-sync-")
    os.chmod(d, 0o755)
    yield __import__("pathlib").Path(d)
    for root, dirs, _ in os.walk(d):
        for n in dirs:
            os.chmod(os.path.join(root, n), 0o755)
    shutil.rmtree(d)


def test_unreadable_entries_are_told_and_the_rest_goes(xsrv, world_dir):
    """A sender that cannot read a file or a directory says so in one line
    each and sends everything else; exit status 23, as rsync's "partial
    transfer due to error". The sender runs as nobody (root reads
    everything)."""
    x = xsrv
    top = world_dir / "tree"
    for rel in ("a.txt", "sub/b.txt", "locked/c.txt", "z/last.txt",
                "secret.txt"):
        p = top / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(rel + "\n")
    token = world_dir / "token"
    token.write_text(x.token + "\n")
    for root, dirs, files in os.walk(top):
        os.chmod(root, 0o755)
        for n in files:
            os.chmod(os.path.join(root, n), 0o644)
    os.chmod(top / "secret.txt", 0)
    os.chmod(top / "locked", 0)
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            x.bin, "send", "-p", str(x.srv.port), "--token-file", str(token),
            "--json", str(top), x.dest("out")]
    res = x.h.run_a(argv, stdin=subprocess.DEVNULL, capture_output=True,
                    text=True, timeout=60)
    assert res.returncode == 23, describe(res)
    out = x.root / "out" / "tree"
    for rel in ("a.txt", "sub/b.txt", "z/last.txt"):
        assert (out / rel).read_text() == rel + "\n"
    assert not (out / "secret.txt").exists()
    # the directory is made (as rsync does), its entries are not there
    assert (out / "locked").is_dir() and not os.listdir(out / "locked")
    end = end_event(res.stdout)
    assert end["files_unread"] == 2 and end["files_failed"] == 2, end
    assert end["files_ok"] == 3, end
    errs = [e for e in json_events(res.stdout)
            if e.get("event") == "file" and e.get("status") == "failed"]
    paths = sorted(e["path"] for e in errs)
    assert paths == ["tree/locked", "tree/secret.txt"], errs
    assert all("Permission denied" in e.get("error", "") for e in errs), \
        errs
    assert not temp_leftovers(x.root)


def test_recv_exits_23_when_the_sender_could_not_read(xenv, world_dir):
    """`recv` says the same as its sender: everything readable arrived,
    one source could not be read: exit status 23 at both ends."""
    from test_integrity import start_recv
    x = xenv
    top = world_dir / "t"
    top.mkdir()
    os.chmod(top, 0o755)
    for n in ("a.txt", "secret.txt", "z.txt"):
        (top / n).write_text(n + "\n")
        os.chmod(top / n, 0o644)
    os.chmod(top / "secret.txt", 0)
    dest = x.tmp / "inbox"
    recv, token, port, rout, rerr = start_recv(x, dest, 0)
    try:
        tok = world_dir / "token"
        tok.write_text(token + "\n")
        os.chmod(tok, 0o644)
        argv = ["setpriv", "--reuid=65534", "--regid=65534",
                "--clear-groups", x.bin, "send", "-p", str(port),
                "--token-file", str(tok), "-q", str(top) + "/",
                f"{x.h.addr_b}:"]
        res = x.h.run_a(argv, stdin=subprocess.DEVNULL,
                        capture_output=True, text=True, timeout=60)
        assert res.returncode == 23, describe(res)
        assert recv.wait(timeout=30) == 23, rerr.text()
    finally:
        from xferutil import kill_and_reap
        kill_and_reap(recv)
    assert "secret.txt" in rerr.text(), rerr.text()
    # the token stays for the same command again, as after any
    # transfer that did not bring everything
    got = sorted(n for n in os.listdir(dest) if not n.endswith(".lrtoken"))
    assert got == ["a.txt", "z.txt"], os.listdir(dest)


def test_missing_sources_are_told_and_the_rest_goes(xsrv):
    """One missing PATH among others: told, the others arrive, exit 23;
    a pull learns from the server (the sender there) and exits 23 too."""
    x = xsrv
    (x.src / "here.txt").write_text("here\n")
    res = x.send("-q", x.src / "nope.txt", x.src / "here.txt", x.dest("o"))
    assert res.returncode == 23, describe(res)
    assert "nope.txt" in res.stderr and "No such file" in res.stderr, \
        describe(res)
    assert (x.root / "o" / "here.txt").read_text() == "here\n"
    (x.root / "srv.txt").write_text("srv\n")
    res = x.get("--json", x.dest("gone.txt"), x.dest("srv.txt"),
                x.tmp / "got")
    assert res.returncode == 23, describe(res)
    assert (x.tmp / "got" / "srv.txt").read_text() == "srv\n"
    end = end_event(res.stdout)
    assert end["files_unread"] == 1 and end["files_ok"] == 1, end
    # a failure of another kind keeps exit status 1
    (x.root / "o2").mkdir()
    (x.root / "o2" / "here.txt").write_text("different\n")
    res = x.send("-q", x.src / "nope.txt", x.src / "here.txt",
                 x.dest("o2"))
    assert res.returncode == 1, describe(res)


def plant_extras(dest, outside):
    """What a destination holds that the source has not: nested files and
    directories, a symlink to a directory outside DEST (whose contents
    must survive), excluded names, a transfer's temporary file."""
    (dest / "gone" / "deeper").mkdir(parents=True)
    (dest / "gone" / "deeper" / "f1").write_text("1\n")
    (dest / "gone" / "f2").write_text("2\n")
    (dest / "src" / "stale.c").write_text("stale\n")
    (dest / "old.log").write_text("log\n")
    (dest / "docs" / "deeper" / "old.log").write_text("log\n")
    os.symlink(str(outside), dest / "escape")
    os.symlink(str(outside), dest / "docs" / "escape2")


@pytest.mark.parametrize("mode", ["push", "push-slash", "pull"])
@pytest.mark.parametrize("excluded", [False, True],
                         ids=["keep-excluded", "delete-excluded"])
def test_delete_as_rsync(xsrv, mode, excluded):
    """--delete removes, within the directories sent, what the source has
    not, nested; never follows a symlink; keeps what the rules leave out
    unless --delete-excluded; never touches a transfer's temporary file;
    names each removal. The result is rsync --delete's on the same
    trees."""
    x = xsrv
    outside = x.tmp / "outside"
    outside.mkdir()
    (outside / "precious").write_text("must survive\n")
    slash = mode == "push-slash"
    src = (x.root if mode == "pull" else x.src) / "tree"
    build_tree(src)
    rules = ["--exclude", "*.log"]
    rules += ["--delete-excluded"] if excluded else ["--delete"]
    if mode == "pull":
        dest, ref = x.tmp / "got", x.tmp / "ref"
        x.get_ok("-q", x.dest("tree"), dest)
        inner = dest / "tree"
    else:
        dest, ref = x.root / "out", x.tmp / "ref"
        x.send_ok("-q", str(src) + ("/" if slash else ""), x.dest("out"))
        inner = dest if slash else dest / "tree"
    rsync_ref([], str(src) + ("/" if slash else ""), ref)
    plant_extras(inner, outside)
    plant_extras(ref if slash else ref / "tree", outside)
    # kept, unlike rsync: the temporary file of an interrupted transfer
    (inner / ".f1.txt.lrpart").write_text("partial\n")
    if mode == "pull":
        res = x.get_ok("--json", *rules, x.dest("tree"), dest)
    else:
        res = x.send_ok("--json", *rules, str(src) + ("/" if slash else ""),
                        x.dest("out"))
    rsync_ref(rules, str(src) + ("/" if slash else ""), ref)
    assert (inner / ".f1.txt.lrpart").exists()
    os.unlink(inner / ".f1.txt.lrpart")
    same_entries(dest, ref)
    assert (outside / "precious").read_text() == "must survive\n"
    deleted = sorted(e["path"] for e in json_events(res.stdout)
                     if e.get("event") == "file"
                     and e.get("status") == "deleted")
    pre = "" if slash else "tree/"
    want = sorted(pre + p for p in [
        "gone/deeper/f1", "gone/f2", "gone/deeper", "gone", "src/stale.c",
        "escape", "docs/escape2"] + (
        ["old.log", "docs/deeper/old.log", "a.log", "docs/deeper/c.log"]
        if excluded else []))
    assert deleted == want, deleted
    end = end_event(res.stdout)
    assert end["files_deleted"] == len(want), end


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_a_removal_that_fails_is_said_and_exits_23(xsrv, mode):
    """--delete meets an entry it cannot remove (an immutable file): that
    one is named with the reason, counted, and the transfer exits 23 as
    rsync's does; what could be removed is removed, the directory holding
    the immutable file stays, and nothing else is said of it."""
    x = xsrv
    top = x.src / "keep"
    top.mkdir()
    (top / "a.txt").write_text("a\n")
    if mode == "push":
        x.send_ok(str(top) + "/", x.dest("fd/"))
        dest = x.root / "fd"
    else:
        (x.root / "fd").mkdir()
        (x.root / "fd" / "a.txt").write_text("a\n")
        top, dest = x.root / "fd", x.tmp / "pulled"
        dest.mkdir()
    (dest / "extra").mkdir()
    (dest / "extra" / "gone.txt").write_text("g\n")
    stuck = dest / "extra" / "stuck.txt"
    stuck.write_text("s\n")
    (dest / "extra2.txt").write_text("z\n")
    with immutable(stuck):
        if mode == "push":
            res = x.send("--json", "--delete", str(top) + "/",
                          x.dest("fd/"))
            human = x.send("--delete", str(top) + "/", x.dest("fd/"))
        else:
            res = x.get("--json", "--delete", x.dest("fd/"),
                        str(dest) + "/")
            human = x.get("--delete", x.dest("fd/"), str(dest) + "/")
        assert res.returncode == 23, describe(res)
        assert human.returncode == 23, describe(human)
        end = end_event(res.stdout)
        assert end["deletes_failed"] == 1, end
        assert "extra/stuck.txt" in end["deletes_why"], end
        assert "Operation not permitted" in end["deletes_why"], end
        assert end["files_deleted"] == 2, end  # gone.txt, extra2.txt
        assert stuck.exists() and (dest / "extra").is_dir()
        assert not (dest / "extra" / "gone.txt").exists()
        assert not (dest / "extra2.txt").exists()
        assert (dest / "a.txt").read_text() == "a\n"
        # the human end line says it, and no "deleting" line for it
        assert "1 NOT deleted ('extra/stuck.txt'" in human.stdout + \
            human.stderr, describe(human)
        assert "deleting extra/stuck.txt" not in human.stdout, \
            describe(human)
        if mode == "pull":  # the receiver names it in a line of its own
            fails = [e for e in json_events(res.stdout)
                     if e.get("status") == "delete_failed"]
            assert [e["path"] for e in fails] == ["extra/stuck.txt"], fails
            assert "linerate get: extra/stuck.txt: could not be deleted" \
                in human.stderr, describe(human)


def test_removals_a_user_may_not_make_are_said(xsrv):
    """A receiver that is not root (a pull as nobody) meets, in what
    --delete would remove, a file in a directory it may not write and a
    directory it may not read: each is named with the reason, counted,
    exit status 23; the rest is removed; nothing else is touched."""
    x = xsrv
    (x.root / "s").mkdir()
    (x.root / "s" / "a.txt").write_text("a\n")
    with as_nobody(x, "lr-delete-") as (dest, get):
        d = __import__("pathlib").Path(dest)
        (d / "locked").mkdir()
        (d / "locked" / "stale.txt").write_text("s\n")
        (d / "closed").mkdir(mode=0o700)
        (d / "closed" / "inside.txt").write_text("i\n")
        (d / "mine.txt").write_text("m\n")
        os.chown(d / "mine.txt", 65534, 65534)
        res = get("--json", "--delete", x.dest("s/"))
        assert res.returncode == 23, describe(res)
        end = end_event(res.stdout)
        assert end["deletes_failed"] == 2 and end["files_deleted"] == 1, end
        fails = sorted(e["path"] for e in json_events(res.stdout)
                       if e.get("status") == "delete_failed")
        assert fails == ["closed", "locked/stale.txt"], fails
        assert all("Permission denied" in e["error"]
                   for e in json_events(res.stdout)
                   if e.get("status") == "delete_failed"), res.stdout
        assert not (d / "mine.txt").exists()
        assert (d / "locked" / "stale.txt").exists()
        assert (d / "closed" / "inside.txt").exists()
        assert (d / "a.txt").read_text() == "a\n"


def test_delete_only_inside_the_directories_sent(xsrv):
    """`send tree host:out --delete` deletes inside out/tree, never beside
    it in out; a destination that is a symlink is not walked."""
    x = xsrv
    src = x.src / "tree"
    build_tree(src)
    (x.root / "out").mkdir()
    (x.root / "out" / "neighbour.txt").write_text("not ours\n")
    x.send_ok("-q", "--delete", src, x.dest("out"))
    assert (x.root / "out" / "neighbour.txt").exists()
    compare_tree(src, x.root / "out" / "tree")


def test_delete_skipped_after_a_read_error(xsrv, world_dir):
    """The sender (nobody) cannot read one directory: nothing is deleted
    anywhere (rsync's rule, so that a failing disk does not empty the
    backup), it says so, exit 23."""
    x = xsrv
    top = world_dir / "tree"
    (top / "locked").mkdir(parents=True)
    (top / "ok.txt").write_text("ok\n")
    (top / "locked" / "in.txt").write_text("in\n")
    token = world_dir / "token"
    token.write_text(x.token + "\n")
    os.chmod(top, 0o755)
    os.chmod(top / "ok.txt", 0o644)
    os.chmod(top / "locked" / "in.txt", 0o644)
    dest = x.root / "out"
    (dest / "locked").mkdir(parents=True)
    (dest / "locked" / "in.txt").write_text("in\n")
    (dest / "extra.txt").write_text("would be deleted\n")
    os.chmod(top / "locked", 0)
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            x.bin, "send", "-p", str(x.srv.port), "--token-file", str(token),
            "--delete", str(top) + "/", x.dest("out")]
    res = x.h.run_a(argv, stdin=subprocess.DEVNULL, capture_output=True,
                    text=True, timeout=60)
    assert res.returncode == 23, describe(res)
    assert "nothing was deleted" in res.stderr, describe(res)
    assert (dest / "extra.txt").exists()
    assert (dest / "locked" / "in.txt").exists()
    assert (dest / "ok.txt").read_text() == "ok\n"


def test_delete_refuses_standard_output_and_input(xsrv):
    x = xsrv
    (x.root / "f").write_text("f\n")
    res = x.get("--delete", x.dest("f"), "-")
    assert res.returncode == 2, describe(res)
    res = x.send("--delete", "-", x.dest("f2"))
    assert res.returncode == 2, describe(res)


def snapshot(top):
    """Every entry below top with its kind, size, mtime and bytes."""
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            data = (open(p, "rb").read()
                    if os.path.isfile(p) and not os.path.islink(p) else b"")
            out[os.path.relpath(p, top)] = (st.st_mode, st.st_size,
                                            st.st_mtime_ns, data)
    return out


def file_statuses(stdout):
    return {e["path"]: e["status"] for e in json_events(stdout)
            if e.get("event") == "file"}


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_dry_run_lists_what_the_real_run_does(xsrv, mode):
    """-n writes nothing and moves no file data (the end event's bytes);
    what it lists (would_send, would_replace, would_delete, skipped) is
    what the same command without -n then does."""
    x = xsrv
    src = (x.root if mode == "pull" else x.src) / "tree"
    build_tree(src)
    dest = x.tmp / "got" if mode == "pull" else x.root / "out"
    if mode == "pull":
        x.get_ok("-q", x.dest("tree/"), dest)
    else:
        x.send_ok("-q", str(src) + "/", x.dest("out"))
    # changes on both sides since that first copy
    (src / "new.txt").write_text("new\n")
    (src / "sub-new" / "deep").mkdir(parents=True)
    (src / "sub-new" / "deep" / "n.bin").write_bytes(b"n" * 5000)
    (src / "b.txt").write_text("changed at the source, longer\n")
    (dest / "extra" / "x").mkdir(parents=True)
    (dest / "extra" / "x" / "old").write_text("old\n")
    (dest / "stale.txt").write_text("stale\n")
    args = ["--json", "--update", "--delete", "--exclude", "*.log"]
    before = snapshot(dest)

    def run(*more):
        if mode == "pull":
            return x.get_ok(*args, *more, x.dest("tree/"), dest)
        return x.send_ok(*args, *more, str(src) + "/", x.dest("out"))

    dry = run("-n")
    assert snapshot(dest) == before, "a dry run changed the destination"
    assert end_event(dry.stdout)["bytes"] == 0
    real = run()
    want = {"would_send": "done", "would_replace": "done",
            "would_delete": "deleted", "skipped": "skipped"}
    d, r = file_statuses(dry.stdout), file_statuses(real.stdout)
    assert {p: want.get(s, s) for p, s in d.items()} == r, (d, r)
    assert d["new.txt"] == "would_send"
    assert d["b.txt"] == "would_replace"
    assert d["stale.txt"] == "would_delete"
    assert d["extra"] == "would_delete"
    assert d["sub-new/deep/n.bin"] == "would_send"
    assert d["f1.txt"] == "skipped" and "a.log" not in d
    assert end_event(real.stdout)["bytes"] > 0
    # what the real run left: the source, and the excluded logs it kept
    assert not (dest / "stale.txt").exists() and not (dest / "extra").exists()
    assert (dest / "a.log").exists()
    for rel in ("new.txt", "b.txt", "sub-new/deep/n.bin", "keep/sub/k2.c"):
        assert (dest / rel).read_bytes() == (src / rel).read_bytes(), rel


def test_dry_run_and_verbose_in_words(xsrv):
    x = xsrv
    src = x.src / "t"
    src.mkdir()
    (src / "f.txt").write_text("f\n")
    res = x.send_ok("-n", str(src) + "/", x.dest("o"))
    assert "would send f.txt" in res.stderr, describe(res)
    assert "dry run, nothing written: 1 file would be sent" in res.stderr, \
        describe(res)
    assert not (x.root / "o").exists()
    res = x.send_ok("-v", str(src) + "/", x.dest("o"))
    assert "sent f.txt" in res.stderr, describe(res)
    res = x.send_ok("-v", str(src) + "/", x.dest("o"))
    assert "up to date f.txt" in res.stderr, describe(res)


def test_unreadable_corners(xsrv, world_dir):
    """A directory listed but not searchable (r--) with many names is one
    line, not one per name, and the session goes on; a top-level
    directory that cannot be opened is still made, empty (as one below
    the top is); `/` with a trailing-slash meaning is its contents."""
    x = xsrv
    top = world_dir / "t"
    (top / "noexec").mkdir(parents=True)
    for i in range(100):
        (top / "noexec" / f"f{i:03d}").write_text("x\n")
    (top / "fine.txt").write_text("fine\n")
    closed = world_dir / "closed"
    closed.mkdir()
    (closed / "in.txt").write_text("in\n")
    token = world_dir / "token"
    token.write_text(x.token + "\n")
    for d in (top, top / "noexec", world_dir):
        os.chmod(d, 0o755)
    for p in list((top / "noexec").iterdir()) + [top / "fine.txt",
                                                  closed / "in.txt"]:
        os.chmod(p, 0o644)
    os.chmod(top / "noexec", 0o444)
    os.chmod(closed, 0)
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            x.bin, "send", "-p", str(x.srv.port), "--token-file", str(token),
            "--json", str(top), str(closed), x.dest("out")]
    res = x.h.run_a(argv, stdin=subprocess.DEVNULL, capture_output=True,
                    text=True, timeout=60)
    assert res.returncode == 23, describe(res)
    failed = sorted(e["path"] for e in json_events(res.stdout)
                    if e.get("event") == "file"
                    and e.get("status") == "failed")
    assert failed == ["closed", "t/noexec"], failed
    assert (x.root / "out" / "t" / "fine.txt").read_text() == "fine\n"
    assert (x.root / "out" / "closed").is_dir()
    assert not os.listdir(x.root / "out" / "closed")
    # the contents of / (all left out here): no refusal
    res = x.send("-q", "--exclude", "*", "/", x.dest("root-contents"))
    assert res.returncode == 0, describe(res)


def test_update_replaces_a_newer_entry_of_another_kind(xsrv):
    """rsync -u compares times of files only: a newer symlink where the
    source has a file is replaced."""
    x = xsrv
    (x.src / "f").write_text("file\n")
    os.utime(x.src / "f", (1_600_000_000,) * 2)
    (x.root / "o").mkdir()
    os.symlink("nowhere", x.root / "o" / "f")
    x.send_ok("-q", "--update", x.src / "f", x.dest("o"))
    assert not os.path.islink(x.root / "o" / "f")
    assert (x.root / "o" / "f").read_text() == "file\n"


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_checksum_decides_by_content(xsrv, mode):
    """-c/--checksum is rsync's -c: a file of the same size and mtime
    whose bytes differ is replaced (the quick check alone keeps it); one
    with the same bytes and another mtime moves no data and takes the
    source's mtime; compared with rsync -a -c from the same start."""
    x = xsrv
    top = (x.root if mode == "pull" else x.src) / "c"
    top.mkdir()
    t0, t1 = 1_700_000_000, 1_700_000_600
    big = os.urandom(3 * 1024 * 1024 + 17)  # more than one chunk
    src = {
        "same-size-same-mtime": (b"source bytes\n", t0),
        "big-one-byte-changed": (big, t0),
        "same-bytes-other-mtime": (b"identical\n", t1),
        "same": (b"same\n", t0),
        "other-size": (b"longer than before\n", t0),
    }
    dst = {
        "same-size-same-mtime": (b"SOURCE BYTES\n", t0),
        # one byte other than the source's (a fixed b"X" was the same
        # byte in 1 run of 256, and the test then failed)
        "big-one-byte-changed": (big[:1000] + bytes([big[1000] ^ 0xff]) +
                                 big[1001:], t0),
        "same-bytes-other-mtime": (b"identical\n", t0),
        "same": (b"same\n", t0),
        "other-size": (b"short\n", t0),
    }
    for name, (data, mt) in src.items():
        (top / name).write_bytes(data)
        os.utime(top / name, (mt, mt))
    dest = x.tmp / "got" if mode == "pull" else x.root / "cd"
    ref = x.tmp / "ref"
    for d in (dest, ref):
        d.mkdir()
        for name, (data, mt) in dst.items():
            (d / name).write_bytes(data)
            os.utime(d / name, (mt, mt))

    def run(*more):
        if mode == "pull":
            return x.get_ok("--json", *more, x.dest("c/"), dest)
        return x.send_ok("--json", *more, str(top) + "/", x.dest("cd"))

    # without -c the quick check keeps the same-size same-mtime copies
    before = snapshot(dest)
    res = run("--update", "-n")
    st = file_statuses(res.stdout)
    assert "same-size-same-mtime" not in st or \
        st["same-size-same-mtime"] == "skipped", st
    assert snapshot(dest) == before
    # with -c: the dry run names what the real run then replaces
    res = run("--update", "-c", "-n")
    assert snapshot(dest) == before
    dry = file_statuses(res.stdout)
    res = run("--update", "--checksum")
    end = end_event(res.stdout)
    real = file_statuses(res.stdout)
    for name in ("same-size-same-mtime", "big-one-byte-changed",
                 "other-size"):
        assert dry.get(name) == "would_replace", dry
        assert real.get(name) == "done", real
    for name in ("same-bytes-other-mtime", "same"):
        assert dry.get(name, "skipped") == "skipped", dry
        assert real.get(name, "skipped") == "skipped", real
    assert end["files_skipped"] == 2, end
    # the bytes that crossed: the two small replaced files, and of the
    # big one the chunk (1 MiB) with the changed byte, by delta
    sent = sum(len(src[n][0]) for n in
               ("same-size-same-mtime", "other-size")) + 1024 * 1024
    assert end["bytes"] == sent, end
    for name, (data, mt) in src.items():
        assert (dest / name).read_bytes() == data, name
        assert os.stat(dest / name).st_mtime == mt, name
    res = subprocess.run([RSYNC, "-a", "-c", str(top) + "/", str(ref) + "/"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, describe(res)
    same_entries(dest, ref)
    # nothing left to do: a second -c run moves no data
    res = run("--update", "-c")
    assert end_event(res.stdout)["bytes"] == 0
    assert not temp_leftovers(dest)


def test_checksum_into_standard_output(xsrv):
    """-c with standard output (one file into a pipe) still works: the
    flag travels, the receiver has nothing to compare."""
    x = xsrv
    (x.root / "p.txt").write_bytes(b"pipe me\n")
    res = x.get("-c", x.dest("p.txt"), "-")
    assert res.returncode == 0, describe(res)
    out = res.stdout
    assert (out if isinstance(out, bytes) else out.encode()) == b"pipe me\n"


def test_stats_counts_what_the_end_event_counts(xsrv):
    """--stats ends with the counts, also with -q: files considered,
    sent, up to date, failed, deleted, and the file data sent against
    what was there already, the same numbers as the JSON end event."""
    x = xsrv
    top = x.src / "s"
    top.mkdir()
    for i in range(4):
        (top / f"f{i}").write_bytes(b"%d" % i * (1000 + i))
    x.send_ok("-q", str(top) + "/", x.dest("sd"))
    (top / "f0").write_bytes(b"changed, and longer than before\n" * 50)
    (top / "new").write_bytes(b"n" * 777)
    (x.root / "sd" / "gone").write_bytes(b"g")

    def stats(*extra):
        res = x.send_ok("-q", "--stats", "--update", "--delete", *extra,
                        str(top) + "/", x.dest("sd"))
        out = res.stderr.decode() if isinstance(res.stderr, bytes) \
            else res.stderr
        return out, dict(l.strip().split(": ", 1) for l in out.splitlines()
                         if ": " in l)

    # a dry run says what it would delete, and deletes nothing
    out, lines = stats("-n")
    assert lines["would be deleted at the destination"] == \
        "1 (not deleted: 0)", out
    assert "deleted at the destination" not in lines, out
    assert (x.root / "sd" / "gone").exists()
    out, lines = stats()
    assert lines["files considered"] == "5", out
    assert lines["sent"] == "2", out
    assert lines["up to date (skipped)"] == "3", out
    assert lines["deleted at the destination"] == "1 (not deleted: 0)", out
    sent = 50 * 32 + 777
    assert lines["file data sent"].startswith(f"{sent} bytes"), out
    held = sum(1000 + i for i in (1, 2, 3))
    assert lines["file data already there"].startswith(f"{held} bytes"), out
    # the JSON end event says the same
    (top / "f1").write_bytes(b"again\n")
    res = x.send_ok("--json", "--update", str(top) + "/", x.dest("sd"))
    end = end_event(res.stdout)
    assert end["bytes"] == 6 and end["files_ok"] == 1, end
    assert end["bytes_already_held"] == sent + 1002 + 1003, end
