# SPDX-License-Identifier: MIT
"""-H, hard links kept as links (issue 20), between the namespace hosts:
a group of names of one file inside the transfer arrives as one file with
those names, its data sent once; a name whose other names are outside the
transfer arrives as a file of its own; without -H every name is a copy.
Each case is compared with the source by device and inode and with
`rsync -aH` given the same tree. Needs root for the namespaces (the
fixtures skip with the reason otherwise).
"""

import os
import re
import shutil
import subprocess

import pytest

from lrproc import describe
from xferutil import (MiB, end_event, json_events, kill_and_reap, output,
                      temp_leftovers, wait_resumable, write_random)
from util import wait_until

RSYNC = "/usr/bin/rsync"


def link_tree(top, outside, big=MiB + 5):
    """Group g1 of three names (one in a subdirectory), group g2 of two,
    a file whose other name is outside the transfer, a plain file and a
    symlink. Returns the sizes of the distinct files."""
    (top / "d").mkdir(parents=True)
    write_random(top / "g1_a", big)
    os.link(top / "g1_a", top / "g1_b")
    os.link(top / "g1_a", top / "d" / "g1_c")
    (top / "g2_a").write_bytes(b"second group\n" * 100)
    os.link(top / "g2_a", top / "d" / "g2_b")
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "o").write_bytes(b"linked from outside\n")
    os.link(outside / "o", top / "out_linked")
    (top / "plain").write_bytes(b"plain\n")
    os.symlink("g1_a", top / "sym")
    return [big, 1300, 20, 6]


def groups(top):
    """The names below top of each inode with more than one name, as a
    set of frozensets of relative paths, and the link count of each."""
    by_ino = {}
    for d, _dirs, files in os.walk(top):
        for n in files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            if os.path.islink(p):
                continue
            by_ino.setdefault((st.st_dev, st.st_ino), []).append(
                (os.path.relpath(p, top), st.st_nlink))
    out = {}
    for names in by_ino.values():
        out[frozenset(n for n, _ in names)] = names[0][1]
    return out


def same_bytes(a, b):
    for d, _dirs, files in os.walk(a):
        for n in files:
            p = os.path.join(d, n)
            q = os.path.join(b, os.path.relpath(p, a))
            if os.path.islink(p):
                assert os.readlink(p) == os.readlink(q), p
            else:
                with open(p, "rb") as f, open(q, "rb") as g:
                    assert f.read() == g.read(), p


def rsync_ref(src_arg, dst):
    dst.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([RSYNC, "-aH", str(src_arg), str(dst) + "/"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, describe(res)
    return dst


EXPECTED = {
    frozenset({"g1_a", "g1_b", "d/g1_c"}): 3,
    frozenset({"g2_a", "d/g2_b"}): 2,
    frozenset({"plain"}): 1,
    frozenset({"out_linked"}): 1,
}


@pytest.fixture(scope="module", autouse=True)
def have_rsync():
    if not os.path.exists(RSYNC):
        pytest.skip("rsync is not installed (scripts/deps.sh installs it)")


def test_push_keeps_hard_links_as_rsync(xsrv):
    x = xsrv
    top = x.src / "t"
    sizes = link_tree(top, x.tmp / "outside")
    res = x.send_ok("--json", "-H", str(top) + "/", x.dest("out"))
    end = end_event(res.stdout)
    # the data of each file travels once
    assert end["bytes"] == sum(sizes), end
    assert end["files_ok"] == 4 and end["files_linked"] == 3, end
    linked = [e for e in json_events(res.stdout)
              if e.get("event") == "file" and e.get("status") == "linked"]
    # which name of a group goes first is the directory's order: each
    # link names a name of its own group
    assert len(linked) == 3, linked
    names = [frozenset({"g1_a", "g1_b", "d/g1_c"}),
             frozenset({"g2_a", "d/g2_b"})]
    for e in linked:
        assert e["reason"].startswith("to "), e
        assert any(e["path"] in g and e["reason"][3:] in g
                   for g in names), e
    assert groups(x.root / "out") == EXPECTED
    same_bytes(top, x.root / "out")
    ref = rsync_ref(str(top) + "/", x.tmp / "ref")
    assert groups(ref) == groups(x.root / "out")
    assert not temp_leftovers(x.root)


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_links_are_kept_by_default_and_no_hard_links_copies(xsrv, mode):
    """Without -H the links are kept all the same (the request's
    LINKS_WISH, granted by this server), as tar keeps them; with
    --no-hard-links every name is a file of its own, as rsync's default."""
    x = xsrv
    top = (x.src if mode == "push" else x.root) / "t"
    sizes = link_tree(top, x.tmp / "outside")

    def run(dest, *extra):
        if mode == "push":
            res = x.send_ok("--json", *extra, str(top) + "/", x.dest(dest))
            return end_event(res.stdout), x.root / dest
        got = x.tmp / dest
        got.mkdir()
        res = x.get_ok("--json", *extra, x.dest("t/"), got)
        return end_event(res.stdout), got

    end, out = run("default")
    assert end["files_linked"] == 3 and end["bytes"] == sum(sizes), end
    linked = {k for k in groups(out) if len(k) > 1}
    assert linked == {frozenset({"g1_a", "g1_b", "d/g1_c"}),
                      frozenset({"g2_a", "d/g2_b"})}, groups(out)
    end, out = run("copies", "--no-hard-links")
    assert end["files_linked"] == 0 and end["files_ok"] == 7, end
    assert end["bytes"] == sum(sizes) + 2 * sizes[0] + sizes[1]
    assert all(n == 1 for n in groups(out).values())


def test_pull_keeps_hard_links(xsrv):
    """get -H: the receiving client makes the links and tells each, as
    send does: -n lists them, -v names them, --json has their events."""
    x = xsrv
    top = x.root / "t"
    sizes = link_tree(top, x.tmp / "outside")
    got = x.tmp / "got"
    got.mkdir()
    res = x.get_ok("-n", "-H", x.dest("t/"), got)
    assert output(res).count("would link ") == 3, describe(res)
    assert "3 hard links would be made" in output(res), describe(res)
    assert os.listdir(got) == []
    res = x.get_ok("--json", "-H", x.dest("t/"), got)
    end = end_event(res.stdout)
    assert end["bytes"] == sum(sizes), end
    assert end["files_linked"] == 3, end
    linked = [e for e in json_events(res.stdout)
              if e.get("event") == "file" and e.get("status") == "linked"]
    assert len(linked) == 3, linked
    assert all(e["reason"].startswith("to ") for e in linked), linked
    assert groups(got) == EXPECTED
    same_bytes(top, got)
    res = x.get_ok("-v", "-H", "--overwrite", x.dest("t/"), got)
    assert output(res).count("linked ") == 3, describe(res)


def test_rerun_dry_run_and_delete_keep_links(xsrv):
    """A second run finds everything there (the links as made); -n lists
    the links it would make and makes none; --delete keeps every name."""
    x = xsrv
    top = x.src / "t"
    link_tree(top, x.tmp / "outside")
    res = x.send_ok("-n", "-H", str(top) + "/", x.dest("out"))
    assert res.stderr.count("would link ") == 3, describe(res)
    assert "3 hard links would be made" in res.stderr, describe(res)
    assert not (x.root / "out").exists()
    x.send_ok("-q", "-H", str(top) + "/", x.dest("out"))
    (x.root / "out" / "stale").write_text("not in the source\n")
    res = x.send_ok("--json", "-H", "--delete", str(top) + "/",
                    x.dest("out"))
    end = end_event(res.stdout)
    # the names there are the links already: up to date, as the files
    assert end["bytes"] == 0 and end["files_skipped"] == 7, end
    assert end["files_linked"] == 0, end
    assert end["files_deleted"] == 1, end
    assert groups(x.root / "out") == EXPECTED


def test_copies_become_links_only_when_asked(xsrv):
    """Names that are copies at the destination (an earlier run without
    -H) are not replaced without --overwrite or --update ("exists", exit
    1, the option named); with --update they become links."""
    x = xsrv
    top = x.src / "t"
    link_tree(top, x.tmp / "outside")
    x.send_ok("-q", "--no-hard-links", str(top) + "/", x.dest("out"))
    res = x.send("-H", str(top) + "/", x.dest("out"))
    assert res.returncode == 1, describe(res)
    assert "exists" in res.stderr and "--update" in res.stderr, describe(res)
    assert all(n == 1 for n in groups(x.root / "out").values())
    x.send_ok("-q", "-H", "--update", str(top) + "/", x.dest("out"))
    assert groups(x.root / "out") == EXPECTED
    same_bytes(top, x.root / "out")


def test_update_keeps_a_newer_name_at_the_destination(xsrv):
    """--update -H: a name whose copy at the destination is newer is kept
    (rsync's -u), not replaced by a link; a group whose first name is
    newer there links nothing to that other content, and says so."""
    x = xsrv
    top = x.src / "t"
    link_tree(top, x.tmp / "outside")
    x.send_ok("-q", "--no-hard-links", str(top) + "/", x.dest("out"))
    res = x.send_ok("-n", "-H", "--update", str(top) + "/", x.dest("out"))
    # which name of group g2 goes as the file is the walk's order
    pairs = re.findall(r"would link (\S+) \(to (\S+)\)", output(res))
    link, first = next((a, b) for a, b in pairs if "g2" in a)
    out = x.root / "out"
    later = os.stat(out / first).st_mtime + 100
    (out / link).write_text("edited at the destination\n")
    os.utime(out / link, (later, later))
    res = x.send_ok("--json", "-H", "--update", str(top) + "/",
                    x.dest("out"))
    # told by the receiver (KEPT): skipped, a file of its own, no link
    status, why = file_events(res.stdout)[link]
    assert status == "skipped" and "left as it was" in why, res.stdout
    assert (out / link).read_text() == "edited at the destination\n"
    assert not os.path.samefile(out / link, out / first)
    assert groups(out)[frozenset({"g1_a", "g1_b", "d/g1_c"})] == 3

    # now the group's first name is the newer one there
    (out / link).unlink()
    (out / first).write_text("edited too\n")
    os.utime(out / first, (later, later))
    res = x.send("-H", "--update", str(top) + "/", x.dest("out"))
    assert res.returncode == 1, describe(res)
    assert "is newer at the destination (kept by --update)" in \
        output(res), describe(res)
    assert (out / first).read_text() == "edited too\n"
    assert not (out / link).exists()


def test_resume_of_a_tree_with_links(xsrv):
    """Killed while the large file of a group travels, then run again:
    the held chunks are kept, and the links are made to the finished
    file."""
    x = xsrv
    top = x.src / "t"
    link_tree(top, x.tmp / "outside", big=48 * MiB)
    x.shape_a("160mbit")
    proc, out, err = x.popen_send("--json", "-H", "--limit", "20M",
                                  str(top) + "/", x.dest("r"))
    try:
        # the group's data travels under the name met first
        names = [(x.root / "r", "g1_a"), (x.root / "r", "g1_b"),
                 (x.root / "r" / "d", "g1_c")]
        where, first = wait_until(lambda: next(
            ((d, n) for d, n in names if
             (d / f".{n}.lrjournal").exists()), None), 20,
            what="the journal of group g1's file")
        wait_resumable(where, first, 4 * MiB)
        assert proc.poll() is None, f"{out.text()} {err.text()}"
    finally:
        kill_and_reap(proc)
        x.unshape_a()
    for d, n in names:
        assert not (d / n).exists(), f"{d / n} before the group's file"
    res = x.send_ok("--json", "-H", str(top) + "/", x.dest("r"))
    end = end_event(res.stdout)
    assert end["bytes_already_held"] > 0, end
    assert end["files_linked"] == 3, end
    assert groups(x.root / "r") == EXPECTED
    same_bytes(top, x.root / "r")
    assert not temp_leftovers(x.root)


def test_h_refused_with_standard_output(xsrv):
    x = xsrv
    (x.root / "f").write_text("x\n")
    res = x.get("-H", x.dest("f"), "-")
    assert res.returncode == 2, describe(res)
    assert "-H needs a destination directory" in res.stderr, describe(res)


def file_events(stdout):
    """{path: (status, reason)} of a --json run's file events."""
    return {e["path"]: (e["status"], e.get("reason"))
            for e in json_events(stdout) if e.get("event") == "file"}


NAMES = ("g1_a", "g1_b", "d/g1_c", "g2_a", "d/g2_b", "out_linked", "plain")


def linked_tree_runner(x, mode, dest="out"):
    """link_tree as the source of a push (into dest on the server) or a
    pull (into dest, a directory of the client's; made when missing):
    the destination, and a function that runs the command with extra
    options onto it. The tree is made by the first call."""
    top = (x.src if mode == "push" else x.root) / "t"
    if not top.exists():
        link_tree(top, x.tmp / "outside")
    if mode == "push":
        return top, x.root / dest, lambda *a: x.send(*a, str(top) + "/",
                                                     x.dest(dest))
    out = x.tmp / dest
    out.mkdir(exist_ok=True)
    return top, out, lambda *a: x.get(*a, x.dest("t/"), out)


def names_state(out):
    """Each name's content, mode and mtime (ns), or None when missing."""
    got = {}
    for n in NAMES:
        p = out / n
        if not p.exists():
            got[n] = None
            continue
        st = os.lstat(p)
        got[n] = (p.read_bytes(), st.st_mode, st.st_mtime_ns)
    return got


def first_of_g1(x, mode):
    """The name of group g1 that goes as its file (the walk's order):
    what a dry run onto a fresh destination links the others to."""
    _, _, run = linked_tree_runner(x, mode, "probe")
    res = run("--json", "-n")
    assert res.returncode == 0, describe(res)
    firsts = {why[3:] for p, (s, why) in file_events(res.stdout).items()
              if s == "would_link" and "g1" in p}
    assert len(firsts) == 1, res.stdout
    return firsts.pop()


def break_copies(top, out, case, first):
    """What is done at the source and the destination of copies before
    the run of `case` (first: g1's name that goes as its file); returns
    the options of that run."""
    later = os.stat(out / "g1_a").st_mtime + 100
    others = sorted({"g1_a", "g1_b", "d/g1_c"} - {first})
    if case == "rerun":
        return ()
    if case == "chmod":  # tightened at the source
        os.chmod(top / "g1_a", 0o600)
        return ()
    if case == "checksum":  # copies with other times, the same content
        for n in NAMES:
            os.utime(out / n, (1e9, 1e9))
        return ("-c",)
    if case == "update":  # the first name newer there, one stale, one
        (out / first).write_text("edited at the destination\n")  # gone
        os.utime(out / first, (later, later))
        (out / others[0]).write_text("stale\n")
        os.utime(out / others[0], (1e9, 1e9))
        (out / others[1]).unlink()
        return ("--update",)
    if case == "differs":  # another file at a name, no --update
        (out / "d" / "g2_b").write_text("another file\n")
        os.utime(out / "d" / "g2_b", (1.5e9, 1.5e9))
        return ()
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["rerun", "chmod", "checksum", "update",
                                  "differs"])
@pytest.mark.parametrize("mode", ["push", "pull"])
def test_links_by_default_leave_copies_as_a_run_without_them(xsrv, mode,
                                                             case):
    """Links kept by default never change what a run without them leaves
    where names are there as copies (made by rsync, scp, an older linerate
    or --no-hard-links): each such name goes as a file of its own, so the
    file rules decide it (up to date, the source's mode, -c, --update,
    "exists"). Two destinations of copies, the same change to each; one
    run with links by default, one with --no-hard-links: the same names,
    bytes, modes and times, the same exit status, the same counts; the
    dry run says the same as the run, name by name."""
    x = xsrv
    runs = {}
    for dest in ("linked", "copies"):
        top, out, run = linked_tree_runner(x, mode, dest)
        res = run("-q", "--no-hard-links")
        assert res.returncode == 0, describe(res)
        runs[dest] = (top, out, run)
    first = first_of_g1(x, mode)
    # the source's change, once; the destinations', each
    opts = break_copies(top, runs["linked"][1], case, first)
    if case == "chmod":
        opts2 = ()
    else:
        opts2 = break_copies(top, runs["copies"][1], case, first)
    assert opts == opts2
    _, out, run = runs["linked"]
    before = names_state(out)
    dry = run("--json", "-n", *opts)
    assert names_state(out) == before  # the dry run changed nothing
    res = run("--json", *opts)
    _, ref_out, ref_run = runs["copies"]
    ref = ref_run("--json", "--no-hard-links", *opts)
    assert res.returncode == ref.returncode, (describe(res), describe(ref))
    assert dry.returncode == ref.returncode, describe(dry)
    assert names_state(out) == names_state(ref_out)
    end, ref_end = end_event(res.stdout), end_event(ref.stdout)
    for k in ("files_failed", "files_skipped"):
        assert end[k] == ref_end[k], (k, end, ref_end)
    # a missing name of a group whose file is sent is linked to it: one
    # file less to send, no other difference
    assert end["files_ok"] + end["files_linked"] == ref_end["files_ok"], \
        (end, ref_end)
    assert end["bytes"] <= ref_end["bytes"], (end, ref_end)
    # the dry run's word on each name is the run's
    got, dry_got = file_events(res.stdout), file_events(dry.stdout)
    would = {"done": ("would_send", "would_replace"),
             "linked": ("would_link",)}
    for n in NAMES:
        status, why = got.get(n, (None, None))
        assert dry_got.get(n, (None, None))[0] in \
            would.get(status, (status,)), (n, dry.stdout, res.stdout)
    assert not temp_leftovers(out.parent)


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_a_rerun_onto_links_finds_them_up_to_date(xsrv, mode):
    """Copies become links when asked (-H --update); a plain re-run then
    finds each link up to date, as its file: nothing linked again, the
    dry run alike; a missing name of a group is linked again."""
    _, out, run = linked_tree_runner(xsrv, mode)
    res = run("-q", "--no-hard-links")
    assert res.returncode == 0, describe(res)
    res = run("-q", "-H", "--update")
    assert res.returncode == 0, describe(res)
    assert groups(out) == EXPECTED
    for extra in ("-n", None):
        res = run("--json", *([extra] if extra else []))
        assert res.returncode == 0, describe(res)
        end = end_event(res.stdout)
        assert end["files_linked"] == 0 and end["files_skipped"] == 7, end
        assert end["bytes"] == 0, end
        got = file_events(res.stdout)
        assert all(got[n] == ("skipped", None) for n in NAMES), got
    assert groups(out) == EXPECTED
    (out / "d" / "g1_c").unlink()
    res = run("--json")
    assert res.returncode == 0, describe(res)
    assert end_event(res.stdout)["files_linked"] == 1, res.stdout
    assert groups(out) == EXPECTED


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_a_group_edited_there_is_kept_by_update(xsrv, mode):
    """--update without -H: a linked group edited at the destination (so
    every name is newer there) is kept whole, exit 0, where -H --update
    fails its other names (nothing of the source's can be linked to)."""
    _, out, run = linked_tree_runner(xsrv, mode)
    res = run("-q")
    assert res.returncode == 0, describe(res)
    assert groups(out) == EXPECTED
    later = os.stat(out / "g2_a").st_mtime + 100
    (out / "g2_a").write_text("edited at the destination\n")
    os.utime(out / "g2_a", (later, later))
    res = run("--json", "--update")
    assert res.returncode == 0, describe(res)
    assert end_event(res.stdout)["files_failed"] == 0, res.stdout
    assert (out / "d" / "g2_b").read_text() == "edited at the destination\n"
    assert groups(out) == EXPECTED
    res = run("-H", "--update")
    assert res.returncode == 1, describe(res)
    assert "is newer at the destination (kept by --update)" in \
        output(res), describe(res)


def test_a_refused_first_name_sends_its_other_names(xsrv):
    """A file whose first name is refused before its plan ("announced
    twice": two sources with a name in common) has its other names sent
    as files of their own, as a run without links sends them."""
    x = xsrv
    m1, m2 = x.src / "m1", x.src / "m2"
    m1.mkdir()
    m2.mkdir()
    (m1 / "f").write_text("one\n")
    (m2 / "f").write_text("two\n")
    os.link(m2 / "f", m2 / "g")
    for dest, extra in (("a", ()), ("b", ("--no-hard-links",))):
        res = x.send("--json", *extra, str(m1) + "/", str(m2) + "/",
                     x.dest(dest))
        assert res.returncode == 1, describe(res)
        assert "announced twice" in output(res), describe(res)
        assert (x.root / dest / "f").read_text() == "one\n"
        assert (x.root / dest / "g").read_text() == "two\n", describe(res)


def test_more_names_asked_as_files_than_the_window_holds(xsrv):
    """1,100 second names that are copies at the destination, more than
    the 1,024 entries a window holds: each goes as a file of its own
    (FILE_AGAIN), the session ends, every name up to date."""
    x = xsrv
    top = x.src / "many"
    top.mkdir()
    for i in range(1100):
        (top / f"f{i}").write_bytes(b"%d\n" % i)
        os.link(top / f"f{i}", top / f"l{i}")
    x.send_ok("-q", "--no-hard-links", str(top) + "/", x.dest("many"))
    res = x.send_ok("--json", str(top) + "/", x.dest("many"))
    end = end_event(res.stdout)
    assert end["files_skipped"] == 2200 and end["files_linked"] == 0, end
    assert end["files_failed"] == 0 and end["bytes"] == 0, end
    assert all(n == 1 for n in groups(x.root / "many").values())


def test_the_last_of_h_and_no_hard_links_counts(xsrv):
    """-H --no-hard-links gives copies, --no-hard-links -H links, as the
    last of rsync's -H/--no-H counts."""
    x = xsrv
    top = x.src / "t"
    link_tree(top, x.tmp / "outside")
    res = x.send_ok("--json", "-H", "--no-hard-links", str(top) + "/",
                    x.dest("a"))
    assert end_event(res.stdout)["files_linked"] == 0
    assert all(n == 1 for n in groups(x.root / "a").values())
    res = x.send_ok("--json", "--no-hard-links", "-H", str(top) + "/",
                    x.dest("b"))
    assert end_event(res.stdout)["files_linked"] == 3
    assert groups(x.root / "b") == EXPECTED
