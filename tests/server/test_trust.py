"""What the tracked kbkit.toml asks `kbkit serve`, `kbkit connect` and `kbkit run` to do waits for
`kbkit trust` on this machine: a `[memory] command`, the token's destination, a team server's URL.

The untrusted paths are `fast`: the tier guard itself fails a test whose server starts the
command, so these tests prove it is never started, not only that it is reported."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbkit.cli import app
from kbkit.config import load_settings
from kbkit.config.trust import trust_path
from kbkit.diagnostics import Context
from kbkit.diagnostics.memory import check_memory
from tests.helpers.paths import PEERS
from tests.helpers.project import make_project
from tests.helpers.serve import serve_in_memory, serve_stdio

PEER = PEERS / "memory_server.py"
KEY = "hsk_test_key_0123456789"
COMMAND = [sys.executable, str(PEER), "--stdio"]
INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "agent", "version": "1"},
}
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
    root = make_project(
        tmp_path / "project", config='[kb]\npath = "docs"\n' + ("" if local else memory), trusted=False
    )
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
    state = load_settings(root).waiting("memory")
    assert state is not None and state.new and not state.fallback
    (finding,) = check_memory(Context(root, load_settings(root)))
    assert finding.status == "warn" and "kbkit trust" in (finding.fix or "")
    assert "not trusted on this machine yet" in finding.finding


def test_trust_is_recorded_outside_the_repository_for_this_exact_command(
    tmp_path: Path, state_home: Path
) -> None:
    root = project(tmp_path)
    assert "trusted: memory" in trust(root)
    assert trust_path().is_relative_to(state_home) and not trust_path().is_relative_to(root)
    assert stat.S_IMODE(trust_path().stat().st_mode) == 0o600
    assert load_settings(root).waiting("memory") is None
    assert "nothing waits" in trust(root)


async def test_a_changed_command_waits_for_trust_again(tmp_path: Path) -> None:
    root = project(tmp_path)
    trust(root)
    project(tmp_path, [*COMMAND, "--echo-key"])
    settings = load_settings(root)
    state = settings.waiting("memory")
    assert state is not None and not state.new and state.changed == ("command",)
    assert "since you trusted it" in state.line()
    assert settings.memory.command == tuple(COMMAND)  # the trusted command stays in use


def test_a_command_from_kbkit_local_toml_is_the_user_s_own_and_needs_no_trust(tmp_path: Path) -> None:
    root = project(tmp_path, local=True)
    assert load_settings(root).waiting("memory") is None
    assert "nothing waits" in trust(root) and not trust_path().exists()


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
    assert (
        "memory: off" in line and "not trusted on this machine yet" in line and "`kbkit trust memory`" in line
    )


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


@pytest.mark.processes
def test_kbkit_connect_never_sends_the_token_to_a_remote_url_the_member_did_not_trust(tmp_path: Path) -> None:
    from tests.helpers.attacker import attacker_host
    from tests.peers.launch import forked_kbkit

    with attacker_host() as attacker:
        config = f'[kb]\npath = "docs"\n[sync]\nremote_url = "{attacker.url}"\n'
        root = make_project(tmp_path / "p", config=config, trusted=False)
        (root / ".env.local").write_text("KBKIT_TOKEN=member-personal-token-0123456789\n")
        request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}) + "\n"
        done = subprocess.run(
            [*forked_kbkit(), "connect", attacker.url, "--root", str(root)],
            input=request,
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
        assert done.returncode != 0 and "not trusted on this machine yet" in done.stderr
        assert attacker.requests == [] and not attacker.saw("member-personal-token")


@pytest.mark.processes
def test_a_secret_in_a_team_servers_url_is_never_said(tmp_path: Path) -> None:
    from tests.helpers.wait import closed_port
    from tests.peers.launch import forked_kbkit

    secret = "query-secret-value-0123456789"
    with closed_port() as port:
        config = f'[kb]\npath = "docs"\n[servers.wiki]\nurl = "http://127.0.0.1:{port}/mcp?api_key=${{WIKI_KEY}}"\n'
        root = make_project(tmp_path / "p", config=config)
        (root / ".env.local").write_text(f"WIKI_KEY={secret}\n")
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE}
        process = subprocess.Popen(
            [*forked_kbkit(), "run", "wiki", "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd="/",
        )
        assert process.stdin is not None and process.stdout is not None
        killer = threading.Timer(60, process.kill)  # a bound, never a timing assertion
        killer.start()
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        answer_line = process.stdout.readline()
        process.stdin.close()
        stdout = process.stdout.read()
        process.wait(timeout=60)
        assert process.stderr is not None
        stderr = process.stderr.read()
        killer.cancel()
    answer = json.loads(answer_line)
    assert (
        "cannot reach" in answer["error"]["message"] and "api_key=${WIKI_KEY}" in answer["error"]["message"]
    )
    said = answer_line + stdout + stderr
    assert "api_key=${WIKI_KEY}" in stderr  # the [kbkit] line names the variable
    assert secret not in said and secret[:8] not in said


def test_a_header_value_http_cannot_carry_is_one_line_before_any_request(tmp_path: Path) -> None:
    from kbkit.errors import ConfigError
    from kbkit.server.team import resolve

    config = '[kb]\npath = "docs"\n[servers.wiki]\nurl = "https://wiki.example/mcp"\n'
    config += 'headers = { Authorization = "Bearer ${WIKI_TOKEN}" }\n'
    root = make_project(tmp_path / "p", config=config)
    (root / ".env.local").write_text("WIKI_TOKEN=pässwörd-with-umlauts\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match="header Authorization holds characters HTTP cannot carry"
    ) as refused:
        resolve(load_settings(root), "wiki", environ={})
    assert "pässwörd" not in str(refused.value)
