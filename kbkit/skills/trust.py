"""The sources skills-lock.json fetches from, under the trust rule (kbkit/config/trust.py).

The lock is tracked: a commit that points a skill at another repository makes every member's
`kbkit skills install` reach that host (and copy what it serves into the agents' skill folders).
So the set of sources outside the project is a part, `skills`, that waits for `kbkit trust`; a
skill whose source is trusted installs as before, one whose source is not is refused with one
line. A source the member adds (`kbkit skills add`) is their own choice and trusted as they add it.
"""

from __future__ import annotations

from pathlib import Path

from kbkit.config import repo
from kbkit.config.settings import Pending
from kbkit.config.trust import Part, allow, judge, recorded
from kbkit.skills.lock import LOCK_FILE, LockEntry, read_lock

KEY = "skills"


def source_key(entry: LockEntry, root: Path) -> str | None:
    """How a source is recorded: kind and location; None for a folder inside the project (its
    files are the repository's own, fetched from nowhere)."""
    if entry.source_type == "local":
        folder = Path(entry.source).expanduser()
        folder = (folder if folder.is_absolute() else root / folder).resolve()
        if folder.is_relative_to(root.resolve()):
            return None
        return f"local:{folder}"
    return f"{entry.source_type}:{entry.source_url or entry.source}"


def lock_part(root: Path, extra: tuple[str, ...] = ()) -> Part | None:
    """The `skills` part as skills-lock.json has it now (with `extra` sources); None when it names
    no source outside the project."""
    entries = read_lock(root).entries().values()
    keys = {key for entry in entries if (key := source_key(entry, root)) is not None} | set(extra)
    if not keys:
        return None
    tracked = LOCK_FILE in repo.tracked(root, [LOCK_FILE])
    values = {"sources": sorted(keys)}
    return Part(KEY, "the skill sources", values, tracked, LOCK_FILE, ("sources",), root)


def waiting(root: Path) -> tuple[Pending | None, set[str]]:
    """What waits for trust, and the sources trusted so far (every source, when nothing waits)."""
    part = lock_part(root)
    if part is None:
        return None, set()
    record = recorded(root).get(KEY)
    pending = judge(part, record)
    if pending is None:
        return None, set(part.values["sources"])
    trusted = record.get("sources", []) if isinstance(record, dict) else []
    return pending, {str(item) for item in trusted}


def allow_added(root: Path, entries: list[LockEntry]) -> None:
    """Trust the sources of skills the member added, beside those trusted before."""
    added = tuple(key for entry in entries if (key := source_key(entry, root)) is not None)
    if not added:
        return
    record = recorded(root).get(KEY)
    before = tuple(record.get("sources", [])) if isinstance(record, dict) else ()
    part = Part(KEY, "the skill sources", {"sources": sorted({*before, *added})}, root=root)
    allow(root, [part])
