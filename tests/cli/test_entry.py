"""The `kbkit` console script's first moments: an unsupported platform or a half-built environment
is one line and exit 3 (the environment) before anything else runs; `--help` shows `--version` as the flag it is."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kbkit import entry, runtime
from kbkit.errors import ExitCode
from tests.helpers.serve import kbkit_command


def _main_fails(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        entry.main()
    assert stopped.value.code == ExitCode.ENVIRONMENT
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    return err


@pytest.mark.parametrize(
    ("breaks", "named"),
    [
        (lambda m: m.setattr(os, "name", "nt"), "is not supported"),
        (lambda m: m.delattr(os, "O_NOFOLLOW"), "lacks O_NOFOLLOW"),
        (lambda m: m.setattr(os, "supports_dir_fd", frozenset()), "folder handle (dir_fd)"),
    ],
    ids=["windows", "no-O_NOFOLLOW", "no-dir_fd"],
)
def test_an_unsupported_platform_is_one_line_before_anything_else(breaks, named, monkeypatch, capsys) -> None:  # noqa: ANN001
    reached = []
    monkeypatch.setattr(runtime, "missing_dependency", lambda: reached.append("deps"))
    breaks(monkeypatch)
    err = _main_fails(capsys)
    monkeypatch.undo()
    assert err.startswith("kbkit: error: ") and named in err
    assert "runs on POSIX systems (Linux, macOS)" in err
    assert reached == []  # nothing else ran


def test_this_platform_is_supported() -> None:
    assert runtime.unsupported_platform() is None


def test_a_missing_dependency_names_the_package_index_name_and_this_interpreter(monkeypatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.setattr(runtime, "REQUIRED", ("kbkit_no_such_module",))
    err = _main_fails(capsys)
    assert err == (
        "kbkit: error: dependencies not installed: kbkit_no_such_module - run: "
        f"{sys.executable} -m pip install kbkit-mcp (in a checkout of kbkit: pip install -e .)\n"
    )


@pytest.mark.processes
def test_help_shows_version_as_a_flag_without_a_value() -> None:
    result = subprocess.run(
        [*kbkit_command(), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "100"},
    )
    (line,) = [line for line in result.stdout.splitlines() if "--version" in line]
    assert "Show the version." in line and "<" not in line
