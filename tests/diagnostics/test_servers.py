"""`kbkit doctor` on team servers: each started (or reached) within a bound, one finding per server
naming what went wrong, never a value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbkit.diagnostics import run_checks
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process
from tests.helpers.team import REMOTE_KEY, STDIO_KEY, remote_server, stdio_server, team_http
from tests.helpers.trust import trust_project


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's state folder, where `kbkit trust` records the servers allowed."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def project(tmp_path: Path, servers: str, *, trusted: bool = True) -> Path:
    root = make_project(tmp_path / "p", files={}, config=f'[kb]\npath = "docs"\n{servers}', trusted=False)
    keys = f"TRACKER_TOKEN={STDIO_KEY}\nWIKI_TOKEN={REMOTE_KEY}\n"
    (root / ".env.local").write_text(keys, encoding="utf-8")
    if trusted:
        trust_project(root)
    return root


def findings(root: Path) -> dict[str, tuple[str, str, str]]:
    found = {}
    for finding in run_checks(root):
        if finding.check == "servers":
            name, _, text = finding.finding.partition(": ")
            found[name] = (finding.status, text, finding.fix or "")
    return found


def test_a_project_without_team_servers_has_one_ok_line_and_starts_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", files={})
    (finding,) = [f for f in run_checks(root) if f.check == "servers"]
    assert finding.status == "ok" and finding.finding.startswith("none declared")


@pytest.mark.processes
def test_each_server_is_named_started_or_why_not(tmp_path: Path) -> None:
    with team_http(tmp_path / "peer") as url:
        servers = (
            stdio_server()
            + stdio_server("junk", "--junk")
            + stdio_server("hang", "--hang")
            + "startup_timeout = 2\n"
            + '[servers.gone]\ncommand = ["no-such-mcp-server-here"]\n'
            + stdio_server("unset", var="NOT_SET_ANYWHERE")
            + remote_server(url)
            + remote_server(url, "refused", "TRACKER_TOKEN")
        )
        root = project(tmp_path, servers)
        found = findings(root)
        text = json.dumps(found)
    assert (
        found["tracker"][0] == "ok"
        and "2 tools" in found["tracker"][1]
        and "TRACKER_TOKEN" in found["tracker"][1]
    )
    assert found["junk"][0] == "ok"  # a line before the protocol is skipped, as agents skip it
    assert found["hang"][0] == "fail" and "within 2 s" in found["hang"][1]
    assert found["gone"][0] == "fail" and "command not found: no-such-mcp-server-here" in found["gone"][1]
    assert found["unset"][0] == "fail" and "NOT_SET_ANYWHERE" in found["unset"][1]
    assert found["wiki"][0] == "ok" and "1 tools" in found["wiki"][1]
    assert found["refused"][0] == "fail" and "HTTP 401" in found["refused"][1]
    assert STDIO_KEY not in text and REMOTE_KEY not in text


@pytest.mark.processes
def test_doctor_exits_1_and_prints_the_fix_for_a_broken_server(tmp_path: Path) -> None:
    root = project(tmp_path, f'[servers.gone]\ncommand = ["no-such-mcp-server-here"]\n{stdio_server()}')
    done = kbkit_in_process("doctor", "--root", str(root), env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 1
    assert "FAIL  servers: gone: command not found" in done.stdout
    assert "ok    servers: tracker: started" in done.stdout


def test_an_untrusted_server_is_a_warning_and_is_never_started(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    root = project(tmp_path, f'[servers.x]\ncommand = ["touch", "{marker}"]\n', trusted=False)
    status, text, fix = findings(root)["x"]
    assert status == "warn" and "not trusted on this machine yet" in text and "kbkit trust" in fix
    assert not marker.exists()  # and the fast tier's guard would have failed a process start
