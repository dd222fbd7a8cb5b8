"""Skill folders on disk, handled like kb documents (docs/adr/0003).

A skill comes from a source nobody here reviewed line by line, and is installed into folders
other tools read. So: no symbolic link is ever followed (a link inside a skill is left out and
said; a linked folder on the way to a target is refused), only regular files are read, each
from its open handle, and every write, move or delete happens under the project root through
open folder handles, so a link swapped in on the way is refused instead of followed.

What is read is what is hashed and what is installed: `read_tree` returns the files' bytes once,
and both the hash and the install use those bytes.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbkit.errors import DocumentRefused, SkillError
from kbkit.kb.documents import FILE_SIZE_CAP
from kbkit.kb.documents import _read_all as read_capped  # the kb guard's capped read
from kbkit.skills.collation import sorted_paths

SKIPPED_DIRS = frozenset({".git", "node_modules"})
"""Folders the shared hash never enters, at any depth; kbkit does not install them either."""
MAX_FILES = 5000
MAX_TOTAL_BYTES = 200 * 1024 * 1024

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Tree:
    """A skill folder's regular files: relative '/'-separated path -> (bytes, permission bits)."""

    files: dict[str, tuple[bytes, int]]
    skipped: tuple[str, ...] = field(default=())
    """What was left out and why (links, devices, sockets): never installed, never hashed."""

    def hash(self) -> str:
        """The shared folder hash (docs/adr/0014): SHA-256 over path then bytes, in ICU root order."""
        digest = hashlib.sha256()
        for rel in sorted_paths(self.files):
            digest.update(rel.encode("utf-8"))
            digest.update(self.files[rel][0])
        return digest.hexdigest()

    def git_tree_hash(self) -> str:
        """The git tree id these files would have (`git rev-parse HEAD:<folder>`): what `npx skills
        add -g` records for a GitHub skill, and what GitHub's tree API reports for it."""
        nested: dict[str, Any] = {}
        for rel, item in self.files.items():
            *dirs, leaf = rel.split("/")
            node = nested
            for part in dirs:
                node = node.setdefault(part, {})
            node[leaf] = item
        return _git_tree(nested).hex()

    def matches(self, recorded: str) -> bool:
        """Whether these files are what a lock recorded: a content hash, or (40 digits) a git tree id."""
        if len(recorded) == 40:
            return self.git_tree_hash() == recorded.lower()
        return self.hash() == recorded

    def text(self, rel: str) -> str | None:
        item = self.files.get(rel)
        if item is None:
            return None
        try:
            return item[0].decode("utf-8")
        except UnicodeDecodeError:
            raise SkillError(f"{rel}: not UTF-8 text") from None


def _git_tree(node: dict[str, Any]) -> bytes:
    """git's tree object id: entries sorted by name bytes (a folder as 'name/'), then SHA-1."""
    entries = []
    for name, item in node.items():
        raw = name.encode("utf-8")
        if isinstance(item, dict):
            entries.append((raw + b"/", b"40000 " + raw + b"\0" + _git_tree(item)))
        else:
            data, mode = item
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).digest()
            kind = b"100755 " if mode & 0o111 else b"100644 "
            entries.append((raw, kind + raw + b"\0" + blob))
    body = b"".join(entry for _, entry in sorted(entries))
    return hashlib.sha1(b"tree %d\0" % len(body) + body).digest()


def read_tree(folder: Path, *, root: Path | None = None) -> Tree:
    """Every regular file under `folder`; with `root`, no component from `root` down may be a link."""
    fd = _open_folder(folder, root)
    files: dict[str, tuple[bytes, int]] = {}
    skipped: list[str] = []
    try:
        _collect(fd, "", files, skipped, [0])
    finally:
        os.close(fd)
    return Tree(files, tuple(skipped))


def folder_hash(folder: Path, *, root: Path | None = None) -> str:
    return read_tree(folder, root=root).hash()


def _open_folder(folder: Path, root: Path | None) -> int:
    folder = Path(folder)
    if root is not None:
        try:
            rel = folder.relative_to(root)
        except ValueError:
            rel = None
        if rel is not None:
            return open_dir(root, rel.as_posix())
    try:
        return os.open(folder, _DIR)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and folder.is_symlink():
            raise SkillError(f"{folder} is a symbolic link; kbkit does not follow links") from None
        raise SkillError(f"{folder} is not a readable folder ({exc.strerror})") from None


def _collect(
    fd: int, prefix: str, files: dict[str, tuple[bytes, int]], skipped: list[str], total: list[int]
) -> None:
    with os.scandir(fd) as entries:
        names = sorted(entry.name for entry in entries)
    for name in names:
        rel = f"{prefix}{name}"
        info = os.lstat(name, dir_fd=fd)
        if stat.S_ISLNK(info.st_mode):
            skipped.append(f"{rel}: a symbolic link (not followed, not installed)")
        elif stat.S_ISDIR(info.st_mode):
            if name in SKIPPED_DIRS:
                continue
            inner = _enter(fd, name, rel)
            try:
                _collect(inner, rel + "/", files, skipped, total)
            finally:
                os.close(inner)
        elif stat.S_ISREG(info.st_mode):
            data, mode = _read_file(fd, name, rel)
            total[0] += len(data)
            if len(files) >= MAX_FILES or total[0] > MAX_TOTAL_BYTES:
                raise SkillError(
                    f"the skill holds more than {MAX_FILES} files or {MAX_TOTAL_BYTES >> 20} MiB; "
                    "kbkit installs skills up to that size"
                )
            files[rel] = (data, mode)
        else:
            skipped.append(f"{rel}: not a regular file (not installed)")


def _read_file(dir_fd: int, name: str, rel: str) -> tuple[bytes, int]:
    try:
        fd = os.open(name, _FILE, dir_fd=dir_fd)
    except OSError as exc:
        raise SkillError(f"{rel} cannot be read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SkillError(f"{rel} changed into something that is not a regular file while being read")
        if info.st_size > FILE_SIZE_CAP:
            raise SkillError(f"{rel} is {info.st_size} bytes, over the {FILE_SIZE_CAP >> 20} MiB cap")
        try:
            data = read_capped(fd, info.st_size)
        except DocumentRefused as exc:
            raise SkillError(f"{rel}: {exc}") from None
        return data, 0o755 if info.st_mode & 0o111 else 0o644
    finally:
        os.close(fd)


def _enter(dir_fd: int, name: str, shown: str, *, create: bool = False) -> int:
    """Open the folder `name` under `dir_fd` without following a link (optionally creating it)."""
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise SkillError(f"{shown} does not exist") from None
        with suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=dir_fd)
        return _enter(dir_fd, name, shown)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            if stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode):
                raise SkillError(
                    f"{shown} is a symbolic link; kbkit writes skills only inside the project and does "
                    "not follow links: replace the link by a folder, or drop that agent from [skills] agents"
                ) from None
            raise SkillError(f"{shown} is not a folder") from None
        raise SkillError(f"{shown} cannot be opened ({exc.strerror})") from None


def open_dir(root: Path, rel: str, *, create: bool = False) -> int:
    """A handle on `root/rel`, reached one component at a time with no link followed."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    parts = [p for p in rel.split("/") if p and p != "."]
    if ".." in parts:
        os.close(fd)
        raise SkillError(f"{rel} leaves the project folder")
    try:
        for index, part in enumerate(parts):
            inner = _enter(fd, part, "/".join(parts[: index + 1]), create=create)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def folder(root: Path, rel: str, *, create: bool = False) -> Iterator[int]:
    fd = open_dir(root, rel, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def kind(dir_fd: int, name: str) -> str:
    """missing | link | dir | file | other, for the entry itself (a link is not followed)."""
    try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
    except FileNotFoundError:
        return "missing"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def names(root: Path, rel: str) -> list[str]:
    """The entries of `root/rel` (none when it does not exist)."""
    try:
        with folder(root, rel) as fd, os.scandir(fd) as entries:
            return sorted(entry.name for entry in entries)
    except SkillError:
        return []


def write_tree(root: Path, parent: str, name: str, tree: Tree) -> None:
    """Replace `root/parent/name` by exactly `tree`: staged beside it, then renamed into place."""
    with folder(root, parent, create=True) as pfd:
        stage = f".{name}.kbkit-{secrets.token_hex(4)}"
        os.mkdir(stage, 0o755, dir_fd=pfd)
        try:
            sfd = os.open(stage, _DIR, dir_fd=pfd)
            try:
                for rel, (data, mode) in tree.files.items():
                    _write_file(sfd, rel, data, mode)
            finally:
                os.close(sfd)
            remove(pfd, name)
            os.rename(stage, name, src_dir_fd=pfd, dst_dir_fd=pfd)
        except BaseException:
            remove(pfd, stage)
            raise


def _write_file(base_fd: int, rel: str, data: bytes, mode: int) -> None:
    *dirs, leaf = rel.split("/")
    fd = os.dup(base_fd)
    try:
        for index, part in enumerate(dirs):
            inner = _enter(fd, part, "/".join(dirs[: index + 1]), create=True)
            os.close(fd)
            fd = inner
        out = os.open(leaf, _NEW_FILE, mode, dir_fd=fd)
        with os.fdopen(out, "wb") as handle:
            handle.write(data)
        os.chmod(leaf, mode, dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)


def remove(dir_fd: int, name: str) -> bool:
    """Delete the entry `name` under `dir_fd` (a link itself, never its target). True if it existed."""
    what = kind(dir_fd, name)
    if what == "missing":
        return False
    if what == "dir":
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)
    return True


def link(dir_fd: int, name: str, target: str) -> None:
    """Make `name` a relative symbolic link to `target`, replacing what was there."""
    remove(dir_fd, name)
    os.symlink(target, name, target_is_directory=True, dir_fd=dir_fd)


def read_link(dir_fd: int, name: str) -> str | None:
    return os.readlink(name, dir_fd=dir_fd) if kind(dir_fd, name) == "link" else None


def move(root: Path, parent: str, name: str, to_parent: str) -> str:
    """Move `root/parent/name` into `root/to_parent/` (kept whole: a backup, not a copy)."""
    with folder(root, parent) as src, folder(root, to_parent, create=True) as dst:
        os.rename(name, name, src_dir_fd=src, dst_dir_fd=dst)
    return f"{to_parent}/{name}"


def read_one(folder_path: Path, name: str) -> bytes:
    """One regular file of a folder, not following a link (SkillError when it is missing or not one)."""
    fd = _open_folder(folder_path, None)
    try:
        what = kind(fd, name)
        if what == "missing":
            raise SkillError(f"{folder_path}: no {name}")
        if what != "file":
            raise SkillError(f"{folder_path}/{name} is not a regular file; kbkit does not follow links")
        return _read_file(fd, name, f"{folder_path}/{name}")[0]
    finally:
        os.close(fd)
