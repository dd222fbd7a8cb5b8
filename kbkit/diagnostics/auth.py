"""Who may use `kbkit serve --http`: the shared token, the personal tokens file, the identity provider."""

from __future__ import annotations

from kbkit.diagnostics.base import Context, Finding, ok

ISSUER_TIMEOUT = 5.0


def check_auth(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    from kbkit.catalog.clients import PERSONAL_TOKEN_VAR, TOKEN_VAR
    from kbkit.errors import TokensFileError
    from kbkit.server.auth.plan import ANONYMOUS_VAR, tokens_path
    from kbkit.server.auth.tokens import now_utc, read_tokens

    settings = ctx.settings
    path = tokens_path(settings)
    findings: list[Finding] = []
    try:
        records, _ = read_tokens(path)
    except TokensFileError as exc:
        findings.append(Finding("auth", "fail", exc.message, exc.fix))
        records = []
    now = now_utc()
    expired = [r.name for r in records if r.expired(now)]
    if records:
        line = f"{len(records)} personal token(s) in {path}"
        findings += ok("auth", line + (f"; expired: {', '.join(expired)}" if expired else ""))
    if settings.env.get(TOKEN_VAR):
        findings += ok(
            "auth",
            f"{TOKEN_VAR} is a shared token: every caller holding it is the one principal `shared`, and a "
            "person who leaves keeps access until it is rotated. To move to personal tokens: "
            f"`kbkit token create NAME` per person, each puts theirs in .env.local as {PERSONAL_TOKEN_VAR}, "
            f"then remove {TOKEN_VAR} from the server's .env.local",
        )
    if settings.env.get(ANONYMOUS_VAR, "") in ("1", "true", "yes"):
        findings.append(
            Finding(
                "auth",
                "warn",
                f"{ANONYMOUS_VAR}=1: a `kbkit serve --http` started while no token or [server.http.oauth] "
                "existed runs without auth, and ignores personal tokens created after it started"
                + (f" (there are {len(records)} now)" if records else ""),
                f"restart the server after `kbkit token create NAME`, and remove {ANONYMOUS_VAR} "
                "outside local development",
            )
        )
    from kbkit.config.trust import auth_trust
    from kbkit.server.auth.plan import stale_settings

    running = stale_settings(settings)
    if running is not None and running[1]:
        pid, keys = running
        findings.append(
            Finding(
                "auth",
                "warn",
                f"the kbkit serve --http running here (pid {pid}) started with other "
                f"{', '.join(f'[server.http] {key}' for key in keys)}: it does not apply them while serving",
                "restart it to apply them",
            )
        )

    trust = auth_trust(settings)
    if trust.widened:
        findings.append(Finding("auth", "warn", trust.waiting(), trust.fix()))
    oauth = settings.http.oauth
    if oauth.issuer:
        findings.append(_issuer(oauth.issuer))
    return findings or ok(
        "auth",
        f"no personal tokens, {TOKEN_VAR} or [server.http.oauth]: only `kbkit serve --http` needs one "
        "(`kbkit token create NAME`)",
    )


def _issuer(issuer: str) -> Finding:
    """Whether the identity provider answers its metadata with a JWKS (what the server trusts)."""
    import anyio

    from kbkit.server.auth.oauth import JwtVerifier, OAuthPolicy, http_fetch

    verifier = JwtVerifier(OAuthPolicy(issuer=issuer, audience=""), http_fetch(ISSUER_TIMEOUT))
    if anyio.run(verifier.refresh):
        return Finding("auth", "ok", f"OAuth: {issuer} answers; {verifier.key_count} signing key(s)")
    return Finding(
        "auth",
        "warn",
        f"OAuth: {issuer} does not answer ({verifier.last_error}); a server started now refuses "
        "OAuth sign-ins until it does (cached keys keep working in a running one)",
        "check [server.http.oauth] issuer and that the identity provider is up",
    )
