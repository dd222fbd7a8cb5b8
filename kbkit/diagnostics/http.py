"""How agents reach a kb over HTTP: `kbkit serve --http`'s token and bind, and `[sync] remote_url`."""

from __future__ import annotations

import os

from kbkit.diagnostics.base import Context, Finding, ok


def check_http(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    from kbkit.catalog.clients import TOKEN_VAR
    from kbkit.server.http import is_loopback, weak_token

    settings = ctx.settings
    token = settings.env.get(TOKEN_VAR)
    reach = "loopback" if is_loopback(settings.http.host) else f"network ({settings.http.host})"
    if not token:
        from kbkit.server.auth.plan import tokens_path

        if tokens_path(settings).exists() or settings.http.oauth.issuer:
            return ok(
                "http", f"kbkit serve --http binds {settings.http.host} ({reach}); callers: the auth check"
            )
        if not is_loopback(settings.http.host):  # a remote_url client: the "remote" check
            return [
                Finding(
                    "http",
                    "warn",
                    f"{TOKEN_VAR} is not set: kbkit serve --http would refuse to start (bind: {reach})",
                    f"add {TOKEN_VAR}=<a long random string> to .env.local",
                )
            ]
        return ok("http", f"{TOKEN_VAR} is not set; only `kbkit serve --http` needs it (stdio does not)")
    weak = weak_token(token)
    if weak:
        return [
            Finding(
                "http",
                "fail",
                weak,
                "use a long random string, e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'",
            )
        ]
    return ok("http", f"{TOKEN_VAR} is set; kbkit serve --http binds {settings.http.host} ({reach})")


def check_remote(ctx: Context) -> list[Finding]:
    """How agents reach `[sync] remote_url`: the relay reads .env.local, a direct HTTP entry does not."""
    if ctx.settings is None:
        return []
    from kbkit.catalog.clients import DIRECT_HTTP, TOKEN_VAR

    settings = ctx.settings
    url = settings.sync_remote_url
    if not url:
        return ok("remote", "no [sync] remote_url: agents run a local kbkit serve")
    if settings.sync.remote_transport != DIRECT_HTTP:
        where = "the environment" if os.environ.get(TOKEN_VAR) else ".env.local"
        if not settings.env.get(TOKEN_VAR):
            return [
                Finding(
                    "remote",
                    "warn",
                    f"{TOKEN_VAR} is not set: kbkit connect would reach {url} with no token and be refused",
                    f"add {TOKEN_VAR}=<the server's token> to .env.local",
                )
            ]
        return ok("remote", f"agents reach {url} through kbkit connect ({TOKEN_VAR} from {where})")
    if not os.environ.get(TOKEN_VAR):
        only_file = ".env.local holds it, but " if settings.env.get(TOKEN_VAR) else ""
        return [
            Finding(
                "remote",
                "warn",
                f'remote_transport = "http": agents send {TOKEN_VAR} from the environment they start in, '
                f"and it is not set here ({only_file}agents never read .env.local)",
                f"export {TOKEN_VAR} where your agents start, or remove remote_transport from kbkit.toml "
                "(kbkit connect reads .env.local), then kbkit sync",
            )
        ]
    return ok(
        "remote",
        f'remote_transport = "http": agents reach {url} directly with {TOKEN_VAR} from their environment '
        "(set in this one)",
    )
