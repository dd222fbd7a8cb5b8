"""The suite's tiers: `fast`, the inner loop (`pytest -m fast`), whose tests start no process, and
the outside-in tiers, each named after what its tests start. CI runs them all (plain `pytest`).

Every test is in exactly one tier: a test with no tier mark is `fast`, one with two is a collection
error. A test that starts something its tier does not allow (a `fast` test running git through
kbkit sync, a `git` test forking kbkit) fails, naming what it started and the mark it needs: the
inner loop stays free of process starts, and each name true, because they cannot be otherwise."""

from __future__ import annotations

import _posixsubprocess
import multiprocessing.process
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

FAST = "fast"
TIERS: dict[str, str] = {
    "git": "runs git (itself, or through kbkit sync and kbkit skills)",
    "processes": "starts kbkit (forked or its console script), a Python peer, ruff or mypy; and git",
    "haproxy": "runs HAProxy (Debian's haproxy) in front of kbkit replicas; and the above",
    "npm": "runs a Node.js peer from npm (the MCP Inspector, the skills CLI, server-memory); and the above",
    "idp": "starts an OAuth identity provider (node-oidc-provider, tests/peers/npm/idp.mjs); and the above",
    "agents": "runs a coding agent's own CLI (tests/peers/agents: Claude Code, Gemini CLI, ...); and the above",
    "wheel": "builds kbkit's sdist or wheel, or installs kbkit into a fresh virtualenv; and the above",
}
"""The outside-in tiers, by what their tests start, each allowed what the ones before it start."""
RANK = [FAST, *TIERS]
AGENTS_MODULES = (os.path.join("peers", "agents", "node_modules"), os.path.join("peers", "agents", "python"))
"""Where tests/setup.sh installs the agents' CLIs (npm's, and PyPI's in virtualenvs): a command line
naming one is in the `agents` tier."""


def register(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{FAST}: the inner loop: starts no process (every unmarked test)")
    for name, meaning in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


def tier_of(item: pytest.Item) -> str:
    return next((name for name in TIERS if item.get_closest_marker(name) is not None), FAST)


def assign(items: list[pytest.Item]) -> None:
    """Mark each unmarked test `fast`; refuse a test marked with two tiers."""
    doubled = []
    for item in items:
        tiers = [name for name in TIERS if item.get_closest_marker(name) is not None]
        if not tiers:
            item.add_marker(FAST)
        elif len(tiers) > 1:
            doubled.append(f"{item.nodeid}: {', '.join(tiers)}")
    if doubled:
        raise pytest.UsageError("a test belongs to one tier; these have several:\n" + "\n".join(doubled))


def kind(argv: list[str]) -> str:
    """The tier a command line belongs to."""
    program = os.path.basename(argv[0]) if argv else ""
    if any(folder in part for part in argv for folder in AGENTS_MODULES):
        return "agents"
    if program == "git":
        return "git"
    if program == "haproxy":
        return "haproxy"
    if any(part.endswith("idp.mjs") for part in argv[1:3]):
        return "idp"
    if program in ("node", "npm", "npx") or any("node_modules" in part for part in argv[:2]):
        return "npm"
    if any(part in ("pip", "venv", "build") for part in argv[1:3]):
        return "wheel"
    return "processes"


class ProcessStarted(AssertionError):
    """A test started a process its tier does not allow."""


class Guard:
    """Watches every way this interpreter starts a process (subprocess, posix_spawn, fork,
    multiprocessing), installed once per test process.

    While a test runs, a start above its tier raises ProcessStarted. A fixture that starts
    something is remembered with what it started, so a test that shares a module's server set up
    earlier by a test of a higher tier is caught too, whatever the order the tests ran in."""

    def __init__(self) -> None:
        self.test: tuple[str, str] | None = None
        """(nodeid, tier) of the test running now."""
        self.fixtures: list[object] = []
        """The fixture definitions being set up now, innermost last."""
        self.started: dict[int, tuple[str, str]] = {}
        """id(fixture definition) -> (what it started, its tier), the highest tier it needed."""

    def install(self) -> None:
        def command(args: Any) -> tuple[str, str]:
            argv = [os.fsdecode(part) for part in args]
            return " ".join(argv[:3]), kind(argv)

        targets: list[tuple[Any, str, Callable[..., tuple[str, str]]]] = [
            (subprocess, "_fork_exec", lambda args, *_: command(args)),
            (_posixsubprocess, "fork_exec", lambda args, *_: command(args)),
            (os, "posix_spawn", lambda path, args, *_: command(args)),
            (os, "posix_spawnp", lambda path, args, *_: command(args)),
            (os, "fork", lambda: ("os.fork()", "processes")),
            (
                multiprocessing.process.BaseProcess,
                "start",
                lambda process: (f"a multiprocessing child running {process._target}", "processes"),
            ),
        ]
        for owner, name, describe in targets:
            setattr(owner, name, self._watched(describe, getattr(owner, name)))

    def _watched(
        self, describe: Callable[..., tuple[str, str]], original: Callable[..., Any]
    ) -> Callable[..., Any]:
        def start(*args: Any, **kwargs: Any) -> Any:
            self._starting(*describe(*args))
            return original(*args, **kwargs)

        return start

    def _starting(self, what: str, needs: str) -> None:
        for fixture in self.fixtures:
            known = self.started.get(id(fixture))
            if known is None or RANK.index(needs) > RANK.index(known[1]):
                self.started[id(fixture)] = (what, needs)
        if self.test is not None:
            nodeid, tier = self.test
            if RANK.index(needs) > RANK.index(tier):
                raise ProcessStarted(
                    f"{nodeid} is in the {tier} tier but starts {what}: mark it @pytest.mark.{needs}"
                )

    @contextmanager
    def running(self, item: pytest.Item) -> Iterator[None]:
        self.test = (item.nodeid, tier_of(item))
        try:
            yield
        finally:
            self.test = None

    @contextmanager
    def setting_up(self, fixture: object) -> Iterator[None]:
        self.fixtures.append(fixture)
        try:
            yield
        finally:
            self.fixtures.pop()

    def check_fixtures(self, item: pytest.Item) -> None:
        """Fail `item` when a fixture it uses started something above its tier, earlier."""
        tier = tier_of(item)
        info = getattr(item, "_fixtureinfo", None)
        for name, definitions in info.name2fixturedefs.items() if info is not None else ():
            for definition in definitions:
                what, needs = self.started.get(id(definition), ("", FAST))
                if RANK.index(needs) > RANK.index(tier):
                    raise ProcessStarted(
                        f"{item.nodeid} is in the {tier} tier but its fixture {name} starts {what}: "
                        f"mark it @pytest.mark.{needs}"
                    )
