"""Where skills come from: a local folder, a GitHub repository, or any git repository.

Sources are written as users write them for `npx skills`: `owner/repo`, `owner/repo/path/to/skill`,
`github:owner/repo`, `https://github.com/owner/repo[/tree/REF[/path]]`, any git URL (`https://…/x.git`,
`ssh://…`, `git@host:…`), or a local folder (`./skills/x`; an existing folder is local even without
`./`). A branch, tag or commit follows `@` or `#` (`owner/repo@v1`, `owner/repo#v1`) or comes with
`--ref`. Git and GitHub sources are fetched with git itself (`git fetch --depth 1` of that one
ref), so git's own configuration (credentials, `url.<base>.insteadOf`) applies, and are pinned to
the commit fetched.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kbkit.errors import EnvironmentProblem, FetchFailed, KbkitError, SkillError, ToolMissing
from kbkit.skills import files
from kbkit.skills.files import Tree
from kbkit.skills.lock import LockEntry, ref_problem
from kbkit.skills.spec import SKILL_FILE, Skill, parse_skill

GIT_TIMEOUT = 300
DISCOVERY_DEPTH = 5
DISCOVERY_SKIP = frozenset({".git", "node_modules", "dist", "build", "__pycache__"})
"""Folders not searched for skills (the same as `npx skills`)."""
_GITHUB = re.compile(
    r"^https?://(?:www\.)?github\.com/([^/]+)/([^/#@]+?)(?:\.git)?(?:/tree/([^/]+)(?:/(.+?))?)?/?$"
)
_SHORTHAND = re.compile(r"^([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)((?:/[^/]+)*)/?$")


@dataclass(frozen=True)
class Source:
    kind: str
    """local | github | git"""
    location: str
    """As kept in the lock's `source`: './path', 'owner/repo', or the git URL."""
    url: str | None = None
    """What git fetches (github: https://github.com/owner/repo.git)."""
    subpath: str | None = None
    ref: str | None = None

    @property
    def shown(self) -> str:
        where = self.location + (f"/{self.subpath}" if self.subpath and self.kind == "github" else "")
        return where + (f"@{self.ref}" if self.ref else "")


@dataclass(frozen=True)
class Found:
    """One skill a source offers."""

    skill: Skill
    folder: str
    """The skill folder, relative to the source's root ('' for the root itself)."""
    tree: Tree

    @property
    def skill_path(self) -> str:
        return f"{self.folder}/{SKILL_FILE}" if self.folder else SKILL_FILE


@dataclass(frozen=True)
class Fetched:
    root: Path
    """The source's root on disk (a local folder, or a temporary checkout), valid inside `fetch`."""
    commit: str | None
    local_root: Path | None = None
    """For local sources under the project: the project root (reads then refuse links on the way)."""

    def tree(self, folder: str) -> Tree:
        return files.read_tree(self.root / folder if folder else self.root, root=self.local_root)


def parse_source(text: str, root: Path, *, ref: str | None = None) -> Source:
    """Read a source as `npx skills` would; one clear error for what is none of the known forms."""
    text = text.strip()
    if not text:
        raise SkillError("give a source: ./folder, owner/repo, owner/repo/path, or a git URL")
    if _is_local(text, root):
        local = text if text.startswith(("/", "./", "../", "~")) or text in (".", "..") else "./" + text
        local = local.rstrip("/") or "/"
        if ref is not None:  # a ref means the repository's history, not the files on disk
            return Source("git", local, local, ref=ref)
        return Source("local", local)
    text, inline = _split_ref(text)
    if ref and inline and ref != inline:
        raise SkillError(f"{text} names two refs ({inline} and --ref {ref}); give one")
    ref = ref or inline
    if text.startswith("github:"):
        text = text[len("github:") :]
    match = _GITHUB.match(text)
    if match:
        owner, repo, tree_ref, subpath = match.groups()
        return _github(owner, repo, subpath, ref or tree_ref)
    if "://" in text or text.startswith("git@") or text.endswith(".git"):
        return Source("git", text, text, ref=ref)
    match = _SHORTHAND.match(text)
    if match and ":" not in text:
        owner, repo, rest = match.groups()
        return _github(owner, repo, rest.strip("/") or None, ref)
    raise SkillError(
        f"{text!r} is not a source kbkit knows: use ./folder, owner/repo[/path], "
        "https://github.com/owner/repo, or a git URL"
    )


def source_of(entry: LockEntry) -> Source:
    """The source a lock entry names, at its pinned ref."""
    if entry.source_type == "local":
        return Source("local", entry.source)
    if entry.source_type == "github":
        owner, _, repo = entry.source.partition("/")
        return Source("github", entry.source, f"https://github.com/{owner}/{repo}.git", ref=entry.ref)
    return Source("git", entry.source, entry.source_url or entry.source, ref=entry.ref)


@contextmanager
def fetch(source: Source, root: Path) -> Iterator[Fetched]:
    """The source's files on disk: the folder itself, or a checkout of exactly one commit."""
    if source.kind == "local":
        folder = _local_path(source.location, root)
        if not folder.is_dir():
            raise SkillError(f"the skill source {source.location} is not a folder (moved or deleted?)")
        yield Fetched(folder, None, root if folder.is_relative_to(root) else None)
        return
    assert source.url is not None
    with tempfile.TemporaryDirectory(prefix="kbkit-skill-") as tmp:
        checkout = Path(tmp) / "repo"
        git("init", "--quiet", str(checkout))
        want = source.ref or "HEAD"
        url = _fetch_url(source, root)
        problem = ref_problem(want) or ("it starts with '-'" if url.startswith("-") else None)
        if problem is not None:  # the lock is checked when read; this guards every other way in
            raise SkillError(f"{source.shown}: refused to fetch: {problem}")
        try:
            git(
                "-C",
                str(checkout),
                *SAFE_PROTOCOLS,
                "fetch",
                "--quiet",
                "--depth",
                "1",
                "--no-tags",
                "--",
                url,
                want,
                failure=FetchFailed,
            )
        except FetchFailed as exc:
            raise FetchFailed(
                f"{source.shown}: cannot fetch {want} ({exc})",
                fix="check the source, its ref and the network, then rerun",
            ) from None
        commit = git("-C", str(checkout), "rev-parse", "--verify", "FETCH_HEAD^{commit}").strip()
        git("-C", str(checkout), "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit)
        yield Fetched(checkout, commit)


def discover(fetched: Fetched, subpath: str | None = None) -> tuple[list[Found], list[str]]:
    """Every valid skill under the source root (or `subpath`), up to 5 levels down, and one line per
    folder holding a SKILL.md that is not a valid skill (why it was left out)."""
    base = (subpath or "").strip("/")
    if ".." in base.split("/"):
        raise SkillError(f"the path {subpath!r} leaves the source")
    start = fetched.root / base if base else fetched.root
    if not start.is_dir():
        raise SkillError(f"the source has no folder {base!r}")
    found, invalid = [], []
    for folder in skill_folders(start):
        rel = folder.relative_to(fetched.root).as_posix()
        rel = "" if rel == "." else rel
        shown = f"{rel or '.'}/{SKILL_FILE}"
        try:
            tree = fetched.tree(rel)
            text = tree.text(SKILL_FILE)
            if text is None:  # SKILL.md was a link: left out of the tree, so not a skill
                raise SkillError(f"{shown} is not a regular file; kbkit does not follow links")
            local_root = fetched.commit is None  # a local folder keeps its name; a checkout's is ours
            found.append(
                Found(parse_skill(text, shown, folder.name if rel or local_root else None), rel, tree)
            )
        except SkillError as exc:
            invalid.append(str(exc))
    return found, invalid


def skill_folders(folder: Path, depth: int = 0) -> Iterator[Path]:
    """Folders holding SKILL.md under `folder` (links not entered); a skill at the top is the only one."""
    if depth > DISCOVERY_DEPTH or folder.is_symlink():
        return
    if (folder / SKILL_FILE).is_file() or (folder / SKILL_FILE).is_symlink():
        yield folder
        if depth == 0:
            return  # a skill at the root is the source's one skill (as npx skills reads it)
    try:
        children = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for child in children:
        if child.is_dir(follow_symlinks=False) and child.name not in DISCOVERY_SKIP:
            yield from skill_folders(Path(child.path), depth + 1)


SAFE_PROTOCOLS = ("-c", "protocol.ext.allow=never", "-c", "protocol.fd.allow=never")
"""Transports that run a command (`ext::sh -c ...`) are never allowed, whatever git's own config says."""


def git(*args: str, failure: type[KbkitError] = EnvironmentProblem) -> str:
    """git's output; a failure of the command raises `failure` (a fetch's is the remote's,
    FetchFailed; anything else is the machine's), a missing git ToolMissing."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1"}
    try:
        result = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise ToolMissing(
            "git is not installed; git and GitHub skill sources need it",
            fix="install git (or add a local folder as the source)",
        ) from None
    except subprocess.TimeoutExpired:
        raise failure(f"git {_verb(args)} took longer than {GIT_TIMEOUT} s") from None
    if result.returncode != 0:
        lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise failure(lines[-1] if lines else f"git {_verb(args)} failed")
    return result.stdout


def _verb(args: tuple[str, ...]) -> str:
    """The git command a message names: `fetch` in `git -C repo fetch ...`."""
    rest = args[2:] if args[:1] == ("-C",) else args
    return rest[0] if rest else "git"


def _github(owner: str, repo: str, subpath: str | None, ref: str | None) -> Source:
    repo = repo.removesuffix(".git")
    if subpath and ".." in subpath.split("/"):
        raise SkillError(f"the path {subpath!r} leaves the repository")
    return Source("github", f"{owner}/{repo}", f"https://github.com/{owner}/{repo}.git", subpath or None, ref)


def _split_ref(text: str) -> tuple[str, str | None]:
    """`x#ref` (npx's form) or `x@ref`; an '@' in 'git@host:' or a URL's user part is not a ref."""
    if "#" in text:
        text, _, ref = text.partition("#")
        return text, ref or None
    head = text.split("://", 1)[-1]
    at = head.rfind("@")
    if at > 0 and "/" in head[:at] and not text.startswith("git@"):
        return text[: len(text) - len(head) + at], head[at + 1 :] or None
    if text.startswith("git@") and text.count("@") > 1:
        at = text.rfind("@")
        return text[:at], text[at + 1 :] or None
    return text, None


def _is_local(text: str, root: Path) -> bool:
    if text.startswith(("/", "./", "../", "~")) or text in (".", ".."):
        return True
    if ":" in text or text.endswith(".git"):
        return False
    return (root / text).is_dir()


def _local_path(location: str, root: Path) -> Path:
    path = Path(location).expanduser()
    return path if path.is_absolute() else Path(os.path.normpath(root / path))


def _fetch_url(source: Source, root: Path) -> str:
    assert source.url is not None
    url = source.url.removeprefix("git+")
    if "://" in url or url.startswith("git@") or re.match(r"^[\w.-]+@[\w.-]+:", url):
        return url
    return str(_local_path(url, root))  # a repository on disk
