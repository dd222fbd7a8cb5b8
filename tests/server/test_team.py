"""`kbkit run NAME`: a team server started as an agent's entry starts it, from an agent's bare
environment, with its keys only in .env.local. The launcher becomes the server (stdio untouched,
exit status and signals its own) or relays to a remote one with its own headers; its `[kbkit]`
line names variables, never values; an unset variable or a missing command is one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from kbkit.server.team import BASE_VARIABLES
from tests.helpers.project import make_project
from tests.helpers.team import REMOTE_KEY, STDIO_KEY, remote_server, stdio_server, team_http, trust_for
from tests.peers.launch import forked_kbkit

pytestmark = [pytest.mark.processes]
AGENT_ENV = {"PATH": "/usr/bin:/bin"}
"""An agent's environment: its own PATH and HOME (set per test), none of our variables."""


def team_project(tmp_path: Path, servers: str, env_local: str | None = None, *, trusted: bool = True) -> Path:
    """A project declaring `servers` in kbkit.toml, allowed by `kbkit trust` unless `trusted` is False."""
    root = make_project(tmp_path / "p", files={}, config=f'[kb]\npath = "docs"\n{servers}', trusted=trusted)
    text = env_local if env_local is not None else f"TRACKER_TOKEN={STDIO_KEY}\nWIKI_TOKEN={REMOTE_KEY}\n"
    (root / ".env.local").write_text(text, encoding="utf-8")
    if trusted:
        trust_for(root, tmp_path / "home")
    return root


def agent_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**AGENT_ENV, "HOME": str(tmp_path / "home"), **extra}


def run(root: Path, name: str, env: dict[str, str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*forked_kbkit(), "run", name, "--root", str(root)],
        input=stdin,
        capture_output=True,
        env=env,
        cwd="/",
        timeout=120,
    )


async def call_through(
    root: Path, name: str, env: dict[str, str], tool: str, errlog: Path
) -> tuple[list[str], str]:
    params = StdioServerParameters(
        command=forked_kbkit()[0],
        args=[*forked_kbkit()[1:], "run", name, "--root", str(root)],
        env=env,
        cwd="/",
    )
    with open(errlog, "w", encoding="utf-8") as log:
        async with Client(stdio_client(params, errlog=log), mode="legacy", cache=None) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            result = await client.call_tool(tool, {})
    return tools, result.content[0].text  # type: ignore[union-attr]


def test_a_stdio_server_gets_its_key_from_env_local_and_nothing_else_of_ours(tmp_path: Path) -> None:
    root = team_project(tmp_path, stdio_server())
    env = agent_env(tmp_path, LANG="C.UTF-8", AWS_SECRET_ACCESS_KEY="not-for-team-servers")
    log = tmp_path / "stderr.log"
    tools, answer = anyio.run(call_through, root, "tracker", env, "key_check", log)
    assert tools == ["key_check", "env_names"] and answer == "the key is right"
    _, names = anyio.run(call_through, root, "tracker", env, "env_names", log)
    assert set(json.loads(names)) - {"PWD"} <= {*BASE_VARIABLES, "TEAM_KEY", "LC_CTYPE"}
    assert "AWS_SECRET_ACCESS_KEY" not in names
    stderr = log.read_text()
    assert "[kbkit] tracker: starting" in stderr and "TRACKER_TOKEN (from .env.local)" in stderr
    assert STDIO_KEY not in stderr


def test_stdio_passes_through_untouched_junk_before_the_protocol_included(tmp_path: Path) -> None:
    root = team_project(tmp_path, stdio_server("junk", "--junk"))
    done = run(root, "junk", agent_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"starting up, please wait...\n"  # the server's own bytes, and only them


def test_the_server_s_exit_status_and_a_signal_reach_the_agent_as_the_server_s_own(tmp_path: Path) -> None:
    servers = (
        f'[servers.seven]\ncommand = ["{sys.executable}", "-c", "import sys; sys.exit(7)"]\n'
        f'[servers.sleeper]\ncommand = ["{sys.executable}", "-c", "import time; print(\'up\', flush=True); time.sleep(300)"]\n'
    )
    root = team_project(tmp_path, servers)
    assert run(root, "seven", agent_env(tmp_path)).returncode == 7
    process = subprocess.Popen(
        [*forked_kbkit(), "run", "sleeper", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=agent_env(tmp_path),
    )
    assert process.stdout is not None and process.stdout.readline() == b"up\n"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == -signal.SIGTERM


def test_an_unset_variable_is_one_line_naming_it_and_the_server_never_starts(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    servers = (
        f'[servers.tracker]\ncommand = ["{sys.executable}", "-c", "open({str(marker)!r}, \'w\')"]\n'
        'env = { TEAM_KEY = "${TRACKER_TOKEN}" }\n'
    )
    root = team_project(tmp_path, servers, env_local="TRACKER_TOKEN=\n")  # empty counts as unset
    done = run(root, "tracker", agent_env(tmp_path))
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, lines
    assert "TRACKER_TOKEN" in lines[0] and ".env.local" in lines[0] and "Traceback" not in lines[0]
    assert done.stdout == b"" and not marker.exists()


def test_a_command_not_on_this_machine_is_one_line_and_exit_3(tmp_path: Path) -> None:
    root = team_project(tmp_path, '[servers.gone]\ncommand = ["no-such-mcp-server-here"]\n')
    done = run(root, "gone", agent_env(tmp_path))
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1
    assert "command not found: no-such-mcp-server-here" in lines[0]


def test_an_unknown_server_name_lists_the_declared_ones(tmp_path: Path) -> None:
    root = team_project(tmp_path, stdio_server())
    done = run(root, "trakcer", agent_env(tmp_path))
    assert done.returncode == 2 and "declared: tracker" in done.stderr.decode()


def test_a_remote_server_is_relayed_with_its_own_bearer_from_env_local(tmp_path: Path) -> None:
    with team_http(tmp_path / "peer") as url:
        root = team_project(tmp_path, remote_server(url) + remote_server(url, "wrong", "TRACKER_TOKEN"))
        env = agent_env(tmp_path, MCP_TOKEN="the-kb-token-must-not-be-sent")
        log = tmp_path / "stderr.log"
        tools, answer = anyio.run(call_through, root, "wiki", env, "wiki_search", log)
        assert tools == ["wiki_search"] and answer == "the bearer is right"
        stderr = log.read_text()
        assert "[kbkit] wiki: relaying to" in stderr and "WIKI_TOKEN" in stderr and REMOTE_KEY not in stderr

        with pytest.raises(Exception):  # noqa: B017 - the agent sees the refusal as an error
            anyio.run(call_through, root, "wrong", env, "wiki_search", log)
        stderr = log.read_text()
        assert "refused" in stderr and STDIO_KEY not in stderr


def test_the_launcher_starts_the_server_in_the_project_folder(tmp_path: Path) -> None:
    servers = f'[servers.where]\ncommand = ["{sys.executable}", "-c", "import os; print(os.getcwd())"]\n'
    root = team_project(tmp_path, servers)
    done = run(root, "where", agent_env(tmp_path))
    assert done.stdout.decode().strip() == str(root.resolve())


def test_no_file_under_home_or_the_project_holds_a_key_after_runs(tmp_path: Path) -> None:
    root = team_project(tmp_path, stdio_server())
    env = agent_env(tmp_path)
    anyio.run(call_through, root, "tracker", env, "key_check", tmp_path / "log")
    for base in (root, tmp_path / "home"):
        for path in base.rglob("*"):
            if path.is_file() and path.name != ".env.local":
                assert STDIO_KEY.encode() not in path.read_bytes(), path
    assert os.environ.get("TRACKER_TOKEN") is None


def test_a_server_from_kbkit_toml_never_starts_before_kbkit_trust_nor_after_it_changes(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "started"
    script = f"import os; open({str(marker)!r}, 'w').write(os.environ.get('NODE_OPTIONS', 'none'))"
    command = json.dumps([sys.executable, "-c", script])
    root = team_project(tmp_path, f"[servers.tracker]\ncommand = {command}\n", trusted=False)
    done = run(root, "tracker", agent_env(tmp_path))
    assert done.returncode == 2 and "not trusted on this machine yet" in done.stderr.decode()
    assert "kbkit trust" in done.stderr.decode() and not marker.exists()
    trust_for(root, tmp_path / "home")
    assert run(root, "tracker", agent_env(tmp_path)).returncode == 0 and marker.read_text() == "none"
    marker.unlink()
    config = (root / "kbkit.toml").read_text()
    (root / "kbkit.toml").write_text(config + 'env = { NODE_OPTIONS = "--require=/tmp/evil.js" }\n')
    done = run(root, "tracker", agent_env(tmp_path))  # the values trusted run; the change waits
    assert done.returncode == 0 and marker.read_text() == "none"
    assert "changed in kbkit.toml since you trusted it (env)" in done.stderr.decode()
    trust_for(root, tmp_path / "home")
    assert run(root, "tracker", agent_env(tmp_path)).returncode == 0
    assert marker.read_text() == "--require=/tmp/evil.js"  # allowed by the member: now it applies


def test_a_server_from_kbkit_local_toml_is_the_user_s_own_and_needs_no_trust(tmp_path: Path) -> None:
    root = team_project(tmp_path, "", trusted=False)
    servers = f'[servers.seven]\ncommand = ["{sys.executable}", "-c", "import sys; sys.exit(7)"]\n'
    (root / "kbkit.local.toml").write_text(servers, encoding="utf-8")
    assert run(root, "seven", agent_env(tmp_path)).returncode == 7
