"""The configuration as people read it, written from the model: docs/configuration.md's key table and the
commented kbkit.toml `kbkit init` writes. Neither is written by hand, so neither can drift.

In the starter file a line `# key = value` (or a block starting `# [section]`) is an example:
removing the leading "# " from it, or from every line of the block, gives a working config.
"""

from __future__ import annotations

import textwrap
from typing import Any

import tomlkit

from kbkit.config.model import SERVER_PLACEHOLDER, KeyDoc, key_docs, sections

HEADER = """\
kbkit configuration: the one source of truth for the kb server and every agent's config.
Personal overrides go in kbkit.local.toml and secrets in .env.local (both untracked).
A line "# key = value" is an example: remove the "# " to use it (for a block that starts with
"# [section]", from every line of the block)."""

TABLE_START = "<!-- config-keys:start -->"
TABLE_END = "<!-- config-keys:end -->"


def toml_value(value: Any) -> str:
    if isinstance(value, dict):  # one line, as a key's value (not a table of its own)
        table = tomlkit.inline_table()
        table.update(value)
        return str(table.as_string())
    return str(tomlkit.item(list(value) if isinstance(value, tuple) else value).as_string())


def key_table() -> str:
    """docs/configuration.md's table of every key (between TABLE_START and TABLE_END)."""
    rows = ["| key | default | meaning |", "| --- | --- | --- |"]
    for doc in key_docs():
        default = f"`{toml_value(doc.default)}`" if doc.default not in ("", (), {}) else "none"
        meaning = doc.doc + (f" (e.g. `{toml_value(doc.example)}`)" if doc.example is not None else "")
        rows.append(f"| `[{doc.section}] {doc.name}` | {default} | {meaning} |")
    return "\n".join(rows) + "\n"


def starter_config(kb_path: str = "docs") -> str:
    """The starter kbkit.toml: every key with its meaning; keys off by default as examples."""
    by_section: dict[str, list[KeyDoc]] = {}
    for doc in key_docs():
        by_section.setdefault(doc.section, []).append(doc)
    lines = [f"# {line}" for line in HEADER.splitlines()]
    for dotted, section in sections():
        docs = by_section.get(dotted, [])
        lines.append("")
        intro = _comment(section.__doc__ or "")
        if section.opt_in:
            lines += [*intro, "# It is off until you uncomment the block below.", "#"]
            lines += [f"# {line}" if line else "#" for line in _table(dotted, docs, kb_path, opt_in=True)]
        else:
            lines += [*intro, *_table(dotted, docs, kb_path, opt_in=False)]
    return "\n".join(lines) + "\n"


def _table(dotted: str, docs: list[KeyDoc], kb_path: str, *, opt_in: bool) -> list[str]:
    lines = [f"[{dotted.replace(SERVER_PLACEHOLDER, 'tracker')}]"]  # an example name, valid when uncommented
    for doc in docs:
        lines += _comment(doc.doc[:1].upper() + doc.doc[1:] + ".")
        if (doc.section, doc.name) == ("kb", "path"):
            lines.append(f"{doc.name} = {toml_value(kb_path)}")
        elif doc.example is not None and opt_in:
            lines.append(f"{doc.name} = {toml_value(doc.example)}")
        elif doc.example is not None:
            lines.append(f"# {doc.name} = {toml_value(doc.example)}")
        else:
            lines.append(f"{doc.name} = {toml_value(doc.default)}")
    return lines


def _comment(text: str) -> list[str]:
    return [f"# {line}" for line in textwrap.wrap(" ".join(text.split()), 96)]
