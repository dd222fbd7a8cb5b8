"""README's test command starts with tests/setup.sh: on a machine that cannot run it (Debian's
system Python without its venv module), it stops at once with the package to install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import TESTS

pytestmark = pytest.mark.processes


def test_setup_names_the_package_to_install_when_python_cannot_make_a_virtualenv(tmp_path: Path) -> None:
    """Debian's python3 without python3-venv has no ensurepip, and `python3 -m venv` then leaves a
    virtualenv without pip. Here python3 is this interpreter with ensurepip hidden; the script runs
    from a copy of the checkout's tests folder, so nothing is made in the checkout."""
    (tmp_path / "tests").mkdir()
    shutil.copy(TESTS / "setup.sh", tmp_path / "tests" / "setup.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "ensurepip.py").write_text("raise ModuleNotFoundError(\"No module named 'ensurepip'\")\n")
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(hidden)}
    result = subprocess.run(
        ["bash", str(tmp_path / "tests" / "setup.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"tests/setup.sh: {bin_dir / 'python3'} cannot make a virtualenv with pip (no ensurepip); "
        "on Debian or Ubuntu run: sudo apt-get install python3-venv, then rerun\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "hidden", "tests"]  # no .venv begun
