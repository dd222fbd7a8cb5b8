"""`kbkit run NAME`: start a team server (`[servers.NAME]`) the way an agent's entry asks for it.

An agent's own environment never read `.env.local`, so an entry whose server needs a variable runs
this launcher instead of the server: it reads the environment over `.env.local` (the environment
wins), substitutes each `${NAME}`, and then

- a stdio server: replaces itself (exec) with the command, in the project folder, with only the
  server's own `env` plus PATH, HOME and the locale. The agent's pipes reach the server untouched,
  and signals and the exit status are the server's own, as if the agent had started it.
- a remote server: relays stdio to its URL with its own headers (kbkit connect's relay), never
  kbkit's MCP_TOKEN.

Before that, one `[kbkit]` line on stderr says which variables are set, by name: the agent's MCP
log then shows why a server failed. A variable that is unset (or empty) is one line naming it and
an exit, never an empty value sent (docs/adr/0051).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kbkit.config import ENV_FILE, Settings, read_env_file
from kbkit.config.servers import TeamServer
from kbkit.config.variables import Unset, substitute, substitute_all
from kbkit.errors import ConfigError, EnvironmentProblem
from kbkit.server.toolfilter import ToolFilter

LOCALE_VARIABLES = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR")
BASE_VARIABLES = ("PATH", "HOME", *LOCALE_VARIABLES)
"""What a stdio team server gets from kbkit's environment besides its own `env`."""

Report = Callable[[str], None]


@dataclass(frozen=True)
class Launch:
    """A team server resolved for this machine: what runs (or is reached), and with what.

    Holds secret values: never printed; `describe()` names variables only."""

    name: str
    argv: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: Path | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    sources: Mapping[str, str] = field(default_factory=dict)
    """Each variable named -> where its value came from ("the environment" or ".env.local")."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """The values substituted: cut out of anything said about this server."""
    shown_url: str = ""
    """The URL as kbkit.toml writes it (`?key=${KEY}`): what every line says instead of `url`."""

    def describe(self) -> str:
        """The stderr line: the server, how it is started, and which variables are set (names only)."""
        how = f"starting `{self.argv[0]}`" if self.argv else f"relaying to {self.shown_url or self.url}"
        if not self.sources:
            return f"{self.name}: {how}; no variables"
        named = ", ".join(f"{var} (from {where})" for var, where in self.sources.items())
        return f"{self.name}: {how}; set: {named}"


def team_server(settings: Settings, name: str) -> TeamServer:
    server = settings.servers.get(name)
    if server is None:
        known = ", ".join(settings.servers) or "none"
        raise ConfigError(
            f"no team server named {name!r} in kbkit.toml (declared: {known})",
            fix=f"add [servers.{name}] to kbkit.toml, or run kbkit sync to refresh the agents' files",
        )
    return server


def resolve(settings: Settings, name: str, environ: Mapping[str, str] | None = None) -> Launch:
    """The server with every `${NAME}` substituted; ConfigError naming each unset variable."""
    server = team_server(settings, name)
    environ = os.environ if environ is None else environ
    from_file = read_env_file(settings.root)
    values = {**from_file, **environ}
    sources = {
        var: "the environment" if environ.get(var) else ENV_FILE
        for var in server.variables
        if values.get(var)
    }
    secrets = tuple(values[var] for var in sources)
    in_line = _in_line(server)
    for var in sources:  # a value a header, an argument or a variable cannot carry as it is
        forbidden = "\0\r\n" if var in in_line else "\0"  # a variable may hold lines (a PEM key)
        if any(ch in values[var] for ch in forbidden):
            raise ConfigError(
                f"team server {name!r}: the value of {var} holds a line break or a NUL byte, which "
                "cannot be sent as it is",
                fix=f"put {var} on one line in {ENV_FILE} (or in the environment)",
            )
    try:
        if server.remote:
            url = substitute(server.url, values)
            headers = substitute_all(server.headers, values)
            for header, value in headers.items():  # HTTP carries ASCII: refuse before the first request
                if not value.isascii() or not value.isprintable():
                    raise ConfigError(
                        f"team server {name!r}: header {header} holds characters HTTP cannot carry "
                        "(non-ASCII or control characters) once its variables are filled in",
                        fix=f"check the value its variables have in {ENV_FILE} (or the environment)",
                    )
            shown = server.url
            return Launch(name, url=url, headers=headers, sources=sources, secrets=secrets, shown_url=shown)
        argv = tuple(substitute(part, values) for part in server.command)
        env = {var: environ[var] for var in BASE_VARIABLES if var in environ}
        env.update(substitute_all(server.env, values))
        return Launch(name, argv=argv, env=env, cwd=settings.root, sources=sources, secrets=secrets)
    except Unset as exc:
        names = ", ".join(exc.names)
        lines = " and ".join(f"{var}=..." for var in exc.names)
        raise ConfigError(
            f"team server {name!r} needs {names}, which is not set (or empty) in the environment or "
            f"{settings.root / ENV_FILE}",
            fix=f"add {lines} to {ENV_FILE} (never to kbkit.toml), then restart the agent",
        ) from None


def _in_line(server: TeamServer) -> set[str]:
    """The variables used in the command line, the URL or a header: one line each, no NUL."""
    from kbkit.config.variables import all_references

    return set(all_references([*server.command, server.url, *server.headers.values()]))


def executable(launch: Launch) -> str:
    """The command's path as the server's own PATH finds it (relative paths: from the project)."""
    command = launch.argv[0]
    if os.sep in command:
        path = Path(command) if Path(command).is_absolute() else (launch.cwd or Path.cwd()) / command
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    else:
        found = shutil.which(command, path=launch.env.get("PATH", os.defpath))
        if found:
            return found
    raise EnvironmentProblem(
        f"team server {launch.name!r}: command not found: {command}",
        fix="install it on this machine (or put it on PATH), or fix [servers."
        f"{launch.name}] command in kbkit.toml",
    )


def allowed(settings: Settings, name: str) -> None:
    """ConfigError unless the server may run: the member's own, trusted, or its trusted values
    still hold (they are what `settings` holds then: docs/adr/0063)."""
    team_server(settings, name)
    waiting = settings.waiting(f"servers.{name}")
    if waiting is not None and not waiting.fallback:
        raise ConfigError(waiting.line(), fix="then restart the agent")


def tool_filter(settings: Settings, name: str) -> ToolFilter | None:
    """The filter of `[servers.NAME] tools` and `exclude_tools`; None when it offers every tool."""
    server = team_server(settings, name)
    return ToolFilter(name, server.tools, server.exclude_tools) if server.filtered else None


def run(settings: Settings, name: str, report: Report, stdio: tuple[BinaryIO, BinaryIO]) -> int:
    """The `kbkit run` process. A stdio server replaces this process and never returns (a filtered
    one is proxied between `stdio`, the agent's pipes, until it exits); a remote one is relayed until
    stdin closes. Problems before the start raise (one line, an exit code)."""
    allowed(settings, name)
    waiting = settings.waiting(f"servers.{name}")
    if waiting is not None:  # its trusted values run meanwhile: the agent's MCP log says why
        report(f"{name}: {waiting.line()}")
    launch = resolve(settings, name)
    if launch.url:
        from kbkit.server.relay import Token
        from kbkit.server.relay import run as relay

        report(launch.describe())
        token = Token(
            "headers" if launch.headers else None,
            "the environment or " + str(settings.root / ENV_FILE),
            ", ".join(launch.sources),
            headers=tuple(launch.headers.items()),
            shown_url=launch.shown_url,
            secrets=launch.secrets,
        )
        return relay(launch.url, settings.root, report, token=token, tools=tool_filter(settings, name))
    path = executable(launch)
    report(launch.describe())
    tools = tool_filter(settings, name)
    if tools is not None:  # kbkit stays between the agent and the server to filter its tools
        from kbkit.server.stdio_proxy import proxy

        return proxy([path, *launch.argv[1:]], launch.env, launch.cwd or settings.root, tools, stdio)
    os.chdir(launch.cwd or settings.root)
    os.execve(path, list(launch.argv), dict(launch.env))
    raise AssertionError("unreachable: exec returned")  # pragma: no cover
