"""The CLI is thin: it calls the library, prints, and turns refusals into one line and exit code 2."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

from conftest import kbkit_command, make_project


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*kbkit_command(), *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def test_index_prints_a_summary_line_when_not_on_a_terminal(project: Path) -> None:
    result = run("index", "--root", str(project))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("index: 4 documents (4 added, 0 changed, 0 removed)")


def test_index_skipped_lists_the_files_not_indexed_and_why(project: Path) -> None:
    (project / "docs" / "bad.md").write_bytes(b"\x00\x01")
    result = run("index", "--skipped", "--root", str(project))
    assert "skipped bad.md: the file holds binary data" in result.stdout


def test_search_finds_from_the_nearest_project_root(project: Path) -> None:
    result = run("search", "blue green rollout", cwd=project / "docs" / "guide")
    assert result.returncode == 0, result.stderr
    assert "Deploying  (runbooks/deploy.rst" in result.stdout


def test_search_json_matches_the_tool_result_shape(project: Path) -> None:
    result = run("search", "guard", "--json", "--root", str(project))
    data = json.loads(result.stdout)
    assert data["results"][0]["uri"] == "kb://doc/adr/0001-guards.md"
    assert data["truncated"] is False


def test_errors_are_one_line_on_stderr_with_exit_code_2(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "nowhere"\n')
    result = run("search", "x", "--root", str(root))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("kbkit: error: kbkit.toml: [kb.path]")
    assert "Traceback" not in result.stderr


def test_serve_refuses_a_bad_config_before_speaking_the_protocol(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[server]\ntools = ["search", "grep"]\n')
    result = subprocess.run(
        [*kbkit_command(), "serve", "--root", str(root)], input="", capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert "[server.tools]: unknown tool 'grep'" in result.stderr


def test_the_library_never_prints_to_stdout() -> None:
    package = Path(__file__).resolve().parents[1] / "kbkit"
    offenders = []
    for path in package.rglob("*.py"):
        if path.name == "cli.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            prints = (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
            )
            stdout = (
                isinstance(node, ast.Attribute)
                and node.attr == "stdout"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            )
            if prints or stdout:
                offenders.append(f"{path.relative_to(package)}:{node.lineno}")
    assert offenders == []
