"""`kbkit token ...`: personal tokens for `kbkit serve --http`, one per person (docs/adr/0031)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kbkit.cli.common import RootOption
from kbkit.errors import InputError

app = typer.Typer(help="Personal tokens for kbkit serve --http: create, list, revoke.", no_args_is_help=True)


def _path(root: Path | None) -> Path:
    from kbkit.config import load_settings
    from kbkit.server.auth.plan import tokens_path

    return tokens_path(load_settings(root))


@app.command("create")
def token_create(
    name: Annotated[str, typer.Argument(help="Whose token: a person or a machine, e.g. alice.")],
    root: RootOption = None,
    expires: Annotated[
        int | None, typer.Option("--expires", help="Days until it expires (default: never).")
    ] = None,
    scope: Annotated[
        str, typer.Option("--scope", help="read: the kb tools and resources; memory: also the memory tools.")
    ] = "read",
    paths: Annotated[
        list[str] | None,
        typer.Option(
            "--paths",
            help="Read only these kb folders or files (repeat it) of what NAME may read.",
        ),
    ] = None,
) -> None:
    """Create a token and print it once: only its hash is kept."""
    from kbkit.server.auth.tokens import create

    if scope not in ("read", "memory"):
        raise InputError(f"--scope {scope!r} is not known", fix="use read or memory")
    path = _path(root)
    token = create(path, name, "memory" if scope == "memory" else "read", expires, paths=tuple(paths or ()))
    typer.echo(token)
    typer.echo(
        f"[kbkit] token {name!r} ({scope}{', only ' + ', '.join(paths) if paths else ''}) saved as a hash "
        f"in {path}; this is the only time it is shown. "
        "Its holder puts it in .env.local as KBKIT_TOKEN=<token> (kbkit connect sends it).",
        err=True,
    )


@app.command("list")
def token_list(
    root: RootOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """The tokens: name, scope, created, expiry, last use. Never a token."""
    from kbkit.server.auth.tokens import now_utc, read_tokens

    path = _path(root)
    records, _ = read_tokens(path)
    now = now_utc()
    rows = [r.public(now) for r in records]
    if as_json:
        typer.echo(json.dumps({"version": 1, "tokens": rows}, indent=2))
        return
    if not rows:
        typer.echo(f"[kbkit] no tokens in {path}; kbkit token create NAME makes one", err=True)
    for row in rows:
        typer.echo(
            f"{row['name']}  {row['scope']}  created {row['created']}  "
            f"expires {row['expires'] or 'never'}  last used {row['last_used'] or 'never'}  {row['state']}"
            + (f"  only {', '.join(row['paths'])}" if row.get("paths") else "")
        )


@app.command("revoke")
def token_revoke(
    name: Annotated[str, typer.Argument(help="The token's name.")],
    root: RootOption = None,
) -> None:
    """Revoke a token: every server on this tokens file refuses it from its next request."""
    from kbkit.server.auth.tokens import revoke

    revoke(_path(root), name)
    typer.echo(f"[kbkit] revoked {name!r}", err=True)
