"""`.kbkit/sync-state.json`: which entries kbkit wrote, where, and what they held.

Ownership is what lets kbkit keep its hands off everything else: it changes or removes only an
entry it wrote and that still holds what it wrote (the hash); anything else is the user's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kbkit.errors import SyncRefused
from kbkit.fsutil import atomic_write_text, private_folder, read_text_file

STATE_VERSION = 1


@dataclass(frozen=True)
class Owned:
    path: str
    key: tuple[str, ...]
    sha256: str
    created_file: bool = False
    items: tuple[str, ...] = ()
    """For a pre-approval: the names kbkit added (a user's own equal names are not kbkit's)."""
    created_key: tuple[str, ...] = ()
    """For a pre-approval: the outermost key kbkit created to hold them, removed when emptied."""


def entry_hash(entry: Any) -> str:
    """A hash of the entry's data, not its formatting: reindenting is not a hand edit."""
    canonical = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def load_state(path: Path) -> dict[str, Owned]:
    text = read_text_file(path, fix="then rerun kbkit sync --force")
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SyncRefused(f"{path} is unreadable ({exc}); delete it and rerun kbkit sync --force") from None
    if data.get("version") != STATE_VERSION:
        raise SyncRefused(
            f"{path} has version {data.get('version')!r}, this kbkit writes {STATE_VERSION}; upgrade kbkit "
            "or delete the file and rerun kbkit sync --force"
        )
    return {
        owner: Owned(
            item["path"],
            tuple(item["key"]),
            item["sha256"],
            item.get("created_file", False),
            tuple(item.get("items", ())),
            tuple(item.get("created_key", ())),
        )
        for owner, item in data.get("entries", {}).items()
    }


def save_state(path: Path, owned: dict[str, Owned]) -> bool:
    entries = {owner: _record(item) for owner, item in sorted(owned.items())}
    text = json.dumps({"version": STATE_VERSION, "entries": entries}, indent=2, sort_keys=True) + "\n"
    private_folder(path.parent)
    return atomic_write_text(path, text)


def _record(item: Owned) -> dict[str, Any]:
    """An entry's record as before pre-approval existed (so older state files read the same);
    a pre-approval's record also names its items and the key kbkit created."""
    record = {**asdict(item), "key": list(item.key)}
    for name in ("items", "created_key"):
        if record[name]:
            record[name] = list(record[name])
        else:
            del record[name]
    return record
