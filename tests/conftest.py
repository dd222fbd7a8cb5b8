"""The suite's hooks and shared fixtures. What tests import lives in tests/helpers/."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.http import HttpServer
from tests.helpers.paths import REPO
from tests.helpers.project import make_project
from tests.helpers.tiers import Guard, assign, register
from tests.peers.launch import stop_forkserver


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: at least four workers even on two cores, since most tests spend their time waiting
    on a server subprocess rather than computing (`-n 0` runs in one process)."""
    return max(4, os.cpu_count() or 1)


GUARD = Guard()


def pytest_configure(config: pytest.Config) -> None:
    register(config)
    GUARD.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test gets its tier (tests/helpers/tiers.py). The longest tests go first, so the workers run them
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
    """A test runs with the process starts its tier does not allow refused (tests/helpers/tiers.py)."""
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
            repo = REPO
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


@pytest.fixture(autouse=True)
def trust_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own state folder, where `kbkit trust` records what the member allowed: what one
    test trusts never reaches another, nor the account running the suite."""
    folder = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(folder))
    return folder


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One cache folder for the session (XDG_CACHE_HOME, inherited by the servers tests start): the
    int8 embedding model is made once a session, and never in the account's own cache. Here it is
    made in this process, as tests of the fast tier start none; the child kbkit starts for it is
    tested in fresh interpreters (tests/kb/test_semantic.py, the `processes` tier)."""
    from kbkit.kb.semantic import quantized

    folder = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(folder))
        patch.setattr(quantized, "_quantize", lambda source, target: quantized.make(str(source), str(target)))
        yield folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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
