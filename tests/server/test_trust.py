"""A `[memory] command` from the tracked kbkit.toml runs only after `kbkit trust` on this machine.

The untrusted paths are `fast`: the tier guard itself fails a test whose server starts the
command, so these tests prove it is never started, not only that it is reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbkit.cli import app
from kbkit.config import load_settings
from kbkit.config.trust import command_trust, trust_path
from kbkit.diagnostics import Context
from kbkit.diagnostics.memory import check_memory
from tests.helpers.paths import PEERS
from tests.helpers.project import make_project
from tests.helpers.serve import serve_in_memory, serve_stdio

PEER = PEERS / "memory_server.py"
KEY = "hsk_test_key_0123456789"
COMMAND = [sys.executable, str(PEER), "--stdio"]
runner = CliRunner()
pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's state folder (where trust is recorded), and the memory key, for this test only."""
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    monkeypatch.setenv("HINDSIGHT_API_KEY", KEY)
    return home


def project(tmp_path: Path, command: list[str] = COMMAND, *, local: bool = False) -> Path:
    memory = f"[memory]\ncommand = {json.dumps(command)}\ntimeout = 10\n"
    root = make_project(tmp_path / "project", config='[kb]\npath = "docs"\n' + ("" if local else memory))
    if local:
        (root / "kbkit.local.toml").write_text(memory, encoding="utf-8")
    return root


def trust(root: Path) -> str:
    result = runner.invoke(app, ["trust", "--root", str(root)])
    assert result.exit_code == 0, result.output
    return result.output


async def tool_names(root: Path) -> list[str]:
    async with serve_in_memory(root) as client:
        return [tool.name for tool in (await client.list_tools()).tools]


async def test_an_untrusted_command_from_kbkit_toml_never_starts_and_says_how_to_allow_it(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    assert await tool_names(root) == ["search", "get_document"]  # nothing started (the tier guard)
    state = command_trust(load_settings(root))
    assert state is not None and state.tracked and not state.allowed
    (finding,) = check_memory(Context(root, load_settings(root)))
    assert finding.status == "warn" and "kbkit trust" in (finding.fix or "")
    assert "not trusted on this machine yet" in finding.finding and PEER.name in finding.finding


def test_trust_is_recorded_outside_the_repository_for_this_exact_command(
    tmp_path: Path, state_home: Path
) -> None:
    root = project(tmp_path)
    assert "trusted: " in trust(root)
    assert trust_path().is_relative_to(state_home) and not trust_path().is_relative_to(root)
    assert command_trust(load_settings(root)).allowed  # type: ignore[union-attr]
    assert "already trusted" in trust(root)


async def test_a_changed_command_waits_for_trust_again(tmp_path: Path) -> None:
    root = project(tmp_path)
    trust(root)
    project(tmp_path, [*COMMAND, "--echo-key"])
    state = command_trust(load_settings(root))
    assert state is not None and not state.allowed and state.changed
    assert "changed since you trusted it" in state.waiting()
    assert await tool_names(root) == ["search", "get_document"]


def test_a_command_from_kbkit_local_toml_is_the_user_s_own_and_needs_no_trust(tmp_path: Path) -> None:
    root = project(tmp_path, local=True)
    state = command_trust(load_settings(root))
    assert state is not None and not state.tracked and state.allowed
    assert "kbkit.local.toml" in trust(root) and not trust_path().exists()


@pytest.mark.processes
async def test_a_trusted_command_runs_and_its_tools_are_offered(tmp_path: Path) -> None:
    root = project(tmp_path)
    trust(root)
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert names == ["search", "get_document", "retain", "recall", "reflect"]


@pytest.mark.processes
async def test_the_boot_line_says_the_command_waits_for_trust_and_how_to_give_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "stderr.log"
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}, stderr_path=log) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["search", "get_document"]
    (line,) = [line for line in log.read_text().splitlines() if "memory:" in line]
    assert "memory: off" in line and "not trusted on this machine yet" in line and "`kbkit trust`" in line


def test_what_widens_access_is_named_and_what_narrows_it_is_not() -> None:
    from kbkit.config.trust import widened

    trusted = {
        "server.http.oauth.issuer": "https://id.example",
        "server.http.oauth.scopes": ["kb"],
        "server.http.oauth.allowed_subjects": ["alice", "bob"],
        "server.http.oauth.claims": {"groups": ["eng"]},
    }
    assert widened({**trusted, "server.http.oauth.allowed_subjects": ["bob"]}, trusted) == []
    assert widened({**trusted, "server.http.oauth.claims": {}}, trusted) == []
    assert widened({**trusted, "server.http.oauth.scopes": ["kb", "more"]}, trusted) == []
    wider = {
        "server.http.oauth.issuer": "https://evil.example",
        "server.http.oauth.allowed_subjects": ["alice", "bob", "mallory"],
        "server.http.oauth.claims": {"groups": ["eng", "everyone"]},
        "server.http.memory": True,
    }
    assert widened(wider, trusted) == [
        'oauth.issuer = "https://evil.example"',
        "oauth.scopes no longer requires kb",
        "oauth.allowed_subjects adds mallory",
        "oauth.claims groups adds everyone",
        "memory = true",
    ]
