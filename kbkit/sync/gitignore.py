"""The managed `.gitignore` block: kbkit owns the lines between its markers and nothing else.

Every line kbkit writes there is a literal path: gitignore's special characters are escaped
(`\\`, `*`, `?`, `[`, a leading `!` or `#`, trailing spaces), and a path holding a line break
or another control character is refused, so no input (a client path, a skill name from
skills-lock.json) can add a negation, a comment or a second line to the block.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from kbkit.catalog.clients import CLIENTS
from kbkit.config import ENV_FILE, LOCAL_CONFIG_FILE, STATE_DIR, Settings
from kbkit.errors import SyncRefused
from kbkit.fsutil import atomic_write_text, read_text_file
from kbkit.skills.lock import LOCK_FILE
from kbkit.sync.preapprove import grants
from kbkit.sync.servers import every_client, team_paths

BEGIN = "# >>> kbkit >>>"
END = "# <<< kbkit <<<"
NOTE = "# Managed by kbkit: edit kbkit.toml and rerun kbkit, not these lines."
ALWAYS_IGNORED = (f"{STATE_DIR}/", ENV_FILE, LOCAL_CONFIG_FILE)
"""What every kbkit project keeps out of git: the index and state, secrets, personal overrides."""


def managed_entries(settings: Settings) -> list[str]:
    """Everything kbkit generates for this configuration: the one list behind the managed block."""
    entries = list(ALWAYS_IGNORED)
    for name in settings.sync_clients:
        client = CLIENTS[name]
        entries.append("/.agents/tool-cfg/" if client.user_level else f"/{client.path}")
    entries += team_paths(settings)
    team = every_client(settings)
    entries += [f"/{grant.path}" for grant in grants(settings, list(settings.sync_clients), team)]
    if os.path.lexists(settings.root / LOCK_FILE):  # no lock, no skills: spare sync the skills kit's imports
        from kbkit.skills.install import ignored_paths

        entries += ignored_paths(settings)  # the skills kit knows where skills go
    return entries


def refresh(settings: Settings) -> bool:
    """Rewrite the managed block for this configuration (after skills are installed or removed)."""
    return update_gitignore(settings.root, managed_entries(settings))


def render_block(entries: Iterable[str]) -> str:
    lines = [BEGIN, NOTE, *sorted(dict.fromkeys(escape_line(entry) for entry in entries)), END]
    return "\n".join(lines) + "\n"


def escape_line(path: str) -> str:
    """`path` as a gitignore line that matches exactly that path; SyncRefused for a line break."""
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path) or not path.strip():
        raise SyncRefused(
            f"refusing to write {path!r} into .gitignore: a path there must be one line of printable "
            "characters; fix the name it came from (skills-lock.json or kbkit.toml)"
        )
    trailing = len(path) - len(path.rstrip(" "))
    body = path[: len(path) - trailing] if trailing else path
    escaped = "".join("\\" + ch if ch in "\\*?[" else ch for ch in body)
    if escaped.startswith(("!", "#")):
        escaped = "\\" + escaped
    return escaped + "\\ " * trailing


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
    return atomic_write_text(path, merge_block(read_gitignore(root), entries))


def block_is_current(root: Path, entries: Iterable[str]) -> bool:
    existing = read_gitignore(root)
    return merge_block(existing, entries) == existing


def read_gitignore(root: Path) -> str:
    """The project's .gitignore text ("" when there is none)."""
    return read_text_file(root / ".gitignore", fix="then rerun kbkit") or ""


NOT_A_WORK_TREE = (
    "not a git work tree, so nothing was checked against git: the .gitignore block is written, and "
    "keeps the generated files (client configs with this machine's paths, .kbkit/, .env.local) out "
    "of commits once this folder is in a git repository"
)
"""What `kbkit sync` and `kbkit doctor` say outside git, instead of calling the files ignored."""


def in_git_work_tree(root: Path) -> bool:
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and result.stdout.strip() == "true"


def not_ignored(root: Path, paths: Iterable[str], *, tracked_too: bool = False) -> list[str]:
    """The paths git would not ignore (a tracked file counts as not ignored: ignoring cannot hide it).
    `tracked_too`: judge by the ignore rules alone, as if nothing were tracked (`--no-index`)."""
    paths = list(paths)
    if not paths:
        return []
    result = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "--stdin", *(["--no-index"] if tracked_too else [])],
        input="\n".join(paths) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    ignored = set(result.stdout.splitlines())
    return [path for path in paths if path not in ignored]
