"""What a test does when something it needs from outside the suite is not installed: on a
developer's machine it skips, saying how to install it; under CI (`.ci/run` sets CI=true) it fails,
so a broken install can never turn into a green run that proved nothing.

tests/setup.sh installs all of it, so README's test command skips nothing."""

from __future__ import annotations

import importlib.util
import os
from typing import NoReturn

import pytest

SETUP = "run bash tests/setup.sh (it installs every extra and peer the tests use)"


def missing(what: str, fix: str = SETUP) -> NoReturn:
    reason = f"{what} is not installed; {fix}"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run every test")
    pytest.skip(reason)


def require_modules(*names: str, what: str) -> None:
    """Each of `names` importable (found, not imported), else `missing(what)`. For a test whose
    subject decides by itself whether the modules are usable: this asks the import system, not it."""
    absent = [name for name in names if importlib.util.find_spec(name) is None]
    if absent:
        missing(f"{what} ({', '.join(absent)})")
