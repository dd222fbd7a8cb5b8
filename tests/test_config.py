"""Configuration: one schema, clear errors that name the file, the key and the fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import tomlkit
from conftest import kbkit_command, make_project

from kbkit.config import SCHEMA, find_root, load_settings
from kbkit.errors import ConfigError
from kbkit.scaffold import init_project, starter_config


def test_defaults_index_docs_with_every_parser(project: Path) -> None:
    settings = load_settings(project)
    assert settings.kb_path == (project / "docs").resolve()
    assert settings.parsers == ("md", "markdown", "txt", "rst", "pdf")
    assert settings.server_name == "kb"
    assert settings.server_tools == ("search", "get_document")
    assert settings.index_path == project.resolve() / ".kbkit" / "index.db"


def test_the_root_is_the_nearest_folder_above_holding_kbkit_toml(project: Path) -> None:
    deep = project / "docs" / "guide"
    assert find_root(deep) == project.resolve()


def test_no_kbkit_toml_anywhere_says_to_run_init(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="run `kbkit init`"):
        find_root(tmp_path)


def test_an_unknown_key_names_the_file_the_key_and_the_nearest_valid_one(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\nexclude_dir = ["x"]\n')
    with pytest.raises(ConfigError) as error:
        load_settings(root)
    message = str(error.value)
    assert "kbkit.toml" in message and "[kb.exclude_dir]" in message
    assert "did you mean 'exclude_dirs'" in message


def test_an_unknown_section_suggests_the_nearest(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[parser]\nenabled = ["md"]\n')
    with pytest.raises(ConfigError, match=r"unknown section \[parser\] \(did you mean 'parsers'\?\)"):
        load_settings(root)


@pytest.mark.parametrize(
    ("toml", "key", "fragment"),
    [
        ("[kb]\npath = 3\n", "kb.path", "must be a string"),
        ('[kb]\npath = "docs"\nexclude_dirs = "node_modules"\n', "kb.exclude_dirs", "must be a list"),
        ('[kb]\npath = "docs"\n[parsers]\nenabled = ["md", 1]\n', "parsers.enabled", "list of strings"),
        (
            '[kb]\npath = "docs"\n[parsers]\nenabled = ["md", "docx"]\n',
            "parsers.enabled",
            "unknown parser 'docx'",
        ),
        ('[kb]\npath = "docs"\n[server]\nname = ""\n', "server.name", "must not be empty"),
    ],
)
def test_wrong_types_and_values_are_one_clear_error(
    tmp_path: Path, toml: str, key: str, fragment: str
) -> None:
    root = make_project(tmp_path / "p", config=toml)
    with pytest.raises(ConfigError) as error:
        load_settings(root)
    assert f"[{key}]" in str(error.value)
    assert fragment in str(error.value)


def test_invalid_toml_reports_the_line(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs\n')
    with pytest.raises(ConfigError, match=r"kbkit.toml: not valid TOML .*line 2"):
        load_settings(root)


def test_a_missing_kb_folder_says_how_to_fix_it(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "handbook"\n')
    with pytest.raises(
        ConfigError, match=r"\[kb.path\].*handbook does not exist; create it or set \[kb\] path"
    ):
        load_settings(root)


def test_the_local_overlay_wins_over_the_tracked_file(project: Path) -> None:
    (project / "kbkit.local.toml").write_text('[parsers]\nenabled = ["md"]\n')
    settings = load_settings(project)
    assert settings.parsers == ("md",)
    assert settings.kb_path == (project / "docs").resolve()  # untouched keys keep the tracked value


def test_errors_in_the_local_overlay_name_that_file(project: Path) -> None:
    (project / "kbkit.local.toml").write_text("[kb]\nfolder = 'x'\n")
    with pytest.raises(ConfigError, match=r"kbkit.local.toml: \[kb.folder\]"):
        load_settings(project)


def test_env_local_is_loaded_and_the_real_environment_wins(project: Path) -> None:
    (project / ".env.local").write_text("HINDSIGHT_API_KEY=from-file\nMCP_TOKEN=file-token\n")
    settings = load_settings(project, environ={"MCP_TOKEN": "real-token"})
    assert settings.env["HINDSIGHT_API_KEY"] == "from-file"
    assert settings.env["MCP_TOKEN"] == "real-token"
    assert "from-file" not in repr(settings)


def test_the_starter_config_is_valid_commented_and_covers_the_schema(tmp_path: Path) -> None:
    text = starter_config()
    parsed = tomlkit.parse(text).unwrap()
    for section, keys in SCHEMA.items():
        if section == "memory":  # opt-in: a commented example
            assert "# [memory]" in text
            continue
        table = parsed
        for part in section.split("."):
            table = table[part]
        assert set(keys) <= set(table)
    assert "[server.http]" in text
    assert text.count("#") >= sum(len(keys) for keys in SCHEMA.values())


def test_init_writes_config_docs_folder_and_gitignore_block_and_is_idempotent(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".gitignore").write_text("node_modules/\n")
    first = init_project(root)
    assert first.config_written and first.kb_folder_created and first.gitignore_changed
    assert load_settings(root).kb_path == (root / "docs").resolve()
    gitignore = (root / ".gitignore").read_text()
    assert gitignore.startswith("node_modules/\n")
    for entry in (".kbkit/", ".env.local", "kbkit.local.toml"):
        assert entry in gitignore
    before = (root / "kbkit.toml").read_text()
    second = init_project(root)
    assert not second.config_written and not second.gitignore_changed
    assert (root / "kbkit.toml").read_text() == before


def test_init_keeps_git_ignoring_the_right_paths(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*kbkit_command(), "init", "--root", str(root)], check=True, capture_output=True)
    (root / ".env.local").write_text("MCP_TOKEN=x\n")
    (root / ".kbkit").mkdir(exist_ok=True)
    (root / ".kbkit" / "index.db").write_bytes(b"")
    for path, ignored in [
        (".env.local", True),
        (".kbkit/index.db", True),
        ("kbkit.local.toml", True),
        ("kbkit.toml", False),
        ("docs/a.md", False),
    ]:
        result = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", path])
        assert (result.returncode == 0) is ignored, path
