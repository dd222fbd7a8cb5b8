"""What a commit controls: which files of the project git tracks, and a fingerprint of the
repository files a command names.

Whatever git tracks can be changed by anyone who can commit, so it is team input whatever its name
(a `git add -f kbkit.local.toml` makes the member's overlay a teammate's). Asking git is the only
exact answer; where git cannot answer (missing, a repository it refuses), a file is taken as
tracked: the safe side is to ask the member once more.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

GIT_SECONDS = 10.0
"""How long one question to git may take (a repository on a stalled share must not hang a start)."""
MOST_FILES = 5_000
MOST_BYTES = 64 * 1024 * 1024
"""Outside a git repository, the most a command's folder is read to fingerprint it: past either,
sizes stand in for the rest of the contents (said in docs/security.md)."""
SCRIPT_SUFFIXES = (".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".ps1", ".php", ".jar")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def in_work_tree(root: Path) -> bool:
    """Whether `root` is inside a git work tree (a `.git` in it or in a folder above)."""
    return any((folder / ".git").exists() for folder in (root, *root.parents))


def _git(root: Path, *args: str) -> bytes | None:
    """git's output, or None when it cannot answer (not installed, refused, timed out)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            timeout=GIT_SECONDS,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def tracked(root: Path, names: Iterable[str]) -> set[str]:
    """The files among `names` (relative to `root`) that git tracks; all of them when git cannot say."""
    wanted = [name for name in names if (root / name).exists() or (root / name).is_symlink()]
    if not wanted or not in_work_tree(root):
        return set()
    listed = _git(root, "ls-files", "-z", "--cached", "--", *wanted)
    if listed is None:
        return set(wanted)
    found = {item.decode("utf-8", "replace") for item in listed.split(b"\0") if item}
    return {name for name in wanted if name in found}


def named_paths(root: Path, command: Sequence[str]) -> list[str]:
    """The repository files and folders a command names, relative to `root`: a word that is a path
    inside the project (`./tools/x.sh`, `tools/server.py`, `--config=conf/a.json`) or a module run
    with `-m` that lives there (`python -m tools.server`)."""
    found: list[str] = []
    words = list(command)
    for at, word in enumerate(words):
        candidates = [word, word.partition("=")[2]] if word.startswith("-") else [word]
        if at > 0 and words[at - 1] == "-m" and _MODULE.fullmatch(word):
            module = Path(*word.split("."))
            candidates += [f"{module}.py", str(module)]
        for candidate in candidates:
            rel = _inside(root, candidate)
            if rel is not None and rel not in found:
                found.append(rel)
    return found


def _inside(root: Path, word: str) -> str | None:
    if not word or "\0" in word or (os.sep not in word and not word.endswith(SCRIPT_SUFFIXES)):
        return None
    try:
        path = Path(word).expanduser()
        path = (path if path.is_absolute() else root / path).resolve()
        rel = path.relative_to(root)
    except (OSError, RuntimeError, ValueError):
        return None
    return rel.as_posix() if rel.parts and path.exists() else None


def fingerprint(root: Path, command: Sequence[str]) -> dict[str, str]:
    """For each repository file a command names, a digest of what runs: the file alone at the
    project's top, else every file of its folder (a script's helpers and modules sit beside it).
    In a git repository the digest is of git's index entries there (what commits change); elsewhere,
    of the files' contents."""
    result: dict[str, str] = {}
    for rel in named_paths(root, command):
        path = root / rel
        scope = rel if path.parent == root or path.is_dir() else path.parent.relative_to(root).as_posix()
        if scope in result:
            continue
        result[scope] = _digest(root, scope)
    return result


def folder_digest(root: Path, setting: str) -> str:
    """A digest of what the folder a setting names holds (an embedding model's: `[search] model`),
    by the same rule as `fingerprint`: git's index entries inside the project's repository, else
    the contents; "missing" when there is no such folder."""
    path = Path(setting).expanduser()
    try:
        path = (path if path.is_absolute() else root / path).resolve()
        top = root.resolve()
    except (OSError, RuntimeError, ValueError):  # ValueError: a NUL in the setting
        return "unreadable"
    if not path.exists():
        return "missing"
    if path.is_relative_to(top):
        return _digest(top, path.relative_to(top).as_posix())
    return hashlib.sha256(_contents(path)).hexdigest()


def _digest(root: Path, rel: str) -> str:
    """git's index entries under `rel` where git tracks files there (what commits change), else the
    contents of the files (bounded)."""
    listed = _git(root, "ls-files", "-s", "-z", "--", rel) if in_work_tree(root) else None
    return hashlib.sha256(listed if listed else _contents(root / rel)).hexdigest()


def _contents(path: Path) -> bytes:
    """The files under `path` (or the file), names and contents, bounded (MOST_FILES, MOST_BYTES)."""
    digest = hashlib.sha256()
    files = (
        [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    )
    budget = MOST_BYTES
    for count, file in enumerate(files):
        digest.update(file.relative_to(path.parent).as_posix().encode() + b"\0")
        try:
            size = file.stat().st_size
            if count < MOST_FILES and size <= budget:
                digest.update(file.read_bytes())
                budget -= size
            else:
                digest.update(str(size).encode())
        except OSError:
            digest.update(b"unreadable")
    return digest.digest()
