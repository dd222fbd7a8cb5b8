"""Restore, check, add, remove and update the skills pinned in skills-lock.json.

Each skill's canonical copy lives in `.agents/skills/<name>` (the folder `npx skills` and many
agents use); each agent named in `[skills] agents` whose folder is elsewhere gets a relative link
to it, or a copy, per `[skills] mode`. Every install verifies the folder hash and refuses a skill
whose source no longer matches unless asked to update. Nothing kbkit did not write is deleted:
what stands in the way is moved to `.kbkit/backups/`, and skill folders the lock does not name are
reported and left alone unless `--prune` is given (then moved to the backup too).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from kbkit.catalog.agents import AGENTS, CANONICAL_SKILL_DIR
from kbkit.config import STATE_DIR, Settings
from kbkit.errors import ConfigError, ExitCode, HashMismatch, KbkitError, SkillError
from kbkit.skills import files, refs, trust
from kbkit.skills.files import Tree
from kbkit.skills.lock import Lock, LockEntry, read_lock
from kbkit.skills.sources import Fetched, Found, Source, discover, fetch, parse_source, source_of
from kbkit.skills.spec import SKILL_FILE, parse_skill

AGENT_FOLDER_SOURCES = ("skills",)
"""Top-level folders `npx skills` treats as an agent's skill folder (OpenClaw reads `skills/`):
`npx skills remove` deletes skills there, so sources kept there are at risk."""
SOURCE_DIR = "skill-sources"
"""Where `kbkit skills migrate` moves local skill sources out of those folders."""


@dataclass
class SkillsReport:
    installed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """Skills not installed because their source no longer matches the lock (HashMismatch, exit 2)."""
    skipped: list[str] = field(default_factory=list)
    """Lock entries kbkit cannot restore (another tool's source type, a bad name), one line each."""
    unlocked: list[str] = field(default_factory=list)
    """Installed skill folders the lock does not name: left alone unless --prune."""
    backups: list[str] = field(default_factory=list)
    offered: list[dict[str, str]] = field(default_factory=list)
    """What a source offers (add --list)."""
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    codes: list[ExitCode] = field(default_factory=list)
    """The exit code of each error behind `refused` and `problems`: not part of the JSON."""

    def failed(self, name: str, error: KbkitError) -> None:
        """One skill refused or failed; the others go on."""
        (self.refused if isinstance(error, HashMismatch) else self.problems).append(f"{name}: {error}")
        self.codes.append(error.exit_code)

    @property
    def exit_code(self) -> ExitCode:
        """OK, or the highest exit code among the errors met (a fetch that failed, 4, over a
        source that changed, 2); problems without an error of their own are bad input."""
        if not (self.refused or self.problems):
            return ExitCode.OK
        return max(self.codes, default=ExitCode.BAD_INPUT)

    def to_json(self) -> dict[str, object]:
        shown = asdict(self)
        del shown["codes"]
        return {"version": 1, **shown}


@dataclass(frozen=True)
class Scope:
    """Where skills are installed: the project, or (global) the user's own skill folders."""

    root: Path
    """Every write stays under it: the project root, or the home folder."""
    folders: tuple[str, ...]
    """Agent folders (relative to `root`) that get a link or copy, the canonical one excluded."""
    mode: str
    global_: bool = False


def agent_dirs(settings: Settings) -> list[str]:
    """The project folders (relative) that get a link or copy of each skill, canonical one excluded."""
    folders = (AGENTS[agent].project_dir for agent in settings.skills_agents)
    return [f for f in dict.fromkeys(folders) if f is not None and f != CANONICAL_SKILL_DIR]


def scope_of(settings: Settings, *, global_: bool = False) -> Scope:
    """The project's folders, or the user's (`~/.agents/skills` and each agent's own folder)."""
    if not global_:
        return Scope(settings.root, tuple(agent_dirs(settings)), settings.skills_mode)
    home = Path(settings.env.get("HOME") or Path.home())
    folders = []
    for agent in settings.skills_agents:
        folder = AGENTS[agent].folder(global_=True, environ=settings.env)
        if folder is None:
            continue
        path = Path(folder)
        if not path.is_relative_to(home):
            raise SkillError(
                f"{AGENTS[agent].title}'s skill folder {path} is outside your home folder; "
                "kbkit writes user skill folders only under it"
            )
        folders.append(path.relative_to(home).as_posix())
    kept = [f for f in dict.fromkeys(folders) if f != CANONICAL_SKILL_DIR]
    return Scope(home, tuple(kept), settings.skills_mode, global_=True)


def ignored_paths(settings: Settings) -> list[str]:
    """What skills put in the project, for the managed .gitignore block (valid names only)."""
    names = list(read_lock(settings.root).entries())
    if not names:
        return []
    return [f"/{CANONICAL_SKILL_DIR}/"] + [
        f"/{folder}/{name}" for folder in agent_dirs(settings) for name in names
    ]


def install(
    settings: Settings,
    *,
    update: bool = False,
    only: Iterable[str] | None = None,
    prune: bool = False,
    global_: bool = False,
) -> SkillsReport:
    """Restore every locked skill exactly; refuse (and report) any whose source no longer matches.

    `global_` installs the project's locked skills into the user's own skill folders instead."""
    root = settings.root
    scope = scope_of(settings, global_=global_)
    lock = read_lock(root)
    report = SkillsReport(skipped=[str(item) for item in lock.unusable()])
    wanted = set(only) if only is not None else None
    asked: dict[str, str] = {}
    asked_for = refs.followed(root) if update else {}
    pending, trusted = trust.waiting(root)
    for name, entry in lock.entries().items():
        if wanted is not None and name not in wanted:
            continue
        follow = _followed(entry, asked_for) if update else None
        source = trust.source_key(entry, root)
        if pending is not None and source is not None and source not in trusted:
            report.failed(name, ConfigError(f"not fetched from {entry.source}: {pending.line()}"))
            continue
        try:
            tree, commit, skill_path = _fetch_entry(entry, root, update=update, follow=follow)
            digest = tree.hash()
            moved = entry.commit is not None and commit is not None and commit != entry.commit
            if (digest != entry.computed_hash or moved) and not update:
                raise _mismatch(name, tree, root)
        except KbkitError as exc:  # a skill refused, a source unreachable, git missing: the rest go on
            report.failed(name, exc)
            continue
        if digest != entry.computed_hash or moved:
            report.changes.append(_describe_change(entry, digest, commit, follow))
            lock.put(
                LockEntry(
                    name,
                    entry.source,
                    entry.source_type,
                    digest,
                    commit or entry.ref,
                    skill_path,
                    entry.source_url,
                )  # fmt: skip
            )
            if follow is not None and follow != commit:
                asked[name] = follow  # an npx entry's `ref` becomes the commit: kbkit.toml keeps the ask
        try:
            report.backups += _place(scope, name, tree, digest, entry.computed_hash)
        except SkillError as exc:
            report.failed(name, exc)
            continue
        report.installed.append(name)
    if update:
        _save(root, lock, found=asked)
    if global_:
        return report  # the user's folders hold skills of other projects and tools: none is pruned
    if wanted is None:
        report.unlocked = _unlocked(root, lock)
        if prune:
            report.backups += _prune(scope, report.unlocked)
            report.removed, report.unlocked = report.unlocked, []
    return report


def check(settings: Settings, *, global_: bool = False) -> SkillsReport:
    """Read-only and offline: what `install` would fix or refuse. Any problem means exit 1."""
    root = settings.root
    scope = scope_of(settings, global_=global_)
    lock = read_lock(root)
    report = SkillsReport()
    for item in lock.unusable():
        (report.warnings if item.foreign else report.problems).append(f"not checked: {item}")
    for name, entry in lock.entries().items():
        problem = installed_problem(scope.root, name, entry, source_root=root)
        if problem:
            report.problems.append(f"{name}: {problem}")
            continue
        try:
            tree = files.read_tree(Path(scope.root, CANONICAL_SKILL_DIR, name), root=scope.root)
            report.warnings += parse_skill(tree.text(SKILL_FILE) or "", f"{name}/{SKILL_FILE}", name).warnings
        except SkillError as exc:
            report.problems.append(f"{name}: {exc}")
        for folder in scope.folders:
            if not _is_placed(scope, folder, name, entry.computed_hash):
                report.problems.append(f"{name}: missing or stale in {folder}; run kbkit skills install")
        report.problems += _local_source_changed(name, entry, root)
        report.warnings += _source_at_risk(name, entry)
    if global_:
        return report
    report.unlocked = _unlocked(root, lock)
    report.warnings += [
        f"{CANONICAL_SKILL_DIR}/{name} is not in skills-lock.json (left alone; "
        "kbkit skills install --prune moves it to .kbkit/backups)"
        for name in report.unlocked
    ]
    return report


def installed_problem(
    root: Path, name: str, entry: LockEntry, *, source_root: Path | None = None
) -> str | None:
    """Why the installed copy of `name` under `root` is not what the lock pins (None when it is)."""
    try:
        tree = files.read_tree(Path(root, CANONICAL_SKILL_DIR, name), root=root)
    except SkillError as exc:
        if "does not exist" in str(exc):
            return "not installed; run kbkit skills install"
        return f"the installed copy cannot be read ({exc}); run kbkit skills install"
    if tree.hash() == entry.computed_hash:
        return None
    differ = ""
    if entry.source_type == "local":
        try:
            with fetch(source_of(entry), source_root or root) as fetched:
                differ = ", ".join(_differing(tree, fetched.tree(_folder_of(entry))))
        except SkillError:
            pass
    detail = f" ({differ})" if differ else ""
    return f"the installed copy was changed{detail}; it is not offered over MCP; run kbkit skills install"


def add(
    settings: Settings,
    source: str,
    *,
    skills: Iterable[str] = (),
    all_skills: bool = False,
    ref: str | None = None,
    list_only: bool = False,
) -> SkillsReport:
    """Pin the chosen skills of a source in skills-lock.json, then install them."""
    root = settings.root
    parsed = parse_source(source, root, ref=ref)
    with fetch(parsed, root) as fetched:
        picked, offered = choose(parsed, fetched, skills, all_skills=all_skills, list_only=list_only)
        if list_only:
            return offered
        lock = read_lock(root)
        warnings = offered.warnings
        for item in picked:
            lock.put(_entry_for(parsed, item, fetched.commit))
    asked = parsed.ref if parsed.kind != "local" and parsed.ref != fetched.commit else None
    _save(root, lock, {item.skill.name: asked for item in picked})
    trust.allow_added(root, [lock.entries()[item.skill.name] for item in picked])
    report = install(settings, only=[item.skill.name for item in picked])
    report.warnings = warnings + report.warnings
    return report


def choose(
    parsed: Source, fetched: Fetched, skills: Iterable[str], *, all_skills: bool, list_only: bool
) -> tuple[list[Found], SkillsReport]:
    """The skills a fetched source offers that the user picked, and a report: what it offers
    (with --list) and the warnings about what was left out or is off spec."""
    found, invalid = discover(fetched, parsed.subpath if parsed.kind != "local" else None)
    left_out = [f"left out: {line}" for line in invalid]
    if list_only:
        offered = [
            {"name": f.skill.name, "path": f.folder or ".", "description": f.skill.description} for f in found
        ]
        return [], SkillsReport(offered=offered, warnings=left_out)
    try:
        picked = _pick(found, list(dict.fromkeys(skills)), all_skills, parsed.shown)
    except SkillError as exc:
        raise SkillError("; ".join([str(exc), *invalid])) from None
    warnings = left_out if all_skills else []
    for item in picked:
        warnings += item.skill.warnings + [f"{item.skill.name}: {line}" for line in item.tree.skipped]
    return picked, SkillsReport(warnings=warnings)


def remove(settings: Settings, name: str) -> SkillsReport:
    """Unpin a skill and remove its installed copies (a changed copy goes to the backup)."""
    lock = read_lock(settings.root)
    if name not in lock.skills:
        raise SkillError(f"no skill named {name!r} in skills-lock.json; `kbkit skills list` shows them")
    entry = lock.entries().get(name)
    lock.drop(name)
    _save(settings.root, lock, {name: None})
    report = SkillsReport(removed=[name])
    report.backups = _remove_installed(scope_of(settings), name, entry.computed_hash if entry else None)
    return report


def update(settings: Settings, name: str | None = None) -> SkillsReport:
    lock = read_lock(settings.root)
    if name is not None and name not in lock.entries():
        raise SkillError(f"no skill named {name!r} in skills-lock.json that kbkit restores")
    return install(settings, update=True, only=[name] if name else None)


def migrate(settings: Settings) -> SkillsReport:
    """Move local sources out of folders `npx skills` treats as agent folders, into skill-sources/."""
    root = settings.root
    lock = read_lock(root)
    report = SkillsReport()
    for name, entry in lock.entries().items():
        if not _source_at_risk(name, entry):
            continue
        rel = Path(os.path.normpath(entry.source)).as_posix()
        parent, _, folder = rel.rpartition("/")
        if (root / SOURCE_DIR / folder).exists():
            raise SkillError(f"{SOURCE_DIR}/{folder} exists already; move {rel} by hand")
        files.move(root, parent, folder, SOURCE_DIR)
        lock.put(
            LockEntry(name, f"./{SOURCE_DIR}/{folder}", "local", entry.computed_hash, None, None, None, None)
        )
        report.changes.append(f"{name}: ./{rel} -> ./{SOURCE_DIR}/{folder}")
    _save(root, lock)
    return report


def _save(
    root: Path,
    lock: Lock,
    changes: dict[str, str | None] | None = None,
    *,
    found: dict[str, str] | None = None,
) -> None:
    """Record what each skill follows in kbkit.toml (an older lock's `requestedRef` moves there),
    then write the lock with npx's keys only: kbkit.toml first, so a refused edit loses nothing."""
    refs.record(root, changes or {}, found={**lock.requested_refs(), **(found or {})})
    lock.write()


def _followed(entry: LockEntry, configured: dict[str, str]) -> str | None:
    """The branch or tag `update` fetches: kbkit.toml's, an older lock's, or npx's own `ref`;
    None follows the default branch."""
    if entry.source_type == "local":
        return None
    return (
        configured.get(entry.name)
        or entry.requested_ref
        or (entry.ref if entry.ref and not entry.commit else None)
    )


def _fetch_entry(
    entry: LockEntry, root: Path, *, update: bool, follow: str | None
) -> tuple[Tree, str | None, str | None]:
    """The entry's skill folder as the source has it now: (tree, commit, skillPath). An update
    fetches `follow` (None: the default branch) instead of the pinned commit."""
    source = source_of(entry)
    if update and source.kind != "local":
        source = type(source)(source.kind, source.location, source.url, None, follow)
    with fetch(source, root) as fetched:
        folder = _folder_of(entry)
        tree = fetched.tree(folder)
        text = tree.text(SKILL_FILE)
        if text is None:
            raise SkillError(f"{source.shown} has no {folder + '/' if folder else ''}{SKILL_FILE}")
        skill = parse_skill(text, f"{entry.name}/{SKILL_FILE}", None)
        if skill.name != entry.name:
            raise SkillError(f"the source now names the skill {skill.name!r}; re-add it")
        return tree, fetched.commit, entry.skill_path


def _folder_of(entry: LockEntry) -> str:
    if entry.skill_path is None:
        return ""
    folder, _, _ = entry.skill_path.rpartition("/")
    return folder


def _entry_for(source: Source, found: Found, commit: str | None) -> LockEntry:
    name = found.skill.name
    digest = found.tree.hash()
    if source.kind == "local":
        location = source.location if not found.folder else f"{source.location.rstrip('/')}/{found.folder}"
        return LockEntry(name, location, "local", digest)
    url = source.url if source.kind == "git" else None
    return LockEntry(name, source.location, source.kind, digest, commit, found.skill_path, url)


def _pick(found: list[Found], chosen: list[str], all_skills: bool, shown: str) -> list[Found]:
    names = ", ".join(f.skill.name for f in found) or "none"
    if not found:
        raise SkillError(f"{shown} holds no skill (no folder with a {SKILL_FILE})")
    if chosen:
        by_name = {f.skill.name: f for f in found}
        missing = [name for name in chosen if name not in by_name]
        if missing:
            raise SkillError(
                f"{shown} has no skill named {', '.join(map(repr, missing))}; it offers: {names}"
            )
        return [by_name[name] for name in chosen]
    if all_skills or len(found) == 1:
        return found
    raise SkillError(f"{shown} offers several skills ({names}); pick with --skill NAME (repeatable) or --all")


def _place(scope: Scope, name: str, tree: Tree, digest: str, locked: str) -> list[str]:
    """Write the canonical copy, then each agent folder's link or copy; return what was backed up.

    In the user's folders nothing is moved aside (kbkit writes there only skill folders and the
    user's lock): a folder in the way that holds neither version is refused before anything is
    written."""
    root = scope.root
    in_the_way = []
    for folder in (CANONICAL_SKILL_DIR, *scope.folders):
        what = _kind_of(root, folder, name)
        in_place = what not in ("missing", "link") or (what == "link" and folder == CANONICAL_SKILL_DIR)
        if in_place and not _replaceable(root, folder, name, {digest, locked}):
            in_the_way.append(folder)
    if scope.global_ and in_the_way:
        where = ", ".join(f"{root / folder / name}" for folder in in_the_way)
        raise SkillError(
            f"{where} holds a different copy that no lock records (or one changed by hand); "
            "move it out of the way, then run this again"
        )
    backups = [_backup(root, folder, name) for folder in in_the_way]
    files.write_tree(root, CANONICAL_SKILL_DIR, name, tree)
    for folder in scope.folders:
        target = os.path.relpath(root / CANONICAL_SKILL_DIR / name, root / folder)
        with files.folder(root, folder, create=True) as fd:
            if scope.mode == "symlink" and files.read_link(fd, name) == target:
                continue
        if scope.mode == "symlink":
            with files.folder(root, folder) as fd:
                files.link(fd, name, target)
        else:
            files.write_tree(root, folder, name, tree)
    return backups


def _kind_of(root: Path, folder: str, name: str) -> str:
    """What `root/folder/name` is (missing when the folder is), creating nothing."""
    try:
        with files.folder(root, folder) as fd:
            return files.kind(fd, name)
    except SkillError as exc:
        if "does not exist" in str(exc):
            return "missing"
        raise


def _replaceable(root: Path, parent: str, name: str, digests: set[str]) -> bool:
    """True when the folder there holds exactly a locked or new version (nothing of the user's)."""
    try:
        tree = files.read_tree(Path(root, parent, name), root=root)
    except SkillError:
        return False
    return any(tree.matches(digest) for digest in digests if digest)


def _backup(root: Path, parent: str, name: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return files.move(root, parent, name, f"{STATE_DIR}/backups/{stamp}/{parent}")


def _remove_installed(scope: Scope, name: str, locked: str | None) -> list[str]:
    root = scope.root
    backups = []
    for folder in [CANONICAL_SKILL_DIR, *scope.folders]:
        try:
            with files.folder(root, folder) as fd:
                what = files.kind(fd, name)
                if what == "missing":
                    continue
                if what == "link" or (locked and _replaceable(root, folder, name, {locked})):
                    files.remove(fd, name)
                    continue
        except SkillError:
            continue
        backups.append(_backup(root, folder, name))
    return backups


def _unlocked(root: Path, lock: Lock) -> list[str]:
    """Skill folders in .agents/skills that no lock entry names (npx's own entries included)."""
    return [
        name
        for name in files.names(root, CANONICAL_SKILL_DIR)
        if not name.startswith(".") and name not in lock.skills
    ]


def _prune(scope: Scope, names: list[str]) -> list[str]:
    return [path for name in names for path in _remove_installed(scope, name, None)]


def _is_placed(scope: Scope, folder: str, name: str, digest: str) -> bool:
    root = scope.root
    try:
        with files.folder(root, folder) as fd:
            if scope.mode == "symlink":
                return files.read_link(fd, name) == os.path.relpath(
                    root / CANONICAL_SKILL_DIR / name, root / folder
                )
        return files.read_tree(Path(root, folder, name), root=root).hash() == digest
    except SkillError:
        return False


def _local_source_changed(name: str, entry: LockEntry, root: Path) -> list[str]:
    if entry.source_type != "local":
        return []
    try:
        with fetch(source_of(entry), root) as fetched:
            if fetched.tree("").hash() != entry.computed_hash:
                return [f"{name}: the source folder {entry.source} changed since it was locked; "
                        f"run kbkit skills update {name}"]  # fmt: skip
    except SkillError as exc:
        return [f"{name}: the source cannot be read ({exc})"]
    return []


def _source_at_risk(name: str, entry: LockEntry) -> list[str]:
    if entry.source_type != "local" or Path(entry.source).is_absolute():
        return []
    first = Path(os.path.normpath(entry.source)).parts[:1]
    if first and first[0] in AGENT_FOLDER_SOURCES:
        return [
            f"{name}: its source {entry.source} is in {first[0]}/, which npx skills treats as an agent's "
            "skill folder (npx skills remove deletes it); "
            f"run kbkit skills migrate to move it to {SOURCE_DIR}/"
        ]
    return []


def _mismatch(name: str, tree: Tree, root: Path) -> HashMismatch:
    differ = []
    try:
        installed = files.read_tree(Path(root, CANONICAL_SKILL_DIR, name), root=root)
        differ = _differing(installed, tree)
    except SkillError:
        pass
    return HashMismatch(
        "the source does not match skills-lock.json"
        + (f" (files that differ: {', '.join(differ)})" if differ else ""),
        fix=f"review it, then run `kbkit skills update {name}` to accept it",
    )


def _differing(a: Tree, b: Tree) -> list[str]:
    return sorted(
        rel
        for rel in set(a.files) | set(b.files)
        if a.files.get(rel, (None,))[0] != b.files.get(rel, (None,))[0]
    )


def _describe_change(entry: LockEntry, digest: str, commit: str | None, follow: str | None) -> str:
    change = f"{entry.name}: {entry.computed_hash[:12]} -> {digest[:12]}"
    if commit and entry.commit and commit != entry.commit:
        change += f" ({follow or 'HEAD'}: {entry.commit[:12]} -> {commit[:12]})"
    return change
