"""The agents' own CLIs read what `kbkit sync` wrote, and connect to `kb`.

Each CLI (tests/peers/agents, pinned) runs offline against one synced project per mode: local
(`kbkit serve`), relay (`kbkit connect` to a `kbkit serve --http` in the same network namespace)
and direct HTTP (`remote_transport = "http"`, MCP_TOKEN exported in the agent's environment). A
user's approvals are given the offline way each agent documents (folder trust, server approval;
docs/clients.md), and the assertions are what the agent itself reports: the entry read without
a warning, and connected where the CLI checks health (Codex, Copilot CLI and Auggie only list it).
Mistral Vibe and OpenHands (PyPI, Python 3.12+, tests/peers/agents/python) have no offline command
that reads their MCP config: their own code does it (check.py there), as a session starts.
Kimi Code has none either: its own local server reports (kimi_web.py there), after the folder is
trusted through it as its trust prompt would. Not here (docs/clients.md): Crush, whose npm package
downloads its binary at install time.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from kbkit.catalog.clients import CLIENTS
from tests.helpers.http import TEST_TOKEN
from tests.helpers.project import make_project
from tests.helpers.serve import checkout_kbkit, kbkit_command
from tests.helpers.team import HTTP_PEER, REMOTE_KEY, STDIO_KEY, sha256, stdio_server, trust_for
from tests.helpers.team import remote_server as remote_team_server
from tests.helpers.tiers import kind
from tests.helpers.trust import trust_project
from tests.peers import agents

PORT = 18080
"""The shared server's port inside each run's own network namespace, where nothing else binds."""
MODES = ("local", "relay", "http")


@dataclass(frozen=True)
class Agent:
    client: str
    """Its `[sync] clients` name."""
    cli: str
    check: tuple[str, ...]
    """The CLI's own offline report on the `kb` entry."""
    approve: Callable[[Path, Path], dict[str, str]]
    """Gives the user's approvals under a fake HOME for a project; extra environment to run with."""
    connected: str
    """What the report says when the entry was read and (where it checks) connected."""
    step: str = ""
    """What the step `kbkit sync` prints for this agent must say (the approval given here)."""
    after: tuple[str, ...] = ()
    """A command the user runs once, before the check (Qwen Code's approval)."""
    alone: bool = False
    """Run after the others, not beside them: its check gives the server a few seconds only."""
    stops: bool = True
    """False for a check that never exits by itself (Grok CLI's `mcp test` keeps the server's
    connection open): it is sent SIGTERM after LINGER seconds, which it answers by exiting 0."""
    python: bool = False
    """A PyPI agent checked by its own code in its own virtualenv (tests/peers/agents/python/check.py):
    `check` is the server to connect."""
    team: str = ""
    """What its report says of a team server, `{server}` its name, where `connected` names kb."""
    served: bool = False
    """Kimi Code, asked through its own local server (tests/peers/agents/kimi_web.py): `check` is
    the server to report on."""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _claude(home: Path, root: Path) -> dict[str, str]:
    _write(home / ".claude" / "settings.json", json.dumps({"enableAllProjectMcpServers": True}))
    return {}


def _gemini(home: Path, root: Path) -> dict[str, str]:
    return {"GEMINI_CLI_TRUST_WORKSPACE": "true"}


def _codex(home: Path, root: Path) -> dict[str, str]:
    _write(home / ".codex" / "config.toml", f'[projects.{json.dumps(str(root))}]\ntrust_level = "trusted"\n')
    return {}


def _copilot(home: Path, root: Path) -> dict[str, str]:
    _write(home / ".copilot" / "config.json", json.dumps({"trustedFolders": [str(root)]}))
    return {}


def _nothing(home: Path, root: Path) -> dict[str, str]:
    return {}


def _amp(home: Path, root: Path) -> dict[str, str]:
    return {"AMP_API_KEY": "offline"}  # any value: `amp mcp` refuses to run signed out, never calls out


def _qoder(home: Path, root: Path) -> dict[str, str]:
    trusted = {"permissions": {"trustDirectories": [str(root)]}, "mcp": {"enabledProjectMcpServers": ["kb"]}}
    _write(home / ".qoder" / "settings.json", json.dumps(trusted))  # what its trust and approval prompts save
    return {}


def _vibe(home: Path, root: Path) -> dict[str, str]:
    _write(home / ".vibe" / "trusted_folders.toml", f"trusted = [{json.dumps(str(root))}]\nuntrusted = []\n")
    return {}  # what its trust prompt saves ("trust this folder")


def _openhands(home: Path, root: Path) -> dict[str, str]:
    snippet = root / CLIENTS["openhands"].path  # the step sync prints: copy it into ~/.openhands/mcp.json
    _write(home / ".openhands" / "mcp.json", snippet.read_text(encoding="utf-8"))
    return {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1"}  # no fetch, no banner


AGENTS = {
    agent.client: agent
    for agent in (
        Agent("claude-code", "claude", ("mcp", "get", "kb"), _claude, "Status: ✔ Connected", "approve"),
        Agent("gemini", "gemini", ("mcp", "list"), _gemini, "- Connected", "trust", alone=True),
        Agent("codex", "codex", ("mcp", "get", "kb"), _codex, "enabled: true", "trust"),
        Agent("opencode", "opencode", ("mcp", "list"), _nothing, "connected"),
        Agent(
            "qwen",
            "qwen",
            ("mcp", "list"),
            _nothing,
            "- Connected",
            "`qwen mcp approve kb`",
            ("mcp", "approve", "kb"),
        ),
        Agent("copilot-cli", "copilot", ("mcp", "get", "kb"), _copilot, "Status: Enabled", "trust"),
        Agent(
            "amp",
            "amp",
            ("mcp", "doctor"),
            _amp,
            "kb (workspace: untrusted): connected (2 tools: search, get_document)",
            "`amp mcp approve kb`",
            ("mcp", "approve", "kb"),
            team="{server} (workspace: untrusted): connected (",
        ),
        Agent("kilo", "kilo", ("mcp", "list"), _nothing, "✓ kb connected", team="✓ {server} connected"),
        Agent("factory", "droid", ("mcp", "list"), _nothing, "connected  [project]", alone=True),
        Agent(
            "qoder", "qodercli", ("mcp", "get", "kb"), _qoder, "Status: ✓ Connected", "approve", alone=True
        ),
        Agent("augment", "auggie", ("mcp", "list"), _nothing, "✓ kb ", team="✓ {server} "),
        Agent(
            "grok-cli",
            "grok",
            ("mcp", "test", "kb"),
            _nothing,
            "✓ Successfully connected to kb",
            stops=False,
            team="✓ Successfully connected to {server}",
        ),
        Agent("mistral-vibe", "vibe", ("kb",), _vibe, ": connected (", "trust", python=True),
        Agent("kimi", "kimi", ("kb",), _nothing, ": connected (", "trust", served=True),
        Agent("openhands", "openhands", ("kb",), _openhands, ": connected (", python=True),
    )
}
WARNINGS = ("warning", "skipped", "invalid", "error", "disabled", "pending", "not found")
NOTICES = (
    "could not create PATH aliases",  # Codex, about a HOME under /tmp
    "tools.allowed in settings.json are deprecated",  # Gemini CLI 0.61: yet the only project-level
    # pre-approval it honours (workspace policy files are ignored); docs/clients.md
    "Please configure Augment API URL",  # Auggie, signed out: no tenant or account servers to add
    "AuthlibDeprecationWarning",  # OpenHands' SDK importing authlib.jose
)
"""Warnings the CLIs print that are not about the kb entry."""
LINGER = 30
"""Seconds a check that never exits by itself (Grok CLI) runs before SIGTERM; its report is printed
by then on any machine (it connects in about a second), and a later one fails the assertion."""
pytestmark = pytest.mark.xdist_group("agents")
"""One worker runs these one after another: two sets of fifteen CLIs at once starve a 2-core
machine past the few seconds an agent gives its server (Qwen Code: 10 s)."""
CONCURRENT = 3
"""CLIs run at once; Gemini CLI, Qoder CLI and Factory's droid run after them, alone: their checks
give a server a few seconds (droid about four from its own start), which a kb starting beside a
dozen others on a loaded machine can miss."""
UNANSWERED = ("Disconnected", "Failed to connect", "timed out", "connecting  [")  # last: droid
"""A CLI's health check that ran out of time (its own few seconds, on a loaded machine): asked again."""
DEADLINE = 300.0
"""A bound on asking again, so a server that never answers fails instead of stalling."""
PAUSE = 5.0
"""Seconds between two askings: a load that made a server miss a CLI's few seconds may pass."""


def command(agent: Agent) -> list[str]:
    """How an agent's CLI starts (a Python agent's own code: check.py in its virtualenv)."""
    if agent.python:
        return [str(agents.interpreter(agent.client)), str(agents.CHECK), agent.client]
    if agent.served:
        return [sys.executable, "-I", str(agents.KIMI_WEB), str(agents.executable(agent.cli))]
    return [str(agents.executable(agent.cli))]


@dataclass(frozen=True)
class Report:
    code: int
    text: str


def synced(
    root: Path,
    mode: str,
    extra: str = "",
    env_local: str = "",
    *,
    names: Iterable[str] = AGENTS,
    kbkit: list[str] | None = None,
) -> Path:
    """A project synced for the agents `names` by `kbkit` (the virtualenv's console script unless
    given: `checkout_kbkit` for a test of this checkout's own code, which the entries then start)."""
    clients = ", ".join(f'"{name}"' for name in names)
    remote = {
        "local": "",
        "relay": f'remote_url = "http://127.0.0.1:{PORT}/mcp"\n',
        "http": f'remote_url = "http://127.0.0.1:{PORT}/mcp"\nremote_transport = "http"\n',
    }[mode]
    make_project(root, config=f'[kb]\npath = "docs"\n[sync]\nclients = [{clients}]\n{remote}{extra}')
    (root / ".env.local").write_text(f"MCP_TOKEN={TEST_TOKEN}\n{env_local}", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for command in ("index", "sync"):  # indexed first, so every server starts warm
        done = subprocess.run(
            [*(kbkit or kbkit_command()), command, "--root", str(root)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    return root


def report(agent: Agent, root: Path, home: Path, mode: str) -> Report:
    """One agent's own report on the `kb` entry, after the approvals a user gives."""
    home.mkdir(parents=True)
    trust_for(root, home)  # the member trusted the project (its remote URL) on this machine
    env = agents.agent_env(home, **agent.approve(home, root))
    if mode == "http":
        env["MCP_TOKEN"] = TEST_TOKEN  # the step sync prints for direct HTTP entries
    cli = command(agent)
    serve = None if mode == "local" else (kbkit_command()[0], root, PORT)
    if agent.after:
        code, text = agents.run([*cli, *agent.after], cwd=root, env=env)
        assert code == 0, text
    lingers = [] if agent.stops else ["timeout", "--preserve-status", str(LINGER)]
    return ask([*lingers, *cli, *agent.check], root, env, serve)


def ask(
    argv: list[str], root: Path, env: dict[str, str], serve: tuple[str, Path, int] | None = None
) -> Report:
    """A CLI's report, asked again while its health check ran out of time (within DEADLINE)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        found = Report(*agents.run(argv, cwd=root, env=env, serve=serve))
        if not any(word in found.text for word in UNANSWERED) or time.monotonic() > deadline:
            return found
        time.sleep(PAUSE)


def reports(mode: str, base: Path) -> dict[str, Report]:
    """Every agent's report on one mode's synced project (the CLIs run concurrently, Gemini CLI after)."""
    root = synced(base / "project", mode)
    for agent in AGENTS.values():  # skips (or fails under CI) before any CLI runs when one is missing
        command(agent)
    agents.isolated()
    together = {name: agent for name, agent in AGENTS.items() if not agent.alone}
    with ThreadPoolExecutor(CONCURRENT) as pool:
        futures = {
            name: pool.submit(report, a, root, base / f"home-{name}", mode) for name, a in together.items()
        }
        found = {name: future.result() for name, future in futures.items()}
    for name, agent in AGENTS.items():
        if agent.alone:
            found[name] = report(agent, root, base / f"home-{name}", mode)
    return found


def problems(client: str, found: Report) -> list[str]:
    """What is wrong in one agent's report: not read, not connected, a warning about the entry."""
    wrong = [] if found.code == 0 else [f"exit code {found.code}"]
    if AGENTS[client].connected not in found.text:
        wrong.append(f"no {AGENTS[client].connected!r}")
    wrong += [
        line.strip()
        for line in found.text.splitlines()
        if any(word in line.lower() for word in WARNINGS) and not any(notice in line for notice in NOTICES)
    ]
    return wrong


@pytest.mark.agents
@pytest.mark.timeout(1200)  # fifteen CLIs and their servers, asked again while a machine is loaded
@pytest.mark.parametrize("mode", MODES)
def test_every_agent_reads_the_kb_entry_without_a_warning_and_connects(mode: str, tmp_path: Path) -> None:
    found = reports(mode, tmp_path)
    print("\n".join(f"{name:<12} {r.text.strip()}" for name, r in found.items()))  # noqa: T201 - with -s
    failed = {name: problems(name, r) for name, r in found.items() if problems(name, r)}
    assert not failed, "\n".join(
        f"{name}: {'; '.join(wrong)}\n{found[name].text}" for name, wrong in failed.items()
    )
    assert "Tools: * (all)" in found["copilot-cli"].text  # Copilot CLI offers every tool with no `tools` key


@pytest.mark.agents
def test_claude_code_shows_the_relay_s_error_whole(tmp_path: Path) -> None:
    """Claude Code replaces any text equal to one of the server's arguments (`connect`, the URL,
    the root) with `[redacted]` in what it shows: the relay's own words must not be one of them."""
    root = synced(tmp_path / "project", "relay")
    trust_for(root, tmp_path / "home")  # the remote URL is the member's trusted one: only the server is down
    agent = AGENTS["claude-code"]
    code, text = agents.run(
        [str(agents.executable(agent.cli)), *agent.check],
        cwd=root,
        env=agents.agent_env(tmp_path / "home", **agent.approve(tmp_path / "home", root)),
    )
    issue = next(line for line in text.splitlines() if "Issue:" in line)
    assert "kbkit relay error: cannot reach [redacted]" in issue, text


@pytest.mark.agents
@pytest.mark.timeout(600)
def test_qwen_code_asks_again_once_sync_changed_the_entry(tmp_path: Path) -> None:
    """Why Qwen Code's step says "again after kbkit sync changes the entry"."""
    root = synced(tmp_path / "project", "local")
    qwen = str(agents.executable("qwen"))
    env = agents.agent_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    assert agents.run([qwen, "mcp", "approve", "kb"], cwd=root, env=env)[0] == 0
    assert "- Connected" in ask([qwen, "mcp", "list"], root, env).text
    (root / "kbkit.toml").write_text(
        (root / "kbkit.toml").read_text() + f'remote_url = "http://127.0.0.1:{PORT}/mcp"\n', encoding="utf-8"
    )
    trust_project(root)
    done = subprocess.run(
        [*kbkit_command(), "sync", "--root", str(root)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "qwen mcp approve kb" in done.stdout + done.stderr, done.stderr
    assert "Pending approval" in agents.run([qwen, "mcp", "list"], cwd=root, env=env)[1]


def test_an_agent_s_cli_is_in_the_agents_tier() -> None:
    argv = ["unshare", "-n", "--", "python", "offline.py", "--", str(agents.BIN / "claude"), "mcp", "list"]
    assert kind(argv) == "agents"


def test_every_agent_here_is_a_row_of_the_client_table() -> None:
    assert set(AGENTS) <= set(CLIENTS)


@pytest.mark.parametrize("client", list(AGENTS))
def test_the_step_sync_prints_is_the_approval_the_agent_needs(client: str) -> None:
    """Without the approvals given above each agent leaves `kb` off (Disabled, Pending approval,
    not configured): the step sync prints for it must say so, and none where none is needed."""
    step = CLIENTS[client].step("kb")
    if AGENTS[client].step:
        assert step is not None and AGENTS[client].step in step, step
    else:
        assert step is None


# -- team servers: each CLI connects a stdio one (key in an env value) and a remote one (bearer) ----

TEAM_PORT = 18090
"""The remote team server's port inside each run's namespace (the kb server's is PORT)."""
TEAM = ("tracker", "wiki")


def with_team_peer(argv: list[str], home: Path) -> list[str]:
    """`argv`, run beside the remote team server (the HTTP peer) in the same network namespace."""
    port_file = home / "team-peer.port"
    script = (
        f'rm -f "{port_file}"; "{sys.executable}" "{HTTP_PEER}" "{port_file}" {sha256(REMOTE_KEY)} {TEAM_PORT} & '
        f'peer=$!; while [ ! -s "{port_file}" ]; do sleep 0.05; done; "$@"; code=$?; kill $peer; exit $code'
    )
    return ["/bin/sh", "-c", script, "sh", *argv]


def team_report(agent: Agent, root: Path, home: Path, servers: tuple[str, ...] = TEAM) -> dict[str, Report]:
    """One agent's own report on each team server, after the approvals a user gives and kbkit trust."""
    home.mkdir(parents=True)
    trust_for(root, home)
    env = agents.agent_env(home, **agent.approve(home, root))
    cli = command(agent)
    for server in servers if agent.after else ():
        code, text = agents.run(
            [*cli, *(server if part == "kb" else part for part in agent.after)], cwd=root, env=env
        )
        assert code == 0, text
    found = {}
    lingers = [] if agent.stops else ["timeout", "--preserve-status", str(LINGER)]
    for server in servers:
        argv = [*lingers, *cli, *(server if part == "kb" else part for part in agent.check)]
        found[server] = ask(with_team_peer(argv, home), root, env)
    return found


def team_connected(client: str, server: str, found: Report) -> bool:
    """The agent says this server is connected: on its own line in a list, or in its `get` report."""
    agent = AGENTS[client]
    marker = agent.team.replace("{server}", server) if agent.team else agent.connected
    if "kb" in agent.check:  # `mcp get NAME`: the whole report is about the server
        return found.code == 0 and marker in found.text
    return any(server in line and marker in line for line in found.text.splitlines())


@pytest.mark.agents
@pytest.mark.timeout(900)
def test_every_agent_connects_each_team_server_with_its_key_only_in_env_local(tmp_path: Path) -> None:
    remote = f"http://127.0.0.1:{TEAM_PORT}/mcp"
    keys = f"TRACKER_TOKEN={STDIO_KEY}\nWIKI_TOKEN={REMOTE_KEY}\n"
    root = synced(tmp_path / "project", "local", stdio_server() + remote_team_server(remote), keys)
    for agent in AGENTS.values():
        command(agent)
    agents.isolated()
    found: dict[str, dict[str, Report]] = {}
    with ThreadPoolExecutor(CONCURRENT) as pool:
        futures = {
            name: pool.submit(team_report, a, root, tmp_path / f"home-{name}")
            for name, a in AGENTS.items()
            if not a.alone
        }
        found = {name: future.result() for name, future in futures.items()}
    for name, agent in AGENTS.items():
        if agent.alone:
            found[name] = team_report(agent, root, tmp_path / f"home-{name}")
    grid = {
        name: {server: team_connected(name, server, r) for server, r in reports.items()}
        for name, reports in found.items()
    }
    print("\n".join(f"{name:<12} {grid[name]}" for name in grid))  # noqa: T201 - with -s
    failed = {
        f"{name} {server}": found[name][server].text
        for name in grid
        for server in TEAM
        if not grid[name][server]
    }
    assert not failed, "\n".join(f"{key}:\n{text}" for key, text in failed.items())
    for path in [*root.rglob("*"), *tmp_path.glob("home-*/**/*")]:
        if path.is_file() and path.name != ".env.local":
            data = path.read_bytes()
            assert STDIO_KEY.encode() not in data and REMOTE_KEY.encode() not in data, path


def test_a_python_agent_s_own_code_is_in_the_agents_tier() -> None:
    python = agents.PYTHON_AGENTS / "openhands" / "bin" / "python"
    argv = ["unshare", "-n", "--", "python", "offline.py", "--", str(python), str(agents.CHECK), "openhands"]
    assert kind(argv) == "agents"


def test_with_no_newer_python_the_python_agents_fail_under_ci_with_what_setup_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agents, "PYTHON_AGENTS", tmp_path)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no Python 3.12 or newer found"):
        command(AGENTS["openhands"])
    setup = (Path(__file__).resolve().parents[1] / "setup.sh").read_text(encoding="utf-8")
    assert f'PYTHON_AGENTS_MISSING="{agents.NO_NEWER_PYTHON}"' in setup


@pytest.mark.agents
def test_mistral_vibe_reads_no_project_server_in_a_folder_not_trusted(tmp_path: Path) -> None:
    """Why Mistral Vibe's step says "trust the folder": untrusted, .vibe/config.toml is not read."""
    root = synced(tmp_path / "project", "local")
    (tmp_path / "home").mkdir()
    code, text = agents.run(
        [*command(AGENTS["mistral-vibe"]), "kb"], cwd=root, env=agents.agent_env(tmp_path / "home")
    )
    assert code == 1 and "kb: not in Mistral Vibe's configuration (its servers: none)" in text, text


# -- the agents' own tool filters, and `kbkit doctor --launch` against each agent's own verdict ------

FILTERED = ("gemini", "qwen", "factory", "codex")
"""The agents here whose entry kbkit writes the team's tool filter into (ToolKeys in the client table)."""


@pytest.mark.agents
@pytest.mark.timeout(900)
def test_the_agents_read_the_tool_filter_kbkit_writes_in_their_own_keys(tmp_path: Path) -> None:
    """Gemini CLI, Qwen Code and droid connect the filtered entry (a key they refused would be a
    warning, or the entry skipped); Codex prints the lists it read."""
    filtered = stdio_server() + 'tools = ["key_check", "env_names"]\nexclude_tools = ["env_names"]\n'
    kbkit = checkout_kbkit(tmp_path)
    root = synced(
        tmp_path / "project", "local", filtered, f"TRACKER_TOKEN={STDIO_KEY}\n", names=FILTERED, kbkit=kbkit
    )
    for name in FILTERED:
        assert CLIENTS[name].tool_keys is not None
    agents.isolated()
    found = {
        name: team_report(AGENTS[name], root, tmp_path / f"home-{name}", ("tracker",))["tracker"]
        for name in FILTERED
    }
    print("\n".join(f"{name:<8} {r.text.strip()}" for name, r in found.items()))  # noqa: T201 - with -s
    codex = found.pop("codex")
    assert codex.code == 0 and "enabled_tools: key_check, env_names" in codex.text, codex.text
    assert "disabled_tools: env_names" in codex.text, codex.text
    for name, report in found.items():
        assert team_connected(name, "tracker", report), f"{name}:\n{report.text}"
        about = [line for line in report.text.splitlines() if "tracker" in line]
        assert not [line for line in about if any(w in line.lower() for w in WARNINGS)], report.text


VERDICT = ("claude-code", "gemini", "opencode", "qwen", "amp", "kilo", "factory", "qoder", "grok-cli")
"""The agents whose own CLI says offline whether a server connected (Codex, Copilot CLI and Auggie only
list theirs; Mistral Vibe, OpenHands and Kimi Code have no CLI command that does)."""
BROKEN = (
    '[servers.gone]\ncommand = ["kbkit-test-server-not-installed"]\n'
    + stdio_server("unset", var="NEVER_SET_TOKEN")
    + f'[servers.exits]\ncommand = [{json.dumps(sys.executable)}, "-c", "raise SystemExit(3)"]\n'
    + f'[servers.dialect]\nurl = "http://127.0.0.1:{TEAM_PORT}/mcp"\n'
)
"""A command not installed, a variable set nowhere, a server that exits at once, and a remote one
whose header each agent's file names in another agent's syntax (`another_agents_syntax`)."""
GOOD = ("kb", "tracker")
SERVERS = (*GOOD, "gone", "unset", "exits", "dialect")
FOREIGN = {"${{{var}}}": "${{env:{var}}}", "${{env:{var}}}": "${{{var}}}", "{{env:{var}}}": "${{{var}}}"}
"""An agent's own dialect -> another agent's, as a hand edit copied from another agent's file has it."""


def another_agents_syntax(root: Path, names: Iterable[str]) -> None:
    """The hand edit: each HTTP `dialect` entry gets the remote server's bearer, WIKI_TOKEN (set in
    the agents' environment), in another agent's variable syntax, which this agent sends as written."""
    for name in names:
        client = CLIENTS[name]
        if client.env_reference not in FOREIGN or client.format != "json":
            continue
        path = root / client.path
        data = json.loads(path.read_text(encoding="utf-8"))
        entry = data
        for key in (*client.root_key, "dialect"):
            entry = entry[key]
        if any(key in entry for key in ("url", "httpUrl", "serverUrl")):
            reference = FOREIGN[client.env_reference].format(var="WIKI_TOKEN")
            entry["headers"] = {"Authorization": f"Bearer {reference}"}
            path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def listed_connected(client: str, server: str, text: str) -> bool | None:
    """In a CLI's list of servers: whether `server`'s own line says connected (None: not listed)."""
    agent = AGENTS[client]
    marker = agent.team.replace("{server}", server) if agent.team else agent.connected
    line = next((line for line in text.splitlines() if re.match(rf"\W*{server}(?![\w-])", line)), None)
    if line is None:
        return None
    return marker in line and not any(word in line.lower() for word in ("disconnected", "not connected"))


def agent_verdict(client: str, root: Path, home: Path) -> tuple[dict[str, bool | None], str]:
    """What an agent's own CLI says of each server: connected or not (None: not listed), and its words.
    Asked again while a server that works was not reached (the CLI's few seconds, a loaded machine)."""
    agent = AGENTS[client]
    home.mkdir(parents=True)
    trust_for(root, home)
    env = agents.agent_env(home, WIKI_TOKEN=REMOTE_KEY, **agent.approve(home, root))
    if client == "qoder":  # what its approval prompt saves, for each server
        trusted = {
            "permissions": {"trustDirectories": [str(root)]},
            "mcp": {"enabledProjectMcpServers": SERVERS},
        }
        _write(home / ".qoder" / "settings.json", json.dumps(trusted))
    cli = command(agent)
    for server in SERVERS if agent.after else ():
        code, text = agents.run(
            [*cli, *(server if part == "kb" else part for part in agent.after)], cwd=root, env=env
        )
        assert code == 0, text
    lingers = [] if agent.stops else ["timeout", "--preserve-status", str(LINGER)]
    deadline = time.monotonic() + DEADLINE
    while True:
        said: dict[str, bool | None] = {}
        words = []
        if "kb" not in agent.check:  # one list names every server
            found = Report(
                *agents.run(with_team_peer([*lingers, *cli, *agent.check], home), cwd=root, env=env)
            )
            said = {server: listed_connected(client, server, found.text) for server in SERVERS}
            words.append(found.text)
        else:
            for server in SERVERS:
                argv = [*lingers, *cli, *(server if part == "kb" else part for part in agent.check)]
                found = Report(*agents.run(with_team_peer(argv, home), cwd=root, env=env))
                said[server] = team_connected(client, server, found)
                words.append(f"[{server}] {found.text}")
        if all(said[server] for server in GOOD) or time.monotonic() > deadline:
            return said, "\n".join(words)


def doctor_verdict(root: Path, home: Path, kbkit: list[str]) -> dict[tuple[str, str], bool]:
    """`kbkit doctor --launch --json`, run where the agents run (the same namespace, the remote peer
    beside it): for each (agent, server), whether the entry connected."""
    home.mkdir(parents=True)
    trust_for(root, home)
    argv = [*kbkit, "doctor", "--launch", "--json", "--root", str(root)]
    _, text = agents.run(with_team_peer(argv, home), cwd=root, env=agents.agent_env(home))
    rows = json.JSONDecoder().raw_decode(text[text.index('{\n  "entries"') :])[0]["entries"]
    return {(row["agent"], row["server"]): row["ok"] and not row["sign_in"] for row in rows}


@pytest.mark.agents
@pytest.mark.timeout(1800)  # nine CLIs, six servers each, on a loaded machine
def test_the_doctor_s_verdict_on_each_entry_is_its_agent_s_own(tmp_path: Path) -> None:
    kbkit = checkout_kbkit(tmp_path)
    keys = f"TRACKER_TOKEN={STDIO_KEY}\n"
    root = synced(tmp_path / "project", "local", stdio_server() + BROKEN, keys, names=VERDICT, kbkit=kbkit)
    another_agents_syntax(root, VERDICT)
    for name in VERDICT:
        command(AGENTS[name])
    agents.isolated()
    doctor = doctor_verdict(root, tmp_path / "home-doctor", kbkit)
    found: dict[str, tuple[dict[str, bool | None], str]] = {}
    with ThreadPoolExecutor(CONCURRENT) as pool:
        futures = {
            name: pool.submit(agent_verdict, name, root, tmp_path / f"home-{name}")
            for name in VERDICT
            if not AGENTS[name].alone
        }
        found = {name: future.result() for name, future in futures.items()}
    for name in VERDICT:
        if AGENTS[name].alone:
            found[name] = agent_verdict(name, root, tmp_path / f"home-{name}")
    print("\n".join(f"{name:<12} {said}" for name, (said, _) in found.items()))  # noqa: T201 - with -s
    differ = {
        f"{name} {server}: doctor {doctor.get((name, server))}, agent {said[server]}": text
        for name, (said, text) in found.items()
        for server in SERVERS
        if said[server] is None or doctor.get((name, server)) != said[server]
    }
    assert not differ, "\n".join(f"{key}\n{text}" for key, text in differ.items())
    assert {server for (_, server), ok in doctor.items() if ok} == set(GOOD)  # each broken kind is broken
