"""A team server's table, `[servers.<name>]`: another MCP server wired by `kbkit sync` next to kb
(docs/adr/0051). Its values may name variables, never hold secrets written out."""

from __future__ import annotations

import re
from typing import ClassVar
from urllib.parse import urlsplit

from pydantic import StrictStr, model_validator

from kbkit.catalog.clients import START_UP_SECONDS
from kbkit.config.fields import ClientNames, Invalid, Names, Seconds, Section, key
from kbkit.config.variables import BadReference, references

SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A team server's name: what agents show and build tool names from (`mcp__<name>__<tool>`)."""
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
URL_SECRET_WORDS = ("token", "key", "secret", "password", "auth", "sig")


def _one_line(value: str, what: str) -> str:
    if any(ch in value for ch in "\n\r\0"):
        raise Invalid(f"{what} holds a line break or a NUL byte; a value must be one line")
    return value


def _references_ok(value: str, what: str) -> None:
    try:
        references(value)
    except BadReference as exc:
        raise Invalid(f"{what}: {exc}") from None


def _team_url(value: str) -> None:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Invalid(f"{value!r} is not an http(s) URL", key="url")
    if parts.scheme == "http" and parts.hostname not in LOOPBACK:
        raise Invalid(f"{value!r}: plain http only on loopback; use https", key="url")
    if parts.username or parts.password:
        raise Invalid(
            "put no credentials in the URL; move them to a header such as "
            'headers = { Authorization = "Bearer ${NAME}" } and the value to .env.local',
            key="url",
        )
    for pair in parts.query.split("&"):
        name, _, found = pair.partition("=")
        if found and any(w in name.lower() for w in URL_SECRET_WORDS) and not references(found):
            raise Invalid(
                f"the URL's {name!r} looks like a secret written out; write {name}=${{NAME}} and put "
                "NAME=... in .env.local (or run `kbkit servers import`)",
                key="url",
            )


class TeamServer(Section):
    """Another MCP server the team uses, wired by `kbkit sync` next to kb for every agent. A value may
    name variables, `${NAME}`, set in .env.local or the environment: kbkit substitutes them when it
    starts the server, so no file an agent reads holds a secret."""

    opt_in: ClassVar[bool] = True

    command: Names = key(
        (), "a stdio server: the command and its arguments", example=("npx", "-y", "@acme/tracker-mcp")
    )
    url: StrictStr = key("", "or a remote server's streamable HTTP URL (https; http only on loopback)")
    env: dict[StrictStr, StrictStr] = key(
        {},
        "variables a stdio server gets (besides PATH, HOME and locale); values may name ${VARS}",
        example={"TRACKER_TOKEN": "${TRACKER_TOKEN}"},
    )
    headers: dict[StrictStr, StrictStr] = key(
        {}, 'HTTP headers a remote server gets, e.g. { Authorization = "Bearer ${WIKI_TOKEN}" }'
    )
    clients: ClientNames = key((), "the agents that get this server (default: [sync] clients)")
    preapprove: Names = key(
        (), "tool names the team deems read-only: pre-approved where an agent allows (never all)"
    )
    tools: Names = key(
        (),
        "only these tools are offered and callable, for every agent (default: all)",
        example=("search_issues",),
    )
    exclude_tools: Names = key((), "tools never offered nor callable, for every agent")
    startup_timeout: Seconds = key(
        START_UP_SECONDS, "seconds an agent (and kbkit doctor) gives the server to start"
    )

    @model_validator(mode="after")
    def _valid(self) -> TeamServer:
        if bool(self.command) == bool(self.url):
            raise Invalid(
                "set either command (a stdio server) or url (a remote one)"
                + (", not both" if self.command else ""),
                key="command" if self.command else None,
            )
        if self.command and not self.command[0].strip():
            raise Invalid("the command's first word is empty", key="command")
        if self.command and self.headers:
            raise Invalid("headers are for a url; a stdio server takes env", key="headers")
        if self.url and self.env:
            raise Invalid("env is for a command; a remote server takes headers", key="env")
        for at, value in enumerate(self.command):
            _one_line(value, f"command[{at}]")
            _references_ok(value, f"command[{at}]")
        if self.url:
            _one_line(self.url, "url")
            _references_ok(self.url, "url")
            _team_url(self.url)
        for table, pattern, example in (
            ("env", re.compile(r"[A-Za-z_][A-Za-z0-9_]*"), "TRACKER_TOKEN"),
            ("headers", HEADER_NAME, "Authorization"),
        ):
            for name, value in getattr(self, table).items():
                if not pattern.fullmatch(name):
                    raise Invalid(f"{name!r} is not a valid name here; e.g. {example}", key=table)
                _one_line(value, f"{table}.{name}")
                _references_ok(value, f"{table}.{name}")
        for tool in (*self.tools, *self.exclude_tools):
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", tool):
                raise Invalid(f"{tool!r} is not a tool name (letters, digits, _ . -)", key="tools")
        for tool in self.preapprove:
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", tool):
                raise Invalid(f"{tool!r} is not a tool name (letters, digits, _ . -)", key="preapprove")
            if tool in ("*", "all"):
                raise Invalid("name tools one by one; a whole server is never pre-approved", key="preapprove")
        return self

    @property
    def remote(self) -> bool:
        return bool(self.url)

    @property
    def variables(self) -> list[str]:
        """The variables this server's values name, each once."""
        values = [*self.command, self.url, *self.env.values(), *self.headers.values()]
        return list(dict.fromkeys(name for value in values for name in references(value)))

    @property
    def plain(self) -> bool:
        """Nothing to substitute or add: an agent can start it (or reach it) from its entry alone."""
        return not (self.variables or self.env or self.headers or self.filtered)

    @property
    def filtered(self) -> bool:
        """kbkit stands between the agent and the server to offer only some of its tools."""
        return bool(self.tools or self.exclude_tools)


def server_names(servers: dict[str, TeamServer]) -> dict[str, TeamServer]:
    for name in servers:
        if not SERVER_NAME.fullmatch(name):
            raise Invalid(
                f"{name!r} is not a server name: use letters, digits, '_' and '-' (at most 64, starting "
                "with a letter or digit); agents build tool names from it",
                key=name,
            )
    return servers
