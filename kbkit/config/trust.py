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

The same rule holds for the settings of kbkit.toml that widen who may call `kbkit serve --http` or
what a caller reaches (docs/adr/0052): the OAuth issuer, audience, members, required scopes and
memory scope, `[server.http] memory` and `tokens_file`. `kbkit trust` records their values; a
later kbkit.toml that widens them (a new issuer or subject, a dropped required scope, memory on)
waits for `kbkit trust` again, while a change that only narrows applies at once.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _document(path: Path) -> dict[str, Any]:
    text = read_text_file(path, fix=f"then run {TRUST_COMMAND} again")
    if text is None:
        return {"projects": {}}
    try:
        data = json.loads(text)
    except ValueError:
        raise ConfigError(f"{path} is not JSON", fix=f"delete it and run {TRUST_COMMAND} again") from None
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict) or not isinstance(data.get("auth", {}), dict):
        raise ConfigError(f"{path} holds no projects table", fix=f"delete it and run {TRUST_COMMAND} again")
    return dict(data)


def _save(path: Path, document: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


def _records(path: Path) -> dict[str, str]:
    return {str(key): str(value) for key, value in _document(path)["projects"].items()}


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
    document = _document(path)
    document["projects"][str(settings.root.resolve())] = command_hash(state.command)
    _save(path, document)
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
        document = _document(path)
        for name in waiting:
            key, digest, _, _ = _server_record(settings, name)
            document["projects"][key] = digest
        _save(path, document)
    return before


AUTH_KEYS = (
    "server.http.oauth.issuer",
    "server.http.oauth.audience",
    "server.http.oauth.scopes",
    "server.http.oauth.memory_scope",
    "server.http.oauth.allowed_subjects",
    "server.http.oauth.claims",
    "server.http.memory",
    "server.http.tokens_file",
)
"""The settings that decide who may call `kbkit serve --http` and what a caller reaches."""


def _value(config: Any, dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        node = getattr(node, part)
    if isinstance(node, tuple):
        return sorted(node)
    if isinstance(node, Mapping):
        return {str(k): sorted(v) for k, v in node.items()}
    return node


def auth_settings(settings: Settings) -> dict[str, Any]:
    """The auth settings that come from kbkit.toml (the repository), by dotted key."""
    from kbkit.config.model import KbkitConfig

    defaults = KbkitConfig()
    return {
        key: _value(settings.config, key)
        for key in AUTH_KEYS
        if settings.origin(key) == CONFIG_FILE and _value(settings.config, key) != _value(defaults, key)
    }


def widened(current: Mapping[str, Any], trusted: Mapping[str, Any]) -> list[str]:
    """What `current` (kbkit.toml's auth settings) allows beyond `trusted`, one phrase per key."""
    found = []
    for key in AUTH_KEYS:
        name = key.removeprefix("server.http.")
        now, before = current.get(key), trusted.get(key)
        if key.endswith(".scopes"):
            dropped = sorted(set(before or []) - set(now or []))
            if dropped:
                found.append(f"{name} no longer requires {' '.join(dropped)}")
        elif key.endswith(".allowed_subjects"):
            added = sorted(set(now or []) - set(before or []))
            if added:
                found.append(f"{name} adds {', '.join(added)}")
        elif key.endswith(".claims"):
            for claim, values in (now or {}).items():
                added = sorted(set(values) - set((before or {}).get(claim, [])))
                if added:
                    found.append(f"{name} {claim} adds {', '.join(added)}")
        elif key.endswith(".memory"):
            if now and not before:
                found.append(f"{name} = true")
        elif now is not None and now != before:
            found.append(f"{name} = {json.dumps(now)}")
    return found


@dataclass(frozen=True)
class AuthTrust:
    """kbkit.toml's auth settings against what this machine's operator allowed."""

    current: dict[str, Any]
    widened: list[str]
    """Empty when kbkit.toml allows nothing beyond what was trusted (or sets nothing)."""

    def waiting(self) -> str:
        return (
            f"{CONFIG_FILE} widens who may call or what they reach beyond what `{TRUST_COMMAND}` allowed "
            f"on this machine ({'; '.join(self.widened)})"
        )

    def fix(self) -> str:
        return f"review that change, then run `{TRUST_COMMAND}` (or set these in kbkit.local.toml, your own)"


def auth_trust(settings: Settings, environ: Mapping[str, str] | None = None) -> AuthTrust:
    current = auth_settings(settings)
    if not current:
        return AuthTrust(current, [])
    recorded = _document(trust_path(environ)).get("auth", {}).get(str(settings.root.resolve()), {})
    return AuthTrust(current, widened(current, recorded if isinstance(recorded, dict) else {}))


def trust_auth(settings: Settings, environ: Mapping[str, str] | None = None) -> AuthTrust:
    """Record kbkit.toml's current auth settings as allowed on this machine."""
    state = auth_trust(settings, environ)
    if not state.widened and not state.current:
        return state
    path = trust_path(environ)
    document = _document(path)
    document.setdefault("auth", {})[str(settings.root.resolve())] = state.current
    _save(path, document)
    return AuthTrust(state.current, [])
