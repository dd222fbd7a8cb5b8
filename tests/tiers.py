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
    "npm": "runs a Node.js peer from npm (the MCP Inspector, the skills CLI, server-memory); and the above",
    "wheel": "builds kbkit's sdist or wheel, or installs kbkit into a fresh virtualenv; and the above",
}
"""The outside-in tiers, by what their tests start, each allowed what the ones before it start."""
RANK = [FAST, *TIERS]


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
    if program == "git":
        return "git"
    if program in ("node", "npm", "npx") or any("node_modules" in part for part in argv[:2]):
        return "npm"
    if any(part in ("pip", "venv", "build") for part in argv[1:3]):
        return "wheel"
    return "processes"


class ProcessStarted(AssertionError):
    """A test started a process its tier does not allow."""


@contextmanager
def only_what_the_tier_starts(nodeid: str, tier: str) -> Iterator[None]:
    """While the block runs, a process start of a kind above `tier` raises ProcessStarted, naming
    what was started and the tier the test belongs in."""
    allowed = RANK[: RANK.index(tier) + 1]

    def check(started: Callable[..., tuple[str, str]], original: Callable[..., Any]) -> Callable[..., Any]:
        def guard(*args: Any, **kwargs: Any) -> Any:
            what, needs = started(*args)
            if needs not in allowed:
                raise ProcessStarted(
                    f"{nodeid} is in the {tier} tier but starts {what}: mark it @pytest.mark.{needs}"
                )
            return original(*args, **kwargs)

        return guard

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
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]
    for (owner, name, started), (_, _, original) in zip(targets, saved, strict=True):
        setattr(owner, name, check(started, original))
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)
