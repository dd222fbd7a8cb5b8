"""Comment-preserving edits of agents' JSON config files: kbkit changes its own entry and nothing else."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbkit.errors import JsoncError
from kbkit.sync.jsonc import delete_member, get_member, loads, set_member

KB = {"command": "kbkit", "args": ["serve", "--root", "."]}

ZED_SETTINGS = """\
// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{
  "theme": "One Dark", // the only theme I like
  "ui_font_size": 16,
  /* Buffer font:
     keep it large */
  "buffer_font_size": 15,
  "languages": {
    "Python": {
      "tab_size": 4,
    },
  },
  "context_servers": {
    // added by hand
    "github": {
      "command": {
        "path": "gh-mcp",
        "args": ["--stdio"],
      },
    },
  },
}
"""

CLAUDE_MCP = """\
{
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"]
        },
        "postgres": {
            "command": "pg-mcp",
            "env": {"PGHOST": "localhost"}
        }
    }
}
"""

VSCODE_MCP = """\
{
  "inputs": [
    {
      "type": "promptString",
      "id": "api-key",
      "description": "API key",
      "password": true
    }
  ],
  "servers": {
    "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]}
  }
}
"""

THREE = '{\n  "a": 1,\n  "b": 2,\n  "c": 3\n}\n'


def comments_of(text: str) -> list[str]:
    return re.findall(r"//[^\n]*|/\*.*?\*/", text, re.DOTALL)


# ---------------------------------------------------------------- reading


def test_comments_and_trailing_commas_are_read_as_vscode_and_zed_read_them() -> None:
    settings_ = loads(ZED_SETTINGS)
    assert settings_["theme"] == "One Dark"
    assert settings_["languages"] == {"Python": {"tab_size": 4}}
    assert settings_["context_servers"]["github"]["command"]["args"] == ["--stdio"]


def test_comment_markers_inside_strings_are_text_not_comments() -> None:
    text = r'{"url": "http://host//path /* no */", "say": "\"hi\" // still text", "cafe": "café ☕"}'
    assert loads(text) == {
        "url": "http://host//path /* no */",
        "say": '"hi" // still text',
        "cafe": "café ☕",
    }


def test_a_duplicate_key_keeps_the_last_value_as_json_does() -> None:
    assert loads('{"a": 1, "a": 2}') == {"a": 2}


def test_get_member_returns_the_value_or_none_when_absent() -> None:
    assert get_member(ZED_SETTINGS, ["context_servers", "github", "command", "path"]) == "gh-mcp"
    assert get_member(ZED_SETTINGS, ["context_servers", "kb"]) is None
    assert get_member(ZED_SETTINGS, ["theme", "kb"]) is None
    assert get_member(CLAUDE_MCP, ["nothing"]) is None


# ---------------------------------------------------------------- errors


def error_of(text: str) -> JsoncError:
    with pytest.raises(JsoncError) as caught:
        loads(text)
    return caught.value


def test_a_missing_comma_is_reported_at_its_line_and_column() -> None:
    error = error_of('{\n  "a": 1\n  "b": 2\n}\n')
    assert (error.line, error.column) == (3, 3)
    assert str(error) == "line 3, column 3: expected ',' or '}'"
    assert isinstance(error, ValueError)


def test_a_missing_comma_in_an_array_says_which_bracket_closes_it() -> None:
    assert str(error_of('{"args": [\n  "a"\n  "b"]}')) == "line 3, column 3: expected ',' or ']'"


def test_error_positions_count_in_the_original_text_with_its_comments() -> None:
    error = error_of('/* a\n   long */ { // note\n  "a": /* x */ ,\n}')
    assert (error.line, error.column) == (3, 16)
    assert error.message == "expected a value"


def test_an_unterminated_string_is_reported_where_it_starts() -> None:
    error = error_of('{\n  "a": "oops,\n  "b": 2\n}')
    assert (error.line, error.column, error.message) == (2, 8, "unterminated string")


def test_an_unterminated_block_comment_is_reported_where_it_starts() -> None:
    error = error_of('{\n  "a": 1 /* forgot to close\n}')
    assert (error.line, error.column, error.message) == (2, 10, "unterminated block comment")


def test_an_empty_or_comment_only_text_is_an_error_for_loads() -> None:
    assert "empty document" in str(error_of(""))
    assert "empty document" in str(error_of("  // nothing yet\n"))


def test_a_lone_comma_is_not_a_trailing_comma() -> None:
    assert error_of("[,]").message == "expected a value"
    assert error_of('{"a": 1,,}').message == "expected a key in double quotes"


def test_a_root_that_is_an_array_cannot_hold_an_entry() -> None:
    with pytest.raises(JsoncError) as caught:
        set_member("// servers\n  [1, 2]\n", ["mcpServers", "kb"], KB)
    assert (caught.value.line, caught.value.column) == (2, 3)
    assert "root must be an object, found an array" in str(caught.value)
    with pytest.raises(JsoncError):
        delete_member("[]", ["kb"])


def test_a_parent_that_is_not_an_object_is_named_in_the_error() -> None:
    with pytest.raises(JsoncError) as caught:
        set_member('{\n  "mcpServers": ["kb"]\n}', ["mcpServers", "kb"], KB)
    assert str(caught.value) == 'line 2, column 17: "mcpServers" must be an object, found an array'


def test_a_broken_file_is_refused_before_anything_is_edited() -> None:
    with pytest.raises(JsoncError, match="line 2, column 10"):
        set_member('{\n  "a": 1 "b": 2\n}', ["kb"], KB)


def test_an_empty_path_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        set_member("{}", [], KB)
    with pytest.raises(ValueError, match="non-empty"):
        set_member("{}", "kb", KB)


# ---------------------------------------------------------------- set_member


def test_the_zed_settings_keep_every_comment_and_setting_when_kb_is_added() -> None:
    updated = set_member(
        ZED_SETTINGS, ["context_servers", "kb"], {"command": {"path": "kbkit", "args": ["serve"]}}
    )
    assert updated == ZED_SETTINGS.replace(
        """\
      },
    },
  },
}
""",
        """\
      },
    },
    "kb": {
      "command": {
        "path": "kbkit",
        "args": [
          "serve"
        ]
      }
    },
  },
}
""",
    )
    assert comments_of(updated) == comments_of(ZED_SETTINGS)


def test_two_hand_added_servers_and_four_space_indent_are_kept() -> None:
    updated = set_member(CLAUDE_MCP, ["mcpServers", "kb"], {"command": "kbkit", "args": ["serve"]})
    assert updated == CLAUDE_MCP.replace(
        '            "env": {"PGHOST": "localhost"}\n        }\n',
        '            "env": {"PGHOST": "localhost"}\n        },\n'
        '        "kb": {\n            "command": "kbkit",\n            "args": [\n                "serve"\n'
        "            ]\n        }\n",
    )


def test_the_vscode_inputs_are_untouched_when_a_server_is_added() -> None:
    updated = set_member(VSCODE_MCP, ["servers", "kb"], {"type": "stdio", "command": "kbkit"})
    assert updated.startswith(VSCODE_MCP[: VSCODE_MCP.index('  "servers"')])
    assert loads(updated)["servers"] == {
        "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
        "kb": {"type": "stdio", "command": "kbkit"},
    }
    assert '    "kb": {\n      "type": "stdio",\n      "command": "kbkit"\n    }\n  }\n}\n' in updated


def test_tab_indented_files_get_tab_indented_entries() -> None:
    text = '{\n\t"mcp": {\n\t\t"other": {\n\t\t\t"type": "local"\n\t\t}\n\t}\n}'
    updated = set_member(text, ["mcp", "kb"], {"type": "local", "command": ["kbkit", "serve"]})
    assert updated == (
        '{\n\t"mcp": {\n\t\t"other": {\n\t\t\t"type": "local"\n\t\t},\n'
        '\t\t"kb": {\n\t\t\t"type": "local",\n\t\t\t"command": [\n\t\t\t\t"kbkit",\n\t\t\t\t"serve"\n\t\t\t]\n\t\t}\n'
        "\t}\n}"
    )


def test_crlf_line_endings_are_kept_in_the_new_lines() -> None:
    text = CLAUDE_MCP.replace("\n", "\r\n")
    updated = set_member(text, ["mcpServers", "kb"], KB)
    assert "\n" not in updated.replace("\r\n", "")
    assert updated.endswith("}\r\n")
    assert delete_member(updated, ["mcpServers", "kb"]) == text


def test_the_trailing_newline_or_its_absence_is_kept() -> None:
    for text in ('{\n  "a": 1\n}', '{\n  "a": 1\n}\n', '{\n  "a": 1\n}\n\n'):
        updated = set_member(text, ["mcpServers", "kb"], KB)
        assert updated[updated.rindex("}") :] == text[text.rindex("}") :]


def test_a_byte_order_mark_is_kept_and_does_not_count_as_indentation() -> None:
    text = '\ufeff{\n  "a": 1\n}\n'
    updated = set_member(text, ["kb"], {"c": 1})
    assert updated == '\ufeff{\n  "a": 1,\n  "kb": {\n    "c": 1\n  }\n}\n'
    assert delete_member(updated, ["kb"]) == text


def test_strings_with_comment_markers_quotes_and_unicode_survive_an_update() -> None:
    text = (
        "{\n"
        '  "url": "http://example.com//x/*y*/", // real comment\n'
        '  "say": "\\"quoted\\" // not a comment",\n'
        '  "name": "Zoë ☕ \\u00e9"\n'
        "}\n"
    )
    updated = set_member(text, ["mcpServers", "kb"], {"description": "Wissensbasis für Zoë"})
    assert updated.startswith(text[: text.rindex('"\n}')])
    assert '"description": "Wissensbasis für Zoë"' in updated
    assert loads(updated)["say"] == '"quoted" // not a comment'
    assert updated.count("// real comment") == 1


def test_a_file_without_the_root_key_gets_it_at_the_end() -> None:
    text = '{\n  "theme": "dark"\n}\n'
    assert set_member(text, ["mcpServers", "kb"], {"command": "kbkit"}) == (
        '{\n  "theme": "dark",\n  "mcpServers": {\n    "kb": {\n      "command": "kbkit"\n    }\n  }\n}\n'
    )


def test_an_empty_file_becomes_a_well_formatted_document() -> None:
    expected = '{\n  "mcpServers": {\n    "kb": {\n      "command": "kbkit"\n    }\n  }\n}\n'
    for text in ("", "\n", "   \n\n"):
        assert set_member(text, ["mcpServers", "kb"], {"command": "kbkit"}) == expected


def test_a_comment_only_file_keeps_its_comment_above_the_new_document() -> None:
    updated = set_member("// written by hand\n", ["kb"], 1)
    assert updated == '// written by hand\n{\n  "kb": 1\n}\n'


def test_an_empty_object_opens_up_to_hold_the_entry() -> None:
    assert set_member("{}", ["kb"], {"a": 1}) == '{\n  "kb": {\n    "a": 1\n  }\n}'
    text = '{\n  "servers": {},\n  "inputs": []\n}\n'
    assert set_member(text, ["servers", "kb"], {"a": 1}) == (
        '{\n  "servers": {\n    "kb": {\n      "a": 1\n    }\n  },\n  "inputs": []\n}\n'
    )


def test_an_object_written_on_one_line_stays_on_one_line() -> None:
    assert set_member('{"mcpServers": {"x": {}}}', ["mcpServers", "kb"], KB) == (
        '{"mcpServers": {"x": {}, "kb": {"command": "kbkit", "args": ["serve", "--root", "."]}}}'
    )


def test_missing_parent_objects_are_created_along_the_path() -> None:
    text = '{\n  "x": 1\n}'
    updated = set_member(text, ["a", "b", "c"], True)
    assert updated == '{\n  "x": 1,\n  "a": {\n    "b": {\n      "c": true\n    }\n  }\n}'
    assert set_member(updated, ["a", "b", "d"], None) == (
        '{\n  "x": 1,\n  "a": {\n    "b": {\n      "c": true,\n      "d": null\n    }\n  }\n}'
    )


def test_an_existing_entry_spanning_many_lines_is_replaced_in_place() -> None:
    text = """\
{
  "mcpServers": {
    // kbkit's entry
    "kb": {
      "command": "old",
      "args": [
        "a",
        "b"
      ],
      "env": {"X": "1"}
    }, // keep me
    "other": {"command": "o"}
  }
}
"""
    updated = set_member(text, ["mcpServers", "kb"], {"command": "kbkit", "args": []})
    assert (
        updated
        == """\
{
  "mcpServers": {
    // kbkit's entry
    "kb": {
      "command": "kbkit",
      "args": []
    }, // keep me
    "other": {"command": "o"}
  }
}
"""
    )


def test_a_comment_next_to_the_entry_survives_an_update() -> None:
    text = '{\n  /* before */ "x": 1,\n  // above\n  "kb": /* lead */ 1, // after\n  "y": 2\n}'
    updated = set_member(text, ["kb"], {"v": 2})
    assert comments_of(updated) == comments_of(text)
    assert loads(updated) == {"x": 1, "kb": {"v": 2}, "y": 2}


def test_an_entry_that_already_has_the_value_is_left_as_the_user_wrote_it() -> None:
    text = '{\n  "kb": {"command": "kbkit", /* pinned */ "args": ["serve", "--root", "."]}\n}\n'
    assert set_member(text, ["kb"], KB) == text


def test_setting_the_same_value_twice_changes_nothing_the_second_time() -> None:
    for text in (ZED_SETTINGS, CLAUDE_MCP, VSCODE_MCP, "", "{}", '{"a": 1}'):
        once = set_member(text, ["mcpServers", "kb"], KB)
        assert set_member(once, ["mcpServers", "kb"], KB) == once


def test_a_duplicated_key_is_set_where_it_takes_effect() -> None:
    updated = set_member('{"kb": 1, "kb": 2}', ["kb"], 3)
    assert updated == '{"kb": 1, "kb": 3}'
    assert loads(updated) == {"kb": 3}


# ---------------------------------------------------------------- delete_member


def test_deleting_the_first_member_takes_its_line_and_comma() -> None:
    assert delete_member(THREE, ["a"]) == '{\n  "b": 2,\n  "c": 3\n}\n'


def test_deleting_a_middle_member_takes_its_line_and_comma() -> None:
    assert delete_member(THREE, ["b"]) == '{\n  "a": 1,\n  "c": 3\n}\n'


def test_deleting_the_last_member_takes_the_comma_before_it() -> None:
    assert delete_member(THREE, ["c"]) == '{\n  "a": 1,\n  "b": 2\n}\n'


def test_deleting_members_of_a_one_line_object_leaves_clean_json() -> None:
    text = '{"a": 1, "b": 2, "c": 3}'
    assert delete_member(text, ["a"]) == '{"b": 2, "c": 3}'
    assert delete_member(text, ["b"]) == '{"a": 1, "c": 3}'
    assert delete_member(text, ["c"]) == '{"a": 1, "b": 2}'


def test_deleting_the_only_member_leaves_an_empty_object() -> None:
    assert delete_member(
        '{\n  "mcpServers": {\n    "kb": {\n      "a": 1\n    }\n  }\n}', ["mcpServers", "kb"]
    ) == ('{\n  "mcpServers": {}\n}')
    assert delete_member('{"kb": 1}', ["kb"]) == "{}"


def test_comments_on_other_lines_survive_a_delete() -> None:
    text = '{\n  // servers\n  "a": 1, // about a\n  /* kb below */\n  "kb": 2,\n  // tail\n}'
    assert (
        delete_member(text, ["kb"]) == '{\n  // servers\n  "a": 1, // about a\n  /* kb below */\n  // tail\n}'
    )


def test_deleting_the_entry_in_the_zed_settings_keeps_the_trailing_comma_style() -> None:
    updated = delete_member(ZED_SETTINGS, ["context_servers", "github"])
    assert updated.endswith('  "context_servers": {\n    // added by hand\n  },\n}\n')


def test_deleting_a_missing_member_returns_the_text_unchanged() -> None:
    for path in (["mcpServers", "kb"], ["nothing"], ["nothing", "kb"], ["mcpServers", "github", "x"]):
        assert delete_member(CLAUDE_MCP, path) == CLAUDE_MCP
    assert delete_member("", ["kb"]) == ""


def test_deleting_a_duplicated_key_removes_every_occurrence() -> None:
    assert delete_member('{"kb": 1, "a": 0, "kb": 2}', ["kb"]) == '{"a": 0}'


def test_adding_then_removing_the_entry_restores_the_original_bytes() -> None:
    cases = [
        (ZED_SETTINGS, ["context_servers", "kb"]),
        (CLAUDE_MCP, ["mcpServers", "kb"]),
        (VSCODE_MCP, ["servers", "kb"]),
        ('{\n  "servers": {},\n  "inputs": []\n}\n', ["servers", "kb"]),
        ('{"mcpServers": {"x": {}}}', ["mcpServers", "kb"]),
        ("{}", ["kb"]),
    ]
    for text, path in cases:
        assert delete_member(set_member(text, path, KB), path) == text


# ---------------------------------------------------------------- properties

KEYS = st.text(alphabet=st.sampled_from('ab/*"\\ é\n\t{}'), max_size=4) | st.text(max_size=4)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.sampled_from(["//", "/*", "*/", '"', "\\", "http://x//y"])
)
VALUES = st.recursive(
    SCALARS, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(KEYS, kids, max_size=3), max_leaves=10
)
DOCUMENTS = st.dictionaries(KEYS, VALUES, max_size=4)


def render(doc: dict[str, Any], data: st.DataObject) -> tuple[str, list[str]]:
    """`doc` as a hand-edited file might look: some indent, maybe trailing commas, comments, CRLF."""
    indent = data.draw(st.sampled_from([None, 0, 1, 2, 4, "\t"]), label="indent")
    lines = json.dumps(doc, indent=indent, ensure_ascii=False).split("\n")
    if data.draw(st.booleans(), label="trailing commas"):
        for i in range(len(lines) - 1):
            if lines[i + 1].lstrip().startswith(("}", "]")) and not lines[i].endswith(("{", "[", ",")):
                lines[i] += ","
    markers = []
    for n in range(data.draw(st.integers(0, 4), label="comments")):
        marker = f"c{n}"
        markers.append(marker)
        style = data.draw(st.sampled_from(["own line", "line end", "block line end"]))
        if style == "own line":
            at = data.draw(st.integers(0, len(lines)))
            lines.insert(at, f'  // {marker} "quoted" /* not a block')
        else:
            at = data.draw(st.integers(0, len(lines) - 1))
            lines[at] += f" // {marker} ," if style == "line end" else f" /* {marker} // */"
    text = "\n".join(lines) + ("\n" if data.draw(st.booleans(), label="final newline") else "")
    if data.draw(st.booleans(), label="crlf"):
        text = text.replace("\n", "\r\n")
    return text, markers


def object_paths(node: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for key, value in node.items():
        if isinstance(value, dict):
            paths += object_paths(value, (*prefix, key))
    return paths


def at(doc: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for key in path:
        doc = doc[key]
    return doc


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=False)  # order and type sensitive, unlike ==


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=DOCUMENTS, value=VALUES, data=st.data())
def test_any_hand_formatted_file_gets_exactly_one_member_changed(
    doc: dict[str, Any], value: Any, data: st.DataObject
) -> None:
    text, markers = render(doc, data)
    assert canonical(loads(text)) == canonical(doc)
    parent = data.draw(st.sampled_from(object_paths(doc)), label="parent")
    existing = list(at(doc, parent))
    key = data.draw(st.sampled_from(existing) if existing and data.draw(st.booleans()) else KEYS, label="key")
    extra = data.draw(st.lists(KEYS, max_size=2), label="missing parents") if key not in existing else []
    path = [*parent, key, *extra]

    updated = set_member(text, path, value)

    expected = copy.deepcopy(doc)
    node = at(expected, parent)
    for name in [key, *extra][:-1]:
        node = node.setdefault(name, {})
    node[path[-1]] = value
    assert canonical(loads(updated)) == canonical(expected)  # (1) that member set, nothing else
    assert set_member(updated, path, value) == updated  # (2) idempotent
    assert updated.endswith("\n") == text.endswith("\n")  # (5) trailing newline
    if "\r\n" in text:
        assert "\n" not in updated.replace("\r\n", "")  # (5) CRLF
    if key not in existing:
        assert all(marker in updated for marker in markers)  # (4) comments survive
        if not extra:
            assert delete_member(updated, path) == text  # (3) set then delete restores the bytes
        else:
            assert canonical(loads(delete_member(updated, path))) != canonical(expected)
