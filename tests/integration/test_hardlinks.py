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
    assert end["bytes"] == 0 and end["files_skipped"] == 4, end
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
    x.send_ok("-q", "-H", "--update", str(top) + "/", x.dest("out"))
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


def linked_tree_runner(x, mode):
    """link_tree as the source of a push (into out) or a pull (into a
    directory of the client's): the destination, and a function that
    runs the command with extra options onto it."""
    top = (x.src if mode == "push" else x.root) / "t"
    link_tree(top, x.tmp / "outside")
    if mode == "push":
        return x.root / "out", lambda *a: x.send(*a, str(top) + "/",
                                                 x.dest("out"))
    out = x.tmp / "got"
    out.mkdir()
    return out, lambda *a: x.get(*a, x.dest("t/"), out)


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_a_plain_rerun_onto_copies_changes_nothing(xsrv, mode):
    """Links kept by default must not break what a re-run without them
    did: names that are copies at the destination (made by rsync, scp,
    an older linerate or --no-hard-links) and up to date are left as
    they are, each said and counted as skipped, exit 0; the dry run says
    the same, name by name; -H --update then makes them links."""
    out, run = linked_tree_runner(xsrv, mode)
    res = run("-q", "--no-hard-links")
    assert res.returncode == 0, describe(res)
    before = groups(out)
    assert all(n == 1 for n in before.values()), before
    dry = run("--json", "-n")
    assert dry.returncode == 0, describe(dry)
    res = run("--json")
    assert res.returncode == 0, describe(res)
    end = end_event(res.stdout)
    assert end["files_linked"] == 0 and end["files_failed"] == 0, end
    assert end["files_skipped"] == 7 and end["bytes"] == 0, end
    assert groups(out) == before
    got = file_events(res.stdout)
    kept = {p for p, (s, why) in got.items()
            if why and "left as it was" in why}
    assert len(kept) == 3, got
    assert kept < {"g1_a", "g1_b", "d/g1_c", "g2_a", "d/g2_b"}, kept
    # the dry run's word on each file's name is the run's
    names = {"g1_a", "g1_b", "d/g1_c", "g2_a", "d/g2_b", "out_linked",
             "plain"}
    dry_got = file_events(dry.stdout)
    assert {p: dry_got.get(p) for p in names} == \
        {p: got.get(p) for p in names}, (dry.stdout, res.stdout)
    assert end_event(dry.stdout)["files_skipped"] == 7, dry.stdout
    # asked, with --update: the copies become links
    res = run("-q", "-H", "--update")
    assert res.returncode == 0, describe(res)
    assert groups(out) == EXPECTED


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_a_newer_first_name_keeps_its_other_names(xsrv, mode):
    """--update without -H: a linked group edited at the destination (so
    every name is newer there) is kept whole, exit 0, where -H --update
    fails the other names (nothing of the source's can be linked); a
    group of copies whose first name was edited keeps the other, up to
    date copies as they are."""
    out, run = linked_tree_runner(xsrv, mode)
    res = run("-q")
    assert res.returncode == 0, describe(res)
    assert groups(out) == EXPECTED
    later = os.stat(out / "g2_a").st_mtime + 100
    (out / "g2_a").write_text("edited at the destination\n")
    os.utime(out / "g2_a", (later, later))
    res = run("--json", "--update")
    assert res.returncode == 0, describe(res)
    end = end_event(res.stdout)
    assert end["files_failed"] == 0, end
    assert (out / "d" / "g2_b").read_text() == "edited at the destination\n"
    assert groups(out) == EXPECTED
    res = run("-H", "--update")
    assert res.returncode == 1, describe(res)
    assert "is newer at the destination (kept by --update)" in \
        output(res), describe(res)

    # copies, one name edited there: the others stay as they are
    shutil.rmtree(out)
    out.mkdir()
    res = run("-q", "--no-hard-links")
    assert res.returncode == 0, describe(res)
    for n in ("g1_a", "g1_b", "d/g1_c"):
        os.utime(out / n, (later, later))
    (out / "g1_a").write_text("edited\n")
    os.utime(out / "g1_a", (later, later))
    res = run("--json", "--update")
    assert res.returncode == 0, describe(res)
    assert (out / "g1_a").read_text() == "edited\n"
    assert all(n == 1 for n in groups(out).values())


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
