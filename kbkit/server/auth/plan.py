"""What `kbkit serve --http` trusts, decided before it binds: the shared token, the tokens file,
the identity provider. Refuses to start when nothing would let anybody in, or when the tokens
file cannot be trusted (with the fix)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbkit.catalog.clients import TOKEN_VAR
from kbkit.config import ENV_FILE, Settings
from kbkit.config.trust import auth_trust
from kbkit.errors import ConfigError, KbkitError
from kbkit.fsutil import atomic_write_text
from kbkit.server.auth.audit import LogFormat
from kbkit.server.auth.oauth import JwtVerifier, OAuthPolicy, http_fetch
from kbkit.server.auth.tokens import TOKENS_FILE, TokenStore, read_tokens

ANONYMOUS_VAR = "MCP_ALLOW_ANONYMOUS"


@dataclass(frozen=True)
class AuthPlan:
    shared: str | None
    tokens_file: Path
    personal: bool
    """Personal tokens are checked (always, but with MCP_ALLOW_ANONYMOUS): a file created later counts."""
    oauth: OAuthPolicy | None
    """With `audience` empty when it is the server's own URL, known only once bound."""
    anonymous: bool
    log_format: LogFormat = "text"
    host: str = "127.0.0.1"
    untrusted: str | None = None
    """Why `[server.http.oauth]` from kbkit.toml is not applied (it widens access beyond `kbkit trust`)."""
    running: Path | None = None
    """Where a serving process records the `[server.http]` settings it started with (for doctor)."""
    started_with: dict[str, Any] | None = None

    def with_audience(self, url: str) -> OAuthPolicy | None:
        if self.oauth is None or self.oauth.audience:
            return self.oauth
        return OAuthPolicy(**{**self.oauth.__dict__, "audience": url})

    def describe(self, url: str) -> list[str]:
        """Boot lines: what the server trusts. Never a token."""
        if self.anonymous:
            return [
                f"auth: OFF ({ANONYMOUS_VAR}=1, local development only); a personal token created while "
                f"this runs is ignored: restart without {ANONYMOUS_VAR} to require tokens"
            ]
        lines = []
        if self.untrusted:
            lines.append(f"auth: OAuth sign-ins refused: {self.untrusted}")
        if self.shared:
            lines.append(
                f"auth: bearer token from {TOKEN_VAR} (principal `shared`; or ?token=, weaker: it lands in "
                "logs); personal tokens name each caller: `kbkit token create NAME`"
            )
        if self.personal:
            state = "" if self.tokens_file.exists() else " (none yet: `kbkit token create NAME`)"
            lines.append(f"auth: personal tokens from {self.tokens_file}{state}")
        policy = self.with_audience(url)
        if policy is not None:
            members = [*(f"sub={s}" for s in policy.allowed_subjects)]
            members += [f"{k} in {list(v)}" for k, v in (policy.claims or {}).items()]
            lines.append(
                f"auth: OAuth access tokens from {policy.issuer} for audience {policy.audience}; "
                f"members: {' or '.join(members)}"
                + (f"; required scopes: {' '.join(policy.scopes)}" if policy.scopes else "")
            )
            if self.oauth is not None and not self.oauth.audience and self.host in ("0.0.0.0", "::"):
                lines.append(
                    "auth: warning: no [server.http.oauth] audience and no [sync] remote_url, so tokens "
                    f"must carry aud={policy.audience}, an address no client signs in for; set audience "
                    "to the URL clients use"
                )
        return lines

    def verifier(self, url: str) -> JwtVerifier | None:
        policy = self.with_audience(url)
        return JwtVerifier(policy, http_fetch()) if policy is not None else None

    def store(self, report: Callable[[str], None]) -> TokenStore | None:
        return TokenStore(self.tokens_file, report=report) if self.personal else None


def tokens_path(settings: Settings) -> Path:
    """The tokens file: `[server.http] tokens_file` (relative to kbkit.toml), else the state folder's."""
    configured = settings.http.tokens_file
    return (settings.root / configured).resolve() if configured else settings.state_dir / TOKENS_FILE


def plan_auth(settings: Settings, *, loopback: bool, host: str, log_format: LogFormat = "text") -> AuthPlan:
    shared = settings.env.get(TOKEN_VAR) or None
    anonymous = settings.env.get(ANONYMOUS_VAR, "") in ("1", "true", "yes")
    path = tokens_path(settings)
    explicit = bool(settings.http.tokens_file)
    if _inside_kb(settings, path):
        raise ConfigError(
            f"the tokens file {path} is inside the kb folder, which agents can read",
            file=settings.origin("server.http.tokens_file"),
            key="server.http.tokens_file",
            fix="keep it in the state folder (the default) or elsewhere outside the kb folder",
        )
    exists = path.exists() or path.is_symlink()
    if explicit and not exists:
        raise ConfigError(
            f"the tokens file {path} does not exist",
            file=settings.origin("server.http.tokens_file"),
            key="server.http.tokens_file",
            fix="create a token (`kbkit token create NAME`, which makes the file) or fix the path",
        )
    if exists:
        read_tokens(path)  # a symlink, a loose mode or a corrupt file: refused now, with the fix
    oauth_config = settings.http.oauth
    oauth = None
    if oauth_config.issuer:
        oauth = OAuthPolicy(
            issuer=oauth_config.issuer,
            audience=oauth_config.audience or settings.sync_remote_url,
            scopes=oauth_config.scopes,
            memory_scope=oauth_config.memory_scope,
            allowed_subjects=oauth_config.allowed_subjects,
            claims=dict(oauth_config.claims),
        )
    untrusted = None
    trust = auth_trust(settings)
    if trust.widened:
        if any(not phrase.startswith("oauth.") for phrase in trust.widened) or not (shared or exists):
            raise ConfigError(trust.waiting(), fix=trust.fix())
        oauth, untrusted = None, f"{trust.waiting()}; {trust.fix()}"
    if not (shared or exists or oauth or anonymous):
        raise ConfigError(
            f"no {TOKEN_VAR} is set, no personal token exists and there is no [server.http.oauth]: "
            "nothing would let a client in. Create a token per person with "
            f"`kbkit token create NAME` (or add {TOKEN_VAR}=<a long random string> to {ENV_FILE}); "
            f"for local development only, {ANONYMOUS_VAR}=1 runs without auth on loopback"
        )
    if anonymous and not (shared or exists or oauth) and not loopback:
        raise ConfigError(
            f"{ANONYMOUS_VAR}=1 is refused on a non-loopback bind ({host}); set {TOKEN_VAR} or bind 127.0.0.1"
        )
    return AuthPlan(
        shared=shared,
        tokens_file=path,
        personal=not anonymous or bool(shared or exists or oauth),
        oauth=oauth,
        anonymous=anonymous and not (shared or exists or oauth),
        log_format=log_format,
        host=host,
        untrusted=untrusted,
        running=settings.state_dir / RUNNING_FILE,
        started_with=http_settings(settings),
    )


RUNNING_FILE = "http-server.json"
"""In the state folder: the pid and `[server.http]` settings of a running `kbkit serve --http`."""


def http_settings(settings: Settings) -> dict[str, Any]:
    """`[server.http]` as JSON: what a running server applied, compared by doctor with the file now."""
    return dict(settings.http.model_dump(mode="json"))


def record_running(plan: AuthPlan) -> None:
    """Say which settings this process serves with (best effort: doctor only reads it)."""
    if plan.running is None:
        return
    with contextlib.suppress(OSError, KbkitError):
        atomic_write_text(plan.running, json.dumps({"pid": os.getpid(), "http": plan.started_with}) + "\n")


def forget_running(plan: AuthPlan) -> None:
    if plan.running is None:
        return
    try:
        if json.loads(plan.running.read_text()).get("pid") == os.getpid():
            plan.running.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def stale_settings(settings: Settings) -> tuple[int, list[str]] | None:
    """(pid, the `[server.http]` keys changed since it started) of a running server, or None."""
    try:
        record = json.loads((settings.state_dir / RUNNING_FILE).read_text())
        pid, started = int(record["pid"]), dict(record["http"])
        os.kill(pid, 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    now = http_settings(settings)
    return pid, [key for key in now if now[key] != started.get(key)]


def _inside_kb(settings: Settings, path: Path) -> bool:
    try:
        parts = path.resolve().relative_to(settings.kb_path.resolve()).parts
    except ValueError:
        return False
    return not any(part in settings.exclude_dirs for part in parts[:-1])
