"""Who may use `kbkit serve --http`: the shared token, the personal tokens file, the identity provider."""

from __future__ import annotations

from kbkit.diagnostics.base import Context, Finding, ok

ISSUER_TIMEOUT = 5.0


def check_auth(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    from kbkit.catalog.clients import PERSONAL_TOKEN_VAR, TOKEN_VAR
    from kbkit.errors import TokensFileError
    from kbkit.server.auth.plan import tokens_path
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
