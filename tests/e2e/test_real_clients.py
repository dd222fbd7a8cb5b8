"""A real third-party client against kbkit: the MCP Inspector CLI over stdio and streamable HTTP,
in both protocol eras (`legacy` runs the 2025-11-25 handshake, `modern` speaks 2026-07-28).

The pinned Inspector and the Node 24 it needs come from tests/peers/npm (tests/setup.sh installs
them); without them these tests skip, saying how to install them, and fail under CI.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kbkit.server.rendering import search_text
from tests.helpers.http import TEST_TOKEN, HttpServer
from tests.helpers.project import make_project
from tests.peers.launch import forked_kbkit
from tests.peers.node import INSPECTOR, require

# the Inspector and the shared server are set up once, by one worker:
pytestmark = [pytest.mark.xdist_group("real-clients"), pytest.mark.npm]

PACKAGE = "@modelcontextprotocol/inspector"
PROBE_TIMEOUT = 60
CALL_TIMEOUT = 90
"""Seconds for one Inspector run: Node start-up, kbkit start-up (stdio), one request."""

ERAS = ["legacy", "modern"]
TRANSPORTS = ["stdio", "http"]
DOC_URI = "kb://doc/guide/getting-started.md"
DOC_TEXT = "Install kbkit, then run the indexer over the docs folder."


@dataclass(frozen=True)
class Inspector:
    command: tuple[str, ...]
    env: dict[str, str]

    def invoke(
        self, target: Sequence[str], era: str, method: str, *args: str
    ) -> subprocess.CompletedProcess[str]:
        """One `--cli` run. The target goes last: a stdio target is `-- <command...>`."""
        argv = [*self.command, "--cli", "--protocol-era", era, "--format", "json", "--quiet"]
        argv += ["--method", method, *args, *target]
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=CALL_TIMEOUT, env=self.env, stdin=subprocess.DEVNULL
        )

    def run(self, target: Sequence[str], era: str, method: str, *args: str) -> dict[str, Any]:
        """The `result` of one successful call; a failed call fails the test with the Inspector's stderr."""
        done = self.invoke(target, era, method, *args)
        if done.returncode != 0:
            pytest.fail(
                f"inspector {method} exited {done.returncode}: {done.stderr.strip() or done.stdout.strip()}"
            )
        return json.loads(done.stdout)["result"]


def _locate() -> Inspector:
    """The pinned Inspector run by the Node 24 beside it, with that Node first on PATH (the
    launcher starts its CLI with `node`)."""
    node, entry = require(INSPECTOR, PACKAGE)
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(node).parent), os.environ.get("PATH", "")])}
    probe = subprocess.run(
        [node, entry, "--version"],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    if probe.returncode != 0:
        pytest.fail(f"{PACKAGE} --version exited {probe.returncode}: {probe.stderr.strip()[:300]}")
    return Inspector(command=(node, entry), env=env)


@pytest.fixture(scope="module")
def inspector() -> Inspector:
    return _locate()


@pytest.fixture(scope="module")
def kb_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("real-clients") / "project")


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory, inspector: Inspector) -> Iterator[HttpServer]:
    """A project of its own, so the stdio servers never share an index with it."""
    server = HttpServer(make_project(tmp_path_factory.mktemp("real-clients-http") / "project")).wait_ready()
    yield server
    server.stop()


@pytest.fixture(params=TRANSPORTS)
def target(request: pytest.FixtureRequest, kb_root: Path) -> list[str]:
    """The Inspector's target arguments for `kbkit serve` over one transport."""
    if request.param == "stdio":
        return ["--", *forked_kbkit(), "serve", "--root", str(kb_root)]
    server: HttpServer = request.getfixturevalue("http_server")
    return [
        "--server-url",
        server.url,
        "--transport",
        "http",
        "--header",
        f"Authorization: Bearer {TEST_TOKEN}",
        "--stored-auth-only",
    ]


@pytest.mark.parametrize("era", ERAS)
def test_tools_list_shows_exactly_search_and_get_document(
    inspector: Inspector, target: list[str], era: str
) -> None:
    result = inspector.run(target, era, "tools/list")
    assert [tool["name"] for tool in result["tools"]] == ["search", "get_document"]


@pytest.mark.parametrize("era", ERAS)
def test_a_search_call_returns_a_hit(inspector: Inspector, target: list[str], era: str) -> None:
    result = inspector.run(
        target, era, "tools/call", "--tool-name", "search", "--tool-args-json", '{"query": "indexer"}'
    )
    assert result.get("isError") is not True
    hits = result["structuredContent"]["results"]
    assert hits and hits[0]["path"] == "guide/getting-started.md"
    assert hits[0]["uri"] == DOC_URI
    assert result["content"][0]["text"] == search_text(result["structuredContent"])
    if era == "modern":  # a 2026-07-28 result names the server in its _meta: the era really was modern
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]


@pytest.mark.parametrize("era", ERAS)
def test_resources_list_lists_kb_doc_uris(inspector: Inspector, target: list[str], era: str) -> None:
    uris = [resource["uri"] for resource in inspector.run(target, era, "resources/list")["resources"]]
    assert DOC_URI in uris
    assert all(uri.startswith("kb://doc/") for uri in uris)


@pytest.mark.parametrize("era", ERAS)
def test_resources_read_returns_the_text(inspector: Inspector, target: list[str], era: str) -> None:
    result = inspector.run(target, era, "resources/read", "--uri", DOC_URI)
    [content] = result["contents"]
    assert content["uri"] == DOC_URI
    assert content["mimeType"] == "text/markdown"
    assert DOC_TEXT in content["text"]
    if era == "modern":  # 2026-07-28 read results carry caching hints
        assert result["cacheScope"] in ("public", "private")
        assert result["ttlMs"] >= 0


@pytest.mark.parametrize("era", ERAS)
def test_resource_templates_list_offers_doc_topic_and_skill_templates(
    inspector: Inspector, target: list[str], era: str
) -> None:
    result = inspector.run(target, era, "resources/templates/list")
    assert {template["uriTemplate"] for template in result["resourceTemplates"]} == {
        "kb://doc/{+path}",
        "kb://topic/{+prefix}",
        "skill://{name}/{+path}",
    }


def test_http_without_the_token_is_refused(inspector: Inspector, http_server: HttpServer) -> None:
    target = ["--server-url", http_server.url, "--transport", "http", "--stored-auth-only"]
    done = inspector.invoke(target, "legacy", "tools/list")
    assert done.returncode != 0
    assert '"result"' not in done.stdout
    assert "auth_required" in done.stderr  # the Inspector's reading of kbkit's 401
