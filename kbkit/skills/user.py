"""The user's own skill folders (`--global`): add, remove and list, as `npx skills ... -g` has them.

Both tools install a user skill into `~/.agents/skills/<name>` and link (or copy) it into each
agent's own folder (`~/.claude/skills`, ...), and both record it in the user's lock
(kbkit/skills/userlock.py). What one tool adds there the other lists, verifies and removes. Nothing
is written outside those folders and that lock, and nothing the user changed is deleted: a copy
that no longer matches what the lock records is left alone and said.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

from kbkit.catalog.agents import AGENTS, CANONICAL_SKILL_DIR
from kbkit.config import Settings, find_root, load_settings
from kbkit.errors import ConfigError, SkillError
from kbkit.skills import files
from kbkit.skills.install import SkillsReport, _place, check, choose, scope_of
from kbkit.skills.lock import read_lock
from kbkit.skills.sources import Fetched, Found, Source, _fetch_url, fetch, git, parse_source
from kbkit.skills.spec import SKILL_FILE
from kbkit.skills.userlock import UserEntry, home_of, read_user_lock


class UserSkillRow(TypedDict):
    """One skill in `kbkit skills list --global --json` (keys spelled as in .skill-lock.json)."""

    name: str
    sourceType: str | None
    source: str | None
    ref: str | None
    skillFolderHash: str | None
    path: str
    state: str


def add_user(
    settings: Settings,
    source: str,
    *,
    base: Path,
    skills: Iterable[str] = (),
    all_skills: bool = False,
    ref: str | None = None,
    list_only: bool = False,
) -> SkillsReport:
    """Install the chosen skills of a source into the user's folders and record them in the user's
    lock. A relative local source is read from `base` (the working folder) and recorded absolute."""
    scope = scope_of(settings, global_=True)
    parsed = parse_source(source, base, ref=ref)
    lock = None if list_only else read_user_lock(settings.env)  # a lock kbkit must not rewrite: stop now
    with fetch(parsed, base) as fetched:
        picked, report = choose(parsed, fetched, skills, all_skills=all_skills, list_only=list_only)
        if lock is None:
            return report
        for item in picked:
            name = item.skill.name
            entry = _entry_for(parsed, item, fetched, base)
            old = lock.entries().get(name)
            try:
                _place(scope, name, item.tree, item.tree.hash(), old.folder_hash if old else "")
            except SkillError as exc:
                report.problems.append(f"{name}: {exc}")
                continue
            lock.put(entry)
            report.installed.append(name)
    lock.write()
    return report


def remove_user(settings: Settings, name: str) -> SkillsReport:
    """Remove a skill the user's lock records: every copy that still matches it and every link to it.

    A copy changed since it was installed stops the removal of that skill (nothing is deleted, the
    entry stays); a folder of the same name in another agent's folder that is not this skill is
    left alone and said."""
    _check_name(name)
    home = home_of(settings.env)
    scope = scope_of(settings, global_=True)
    lock = read_user_lock(settings.env)
    if name not in lock.skills:
        where = f"{home / CANONICAL_SKILL_DIR / name} is installed but " if _installed(home, name) else ""
        raise SkillError(
            f"{where}no skill named {name!r} is in {lock.path}; kbkit removes only what a lock records "
            "(`kbkit skills list --global` shows them): delete an unrecorded folder yourself"
        )
    recorded = lock.entries().get(name)
    digest = recorded.folder_hash if recorded else ""
    canonical = home / CANONICAL_SKILL_DIR / name
    doomed, changed, left = [], [], []
    for folder in dict.fromkeys((CANONICAL_SKILL_DIR, *scope.folders, *_user_folders(settings))):
        mine = folder in (CANONICAL_SKILL_DIR, *scope.folders)
        try:
            with files.folder(home, folder) as fd:
                what = files.kind(fd, name)
                link = files.read_link(fd, name)
        except SkillError:
            continue
        if what == "missing":
            continue
        if what == "link" and folder != CANONICAL_SKILL_DIR:
            if link == os.path.relpath(canonical, home / folder) or (mine and link is not None):
                doomed.append(folder)
            else:
                left.append(f"{home / folder / name} links elsewhere ({link}); left alone")
        elif _matches(home, folder, name, digest):
            doomed.append(folder)
        elif mine:
            changed.append(str(home / folder / name))
        else:
            left.append(f"{home / folder / name} is not the recorded skill; left alone")
    if changed:
        why = "does not match" if digest else "cannot be verified (the lock records no hash)"
        return SkillsReport(
            problems=[
                f"{name}: {', '.join(changed)} {why} what {lock.path} records; nothing was removed: "
                "keep what you changed elsewhere and delete the folder yourself, then run this again"
            ]
        )
    lock.drop(name)
    lock.write()
    for folder in doomed:
        with files.folder(home, folder) as fd:
            files.remove(fd, name)
    return SkillsReport(removed=[name], warnings=left)


def list_user(settings: Settings) -> tuple[list[UserSkillRow], list[str]]:
    """The skills the user's lock records, each with whether its installed copy verifies, then
    skill folders in the user's canonical folder that no lock records; and the unusable entries."""
    home = home_of(settings.env)
    lock = read_user_lock(settings.env)
    folders = _user_folders(settings)
    rows: list[UserSkillRow] = [
        {
            "name": name,
            "sourceType": entry.source_type,
            "source": entry.source,
            "ref": entry.ref,
            "skillFolderHash": entry.folder_hash,
            "path": str(home / (_copy_of(home, folders, name) or CANONICAL_SKILL_DIR) / name),
            "state": installed_problem(home, folders, entry) or "installed and verified",
        }
        for name, entry in lock.entries().items()
    ]
    for name in files.names(home, CANONICAL_SKILL_DIR):
        if name in lock.skills or name.startswith(".") or not _installed(home, name):
            continue
        rows.append(
            {
                "name": name,
                "sourceType": None,
                "source": None,
                "ref": None,
                "skillFolderHash": None,
                "path": str(home / CANONICAL_SKILL_DIR / name),
                "state": f"installed; not in {lock.path} (added by hand or by another tool)",
            }
        )
    return rows, lock.unusable()


def check_user(settings: Settings) -> SkillsReport:
    """Read-only and offline: the project's locked skills in the user's folders (as `install
    --global` puts them), then every other skill the user's lock records, installed and verified."""
    report = check(settings, global_=True)
    home = home_of(settings.env)
    lock = read_user_lock(settings.env)
    report.warnings += [f"not checked: {line}" for line in lock.unusable()]
    project = read_lock(settings.root).skills
    folders = _user_folders(settings)
    for name, entry in lock.entries().items():
        if name in project:
            continue
        problem = installed_problem(home, folders, entry)
        if problem and not entry.folder_hash and not problem.startswith("not installed"):
            report.warnings.append(f"{name}: {problem}")  # npx's well-known entries: nothing to verify by
        elif problem:
            report.problems.append(f"{name}: {problem}")
    return report


def user_settings(root: Path | None) -> Settings:
    """The project's settings, or outside any project the defaults: the user's folders need none."""
    if root is None:
        try:
            find_root()
        except ConfigError:
            here = Path.cwd()
            return Settings(here, here, env=dict(os.environ))
    return load_settings(root)


def installed_problem(home: Path, folders: list[str], entry: UserEntry) -> str | None:
    """Why the user's copy of a recorded skill is not what the user's lock records (None when it is).

    The copy is in ~/.agents/skills, or (where `npx skills add -g` installed for one agent only)
    directly in that agent's folder: the first of `folders` that holds a folder of that name."""
    again = f"`kbkit skills add --global {entry.source} --skill {entry.name}` reinstalls it"
    try:
        _check_name(entry.name)
        where = _copy_of(home, folders, entry.name)
        if where is None:
            return f"not installed; {again}"
        tree = files.read_tree(home / where / entry.name, root=home)
    except SkillError as exc:
        return f"the installed copy cannot be read ({exc})"
    if not entry.folder_hash:
        return "installed; the lock records no hash to verify it by"
    if not tree.matches(entry.folder_hash):
        return f"the installed copy at {home / where / entry.name} was changed; move it aside, then {again}"
    return None


def _entry_for(source: Source, found: Found, fetched: Fetched, base: Path) -> UserEntry:
    """The entry `npx skills add -g` writes for this skill: local sources by absolute path; for
    GitHub the folder's git tree id, as GitHub reports it, when it describes exactly the files
    installed (else, as npx computes it offline, the content hash)."""
    name = found.skill.name
    digest = found.tree.hash()
    if source.kind == "local":
        where = str(Path(os.path.normpath(base / Path(source.location).expanduser())))
        return UserEntry(name, where, "local", where, digest)
    url = _fetch_url(source, base)
    if source.kind == "github":
        tree_id = git("-C", str(fetched.root), "rev-parse", f"{fetched.commit}:{found.folder}").strip()
        if tree_id == found.tree.git_tree_hash():
            digest = tree_id
        url = source.url or url
    location = source.location if source.kind == "github" or "://" in url or "@" in url else url
    return UserEntry(name, location, source.kind, url, digest, source.ref, found.skill_path)


def _user_folders(settings: Settings) -> list[str]:
    """~/.agents/skills, then every known agent's own user folder under the home folder (relative):
    the configured agents' first, as `npx skills -g` looks in all of them."""
    home = home_of(settings.env)
    agents = dict.fromkeys((*settings.skills_agents, *AGENTS))
    found = [CANONICAL_SKILL_DIR]
    for agent in agents:
        folder = AGENTS[agent].folder(global_=True, environ=settings.env)
        if folder is not None and Path(folder).is_relative_to(home):
            found.append(Path(folder).relative_to(home).as_posix())
    return list(dict.fromkeys(found))


def _copy_of(home: Path, folders: list[str], name: str) -> str | None:
    """The first folder holding a folder (not a link) named `name`."""
    for folder in folders:
        try:
            with files.folder(home, folder) as fd:
                if files.kind(fd, name) == "dir":
                    return folder
        except SkillError:
            continue
    return None


def _matches(home: Path, folder: str, name: str, digest: str) -> bool:
    try:
        return bool(digest) and files.read_tree(home / folder / name, root=home).matches(digest)
    except SkillError:
        return False


def _installed(home: Path, name: str) -> bool:
    try:
        with files.folder(home, f"{CANONICAL_SKILL_DIR}/{name}") as fd:
            return files.kind(fd, SKILL_FILE) == "file"
    except SkillError:
        return False


def _check_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name or name != name.strip():
        raise SkillError(f"{name!r} is not a skill name; `kbkit skills list --global` shows them")
