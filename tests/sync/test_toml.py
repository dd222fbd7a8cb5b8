"""Codex's config.toml in every shape TOML allows: the kb entry changes, nothing else does."""

from __future__ import annotations

import difflib
import json
import subprocess
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbkit.config import load_settings
from kbkit.errors import SyncRefused
from kbkit.sync.merge import TOML_TABLES, ConfigText
from kbkit.sync.planner import sync
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process

PATH = ("mcp_servers", "kb")
ENTRY = {"command": "/venv/bin/kbkit", "args": ["serve", "--root", "/home/me/project"]}
MOVED = {"command": "/other/venv/bin/kbkit", "args": ["serve", "--root", "/srv/project"]}

SHAPES = {
    "empty": "",
    "comments only": "# my codex config\n# nothing else yet\n",
    "header tables": '# top\nmodel = "o4"  # the model\n\n[mcp_servers.docs]\ncommand = "docs-mcp" # why\nargs = ["--port", "1"]\n\n[profiles.fast]\nmodel = "o4-mini"\n',
    "header parent, inline children": '[mcp_servers]\ndocs = { command = "docs-mcp", args = [] }\n',
    "header parent, dotted children": '[mcp_servers]\ndocs.command = "docs-mcp"\ndocs.args = ["-v"]\n',
    "dotted keys at the top": 'model = "o3"\nmcp_servers.docs.command = "docs-mcp"\nmcp_servers.docs.args = ["a"]\n',
    "dotted keys before other tables": 'mcp_servers.docs.command = "x"\n\n[profiles.fast]\nmodel = "o4"\n',
    "inline parent": 'mcp_servers = { docs = { command = "docs-mcp", args = ["a"] } }  # servers\nmodel = "o3"\n',
    "inline parent, empty": 'mcp_servers = {}\nmodel = "o3"\n',
    "tables out of order": '[mcp_servers.a]\ncommand = "a"\n\n[profiles.x]\nmodel = "m"\n\n[mcp_servers.b]\ncommand = "b"\n',
    "nested sub-tables": '[mcp_servers.docs]\ncommand = "x"\n\n[mcp_servers.docs.env]\nTOKEN_VAR = "T"\n',
    "arrays of tables elsewhere": '[[profiles]]\nname = "a"\n\n[[profiles]]\nname = "b"\n\n[mcp_servers.docs]\ncommand = "x"\n',
    "quoted keys, unicode, literal strings": '[mcp_servers."my docs"]\ncommand = \'C:\\tools\\mcp.exe\'\nargs = ["ünï", """multi\nline"""]\n',
    "no newline at the end": '[mcp_servers.docs]\ncommand = "x"',
    "CRLF line endings": '# windows\r\n[mcp_servers.docs]\r\ncommand = "x"\r\n',
}

NOT_RESTORED = {"inline parent, empty", "no newline at the end"}
"""Deleting the entry again restores these up to an emptied parent kbkit removes, and a final newline."""


def with_entry(data: dict, entry: dict) -> dict:
    servers = dict(data.get("mcp_servers", {}))
    servers["kb"] = entry
    return {**data, "mcp_servers": servers}


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    """(lines removed from `before`, lines added in `after`)."""
    removed, added = [], []
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op != "equal":
            removed += before.splitlines()[a1:a2]
            added += after.splitlines()[b1:b2]
    return removed, added


def assert_only_the_entry_changed(before: str, after: str, entry: dict) -> None:
    """Same data but the entry; each changed line is blank, the entry's own, or an inline parent's
    one line, which keeps all it held and gains the entry."""
    old = tomllib.loads(before)
    assert tomllib.loads(after) == with_entry(old, entry)
    previous = old.get("mcp_servers", {}).get("kb", {})
    removed, added = changed_lines(before, after)
    for lines, owner in ((removed, previous), (added, entry)):
        for line in lines:
            if line.startswith("mcp_servers = {"):
                continue
            if line.strip() and not line.startswith(("[mcp_servers.kb]", "kb", "mcp_servers.kb")):
                key = line.split(" = ")[0]
                assert tomllib.loads(line)[key] == owner[key], line
    for old_line in (line for line in removed if line.startswith("mcp_servers = {")):
        new_line = next(line for line in added if line.startswith("mcp_servers = {"))
        head, _, comment = old_line.partition("  #")
        kept = head.split("kb = {")[0].rstrip(", ") if "kb = {" in head else head[: head.rindex("}")].rstrip()
        assert new_line.startswith(kept) and new_line.endswith(comment)
        assert "kb = {" in new_line


def set_entry(text: str, entry: dict) -> str:
    config = ConfigText("toml", text, ".codex/config.toml")
    config.set(PATH, entry)
    return config.text


def delete_entry(text: str) -> str:
    config = ConfigText("toml", text, ".codex/config.toml")
    config.delete(PATH)
    return config.text


@pytest.mark.parametrize("shape", SHAPES)
def test_adding_the_kb_entry_changes_only_the_entry_in_every_shape(shape: str) -> None:
    before = SHAPES[shape]
    after = set_entry(before, ENTRY)
    assert_only_the_entry_changed(before, after, ENTRY)
    if "\r\n" in before:
        assert "\n" not in after.replace("\r\n", "")  # the added table uses the file's line endings


@pytest.mark.parametrize("shape", SHAPES)
def test_a_second_run_is_a_no_op_and_a_moved_project_changes_only_the_entry(shape: str) -> None:
    first = set_entry(SHAPES[shape], ENTRY)
    assert set_entry(first, ENTRY) == first
    moved = set_entry(first, MOVED)
    assert_only_the_entry_changed(first, moved, MOVED)
    assert changed_lines(first, moved)[0] != []  # replaced where it stood, not added twice


@pytest.mark.parametrize("shape", SHAPES)
def test_removing_the_entry_gives_back_the_user_s_file(shape: str) -> None:
    before = SHAPES[shape]
    restored = delete_entry(set_entry(before, ENTRY))
    data = tomllib.loads(before)
    if shape == "inline parent, empty":
        data.pop("mcp_servers")
    assert tomllib.loads(restored) == data
    if shape not in NOT_RESTORED:
        assert restored == before


@pytest.mark.parametrize(
    "existing",
    [
        '[mcp_servers.docs]\ncommand = "x"\n\n[mcp_servers.kb]\ncommand = "old"\n\n[profiles.p]\nmodel = "m"  # keep\n',
        '[mcp_servers]\nkb = { command = "old" }\ndocs = { command = "x" }\n',
        'mcp_servers.kb.command = "old"\nmcp_servers.docs.command = "x"\n',
        'mcp_servers = { kb = { command = "old" }, docs = { command = "x" } }\n',
    ],
    ids=["header table", "inline in a header", "dotted keys", "inline parent"],
)
def test_an_existing_entry_of_any_shape_is_replaced_and_the_rest_kept(existing: str) -> None:
    after = set_entry(existing, ENTRY)
    assert tomllib.loads(after) == with_entry(tomllib.loads(existing), ENTRY)
    removed, _ = changed_lines(existing, after)
    assert all("old" in line or "kb" in line or line.startswith("mcp_servers = {") for line in removed)


@pytest.mark.parametrize(
    "text",
    ['[[mcp_servers]]\nname = "x"\n', 'mcp_servers = "none"\n', "mcp_servers = [1, 2]\n"],
    ids=["array of tables", "a string", "an array"],
)
def test_a_parent_that_is_not_a_table_is_refused_with_one_line(text: str) -> None:
    with pytest.raises(SyncRefused, match=r"^\.codex/config\.toml: \[mcp_servers\] is not a table; fix it"):
        set_entry(text, ENTRY)


def test_toml_that_only_tomlkit_accepts_is_refused_before_anything_is_changed() -> None:
    with pytest.raises(SyncRefused, match="does not parse"):
        ConfigText("toml", "a = 1\na = 2\n", ".codex/config.toml")  # a duplicate key


# -- generated files ---------------------------------------------------------------------------

names = st.text(alphabet="abcxyz-_", min_size=1, max_size=6).filter(lambda n: n != "kb")
values = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=8),
    st.integers(-5, 5),
    st.booleans(),
    st.lists(st.text(alphabet="ab \"'\\é", max_size=4), max_size=3),
)
comments = st.sampled_from(["", "# note", "  # trailing", "# ünicode ✓"])


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


@st.composite
def codex_files(draw: st.DrawFn) -> str:
    """A Codex config with the servers in one of TOML's shapes, around other settings and comments."""
    servers = draw(st.dictionaries(names, st.dictionaries(names, values, min_size=1, max_size=3), max_size=3))
    shape = draw(st.sampled_from(["absent", "headers", "header+inline", "header+dotted", "dotted", "inline"]))
    top = draw(st.dictionaries(names.map(lambda n: "t" + n), values, max_size=3))
    others = draw(
        st.dictionaries(names.map(lambda n: "p" + n), st.dictionaries(names, values, max_size=2), max_size=2)
    )
    lines = [f"{key} = {_value(v)}{draw(comments)}" for key, v in top.items()]

    def pairs(fields: dict, prefix: str = "") -> list[str]:
        return [f"{prefix}{_q(k)} = {_value(v)}" for k, v in fields.items()]

    def inline(fields: dict) -> str:
        return "{ " + ", ".join(f"{_q(k)} = {_value(v)}" for k, v in fields.items()) + " }"

    if shape == "dotted":
        for name, fields in servers.items():
            lines += pairs(fields, f"mcp_servers.{_q(name)}.")
    elif shape == "inline":
        lines.append(
            "mcp_servers = { " + ", ".join(f"{_q(n)} = {inline(f)}" for n, f in servers.items()) + " }"
        )
    server_tables: list[str] = []
    if shape == "headers":
        for name, fields in servers.items():
            server_tables += ["", f"[mcp_servers.{_q(name)}]{draw(comments)}", *pairs(fields)]
    elif shape in ("header+inline", "header+dotted"):
        server_tables += ["", "[mcp_servers]"]
        for name, fields in servers.items():
            if shape == "header+inline":
                server_tables.append(f"{_q(name)} = {inline(fields)}")
            else:
                server_tables += pairs(fields, f"{_q(name)}.")
    other_tables: list[str] = []
    for name, fields in others.items():
        other_tables += ["", f"[{name}]", *pairs(fields)]
    tables = other_tables + server_tables if draw(st.booleans()) else server_tables + other_tables
    return "\n".join(lines + tables) + draw(st.sampled_from(["\n", "\n\n", ""]))


def _q(key: str) -> str:
    return key if key.replace("-", "").replace("_", "").isalnum() else f'"{key}"'


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codex_files())
def test_generated_codex_files_keep_everything_but_the_kb_entry(text: str) -> None:
    data = tomllib.loads(text)
    after = set_entry(text, ENTRY)
    assert tomllib.loads(after) == with_entry(data, ENTRY)
    assert set_entry(after, ENTRY) == after
    moved = set_entry(after, MOVED)
    assert tomllib.loads(moved) == with_entry(data, MOVED)
    restored = tomllib.loads(delete_entry(moved))
    if not data.get("mcp_servers"):
        data.pop("mcp_servers", None)
    assert restored == data


# -- the command a user runs -------------------------------------------------------------------


@pytest.mark.git
def test_kbkit_sync_merges_into_a_codex_config_with_an_inline_servers_table(tmp_path: Path) -> None:
    root = make_project(tmp_path / "repo", config='[kb]\npath = "docs"\n[sync]\nclients = ["codex"]\n')
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    config = root / ".codex" / "config.toml"
    config.parent.mkdir()
    before = 'model = "o3"\nmcp_servers = { other = { command = "other-mcp", args = ["--x"] } }\n'
    config.write_text(before)
    done = kbkit_in_process("sync", "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    after = tomllib.loads(config.read_text())
    assert after["model"] == "o3"
    assert after["mcp_servers"]["other"] == {"command": "other-mcp", "args": ["--x"]}
    assert after["mcp_servers"]["kb"]["args"] == ["serve", "--root", str(root.resolve())]


VIBE_TOML = """# my vibe config
active_model = "devstral"

[[mcp_servers]]
name = "other"  # keep me
transport = "stdio"
command = "other-mcp"
"""


@pytest.mark.git
def test_mistral_vibe_s_array_of_tables_keeps_the_user_s_servers_and_comments(tmp_path: Path) -> None:
    root = make_project(tmp_path / "repo", config='[kb]\npath = "docs"\n[sync]\nclients = ["mistral-vibe"]\n')
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".vibe").mkdir()
    (root / ".vibe/config.toml").write_text(VIBE_TOML)
    sync(load_settings(root))
    text = (root / ".vibe/config.toml").read_text()
    assert text.startswith(VIBE_TOML) and "# keep me" in text
    servers = tomllib.loads(text)["mcp_servers"]
    assert [server["name"] for server in servers] == ["other", "kb"]
    assert servers[1]["transport"] == "stdio" and servers[1]["startup_timeout_sec"] == 60
    assert [(o.action) for o in sync(load_settings(root)).outcomes] == ["unchanged"]
    (root / "kbkit.toml").write_text('[kb]\npath = "docs"\n[sync]\nclients = []\n')
    sync(load_settings(root))
    assert (root / ".vibe/config.toml").read_text() == VIBE_TOML


def test_an_entry_of_an_array_of_tables_is_refused_where_the_key_is_not_one() -> None:
    config = ConfigText(TOML_TABLES, 'mcp_servers = "not tables"\n', ".vibe/config.toml")
    with pytest.raises(SyncRefused, match=r"\.vibe/config\.toml: mcp_servers is not an array of tables"):
        config.set(("mcp_servers", "kb"), {"name": "kb", "transport": "stdio", "command": ["k"]})
    assert config.text == 'mcp_servers = "not tables"\n'
