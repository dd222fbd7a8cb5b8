"""What `kbkit skills update` follows for each git skill: kbkit.toml's `[skills] refs` (docs/adr/0014).

skills-lock.json is shared with `npx skills`, which rebuilds every entry from its own keys when it
rewrites the lock, so a branch or tag kept there beside the pinned commit would be dropped by the
next `npx skills experimental_install`. What to follow is the project's intent, like the agents
it installs for, so it lives in kbkit.toml, edited in place (comments and layout kept); the lock
keeps only the commit fetched.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path

from kbkit.config import CONFIG_FILE, LOCAL_CONFIG_FILE
from kbkit.config.tomledit import delete_entry, set_entry
from kbkit.errors import SkillError, TomlEditError
from kbkit.fsutil import atomic_write_text, read_text_file

_PATH = ("skills", "refs")
_BOM = "\ufeff"


def followed(root: Path) -> dict[str, str]:
    """Each skill's followed ref as the files say now (kbkit.local.toml over kbkit.toml), so an
    update right after an add in the same process sees what the add recorded."""
    found: dict[str, str] = {}
    for name in (CONFIG_FILE, LOCAL_CONFIG_FILE):
        text = read_text_file(root / name)
        if text is not None:
            found.update(_refs(text.removeprefix(_BOM)))
    return found


def record(root: Path, changes: Mapping[str, str | None], *, found: Mapping[str, str] | None = None) -> None:
    """Set each skill's followed ref in kbkit.toml (None drops it; the default branch is then followed).

    `found` are refs read from elsewhere (an older lock's `requestedRef`, npx's `ref`): each is
    recorded only where kbkit.toml names none, so what a user wrote there wins."""
    path = root / CONFIG_FILE
    text = read_text_file(path, fix="restore it from git")
    if text is None:
        raise SkillError(f"no {CONFIG_FILE} in {root}; run `kbkit init` first")
    body = text.removeprefix(_BOM)
    current = _refs(body)
    wanted = {**{name: ref for name, ref in (found or {}).items() if name not in current}, **current}
    for name, ref in changes.items():
        if ref is None:
            wanted.pop(name, None)
        else:
            wanted[name] = ref
    if wanted == current:
        return
    try:
        edited = set_entry(body, _PATH, wanted) if wanted else delete_entry(body, _PATH)
    except TomlEditError as exc:
        raise SkillError(f"{path}: {exc}; set [skills] refs = {_inline(wanted)} by hand") from None
    atomic_write_text(path, text[: len(text) - len(body)] + edited)


def _refs(text: str) -> dict[str, str]:
    skills = tomllib.loads(text).get("skills")
    table = skills.get("refs") if isinstance(skills, dict) else None
    if not isinstance(table, dict):
        return {}
    return {name: ref for name, ref in table.items() if isinstance(ref, str) and ref}


def _inline(refs: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{json.dumps(name)} = {json.dumps(ref)}" for name, ref in refs.items()) + "}"
