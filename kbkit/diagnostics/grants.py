"""Who may read what over HTTP: each restricted folder, its readers, and grants that name nobody."""

from __future__ import annotations

from kbkit.diagnostics.base import Context, Finding, ok

CHECK = "grants"


def check_grants(ctx: Context) -> list[Finding]:
    settings = ctx.settings
    if settings is None:
        return []
    folders = settings.restricted
    if not folders.names:
        return ok(CHECK, "no restricted folders: every principal of `kbkit serve --http` reads the whole kb")
    from kbkit.errors import TokensFileError
    from kbkit.server.auth.plan import tokens_path
    from kbkit.server.auth.tokens import read_tokens

    try:
        names = {record.name for record in read_tokens(tokens_path(settings))[0]}
    except TokensFileError:
        names = set()  # the auth check says what is wrong with the file
    oauth = bool(settings.http.oauth.issuer)
    findings: list[Finding] = []
    for name, table in folders.tables.items():
        readers = folders.readers(name)
        where = ", ".join(table.paths)
        findings += ok(
            CHECK,
            f"[restricted.{name}] ({where}): read over HTTP only by {', '.join(readers) or 'nobody'}; "
            "its own index, so no other principal learns what it holds",
        )
        unknown = [token for token in table.tokens if token not in names]
        if unknown:
            findings.append(
                Finding(
                    CHECK,
                    "warn",
                    f"[restricted.{name}] grants personal token(s) {', '.join(unknown)}, which the tokens "
                    "file does not hold: that grant reaches nobody",
                    f"`kbkit token create {unknown[0]}`, or remove the name from [restricted.{name}] tokens",
                )
            )
        if (table.subjects or table.claims) and not oauth:
            findings.append(
                Finding(
                    CHECK,
                    "warn",
                    f"[restricted.{name}] grants OAuth subjects or claims, but [server.http.oauth] is not "
                    "set: no one signs in that way, so those grants reach nobody",
                    "set [server.http.oauth] issuer, or grant personal tokens instead",
                )
            )
        if not readers:
            findings.append(
                Finding(
                    CHECK,
                    "warn",
                    f"[restricted.{name}] names no reader: nobody reads {where} over HTTP",
                    f"add tokens, subjects or claims to [restricted.{name}] if someone should",
                )
            )
    return findings
