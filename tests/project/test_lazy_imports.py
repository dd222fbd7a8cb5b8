"""Each command imports only what it uses, so the commands agents and people run often start fast.

Every run here is the installed `kbkit` console script, started as an agent starts it (its own
working folder, a PATH without our virtualenv, a HOME of its own), with the interpreter's import
log on (`PYTHONPROFILEIMPORTTIME=1`, which `python -X importtime` also sets): the modules a command
loaded are read from that log, never timed. typer itself brings pydantic in for any command that
parses an option value (its value coercion), so pydantic is refused only where typer does not
need it: `--version` and the top-level `--help`.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from kbkit.catalog.clients import CLIENTS
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_command
from tests.helpers.skills import git, write_skill

pytestmark = pytest.mark.processes

AGENT_PATH = "/usr/bin:/bin"
IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", re.MULTILINE)

NO_LIBRARY = ("kbkit.config", "kbkit.kb", "kbkit.sync", "kbkit.skills", "kbkit.server", "kbkit.diagnostics")
"""kbkit's own library parts: what printing a version or the list of commands needs none of."""
SERVER_SIDE = (
    "mcp",
    "anyio",
    "starlette",
    "uvicorn",
    "sse_starlette",
    "httpx",
    "httpx2",
    "watchfiles",
    "rich",
    "re2",
    "pypdf",
    "docx",
    "pptx",
    "openpyxl",
    "lxml",
    "defusedxml",
    "kbkit.kb.formats.ooxml",
    "kbkit.kb.formats.odf",
    "kbkit.kb.formats.pdf",
    "kbkit.kb.formats.html",
    "kbkit.kb.formats.notebook",
    "yaml",
    "pathspec",
    "pyuca",
    "sqlite3",
    "numpy",
    "onnxruntime",
    "tokenizers",
)
"""The server, the index (its embedding model too) and the terminal progress bar: what neither
`kbkit sync` nor a help text needs."""


def run_logged(*args: str, cwd: Path, home: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the console script as an agent would; its result, and every module it imported."""
    env = {"PATH": AGENT_PATH, "HOME": str(home), "LANG": "C.UTF-8", "PYTHONPROFILEIMPORTTIME": "1"}
    result = subprocess.run(
        [*kbkit_command(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    modules = set(IMPORT_LINE.findall(result.stderr))
    assert "kbkit.entry" in modules, f"no import log read from the run:\n{result.stderr[-2000:]}"
    result.stderr = "\n".join(
        line for line in result.stderr.splitlines() if not line.startswith("import time:")
    )
    return result, modules


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    """The modules of `packages` (each a package or module name) that were imported."""
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def synced_project(base: Path, lock: bool = False) -> Path:
    """A git project with every client kbkit knows in `[sync] clients` (and, with `lock`, a locked skill)."""
    listed = ", ".join(f'"{name}"' for name in CLIENTS)
    config = f'[kb]\npath = "docs"\n\n[sync]\nclients = [{listed}]\n'
    root = make_project(base / "repo", {"guide.md": "# Guide\n\nHow we work.\n"}, config=config)
    git("init", "-q", cwd=root)
    if lock:
        write_skill(root / "skill-sources" / "kb-usage")
        result, _ = run_logged("skills", "add", "skill-sources/kb-usage", cwd=root, home=base)
        assert result.returncode == 0, result.stderr
    return root


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_version_and_the_command_list_load_no_library_and_no_pydantic(
    tmp_path: Path, args: list[str]
) -> None:
    result, modules = run_logged(*args, cwd=tmp_path, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "kbkit" in result.stdout
    assert loaded(modules, NO_LIBRARY + SERVER_SIDE + ("pydantic", "jinja2", "tomlkit", "dotenv")) == []


@pytest.mark.parametrize(
    "command", ["sync", "serve", "index", "search", "doctor", "init", "connect", "skills"]
)
def test_a_commands_help_loads_none_of_its_library(tmp_path: Path, command: str) -> None:
    result, modules = run_logged(command, "--help", cwd=tmp_path, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout
    assert loaded(modules, NO_LIBRARY + SERVER_SIDE + ("jinja2", "tomlkit", "dotenv")) == []


def test_sync_loads_neither_the_server_nor_the_index_nor_the_skills_kit_when_no_skill_is_locked(
    tmp_path: Path,
) -> None:
    root = synced_project(tmp_path)
    for expected in ({"created", "updated"}, {"unchanged"}):  # the first write, then a no-op rerun
        result, modules = run_logged("sync", cwd=root, home=tmp_path)
        assert result.returncode == 0, result.stderr
        rows = [line.split() for line in result.stdout.splitlines()]
        actions = {row[2] for row in rows if row and row[0] in CLIENTS}
        assert actions and actions <= expected, result.stdout
        assert loaded(modules, SERVER_SIDE + ("kbkit.kb", "kbkit.server", "kbkit.diagnostics")) == []
        assert loaded(modules, ("kbkit.skills.install",)) == []


def test_sync_still_keeps_locked_skills_out_of_git(tmp_path: Path) -> None:
    root = synced_project(tmp_path, lock=True)
    (root / ".gitignore").unlink()  # only sync may put the skills' lines back
    result, modules = run_logged("sync", cwd=root, home=tmp_path)
    assert result.returncode == 0, result.stderr
    block = (root / ".gitignore").read_text()
    assert "/.agents/skills/" in block.splitlines()
    assert "kbkit.skills.install" in modules
    assert (
        git("check-ignore", ".agents/skills/kb-usage/SKILL.md", cwd=root)
        == ".agents/skills/kb-usage/SKILL.md"
    )


@pytest.mark.parametrize("oddity", ["folder", "dangling link"])
def test_sync_still_refuses_an_unreadable_skills_lock_in_one_line_and_writes_nothing(
    tmp_path: Path, oddity: str
) -> None:
    root = synced_project(tmp_path)
    lock = root / "skills-lock.json"
    if oddity == "folder":
        lock.mkdir()
    else:
        os.symlink(root / "nowhere.json", lock)
    result, _ = run_logged("sync", cwd=root, home=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbkit: error: ") and "skills-lock.json" in lines[0]
    assert not (root / ".gitignore").exists() and not (root / ".mcp.json").exists()


OFFICE = ("docx", "pptx", "openpyxl", "lxml", "defusedxml", "kbkit.kb.formats.ooxml", "kbkit.kb.formats.odf")
"""The office formats' converters and libraries (docs/adr/0033): loaded only when such a file is met."""
OTHER_READERS = tuple(
    f"kbkit.kb.formats.{name}"
    for name in ("pdf", "html", "notebook", "rst", "plain", "archive", "markdown_writer")
)
"""The readers a project of Markdown files never meets (the registry loads a reader with its first file)."""


def test_indexing_and_searching_markdown_load_no_office_library(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"guide.md": "# Guide\n\nHow we work.\n"})
    for args in (["index", "--root", str(root)], ["search", "--root", str(root), "how we work"]):
        result, modules = run_logged(*args, cwd=root, home=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "kbkit.kb.formats.registry" in modules
        assert loaded(modules, OFFICE + OTHER_READERS) == []
