# SPDX-License-Identifier: MIT
"""Every option of the parsers' tables is in its command's --help, in the
man page's section of the command and in the shells' completion, which
`linerate completion` writes from the same tables."""

import pathlib
import re
import shutil
import subprocess

import pytest

from lrproc import describe

MAN = pathlib.Path(__file__).resolve().parents[2] / "docs" / "linerate.1"


def run(binary, *args, **kw):
    return subprocess.run([binary, *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=20, **kw)


def options(binary):
    """{command: [(letter, long, takes)]} from `completion list`."""
    res = run(binary, "completion", "list")
    assert res.returncode == 0, describe(res)
    table = {}
    for line in res.stdout.splitlines():
        cmd, letter, name, takes = line.split("\t")
        assert letter or name, line
        assert takes in ("none", "value", "optional"), line
        table.setdefault(cmd, []).append((letter, name, takes))
    return table


def commands(binary):
    out = run(binary, "--help").stdout
    body = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in body.splitlines()]


def man_section(cmd):
    """The man page's text of `.SH LINERATE CMD`, as plain text."""
    text = MAN.read_text()
    m = re.search(r"^\.SH LINERATE %s\n(.*?)(?=^\.SH )" % cmd.upper(), text,
                  re.M | re.S)
    assert m, f"no section LINERATE {cmd.upper()} in the man page"
    return re.sub(r"\\f[BIRP]", " ", m.group(1).replace("\\-", "-"))


def mentions(text, opt):
    """opt as a word of text (not the start of a longer option)."""
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(opt), text)


def test_the_list_holds_every_command_with_options(linerate_bin):
    table = options(linerate_bin)
    for cmd in ("bench", "serve", "send", "get", "recv", "doctor", "disk",
                "gen", "crypto"):
        assert cmd in table, cmd
        assert ("h", "help") in [(l.strip("-"), n.strip("-"))
                                 for l, n, _ in table[cmd]], cmd
    assert "completion" in commands(linerate_bin)


def test_every_option_is_in_help_and_the_man_page(linerate_bin):
    missing = []
    for cmd, opts in options(linerate_bin).items():
        res = run(linerate_bin, cmd, "--help")
        assert res.returncode == 0, describe(res)
        assert "%%" not in res.stdout, cmd
        man = man_section(cmd)
        if cmd == "get":  # "The options are those of send"
            assert "The options are those of\n.BR send" in MAN.read_text()
            man += man_section("send")
        for letter, name, _ in opts:
            for opt in (letter, name):
                if not opt:
                    continue
                if not mentions(res.stdout, opt):
                    missing.append(f"{cmd} --help: {opt}")
                if opt in ("-h", "--help"):  # said once for all
                    continue
                if not mentions(man, opt):
                    missing.append(f"man LINERATE {cmd.upper()}: {opt}")
    desc = MAN.read_text().split(".SH DESCRIPTION", 1)[1].split(".SH ")[0]
    assert "Every command takes\n.BR \\-h \", \" \\-\\-help" in desc
    assert not missing, "\n".join(missing)


def test_unknown_shell_is_a_usage_error(linerate_bin):
    res = run(linerate_bin, "completion", "fish")
    assert res.returncode == 2, describe(res)
    assert res.stderr.startswith("linerate completion: "), res.stderr
    assert "Try 'linerate completion --help'" in res.stderr


def bash_complete(script, words, cwd):
    """COMPREPLY after completing the last of words in bash."""
    line = " ".join(f"'{w}'" for w in words)
    prog = (f"source {script}\nCOMP_WORDS=({line})\n"
            f"COMP_CWORD={len(words) - 1}\n_linerate\n"
            "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    res = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog],
                         capture_output=True, text=True, timeout=20, cwd=cwd)
    assert res.returncode == 0, describe(res)
    return {line for line in res.stdout.splitlines() if line}


def test_bash_completes_every_option_and_its_value(linerate_bin, tmp_path):
    if not shutil.which("bash"):
        pytest.skip("bash is not installed")
    script = tmp_path / "linerate.bash"
    script.write_text(run(linerate_bin, "completion", "bash").stdout)
    (tmp_path / "tok.txt").write_text("x\n")
    (tmp_path / "adir").mkdir()
    names = bash_complete(script, ["linerate", ""], tmp_path)
    assert set(commands(linerate_bin)) <= names, names
    for cmd, opts in options(linerate_bin).items():
        longs = {n for _, n, _ in opts if n}
        got = bash_complete(script, ["linerate", cmd, "--"], tmp_path)
        assert longs == got, (cmd, longs ^ got)
    got = bash_complete(script, ["linerate", "send", "--token-file", "t"],
                        tmp_path)
    assert got == {"tok.txt"}, got
    got = bash_complete(script, ["linerate", "bench", "--cipher", "a"],
                        tmp_path)
    assert got == {"auto", "aes-256-gcm"}, got
    got = bash_complete(script, ["linerate", "serve", "--root", "a"],
                        tmp_path)
    assert got == {"adir"}, got
    # a name with spaces is one completion; --opt=value as bash splits it
    (tmp_path / "my token.txt").write_text("x\n")
    got = bash_complete(script, ["linerate", "send", "--token-file", "m"],
                        tmp_path)
    assert got == {"my token.txt"}, got
    got = bash_complete(script, ["linerate", "bench", "--logfile", "=",
                                 "to"], tmp_path)
    assert got == {"tok.txt"}, got
    got = bash_complete(script, ["linerate", "bench", "--cipher", "="],
                        tmp_path)
    assert "chacha20-poly1305" in got, got
    # a value that is not a file: nothing offered
    got = bash_complete(script, ["linerate", "send", "--limit", ""],
                        tmp_path)
    assert got == set(), got


def test_zsh_script_gives_every_option_to_arguments(linerate_bin, tmp_path):
    """The zsh function, run with _arguments and _describe replaced by
    functions that print what they were given."""
    if not shutil.which("zsh"):
        pytest.skip("zsh is not installed (scripts/deps.sh installs it)")
    script = tmp_path / "_linerate"
    script.write_text(run(linerate_bin, "completion", "zsh").stdout)
    res = subprocess.run(["zsh", "-n", str(script)], capture_output=True,
                         text=True, timeout=20)
    assert res.returncode == 0, describe(res)
    for cmd, opts in options(linerate_bin).items():
        prog = ("_arguments() { print -rl -- \"$@\" }\n"
                "_describe() { print -rl -- DESCRIBE }\n"
                f"words=(linerate {cmd} '')\nCURRENT=3\n"
                f"source {script}\n")
        res = subprocess.run(["zsh", "-f", "-c", prog], capture_output=True,
                             text=True, timeout=20)
        assert res.returncode == 0, describe(res)
        lines = res.stdout.splitlines()
        specs = {re.sub(r"^\*|^\([^)]*\)", "", s) for s in lines}
        # filter rules add up: zsh offers them again
        for rule in ("--exclude=", "--include=", "--exclude-from="):
            if any(n == rule[2:-1] for _, n, _ in opts):
                assert any(s.startswith("*" + rule) for s in lines), rule
        for letter, name, takes in opts:
            for opt, sep, osep in ((letter, "+", "-"), (name, "=", "=-")):
                if not opt:
                    continue
                want = {"none": opt, "value": opt + sep + ":",
                        "optional": opt + osep + "::"}[takes]
                assert any(s == want or (takes != "none" and
                                         s.startswith(want))
                           for s in specs), (cmd, opt, want, specs)
