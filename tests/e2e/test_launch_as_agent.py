"""Every entry `kbkit sync` writes, started the way its agent starts it.

For each row of the client table: parse the file sync wrote with that format's parser, read the
entry as the agent reads it (its shape, its env-reference dialect), and launch it with what the
agent would give it: only the entry's own `env` (references expanded from an agent environment
that lacks the test's variables), a PATH without our virtualenv, and the agent's working folder
(the project, or `/` for the user-level snippets). Each must answer initialize and a search.
A new row is covered by the loops; a new entry shape or dialect fails here until it is taught.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from kbkit.catalog.clients import CLIENTS
from kbkit.diagnostics import Finding, run_checks
from kbkit.diagnostics.launch import (
    DIALECTS,
    PARSERS,
    READERS,
    Launch,
    Result,
    agent_folder,
    expand,
    launch_of,
    read_entry,
    start_once,
)
from kbkit.diagnostics.launch import run_launch as engine_run_launch
from kbkit.sync.render import token_reference
from tests.helpers.http import INITIALIZE, TEST_TOKEN, HttpServer
from tests.helpers.launch import initialize_and_search
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_command
from tests.helpers.team import REMOTE_KEY, STDIO_KEY, stdio_server, team_http, trust_for
from tests.helpers.team import remote_server as remote_team_server

AGENT_PATH = "/usr/bin:/bin"
"""An agent's PATH: the system's, without the virtualenv kbkit was installed in."""
LAUNCH_DEADLINE = 120.0
"""A bound on one launch (initialize + search) so a hang fails instead of stalling; not a target."""
CONCURRENT_LAUNCHES = 6

# the synced projects and the shared server are built once, by one worker:
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("launch-as-agent")]


Check = Callable[[Client], Awaitable[str]]
"""What is asked of a launched server: kb's search, or a team server's own tool."""


async def run_launch(
    launch: Launch, cwd: str, agent_env: Mapping[str, str], log: Path, check: Check = initialize_and_search
) -> Result:
    """kbkit's own launch (`kbkit doctor --launch`), asked a search instead of tools/list."""
    return await engine_run_launch(launch, cwd, agent_env, log, check, LAUNCH_DEADLINE)


async def launch_every_client(
    root: Path,
    agent_env: Mapping[str, str],
    logs: Path,
    only: list[str] | None = None,
    server: str = "kb",
    check: Check = initialize_and_search,
) -> dict[str, Result]:
    """Start every client's entry (or `only` these) concurrently, as its agent would; one result each.

    Clients whose entries come to the very same launch (command, arguments, environment, folder;
    or URL and headers) share one start: a second identical process would test nothing new."""
    logs.mkdir(parents=True, exist_ok=True)
    launches: dict[str, tuple[Launch, str]] = {}
    for name in only or CLIENTS:
        client = CLIENTS[name]
        launch = launch_of(root, client, agent_env, server)
        launches[name] = launch, launch.cwd or agent_folder(root, client)
    results: dict[str, Result] = {}

    async def start(name: str) -> Result:
        launch, cwd = launches[name]
        return await run_launch(launch, cwd, agent_env, logs / f"{name}.log", check)

    await start_once(launches, start, results, concurrent=CONCURRENT_LAUNCHES)
    return results


def table(results: Mapping[str, Result]) -> str:
    return "\n".join(
        f"{name:<15} {r.transport:<5} {'ok  ' if r.ok else 'FAIL'} {r.seconds:5.2f} s  {r.detail}"
        for name, r in results.items()
    )


def assert_all_answered(results: Mapping[str, Result], expected: list[str] | None = None) -> None:
    print("\n" + table(results))  # noqa: T201 - the per-client table, shown with -s or -rA
    assert set(results) == set(expected or CLIENTS)
    failed = {name: r for name, r in results.items() if not r.ok}
    assert not failed, "entries that did not answer as their agent launched them:\n" + table(failed)


def sync_project(root: Path, *, index: bool = False) -> subprocess.CompletedProcess[str]:
    """`git init`, then `kbkit sync` (after `kbkit index`, so servers launched together start warm)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for command in (["index"], ["sync"]) if index else (["sync"],):
        done = subprocess.run(
            [*kbkit_command(), *command, "--root", str(root)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
    return done


def every_client(extra: str = "") -> str:
    listed = ", ".join(f'"{name}"' for name in CLIENTS)
    return f'[kb]\npath = "docs"\n[sync]\nclients = [{listed}]\n{extra}'


@pytest.fixture(scope="module")
def agent_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("agent-home")


def agent_environment(home: Path, **variables: str) -> dict[str, str]:
    """The environment an agent runs in: it never read .env.local, and our variables are not in it."""
    return {"PATH": AGENT_PATH, "HOME": str(home), **variables}


def test_every_dialect_and_entry_shape_in_the_client_table_is_known_here() -> None:
    for client in CLIENTS.values():
        assert client.env_reference in DIALECTS, f"teach DIALECTS the {client.name} dialect"
        assert client.template in READERS, f"teach READERS how {client.title} reads a {client.template} entry"
        assert client.format in PARSERS, f"teach PARSERS the {client.format} format"


def test_the_dialect_expanders_substitute_only_their_own_syntax() -> None:
    env = {"MCP_TOKEN": "t0k"}
    assert expand("Bearer ${MCP_TOKEN}", "${{{var}}}", env) == "Bearer t0k"
    assert expand("${UNSET:-fallback}", "${{{var}}}", env) == "fallback"
    assert expand("Bearer ${env:MCP_TOKEN}", "${{{var}}}", env) == "Bearer ${env:MCP_TOKEN}"
    assert expand("Bearer ${env:MCP_TOKEN}", "${{env:{var}}}", env) == "Bearer t0k"
    assert expand("Bearer {env:MCP_TOKEN}", "{{env:{var}}}", env) == "Bearer t0k"
    assert expand("Bearer ${MCP_TOKEN}", None, env) == "Bearer ${MCP_TOKEN}"
    assert expand("Bearer ${UNSET}", "${{{var}}}", env) == "Bearer ${UNSET}"


# -- local mode: every entry runs `kbkit serve` -------------------------------------------------


@pytest.fixture(scope="module")
def local_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_project(tmp_path_factory.mktemp("local") / "project", config=every_client())
    sync_project(root, index=True)
    return root


@pytest.mark.processes
async def test_every_entry_answers_when_launched_as_its_agent_does(
    local_project: Path, agent_home: Path
) -> None:
    agent_env = agent_environment(agent_home)
    for client in CLIENTS.values():
        launch = launch_of(local_project, client, agent_env)
        assert launch.command is not None and Path(launch.command).is_absolute(), client.name
    assert_all_answered(await launch_every_client(local_project, agent_env, local_project / "launch-logs"))


# -- remote mode: a shared `kbkit serve --http`, the token only in .env.local ------------------


@pytest.fixture(scope="module")
def remote_server(tmp_path_factory: pytest.TempPathFactory):
    served = make_project(tmp_path_factory.mktemp("served") / "project")
    server = HttpServer(served).wait_ready()
    yield server
    server.stop()


def remote_project(base: Path, server: HttpServer, home: Path, extra: str = "") -> tuple[Path, str]:
    """A member's project pointing at the shared server, trusted by that member (`kbkit trust`, in
    the state folder under the HOME their agents run with)."""
    root = make_project(
        base / "project", files={}, config=every_client(f'remote_url = "{server.url}"\n{extra}')
    )
    (root / ".env.local").write_text(f"MCP_TOKEN={TEST_TOKEN}\n", encoding="utf-8")
    trust_for(root, home)
    return root, sync_project(root).stdout


@pytest.mark.processes
async def test_with_the_token_only_in_env_local_every_entry_reaches_the_remote_server(
    tmp_path: Path, remote_server: HttpServer, agent_home: Path
) -> None:
    root, _ = remote_project(tmp_path, remote_server, agent_home)
    agent_env = agent_environment(agent_home)
    assert "MCP_TOKEN" not in agent_env
    for client in CLIENTS.values():
        launch = launch_of(root, client, agent_env)
        assert launch.url is None and launch.args[-4:-2] == ["connect", remote_server.url], client.name
    assert_all_answered(await launch_every_client(root, agent_env, tmp_path / "launch-logs"))


@pytest.mark.processes
async def test_remote_transport_http_entries_work_when_the_agent_s_environment_holds_the_token(
    tmp_path: Path, remote_server: HttpServer, agent_home: Path
) -> None:
    root, out = remote_project(tmp_path, remote_server, agent_home, 'remote_transport = "http"\n')
    direct = [name for name, c in CLIENTS.items() if c.http and c.env_reference is not None]
    assert f'note: remote_transport = "http": {", ".join(direct)} read MCP_TOKEN' in out
    for name in direct:  # each refers to the token in its own dialect, never by value
        written = json.dumps(read_entry(root, CLIENTS[name]))
        assert token_reference(CLIENTS[name]) in written and TEST_TOKEN not in written, name
    for name in set(CLIENTS) - set(direct):  # the rest keep the relay entry, launched in the test above
        launch = launch_of(root, CLIENTS[name], agent_environment(agent_home))
        assert launch.args[-4:] == ["connect", remote_server.url, "--root", str(root)], name

    with_token = agent_environment(agent_home, MCP_TOKEN=TEST_TOKEN)
    results = await launch_every_client(root, with_token, tmp_path / "with-token", only=direct)
    assert {name for name, r in results.items() if r.transport == "http"} == set(direct)
    assert_all_answered(results, direct)

    # the same entries from an agent started without MCP_TOKEN: why the relay is the default. Each
    # fails, and for the reason this is about: the live server refuses it with 401, nothing else.
    no_token = agent_environment(agent_home)
    without = await launch_every_client(root, no_token, tmp_path / "without", only=direct)
    assert not any(r.ok for r in without.values()), table(without)
    for name in direct:
        launch = launch_of(root, CLIENTS[name], no_token)
        assert launch.url == remote_server.url, name
        sent = {key: value.strip() for key, value in launch.headers.items()}  # `Bearer ` as `Bearer`
        async with httpx2.AsyncClient(timeout=30) as http:
            answer = await http.post(
                launch.url, json=INITIALIZE, headers={**sent, "accept": "application/json, text/event-stream"}
            )
        assert answer.status_code == 401, (name, answer.status_code, answer.text[:200])


def remote_finding(root: Path, monkeypatch: pytest.MonkeyPatch, token: str | None = None) -> Finding:
    if token is None:
        monkeypatch.delenv("MCP_TOKEN", raising=False)
    else:
        monkeypatch.setenv("MCP_TOKEN", token)
    (finding,) = [f for f in run_checks(root) if f.check == "remote"]
    return finding


def test_doctor_says_when_http_entries_would_miss_a_token_kept_only_in_env_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "http://127.0.0.1:9/mcp"
    relay_config = f'[kb]\npath = "docs"\n[sync]\nremote_url = "{url}"\n'
    root = make_project(tmp_path / "p", config=relay_config)
    (root / ".env.local").write_text(f"MCP_TOKEN={TEST_TOKEN}\n", encoding="utf-8")
    relay = remote_finding(root, monkeypatch)
    assert relay.status == "ok" and "kbkit connect" in relay.finding and ".env.local" in relay.finding
    (root / "kbkit.toml").write_text(relay_config + 'remote_transport = "http"\n', encoding="utf-8")
    only_file = remote_finding(root, monkeypatch)
    assert only_file.status == "warn" and ".env.local holds it" in only_file.finding
    assert (
        only_file.fix and "export MCP_TOKEN" in only_file.fix and "remove remote_transport" in only_file.fix
    )
    assert remote_finding(root, monkeypatch, TEST_TOKEN).status == "ok"
    (root / ".env.local").unlink()
    (root / "kbkit.toml").write_text(relay_config, encoding="utf-8")
    missing = remote_finding(root, monkeypatch)
    assert missing.status == "warn" and "MCP_TOKEN is not set" in missing.finding


# -- team servers: a stdio one whose key is an env value, a remote one whose bearer is a header --


def expect_tool(tool: str, answer: str) -> Check:
    async def check(client: Client) -> str:
        result = await client.call_tool(tool, {})
        text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
        if result.is_error or text != answer:
            raise AssertionError(f"{tool} answered {text!r}")
        return f"initialize, then {tool} -> {text}"

    return check


TEAM_CHECKS = {
    "tracker": expect_tool("key_check", "the key is right"),
    "wiki": expect_tool("wiki_search", "the bearer is right"),
    "open": expect_tool("wiki_search", "the bearer is right"),
}
"""tracker: a stdio server, its key TEAM_KEY = ${TRACKER_TOKEN}; wiki: a remote server, its bearer
`Bearer ${WIKI_TOKEN}`; open: a remote server with nothing to substitute (a plain URL entry)."""


@pytest.mark.processes
async def test_every_client_s_team_server_entries_work_as_launched_with_keys_only_in_env_local(
    tmp_path: Path, agent_home: Path
) -> None:
    with team_http(tmp_path / "peer") as url, team_http(tmp_path / "open-peer", key="") as open_url:
        extra = stdio_server() + remote_team_server(url) + f'[servers.open]\nurl = "{open_url}"\n'
        root = make_project(tmp_path / "project", files={}, config=every_client(extra))
        (root / ".env.local").write_text(
            f"TRACKER_TOKEN={STDIO_KEY}\nWIKI_TOKEN={REMOTE_KEY}\n", encoding="utf-8"
        )
        sync_project(root)
        trust_for(root, agent_home)
        agent_env = agent_environment(agent_home)
        grid: dict[str, dict[str, Result]] = {}
        for server, check in TEAM_CHECKS.items():
            grid[server] = await launch_every_client(
                root, agent_env, tmp_path / server, server=server, check=check
            )
    rows = [
        f"{name:<15} " + "  ".join(f"{s}:{'ok' if grid[s][name].ok else 'FAIL'}" for s in grid)
        for name in CLIENTS
    ]
    print("\n" + "\n".join(rows))  # noqa: T201 - the grid, shown with -s or -rA
    for results in grid.values():
        assert_all_answered(results)
    direct = {name for name, r in grid["open"].items() if r.transport == "http"}
    assert direct == {name for name, c in CLIENTS.items() if c.http}
    for path in [*root.rglob("*"), *agent_home.rglob("*")]:
        if path.is_file() and path.name != ".env.local":
            data = path.read_bytes()
            assert STDIO_KEY.encode() not in data and REMOTE_KEY.encode() not in data, path
