"""The user's skill lock: the file `npx skills add -g` keeps, which kbkit reads and writes the same way.

`npx skills` 1.7.4 keeps the skills it installs into the user's own folders in
`$XDG_STATE_HOME/skills/.skill-lock.json`, or `~/.agents/.skill-lock.json` without that variable.
Its format is not the project lock's: `{"version": 3, "skills": {name: {source, sourceType,
sourceUrl, ref?, skillPath?, skillFolderHash, pluginName?, installedAt, updatedAt}}, "dismissed":
{}, "lastSelectedAgents"?: [...]}`, written as `JSON.stringify(lock, null, 2)` (no trailing
newline). `ref` is the branch or tag asked for (the user's scope follows it; nothing is pinned to a
commit), and `skillFolderHash` is either the content hash both tools compute (64 hex digits) or,
for a GitHub source, the git tree id of the skill folder (40 hex digits), which `npx skills update
-g` compares with GitHub's. kbkit keeps everything it does not write (unknown keys, their order,
other entries, `dismissed`) and writes atomically. Where npx would silently start over (a file
that is not JSON, an older version), kbkit refuses with one line instead of wiping it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kbkit.fsutil import atomic_write_text
from kbkit.skills.lock import LockFile, read_lock_data

USER_LOCK_FILE = ".skill-lock.json"
USER_LOCK_VERSION = 3
_KEY_ORDER = ("source", "sourceType", "sourceUrl", "ref", "skillPath", "skillFolderHash")
"""The keys of an entry `npx skills add -g` writes, in its order (then installedAt, updatedAt)."""


def home_of(env: Mapping[str, str]) -> Path:
    """The user's home folder, as Node's `homedir()` finds it ($HOME first)."""
    return Path(env.get("HOME") or Path.home())


def user_lock_path(env: Mapping[str, str]) -> Path:
    state = env.get("XDG_STATE_HOME")
    if state:
        return Path(state) / "skills" / USER_LOCK_FILE
    return home_of(env) / ".agents" / USER_LOCK_FILE


@dataclass(frozen=True)
class UserEntry:
    name: str
    source: str
    source_type: str
    source_url: str
    folder_hash: str
    """`skillFolderHash`: a content hash (64 hex), a git tree id (40 hex), or '' (npx: not checkable)."""
    ref: str | None = None
    skill_path: str | None = None

    def fields(self) -> dict[str, str]:
        data = {
            "source": self.source,
            "sourceType": self.source_type,
            "sourceUrl": self.source_url,
            "ref": self.ref,
            "skillPath": self.skill_path,
            "skillFolderHash": self.folder_hash,
        }
        return {key: value for key, value in data.items() if value is not None}


@dataclass
class UserLock(LockFile):
    def entries(self) -> dict[str, UserEntry]:
        """Entries with the keys every reader needs; the rest are in `unusable()`."""
        return {name: _entry(name, item) for name, item in self.skills.items() if _problem(item) is None}

    def unusable(self) -> list[str]:
        return [f"{name!r}: {problem}" for name, item in self.skills.items() if (problem := _problem(item))]

    def put(self, entry: UserEntry, now: datetime | None = None) -> None:
        """Set an entry as `npx skills add -g` does (installedAt kept, updatedAt now), keeping the
        keys kbkit does not write where they were."""
        stamp = (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        old = self.skills.get(entry.name)
        installed = old.get("installedAt", stamp) if isinstance(old, dict) else stamp
        self.merge(entry.name, {**entry.fields(), "installedAt": installed, "updatedAt": stamp}, _OWNED)

    def write(self) -> bool:
        """Replace the lock atomically; a lock that is a link (a dotfiles checkout) is written
        through, where it points, as npx's own write does, and stays a link."""
        target = self.path.resolve() if self.path.is_symlink() else self.path
        return atomic_write_text(target, json.dumps(_js_order(self.raw), indent=2, ensure_ascii=False))


_OWNED = frozenset((*_KEY_ORDER, "installedAt", "updatedAt"))


def read_user_lock(env: Mapping[str, str]) -> UserLock:
    """The user's lock (an empty one when there is none); one clear error for a file kbkit must not
    overwrite."""
    path = user_lock_path(env)
    fix = f"move {path} aside; npx skills and kbkit start a new one"
    data = read_lock_data(
        path, USER_LOCK_VERSION, fix=fix, version_fix=f"(the one npx skills 1.7.4 writes); {fix}"
    )
    if data is None:
        return UserLock(path, {"version": USER_LOCK_VERSION, "skills": {}, "dismissed": {}})
    return UserLock(path, data)


def _problem(item: object) -> str | None:
    if not isinstance(item, dict):
        return "the entry is not an object"
    for key in ("source", "sourceType"):
        if not isinstance(item.get(key), str) or not item[key]:
            return f"{key} is missing"
    for key in ("sourceUrl", "ref", "skillPath", "skillFolderHash"):
        if key in item and not isinstance(item[key], str):
            return f"{key} is not text"
    return None


def _entry(name: str, item: dict[str, Any]) -> UserEntry:
    return UserEntry(
        name, item["source"], item["sourceType"], item.get("sourceUrl") or item["source"],
        item.get("skillFolderHash") or "", item.get("ref"), item.get("skillPath"),
    )  # fmt: skip


def _js_order(value: Any) -> Any:
    """Objects in the key order `JSON.stringify` gives them: integer-like keys first, ascending,
    then the rest in insertion order (so a skill named '2024' sits where npx puts it)."""
    if isinstance(value, list):
        return [_js_order(item) for item in value]
    if not isinstance(value, dict):
        return value
    index = sorted((k for k in value if _is_index(k)), key=int)
    rest = [k for k in value if not _is_index(k)]
    return {key: _js_order(value[key]) for key in (*index, *rest)}


def _is_index(key: str) -> bool:
    return (
        key.isascii() and key.isdigit() and (key == "0" or not key.startswith("0")) and int(key) < 2**32 - 1
    )
