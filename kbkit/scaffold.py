"""`kbkit init`: a commented starter kbkit.toml and the managed .gitignore block."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tomlkit

from kbkit.config import CONFIG_FILE, SCHEMA, load_settings
from kbkit.fsutil import atomic_write_text
from kbkit.sync.gitignore import managed_entries, update_gitignore

OPT_IN_SECTIONS = {
    "memory": """\
[memory]
Session memory tools from a remote memory MCP service (Hindsight-style retain/recall/reflect).
They appear only when the key is present; put HINDSIGHT_API_KEY=... in .env.local, never here.
url = "https://api.hindsight.vectorize.io/mcp/{bank}/"
bank = "my-team"
credential = "HINDSIGHT_API_KEY"
tools = ["retain", "recall", "reflect"]""",
}
"""Sections off by default: written as a commented example to uncomment."""

HEADER = """\
kbkit configuration: the one source of truth for the kb server and every agent's config.
Personal overrides go in kbkit.local.toml and secrets in .env.local (both untracked)."""


@dataclass
class InitResult:
    config_written: bool
    kb_folder_created: bool
    gitignore_changed: bool
    config_path: Path


def starter_config(kb_path: str = "docs") -> str:
    """The starter kbkit.toml, written from SCHEMA so its keys and comments cannot drift."""
    doc = tomlkit.document()
    for line in HEADER.splitlines():
        doc.add(tomlkit.comment(line))
    for section, keys in SCHEMA.items():
        doc.add(tomlkit.nl())
        if section in OPT_IN_SECTIONS:
            for line in OPT_IN_SECTIONS[section].splitlines():
                doc.add(tomlkit.comment(line))
            continue
        table = tomlkit.table()
        for name, key in keys.items():
            value = kb_path if (section, name) == ("kb", "path") else key.default
            table.add(tomlkit.comment(key.doc[0].upper() + key.doc[1:] + "."))
            table.add(name, value)
        parent, _, child = section.partition(".")
        if child:
            doc[parent].append(child, table)
        else:
            doc.add(section, table)
    return tomlkit.dumps(doc)


def init_project(root: Path, *, kb_path: str = "docs", force: bool = False) -> InitResult:
    root = root.resolve()
    config = root / CONFIG_FILE
    written = False
    if force or not config.exists():
        written = atomic_write_text(config, starter_config(kb_path))
    kb_folder = root / kb_path
    created = written and not kb_folder.exists()
    if created:
        kb_folder.mkdir(parents=True)
    changed = update_gitignore(root, managed_entries(load_settings(root)))
    return InitResult(
        config_written=written, kb_folder_created=created, gitignore_changed=changed, config_path=config
    )
