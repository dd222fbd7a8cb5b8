"""skills-lock.json: the file `npx skills` and kbkit both read, write and verify (docs/adr/0014).

kbkit rewrites the lock the way `npx skills` does (skills by name, two-space indent, a trailing
newline, non-ASCII as UTF-8) and keeps what it does not know: unknown keys, their order, and
entries it cannot use. An entry kbkit writes has npx's keys in npx's order:
`source`, `sourceUrl` (generic git), `ref`, `sourceType`, `skillPath`, `computedHash`, and no
other: npx rebuilds each entry from exactly these when it rewrites the lock, so either tool leaves
the other's lock byte for byte. For a git or GitHub source `ref` is the full commit id (both tools
fetch exactly that commit); the branch or tag asked for is kbkit.toml's (kbkit/skills/refs.py).
Locks kbkit wrote before kept it here as `requestedRef`: it is read, and moved out on write.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbkit.errors import KbkitError
from kbkit.fsutil import atomic_write_text, read_text_file
from kbkit.skills.spec import name_problem

LOCK_FILE = "skills-lock.json"
LOCK_VERSION = 1
SOURCE_TYPES = ("local", "github", "git")
"""What kbkit restores; npx's other kinds (well-known, node_modules, gitlab, ...) are reported."""
_KEY_ORDER = ("source", "sourceUrl", "ref", "sourceType", "skillPath", "computedHash")


@dataclass(frozen=True)
class LockEntry:
    name: str
    source: str
    source_type: str
    computed_hash: str
    ref: str | None = None
    skill_path: str | None = None
    source_url: str | None = None
    requested_ref: str | None = None
    """Read from an older kbkit's `requestedRef` only; never written (kbkit.toml keeps it now)."""

    @property
    def commit(self) -> str | None:
        """The pinned commit, when `ref` is one (kbkit always pins git and GitHub entries so)."""
        return self.ref if self.ref and _is_commit(self.ref) else None

    def fields(self) -> dict[str, str]:
        data = {
            "source": self.source,
            "sourceUrl": self.source_url,
            "ref": self.ref,
            "sourceType": self.source_type,
            "skillPath": self.skill_path,
            "computedHash": self.computed_hash,
        }
        return {key: value for key, value in data.items() if value is not None}


@dataclass(frozen=True)
class Unusable:
    name: str
    reason: str
    foreign: bool
    """Another tool's kind of source (npx restores it), not a broken entry."""

    def __str__(self) -> str:
        return f"{self.name!r}: {self.reason}"


@dataclass
class LockFile:
    """A lock file as read (the project's or the user's): its JSON as it was, unknown keys and
    their order kept, with a "skills" object (`read_lock_data` checks it is one)."""

    path: Path
    raw: dict[str, Any]

    @property
    def skills(self) -> dict[str, Any]:
        skills: dict[str, Any] = self.raw["skills"]
        return skills

    def drop(self, name: str) -> None:
        del self.skills[name]

    def merge(self, name: str, new: dict[str, Any], owned: frozenset[str]) -> None:
        """Set entry `name` to the values in `new`: keys in `owned` that `new` lacks go, every other
        key the entry had stays where it was, and `new`'s other keys follow in `new`'s order."""
        old = self.skills.get(name)
        old = old if isinstance(old, dict) else {}
        merged = {key: new.get(key, value) for key, value in old.items() if key in new or key not in owned}
        merged.update({key: value for key, value in new.items() if key not in merged})
        self.skills[name] = merged


@dataclass
class Lock(LockFile):
    """The project's lock: raw entries (unknown keys and order kept) and what could not be used."""

    def entries(self) -> dict[str, LockEntry]:
        """Entries kbkit can restore (valid name, known source type, every needed key)."""
        usable = {}
        for name, item in self.skills.items():
            if _entry_problem(name, item) is None:
                usable[name] = _entry(name, item)
        return usable

    def unusable(self) -> list[Unusable]:
        """Each entry kbkit cannot restore, with why; the rest still installs."""
        found = []
        for name, item in self.skills.items():
            problem = _entry_problem(name, item)
            if problem is not None:
                foreign = isinstance(item, dict) and item.get("sourceType") not in SOURCE_TYPES
                found.append(Unusable(name, problem, foreign and name_problem(name) is None))
        return found

    def put(self, entry: LockEntry) -> None:
        """Set an entry's values, keeping the keys kbkit does not write and their places."""
        self.merge(entry.name, entry.fields(), _OWNED)

    def requested_refs(self) -> dict[str, str]:
        """The ref each entry an older kbkit wrote was asked at (`write` drops its `requestedRef`)."""
        return {name: entry.requested_ref for name, entry in self.entries().items() if entry.requested_ref}

    def write(self) -> bool:
        """Write the lock as npx writes it; older kbkit's `requestedRef` goes (record it first)."""
        for item in self.skills.values():
            if isinstance(item, dict):
                item.pop(_LEGACY_REQUESTED, None)
        skills = {name: self.skills[name] for name in sorted(self.skills, key=_js_order)}
        data = {"version": self.raw.get("version", LOCK_VERSION), "skills": skills}
        data.update({key: value for key, value in self.raw.items() if key not in data})
        return atomic_write_text(self.path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


_LEGACY_REQUESTED = "requestedRef"
_OWNED = frozenset((*_KEY_ORDER, _LEGACY_REQUESTED, "commit"))
"""Keys whose value kbkit decides; `commit` is what kbkit wrote before `ref` held the commit."""


def read_lock(root: Path) -> Lock:
    path = root / LOCK_FILE
    data = read_lock_data(path, LOCK_VERSION, fix="restore it from git")
    return Lock(path, data if data is not None else {"version": LOCK_VERSION, "skills": {}})


def read_lock_data(
    path: Path, version: int, *, fix: str, version_fix: str | None = None
) -> dict[str, Any] | None:
    """A lock file's JSON (None when there is none): an object with a "skills" object, of `version`;
    anything else is one error that names the file and says `fix` (`version_fix` for a version)."""
    text = read_text_file(path, fix=fix)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise KbkitError(f"{path} is not valid JSON ({exc}); {fix}") from None
    if not isinstance(data, dict) or not isinstance(data.get("skills"), dict):
        raise KbkitError(f'{path} has no "skills" object; {fix}')
    if data.get("version") != version:
        raise KbkitError(
            f"{path} has version {data.get('version')!r}; this kbkit reads version {version}; {fix}"
        )
    return data


def _entry_problem(name: str, item: object) -> str | None:
    problem = name_problem(name)
    if problem is not None:
        return f"not a valid skill name ({problem}); fix or remove that entry"
    if unicodedata.normalize("NFKC", name.strip()) != name:
        return "not a valid skill name (not in normalized form); fix or remove that entry"
    if not isinstance(item, dict):
        return "the entry is not an object; restore skills-lock.json from git"
    kind = item.get("sourceType")
    if kind not in SOURCE_TYPES:
        return (
            f"sourceType {kind!r} is not one kbkit restores ({', '.join(SOURCE_TYPES)}); "
            "npx skills experimental_install restores it"
        )
    for key in ("source", "computedHash"):
        if not isinstance(item.get(key), str) or not item[key]:
            return f"{key} is missing; re-add the skill"
    for key in ("ref", "skillPath", "sourceUrl", "requestedRef"):
        if key in item and not isinstance(item[key], str):
            return f"{key} is not text; re-add the skill"
    for key in ("source", "sourceUrl"):  # git reads a word that starts with '-' as an option
        if str(item.get(key) or "").startswith("-"):
            return (
                f"{key} {item[key]!r} starts with '-', which git reads as an option; fix or remove that entry"
            )
    for key in ("ref", "requestedRef"):
        if key in item and ref_problem(item[key]) is not None:
            return f"{key} {item[key]!r}: {ref_problem(item[key])}; fix or remove that entry"
    skill_path = item.get("skillPath")
    if skill_path is not None and (
        skill_path.startswith("/") or ".." in skill_path.split("/") or not skill_path.endswith("SKILL.md")
    ):
        return f"skillPath {skill_path!r} must be a relative path ending in SKILL.md"
    return None


def _entry(name: str, item: dict[str, Any]) -> LockEntry:
    ref = item.get("ref")
    legacy = item.get("commit")  # kbkit's earlier key: the commit `ref` resolved to
    if isinstance(legacy, str) and _is_commit(legacy) and not (ref and _is_commit(ref)):
        return LockEntry(
            name, item["source"], item["sourceType"], item["computedHash"], legacy,
            item.get("skillPath"), item.get("sourceUrl"), item.get("requestedRef") or ref,
        )  # fmt: skip
    return LockEntry(
        name, item["source"], item["sourceType"], item["computedHash"], ref,
        item.get("skillPath"), item.get("sourceUrl"), item.get("requestedRef"),
    )  # fmt: skip


SAFE_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./+-]{0,254}")


def ref_problem(ref: str) -> str | None:
    """Why `ref` is not a commit id or a plain ref name git can be given as it is (None when it is).
    A ref comes from a tracked file and is passed to `git fetch`: `--upload-pack=...` would run."""
    if (
        SAFE_REF.fullmatch(ref)
        and ".." not in ref
        and "//" not in ref
        and not ref.endswith((".", "/", ".lock"))
    ):
        return None
    return "not a commit id or a branch or tag name (letters, digits, _ . / + -, not starting with '-')"


def _is_commit(ref: str) -> bool:
    return len(ref) == 40 and all(ch in "0123456789abcdef" for ch in ref.lower())


def _js_order(name: str) -> bytes:
    """JavaScript's default sort (UTF-16 code units), which `npx skills` orders the skills by."""
    return name.encode("utf-16-be")
