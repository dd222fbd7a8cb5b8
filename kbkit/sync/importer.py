"""`kbkit servers import`: take the MCP servers a team already keeps in its agents' files into
kbkit.toml, and every literal secret in them into `.env.local`, then let `kbkit sync` own them.

Read: every project-level client file of the client table (`.mcp.json`, `.cursor/mcp.json`,
`.vscode/mcp.json`, `.codex/config.toml`, ...) and Continue's file per server, in each one's own
shape and env-reference dialect (`${VAR}`, `${env:VAR}`, `{env:VAR}`, Codex's variable names),
skipping the entries kbkit wrote. Each server becomes `[servers.<name>]`; a reference becomes
`${VAR}`; a literal header value, an env value that looks like a secret and a URL's token become
`${NAME}` with NAME=value appended to `.env.local` (a value `.env.local` already holds under that
name is reused, another gets a new name).

The plan is computed whole first (`--dry-run` prints it, with no value shown), then written in an
order where a stop at any point loses nothing: `.env.local` first (values nothing refers to yet),
then kbkit.toml, then the sync state taking over the entries as they stand (so sync may replace
them), and last `kbkit sync` rewriting the client files, each write atomic.
"""

from __future__ import annotations

import difflib
import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from dotenv import dotenv_values
from pydantic import ValidationError

from kbkit.catalog.clients import CLIENTS, Client
from kbkit.config import CONFIG_FILE, ENV_FILE, Settings, load_settings, read_env_file, trust
from kbkit.config.servers import SERVER_NAME, URL_SECRET_WORDS, TeamServer
from kbkit.config.tomledit import set_entry
from kbkit.errors import ConfigError, SyncRefused, TomlEditError
from kbkit.fsutil import atomic_write_text, read_text_file
from kbkit.sync.merge import ConfigText
from kbkit.sync.servers import owner_of
from kbkit.sync.state import Owned, entry_hash, load_state, save_state

SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASS", "AUTH", "CREDENTIAL", "PAT", "COOKIE")
DIALECTS = (
    re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}"),
    re.compile(r"(?<!\$)\{env:([A-Za-z_][A-Za-z0-9_]*)\}"),
    re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}"),
)
"""Each client dialect's reference, read back as kbkit's `${VAR}` (a `${VAR:-default}` loses its
default: kbkit's variables come from the environment or .env.local)."""
UNQUOTED = re.compile(r"[A-Za-z0-9_\-.:/+=@~,]*")


@dataclass
class Found:
    """One server read from one client file."""

    name: str
    client: str
    path: str
    key: tuple[str, ...]
    entry: dict[str, Any]
    table: dict[str, Any]
    """The `[servers.<name>]` table, with `${VAR}` where secrets were."""


@dataclass
class ImportPlan:
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """name -> its kbkit.toml table."""
    clients: dict[str, list[str]] = field(default_factory=dict)
    taken: list[Found] = field(default_factory=list)
    variables: dict[str, str] = field(default_factory=dict, repr=False)
    """New .env.local variables -> values (never printed)."""
    moved: dict[str, str] = field(default_factory=dict)
    """Variable -> where its value was found, for people."""
    skipped: list[str] = field(default_factory=list)
    config_before: str = ""
    config_after: str = ""
    env_before: str = ""
    env_after: str = field(default="", repr=False)

    def diff(self) -> str:
        """kbkit.toml's diff, and the .env.local lines to be added with their values hidden."""
        text = "".join(
            difflib.unified_diff(
                self.config_before.splitlines(keepends=True),
                self.config_after.splitlines(keepends=True),
                fromfile=f"a/{CONFIG_FILE}",
                tofile=f"b/{CONFIG_FILE}",
            )
        )
        for name, where in self.moved.items():
            text += f"+ {ENV_FILE}: {name}=<the value from {where}>\n"
        return text


def plan_import(settings: Settings) -> ImportPlan:
    """Everything an import would do, computed without writing anything."""
    root = settings.root
    owned = {(o.path, o.key) for o in load_state(settings.state_dir / "sync-state.json").values()}
    existing_env = read_env_file(root)
    plan = ImportPlan(env_before=read_text_file(root / ENV_FILE) or "")
    plan.config_before = read_text_file(root / CONFIG_FILE) or ""
    taken_values: dict[str, str] = dict(existing_env)
    for found in _read_all(root, owned, settings.server_name):
        if found.name in settings.servers:
            plan.skipped.append(f"{found.name} ({found.path}): kbkit.toml already has [servers.{found.name}]")
            continue
        try:
            table = _secrets_out(found, taken_values, plan)
            TeamServer.model_validate(table)
        except _Skip as exc:
            plan.skipped.append(str(exc))
            continue
        except ValidationError as exc:
            problem = "; ".join(str(e.get("ctx", {}).get("error") or e["msg"]) for e in exc.errors())
            plan.skipped.append(f"{found.name} ({found.path}): {problem}")
            continue
        known = plan.servers.get(found.name)
        if known is not None and known != table:
            plan.skipped.append(
                f"{found.name} ({found.path}): differs from the {found.name} already taken; "
                "rename one of them and import again"
            )
            continue
        plan.servers[found.name] = table
        readers = [c.name for c in CLIENTS.values() if c.path_for(found.name) == found.path]
        in_sync = [name for name in readers if name in settings.sync_clients] or readers[:1]
        plan.clients.setdefault(found.name, [])
        plan.clients[found.name] += [name for name in in_sync if name not in plan.clients[found.name]]
        plan.taken.append(found)
    text = plan.config_before
    for name, table in plan.servers.items():
        clients = plan.clients[name]
        if set(clients) != set(settings.sync_clients):
            table = {**table, "clients": clients}
        try:
            text = set_entry(text, ("servers", name), table)
        except TomlEditError as exc:
            raise SyncRefused(f"{CONFIG_FILE}: {exc}; add [servers.{name}] by hand") from None
    plan.config_after = text
    plan.env_after = plan.env_before + _env_lines(plan.env_before, plan.variables)
    return plan


def apply_import(settings: Settings, plan: ImportPlan) -> Settings:
    """Write the plan (see the module's note on the order); the settings as they are afterwards."""
    root = settings.root
    if not plan.servers:
        return settings
    if plan.variables:
        atomic_write_text(root / ENV_FILE, plan.env_after, mode=0o600, through_link=True)
    atomic_write_text(root / CONFIG_FILE, plan.config_after)
    try:
        written = load_settings(root, as_written=True)
        # The member imports servers from their own agents' files: what they ran already is theirs.
        imported = [f"servers.{name}" for name in plan.servers]
        trust.allow(root, [part for part in trust.config_parts(written) if part.key in imported])
        after = load_settings(root)
    except ConfigError:  # the tables came from kbkit's own reading: say so plainly, undo kbkit.toml
        atomic_write_text(root / CONFIG_FILE, plan.config_before)
        raise
    state_path = after.state_dir / "sync-state.json"
    owned = load_state(state_path)
    for found in plan.taken:
        for client in plan.clients[found.name]:
            if CLIENTS[client].path_for(found.name) == found.path:
                owned[owner_of(client, found.name)] = Owned(found.path, found.key, entry_hash(found.entry))
    save_state(state_path, owned)
    return after


# -- reading the client files --------------------------------------------------------------------


def _read_all(root: Path, owned: set[tuple[str, tuple[str, ...]]], kb_name: str) -> list[Found]:
    found: list[Found] = []
    seen: set[str] = set()
    for client in CLIENTS.values():
        if client.user_level:
            continue
        paths = [client.path]
        if client.server_file:
            folder = root / Path(client.server_file).parent
            if folder.is_dir():
                paths += sorted(
                    str(p.relative_to(root))
                    for p in folder.glob(Path(client.server_file).name.replace("{server}", "*"))
                )
        for path in paths:
            if path in seen:
                continue
            seen.add(path)
            text = read_text_file(root / path, fix="then run kbkit servers import again")
            if text is None:
                continue
            entries = ConfigText(client.format, text, path).get(client.root_key)
            if not isinstance(entries, dict):
                continue
            for name, entry in entries.items():
                key = (*client.root_key, name)
                if (path, key) in owned or name == kb_name or not isinstance(entry, dict):
                    continue
                table = _table(client, entry)
                if table is not None:
                    found.append(Found(_server_name(name), client.name, path, key, entry, table))
    return found


def _server_name(name: str) -> str:
    if SERVER_NAME.fullmatch(name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-_")[:64] or "server"
    return cleaned if SERVER_NAME.fullmatch(cleaned) else f"s-{cleaned}"[:64]


def _table(client: Client, entry: dict[str, Any]) -> dict[str, Any] | None:
    """The entry as a `[servers.<name>]` table, in kbkit's dialect (None: not a server entry)."""
    shape = client.template
    env: dict[str, str] = {}
    headers: dict[str, str] = {}
    if shape == "opencode":
        if entry.get("type") == "remote":
            url, headers = entry.get("url"), dict(entry.get("headers") or {})
            command: list[str] = []
        else:
            command = list(entry.get("command") or [])
            url, env = None, dict(entry.get("environment") or {})
    else:
        url = entry.get("url") or entry.get("httpUrl") or entry.get("serverUrl")
        command = [entry["command"], *entry.get("args", [])] if isinstance(entry.get("command"), str) else []
        env = dict(entry.get("env") or {})
        headers = dict(entry.get("headers") or entry.get("http_headers") or {})
    if shape == "codex":
        env |= {name: f"${{{name}}}" for name in entry.get("env_vars") or [] if isinstance(name, str)}
        headers |= {h: f"${{{v}}}" for h, v in (entry.get("env_http_headers") or {}).items()}
        if isinstance(entry.get("bearer_token_env_var"), str):
            headers["Authorization"] = f"Bearer ${{{entry['bearer_token_env_var']}}}"
    if not (command or isinstance(url, str)):
        return None
    if not all(isinstance(part, str) for part in command):
        return None
    table: dict[str, Any] = {"command": [_kbkit_dialect(p) for p in command]} if command else {"url": url}
    if env:
        table["env"] = {str(k): _kbkit_dialect(str(v)) for k, v in env.items()}
    if headers and not command:
        table["headers"] = {str(k): _kbkit_dialect(str(v)) for k, v in headers.items()}
    return table


def _kbkit_dialect(value: str) -> str:
    for pattern in DIALECTS:
        value = pattern.sub(lambda m: "${" + m.group(1) + "}", value)
    return value


# -- moving the secrets out ------------------------------------------------------------------------


def _secrets_out(found: Found, taken: dict[str, str], plan: ImportPlan) -> dict[str, Any]:
    table = dict(found.table)
    prefix = re.sub(r"[^A-Za-z0-9]+", "_", found.name).upper().strip("_") or "SERVER"
    where = f"{found.path} ({found.name})"

    def keep(value: str, wanted: str, shown: str) -> str:
        if any(ch in value for ch in "\n\r\0"):
            raise _Skip(f"{where}: {shown} holds a line break or NUL byte; fix it by hand first")
        name = _variable_for(wanted, value, taken)
        if name not in plan.variables and taken.get(name) != value:
            plan.variables[name] = value
        taken[name] = value
        plan.moved.setdefault(name, f"{where} {shown}")
        return "${" + name + "}"

    if "command" in table:
        table["command"] = _command_secrets_out(table["command"], prefix, keep)
    env = dict(table.get("env", {}))
    for key, value in env.items():
        if _literal(value) and looks_secret(key, value):
            env[key] = keep(value, key.upper(), f"env.{key}")
    headers = dict(table.get("headers", {}))
    for key, value in headers.items():
        if not _literal(value):
            continue
        scheme, _, credential = value.partition(" ")
        if scheme.lower() in ("bearer", "basic", "token") and credential and _literal(credential):
            headers[key] = f"{scheme} " + keep(credential, f"{prefix}_TOKEN", f"headers.{key}")
        else:
            headers[key] = keep(
                value, f"{prefix}_{re.sub(r'[^A-Za-z0-9]+', '_', key).upper()}", f"headers.{key}"
            )
    if "url" in table:
        parts = urlsplit(table["url"])
        if parts.username or parts.password:
            raise _Skip(f"{where}: its URL holds a user and password; move them to a header by hand")
        query = parse_qsl(parts.query, keep_blank_values=True)
        changed = False
        for at, (name, value) in enumerate(query):
            if value and _literal(value) and any(w in name.lower() for w in URL_SECRET_WORDS):
                wanted = f"{prefix}_{re.sub(r'[^A-Za-z0-9]+', '_', name).upper()}"
                query[at] = (name, keep(value, wanted, f"url ?{name}="))
                changed = True
        if changed:
            encoded = urlencode(query, safe="${}")
            table["url"] = urlunsplit((parts.scheme, parts.netloc, parts.path, encoded, parts.fragment))
    if env:
        table["env"] = env
    if headers:
        table["headers"] = headers
    return table


KNOWN_TOKEN = re.compile(
    r"(ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abpr]-|sk-|sk_live_|rk_live_|AKIA|AIza|hf_|npm_)"
    r"[A-Za-z0-9_\-]{8,}"
)
"""Keys whose shape gives them away wherever they stand (GitHub, GitLab, Slack, OpenAI, Stripe,
AWS, Google, Hugging Face, npm)."""
PASSWORD_IN_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://[^:/?#@\s]*:)([^@/?#\s]+)(@.*)$")


def _command_secrets_out(command: list[str], prefix: str, keep: Any) -> list[str]:
    """The command with each secret among its arguments replaced by a `${NAME}`: the value after a
    secret-sounding flag (`--token X`, `--api-key=X`), a key of a known shape anywhere, and the
    password of a connection string (`postgres://u:pw@host/db`)."""
    out = list(command)
    for at in range(1, len(out)):
        word = out[at]
        if not _literal(word):
            continue
        flag, equals, value = word.partition("=")
        if word.startswith("-") and equals and value and _secret_flag(flag):
            out[at] = f"{flag}=" + keep(value, _flag_variable(prefix, flag), f"command {flag}=")
        elif _secret_flag(out[at - 1]) and out[at - 1].startswith("-") and not word.startswith("-"):
            out[at] = keep(word, _flag_variable(prefix, out[at - 1]), f"command {out[at - 1]}")
        elif (match := PASSWORD_IN_URL.match(word)) is not None:
            out[at] = match[1] + keep(match[2], f"{prefix}_PASSWORD", f"command argument {at}") + match[3]
        elif KNOWN_TOKEN.search(word):
            out[at] = KNOWN_TOKEN.sub(_replacer(keep, f"{prefix}_TOKEN", f"command argument {at}"), word)
    return out


def _replacer(keep: Any, wanted: str, shown: str) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return str(keep(match[0], wanted, shown))

    return replace


def _secret_flag(word: str) -> bool:
    """`--token`, `--api-key`, `--db-password`, `-pass`; not `--path` or `--keyfile` (paths)."""
    name = word.lstrip("-").upper().replace("-", "_")
    return word.startswith("-") and (
        any(segment in SECRET_WORDS for segment in name.split("_"))
        or any(w in name for w in ("TOKEN", "SECRET", "PASSWORD", "PASSPHRASE", "CREDENTIAL", "APIKEY"))
    )


def _flag_variable(prefix: str, flag: str) -> str:
    return f"{prefix}_{re.sub(r'[^A-Za-z0-9]+', '_', flag.lstrip('-')).upper()}"


class _Skip(Exception):
    """A server the import leaves where it is, and why."""


def looks_secret(name: str, value: str) -> bool:
    """An env value to move out of the shared file: a secret-sounding name, or a value that looks
    like a key (long, letters and digits, no spaces) or a URL with credentials."""
    if any(word in name.upper() for word in SECRET_WORDS):
        return True
    if "://" in value and "@" in value:
        return True
    return (
        len(value) >= 16
        and " " not in value
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and "/" not in value
    )


def _literal(value: str) -> bool:
    return "${" not in value


def _variable_for(wanted: str, value: str, taken: Mapping[str, str]) -> str:
    """`wanted`, or wanted_2, ...: the first name that is free or already holds this value."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", wanted) or "SECRET"
    if base[0].isdigit():
        base = f"_{base}"
    name, n = base, 1
    while name in taken and taken[name] != value:
        n += 1
        name = f"{base}_{n}"
    return name


def _env_lines(before: str, variables: Mapping[str, str]) -> str:
    """The lines that add `variables` to .env.local, each read back by python-dotenv to the value."""
    if not variables:
        return ""
    lines = ["" if not before or before.endswith("\n") else "\n"]
    lines.append("# added by kbkit servers import\n")
    for name, value in variables.items():
        line = f"{name}={_quoted(value)}\n"
        if dotenv_values(stream=io.StringIO(line), interpolate=False).get(name) != value:
            raise SyncRefused(
                f"the value found for {name} cannot be written to {ENV_FILE} faithfully; "
                f"add {name} to {ENV_FILE} by hand and replace the value in the client file with a reference"
            )
        lines.append(line)
    return "".join(lines)


def _quoted(value: str) -> str:
    if UNQUOTED.fullmatch(value):
        return value
    if "'" not in value:
        return f"'{value}'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
