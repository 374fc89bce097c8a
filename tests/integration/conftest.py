# SPDX-License-Identifier: MIT
"""pytest fixtures for the integration tests.

hosts         -- unshaped TestHosts (two namespaces joined by a veth pair)
shaped_hosts  -- TestHosts(rate="1gbit"): tbf on both ends, offloads off
linerate_bin  -- path of the linerate binary: $LINERATE_BIN, else
                 <repo>/build/linerate
serve         -- factory: serve(*args, popen=...) starts `linerate serve
                 -p 0 ARGS` (lrproc.LinerateServer, port read back from its
                 output); every server started is stopped at teardown
iperf3        -- the name of Debian's iperf3 binary, when installed

Each skips (with the reason) when it cannot be provided.
"""

import os
import pathlib
import shutil
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # also works with --import-mode=importlib
    sys.path.insert(0, _HERE)

from testhosts import TestHosts, netns_skip_reason, shaping_skip_reason  # noqa: E402
from lrproc import LinerateServer  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

_NOT_CHECKED = object()
_netns_reason = _NOT_CHECKED


def _skip(reason):
    print(f"skipping: {reason}", file=sys.stderr)
    pytest.skip(reason)


@pytest.fixture
def iperf3():
    if shutil.which("iperf3") is None:
        _skip("'iperf3' not installed (Debian package iperf3)")
    return "iperf3"


def _require_netns():
    # Checked once per session: it creates and deletes a throw-away netns.
    global _netns_reason
    if _netns_reason is _NOT_CHECKED:
        _netns_reason = netns_skip_reason()
    if _netns_reason is not None:
        _skip(_netns_reason)


@pytest.fixture
def hosts():
    _require_netns()
    with TestHosts() as h:
        yield h


@pytest.fixture
def shaped_hosts():
    _require_netns()
    reason = shaping_skip_reason()
    if reason is not None:
        _skip(reason)
    with TestHosts(rate="1gbit") as h:
        yield h


@pytest.fixture
def linerate_bin():
    env = os.environ.get("LINERATE_BIN")
    path = pathlib.Path(env) if env else REPO_ROOT / "build" / "linerate"
    if not path.is_file():
        source = "LINERATE_BIN" if env else "default path"
        _skip(f"linerate binary not found at {path} ({source}); build it "
              f"first or set LINERATE_BIN")
    if not os.access(path, os.X_OK):
        _skip(f"{path} is not executable")
    return str(path.resolve())


@pytest.fixture
def serve(linerate_bin):
    servers = []

    def start(*args, **kw):
        srv = LinerateServer(linerate_bin, *args, **kw)
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


@pytest.fixture
def xenv(hosts, linerate_bin, serve, tmp_path):
    """Two test hosts with a source and a destination tree for transfers
    (xferutil.XferEnv)."""
    from xferutil import XferEnv
    return XferEnv(hosts, linerate_bin, serve, tmp_path)


@pytest.fixture
def xsrv(xenv):
    """xenv with `linerate serve --root` running in host B."""
    xenv.start_server()
    return xenv
