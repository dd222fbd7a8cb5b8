"""Set or delete one entry of a TOML file (Codex's `[mcp_servers.<name>]`, kbkit.toml's `[skills] refs`),
changing nothing else.

tomlkit keeps comments and layout, but the shape of the user's file decides what TOML allows:
the parent may be a `[header]` table, dotted keys (`mcp_servers.other.command = ...`), an inline
table (`mcp_servers = { other = {...} }`, closed to `[mcp_servers.kb]`), or absent. Each edit is
tried the tidy way first (tomlkit, next to its siblings; inside an inline parent, as an inline
table), then, where no inline table is on the path, as a `[parent.name]` table appended at the
end of the file, which TOML accepts after any of the other shapes. Every result is checked with
`tomllib`: it must hold exactly the old data with the one entry changed, or nothing is written.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from typing import Any, Literal, overload

import tomlkit
from tomlkit.container import OutOfOrderTableProxy
from tomlkit.items import AoT, InlineTable, Table

from kbkit.errors import TomlEditError


def set_entry(text: str, path: Sequence[str], value: dict[str, Any]) -> str:
    """`text` with the table at `path` set to `value` (replaced where it stands, or added)."""
    expected = tomllib.loads(text)
    parent = _parent_data(expected, path, create=True)
    exists = path[-1] in parent
    if exists and parent[path[-1]] == value:
        return text
    parent[path[-1]] = value

    def in_place() -> str:
        return _tomlkit_set(text, path, value)

    def appended() -> str:
        return _append_table(_tomlkit_delete(text, path), path, value)

    if _inline_on_path(text, path):
        attempts = [in_place]
    else:  # an existing entry is replaced where it stands; a new one goes at the end
        attempts = [in_place, appended] if exists else [appended, in_place]
    return _first_faithful(attempts, expected, path)


def delete_entry(text: str, path: Sequence[str]) -> str:
    """`text` without the table at `path`; an emptied parent table goes too."""
    expected = tomllib.loads(text)
    parent = _parent_data(expected, path, create=False)
    if parent is None or path[-1] not in parent:
        return text
    del parent[path[-1]]
    if not parent and len(path) == 2:
        del expected[path[0]]
    return _first_faithful([lambda: _tomlkit_delete(text, path, drop_empty=True)], expected, path)


def _first_faithful(attempts: list[Callable[[], str]], expected: dict[str, Any], path: Sequence[str]) -> str:
    for attempt in attempts:
        try:
            result = attempt()
            if tomllib.loads(result) == expected:
                return result
        except Exception:  # tomlkit fails in many ways on odd shapes; the next attempt, or a refusal
            continue
    raise TomlEditError(
        f"[{'.'.join(path)}] cannot be written without changing other settings in this file's layout"
    )


@overload
def _parent_data(data: dict[str, Any], path: Sequence[str], *, create: Literal[True]) -> dict[str, Any]: ...
@overload
def _parent_data(data: dict[str, Any], path: Sequence[str], *, create: bool) -> dict[str, Any] | None: ...
def _parent_data(data: dict[str, Any], path: Sequence[str], *, create: bool) -> dict[str, Any] | None:
    """The table holding `path`'s last key (made on the way when `create`); None when absent."""
    node: Any = data
    for key in path[:-1]:
        if key not in node:
            if not create:
                return None
            node[key] = {}
        node = node[key]
        if not isinstance(node, dict):
            raise TomlEditError(f"[{key}] is not a table")
    table: dict[str, Any] = node  # a dict, checked at each step above
    return table


def _inline_on_path(text: str, path: Sequence[str]) -> bool:
    node: Any = tomlkit.parse(text)
    for key in path[:-1]:
        if not isinstance(node, Table | OutOfOrderTableProxy | tomlkit.TOMLDocument) or key not in node:
            return False
        node = node[key]
        if isinstance(node, InlineTable):
            return True
    return False


def _tomlkit_set(text: str, path: Sequence[str], value: dict[str, Any]) -> str:
    doc = tomlkit.parse(text)
    parent: Any = doc
    for key in path[:-1]:
        if key not in parent:
            parent[key] = tomlkit.inline_table() if isinstance(parent, InlineTable) else tomlkit.table(True)
        parent = parent[key]
    inline = isinstance(parent, InlineTable) or isinstance(parent.get(path[-1]), InlineTable)
    entry = tomlkit.inline_table() if inline else tomlkit.table()  # an inline entry stays inline
    entry.update(value)
    parent[path[-1]] = entry
    result = tomlkit.dumps(doc)
    if _newline(text) == "\r\n" and "\n" not in text.replace("\r\n", ""):
        result = result.replace("\r\n", "\n").replace("\n", "\r\n")  # tomlkit writes new lines as LF
    return result


def _tomlkit_delete(text: str, path: Sequence[str], *, drop_empty: bool = False) -> str:
    doc = tomlkit.parse(text)
    parent: Any = doc
    for key in path[:-1]:
        if key not in parent:
            return text
        parent = parent[key]
    if path[-1] not in parent:
        return text
    del parent[path[-1]]
    if drop_empty and not parent and parent is not doc and len(path) == 2:
        del doc[path[0]]
    result = tomlkit.dumps(doc)
    eol = _newline(text)
    if result.endswith(eol * 2) and not text.endswith(eol * 2):
        result = result.rstrip("\r\n") + eol  # the blank line that separated the removed table
    return result


def _append_table(text: str, path: Sequence[str], value: dict[str, Any]) -> str:
    """`[a.b.name]` at the end of the file: valid after a header, dotted keys, or nothing at all."""
    nested: dict[str, Any] = dict(value)
    for key in reversed(path):
        nested = {key: nested}
    eol = _newline(text)
    rendered = tomlkit.dumps(nested).replace("\n", eol)
    if not text.strip():
        return rendered
    return text + ("" if text.endswith("\n") else eol) + eol + rendered


def _newline(text: str) -> str:
    """The file's own line ending, so an added table matches the lines around it."""
    return "\r\n" if "\r\n" in text else "\n"


def get_named(text: str, path: Sequence[str]) -> dict[str, Any] | None:
    """The table of the array of tables at `path[:-1]` whose `name` is `path[-1]` (Mistral Vibe's
    `[[mcp_servers]]`), or None."""
    items: Any = tomllib.loads(text)
    for key in path[:-1]:
        items = items.get(key) if isinstance(items, dict) else None
    if not isinstance(items, list):
        return None
    return next((item for item in items if isinstance(item, dict) and item.get("name") == path[-1]), None)


def set_named(text: str, path: Sequence[str], value: dict[str, Any]) -> str:
    """`text` with the table named `path[-1]` in the array of tables `path[0]` set to `value`
    (replaced where it stands, or appended); `value` carries the `name` itself."""
    if len(path) != 2 or value.get("name") != path[-1]:
        raise TomlEditError(f"{'.'.join(path)}: an entry of an array of tables names itself")
    expected = tomllib.loads(text)
    items = expected.setdefault(path[0], [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise TomlEditError(f"{path[0]} is not an array of tables")
    index = next((i for i, item in enumerate(items) if item.get("name") == path[-1]), None)
    if index is not None and items[index] == value:
        return text
    if index is None:
        items.append(value)
    else:
        items[index] = value
    document = tomlkit.parse(text)
    tables = document.get(path[0])
    if tables is None:
        tables = tomlkit.aot()
        document.append(path[0], tables)
    if not isinstance(tables, AoT):
        raise TomlEditError(f"{path[0]} is not written as [[{path[0]}]] tables")
    table = tomlkit.table()
    for key, item in value.items():
        table.add(key, item)
    if index is None:
        if len(tables):
            table.trivia.indent = "\n"  # a blank line between the user's last table and kbkit's
        tables.append(table)
    else:
        tables[index] = table
    result = tomlkit.dumps(document)
    if tomllib.loads(result) != expected:
        raise TomlEditError(f"{path[0]}: the edit would change more than the {path[-1]!r} entry")
    return result


def delete_named(text: str, path: Sequence[str]) -> str:
    """`text` without the table named `path[-1]` in the array of tables `path[0]` (an emptied array
    goes too)."""
    expected = tomllib.loads(text)
    items = expected.get(path[0])
    if not isinstance(items, list):
        return text
    index = next(
        (i for i, item in enumerate(items) if isinstance(item, dict) and item.get("name") == path[-1]), None
    )
    if index is None:
        return text
    del items[index]
    if not items:
        del expected[path[0]]
    document = tomlkit.parse(text)
    tables = document[path[0]]
    if not isinstance(tables, AoT):
        raise TomlEditError(f"{path[0]} is not written as [[{path[0]}]] tables")
    last = index == len(tables) - 1
    if len(tables) == 1:
        del document[path[0]]
    else:
        del tables[index]
    result = tomlkit.dumps(document)
    if last and result.endswith("\n\n"):  # the blank line set_named put before the table it appended
        result = result.rstrip("\n") + "\n"
    if tomllib.loads(result) != expected:
        raise TomlEditError(f"{path[0]}: the edit would change more than the {path[-1]!r} entry")
    return result
