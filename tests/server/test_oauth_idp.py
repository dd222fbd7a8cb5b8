"""Sign-in through a real identity provider: node-oidc-provider on loopback issues JWT access
tokens by client credentials, and the SDK's own OAuth client walks 401 -> protected resource
metadata -> token -> retry against `kbkit serve --http` in both protocol eras (docs/adr/0032)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from tests.helpers.http import INITIALIZE, JSON_HEADERS, STOPPED, HttpServer
from tests.helpers.project import make_project
from tests.helpers.serve import ERAS
from tests.helpers.wait import wait_until
from tests.peers.node import IDP, OIDC_PROVIDER, require

pytestmark = [pytest.mark.anyio, pytest.mark.idp, pytest.mark.xdist_group("idp")]


class IdentityProvider:
    def __init__(self) -> None:
        node, entry = require(IDP, "node-oidc-provider (tests/peers/npm)")
        if not OIDC_PROVIDER.is_file():
            require(OIDC_PROVIDER, "node-oidc-provider (tests/peers/npm)")
        self.process = subprocess.Popen(
            [node, entry], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=IDP.parent
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # printed once it listens; EOF if it died
        if not line:
            raise RuntimeError(f"the identity provider exited ({self.process.wait(timeout=10)})")
        self.issuer: str = json.loads(line)["issuer"]

    def token(self, client: str, resource: str, scope: str = "kb kb.memory") -> str:
        answer = httpx2.post(
            f"{self.issuer}/token",
            auth=(client, f"secret-of-{client}"),
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    provider = IdentityProvider()
    yield provider
    provider.stop()


def oauth_server(tmp_path: Path, issuer: str) -> HttpServer:
    root = make_project(tmp_path / "project")
    (root / "kbkit.local.toml").write_text(  # the operator's own file: no `kbkit trust` needed
        f'[server.http.oauth]\nissuer = "{issuer}"\nscopes = ["kb"]\nclaims = {{ groups = ["eng"] }}\n'
    )
    return HttpServer(root, token=None).wait_ready()


class Memory(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.mark.parametrize("mode", ERAS)
async def test_the_sdk_client_signs_in_by_client_credentials_and_searches(
    tmp_path: Path, idp: IdentityProvider, mode: str
) -> None:
    server = oauth_server(tmp_path, idp.issuer)
    try:
        assert f"OAuth access tokens from {idp.issuer}" in server.stderr()
        wait_until(lambda: f"oauth: {idp.issuer} answers" in server.stderr(), what="the issuer line")
        first = httpx2.post(server.url, headers=JSON_HEADERS, json={}, timeout=30)
        assert first.status_code == 401
        metadata_url = f"{server.base}/.well-known/oauth-protected-resource/mcp"
        assert f'resource_metadata="{metadata_url}"' in first.headers["www-authenticate"]
        metadata = httpx2.get(metadata_url, timeout=30).json()
        assert metadata["resource"] == server.url and metadata["authorization_servers"] == [idp.issuer]
        auth = ClientCredentialsOAuthProvider(
            server_url=server.url,
            storage=Memory(),
            client_id="eng-agent",
            client_secret="secret-of-eng-agent",
            scope="kb kb.memory",
            issuer=idp.issuer,
        )
        async with (
            httpx2.AsyncClient(auth=auth, timeout=30) as http,
            Client(streamable_http_client(server.url, http_client=http), mode=mode, cache=None) as client,
        ):
            result = await client.call_tool("search", {"query": "deploy"})
            assert not result.is_error
        wait_until(
            lambda: "eng-agent (oauth) tools/call:search 200" in server.stderr(), what="the audit line"
        )
    finally:
        assert server.stop() == STOPPED


async def test_outsiders_scopeless_and_foreign_tokens_are_refused_and_cached_keys_outlive_the_idp(
    tmp_path: Path, idp: IdentityProvider
) -> None:
    server = oauth_server(tmp_path, idp.issuer)
    try:
        wait_until(lambda: f"oauth: {idp.issuer} answers" in server.stderr(), what="the issuer line")
        listing = INITIALIZE

        def post(token: str) -> httpx2.Response:
            return httpx2.post(
                server.url,
                headers={**JSON_HEADERS, "authorization": f"Bearer {token}"},
                json=listing,
                timeout=30,
            )

        member = idp.token("eng-agent", server.url)
        assert post(member).status_code == 200
        outsider = post(idp.token("sales-agent", server.url))
        assert outsider.status_code == 403 and 'error="access_denied"' in outsider.headers["www-authenticate"]
        scopeless = post(idp.token("no-scope-agent", server.url, scope="other"))
        assert (
            scopeless.status_code == 403
            and 'error="insufficient_scope"' in scopeless.headers["www-authenticate"]
        )
        foreign = post(idp.token("eng-agent", "http://127.0.0.1:9/mcp"))
        assert foreign.status_code == 401
        idp.stop()
        assert post(member).status_code == 200  # the keys are cached: a down IdP stops nobody signed in
    finally:
        assert server.stop() == STOPPED
