"""How the HTTP app gets its gate: the routes it adds (RFC 9728 metadata) and the middleware.

At start-up (the ASGI lifespan) the identity provider's keys are fetched once and a line says
whether it answered; while serving, the keys are fetched again on schedule and the tokens file is
watched for revoked tokens whose streams are open; at shutdown the last-use times gathered so far
are saved (in a worker thread, never waiting for another writer's lock).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import cast
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
from pydantic import AnyHttpUrl
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbkit.server.auth.audit import Audit
from kbkit.server.auth.gate import AuthGate, GatePolicy
from kbkit.server.auth.oauth import JwtVerifier
from kbkit.server.auth.plan import AuthPlan, forget_running, record_running
from kbkit.server.auth.share import Shares
from kbkit.server.auth.tokens import TokenStore


def report(line: str) -> None:
    sys.stderr.write(f"[kbkit] {line}\n")
    sys.stderr.flush()


def gated(
    plan: AuthPlan | None,
    url: str,
    kb_tools: tuple[str, ...],
    *,
    open_paths: tuple[str, ...],
    shares: Shares | None = None,
) -> tuple[list[Route], Callable[[ASGIApp], ASGIApp]]:
    """(routes to add to the app, a function that wraps the app in the gate)."""
    if plan is None:
        return [], lambda app: app
    from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes

    routes: list[Route] = []
    verifier = plan.verifier(url)
    metadata_url = None
    paths = set(open_paths)
    if verifier is not None:
        policy = verifier.policy
        # The metadata names this server; an audience that is no URL (Entra's `api://kbkit`) is
        # only what tokens carry, so the metadata then names the server's own URL.
        resource = AnyHttpUrl(
            policy.audience if urlsplit(policy.audience).scheme in ("http", "https") else url
        )
        routes = create_protected_resource_routes(
            resource_url=resource,
            # as a string: the metadata model keeps a path-less issuer without a trailing slash, and
            # clients compare issuers exactly (RFC 8414); AnyHttpUrl() here would add one
            authorization_servers=[cast(AnyHttpUrl, policy.issuer)],
            scopes_supported=list(dict.fromkeys([*policy.scopes, policy.memory_scope])),
            resource_name="kbkit knowledge base",
        )
        metadata_url = str(build_resource_metadata_url(resource))
        paths.update(route.path for route in routes)
    store = plan.store(report)
    policy_ = GatePolicy(
        shared=plan.shared,
        store=store,
        verifier=verifier,
        anonymous=plan.anonymous,
        kb_tools=kb_tools,
        resource_metadata_url=metadata_url,
        open_paths=frozenset(paths),
        shares=shares,
    )
    audit = Audit(plan.log_format)

    def wrap(app: ASGIApp) -> ASGIApp:
        return _Lifespan(AuthGate(app, policy_, audit), verifier, store, plan)

    return routes, wrap


class _Lifespan:
    """Passes everything on; on the lifespan's start and end, does the gate's own chores."""

    def __init__(
        self, app: AuthGate, verifier: JwtVerifier | None, store: TokenStore | None, plan: AuthPlan
    ) -> None:
        self.app = app
        self.verifier = verifier
        self.store = store
        self.plan = plan

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        background = anyio.CancelScope()

        async def keep_up() -> None:
            """The keys on schedule and the revocation watch, until the lifespan ends."""
            with background:
                async with anyio.create_task_group() as group:
                    if self.verifier is not None:
                        group.start_soon(self.verifier.run)
                    if self.store is not None:
                        group.start_soon(self.app.watch_revocations)

        async with anyio.create_task_group() as chores_group:

            async def chores() -> Message:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    record_running(self.plan)
                    if self.verifier is not None:
                        await self._first_fetch(self.verifier)
                    chores_group.start_soon(keep_up)
                elif message["type"] == "lifespan.shutdown":
                    background.cancel()
                    forget_running(self.plan)
                    self.app.audit.close()  # the refusals still held back, counted
                    if self.store is not None:
                        with anyio.CancelScope(shield=True):
                            await anyio.to_thread.run_sync(self.store.save_last_use)
                return message

            try:
                await self.app(scope, chores, send)
            finally:
                background.cancel()

    @staticmethod
    async def _first_fetch(verifier: JwtVerifier) -> None:
        issuer = verifier.policy.issuer
        if await verifier.refresh():
            report(f"oauth: {issuer} answers; {verifier.key_count} signing key(s) cached")
        else:
            report(
                f"oauth: {issuer} does not answer ({verifier.last_error}); OAuth sign-ins are refused until "
                "it does (the keys are fetched again at the next token, at most every 5 s, and every 30 s)"
            )
