"""Shared test fixtures: real projects on disk, and the real `mcp` client talking to `kbkit serve`."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO, TypeVar

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from peers.launch import Forked, forked_kbkit, stop_forkserver
from tiers import Guard, assign, register

T = TypeVar("T")

ERAS = ["legacy", "auto"]
"""`legacy` runs the 2025-11-25 initialize handshake; `auto` discovers and speaks 2026-07-28."""

SAMPLE_DOCS: dict[str, str | bytes] = {
    "guide/getting-started.md": "---\ntitle: Getting started\n---\n# Getting started\n\n"
    "Install kbkit, then run the indexer over the docs folder.\n\n## Troubleshooting\n\nRead the boot lines.\n",
    "adr/0001-guards.md": "# One guard sequence\n\nEvery read of a document goes through the guard sequence.\n",
    "runbooks/deploy.rst": "Deploying\n=========\n\nRoll out the service with the blue green strategy.\n",
    "notes.txt": "Plain text notes about SQLite write-ahead logging (WAL).\n",
}


def write_files(base: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def make_project(
    root: Path, files: Mapping[str, str | bytes] | None = None, config: str = '[kb]\npath = "docs"\n'
) -> Path:
    """A project folder with kbkit.toml and a docs/ folder holding `files`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "kbkit.toml").write_text(config, encoding="utf-8")
    (root / "docs").mkdir(exist_ok=True)
    write_files(root / "docs", SAMPLE_DOCS if files is None else files)
    return root


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: at least four workers even on two cores, since most tests spend their time waiting
    on a server subprocess rather than computing (`-n 0` runs in one process)."""
    return max(4, os.cpu_count() or 1)


GUARD = Guard()


def pytest_configure(config: pytest.Config) -> None:
    register(config)
    GUARD.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test gets its tier (tests/tiers.py). The longest tests go first, so the workers run them
    beside the rest instead of after it: those marked `wheel` (a fresh virtualenv each), then those
    that declare a timeout over the default (the 30,000-document corpus), longest first."""
    assign(items)

    def declared_timeout(item: pytest.Item) -> float:
        mark = item.get_closest_marker("timeout")
        return float(mark.args[0]) if mark is not None and mark.args else 0.0

    default = float(config.getini("timeout") or 0)
    items.sort(
        key=lambda item: (
            item.get_closest_marker("wheel") is None,
            -declared_timeout(item) if declared_timeout(item) > default else 0.0,
        )
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    """A test runs with the process starts its tier does not allow refused (tests/tiers.py)."""
    with GUARD.running(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object]) -> Iterator[object]:
    with GUARD.setting_up(fixturedef):
        return (yield)


def pytest_runtest_call(item: pytest.Item) -> None:
    GUARD.check_fixtures(item)


def pytest_sessionfinish() -> None:
    """Forked servers and peers (tests/peers/launch.py) are stopped by the tests; their parent
    goes last, reaped here."""
    stop_forkserver()


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kbkit's dependencies, its build backend and what the backend asks for to build an editable
    install, resolved by pip from the configured indexes once per run and shared by the workers.

    The tests that install kbkit into a fresh virtualenv (README's set-up, the wheel) install from
    here with `--no-index`: the run resolves once instead of once per install (about 20 s of CPU
    each), and what they prove (the command, the package, the entry points) is unchanged."""
    from build import ProjectBuilder
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, shared by its workers
    folder = shared / "wheelhouse"
    with FileLock(str(shared / "wheelhouse.lock")):
        if not (folder / ".complete").exists():
            repo = Path(__file__).resolve().parents[1]
            builder = ProjectBuilder(repo)
            requirements = [
                *tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"][
                    "dependencies"
                ],
                *builder.build_system_requires,
                *builder.get_requires_for_build("editable"),
            ]
            command = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--dest",
                str(folder),
                *requirements,
            ]
            result = subprocess.run(command, capture_output=True, text=True, timeout=900)
            assert result.returncode == 0, f"pip download exited {result.returncode}\n{result.stderr}"
            (folder / ".complete").touch()
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def kbkit_command() -> list[str]:
    """The installed `kbkit` console script next to this interpreter (as agents run it)."""
    script = Path(sys.executable).parent / "kbkit"
    if script.exists():
        return [str(script)]
    found = shutil.which("kbkit")
    return [found] if found else [sys.executable, "-m", "kbkit"]


def kbkit_in_process(
    *args: str, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """`kbkit ARGS` run in this process (typer's CliRunner on kbkit's app, behind the same error
    boundary), returned as `subprocess.run` would return it: exit code, stdout, stderr.

    For what a command prints, exits with and writes, without a process start (about half a second
    of CPU each). The launch itself (the console script, its environment checks) is what the tests
    that run `kbkit_command()` are for. In `env`, None removes a variable for the run."""
    from typer.testing import CliRunner

    from kbkit.cli import app

    result = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
    return subprocess.CompletedProcess(["kbkit", *args], result.exit_code, result.stdout, result.stderr)


@asynccontextmanager
async def serve_stdio(
    root: Path,
    mode: str = "legacy",
    *,
    stderr_path: Path | None = None,
    env: Mapping[str, str] | None = None,
    message_handler=None,  # noqa: ANN001 - the SDK's MessageHandlerFnT
    exec_script: bool = False,
) -> AsyncIterator[Client]:
    """`kbkit serve --root ROOT` in a process of its own (forked, tests/peers/launch.py), with the
    real mcp client connected to it over stdio. `exec_script` starts the console script instead,
    for a test that looks at the process itself (its memory in /proc, say)."""
    command = kbkit_command() if exec_script else forked_kbkit()
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "serve", "--root", str(root)],
        env={**os.environ, **(env or {})},
    )
    log_path = stderr_path or root / "serve-stderr.log"
    with open(log_path, "w", encoding="utf-8") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog),
            mode=mode,
            cache=None,
            read_timeout_seconds=30,
            message_handler=message_handler,
        ) as c:
            yield c


def document_text(result) -> str:  # noqa: ANN001 - an mcp CallToolResult
    """The text a `get_document` result carries: its last text block (the first is the JSON of the rest)."""
    return result.content[-1].text


@asynccontextmanager
async def serve_in_memory(
    root: Path,
    mode: str = "legacy",
    *,
    message_handler=None,  # noqa: ANN001 - the SDK's MessageHandlerFnT
) -> AsyncIterator[Client]:
    """The server `kbkit serve --root ROOT` builds, run in this process, with the real mcp client
    connected over the SDK's memory transport: protocol behaviour without a process start.

    Launching, stdio framing and boot lines are `serve_stdio`'s to test."""
    from kbkit.config import load_settings
    from kbkit.kb.base import KnowledgeBase
    from kbkit.server.factory import create_server

    settings = load_settings(root)
    kb = KnowledgeBase.open(settings)
    try:
        kb.scan()
        server = create_server(kb, watch=settings.watch)
        async with Client(server, mode=mode, cache=None, message_handler=message_handler) as client:
            yield client
    finally:
        kb.close()


TEST_TOKEN = "test-token-0123456789abcdef"


def wait_until(predicate: Callable[[], T], timeout: float = 60.0, step: float = 0.05, what: str = "") -> T:
    """Poll `predicate` until it returns something truthy; fail after a generous deadline.

    The deadline is a bound on a hang, never a timing assertion: on a loaded machine it is simply
    reached later."""
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout} s: {what or predicate}")
        time.sleep(step)
    return result


async def eventually(
    predicate: Callable[[], Awaitable[T]], timeout: float = 60.0, step: float = 0.1, what: str = ""
) -> T:
    """`wait_until` for an async predicate."""
    import anyio

    deadline = time.monotonic() + timeout
    while not (result := await predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout} s: {what or predicate}")
        await anyio.sleep(step)
    return result


@contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for as long as the block runs.

    The socket is bound but never listens: nothing else can take the port meanwhile, and a
    connection to it is refused at once (no free-port race)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


_LISTENING = re.compile(r"\] http: http://\S+:(\d+)/mcp ")


class HttpServer:
    """`kbkit serve --http` in a process of its own on loopback: forked from a preloaded parent
    (tests/peers/launch.py), or with `exec_script` the console script started as agents start it.

    Without `port` the server binds port 0 and reports the port it got, so no free port is guessed
    (and raced for) beforehand; with `port` (a restart on the same address) a bind that fails
    because the port is still held is retried."""

    def __init__(
        self,
        root: Path,
        *,
        env: Mapping[str, str] | None = None,
        args: tuple[str, ...] = (),
        token: str | None = TEST_TOKEN,
        port: int | None = None,
        open_files: tuple[int, int] | None = None,
        exec_script: bool = False,
    ) -> None:
        """`open_files`: the (soft, hard) RLIMIT_NOFILE the server starts under."""
        self.root = root
        self._exec_script = exec_script
        self.fixed_port = port
        self.port = port or 0
        self.log_path = root / "http-stderr.log"
        self._args = args
        self._env = _child_env(token, env)
        self._open_files = open_files
        self._log: IO[str] | None = None
        self._start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _start(self) -> None:
        if self._log is not None:
            self._log.close()
        self._log = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        argv = ["serve", "--http", "--root", str(self.root), "--port", str(self.fixed_port or 0), *self._args]
        self.process: subprocess.Popen[bytes] | Forked
        if not self._exec_script:
            self.process = Forked(argv, env=self._env, stderr_path=self.log_path, open_files=self._open_files)
            return
        self.process = subprocess.Popen(
            [*kbkit_command(), *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env=self._env,
            preexec_fn=(lambda: _limit_open_files(self._open_files)) if self._open_files else None,
        )

    def wait_ready(self, timeout: float = 60.0) -> HttpServer:
        """Wait (bounded) until this server, and not another on the same port, answers /healthz."""
        import httpx2

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                if "already in use" in self.stderr() and self.fixed_port:
                    time.sleep(0.2)  # the port's previous holder is still letting go of it
                    self._start()
                    continue
                raise RuntimeError(f"kbkit serve --http exited: {self.stderr()}")
            if not self.fixed_port:
                found = _LISTENING.search(self.stderr())
                if found is None:
                    time.sleep(0.05)
                    continue
                self.port = int(found.group(1))
            try:
                if httpx2.get(f"{self.base}/healthz", timeout=5).status_code == 200:
                    return self
            except httpx2.TransportError:
                time.sleep(0.05)
        raise TimeoutError(f"kbkit serve --http did not answer /healthz: {self.stderr()}")

    def stderr(self) -> str:
        return self.log_path.read_text()  # the child writes to the file itself; nothing is buffered here

    def stop(self) -> int:
        """Stop the server and return its exit code. SIGINT, the stop without the drain SIGTERM
        starts (docs/adr/0029), so no test waits out `drain_seconds`; the drain's own tests, and
        those about SIGTERM, send it themselves."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self._log is not None:
            self._log.close()
        return self.process.returncode


def _limit_open_files(limits: tuple[int, int]) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, limits)


def _child_env(token: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("MCP_TOKEN", "MCP_ALLOW_ANONYMOUS")}
    if token is not None:
        env["MCP_TOKEN"] = token
    return {**env, **(extra or {})}


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One `kbkit serve --http` over SAMPLE_DOCS, started once for a module's tests that only send
    it requests (none changes its files or settings). Those tests carry one xdist_group mark, so a
    single worker starts it. It is the console script, started as agents start it."""
    server = HttpServer(
        make_project(tmp_path_factory.mktemp("http") / "project"), exec_script=True
    ).wait_ready()
    yield server
    server.stop()


def auth_headers(token: str = TEST_TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def legacy_session(url: str) -> dict[str, str]:
    """A 2025-11-25 session opened over raw HTTP (initialize, initialized): the headers its requests carry."""
    import httpx2

    headers = {
        **auth_headers(),
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    init = httpx2.post(
        url,
        headers=headers,
        json={
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        timeout=30,
    )
    session = {
        **headers,
        "mcp-session-id": init.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx2.post(url, headers=session, json=initialized, timeout=30).status_code == 202
    return session


def open_event_stream(
    port: int, session: Mapping[str, str], receive_buffer: int | None = None
) -> socket.socket:
    """The session's notification stream (GET /mcp) on a raw socket, its response head read: open."""
    sock = socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    get = {**session, "accept": "text/event-stream", "host": f"127.0.0.1:{port}"}
    sock.sendall(
        ("GET /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in get.items()) + "\r\n").encode()
    )
    assert sock.recv(1024).startswith(b"HTTP/1.1 200")
    return sock


@asynccontextmanager
async def http_client(
    url: str, mode: str = "legacy", headers: Mapping[str, str] | None = None
) -> AsyncIterator[Client]:
    """The real mcp client over streamable HTTP, with the bearer token."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=dict(headers or auth_headers()), timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client,
    ):
        yield client
