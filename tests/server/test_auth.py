"""Who may use `kbkit serve --http`, in memory: the tokens file, JWT checks, the gate, the audit
line (docs/adr/0031, 0032). The same over real HTTP: tests/server/test_http_auth.py and test_oauth_idp.py."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from kbkit.errors import InputError, TokensFileError
from kbkit.server.auth import tokens
from kbkit.server.auth.audit import Audit, Entry
from kbkit.server.auth.gate import AuthGate, GatePolicy
from kbkit.server.auth.oauth import REFETCH_SECONDS, JwtVerifier, OAuthPolicy
from kbkit.server.auth.tokens import TokenStore, create, read_tokens, revoke

ISSUER = "https://id.example.test"
AUDIENCE = "https://kb.example.test/mcp"
SHARED = "shared-secret-0123456789"


# --- the tokens file ---------------------------------------------------------------------------


def test_a_token_is_shown_once_and_only_its_hash_is_kept_private(tmp_path: Path) -> None:
    path = tmp_path / "state" / "tokens.json"
    token = create(path, "alice", "read", 30)
    assert token.startswith("kbk_") and len(token) >= 4 + 43  # 256 bits, base64url
    text = path.read_text()
    assert token not in text and token[4:] not in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    (record,) = read_tokens(path)[0]
    assert record.name == "alice" and record.scope == "read" and record.expires is not None
    assert "sha256" not in record.public(tokens.now_utc())


def test_names_are_checked_and_unique_and_revoke_says_when_none_matches(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    create(path, "alice", "memory", None)
    with pytest.raises(InputError, match="exists"):
        create(path, "alice", "read", None)
    with pytest.raises(InputError, match="not a token name"):
        create(path, "a b\n", "read", None)
    with pytest.raises(InputError, match="no token named 'bob'"):
        revoke(path, "bob")
    revoke(path, "alice")
    assert read_tokens(path)[0] == []


def test_a_token_narrowed_to_paths_keeps_them_and_a_path_leaving_the_kb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    token = create(path, "ci-bot", "read", None, paths=("public/", "runbooks/failover.md"))
    (record,) = read_tokens(path)[0]
    assert record.paths == ("public", "runbooks/failover.md")
    assert TokenStore(path).check(token).paths == record.paths  # type: ignore[union-attr]
    for bad in ("../etc", "/abs", "a/./b", ""):
        with pytest.raises(InputError, match="--paths"):
            create(path, f"bot{len(bad)}", "read", None, paths=(bad,))
    unnarrowed = create(path, "alice", "read", None)
    assert "paths" not in json.loads(path.read_text())["tokens"][-1]
    assert TokenStore(path).check(unnarrowed).paths == ()  # type: ignore[union-attr]


def test_the_store_sees_a_revoke_and_a_new_token_without_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    alice = create(path, "alice", "memory", None)
    store = TokenStore(path)
    assert store.check(alice) == tokens.Holder("alice", "memory")
    bob = create(path, "bob", "read", None)
    assert store.check(bob) == tokens.Holder("bob", "read")
    revoke(path, "alice")
    assert store.check(alice) is None
    assert store.check("kbk_" + "x" * 43) is None


def test_an_expired_token_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    token = create(path, "alice", "read", 1)
    later = datetime.now(UTC) + timedelta(days=1, seconds=5)
    assert TokenStore(path).check(token) is not None
    assert TokenStore(path, clock=lambda: later).check(token) is None


def test_last_use_is_saved_in_batches_not_per_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tokens.json"
    token = create(path, "alice", "read", None)
    writes: list[int] = []
    real_write = tokens.write_tokens
    monkeypatch.setattr(tokens, "write_tokens", lambda p, r: (writes.append(1), real_write(p, r)))
    clock = [0.0]
    store = TokenStore(path, monotonic=lambda: clock[0], interval=60.0)
    for _ in range(500):
        assert store.check(token) is not None
    assert len(writes) == 1  # a token's first use is saved at once, later ones once a minute
    clock[0] = 61.0
    assert store.check(token) is not None
    assert len(writes) == 2
    assert read_tokens(path)[0][0].last_used is not None
    assert store.check(token) is not None  # the store's own write is re-read, and still accepted


@pytest.mark.parametrize("problem", ["symlink", "world-readable", "corrupt", "fifo"])
def test_a_tokens_file_that_cannot_be_trusted_is_refused_with_the_fix(tmp_path: Path, problem: str) -> None:
    path = tmp_path / "tokens.json"
    token = create(path, "alice", "read", None)
    if problem == "symlink":
        real = tmp_path / "real.json"
        path.rename(real)
        path.symlink_to(real)
        fix = "symlink"
    elif problem == "world-readable":
        path.chmod(0o644)
        fix = f"chmod 600 {path}"
    elif problem == "corrupt":
        path.write_text('{"version": 1, "tokens": [{"name": 3}]}')
        path.chmod(0o600)
        fix = "move it aside"
    else:
        path.unlink()
        os.mkfifo(path, 0o600)
        fix = "not a regular file"
    with pytest.raises(TokensFileError, match="tokens file") as caught:
        read_tokens(path)
    assert fix in str(caught.value)
    lines: list[str] = []
    store = TokenStore(path, report=lines.append)
    assert store.check(token) is None and store.problem is not None
    assert len(lines) == 1 and "refused until fixed" in lines[0]


def test_a_missing_tokens_file_holds_no_tokens(tmp_path: Path) -> None:
    assert read_tokens(tmp_path / "none.json")[0] == []
    assert TokenStore(tmp_path / "none.json").check("kbk_abc") is None


# --- JWT access tokens -------------------------------------------------------------------------


KEYS = [rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2)]
"""Generated once: the issuer's key and an attacker's."""


class Issuer:
    """An identity provider in memory: an RSA key, its JWKS, and a switch to take it down."""

    def __init__(self, key: int = 0) -> None:
        self.key = KEYS[key]
        self.kid = "k1"
        self.up = True
        self.fetched: list[str] = []

    def jwks(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    async def fetch(self, url: str) -> Mapping[str, Any]:
        self.fetched.append(url)
        if not self.up:
            raise ConnectionError("connection refused")
        if url.endswith("/.well-known/openid-configuration"):
            return {"issuer": ISSUER, "jwks_uri": ISSUER + "/jwks"}
        if url == ISSUER + "/jwks":
            return self.jwks()
        raise LookupError(url)

    def token(self, headers: Mapping[str, Any] | None = None, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 300, "scope": "kb"}
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, self.key, algorithm="RS256", headers={"kid": self.kid, **(headers or {})})


POLICY = OAuthPolicy(
    issuer=ISSUER, audience=AUDIENCE, scopes=("kb",), memory_scope="kb.memory", claims={"groups": ("eng",)}
)


def verifier(idp: Issuer, clock: list[float] | None = None) -> JwtVerifier:
    now = clock or [1000.0]
    return JwtVerifier(POLICY, idp.fetch, monotonic=lambda: now[0])


def _public_pem(idp: Issuer) -> bytes:
    return idp.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def attacks(idp: Issuer) -> dict[str, str]:
    """Each token an attacker might send, by name: all must be refused with 401."""
    good = idp.token(groups=["eng"])
    head, body, sig = good.split(".")
    now = int(time.time())
    other = Issuer(key=1)
    none_token = jwt.encode(
        {"iss": ISSUER, "aud": AUDIENCE, "sub": "x", "exp": now + 60}, None, algorithm="none"
    )
    hs = jwt.api_jws.PyJWS()
    hs._algorithms["HS256"].prepare_key = lambda key: key  # type: ignore[method-assign]  # PyJWT refuses PEM as an HMAC secret
    hs256 = hs.encode(
        json.dumps({"iss": ISSUER, "aud": AUDIENCE, "sub": "x", "exp": now + 60, "groups": ["eng"]}).encode(),
        _public_pem(idp),
        algorithm="HS256",
        headers={"kid": idp.kid},
    )
    return {
        "malformed": "not.a.jwt",
        "garbage": "a.b.c",
        "tampered": f"{head}.{body[:-2]}{'A' if body[-2] != 'A' else 'B'}{body[-1]}.{sig}",
        "other-key": other.token(groups=["eng"]),
        "expired": idp.token(groups=["eng"], exp=now - 3600, iat=now - 7200),
        "not-yet-valid": idp.token(groups=["eng"], nbf=now + 3600),
        "wrong-audience": idp.token(groups=["eng"], aud="https://other.example.test/mcp"),
        "wrong-issuer": idp.token(groups=["eng"], iss="https://evil.example.test"),
        "alg-none": none_token,
        "hs256-with-the-public-key": hs256,
        "no-exp": idp.token(groups=["eng"], exp=None),
        "unknown-kid": idp.token({"kid": "nope"}, groups=["eng"]),
        "huge": idp.token(groups=["eng"], pad="x" * 20000),
    }


@pytest.mark.anyio
async def test_a_good_token_of_a_member_is_accepted() -> None:
    idp = Issuer()
    verdict = await verifier(idp).verify(idp.token(groups=["eng"], scope="kb kb.memory"))
    assert verdict.outcome == "ok" and verdict.subject == "alice" and "kb.memory" in verdict.scopes


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(attacks(Issuer())))
async def test_every_forged_or_stale_token_is_refused(name: str) -> None:
    idp = Issuer()
    verdict = await verifier(idp).verify(attacks(idp)[name])
    assert verdict.outcome == "invalid", verdict


@pytest.mark.anyio
async def test_a_valid_token_of_someone_who_does_not_belong_is_forbidden_and_scopes_are_required() -> None:
    idp = Issuer()
    check = verifier(idp)
    assert (await check.verify(idp.token(groups=["sales"]))).outcome == "forbidden"
    assert (await check.verify(idp.token(groups=["eng"], scope="other"))).outcome == "scope"


@pytest.mark.anyio
async def test_a_storm_of_unknown_kids_fetches_the_keys_at_most_once_per_interval() -> None:
    idp = Issuer()
    clock = [1000.0]
    check = verifier(idp, clock)
    assert (await check.verify(idp.token(groups=["eng"]))).outcome == "ok"
    jwks_fetches = idp.fetched.count(ISSUER + "/jwks")
    for n in range(200):
        assert (await check.verify(idp.token({"kid": f"storm-{n}"}, groups=["eng"]))).outcome == "invalid"
    assert idp.fetched.count(ISSUER + "/jwks") <= jwks_fetches + 1
    clock[0] += REFETCH_SECONDS + 0.1
    await check.verify(idp.token({"kid": "later"}, groups=["eng"]))
    assert idp.fetched.count(ISSUER + "/jwks") <= jwks_fetches + 2


@pytest.mark.anyio
async def test_an_issuer_that_is_down_does_not_stop_cached_keys_and_a_rotated_key_is_fetched() -> None:
    idp = Issuer()
    clock = [1000.0]
    check = verifier(idp, clock)
    assert await check.refresh()
    idp.up = False
    clock[0] += 60
    assert (await check.verify(idp.token(groups=["eng"]))).outcome == "ok"
    assert (await check.verify(idp.token({"kid": "new"}, groups=["eng"]))).outcome == "invalid"
    assert check.last_error is not None and "refused" in check.last_error
    idp.up = True
    idp.kid = "k2"
    clock[0] += 60
    assert (await check.verify(idp.token(groups=["eng"]))).outcome == "ok"


# --- the gate ----------------------------------------------------------------------------------


async def _whoami(request: Request) -> JSONResponse:
    user = request.scope.get("user")
    return JSONResponse({"client": getattr(getattr(user, "access_token", None), "client_id", None)})


def gate(
    tmp_path: Path, lines: list[str], idp: Issuer | None = None, log_format: str = "text"
) -> httpx2.AsyncClient:
    path = tmp_path / "tokens.json"
    policy = GatePolicy(
        shared=SHARED,
        store=TokenStore(path),
        verifier=verifier(idp) if idp else None,
        resource_metadata_url="https://kb.example.test/.well-known/oauth-protected-resource/mcp",
        open_paths=frozenset({"/healthz"}),
    )
    inner = Starlette(routes=[Route("/mcp", _whoami, methods=["POST", "GET"])])
    app = AuthGate(inner, policy, Audit(log_format, lines.append))  # type: ignore[arg-type]
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1")


def call(tool: str, query: str = "secret words") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {"query": query}},
    }


@pytest.mark.anyio
async def test_the_gate_names_each_principal_and_says_401_with_the_metadata(tmp_path: Path) -> None:
    idp = Issuer()
    read = create(tmp_path / "tokens.json", "bob", "read", None)
    lines: list[str] = []
    async with gate(tmp_path, lines, idp) as client:
        refused = await client.post("/mcp", json=call("search"))
        assert refused.status_code == 401
        assert 'resource_metadata="https://kb.example.test/' in refused.headers["www-authenticate"]
        for bearer, client_id in (
            (SHARED, "shared:shared"),
            (read, "token:bob"),
            (idp.token(groups=["eng"]), "oauth:alice"),
        ):
            answer = await client.post(
                "/mcp", json=call("search"), headers={"authorization": f"Bearer {bearer}"}
            )
            assert answer.status_code == 200 and answer.json() == {"client": client_id}
    assert [line.split()[3] for line in lines] == ["-", "shared", "bob", "alice"]
    for line in lines:
        assert "secret words" not in line and read not in line and SHARED not in line


@pytest.mark.anyio
async def test_a_read_token_cannot_call_a_memory_tool_403_insufficient_scope(tmp_path: Path) -> None:
    read = create(tmp_path / "tokens.json", "bob", "read", None)
    memory = create(tmp_path / "tokens.json", "carol", "memory", None)
    lines: list[str] = []
    async with gate(tmp_path, lines, log_format="json") as client:
        denied = await client.post("/mcp", json=call("retain"), headers={"authorization": f"Bearer {read}"})
        assert denied.status_code == 403
        assert 'error="insufficient_scope"' in denied.headers["www-authenticate"]
        allowed = await client.post(
            "/mcp", json=call("retain"), headers={"authorization": f"Bearer {memory}"}
        )
        assert allowed.status_code == 200
    first, second = (json.loads(line) for line in lines)
    assert first["principal"] == "bob" and first["tool"] == "retain" and first["status"] == 403
    assert second["principal"] == "carol" and second["status"] == 200 and second["bytes"] > 0
    assert set(first) >= {"time", "principal", "method", "tool", "status", "bytes", "duration_ms"}


@pytest.mark.anyio
async def test_oauth_refusals_401_and_403_as_the_spec_says(tmp_path: Path) -> None:
    idp = Issuer()
    statuses = {}
    async with gate(tmp_path, [], idp) as client:
        for name, token in attacks(idp).items():
            answer = await client.post(
                "/mcp", json=call("search"), headers={"authorization": f"Bearer {token}"}
            )
            statuses[name] = answer.status_code
            assert name not in answer.text
        outsider = await client.post(
            "/mcp", json=call("search"), headers={"authorization": f"Bearer {idp.token(groups=['sales'])}"}
        )
        no_scope = await client.post(
            "/mcp",
            json=call("search"),
            headers={"authorization": f"Bearer {idp.token(groups=['eng'], scope='x')}"},
        )
    assert statuses == {**dict.fromkeys(statuses, 401), "huge": 400}  # RFC 6750: a malformed request
    assert outsider.status_code == 403 and 'error="access_denied"' in outsider.headers["www-authenticate"]
    assert no_scope.status_code == 403 and 'scope="kb"' in no_scope.headers["www-authenticate"]


@pytest.mark.anyio
async def test_unknown_revoked_and_never_existing_tokens_get_the_same_answer(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    revoked = create(path, "alice", "read", None)
    revoke(path, "alice")
    async with gate(tmp_path, []) as client:
        answers = [
            await client.post("/mcp", json={}, headers={"authorization": f"Bearer {token}"})
            for token in (revoked, "kbk_" + "A" * 43, "not-even-a-token")
        ]
    assert len({(a.status_code, a.text, a.headers["www-authenticate"]) for a in answers}) == 1


@pytest.mark.anyio
async def test_a_huge_authorization_header_is_refused_before_parsing(tmp_path: Path) -> None:
    async with gate(tmp_path, [], Issuer()) as client:
        answer = await client.post("/mcp", json={}, headers={"authorization": "Bearer " + "a" * 100_000})
    assert answer.status_code == 400 and "too long" in answer.text


def test_refused_lines_are_rate_limited_known_principals_are_not() -> None:
    lines: list[str] = []
    clock = [0.0]
    audit = Audit("text", lines.append, monotonic=lambda: clock[0])
    for _ in range(1000):
        audit.record(Entry("-", "-", "POST", None, 401, 10, 1.0))
        audit.record(Entry("bob", "token", "tools/call", "search", 200, 10, 1.0))
    clock[0] = 11.0
    audit.record(Entry("-", "-", "POST", None, 401, 10, 1.0))
    refused = [line for line in lines if " - (-) " in line]
    assert len(refused) == 2 and "+999 refused not logged" in refused[1]
    assert len(lines) - len(refused) == 1000


# --- the relay's token -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "env_file", "expected"),
    [
        (
            {},
            "KBKIT_TOKEN=kbk_personal\nMCP_TOKEN=shared-secret-0123456789\n",
            ("kbk_personal", "KBKIT_TOKEN"),
        ),
        ({"MCP_TOKEN": "from-env-0123456789"}, "KBKIT_TOKEN=kbk_personal\n", ("kbk_personal", "KBKIT_TOKEN")),
        ({"KBKIT_TOKEN": "kbk_env"}, "KBKIT_TOKEN=kbk_file\n", ("kbk_env", "KBKIT_TOKEN")),
        ({}, "MCP_TOKEN=shared-secret-0123456789\n", ("shared-secret-0123456789", "MCP_TOKEN")),
        ({}, "", (None, "MCP_TOKEN")),
    ],
)
def test_the_relay_sends_a_personal_token_before_the_shared_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], env_file: str, expected: tuple
) -> None:
    from kbkit.server.relay import read_token

    for var in ("KBKIT_TOKEN", "MCP_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    for var, value in environ.items():
        monkeypatch.setenv(var, value)
    (tmp_path / ".env.local").write_text(env_file)
    token = read_token(tmp_path)
    assert (token.value, token.var) == expected
    assert (token.value or "kbk_") not in token.describe()
