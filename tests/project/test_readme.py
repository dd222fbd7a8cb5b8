"""README and the manual stay true: CI runs exactly the test command README shows, README stays a front
door whose links resolve, every command docs/commands.md lists exists, and the tables of config keys
and exit codes are the ones the code writes."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from typer.main import get_command

from kbkit.cli import app
from kbkit.cli.boundary import exit_code_table
from kbkit.config.docs import TABLE_END, TABLE_START, key_table
from kbkit.config.model import key_docs, sections
from kbkit.errors import ExitCode
from tests.helpers.paths import REPO
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process

ROOT = REPO


def setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_readme_has_exactly_two_setup_commands_run_and_test() -> None:
    run, test = setup_commands()
    assert "pip install -e ." in run and "kbkit index" in run
    assert test == "bash tests/setup.sh && .venv/bin/python -m pytest"


def test_ci_runs_exactly_the_readme_test_command_and_installs_nothing_else() -> None:
    """CI may set CI=true and must fail on the first error; what it installs and runs is README's."""
    _, test = setup_commands()
    lines = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert lines == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', "export CI=true", test]


def test_the_setup_installs_every_extra_and_peer_the_tests_use() -> None:
    setup = (ROOT / "tests" / "setup.sh").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    installed = re.search(r'pip install --quiet -e "\.\[([a-z,]+)\]"', setup)
    assert installed is not None
    assert set(installed.group(1).split(",")) == set(extras) - {
        "bench"
    }  # the benchmarks' peers are not tests'
    assert "npm ci --prefix tests/peers/npm" in setup
    assert (ROOT / "tests" / "peers" / "npm" / "package-lock.json").is_file()
    assert "npm install --prefix tests/peers/agents --no-save" in setup  # the lock's versions, kept as is
    assert (ROOT / "tests" / "peers" / "agents" / "package-lock.json").is_file()


def test_mypy_is_strict_over_the_library_and_the_benchmarks() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True and {"kbkit", "bench"} <= set(config["files"])


def test_every_command_in_the_commands_table_exists() -> None:
    commands = set(get_command(app).commands)  # type: ignore[attr-defined]
    text = (ROOT / "docs" / "commands.md").read_text()
    listed = set(re.findall(r"^\| `kbkit (\w+)", text, re.MULTILINE))
    assert listed and listed <= commands


def between(page: str, start: str, end: str) -> str:
    return (ROOT / page).read_text().split(start + "\n", 1)[1].split(end, 1)[0]


def test_the_key_table_is_written_from_the_config_model() -> None:
    table = between("docs/configuration.md", TABLE_START, TABLE_END)
    stale = "docs/configuration.md's key table is stale; replace it with:\n"
    assert table == key_table(), stale + key_table()
    rows = table.splitlines()[2:]
    assert len(rows) == sum(1 for _ in key_docs())
    assert {row.split("`")[1].split("]")[0][1:] for row in rows} == {name for name, _ in sections()}


def test_the_exit_code_table_is_written_from_the_exit_codes() -> None:
    table = between("docs/commands.md", "<!-- exit-codes:start -->", "<!-- exit-codes:end -->")
    assert table == exit_code_table(), (
        "docs/commands.md's exit codes are stale; replace them with:\n" + exit_code_table()
    )
    assert [int(row.split("|")[1]) for row in table.splitlines()[2:]] == [int(code) for code in ExitCode]


# -- --help says what the command does ------------------------------------------------------------


def help_of(*command: str) -> str:
    """`kbkit COMMAND --help` as one line of words (typer wraps it to the terminal's width)."""
    result = kbkit_in_process(*command, "--help")
    assert result.returncode == 0, result.stderr
    return " ".join(result.stdout.split())


def test_connect_help_names_the_tokens_in_the_order_the_relay_reads_them(tmp_path: Path) -> None:
    from kbkit.server.relay import read_token

    (tmp_path / "kbkit.toml").write_text('[kb]\npath = "."\n')
    (tmp_path / ".env.local").write_text("MCP_TOKEN=shared-token-0123456789\nKBKIT_TOKEN=kbk_personal\n")
    first = read_token(tmp_path).var  # what the relay sends when both are there
    assert first == "KBKIT_TOKEN"
    text = help_of("connect")
    assert "KBKIT_TOKEN" in text and "MCP_TOKEN" in text
    assert text.index(first) < text.index("MCP_TOKEN")


SYNC_CHECK_REASONS = {
    ": missing": "a client config is missing",
    "out of date (": "out of date",
    "edited by hand": "edited by hand",
    ".gitignore: the kbkit block is out of date": "the .gitignore block is out of date",
    "not ignored by git": "a generated file is not ignored by git",
    "skills: ": "a skill is missing or changed",
}
"""Each kind of line `kbkit sync --check` fails on, and the words its --help uses for it."""


@pytest.mark.git
def test_sync_check_help_names_every_reason_it_exits_1(tmp_path: Path) -> None:
    """Each reason made real: every problem line `--check` prints is of a kind its --help names."""
    root = make_project(
        tmp_path / "repo", config='[kb]\npath = "docs"\n[sync]\nclients = ["claude-code", "cursor"]\n'
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)

    def check() -> list[str]:
        done = kbkit_in_process("sync", "--check", "--root", str(root))
        assert done.returncode == ExitCode.CHECK_FAILED, done.stdout + done.stderr
        return [line.removeprefix("problem: ") for line in done.stderr.splitlines()]

    def sync(*args: str) -> None:
        assert kbkit_in_process("sync", "--root", str(root), *args).returncode == 0

    problems = check()  # nothing written yet: missing
    sync()
    data = json.loads((root / ".mcp.json").read_text())
    data["mcpServers"]["kb"]["command"] = "/old/venv/bin/kbkit"
    (root / ".mcp.json").write_text(json.dumps(data))
    problems += check()  # edited by hand
    sync("--force")
    (root / ".gitignore").write_text("")
    problems += check()  # the block removed
    sync()
    (root / "kbkit.toml").write_text(
        '[kb]\npath = "docs"\n[server]\nname = "docs"\n[sync]\nclients = ["claude-code", "cursor"]\n'
    )
    problems += check()  # the source changed: out of date
    sync()
    subprocess.run(["git", "-C", str(root), "add", "-f", ".mcp.json"], check=True)
    problems += check()  # tracked: not ignored by git
    subprocess.run(["git", "-C", str(root), "rm", "-q", "--cached", ".mcp.json"], check=True)
    skill = root / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Use for the demo.\n---\nDo it.\n")
    assert kbkit_in_process("skills", "add", "./skills/demo", "--root", str(root)).returncode == 0
    sync()
    (root / ".agents" / "skills" / "demo" / "SKILL.md").write_text("tampered\n")
    problems += check()  # a skill changed

    text = help_of("sync")
    seen = set()
    for problem in problems:
        kinds = [kind for kind in SYNC_CHECK_REASONS if kind in problem]
        assert kinds, f"sync --check fails on a kind of problem its --help does not name: {problem}"
        seen.update(kinds)
    assert seen == set(SYNC_CHECK_REASONS), set(SYNC_CHECK_REASONS) - seen
    for words in SYNC_CHECK_REASONS.values():
        assert words in text, f"kbkit sync --help does not say {words!r}: {text}"


def test_readme_is_a_front_door_whose_links_resolve() -> None:
    """README says what kbkit is and how to start; the manual lives in docs/. Every relative link in
    README and the docs pages points at a file that exists."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    report = (ROOT / "docs" / "benchmarks.md").read_text()
    assert len(report.splitlines()) <= 300, (
        "docs/benchmarks.md reports current figures; move details to docs/archive/"
    )
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to a missing {target}"
