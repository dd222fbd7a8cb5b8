"""Restore, check, add, remove and update the skills pinned in skills-lock.json.

Each skill's canonical copy lives in `.agents/skills/<name>` (many agents read that folder);
each agent named in `[skills] agents` gets a relative symlink to it, or a copy, per `[skills]
mode`. Every install and check verifies the folder hash; a mismatch is refused with the files
that differ unless `update` is asked for.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kbkit.config import Settings
from kbkit.errors import KbkitError
from kbkit.skills.lock import LockEntry, differing_files, folder_hash, read_lock, write_lock
from kbkit.skills.sources import fetch, is_git_source, remote_commit
from kbkit.skills.spec import SkillError, read_skill
from kbkit.sync.clients import CANONICAL_SKILL_DIR, CLIENTS
from kbkit.sync.gitignore import managed_entries, update_gitignore


class HashMismatch(KbkitError):
    """A skill's content is not what skills-lock.json pinned."""


@dataclass
class SkillsReport:
    installed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def canonical_dir(root: Path) -> Path:
    return root / CANONICAL_SKILL_DIR


def agent_dirs(settings: Settings) -> list[Path]:
    folders = [settings.root / CLIENTS[agent].skill_dir for agent in settings.skills_agents]
    return [f for f in dict.fromkeys(folders) if f != canonical_dir(settings.root)]


def install(settings: Settings, *, update: bool = False, only: str | None = None) -> SkillsReport:
    """Restore every locked skill exactly: same skills, same agents, same mode."""
    root = settings.root
    lock = read_lock(root)
    report = SkillsReport()
    for name, entry in sorted(lock.items()):
        if only and name != only:
            continue
        with fetch(entry, root, skill=name) as fetched:
            skill = read_skill(fetched.folder, expected_name=name)
            report.warnings += skill.warnings
            digest = folder_hash(fetched.folder)
            moved = entry.commit is not None and fetched.commit != entry.commit
            if (digest != entry.computed_hash or moved) and not update:
                installed = canonical_dir(root) / name
                differ = differing_files(installed, fetched.folder) if installed.exists() else []
                why = (
                    f"{entry.ref} moved from {entry.commit[:12]} to {fetched.commit[:12]}; " if moved else ""
                )
                raise HashMismatch(
                    f"skill {name!r}: {why}the source does not match skills-lock.json"
                    + (f" (files that differ: {', '.join(differ)})" if differ else "")
                    + "; review it, then run `kbkit skills install --update` (or `kbkit skills update "
                    + name
                    + "`) to accept it"
                )
            if digest != entry.computed_hash or moved:
                report.changes.append(_describe_change(name, entry, digest, fetched.commit))
                lock[name] = LockEntry(
                    entry.source,
                    entry.source_type,
                    digest,
                    entry.ref,
                    fetched.skill_path or entry.skill_path,
                    fetched.commit,
                )
            _place(settings, name, fetched.folder)
            report.installed.append(name)
    if only is None:
        report.removed = _prune(settings, set(lock))
    if update:
        write_lock(root, lock)
    update_gitignore(root, managed_entries(settings))
    return report


def check(settings: Settings) -> SkillsReport:
    """Read-only: what `install` would fix or refuse. Any problem means exit 1."""
    root = settings.root
    report = SkillsReport()
    for name, entry in sorted(read_lock(root).items()):
        installed = canonical_dir(root) / name
        if not installed.is_dir():
            report.problems.append(f"{name}: not installed; run kbkit skills install")
            continue
        if folder_hash(installed) != entry.computed_hash:
            try:
                with fetch(entry, root, skill=name) as fetched:
                    differ = differing_files(installed, fetched.folder)
            except SkillError:
                differ = []
            detail = f" ({', '.join(differ)})" if differ else ""
            report.problems.append(
                f"{name}: the installed copy was changed{detail}; run kbkit skills install"
            )
        try:
            report.warnings += read_skill(installed, expected_name=name).warnings
        except SkillError as exc:
            report.problems.append(str(exc))
        for folder in agent_dirs(settings):
            link = folder / name
            if not _is_placed(settings, link, installed):
                report.problems.append(
                    f"{name}: missing or stale in {link.relative_to(root)}; run kbkit skills install"
                )
        report.problems += _source_moved(name, entry, root)
    for extra in sorted(_installed_names(root) - set(read_lock(root))):
        report.problems.append(f"{extra}: installed but not in skills-lock.json; run kbkit skills install")
    return report


def add(settings: Settings, source: str, *, skill: str | None = None, ref: str | None = None) -> SkillsReport:
    root = settings.root
    kind = "git" if is_git_source(source, ref, root) else "local"
    if kind == "local" and not Path(source).is_absolute() and not source.startswith(("./", "../")):
        source = "./" + source  # other skill tools read a bare "a/b" as a GitHub owner/repo
    probe = LockEntry(source, kind, "", ref)
    with fetch(probe, root, skill=skill) as fetched:
        parsed = read_skill(fetched.folder)
        entry = LockEntry(source, kind, folder_hash(fetched.folder), ref, fetched.skill_path, fetched.commit)
    lock = read_lock(root)
    lock[parsed.name] = entry
    write_lock(root, lock)
    report = install(settings, only=parsed.name)
    report.warnings = parsed.warnings + report.warnings
    return report


def remove(settings: Settings, name: str) -> SkillsReport:
    lock = read_lock(settings.root)
    if name not in lock:
        raise SkillError(f"no skill named {name!r} in skills-lock.json; `kbkit skills list` shows them")
    del lock[name]
    write_lock(settings.root, lock)
    report = SkillsReport(removed=_prune(settings, set(lock)))
    update_gitignore(settings.root, managed_entries(settings))
    return report


def update(settings: Settings, name: str | None = None) -> SkillsReport:
    lock = read_lock(settings.root)
    if name is not None and name not in lock:
        raise SkillError(f"no skill named {name!r} in skills-lock.json")
    return install(settings, update=True, only=name)


def _place(settings: Settings, name: str, source: Path) -> None:
    """Copy into the canonical folder (replacing it whole), then link or copy into each agent's folder."""
    target = canonical_dir(settings.root) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target.parent))
    try:
        shutil.copytree(
            source, staging / name, symlinks=False, ignore=shutil.ignore_patterns(".git", "node_modules")
        )
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging / name, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for folder in agent_dirs(settings):
        link = folder / name
        folder.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.is_dir():
            shutil.rmtree(link)
        if settings.skills_mode == "symlink":
            link.symlink_to(os.path.relpath(target, folder), target_is_directory=True)
        else:
            shutil.copytree(target, link)


def _is_placed(settings: Settings, link: Path, installed: Path) -> bool:
    if settings.skills_mode == "symlink":
        return link.is_symlink() and (link.parent / os.readlink(link)).resolve() == installed.resolve()
    return link.is_dir() and not link.is_symlink() and folder_hash(link) == folder_hash(installed)


def _prune(settings: Settings, keep: set[str]) -> list[str]:
    """Remove installed skills the lock no longer names: the canonical copy and kbkit's agent entries."""
    removed = []
    for name in sorted(_installed_names(settings.root) - keep):
        shutil.rmtree(canonical_dir(settings.root) / name)
        for folder in agent_dirs(settings):
            link = folder / name
            if link.is_symlink():
                link.unlink()
            elif link.is_dir():
                shutil.rmtree(link)
        removed.append(name)
    return removed


def _installed_names(root: Path) -> set[str]:
    folder = canonical_dir(root)
    return (
        {p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")}
        if folder.is_dir()
        else set()
    )


def _source_moved(name: str, entry: LockEntry, root: Path) -> list[str]:
    try:
        if entry.source_type == "git":
            now = remote_commit(entry, root)
            if entry.commit and now != entry.commit:
                return [
                    f"{name}: {entry.ref or 'HEAD'} moved from {entry.commit[:12]} to {now[:12]} upstream; "
                    f"run kbkit skills update {name}"
                ]
            return []
        with fetch(entry, root, skill=name) as fetched:
            if folder_hash(fetched.folder) != entry.computed_hash:
                return [
                    f"{name}: the source folder {entry.source} changed since it was locked; "
                    f"run kbkit skills update {name}"
                ]
    except SkillError as exc:
        return [f"{name}: the source cannot be read ({exc})"]
    return []


def _describe_change(name: str, entry: LockEntry, digest: str, commit: str | None) -> str:
    change = f"{name}: {entry.computed_hash[:12]} -> {digest[:12]}"
    if commit and entry.commit and commit != entry.commit:
        change += f" ({entry.ref or 'HEAD'}: {entry.commit[:12]} -> {commit[:12]})"
    return change


def lock_entries(settings: Settings) -> dict[str, LockEntry]:
    return read_lock(settings.root)
