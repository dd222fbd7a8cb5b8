"""Comment-preserving edits of JSON-with-comments config files (VS Code, Zed, Claude Code, Cursor...).

Agents' config files are edited by hand, so kbkit changes only its own member and splices the
new text in at that member's span (as Microsoft's node-jsonc-parser `modify()` does): comments,
key order, indentation, other members and the trailing newline stay byte for byte.

Parsing blanks comments and trailing commas out with spaces (newlines kept), so `json.loads`
does the real work and every position it reports is a position in the original text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbkit.errors import JsoncError

__all__ = ["delete_member", "get_member", "loads", "set_member"]

_WS = " \t\r\n"
# Strings (complete, or a lone quote when unterminated), line comments, block comments (or an
# unterminated opener). Raw newlines cannot occur inside a JSON string, so a string stops at one.
_TOKENS = re.compile(r'"(?:[^"\\\r\n]|\\[^\r\n])*"|//[^\r\n]*|/\*.*?\*/|/\*|"', re.DOTALL)
_STRING_OR_TRAILING_COMMA = re.compile(r'"(?:[^"\\]|\\.)*"|,(?=[ \t\r\n]*[}\]])', re.DOTALL)
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_NOT_NEWLINE = re.compile(r"[^\r\n]")


@dataclass(frozen=True)
class _Member:
    key: str
    key_start: int
    value_start: int
    value_end: int
    comma: int | None  # index of the ',' after the value, if any


@dataclass(frozen=True)
class _Object:
    start: int  # index of '{'
    end: int  # index of '}'
    members: tuple[_Member, ...]

    def find(self, key: str) -> _Member | None:
        """The last member named `key`: with duplicate keys the last one wins, as in `json`."""
        return next((m for m in reversed(self.members) if m.key == key), None)


# ---------------------------------------------------------------- reading


def loads(text: str) -> Any:
    """Parse JSON with `//` and `/* */` comments and trailing commas, as VS Code and Zed accept it."""
    stripped, blanked = _blank(text)
    return _decode(text, stripped, blanked)


def get_member(text: str, path: Sequence[str]) -> Any | None:
    """The value at `path` (object keys from the root), or None when any key on the way is absent."""
    node = loads(text)
    for key in _check_path(path):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _blank(text: str) -> tuple[str, str]:
    """`text` with comments blanked, and with comments and trailing commas blanked (same positions)."""
    parts: list[str] = []
    last = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token == '"':
            raise _error_at(text, match.start(), "unterminated string")
        if token == "/*":
            raise _error_at(text, match.start(), "unterminated block comment")
        if token[0] == '"':
            continue
        parts += [text[last : match.start()], _NOT_NEWLINE.sub(" ", token)]
        last = match.end()
    parts.append(text[last:])
    stripped = "".join(parts)
    if stripped.startswith("\ufeff"):  # a byte order mark is not JSON whitespace
        stripped = " " + stripped[1:]
    chars = list(stripped)
    for match in _STRING_OR_TRAILING_COMMA.finditer(stripped):
        if match.group() != ",":
            continue
        before = match.start() - 1
        while before >= 0 and stripped[before] in _WS:
            before -= 1
        if before >= 0 and stripped[before] not in ",[{:":  # `[,]` and `{"a":,}` stay errors
            chars[match.start()] = " "
    return stripped, "".join(chars)


def _decode(text: str, stripped: str, blanked: str) -> Any:
    if not blanked.strip(_WS):
        raise _error_at(text, len(text), "empty document, expected a JSON value")
    try:
        return json.loads(blanked)
    except json.JSONDecodeError as exc:
        raise _error_at(text, exc.pos, _explain(exc, stripped)) from None


def _explain(exc: json.JSONDecodeError, stripped: str) -> str:
    """`json`'s message in the words of someone fixing a config file by hand."""
    if exc.msg == "Expecting ',' delimiter":
        return f"expected ',' or '{_closer(stripped, exc.pos)}'"
    if exc.msg == "Expecting value" and not stripped[exc.pos :].strip(_WS):
        return "unexpected end of text, expected a value"
    known = {
        "Expecting ':' delimiter": "expected ':' after the key",
        "Expecting property name enclosed in double quotes": "expected a key in double quotes",
        "Expecting value": "expected a value",
        "Extra data": "unexpected text after the end of the document",
        "Invalid control character at": "invalid control character in a string",
    }
    return known.get(exc.msg, exc.msg[:1].lower() + exc.msg[1:])


def _closer(stripped: str, pos: int) -> str:
    """The bracket that would close the innermost array or object open at `pos`."""
    stack: list[str] = []
    for match in _STRING_OR_BRACKET.finditer(stripped, 0, pos):
        token = match.group()
        if token in "{[":
            stack.append("}" if token == "{" else "]")
        elif token in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else "}"


def _error_at(text: str, index: int, message: str) -> JsoncError:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return JsoncError(message, line, column)


# ---------------------------------------------------------------- structure (on comment-free text)


def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in _WS:
        i += 1
    return i


def _string_end(s: str, i: int) -> int:
    j = i + 1
    while s[j] != '"':
        j += 2 if s[j] == "\\" else 1
    return j + 1


def _value_end(s: str, i: int) -> int:
    if s[i] == '"':
        return _string_end(s, i)
    if s[i] in "{[":
        depth = 0
        while True:
            if s[i] == '"':
                i = _string_end(s, i)
                continue
            if s[i] in "{[":
                depth += 1
            elif s[i] in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    while i < len(s) and s[i] not in ",}]" + _WS:
        i += 1
    return i


def _object_at(s: str, start: int) -> _Object:
    """The members of the object whose '{' is at `start`; `s` is valid JSONC with comments blanked."""
    members: list[_Member] = []
    i = _skip_ws(s, start + 1)
    while s[i] != "}":
        key_start, key_end = i, _string_end(s, i)
        value_start = _skip_ws(s, _skip_ws(s, key_end) + 1)  # past the ':'
        value_end = _value_end(s, value_start)
        i = _skip_ws(s, value_end)
        comma = None
        if s[i] == ",":
            comma, i = i, _skip_ws(s, i + 1)
        key = json.loads(s[key_start:key_end])
        members.append(_Member(key, key_start, value_start, value_end, comma))
    return _Object(start, i, tuple(members))


def _root_object(text: str, stripped: str) -> _Object:
    start = _skip_ws(stripped, 0)
    if stripped[start] != "{":
        raise _error_at(text, start, f"the root must be an object, found {_kind(stripped[start])}")
    return _object_at(stripped, start)


def _walk(text: str, stripped: str, keys: Sequence[str]) -> tuple[_Object, int]:
    """The deepest existing object along `keys`, and how many keys it took to reach it."""
    obj = _root_object(text, stripped)
    for depth, key in enumerate(keys[:-1]):
        member = obj.find(key)
        if member is None:
            return obj, depth
        if stripped[member.value_start] != "{":
            found = _kind(stripped[member.value_start])
            name = ".".join(keys[: depth + 1])
            raise _error_at(text, member.value_start, f'"{name}" must be an object, found {found}')
        obj = _object_at(stripped, member.value_start)
    return obj, len(keys) - 1


def _kind(first: str) -> str:
    kinds = {"{": "an object", "[": "an array", '"': "a string", "t": "a boolean", "f": "a boolean"}
    return kinds.get(first, "null" if first == "n" else "a number")


# ---------------------------------------------------------------- editing


def set_member(text: str, path: Sequence[str], value: Any) -> str:
    """`text` with the member at `path` set to `value`; every byte outside that member is kept.

    An existing member gets only its value replaced (and not even that when the value is already
    equal, so a second call changes nothing); a missing one is appended to its parent object,
    creating missing parent objects. Comments inside a replaced value are lost with it.
    """
    keys = _check_path(path)
    stripped, blanked = _blank(text)
    newline = _newline(text)
    if not blanked.strip(_WS):  # empty, or only comments: start the document
        document = _render(_nest(keys, value), "  ", "", newline)
        kept = text.rstrip()  # comments stay above the new document
        separator = newline if kept.lstrip("\ufeff") else ""
        return f"{kept}{separator}{document}{newline}"
    _decode(text, stripped, blanked)
    unit = _indent_unit(stripped[1:] if text.startswith("\ufeff") else stripped)
    obj, depth = _walk(text, stripped, keys)
    member = obj.find(keys[depth])
    if member is None:
        return _insert(text, obj, keys[depth], _nest(keys[depth + 1 :], value), unit, newline)
    old = json.loads(blanked[member.value_start : member.value_end])
    if _dump(old) == _dump(value):
        return text
    line_start = _line_start(text, member.key_start)
    if _is_blank(text[line_start : member.key_start]):
        rendered = _render(value, unit, text[line_start : member.key_start], newline)
    else:  # the member shares its line with others: keep it on one line
        rendered = _dump(value)
    return text[: member.value_start] + rendered + text[member.value_end :]


def delete_member(text: str, path: Sequence[str]) -> str:
    """`text` without the member at `path` (its comma and emptied line too); unchanged when absent."""
    keys = _check_path(path)
    stripped, blanked = _blank(text)
    if not blanked.strip(_WS):
        return text
    _decode(text, stripped, blanked)
    while True:  # duplicate keys: remove every occurrence, or an earlier one would show through
        obj, depth = _walk(text, stripped, keys)
        member = obj.find(keys[-1]) if depth == len(keys) - 1 else None
        if member is None:
            return text
        text = _remove(text, obj, member)
        stripped, _ = _blank(text)


def _insert(text: str, obj: _Object, key: str, value: Any, unit: str, newline: str) -> str:
    """Append a member at the end of `obj`, in the layout the object already has."""
    last = obj.members[-1] if obj.members else None
    edits: list[tuple[int, int, str]] = []
    if last is not None and not _starts_line(text, last.key_start):  # an object on one line
        member = f"{_dump(key)}: {_dump(value)}"
        if last.comma is None:
            edits.append((last.value_end, last.value_end, f", {member}"))
        else:
            edits.append((last.comma + 1, last.comma + 1, f" {member},"))
        return _splice(text, edits)
    open_indent = _indentation(text, obj.start)
    indent = _indentation(text, last.key_start) if last else open_indent + unit
    member = f"{indent}{_dump(key)}: {_render(value, unit, indent, newline)}"
    if last is not None:
        if last.comma is None:
            edits.append((last.value_end, last.value_end, ","))
        else:
            member += ","  # keep the file's trailing-comma style
    close_line = _line_start(text, obj.end)
    if _is_blank(text[close_line : obj.end]):  # '}' on its own line: insert the lines before it
        edits.append((close_line, close_line, member + newline))
    else:
        edits.append((obj.end, obj.end, newline + member + newline + open_indent))
    return _splice(text, edits)


def _remove(text: str, obj: _Object, member: _Member) -> str:
    """Cut `member`, the comma that separated it, and its line when nothing else is left on it."""
    index = obj.members.index(member)
    previous_comma = obj.members[index - 1].comma if member.comma is None and index > 0 else None
    start = member.key_start
    end = member.comma + 1 if member.comma is not None else member.value_end
    line_start = _line_start(text, start)
    after = end
    while after < len(text) and text[after] in " \t":
        after += 1
    cuts: list[tuple[int, int]] = []
    if _is_blank(text[line_start:start]) and (after == len(text) or text[after] in "\r\n"):
        after += 2 if text.startswith("\r\n", after) else 1 if after < len(text) else 0
        cuts.append((line_start, after))
    elif previous_comma is not None and _is_blank(text[previous_comma + 1 : start]):
        cuts.append((previous_comma, end))  # `{"a": 1, "kb": 2}` -> `{"a": 1}`
        previous_comma = None
    elif member.comma is not None and after < len(text) and text[after] not in "}\r\n":
        cuts.append((start, after))  # more follows on this line: take the space after the comma
    else:
        while start > line_start and text[start - 1] in " \t":
            start -= 1
        cuts.append((start, end))
    if previous_comma is not None:
        cuts.append((previous_comma, previous_comma + 1))
    removed = sum(b - a for a, b in cuts)
    for a, b in sorted(cuts, reverse=True):
        text = text[:a] + text[b:]
    close = obj.end - removed
    if len(obj.members) == 1 and _is_blank(text[obj.start + 1 : close], _WS):
        text = text[: obj.start + 1] + text[close:]  # an emptied object reads `{}`
    return text


# ---------------------------------------------------------------- helpers


def _check_path(path: Sequence[str]) -> Sequence[str]:
    if isinstance(path, str) or not path:
        raise ValueError(f"path must be a non-empty sequence of keys, got {path!r}")
    return path


def _nest(keys: Sequence[str], value: Any) -> Any:
    for key in reversed(keys):
        value = {key: value}
    return value


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _render(value: Any, unit: str, indent: str, newline: str) -> str:
    """`value` as indented JSON whose lines after the first sit under `indent`."""
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", newline + indent)


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Apply (start, end, replacement) edits; at equal positions the earlier edit comes first."""
    for _, (start, end, replacement) in sorted(enumerate(edits), key=lambda e: (e[1][0], e[0]), reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _newline(text: str) -> str:
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _indent_unit(stripped: str) -> str:
    """The step most lines indent by (two spaces, four, a tab...); two spaces when nothing says."""
    votes: Counter[str] = Counter()
    previous = ""
    for line in stripped.split("\n"):
        body = line.lstrip(" \t")
        if not body.strip(_WS):
            continue
        lead = line[: len(line) - len(body)]
        if len(lead) > len(previous) and lead.startswith(previous):
            step = lead[len(previous) :]
            if step.strip(" ") == "" or step.strip("\t") == "":
                votes[step] += 1
        previous = lead
    return votes.most_common(1)[0][0] if votes else "  "


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _indentation(text: str, index: int) -> str:
    """The leading spaces and tabs of the line holding `index`."""
    start = _line_start(text, index)
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _starts_line(text: str, index: int) -> bool:
    return _is_blank(text[_line_start(text, index) : index])


def _is_blank(segment: str, blanks: str = " \t") -> bool:
    return not segment.strip(blanks)
