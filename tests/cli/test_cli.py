"""The CLI is thin and has one error boundary: every failure is one line, `kbkit: error: ...`, with
the exit code docs/commands.md's table gives, and never a traceback (unless --debug asks for one).

Most tests drive the typer app in-process (CliRunner); a few run kbkit in a process of its own
(forked from the suite's preloaded parent, on real pipes: tests/peers/launch.py), for what only a
real process shows.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from kbkit import __version__
from kbkit.catalog.clients import CLIENTS
from kbkit.cli import app
from kbkit.errors import ExitCode
from tests.helpers.paths import PACKAGE
from tests.helpers.project import make_project
from tests.helpers.serve import serve_with_no_client
from tests.peers.launch import forked_kbkit

runner = CliRunner()


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, list(args), env=env)


def assert_one_error_line(result: Result, code: int, *fragments: str) -> str:
    """Exactly one line on stderr, `kbkit: error: ...`, the exit code, no traceback anywhere."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kbkit: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert result.exit_code == code, (result.exit_code, lines[0])
    return lines[0]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*forked_kbkit(), *args], capture_output=True, text=True, cwd=cwd, timeout=60)


# -- what a user sees when things work ------------------------------------------------------


@pytest.mark.processes
def test_index_prints_a_summary_line_when_not_on_a_terminal(project: Path) -> None:
    result = run("index", "--root", str(project))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("index: 4 documents (4 added, 0 changed, 0 removed)")


def test_index_skipped_lists_the_files_not_indexed_and_why(project: Path) -> None:
    (project / "docs" / "bad.md").write_bytes(b"\x00\x01")
    result = invoke("index", "--skipped", "--root", str(project))
    assert "skipped bad.md: the file holds binary data" in result.stdout


def test_index_skipped_with_nothing_skipped_says_so_and_counts_what_the_ignore_rules_excluded(
    project: Path,
) -> None:
    (project / "docs" / "drafts").mkdir()
    (project / "docs" / "drafts" / "wip.md").write_text("# Work in progress\n")
    (project / "docs" / "secret.md").write_text("# Not for agents\n")
    (project / "docs" / ".kbignore").write_text("drafts/\nsecret.md\n")
    result = invoke("index", "--skipped", "--root", str(project))
    assert result.exit_code == 0, result.output
    listed = result.stdout.splitlines()[1:]
    assert listed[0] == "  nothing skipped: every file of a registered type is indexed whole"
    assert listed[1].startswith("  excluded by .kbignore and [kb] exclude_dirs: 1 folder and 1 file")


def test_init_in_a_folder_with_docs_counts_them_and_offers_the_mkdocs_docs_dir_without_taking_it(
    tmp_path: Path,
) -> None:
    """A MkDocs site as FastAPI keeps it: docs/<language>/mkdocs.yml, the pages in docs/<language>/docs."""
    root = tmp_path / "site"
    for n in range(3):
        write(root / "docs" / "en" / "docs" / f"page{n}.md", f"# Page {n}\n")
    write(root / "docs" / "es" / "docs" / "page0.md", "# Página\n")
    write(root / "docs" / "en" / "mkdocs.yml", "site_name: Site\ndocs_dir: docs\n")
    write(root / "docs" / "es" / "mkdocs.yml", "INHERIT: ../en/mkdocs.yml\n")
    result = invoke("init", "--root", str(root))
    assert result.exit_code == 0, result.output
    assert "kb folder: 4 documents found" in result.stdout
    assert (
        "note: docs/en/docs looks like the documentation (docs_dir of docs/en/mkdocs.yml, 3 documents); "
        "to index it instead: kbkit init --force --kb-path docs/en/docs"
    ) in result.stdout
    assert 'path = "docs"' in (root / "kbkit.toml").read_text()  # offered, not taken
    again = invoke("init", "--root", str(root), "--force", "--kb-path", "docs/en/docs")
    assert "kb folder: 3 documents found" in again.stdout and "note:" not in again.stdout
    assert "put your documents in the kb folder" not in again.stdout  # they are there already


@pytest.mark.parametrize(
    ("files", "folder", "why"),
    [
        (
            {"hugo.toml": 'title = "Site"\n', "content/_index.md": "---\ntitle: Home\n---\n"},
            "content",
            "Hugo's pages, by hugo.toml",
        ),
        ({"book.toml": '[book]\ntitle = "Book"\n', "src/SUMMARY.md": "# Summary\n"}, "src", "mdBook's pages"),
    ],
)
def test_init_in_a_site_takes_the_folder_its_generator_builds_pages_from(
    tmp_path: Path, files: dict[str, str], folder: str, why: str
) -> None:
    """Hugo keeps its pages in content/, mdBook in src/: no empty docs/ is made beside them."""
    root = tmp_path / "site"
    for rel, text in files.items():
        write(root / rel, text)
    write(root / folder / "guide" / "start.md", "---\ntitle: Start\n---\n# Start\n")
    result = invoke("init", "--root", str(root))
    assert result.exit_code == 0, result.output
    assert f"kb folder: {folder} ({why}" in result.stdout and "): 2 documents found" in result.stdout
    assert f'path = "{folder}"' in (root / "kbkit.toml").read_text()
    assert not (root / "docs").exists()
    given = invoke("init", "--root", str(root), "--force", "--kb-path", "docs")
    assert f"note: {folder} looks like the documentation ({why}" in given.stdout  # offered, not taken


def test_init_offers_a_sphinx_folder_below_docs_and_keeps_a_docusaurus_docs_folder(tmp_path: Path) -> None:
    sphinx = tmp_path / "sphinx"
    write(sphinx / "docs" / "source" / "conf.py", "extensions = []\nsource_suffix = '.txt'\n")
    write(sphinx / "docs" / "source" / "index.txt", "Home\n====\n")
    write(sphinx / "docs" / "README.md", "# How to build the docs\n")
    result = invoke("init", "--root", str(sphinx))
    assert "kb folder: 2 documents found" in result.stdout
    assert (
        "note: docs/source looks like the documentation (Sphinx's pages, by docs/source/conf.py"
        in result.stdout
    )
    docusaurus = tmp_path / "docusaurus"
    write(docusaurus / "docusaurus.config.js", "module.exports = {title: 'Site'};\n")
    write(docusaurus / "docs" / "intro.md", "# Intro\n")
    result = invoke("init", "--root", str(docusaurus))
    assert "kb folder: 1 document found" in result.stdout and "note:" not in result.stdout


def test_init_with_a_kb_path_outside_the_project_refuses_to_create_it_there(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    result = invoke("init", "--root", str(root), "--kb-path", "../outside")
    assert_one_error_line(result, ExitCode.BAD_INPUT, "--kb-path ../outside is outside the project folder")
    assert not (tmp_path / "outside").exists() and not (root / "kbkit.toml").exists()


def test_init_with_a_kb_path_to_an_existing_folder_outside_the_project_says_so(tmp_path: Path) -> None:
    (tmp_path / "shared-docs").mkdir()
    result = invoke("init", "--root", str(tmp_path / "repo"), "--kb-path", "../shared-docs")
    assert result.exit_code == 0, result.output
    assert f"note: the kb folder {tmp_path / 'shared-docs'} is outside the project" in result.stdout


def test_init_force_over_an_identical_file_says_unchanged_not_kept(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    assert invoke("init", "--root", str(root)).exit_code == 0
    again = invoke("init", "--root", str(root), "--force")
    assert again.exit_code == 0, again.output
    first = again.stdout.splitlines()[0]
    assert first == f"{root / 'kbkit.toml'} unchanged (it already holds the starter file)"
    plain = invoke("init", "--root", str(root)).stdout.splitlines()[0]
    assert plain.startswith("kept the existing")  # without --force it was not asked to write


def test_token_list_with_no_tokens_says_there_are_none_and_how_to_make_one(project: Path) -> None:
    result = invoke("token", "list", "--root", str(project))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # nothing to list: a script reading stdout sees no rows
    assert "no tokens in" in result.stderr and "kbkit token create NAME" in result.stderr


def test_port_out_of_range_is_refused_with_the_config_checks_own_rule_and_words(project: Path) -> None:
    for port in ("99999", "-1", "65536"):
        result = invoke("serve", "--http", "--root", str(project), "--port", port)
        line = assert_one_error_line(result, ExitCode.BAD_INPUT, f"{port} is out of range (0 to 65535)")
        assert line.startswith("kbkit: error: --port: [server.http.port]: ")
    (project / "kbkit.toml").write_text('[kb]\npath = "docs"\n[server.http]\nport = 99999\n')
    from_config = invoke("serve", "--http", "--root", str(project))
    assert_one_error_line(
        from_config, ExitCode.BAD_INPUT, "[server.http.port]: 99999 is out of range (0 to 65535)"
    )


@pytest.mark.processes
@pytest.mark.parametrize("command", [("doctor",), ("search", "guard"), ("search", "guard", "--json")])
def test_a_stdout_closed_early_ends_quietly_with_exit_code_141(
    project: Path, command: tuple[str, ...]
) -> None:
    """`kbkit doctor | head -1`, made deterministic: the reader is gone before kbkit writes a byte."""
    assert invoke("index", "--root", str(project)).exit_code == 0
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [*forked_kbkit(), *command, "--root", str(project)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert done.stderr == "", done.stderr  # no "environment error", no "Exception ignored"
    assert done.returncode == ExitCode.CLOSED_PIPE


@pytest.mark.processes
def test_search_finds_from_the_nearest_project_root(project: Path) -> None:
    result = run("search", "blue green rollout", cwd=project / "docs" / "guide")
    assert result.returncode == 0, result.stderr
    assert "Deploying  (runbooks/deploy.rst" in result.stdout


def test_search_json_matches_the_tool_result_shape(project: Path) -> None:
    result = invoke("search", "guard", "--json", "--root", str(project))
    data = json.loads(result.stdout)
    assert data["results"][0]["uri"] == "kb://doc/adr/0001-guards.md"
    assert data["truncated"] is False


def test_init_says_the_real_next_steps_index_sync_doctor_restart(tmp_path: Path) -> None:
    result = invoke("init", "--root", str(tmp_path / "repo"))
    assert result.exit_code == 0, result.output
    steps = result.stdout.split("next:", 1)[1]
    order = [steps.index(word) for word in ("kbkit index", "kbkit sync", "kbkit doctor", "restart")]
    assert order == sorted(order)


def test_version_and_help_show_no_type_placeholders() -> None:
    assert invoke("--version").stdout == f"kbkit {__version__}\n"
    help_text = invoke("--help").stdout
    assert "--debug" in help_text and "<bool>" not in help_text


# -- one error boundary ----------------------------------------------------------------------


def broken_projects() -> dict[str, Callable[[Path], Path]]:
    """Ways a project's configuration can be wrong; each returns the --root to pass."""

    def no_config(tmp: Path) -> Path:
        (tmp / "empty").mkdir()
        return tmp / "empty"

    def config_is_a_folder(tmp: Path) -> Path:
        root = make_project(tmp / "p")
        (root / "kbkit.toml").unlink()
        (root / "kbkit.toml").mkdir()
        return root

    def config_is_a_fifo(tmp: Path) -> Path:
        root = make_project(tmp / "p")
        (root / "kbkit.toml").unlink()
        os.mkfifo(root / "kbkit.toml")
        return root

    def config_is_utf16(tmp: Path) -> Path:
        root = make_project(tmp / "p")
        (root / "kbkit.toml").write_bytes('[kb]\npath = "docs"\n'.encode("utf-16"))
        return root

    def unknown_key_in_local(tmp: Path) -> Path:
        root = make_project(tmp / "p")
        (root / "kbkit.local.toml").write_text('[kb]\nexclude_dir = ["x"]\n')
        return root

    def kb_folder_missing(tmp: Path) -> Path:
        return make_project(tmp / "p", config='[kb]\npath = "handbook"\n')

    def env_local_is_a_folder(tmp: Path) -> Path:
        root = make_project(tmp / "p")
        (root / ".env.local").mkdir()
        return root

    return {f.__name__: f for f in (
        no_config, config_is_a_folder, config_is_a_fifo, config_is_utf16, unknown_key_in_local,
        kb_folder_missing, env_local_is_a_folder,
    )}  # fmt: skip


BROKEN_FRAGMENTS = {
    "no_config": "no kbkit.toml",
    "config_is_a_folder": "kbkit.toml is a folder",
    "config_is_a_fifo": "kbkit.toml is a named pipe (FIFO)",
    "config_is_utf16": "kbkit.toml is UTF-16 text",
    "unknown_key_in_local": "kbkit.local.toml: [kb.exclude_dir]: unknown key",
    "kb_folder_missing": "kbkit.toml: [kb.path]",
    "env_local_is_a_folder": ".env.local is a folder",
}

COMMANDS = [
    ["index"],
    ["search", "anything"],
    ["serve"],
    ["serve", "--http"],
    ["sync"],
    ["sync", "--check"],
    ["skills", "list"],
    ["skills", "install"],
    ["skills", "check"],
    ["skills", "update"],
    ["skills", "add", "./somewhere"],
    ["skills", "remove", "some-skill"],
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("broken", list(broken_projects()))
def test_every_command_meets_a_broken_config_with_one_line_and_exit_code_2(
    tmp_path: Path, broken: str, command: list[str]
) -> None:
    root = broken_projects()[broken](tmp_path)
    result = invoke(*command, "--root", str(root))
    assert_one_error_line(result, ExitCode.BAD_INPUT, BROKEN_FRAGMENTS[broken])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("broken", list(broken_projects()))
def test_doctor_reports_a_broken_config_as_a_failed_check_with_exit_code_1(
    tmp_path: Path, broken: str
) -> None:
    root = broken_projects()[broken](tmp_path)
    result = invoke("doctor", "--root", str(root))
    assert result.exit_code == ExitCode.CHECK_FAILED
    assert "Traceback" not in result.output
    (config,) = [line for line in result.stdout.splitlines() if line.startswith("FAIL  config:")]
    assert BROKEN_FRAGMENTS[broken] in config


@pytest.mark.timeout(60)
@pytest.mark.parametrize("broken", ["config_is_a_folder", "config_is_a_fifo", "config_is_utf16"])
def test_init_without_force_keeps_an_odd_kbkit_toml_and_says_what_is_wrong(
    tmp_path: Path, broken: str
) -> None:
    root = broken_projects()[broken](tmp_path)
    result = invoke("init", "--root", str(root))
    assert_one_error_line(result, ExitCode.BAD_INPUT, BROKEN_FRAGMENTS[broken])


def test_init_with_force_refuses_to_replace_a_folder_named_kbkit_toml(tmp_path: Path) -> None:
    root = broken_projects()["config_is_a_folder"](tmp_path)
    result = invoke("init", "--force", "--root", str(root))
    assert_one_error_line(result, ExitCode.BAD_INPUT, "kbkit.toml is a folder", "move it away")
    assert (root / "kbkit.toml").is_dir()


def test_init_with_a_root_that_is_a_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    assert_one_error_line(invoke("init", "--root", str(tmp_path / "file")), 2, "is not a folder")


def test_a_folder_named_kbkit_toml_stops_the_search_for_the_project_root(tmp_path: Path) -> None:
    parent = make_project(tmp_path / "parent")
    child = parent / "child"
    (child / "kbkit.toml").mkdir(parents=True)
    previous = Path.cwd()
    os.chdir(child)
    try:
        result = invoke("index")
    finally:
        os.chdir(previous)
    assert_one_error_line(result, ExitCode.BAD_INPUT, f"{child / 'kbkit.toml'} is a folder")


def test_search_with_an_impossible_limit_is_bad_input(project: Path) -> None:
    assert_one_error_line(invoke("search", "guard", "--limit", "0", "--root", str(project)), 2, "limit")


def test_an_index_folder_that_cannot_be_created_is_an_environment_error(project: Path) -> None:
    (project / ".kbkit").write_text("not a folder")
    assert_one_error_line(invoke("index", "--root", str(project)), ExitCode.ENVIRONMENT, ".kbkit")


def test_serve_over_http_without_a_token_is_bad_config(project: Path) -> None:
    result = invoke(
        "serve", "--http", "--root", str(project), env={"MCP_TOKEN": "", "MCP_ALLOW_ANONYMOUS": ""}
    )
    assert_one_error_line(result, ExitCode.BAD_INPUT, "no MCP_TOKEN is set")


def test_sync_only_an_unknown_client_names_the_known_ones(project: Path) -> None:
    assert_one_error_line(
        invoke("sync", "--only", "cursr", "--root", str(project)), 2, "unknown client 'cursr'"
    )


def test_skills_add_from_a_missing_folder_is_bad_input(project: Path) -> None:
    result = invoke("skills", "add", str(project / "nowhere"), "--root", str(project))
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.stderr.startswith("kbkit: error: ") and "Traceback" not in result.output


@pytest.mark.timeout(60)
def test_connect_with_an_unreadable_env_local_says_which_file(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    os.mkfifo(root / ".env.local")
    result = invoke("connect", "http://127.0.0.1:9/mcp", "--root", str(root))
    assert_one_error_line(result, ExitCode.BAD_INPUT, ".env.local is a named pipe")


def test_an_unexpected_exception_is_one_line_that_points_at_debug(project: Path, monkeypatch) -> None:
    from kbkit.kb.base import KnowledgeBase

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("something\nkbkit did not expect")

    monkeypatch.setattr(KnowledgeBase, "scan", boom)
    line = assert_one_error_line(invoke("index", "--root", str(project)), ExitCode.INTERNAL, "RuntimeError")
    assert line.endswith("rerun with --debug for the traceback)")
    debug = invoke("--debug", "index", "--root", str(project))
    assert debug.exit_code == ExitCode.INTERNAL
    assert "Traceback (most recent call last)" in debug.stderr and "in boom" in debug.stderr
    assert debug.stderr.splitlines()[-1] == line
    by_env = invoke("index", "--root", str(project), env={"KBKIT_DEBUG": "1"})
    assert "Traceback (most recent call last)" in by_env.stderr


def test_a_stray_os_error_is_an_environment_error_naming_the_file(project: Path, monkeypatch) -> None:
    from kbkit.kb.base import KnowledgeBase

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "/srv/kb/locked.md")

    monkeypatch.setattr(KnowledgeBase, "scan", denied)
    assert_one_error_line(
        invoke("index", "--root", str(project)), ExitCode.ENVIRONMENT, "/srv/kb/locked.md: Permission denied"
    )


def test_ctrl_c_is_exit_code_130_without_a_traceback(project: Path, monkeypatch) -> None:
    from kbkit.kb.base import KnowledgeBase

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(KnowledgeBase, "scan", interrupted)
    result = invoke("index", "--root", str(project))
    assert result.exit_code == ExitCode.INTERRUPTED
    assert result.stderr == "kbkit: interrupted\n"


# -- every file `kbkit sync` reads, at every kind of oddity ----------------------------------


def oddities() -> dict[str, tuple[Callable[[Path], None], str]]:
    """Each kind of odd file: how to make it, and what the error line says about it."""

    def symlink(path: Path) -> None:
        path.symlink_to(path.parent / "nowhere")

    return {
        "folder": (lambda path: path.mkdir(), "is a folder"),
        "fifo": (lambda path: os.mkfifo(path), "is a named pipe (FIFO)"),
        "dangling-symlink": (symlink, "symbolic link"),
        "utf-16": (lambda path: path.write_bytes('{"a": "b"}\n'.encode("utf-16")), "is UTF-16 text"),
        "latin-1": (lambda path: path.write_bytes('{"a": "café"}\n'.encode("latin-1")), "is not UTF-8"),
    }


SYNC_READS = sorted(
    {client.path for client in CLIENTS.values()}
    | {"kbkit.local.toml", ".env.local", ".gitignore", ".kbkit/sync-state.json", "skills-lock.json"}
)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("oddity", list(oddities()))
@pytest.mark.parametrize("rel", SYNC_READS)
def test_sync_meets_every_odd_file_it_reads_with_one_line_naming_it_and_writes_nothing(
    tmp_path: Path, rel: str, oddity: str
) -> None:
    listed = ", ".join(f'"{name}"' for name in CLIENTS)
    root = make_project(tmp_path / "p", config=f'[kb]\npath = "docs"\n[sync]\nclients = [{listed}]\n')
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    make, fragment = oddities()[oddity]
    make(target)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    result = invoke("sync", "--root", str(root))
    assert_one_error_line(result, ExitCode.BAD_INPUT, rel, fragment)
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before  # nothing written


@pytest.mark.timeout(60)
@pytest.mark.parametrize("oddity", ["folder", "fifo"])
def test_doctor_finishes_when_a_client_file_is_odd(tmp_path: Path, oddity: str) -> None:
    root = make_project(tmp_path / "p")
    oddities()[oddity][0](root / ".mcp.json")
    result = invoke("doctor", "--root", str(root))
    assert result.exit_code == ExitCode.CHECK_FAILED
    assert "Traceback" not in result.output and "the check itself failed" not in result.stdout
    assert any(".mcp.json" in line and line.startswith("FAIL  sync") for line in result.stdout.splitlines())


# -- in a process of its own ---------------------------------------------------------------


@pytest.mark.processes
def test_errors_are_one_line_on_stderr_with_exit_code_2(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "nowhere"\n')
    result = run("search", "x", "--root", str(root))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("kbkit: error: kbkit.toml: [kb.path]")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.processes
def test_serve_refuses_a_bad_config_before_speaking_the_protocol(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[server]\ntools = ["search", "grep"]\n')
    result = serve_with_no_client(root, command=forked_kbkit())
    assert result.returncode == 2
    assert result.stdout == ""
    assert "[server.tools]: unknown tool 'grep'" in result.stderr


def test_the_library_never_prints_to_stdout() -> None:
    package = PACKAGE
    offenders = []
    for path in package.rglob("*.py"):
        if path.relative_to(package).parts[0] == "cli":
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


def test_commands_catch_no_library_errors_themselves() -> None:
    """One boundary: no command module handles KbkitError (or any exception) on its own."""
    folder = PACKAGE / "cli"
    handlers = []
    for path in folder.glob("*.py"):
        if path.name == "boundary.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler):
                handlers.append(f"{path.name}: {ast.unparse(node.type) if node.type else 'everything'}")
    # serve stops quietly on Ctrl-C; the relay behind connect is its own process boundary
    assert sorted(handlers) == ["serve.py: KeyboardInterrupt"]
