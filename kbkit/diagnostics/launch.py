"""Every entry kbkit wrote on this machine, started the way its agent starts it (`kbkit doctor
--launch`, and the test suite's launch-as-agent tests: one engine).

For each client file sync wrote (`.kbkit/sync-state.json`) and each server entry in it (kb and the
team's servers): the file parsed with its format's parser, the entry read in its agent's shape and
env-reference dialect, references expanded from an agent's environment (not the shell's: an agent
started from a dock has the system PATH and never read `.env.local`), started in the agent's
working folder, then the handshake and `tools/list`, within a bound. Entries that come to the same
launch (several agents sharing one file, or writing the same entry) start once.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
import tomllib
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kbkit.catalog.clients import CLIENTS
from kbkit.catalog.clients import Client as ClientRow
from kbkit.config import Settings
from kbkit.sync import jsonc

if TYPE_CHECKING:
    from mcp import Client

AGENT_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
"""The PATH an agent started from a desktop (not a shell) has: the system's, no virtualenv."""
PASSED_THROUGH = ("HOME", "USER", "LOGNAME", "LANG", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")
"""What such an agent's environment holds besides PATH: its session's, none of the shell's additions."""
ENTRY_SECONDS = 30.0
"""The longest one entry may take to answer the handshake and list its tools (or its server's own
startup_timeout, when shorter)."""
TOTAL_SECONDS = 180.0
"""The longest `--launch` takes in all; entries not reached by then are reported as such."""
CONCURRENT = 4
KBKIT_ERROR = "kbkit: error: "

PARSERS: dict[str, Callable[[str], Any]] = {
    "json": json.loads,
    "jsonc": jsonc.loads,
    "toml": tomllib.loads,
    "toml-tables": tomllib.loads,
}
_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
DIALECTS: dict[str | None, re.Pattern[str] | None] = {
    "${{{var}}}": re.compile(r"\$\{" + _NAME + r"(?::-([^}]*))?\}"),  # Claude Code, Gemini, Kiro
    "${{env:{var}}}": re.compile(r"\$\{env:" + _NAME + r"\}"),  # Cursor, VS Code, Windsurf
    "{{env:{var}}}": re.compile(r"\{env:" + _NAME + r"\}"),  # opencode
    "names": None,  # Codex: variables are named in their own keys (env_vars, bearer_token_env_var)
    None: None,  # no way to refer to a variable: every string is literal
}
"""The client table's dialect column -> what the agent substitutes. An unset variable stays as
written (a default, `${VAR:-x}`, is used where the dialect has one), as agents leave it."""


def agent_environment(environ: Mapping[str, str] | None = None, **variables: str) -> dict[str, str]:
    """The environment an agent started outside a shell runs in, on this machine."""
    env = os.environ if environ is None else environ
    return {"PATH": AGENT_PATH, **{k: env[k] for k in PASSED_THROUGH if k in env}, **variables}


def expand(value: Any, dialect: str | None, agent_env: Mapping[str, str]) -> Any:
    """Every string of an entry, with the dialect's references replaced from the agent's environment."""
    pattern = DIALECTS[dialect]
    if isinstance(value, dict):
        return {key: expand(item, dialect, agent_env) for key, item in value.items()}
    if isinstance(value, list):
        return [expand(item, dialect, agent_env) for item in value]
    if isinstance(value, str) and pattern is not None:

        def substitute(match: re.Match[str]) -> str:
            default = match.group(2) if match.lastindex and match.lastindex >= 2 else None
            return agent_env.get(match.group(1), default if default is not None else match.group(0))

        return pattern.sub(substitute, value)
    return value


def unexpanded(value: Any, dialect: str | None) -> list[str]:
    """The variables an expanded entry still names: the agent's environment does not set them."""
    pattern = DIALECTS[dialect]
    if pattern is None:
        return []
    text = json.dumps(value)
    return list(dict.fromkeys(match.group(1) for match in pattern.finditer(text)))


@dataclass
class Launch:
    """What the agent starts: a process (command, args, env, cwd) or an HTTP connection."""

    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    unset: list[str] = field(default_factory=list)
    """Variables the entry names that the agent's environment does not set."""
    foreign: list[str] = field(default_factory=list)
    """References in another agent's syntax, which this agent does not expand."""


def _stdio_or_http(entry: dict[str, Any], url_key: str) -> Launch:
    if url_key in entry:
        return Launch(url=entry[url_key], headers=dict(entry.get("headers", {})))
    return Launch(entry["command"], list(entry.get("args", [])), dict(entry.get("env", {})), entry.get("cwd"))


def _opencode(entry: dict[str, Any], agent_env: Mapping[str, str]) -> Launch:
    if entry["type"] == "remote":
        return Launch(url=entry["url"], headers=dict(entry.get("headers", {})))
    command, *args = entry["command"]
    return Launch(command, args, dict(entry.get("environment", {})))


def _codex(entry: dict[str, Any], agent_env: Mapping[str, str]) -> Launch:
    unset = [var for var in entry.get("env_vars", []) if var not in agent_env]
    if "url" in entry:
        headers = dict(entry.get("http_headers", {}))
        named = {h: var for h, var in entry.get("env_http_headers", {}).items()}
        if "bearer_token_env_var" in entry:
            named["Authorization"] = entry["bearer_token_env_var"]
        unset += [var for var in named.values() if var not in agent_env]
        headers |= {h: agent_env.get(var, "") for h, var in named.items()}
        if "bearer_token_env_var" in entry:
            headers["Authorization"] = f"Bearer {headers['Authorization']}"
        return Launch(url=entry["url"], headers=headers, unset=unset)
    env = dict(entry.get("env", {}))
    env |= {name: agent_env[name] for name in entry.get("env_vars", []) if name in agent_env}
    return Launch(entry["command"], list(entry.get("args", [])), env, entry.get("cwd"), unset=unset)


def _goose(entry: dict[str, Any], agent_env: Mapping[str, str]) -> Launch:
    """Goose: `type: stdio` runs `cmd` with `args` and `envs`; `type: streamable_http` reaches `uri`."""
    if entry["type"] == "streamable_http":
        return Launch(url=entry["uri"], headers=dict(entry.get("headers", {})))
    return Launch(entry["cmd"], list(entry.get("args", [])), dict(entry.get("envs", {})))


def _grok(entry: dict[str, Any], agent_env: Mapping[str, str]) -> Launch:
    """Grok CLI (vibe-kit): an entry without `transport` is a stdio server (dist/mcp/client.js)."""
    transport = entry.get("transport") or {"type": "stdio", **entry}
    return Launch(transport["command"], list(transport.get("args", [])), dict(transport.get("env", {})))


def _vibe(entry: dict[str, Any], agent_env: Mapping[str, str]) -> Launch:
    """Mistral Vibe (vibe/core/config/models.py MCPStdio.argv): `command`, a list or a shell-split
    string, then `args`."""
    command = entry["command"] if isinstance(entry["command"], list) else shlex.split(entry["command"])
    return Launch(
        command[0], [*command[1:], *entry.get("args", [])], dict(entry.get("env", {})), entry.get("cwd")
    )


READERS: dict[str, Callable[[dict[str, Any], Mapping[str, str]], Launch]] = {
    "typed": lambda entry, _: _stdio_or_http(entry, "url"),  # Claude Code, VS Code (a "type" key)
    "plain": lambda entry, _: _stdio_or_http(entry, "url"),
    "server-url": lambda entry, _: _stdio_or_http(entry, "serverUrl"),  # Devin, Windsurf
    "roo": lambda entry, _: _stdio_or_http(entry, "url"),  # Roo Code (`type: streamable-http`)
    "gemini": lambda entry, _: _stdio_or_http(entry, "httpUrl"),  # Gemini CLI, Qwen Code
    "opencode": _opencode,
    "codex": _codex,
    "goose": _goose,
    "grok": _grok,
    "vibe": _vibe,
}
"""The client table's template column (the entry's shape) -> how its agent reads an entry."""


def read_entry(
    root: Path, client: ClientRow, server_name: str = "kb", path: str | None = None
) -> dict[str, Any]:
    """The entry of `server_name` in the client's file, parsed as its agent parses it."""
    path = path or (client.path if server_name == "kb" else client.path_for(server_name))
    data = PARSERS[client.format]((root / path).read_text(encoding="utf-8"))
    for key in client.root_key:
        data = data[key]
    if client.format == "toml-tables":  # Mistral Vibe: the table whose `name` is the server's
        return dict(next(item for item in data if item["name"] == server_name))
    return dict(data[server_name])


def launch_of(
    root: Path, client: ClientRow, agent_env: Mapping[str, str], server: str = "kb", path: str | None = None
) -> Launch:
    raw = read_entry(root, client, server, path)
    entry = expand(raw, client.env_reference, agent_env)
    launch = READERS[client.template](entry, agent_env)
    launch.unset = list(dict.fromkeys([*launch.unset, *unexpanded(entry, client.env_reference)]))
    launch.foreign = foreign_references(raw, client.env_reference)
    return launch


def foreign_references(value: Any, dialect: str | None) -> list[str]:
    """References written in another agent's syntax (`${env:TOKEN}` where `${TOKEN}` is meant): this
    agent passes them on as they are."""
    text = json.dumps(value)
    found = []
    for other, pattern in DIALECTS.items():
        if other == dialect or pattern is None:
            continue
        found += [match.group(0) for match in pattern.finditer(text)]
    own = DIALECTS.get(dialect)
    mine = [match.group(0) for match in own.finditer(text)] if own is not None else []
    unique = [ref for ref in dict.fromkeys(found) if not any(ref in ours for ours in mine)]
    return [ref for ref in unique if not any(ref != other and ref in other for other in unique)]


def agent_folder(root: Path, client: ClientRow) -> str:
    """Where the agent starts its servers: the project, or anywhere (`/`) for a user-level config."""
    return "/" if client.user_level else str(root)


@dataclass
class Result:
    ok: bool
    detail: str
    """What was found: the tool count, or what failed."""
    seconds: float
    transport: str
    fix: str | None = None
    sign_in: bool = False
    """The server wants the agent's own sign-in (OAuth in a browser): not broken."""
    same_as: str | None = None
    """The agent whose identical entry was started in this one's place."""


Check = Callable[["Client"], Awaitable[str]]
"""What is asked of a launched server once it answered the handshake."""


async def list_tools(client: Client) -> str:
    tools = (await client.list_tools()).tools
    return f"{len(tools)} tools"


async def run_launch(
    launch: Launch,
    cwd: str,
    agent_env: Mapping[str, str],
    log: Path,
    check: Check = list_tools,
    bound: float = ENTRY_SECONDS,
) -> Result:
    """Start one entry, do the handshake and `check`, stop it: one result, never an exception."""
    import anyio
    import httpx2
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    started = time.monotonic()
    transport = "http" if launch.url else "stdio"

    def result(ok: bool, detail: str, fix: str | None = None, sign_in: bool = False) -> Result:
        return Result(ok, detail, time.monotonic() - started, transport, fix, sign_in)

    statuses: list[httpx2.Response] = []
    try:
        with anyio.fail_after(bound):
            if launch.url is not None:

                async def seen(response: httpx2.Response) -> None:
                    statuses.append(response)

                hooks = {"response": [seen]}
                async with (
                    httpx2.AsyncClient(headers=launch.headers, timeout=bound, event_hooks=hooks) as http,
                    Client(
                        streamable_http_client(launch.url, http_client=http), mode="legacy", cache=None
                    ) as c,
                ):
                    return result(True, await check(c))
            params = StdioServerParameters(
                command=launch.command or "",
                args=launch.args,
                # What reaches the process: the SDK's safe list, the agent's own (PATH, HOME, its
                # session's XDG folders), the entry's env. Never the shell's MCP_TOKEN or VIRTUAL_ENV.
                env={
                    **{k: v for k, v in agent_env.items() if k == "PATH" or k in PASSED_THROUGH},
                    **launch.env,
                },
                cwd=launch.cwd or cwd,
            )
            with open(log, "w", encoding="utf-8") as errlog:
                async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as c:
                    detail = await check(c)
            if "Traceback" in log.read_text(encoding="utf-8", errors="replace"):
                return result(False, f"a traceback on stderr: {_last_line(log)}", "see the server's stderr")
            return result(True, detail)
    except TimeoutError:
        return result(
            False,
            f"no answer to the handshake and tools/list within {bound:.0f} s",
            "start it by hand to see what it waits for; raise its startup_timeout if it is only slow",
        )
    except FileNotFoundError:
        return result(
            False,
            f"command not found: {launch.command} (the agent's PATH: {agent_env.get('PATH', '')})",
            "write its absolute path (rerun `kbkit sync` from the environment kbkit is installed in)",
        )
    except Exception as exc:  # a launch that fails is a finding for that entry
        failed = next((r for r in statuses if r.status_code >= 400), None)
        if failed is not None and failed.status_code == 401:
            if "www-authenticate" in failed.headers and not launch.headers:
                return result(True, "wants the agent's own sign-in (OAuth)", sign_in=True)
            return result(
                False, "the server refused the credentials sent (HTTP 401)", "check the token it names"
            )
        if failed is not None:
            return result(False, f"the server answered HTTP {failed.status_code}", "check the URL")
        stderr = _last_line(log) if launch.url is None else ""
        if stderr.startswith(
            KBKIT_ERROR
        ):  # kbkit's own one line (`kbkit run`, `kbkit connect`): what and fix
            return result(False, stderr.removeprefix(KBKIT_ERROR))
        words = f"{type(exc).__name__}: {exc}".strip()
        return result(
            False, f"did not answer the handshake ({stderr or words})", "run the entry's command by hand"
        )


def _last_line(log: Path) -> str:
    if not log.exists():
        return ""
    lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


K = TypeVar("K", bound=Hashable)


async def start_once(
    launches: Mapping[K, tuple[Launch, str]],
    start: Callable[[K], Awaitable[Result]],
    into: dict[K, Result],
    *,
    concurrent: int = CONCURRENT,
    label: Callable[[K], str] = str,
) -> None:
    """Run `start` for each distinct launch (command, arguments, environment and folder; or URL and
    headers), `concurrent` at a time, into `into`: entries that come to the same launch share its
    result, `same_as` naming the one started. Entries not reached (the caller's time ran out, which
    cancels this) are left out."""
    import anyio

    first_of: dict[str, K] = {}
    for key, (launch, cwd) in launches.items():
        first_of.setdefault(json.dumps([launch.__dict__, cwd], sort_keys=True), key)
    started: dict[K, Result] = {}
    limiter = anyio.CapacityLimiter(concurrent)

    async def one(key: K) -> None:
        async with limiter:
            started[key] = await start(key)

    try:
        async with anyio.create_task_group() as group:
            for key in dict.fromkeys(first_of.values()):
                group.start_soon(one, key)
    finally:
        for key, (launch, cwd) in launches.items():
            first = first_of[json.dumps([launch.__dict__, cwd], sort_keys=True)]
            if first in started:
                into[key] = started[first] if first == key else replace(started[first], same_as=label(first))


@dataclass(frozen=True)
class Entry:
    """One server entry in one client's file, as sync recorded it."""

    client: str
    server: str
    path: str


def written_entries(settings: Settings) -> list[Entry]:
    """Every entry kbkit wrote on this machine, from the sync state (pre-approvals are not entries)."""
    from kbkit.sync.planner import STATE_FILE
    from kbkit.sync.servers import parse_owner
    from kbkit.sync.state import load_state

    found = []
    for owner, owned in load_state(settings.state_dir / STATE_FILE).items():
        team = parse_owner(owner)
        client, server = team if team is not None else (owner, settings.server_name)
        if client in CLIENTS and not owned.items and not CLIENTS[client].user_level:
            found.append(Entry(client, server, owned.path))
    return found


async def launch_all(
    settings: Settings,
    entries: list[Entry],
    agent_env: Mapping[str, str],
    logs: Path,
    check: Check = list_tools,
) -> dict[Entry, Result]:
    """Start each entry as its agent would, at most CONCURRENT at once and TOTAL_SECONDS in all;
    entries that come to the same launch share one start."""
    import anyio

    logs.mkdir(parents=True, exist_ok=True)
    root = settings.root
    results: dict[Entry, Result] = {}
    launches: dict[Entry, tuple[Launch, str]] = {}
    for entry in entries:
        client = CLIENTS[entry.client]
        try:
            launch = launch_of(root, client, agent_env, entry.server, entry.path)
        except (KeyError, ValueError, OSError, StopIteration) as exc:
            fix = "run `kbkit sync` (`--force` if the entry was edited by hand)"
            results[entry] = Result(
                False, f"the entry cannot be read ({type(exc).__name__}: {exc})", 0, "-", fix
            )
            continue
        launches[entry] = launch, launch.cwd or agent_folder(root, client)

    async def start(entry: Entry) -> Result:
        launch, cwd = launches[entry]
        server = settings.servers.get(entry.server)
        bound = min(ENTRY_SECONDS, server.startup_timeout) if server is not None else ENTRY_SECONDS
        log = logs / f"{entry.client}.{entry.server}.log"
        found = await run_launch(launch, cwd, agent_env, log, check, bound)
        if launch.foreign and not found.ok:
            return replace(
                found,
                detail=f"{', '.join(launch.foreign)} is another agent's variable syntax: "
                f"{entry.client} passes it on as written ({found.detail})",
                fix="run `kbkit sync` (`--force` after a hand edit): each agent gets its own syntax",
            )
        if launch.unset and not found.ok:
            names = ", ".join(launch.unset)
            return replace(
                found,
                detail=f"{names} not set in the agent's environment ({found.detail})",
                fix="agents never read .env.local: let kbkit run the server (`kbkit sync`), or export "
                f"{names} where the agent starts",
            )
        return found

    with anyio.move_on_after(TOTAL_SECONDS):
        await start_once(launches, start, results, label=lambda entry: entry.client)
    for entry in launches:
        results.setdefault(entry, Result(False, f"not reached within {TOTAL_SECONDS:.0f} s in all", 0, "-"))
    return {entry: results[entry] for entry in entries}


def grid(results: Mapping[Entry, Result]) -> list[str]:
    """Agents down, servers across: each cell ok with the tool count and start time, or FAIL."""
    servers = list(dict.fromkeys(entry.server for entry in results))
    clients = list(dict.fromkeys(entry.client for entry in results))
    cells = {(e.client, e.server): r for e, r in results.items()}
    width = max([len(name) for name in clients] + [6])

    def cell(result: Result | None) -> str:
        if result is None:
            return "-"
        if result.sign_in:
            return "sign-in"
        if not result.ok:
            return "FAIL"
        return f"ok {result.detail.split(' (')[0]} {result.seconds:.1f}s"

    rows = [f"{'agent':<{width}}  " + "  ".join(f"{server:<22}" for server in servers)]
    for client in clients:
        row = "  ".join(f"{cell(cells.get((client, server))):<22}" for server in servers)
        rows.append(f"{client:<{width}}  {row}")
    return [row.rstrip() for row in rows]
