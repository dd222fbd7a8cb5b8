"""Where a skill comes from: a local folder, or a git repository at a branch, tag or commit."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kbkit.skills.lock import LockEntry
from kbkit.skills.spec import SKILL_FILE, SkillError


@dataclass(frozen=True)
class Fetched:
    folder: Path
    """The skill folder (holding SKILL.md), valid inside the `fetch` context."""
    skill_path: str | None
    commit: str | None


def is_git_source(source: str, ref: str | None, root: Path) -> bool:
    if ref is not None or source.startswith(("https://", "http://", "git@", "ssh://", "file://", "git+")):
        return True
    local = _local_path(source, root)
    return source.endswith(".git") or (local / ".git").exists() and not (local / SKILL_FILE).exists()


@contextmanager
def fetch(entry: LockEntry, root: Path, *, skill: str | None = None) -> Iterator[Fetched]:
    """Materialize the skill a lock entry (or a new source) names, in a temporary place for git."""
    if entry.source_type == "local":
        folder = _local_path(entry.source, root)
        if skill and not (folder / SKILL_FILE).exists():
            folder = _find_skill(folder, skill, entry.source)
        if not folder.is_dir():
            raise SkillError(f"the skill source {entry.source} is not a folder (moved or deleted?)")
        yield Fetched(folder, None, None)
        return
    with tempfile.TemporaryDirectory(prefix="kbkit-skill-") as tmp:
        checkout = Path(tmp) / "repo"
        url = entry.source[4:] if entry.source.startswith("git+") else entry.source
        if not url.startswith(("https://", "http://", "git@", "ssh://", "file://")):
            url = str(_local_path(url, root))
        _git("clone", "--quiet", "--no-checkout", url, str(checkout))
        commit = resolve_ref(checkout, entry.ref or "HEAD")
        _git("-C", str(checkout), "checkout", "--quiet", "--detach", commit)
        if entry.skill_path:
            folder = (checkout / entry.skill_path).parent
        else:
            folder = (
                checkout
                if (checkout / SKILL_FILE).exists() and not skill
                else _find_skill(checkout, skill, url)
            )
        if not (folder / SKILL_FILE).exists():
            raise SkillError(
                f"{entry.source} at {entry.ref or 'HEAD'} has no {entry.skill_path or SKILL_FILE}"
            )
        shutil.rmtree(checkout / ".git", ignore_errors=True)
        yield Fetched(folder, (folder / SKILL_FILE).relative_to(checkout).as_posix(), commit)


def resolve_ref(checkout: Path, ref: str) -> str:
    for candidate in (f"origin/{ref}", ref):
        result = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"],
            capture_output=True,
            text=True,
        )
        if result.returncode == 0:
            return result.stdout.strip()
    raise SkillError(f"git ref {ref!r} does not exist in the source repository")


def remote_commit(entry: LockEntry, root: Path) -> str:
    """What `ref` points at in the source now (a moved tag or branch shows here)."""
    with fetch(entry, root) as fetched:
        assert fetched.commit is not None
        return fetched.commit


def _find_skill(base: Path, skill: str | None, shown: str) -> Path:
    candidates = [
        p.parent for p in sorted(base.glob(f"*/{SKILL_FILE}")) + sorted(base.glob(f"*/*/{SKILL_FILE}"))
    ]
    if skill:
        named = [c for c in candidates if c.name == skill]
        if named:
            return named[0]
        raise SkillError(
            f"{shown} has no skill named {skill!r}; it has: {', '.join(c.name for c in candidates)}"
        )
    if len(candidates) == 1:
        return candidates[0]
    names = ", ".join(c.name for c in candidates) or "none"
    raise SkillError(f"{shown} holds several skills or none ({names}); pick one with --skill NAME")


def _local_path(source: str, root: Path) -> Path:
    path = Path(source).expanduser()
    return path if path.is_absolute() else (root / path)


def _git(*args: str) -> None:
    result = subprocess.run(["git", *args], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise SkillError(f"git {args[0]} failed: {result.stderr.strip() or result.stdout.strip()}")
