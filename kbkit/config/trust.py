"""The trust rule, in one place: what a commit changes waits for the member's `kbkit trust`.

kbkit.toml, skills-lock.json, a kbkit.local.toml that git tracks, and the repository scripts their
commands name are team input: anyone who can commit changes them, and every agent start acts on
them. Each setting through which a change could send a member's secret somewhere, run something
on the member's machine, widen who may call a server or what it serves, or pre-approve a tool
belongs to a *part* (docs/adr/0063):

| part | what it holds |
| --- | --- |
| `sync.remote_url` | where `kbkit connect` sends the member's token |
| `memory` | the memory service's url, bank, command, credential and env, and the scripts it runs |
| `servers.<name>` | a team server's command, url, env, headers, pre-approved tools, scripts |
| `kb.path` | a kb folder outside the project (anything the account can read would be served) |
| `search.model` | the embedding model a tracked file names, and what its folder holds (docs/adr/0076) |
| `server.http` | bind address, allowed hosts and origins, who may sign in (`AUTH_KEYS`) |
| `restricted` | who may read each restricted folder of the kb over HTTP (kbkit/config/restricted.py) |
| `skills` | the sources skills-lock.json fetches from (kbkit/skills/trust.py) |

`kbkit trust` records the values of each part, by project, outside the repository
(`$XDG_STATE_HOME/kbkit/trust.json`, else `~/.local/state/kbkit/trust.json`, mode 0600). A part
whose values differ from the record waits: its last trusted values stay in use where they still
hold, else it is off, and one line names it and the command to review it. A change that only
narrows (fewer pre-approved tools, fewer sources, a folder restricted or a reader removed) applies
at once. A part that no tracked file
sets is the member's own and needs nothing. `load_settings` applies this to every `Settings` it
returns, so no command can act on a value the member has not allowed.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbkit.config.repo import fingerprint, folder_digest
from kbkit.config.restricted import narrowest, narrows
from kbkit.config.settings import CONFIG_FILE, LOCAL_CONFIG_FILE, TRUST_COMMAND, Pending, Settings
from kbkit.errors import ConfigError
from kbkit.fsutil import atomic_write_text, read_text_file

TRUST_FILE = "trust.json"
__all__ = ["TRUST_COMMAND", "Part", "allow", "apply", "config_parts", "judge", "recorded", "trust_path"]


@dataclass(frozen=True)
class Part:
    """One guarded part of the tracked input, as it is now."""

    key: str
    title: str
    values: dict[str, Any]
    """JSON values, never a secret: variable names and `${NAME}` references only."""
    tracked: bool = True
    source: str = CONFIG_FILE
    subsets: tuple[str, ...] = ()
    """Keys holding lists that may shrink without new trust (a narrowing)."""
    root: Path = field(default=Path("."), compare=False)
    narrowing: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] | None = field(
        default=None, compare=False
    )
    """For a part whose narrowing is not a shrinking list: (now, trusted) -> only narrows."""


def trust_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME")
    base = Path(state) if state else Path(env.get("HOME") or Path.home()) / ".local" / "state"
    return base / "kbkit" / TRUST_FILE


def _document(path: Path) -> dict[str, Any]:
    text = read_text_file(path, fix=f"then run {TRUST_COMMAND} again")
    if text is None:
        return {"trusted": {}, "auth": {}}
    try:
        data = json.loads(text)
    except ValueError:
        raise ConfigError(f"{path} is not JSON", fix=f"delete it and run {TRUST_COMMAND} again") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(k, {}), dict) for k in ("trusted", "auth")):
        raise ConfigError(f"{path} holds no trusted table", fix=f"delete it and run {TRUST_COMMAND} again")
    data.setdefault("trusted", {})
    data.setdefault("auth", {})
    return data


def _save(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write_text(path, json.dumps(document, indent=2, sort_keys=True) + "\n", mode=0o600)


def recorded(root: Path, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The parts of the project at `root` this member trusted, by key, with their values."""
    found = _document(trust_path(environ))["trusted"].get(str(root.resolve()), {})
    return found if isinstance(found, dict) else {}


def allow(root: Path, parts: Iterable[Part], environ: Mapping[str, str] | None = None) -> None:
    """Record `parts` as trusted for the project at `root`, as they are now."""
    path = trust_path(environ)
    document = _document(path)
    project = document["trusted"].setdefault(str(root.resolve()), {})
    for part in parts:
        project[part.key] = part.values
    _save(path, document)


def judge(part: Part, record: Any) -> Pending | None:
    """What of `part` waits, given what was trusted (`record`, None if never); None when nothing."""
    if not part.tracked or record == part.values:
        return None
    if part.narrowing is not None and part.narrowing(part.values, record if isinstance(record, dict) else {}):
        return None
    if isinstance(record, dict) and _narrows(part, record):
        return None
    if not isinstance(record, dict):
        return Pending(part.key, part.title, part.source, tuple(part.values), fallback=False, new=True)
    changed = tuple(
        key for key in dict.fromkeys([*part.values, *record]) if part.values.get(key) != record.get(key)
    )
    return Pending(part.key, part.title, part.source, changed, fallback=_still_holds(part.root, record))


def _narrows(part: Part, record: Mapping[str, Any]) -> bool:
    """The part differs from the record only by dropping items from its `subsets` lists."""
    for key in dict.fromkeys([*part.values, *record]):
        now, before = part.values.get(key), record.get(key)
        if key in part.subsets:  # a list the file no longer writes is an empty one
            if not set(map(str, now or [])) <= set(map(str, before or [])):
                return False
        elif now != before:
            return False
    return True


def _still_holds(root: Path, record: Mapping[str, Any]) -> bool:
    """The trusted values can still run as trusted: the scripts their command names, and the model
    folder they name, are unchanged."""
    scripts = record.get("scripts")
    if scripts and fingerprint(root, list(record.get("command") or [])) != scripts:
        return False
    files = record.get("files")
    return files is None or folder_digest(root, str(record.get("model") or "")) == files


def _source(settings: Settings, prefixes: Iterable[str]) -> str:
    local = LOCAL_CONFIG_FILE in settings.tracked_files and any(
        path.name == LOCAL_CONFIG_FILE
        for dotted, path in settings.origins.items()
        for prefix in prefixes
        if dotted == prefix or dotted.startswith(prefix + ".")
    )
    return f"{LOCAL_CONFIG_FILE} (which git tracks)" if local else CONFIG_FILE


def _part(
    settings: Settings, key: str, title: str, prefixes: list[str], values: dict[str, Any], **kw: Any
) -> Part:
    tracked = any(settings.tracked(prefix) for prefix in prefixes)
    return Part(key, title, values, tracked, _source(settings, prefixes), root=settings.root, **kw)


MEMORY_KEYS = ("url", "bank", "command", "credential", "env")
MODEL_TITLE = "[search] model (an embedding model run on this machine)"
SERVER_KEYS = ("command", "url", "env", "headers", "preapprove")


def config_parts(settings: Settings) -> list[Part]:
    """Every guarded part the configuration sets now (kbkit.toml and kbkit.local.toml)."""
    parts = []
    values: dict[str, Any]
    if settings.sync.remote_url:
        values = {"remote_url": settings.sync.remote_url}
        parts.append(_part(settings, "sync.remote_url", "[sync] remote_url", ["sync.remote_url"], values))
    memory = settings.memory
    if memory.configured:
        values = _tracked_values(settings, "memory", memory, MEMORY_KEYS)
        parts.append(_part(settings, "memory", "[memory]", [f"memory.{k}" for k in MEMORY_KEYS], values))
    for name, server in settings.servers.items():
        values = _tracked_values(settings, f"servers.{name}", server, SERVER_KEYS)
        prefixes = [f"servers.{name}.{key}" for key in SERVER_KEYS]
        parts.append(
            _part(settings, f"servers.{name}", f"[servers.{name}]", prefixes, values, subsets=("preapprove",))
        )
    if settings.config.restricted and settings.tracked("restricted"):
        values = {name: _json(table.model_dump()) for name, table in settings.config.restricted.items()}
        parts.append(
            _part(
                settings,
                "restricted",
                "[restricted] (who may read which folders)",
                ["restricted"],
                values,
                narrowing=narrows,
            )
        )
    if settings.search.model and settings.tracked("search.model"):
        values = {
            "model": settings.search.model,
            "files": folder_digest(settings.root, settings.search.model),
        }
        parts.append(_part(settings, "search.model", MODEL_TITLE, ["search.model"], values))
    if not settings.kb_path.is_relative_to(settings.root):
        values = {"path": str(settings.kb_path)}
        parts.append(
            _part(settings, "kb.path", "[kb] path (a folder outside the project)", ["kb.path"], values)
        )
    return parts


def _tracked_values(settings: Settings, table: str, section: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """The keys of `table` a tracked file sets, with their values (the member's own keys are theirs:
    never compared, never set back), and the scripts a tracked command names."""
    values = {key: _json(getattr(section, key)) for key in keys if settings.tracked(f"{table}.{key}")}
    if "command" in values:
        values["scripts"] = fingerprint(settings.root, section.command)
    return values


def _own(settings: Settings, table: str, keys: tuple[str, ...]) -> set[str]:
    """The keys of `table` the member's own (untracked) files set."""
    return {
        key
        for key in keys
        if any(
            path.name not in settings.tracked_files
            for dotted, path in settings.origins.items()
            if dotted == f"{table}.{key}" or dotted.startswith(f"{table}.{key}.")
        )
    }


def _json(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    return value


def apply(settings: Settings, environ: Mapping[str, str] | None = None) -> Settings:
    """`settings` with every part that waits for trust set back to its trusted values (or off),
    and `pending` saying what waits. A kb folder outside the project that was never trusted is
    refused outright: there is nothing else to serve."""
    parts = [part for part in config_parts(settings) if part.tracked]
    if not parts:
        return settings
    records = recorded(settings.root, environ)
    pending = []
    config = settings.config
    for part in parts:
        waiting = judge(part, records.get(part.key))
        if waiting is None:
            continue
        pending.append(waiting)
        record = records.get(part.key) if waiting.fallback else None
        config = _fall_back(config, part.key, record, settings)
    kb_path = settings.kb_path
    blocked_kb = next((p for p in pending if p.key == "kb.path"), None)
    if blocked_kb is not None:
        if not blocked_kb.fallback:
            raise ConfigError(blocked_kb.line())
        kb_path = Path(records["kb.path"]["path"])
    return dataclasses.replace(settings, config=config, kb_path=kb_path, pending=tuple(pending))


def _fall_back(config: Any, key: str, record: Mapping[str, Any] | None, settings: Settings) -> Any:
    """The model with part `key` set to its trusted `record` (the member's own keys kept); with none,
    to what keeps it off."""
    if key == "sync.remote_url":
        url = record["remote_url"] if record else ""
        return config.model_copy(update={"sync": config.sync.model_copy(update={"remote_url": url})})
    if key == "memory" and record is not None:
        keys = tuple(k for k in MEMORY_KEYS if k not in _own(settings, key, MEMORY_KEYS))
        return config.model_copy(update={"memory": _restored(config.memory, record, keys)})
    if key.startswith("servers.") and record is not None:
        name = key.removeprefix("servers.")
        keys = tuple(k for k in SERVER_KEYS if k not in _own(settings, key, SERVER_KEYS))
        servers = {**config.servers, name: _restored(config.servers[name], record, keys)}
        return config.model_copy(update={"servers": servers})
    if key == "search.model":  # the trusted model, else no model at all: BM25 until the member allows it
        search = {"model": record["model"]} if record else {"semantic": False}
        return config.model_copy(update={"search": config.search.model_copy(update=search)})
    if key == "restricted":  # readers only both the trusted and the current tables allow
        return config.model_copy(update={"restricted": narrowest(config.restricted, record or {})})
    return config  # memory and servers with no record stay as written: every use asks `waiting`


def _restored(section: Any, record: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    """`section` with `keys` as `record` has them; a key set back to its default counts as unset
    again (as if the file did not write it)."""
    fields = type(section).model_fields
    update = {k: tuple(v) if isinstance(v, list) else v for k, v in record.items() if k in keys}
    # a key the tracked file writes now but did not when trusted goes back to its default
    update |= {k: fields[k].get_default(call_default_factory=True) for k in keys if k not in record}
    copy = section.model_copy(update=update)
    unset = {k for k in update if getattr(copy, k) == fields[k].get_default(call_default_factory=True)}
    object.__setattr__(copy, "__pydantic_fields_set__", (copy.model_fields_set | set(update)) - unset)
    return copy


def describe(part: Part, record: Any) -> list[str]:
    """What `kbkit trust` shows of a part: each key that changed, as it was and as it is now."""
    lines = []
    before = record if isinstance(record, dict) else {}
    for key in dict.fromkeys([*part.values, *before]):
        now, then = part.values.get(key), before.get(key)
        if now == then:
            continue
        if key == "files":
            lines.append(f"  model files: {'changed since you trusted them' if then else 'new'}")
            continue
        if key == "scripts":
            for path in sorted(set(now or {}) | set(then or {})):
                if (now or {}).get(path) != (then or {}).get(path):
                    state = (
                        "new"
                        if path not in (then or {})
                        else "gone"
                        if path not in (now or {})
                        else "changed"
                    )
                    lines.append(f"  script {path}: {state} since you trusted it")
            continue
        if isinstance(record, dict):
            lines.append(f"  - {key} = {json.dumps(then)}")
        if now or isinstance(record, dict):  # a new part: only the keys it sets
            lines.append(f"  + {key} = {json.dumps(now)}")
    return lines


AUTH_KEYS = (
    "server.http.host",
    "server.http.allowed_hosts",
    "server.http.allowed_origins",
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
LOOPBACK = ("127.0.0.1", "localhost", "::1")


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
    """The auth settings that come from a tracked file and differ from the defaults, by dotted key."""
    from kbkit.config.model import KbkitConfig

    defaults = KbkitConfig()
    return {
        key: _value(settings.config, key)
        for key in AUTH_KEYS
        if settings.tracked(key) and _value(settings.config, key) != _value(defaults, key)
    }


def widened(current: Mapping[str, Any], trusted: Mapping[str, Any]) -> list[str]:
    """What `current` (the tracked auth settings) allows beyond `trusted`, one phrase per key."""
    found = []
    for key in AUTH_KEYS:
        name = key.removeprefix("server.http.")
        now, before = current.get(key), trusted.get(key)
        if key.endswith(".scopes"):
            dropped = sorted(set(before or []) - set(now or []))
            if dropped:
                found.append(f"{name} no longer requires {' '.join(dropped)}")
        elif key.endswith((".allowed_subjects", ".allowed_hosts", ".allowed_origins")):
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
        elif key.endswith(".host"):
            if now is not None and now != before and now not in LOOPBACK:
                found.append(f"{name} = {json.dumps(now)}")
        elif now is not None and now != before:
            found.append(f"{name} = {json.dumps(now)}")
    return found


@dataclass(frozen=True)
class AuthTrust:
    """The tracked auth settings against what this machine's operator allowed."""

    current: dict[str, Any]
    widened: list[str]
    """Empty when the tracked files allow nothing beyond what was trusted (or set nothing)."""

    def waiting(self) -> str:
        return (
            f"{CONFIG_FILE} widens who may call or what they reach beyond what `{TRUST_COMMAND}` allowed "
            f"on this machine ({'; '.join(self.widened)})"
        )

    def fix(self) -> str:
        return (
            f"review that change, then run `{TRUST_COMMAND} server.http` "
            "(or set these in kbkit.local.toml, your own)"
        )


def auth_trust(settings: Settings, environ: Mapping[str, str] | None = None) -> AuthTrust:
    current = auth_settings(settings)
    if not current:
        return AuthTrust(current, [])
    found = _document(trust_path(environ))["auth"].get(str(settings.root.resolve()), {})
    return AuthTrust(current, widened(current, found if isinstance(found, dict) else {}))


def trust_auth(settings: Settings, environ: Mapping[str, str] | None = None) -> AuthTrust:
    """Record the tracked auth settings as allowed on this machine."""
    state = auth_trust(settings, environ)
    if not state.current:
        return state
    path = trust_path(environ)
    document = _document(path)
    document["auth"][str(settings.root.resolve())] = state.current
    _save(path, document)
    return AuthTrust(state.current, [])
