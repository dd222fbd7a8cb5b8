"""OAuth 2.1 access tokens: JWTs from the team's identity provider, checked here (docs/adr/0032).

kbkit is a resource server only. It reads the issuer's metadata once to find its JWKS, keeps the
keys in memory, and checks each token locally with PyJWT: an asymmetric algorithm named by the
token and allowed for its key (never `none`, never an HMAC: a public key is no secret), the
signature, `iss`, `aud` (the server's public URL unless configured), `exp` and `nbf` (30 s of
leeway), the required scopes, and who belongs (`allowed_subjects`, or a claim with an allowed
value). A token signed with an unknown `kid` makes the keys be fetched again, at most once every
REFETCH_SECONDS whatever arrives; an issuer that is down leaves the cached keys in use. The keys
are also fetched again on a schedule (`run`): when the JWKS response's `Cache-Control: max-age`
says, kept between REFETCH_SECONDS and KEYS_MAX_AGE, so a key the issuer retires stops working
within KEYS_MAX_AGE (5 minutes).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import jwt
from jwt import PyJWK, PyJWKSet

MAX_TOKEN_CHARS = 8192
"""A longer bearer is refused before any parsing."""
REFETCH_SECONDS = 5.0
"""The least time between two fetches of the issuer's keys."""
KEYS_MAX_AGE = 300.0
"""The longest the keys are trusted without asking the issuer again: a retired key's lifetime here."""
RETRY_SECONDS = 30.0
"""After a failed scheduled fetch, the next try."""
LEEWAY_SECONDS = 30
FETCH_TIMEOUT = 5.0
MAX_DOCUMENT_BYTES = 1024 * 1024
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Asymmetric signatures only: `none` and the HMACs are refused before any key is looked at."""
MEMORY_SCOPE_DEFAULT = "kb.memory"

Fetch = Callable[[str], Awaitable[Mapping[str, Any]]]
"""GET a URL and return its JSON object (or raise)."""


@dataclass(frozen=True)
class OAuthPolicy:
    """What the server trusts and whom it admits, from `[server.http.oauth]`."""

    issuer: str
    audience: str
    scopes: tuple[str, ...] = ()
    """Scopes every token must carry."""
    memory_scope: str = MEMORY_SCOPE_DEFAULT
    """The scope that also reaches the memory tools."""
    allowed_subjects: tuple[str, ...] = ()
    claims: Mapping[str, tuple[str, ...]] | None = None
    """Claim name -> allowed values: a token with any one of them belongs."""

    def belongs(self, claims: Mapping[str, Any]) -> bool:
        if claims.get("sub") in self.allowed_subjects:
            return True
        for name, allowed in (self.claims or {}).items():
            value = claims.get(name)
            values = value if isinstance(value, list) else [value]
            if any(isinstance(v, str) and v in allowed for v in values):
                return True
        return False


@dataclass(frozen=True)
class Verdict:
    """The outcome of one token: `ok` with the caller, `invalid` (401), `forbidden` or `scope` (403)."""

    outcome: Literal["ok", "invalid", "forbidden", "scope"]
    reason: str
    subject: str = ""
    scopes: frozenset[str] = frozenset()
    expires: float | None = None
    """The token's `exp` (epoch seconds): streams it opened end then."""
    claims: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The claims with string values (or lists of them): what restricted folders grant by."""


class Document(dict[str, Any]):
    """A fetched JSON object, with the response's `Cache-Control: max-age` (None when absent)."""

    max_age: float | None = None


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The granted scopes, however the issuer writes them: `scope` or `scp` (Entra ID), each as a
    space-separated string or a JSON list."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(s for s in value if isinstance(s, str))
    return frozenset(found)


def max_age(cache_control: str) -> float | None:
    """`max-age` from a Cache-Control header (`no-store`/`no-cache` as 0), or None."""
    directives = [part.strip().lower() for part in cache_control.split(",")]
    if "no-store" in directives or "no-cache" in directives:
        return 0.0
    for directive in directives:
        name, _, value = directive.partition("=")
        if name == "max-age" and value.strip('"').isdigit():
            return float(value.strip('"'))
    return None


class JwtVerifier:
    """Checks access tokens against the issuer's keys, fetched lazily and cached."""

    def __init__(
        self, policy: OAuthPolicy, fetch: Fetch, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.policy = policy
        self._fetch = fetch
        self._monotonic = monotonic
        self._keys: dict[str, PyJWK] = {}
        self._jwks_uri: str | None = None
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()
        self.last_error: str | None = None
        """Why the last fetch of the keys failed, or None after a good one."""
        self.fetches = 0
        self.keys_age = KEYS_MAX_AGE
        """How long the keys of the last good fetch are trusted before the next scheduled one."""

    @property
    def key_count(self) -> int:
        return len(self._keys)

    async def refresh(self) -> bool:
        """Fetch the issuer's metadata (once) and keys; False (keys kept) when the issuer fails."""
        self._fetched_at = self._monotonic()
        self.fetches += 1
        try:
            if self._jwks_uri is None:
                self._jwks_uri = await self._discover()
            document = await self._fetch(self._jwks_uri)
            keyset = PyJWKSet.from_dict(dict(document))
        except Exception as exc:  # any failure of the issuer keeps the keys we have
            self.last_error = f"{type(exc).__name__}: {exc}"[:300]
            return False
        self._keys = {k.key_id: k for k in keyset.keys if k.key_id and k.public_key_use in (None, "sig")}
        self.last_error = None
        age = getattr(document, "max_age", None)
        self.keys_age = KEYS_MAX_AGE if age is None else min(KEYS_MAX_AGE, max(REFETCH_SECONDS, age))
        return True

    async def run(self) -> None:
        """Fetch the keys again whenever they are due (runs for the server's lifetime)."""
        while True:
            await anyio.sleep(self.keys_age if self.last_error is None else RETRY_SECONDS)
            async with self._lock:
                await self.refresh()

    async def _discover(self) -> str:
        base = self.policy.issuer.rstrip("/")
        problems = []
        for suffix in ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"):
            try:
                metadata = await self._fetch(base + suffix)
            except Exception as exc:
                problems.append(str(exc))
                continue
            uri = metadata.get("jwks_uri")
            if metadata.get("issuer") == self.policy.issuer and isinstance(uri, str):
                return uri
            problems.append(f"{base + suffix} names another issuer or no jwks_uri")
        raise LookupError("; ".join(problems))

    async def _key(self, kid: str) -> PyJWK | None:
        key = self._keys.get(kid)
        if key is not None:
            return key
        async with self._lock:  # concurrent unknown kids wait for one fetch
            key = self._keys.get(kid)
            recent = self._fetched_at is not None and self._monotonic() - self._fetched_at < REFETCH_SECONDS
            if key is None and not recent:
                await self.refresh()
                key = self._keys.get(kid)
        return key

    async def verify(self, token: str) -> Verdict:
        if len(token) > MAX_TOKEN_CHARS:
            return Verdict("invalid", "token too long")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return Verdict("invalid", "malformed")
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALGORITHMS:
            return Verdict("invalid", f"algorithm {str(alg)[:20]!r} refused")
        if not isinstance(kid, str) or not kid or len(kid) > 256:
            return Verdict("invalid", "no kid")
        key = await self._key(kid)
        if key is None:
            return Verdict("invalid", "unknown kid")
        if key.algorithm_name != alg:
            return Verdict("invalid", "algorithm does not match the key")
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.policy.audience,
                issuer=self.policy.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            return Verdict("invalid", "expired")
        except jwt.ImmatureSignatureError:
            return Verdict("invalid", "not yet valid")
        except jwt.InvalidAudienceError:
            return Verdict("invalid", "wrong audience")
        except jwt.InvalidIssuerError:
            return Verdict("invalid", "wrong issuer")
        except jwt.PyJWTError:
            return Verdict("invalid", "bad signature or claims")
        subject = str(claims["sub"])
        scopes = scopes_of(claims)
        if not self.policy.belongs(claims):
            return Verdict("forbidden", "not a member", subject, scopes)
        missing = [s for s in self.policy.scopes if s not in scopes]
        if missing:
            return Verdict("scope", " ".join(self.policy.scopes), subject, scopes)
        exp = claims.get("exp")
        expires = float(exp) if isinstance(exp, int | float) else None
        return Verdict("ok", "", subject, scopes, expires, string_claims(claims))


MAX_CLAIM_VALUES = 256
"""Values kept of one claim (a group list): restricted folders grant by them, nothing else reads them."""


def string_claims(claims: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each claim whose value is a string or a list of strings, as a tuple, bounded."""
    found: dict[str, tuple[str, ...]] = {}
    for name, value in claims.items():
        values = value if isinstance(value, list) else [value]
        strings = tuple(v for v in values[:MAX_CLAIM_VALUES] if isinstance(v, str))
        if strings:
            found[name] = strings
    return found


def http_fetch(timeout: float = FETCH_TIMEOUT) -> Fetch:
    """A Fetch over httpx2: JSON objects up to MAX_DOCUMENT_BYTES, no redirects to follow."""
    import httpx2

    async def fetch(url: str) -> Mapping[str, Any]:
        async with (
            httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client,
            client.stream("GET", url, headers={"accept": "application/json"}) as response,
        ):
            response.raise_for_status()
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise ValueError(f"{url} answered more than 1 MiB")
        import json

        parsed = json.loads(body)
        if not isinstance(parsed, dict):
            raise ValueError(f"{url} did not answer a JSON object")
        document = Document(parsed)
        document.max_age = max_age(response.headers.get("cache-control", ""))
        return document

    return fetch
