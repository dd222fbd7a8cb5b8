"""The managed `.gitignore` block: kbkit owns the lines between its markers and nothing else."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kbkit.fsutil import atomic_write_text

BEGIN = "# >>> kbkit >>>"
END = "# <<< kbkit <<<"
NOTE = "# Managed by kbkit: edit kbkit.toml and rerun kbkit, not these lines."


def render_block(entries: Iterable[str]) -> str:
    lines = [BEGIN, NOTE, *sorted(dict.fromkeys(entries)), END]
    return "\n".join(lines) + "\n"


def merge_block(existing: str, entries: Iterable[str]) -> str:
    """Return `existing` with the managed block replaced (or appended); user lines untouched."""
    block = render_block(entries)
    lines = existing.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if line.rstrip("\r\n") == BEGIN)
        end = next(i for i in range(start, len(lines)) if lines[i].rstrip("\r\n") == END)
    except StopIteration:
        if existing and not existing.endswith("\n"):
            existing += "\n"
        separator = "\n" if existing.strip() else ""
        return existing + separator + block if existing.strip() else block
    return "".join(lines[:start]) + block + "".join(lines[end + 1 :])


def update_gitignore(root: Path, entries: Iterable[str]) -> bool:
    """Write the managed block into `root/.gitignore`; True when the file changed."""
    path = root / ".gitignore"
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    return atomic_write_text(path, merge_block(existing, entries))


def block_is_current(root: Path, entries: Iterable[str]) -> bool:
    path = root / ".gitignore"
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    return merge_block(existing, entries) == existing
