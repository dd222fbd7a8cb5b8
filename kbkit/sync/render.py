"""Render one client's `kb` entry from its template.

The stdio entry runs this kbkit by absolute path with `serve --root <absolute root>` and carries
no `env` block: the server reads `.env.local` itself, so a key rotation needs no rewrite.

In remote mode (`[sync] remote_url`) every entry runs the relay, `kbkit connect <url>`, which
reads MCP_TOKEN from the environment or `.env.local` itself: an agent's own environment never
read `.env.local`. With `[sync] remote_transport = "http"` a client that can refer to an
environment variable gets a direct HTTP entry in its own dialect instead, and the agent's
environment must then hold MCP_TOKEN (docs/adr/0011).
"""

from __future__ import annotations

import json
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from kbkit.catalog.clients import DIRECT_HTTP, RELAY, SIGN_IN, TOKEN_VAR, Client
from kbkit.shipped import shipped


@dataclass(frozen=True)
class EntrySource:
    """What every client's entry is made from (one per sync run)."""

    name: str
    root: Path
    command: tuple[str, ...]
    """The argv that starts this kbkit, absolute (see `kbkit_command`)."""
    remote_url: str | None = None
    remote_transport: str = RELAY
    approved: tuple[str, ...] = ()
    """The kb tools to pre-approve where the client approves them in the entry itself (Kiro, Roo)."""
    remote_auth: str = "token"

    def signs_in(self, client: Client) -> bool:
        """With `remote_auth = "oauth"`, a client that signs in by itself: a plain URL entry."""
        return (
            self.remote_url is not None
            and self.remote_auth == "oauth"
            and client.http
            and client.name in SIGN_IN
        )

    def direct_http(self, client: Client) -> bool:
        """Whether this client gets a direct HTTP entry (an opt-in) rather than a stdio one."""
        return self.signs_in(client) or (
            self.remote_url is not None
            and self.remote_transport == DIRECT_HTTP
            and client.http
            and client.env_reference is not None
        )


def kbkit_command() -> tuple[str, ...]:
    """How an agent starts this kbkit: absolute, with no PATH lookup and no environment needed.

    The console script beside the running interpreter when there is one (a virtualenv, pipx, uv
    tool); otherwise this very interpreter with `-m kbkit`, never a `kbkit` found on PATH (that
    may be another installation, or another project of the same name).
    """
    beside = Path(sys.executable).parent / "kbkit"
    if beside.is_file():
        return (str(beside),)
    return (sys.executable, "-m", "kbkit")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(shipped("templates"))),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )


def token_reference(client: Client) -> str:
    """How the client's file names MCP_TOKEN, in its env-reference dialect."""
    reference = client.env_reference
    return TOKEN_VAR if reference in (None, "names") else reference.format(var=TOKEN_VAR)


def render_entry(client: Client, source: EntrySource) -> dict[str, Any]:
    """The entry's data, exactly as it will sit in the client's file."""
    context: dict[str, object]
    if source.direct_http(client):
        oauth = source.signs_in(client)  # the client signs in by itself: no header, no token
        context = {
            "transport": "http",
            "url": source.remote_url,
            "token_ref": None if oauth else token_reference(client),
            "token_var": None if oauth else TOKEN_VAR,
        }
    else:
        if source.remote_url is not None:
            args = ["connect", source.remote_url, "--root", str(source.root)]
        else:
            args = ["serve", "--root", str(source.root)]
        context = {
            "transport": "stdio",
            "command": source.command[0],
            "args": [*source.command[1:], *args],
        }
    return _finish(render(client, source.name, context), client, source)


def render(client: Client, name: str, context: dict[str, object]) -> dict[str, Any]:
    """One entry of `client`'s shape from its template (`transport`, and `command` and `args`, or
    `url`, `token_ref` and `token_var`)."""
    suffix = "toml" if client.format.startswith("toml") else "json"
    text = _environment().get_template(f"{client.template}.{suffix}.j2").render(name=name, **context)
    entry: dict[str, Any] = tomllib.loads(text) if suffix == "toml" else json.loads(text)
    return entry


def _finish(entry: dict[str, Any], client: Client, source: EntrySource) -> dict[str, Any]:
    """The keys every entry of this client carries (a start-up timeout) and,
    where the client approves tools in the entry itself, the pre-approved kb tools by name."""
    for key, value in client.extra:
        entry[key] = value
    approval = client.approval
    if approval is not None and approval.kind == "entry" and source.approved:
        entry[approval.key[0]] = [approval.tool_name(source.name, tool) for tool in source.approved]
    return entry
