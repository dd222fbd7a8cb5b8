"""Configuration: one typed model, clear errors that name the file, the key and the fix."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbkit.config import find_root, load_settings
from kbkit.config.docs import starter_config
from kbkit.config.model import KB_TOOL_NAMES, KbkitConfig, key_docs, keys, sections
from kbkit.errors import ConfigError, EnvironmentProblem, KbkitError, UnreadableFile
from kbkit.fsutil import read_text_file
from kbkit.scaffold import init_project
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process


def test_defaults_index_docs_with_every_parser(project: Path) -> None:
    settings = load_settings(project)
    assert settings.kb_path == (project / "docs").resolve()
    assert settings.parsers == (
        "md",
        "markdown",
        "txt",
        "rst",
        "pdf",
        "docx",
        "pptx",
        "xlsx",
        "odt",
        "odp",
        "ods",
        "html",
        "htm",
        "ipynb",
    )
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


WRONG_IN_THE_TRACKED_FILE = [
    ("[kb]\npath = 3\n", "kb.path", "must be a string"),
    ('[kb]\npath = "docs"\nexclude_dirs = "node_modules"\n', "kb.exclude_dirs", "must be a list"),
    ('[kb]\npath = "docs"\n[parsers]\nenabled = ["md", 1]\n', "parsers.enabled", "list of strings"),
    (
        '[kb]\npath = "docs"\n[parsers]\nenabled = ["md", "doc"]\n',
        "parsers.enabled",
        "unknown parser 'doc'",
    ),
    ('[kb]\npath = "docs"\n[server]\nname = ""\n', "server.name", "must not be empty"),
]
"""Whole kbkit.toml files with one wrong type or value each: (the text, the key, part of the error)."""
WRONG_IN_THE_OVERLAY = [
    (
        '[server]\ntools = ["search", "grep"]\n',
        "server.tools",
        "unknown tool 'grep'; known: search, get_document",
    ),
    ("[server.http]\nport = 70000\n", "server.http.port", "70000 is out of range (0 to 65535)"),
    ("[server.http]\nport = true\n", "server.http.port", "must be a whole number, got bool True"),
    (
        '[skills]\nmode = "hardlink"\n',
        "skills.mode",
        "'hardlink' is not allowed; use 'symlink' or 'copy'",
    ),
    (
        '[skills]\nagents = ["claude-cod"]\n',
        "skills.agents",
        "unknown agent 'claude-cod' (did you mean 'claude-code'?)",
    ),
    ('[sync]\nclients = ["cursr"]\n', "sync.clients", "unknown client 'cursr' (did you mean 'cursor'?)"),
    ('[sync]\nremote_url = "kb.internal/mcp"\n', "sync.remote_url", "is not an http(s) URL"),
    ('[sync]\nremote_url = "https://kb/mcp?token=abc"\n', "sync.remote_url", "put no token in the URL"),
    ('[memory]\nurl = "https://m/{bank}/"\ncommand = ["m"]\n', "memory.url", "not both"),
    ('[memory]\ncredential = "sk-live-123"\n', "memory.credential", "is not a variable name"),
    ("[memory]\ntimeout = 0\n", "memory.timeout", "out of range (1 to 3600)"),
    ('[memory]\nprefix = "a b"\n', "memory.prefix", "use only letters"),
    (
        '[memory]\ndescriptions = "long"\n',
        "memory.descriptions",
        "'long' is not allowed; use 'short' or 'upstream'",
    ),
    ("[kb]\nwatch = 1\n", "kb.watch", "must be true or false, got int 1; for example: watch = true"),
]
"""kbkit.local.toml overlays on a good kbkit.toml: one wrong value in each section."""


@pytest.mark.parametrize(
    ("file", "toml", "key", "fragment"),
    [("kbkit.toml", *case) for case in WRONG_IN_THE_TRACKED_FILE]
    + [("kbkit.local.toml", *case) for case in WRONG_IN_THE_OVERLAY],
)
def test_every_section_is_validated_in_the_config_not_at_first_use_and_the_error_names_file_and_key(
    tmp_path: Path, file: str, toml: str, key: str, fragment: str
) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n')
    (root / file).write_text(toml)
    with pytest.raises(ConfigError) as error:
        load_settings(root)
    assert str(error.value).startswith(f"{file}: [{key}]: "), str(error.value)
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


@pytest.mark.git
def test_init_keeps_git_ignoring_the_right_paths(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert kbkit_in_process("init", "--root", str(root)).returncode == 0
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


# -- the model: every key validated, and the file a bad value came from ---------------------


def test_the_same_bad_key_in_the_tracked_file_names_the_tracked_file(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[server.http]\nport = 70000\n')
    (root / "kbkit.local.toml").write_text('[server]\nname = "mine"\n')
    with pytest.raises(ConfigError, match=r"^kbkit.toml: \[server.http.port\]"):
        load_settings(root)


def test_a_missing_kb_folder_set_in_the_overlay_names_the_overlay(project: Path) -> None:
    (project / "kbkit.local.toml").write_text('[kb]\npath = "mine"\n')
    with pytest.raises(ConfigError, match=r"^kbkit.local.toml: \[kb.path\]: the knowledge-base folder"):
        load_settings(project)


def test_an_unknown_sub_table_and_a_key_outside_any_section_are_named(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[server.htp]\nport = 1\n')
    with pytest.raises(ConfigError, match=r"unknown section \[server.htp\] \(did you mean 'server.http'\?\)"):
        load_settings(root)
    (root / "kbkit.toml").write_text('title = "docs"\n[kb]\npath = "docs"\n')
    with pytest.raises(ConfigError, match=r"\[title\]: 'title' is outside any section; put keys under"):
        load_settings(root)
    (root / "kbkit.toml").write_text('kb = "docs"\n')
    with pytest.raises(ConfigError, match=r"\[kb\] must be a table"):
        load_settings(root)


def test_values_are_never_coerced(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[server.http]\nport = "8080"\n')
    with pytest.raises(ConfigError, match=r"must be a whole number, got str '8080'"):
        load_settings(root)


def test_lists_are_deduplicated_and_every_section_is_readable_from_settings(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        config='[kb]\npath = "docs"\n[parsers]\nenabled = ["md", "md", "txt"]\n[sync]\n'
        'remote_url = "https://kb.internal/mcp"\n[memory]\nurl = "https://m.example/{bank}/"\nbank = "team"\n',
    )
    settings = load_settings(root, as_written=True)  # as read: trust is tests/config/test_trust.py's
    assert settings.parsers == ("md", "txt")
    assert settings.sync.remote_url == settings.sync_remote_url == "https://kb.internal/mcp"
    assert settings.memory.configured and settings.memory.endpoint == "https://m.example/team/"
    assert settings.http.port == settings.server.http.port == 18080
    assert settings.origin("memory.bank") == "kbkit.toml"


def test_a_memory_url_without_a_bank_is_used_as_it_is(tmp_path: Path) -> None:
    """Memory services other than Hindsight have no bank in their URL."""
    url = "http://127.0.0.1:8765/mcp"
    root = make_project(tmp_path / "p", config=f'[kb]\npath = "docs"\n[memory]\nurl = "{url}"\n')
    memory = load_settings(root).memory
    assert memory.configured and memory.endpoint == url
    assert not memory.bank_ignored  # bank left at its default: nothing to say about it
    (root / "kbkit.local.toml").write_text('[memory]\nbank = "team"\n')
    memory = load_settings(root).memory
    assert memory.endpoint == url and memory.bank_ignored


def test_a_bank_written_for_a_url_with_a_bank_in_it_is_used() -> None:
    from kbkit.config import Memory

    memory = Memory(url="https://m.example/mcp/{bank}/", bank="team")
    assert memory.endpoint == "https://m.example/mcp/team/" and not memory.bank_ignored


def test_the_config_knows_exactly_the_tools_the_server_implements() -> None:
    from kbkit.server.tools import KB_TOOLS

    assert set(KB_TOOL_NAMES) == set(KB_TOOLS)


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    (root / "kbkit.toml").write_bytes('\ufeff[kb]\npath = "docs"\n'.encode())
    (root / ".env.local").write_bytes("\ufeffMCP_TOKEN=abc\n".encode())
    settings = load_settings(root, environ={})
    assert settings.env["MCP_TOKEN"] == "abc"


def test_a_symlinked_kbkit_toml_is_followed(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    shared = tmp_path / "shared.toml"
    shared.write_text('[kb]\npath = "docs"\n[server]\nname = "team-kb"\n')
    (root / "kbkit.toml").unlink()
    (root / "kbkit.toml").symlink_to(shared)
    assert load_settings(root).server_name == "team-kb"


# -- every config file at every kind of oddity ---------------------------------------------


def make_odd(path: Path, oddity: str) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if oddity == "folder":
        path.mkdir()
    elif oddity == "fifo":
        os.mkfifo(path)
    elif oddity == "dangling-symlink":
        path.symlink_to(path.parent / "gone.toml")
    elif oddity == "utf-16":
        path.write_bytes('[kb]\npath = "docs"\n'.encode("utf-16"))
    elif oddity == "utf-16-no-bom":
        path.write_bytes('[kb]\npath = "docs"\n'.encode("utf-16-le"))
    elif oddity == "latin-1":
        path.write_bytes('[server]\nname = "café"\n'.encode("latin-1"))
    elif oddity == "symlink-loop":
        path.symlink_to(path)


ODD = {
    "folder": ("is a folder, not a file", "move it away"),
    "fifo": ("is a named pipe (FIFO), not a file", "move it away"),
    "dangling-symlink": ("is a symbolic link to", "point the link at an existing file or remove it"),
    "utf-16": ("is UTF-16 text, not UTF-8", "iconv -f UTF-16 -t UTF-8"),
    "utf-16-no-bom": ("is UTF-16 text, not UTF-8", "iconv -f UTF-16 -t UTF-8"),
    "latin-1": ("is not UTF-8 text (byte 0xe9 at offset", "iconv -f LATIN1 -t UTF-8"),
    "symlink-loop": ("is a symbolic link loop", "point the link at a real file"),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("oddity", list(ODD))
@pytest.mark.parametrize("name", ["kbkit.toml", "kbkit.local.toml", ".env.local", "docs/.kbignore"])
def test_an_odd_config_file_is_one_error_naming_it_and_the_fix(
    tmp_path: Path, name: str, oddity: str
) -> None:
    root = make_project(tmp_path / "p")
    make_odd(root / name, oddity)
    problem, fix = ODD[oddity]
    with pytest.raises(UnreadableFile) as error:
        if name == "docs/.kbignore":
            from kbkit.kb.ignore import IgnoreRules

            IgnoreRules.load(root / "docs", ())
        else:
            load_settings(root)
    message = str(error.value)
    assert message.startswith(f"{root / name} {problem}"), message
    assert fix in message and "\n" not in message


@pytest.mark.timeout(30)
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UnreadableFile, match="named pipe"):
        read_text_file(tmp_path / "pipe")


def test_a_device_and_an_oversized_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(UnreadableFile, match="is a device, not a file"):
        read_text_file(tmp_path / "zero")
    (tmp_path / "big").write_bytes(b"x" * 2048)
    with pytest.raises(UnreadableFile, match="is 2,048 bytes; kbkit reads files of at most 1,024 bytes"):
        read_text_file(tmp_path / "big", limit=1024)


def test_a_missing_file_is_none_and_a_file_under_a_file_is_refused(tmp_path: Path) -> None:
    assert read_text_file(tmp_path / "absent") is None
    (tmp_path / "plain").write_text("x")
    with pytest.raises(UnreadableFile, match="a folder on its path is a file"):
        read_text_file(tmp_path / "plain" / "inner.json")


def test_an_unreadable_file_is_an_environment_problem(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "secret").write_text("x")
    (tmp_path / "secret").chmod(0)
    if os.geteuid() == 0:  # root reads any file: make open() answer as it would for anyone else
        real_open = os.open

        def denied(path: object, *args: object, **kwargs: object) -> int:
            if Path(str(path)).name == "secret":
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "open", denied)
    with pytest.raises(
        EnvironmentProblem, match=r"secret cannot be read \(permission denied\); make it readable"
    ):
        read_text_file(tmp_path / "secret")


def test_a_folder_named_kbkit_toml_is_the_root_and_not_skipped_for_a_parent(tmp_path: Path) -> None:
    parent = make_project(tmp_path / "parent")
    child = parent / "child"
    (child / "kbkit.toml").mkdir(parents=True)
    assert find_root(child) == child.resolve()
    with pytest.raises(KbkitError, match="kbkit.toml is a folder"):
        load_settings(child)
    dangling = parent / "other"
    dangling.mkdir()
    (dangling / "kbkit.toml").symlink_to(dangling / "moved.toml")
    assert find_root(dangling) == dangling.resolve()


# -- kbkit init's kbkit.toml and docs/configuration.md's table, both written from the model --------------


def example_blocks(text: str) -> list[tuple[int, int]]:
    """(first, last) line numbers of each commented example: a `# [section]` block, or one `# key = value`."""
    lines = text.splitlines()
    blocks = []
    number = 0
    while number < len(lines):
        code = lines[number][2:] if lines[number].startswith("# ") else None
        if code is not None and code.startswith("["):
            end = number
            while end + 1 < len(lines) and lines[end + 1].startswith("# "):
                end += 1
            blocks.append((number, end))
            number = end + 1
            continue
        if code is not None and _is_assignment(code):
            blocks.append((number, number))
        number += 1
    return blocks


def _is_assignment(code: str) -> bool:
    try:
        return len(tomllib.loads(code)) == 1
    except tomllib.TOMLDecodeError:
        return False


def test_the_starter_config_loads_and_every_key_is_in_it_with_its_meaning(tmp_path: Path) -> None:
    text = starter_config()
    root = tmp_path / "p"
    (root / "docs").mkdir(parents=True)
    (root / "kbkit.toml").write_text(text)
    assert load_settings(root).config == KbkitConfig()
    for doc in key_docs():
        assert f"{doc.name} = " in text, doc
        assert doc.doc[1:] in text, doc
    assert "[server.http]" in text


def test_every_commented_example_in_the_starter_config_works_when_uncommented(tmp_path: Path) -> None:
    text = starter_config()
    blocks = example_blocks(text)
    # the memory block, remote_url, allowed_hosts, allowed_origins, the oauth block, skills refs and
    # a team server, a restricted folder
    assert len(blocks) == 8, blocks
    root = tmp_path / "p"
    (root / "docs").mkdir(parents=True)
    for first, last in blocks:
        lines = text.splitlines()
        for number in range(first, last + 1):
            lines[number] = lines[number][2:]
        (root / "kbkit.toml").write_text("\n".join(lines) + "\n")
        settings = load_settings(root, as_written=True)
        assert settings.config != KbkitConfig(), lines[first]  # the example took effect
        if lines[first] == "[memory]":
            assert settings.memory.configured
        if lines[first].startswith("[servers."):
            assert settings.servers["tracker"].env == {"TRACKER_TOKEN": "${TRACKER_TOKEN}"}


# -- hostile values: anything a TOML file can hold is a KbkitError or a valid Settings ------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("~nosuchuser/docs", "is not a usable folder path"),
        ("a\x00b", "is not a usable folder path"),
        ("/dev/null", "is not a folder"),
        ("  ", "must not be empty"),
    ],
)
def test_a_kb_path_that_cannot_be_a_folder_is_a_config_error(
    tmp_path: Path, value: str, fragment: str
) -> None:
    root = make_project(tmp_path / "p")
    (root / "kbkit.local.toml").write_text(tomlkit.dumps({"kb": {"path": value}}))
    with pytest.raises(ConfigError, match=r"^kbkit.local.toml: \[kb.path\]: ") as error:
        load_settings(root)
    assert fragment in str(error.value)


TOML_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.sampled_from(["", " ", "~nosuchuser/docs", "a\x00b", "/dev/null", "..", "https://x/{bank}", "md"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def documents() -> st.SearchStrategy[dict[str, Any]]:
    tables = [(dotted, [name for name, _ in keys(section)]) for dotted, section in sections()]

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for dotted, names in draw(st.lists(st.sampled_from(tables), max_size=3)):
            table = doc
            for part in dotted.split("."):
                table = table.setdefault(part, {}) if isinstance(table.get(part, {}), dict) else {}
            for name in draw(st.lists(st.sampled_from([*names, "unknwn"]), max_size=3)):
                table[name] = draw(TOML_VALUES)
        return doc

    return build()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=documents(), overlay=st.booleans())
def test_any_toml_document_loads_or_is_one_kbkit_error(
    tmp_path: Path, document: dict[str, Any], overlay: bool
) -> None:
    root = tmp_path / "p"
    (root / "docs").mkdir(parents=True, exist_ok=True)
    text = tomlkit.dumps(_without_none(document))
    (root / "kbkit.toml").write_text('[kb]\npath = "docs"\n' if overlay else text)
    (root / "kbkit.local.toml").write_text(text if overlay else "")
    try:
        load_settings(root, environ={})
    except KbkitError as exc:
        assert "\n" not in str(exc)
        assert str(exc).startswith(("kbkit.toml", "kbkit.local.toml")), str(exc)


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value if v is not None]
    return value
