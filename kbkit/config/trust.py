"""Trust for a command the repository asks kbkit to run: `[memory] command` in kbkit.toml, and each
team server (`[servers.<name>]`) that kbkit starts or relays to.

kbkit.toml is tracked: whoever can change the repository can change that command, and every agent
start would run it inside `kbkit serve`, behind an approval prompt that shows only `kbkit serve`.
So a command from kbkit.toml runs only once the user allowed that exact command for this project
on this machine (`kbkit trust`). The record lives outside the repository, in the user's state
folder (`$XDG_STATE_HOME/kbkit/trust.json`, else `~/.local/state/kbkit/trust.json`), keyed by the
project's absolute path and holding a hash of the command: a changed command is no longer
trusted. A command from kbkit.local.toml is the user's own and needs no trust (docs/adr/0030).

A team server is trusted as a whole (its command, url, env and headers), under the key
`<root>#servers.<name>`: a changed URL could send the headers' secrets elsewhere, a changed env
could load code into the server (docs/adr/0051).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kbkit.config.load import CONFIG_FILE, Settings
from kbkit.errors import ConfigError
from kbkit.fsutil import atomic_write_text, read_text_file

TRUST_FILE = "trust.json"
TRUST_COMMAND = "kbkit trust"


@dataclass(frozen=True)
class CommandTrust:
    """The trust state of the project's `[memory] command`."""

    command: tuple[str, ...]
    tracked: bool
    """It comes from kbkit.toml (the repository), not from kbkit.local.toml (the user's own)."""
    trusted: bool
    changed: bool
    """It was trusted before in another form: the repository changed it since."""
    what: str = "[memory] command"

    @property
    def allowed(self) -> bool:
        return not self.tracked or self.trusted

    def waiting(self) -> str:
        """Why the command does not run, and how to let it (for the boot line and doctor)."""
        shown = " ".join(self.command)
        since = "changed since you trusted it" if self.changed else "not trusted on this machine yet"
        return (
            f"{self.what} `{shown}` comes from {CONFIG_FILE} and is {since}; review it, then run "
            f"`{TRUST_COMMAND}` to allow it (or move it to kbkit.local.toml)"
        )


def trust_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME")
    base = Path(state) if state else Path(env.get("HOME") or Path.home()) / ".local" / "state"
    return base / "kbkit" / TRUST_FILE


def command_hash(command: tuple[str, ...]) -> str:
    return hashlib.sha256(json.dumps(list(command)).encode()).hexdigest()


def _records(path: Path) -> dict[str, str]:
    text = read_text_file(path, fix=f"then run {TRUST_COMMAND} again")
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        raise ConfigError(f"{path} is not JSON", fix=f"delete it and run {TRUST_COMMAND} again") from None
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        raise ConfigError(f"{path} holds no projects table", fix=f"delete it and run {TRUST_COMMAND} again")
    return {str(key): str(value) for key, value in projects.items()}


def command_trust(settings: Settings, environ: Mapping[str, str] | None = None) -> CommandTrust | None:
    """The trust state of `[memory] command` (None when there is no command)."""
    command = tuple(settings.memory.command)
    if not command:
        return None
    tracked = settings.origin("memory.command") == CONFIG_FILE
    recorded = _records(trust_path(environ)).get(str(settings.root.resolve())) if tracked else None
    trusted = recorded == command_hash(command)
    return CommandTrust(command, tracked, trusted, recorded is not None and not trusted)


def trust_command(settings: Settings, environ: Mapping[str, str] | None = None) -> CommandTrust | None:
    """Record the project's current `[memory] command` as allowed on this machine."""
    state = command_trust(settings, environ)
    if state is None or not state.tracked or state.trusted:
        return state
    path = trust_path(environ)
    records = _records(path)
    records[str(settings.root.resolve())] = command_hash(state.command)
    atomic_write_text(path, json.dumps({"projects": records}, indent=2, sort_keys=True) + "\n")
    return CommandTrust(state.command, True, True, False)


SERVER_KEYS = ("command", "url", "env", "headers")
"""What a team server's trust covers: what runs, where it connects, and what it is given."""


def _server_record(settings: Settings, name: str) -> tuple[str, str, tuple[str, ...], bool]:
    server = settings.servers[name]
    shown = tuple(server.command) or (server.url,)
    tracked = any(
        settings.origin(f"servers.{name}.{key}") == CONFIG_FILE
        for key in SERVER_KEYS
        if key in server.model_fields_set
    )
    data = {key: getattr(server, key) for key in SERVER_KEYS}
    digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=list).encode()).hexdigest()
    return f"{settings.root.resolve()}#servers.{name}", digest, shown, tracked


def server_trust(settings: Settings, name: str, environ: Mapping[str, str] | None = None) -> CommandTrust:
    """The trust state of team server `name`."""
    key, digest, shown, tracked = _server_record(settings, name)
    recorded = _records(trust_path(environ)).get(key) if tracked else None
    trusted = recorded == digest
    return CommandTrust(shown, tracked, trusted, recorded is not None and not trusted, f"[servers.{name}]")


def trust_servers(settings: Settings, environ: Mapping[str, str] | None = None) -> dict[str, CommandTrust]:
    """Record every team server from kbkit.toml as allowed; each one's state before."""
    before = {name: server_trust(settings, name, environ) for name in settings.servers}
    waiting = [name for name, state in before.items() if state.tracked and not state.trusted]
    if waiting:
        path = trust_path(environ)
        records = _records(path)
        for name in waiting:
            key, digest, _, _ = _server_record(settings, name)
            records[key] = digest
        atomic_write_text(path, json.dumps({"projects": records}, indent=2, sort_keys=True) + "\n")
    return before
