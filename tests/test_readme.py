"""README stays true: CI runs exactly the test command README shows, and every command it lists exists."""

from __future__ import annotations

import re
from pathlib import Path

from typer.main import get_command

from kbkit.cli import app

ROOT = Path(__file__).resolve().parents[1]


def setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_readme_has_exactly_two_setup_commands_run_and_test() -> None:
    run, test = setup_commands()
    assert "pip install -e ." in run and "kbkit index" in run
    assert 'pip install -e ".[test]"' in test and "pytest" in test


def test_ci_runs_the_readme_test_command() -> None:
    _, test = setup_commands()
    assert test in (ROOT / ".ci" / "run").read_text().splitlines()


def test_every_command_in_the_readme_table_exists() -> None:
    commands = set(get_command(app).commands)  # type: ignore[attr-defined]
    text = (ROOT / "README.md").read_text()
    listed = set(re.findall(r"^\| `kbkit (\w+)", text, re.MULTILINE))
    assert listed and listed <= commands
