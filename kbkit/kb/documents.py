"""Guarded reads: the one guard sequence every read of a document goes through.

There is exactly one way to read a document's bytes, `read_guarded()`, and one way to read its
text, `load_document()` (which calls it). `get_document`, `resources/read` and the indexer all
use them, so a guard added here holds everywhere at once. The sequence:

1. refuse empty, absolute, NUL-bearing, `..`-bearing (or otherwise non-canonical) paths;
2. walk the path from the kb root one component at a time with `O_NOFOLLOW` on each folder
   handle: a symlinked component anywhere is refused, so the file cannot resolve outside the root;
3. refuse extensions the active parser registry does not cover;
4. open the file itself with `O_NOFOLLOW` relative to its parent's handle and check the *open
   handle* (fstat): a regular file, `st_nlink == 1` (hard links refused), size under the cap;
   read from that handle only, so a swap after the checks changes nothing;
5. extract the text; text over the cap is cut and the cut is reported (`truncated`), never
   presented as the whole document.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path

from kbkit.errors import DocumentRefused
from kbkit.kb import reads
from kbkit.kb.formats.registry import Registry
from kbkit.kb.sections import Heading, Layout

FILE_SIZE_CAP = 50 * 1024 * 1024
"""Files larger than this are neither indexed nor read."""
TEXT_CAP = 1024 * 1024
"""At most this many bytes (UTF-8) of a document's text go out in one reply."""


def cut_text(text: str, cap: int = TEXT_CAP) -> tuple[str, bool]:
    """`text` cut to at most `cap` UTF-8 bytes on a character boundary, and whether it was cut:
    the one cut every reply applies (documents, resources, skill files)."""
    if len(text) <= cap // 4:  # fewer chars than cap/4 cannot exceed it
        return text, False
    encoded = text.encode("utf-8")
    if len(encoded) <= cap:
        return text, False
    return encoded[:cap].decode("utf-8", "ignore"), True


def truncation_notice(what: str, total_bytes: int, shown: str, rest: str) -> str:
    """The line a cut text ends with, counted in bytes (the cap's unit), saying how to read the rest."""
    return (
        f"\n\n[kbkit: TRUNCATED. {what} is {total_bytes} bytes; only the first "
        f"{len(shown.encode('utf-8'))} bytes are shown. {rest}]"
    )


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class RawFile:
    path: str
    data: bytes
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Document:
    path: str
    media_type: str
    text: str
    """The text from `offset` (in characters) on: at most TEXT_CAP bytes of it, or, for a read
    with a token budget, the section starting there within the budget (reads.bounded)."""
    truncated: bool
    """True when more text follows what `text` holds (at `next_offset`)."""
    size: int
    """The file's size in bytes."""
    text_size: int
    """The whole extracted text's size in bytes (UTF-8)."""
    title: str | None
    headings: tuple[str, ...] = ()
    description: str | None = None
    tags: tuple[str, ...] = ()
    offset: int = 0
    next_offset: int | None = None
    outline: tuple[Heading, ...] = ()
    """Where each section of the whole text starts (formats.base.ParsedText.outline)."""
    section: str = ""
    """The heading path at `offset` ("" before the first heading)."""
    stop: reads.Stop | None = None
    """Why the text ends where it does, for a read with a token budget (None without one)."""


def check_path(path: str) -> list[str]:
    """Step 1: the path as written. Returns its components."""
    if not isinstance(path, str) or not path.strip():
        raise DocumentRefused("invalid-path", "the path is empty; give a path relative to the kb folder")
    if "\x00" in path:
        raise DocumentRefused("invalid-path", "the path contains a NUL byte")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise DocumentRefused("invalid-path", "the path is not valid Unicode (a lone surrogate)") from None
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        raise DocumentRefused("invalid-path", f"{path!r} is absolute; give a path relative to the kb folder")
    parts = path.split("/")
    if ".." in parts:
        raise DocumentRefused("invalid-path", f"{path!r} contains '..'; paths may not leave the kb folder")
    if any(part in ("", ".") for part in parts):
        raise DocumentRefused(
            "invalid-path",
            f"{path!r} is not in canonical form (empty or '.' parts); use the path search returns",
        )
    return parts


def read_guarded(kb_root: Path, path: str, registry: Registry) -> RawFile:
    """Steps 1 to 4: the bytes of one regular file under `kb_root`, or DocumentRefused."""
    parts = check_path(path)
    try:
        dir_fd = os.open(kb_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise DocumentRefused("not-found", f"the kb folder cannot be opened ({exc.strerror})") from None
    try:
        for index, part in enumerate(parts[:-1]):
            inner = _enter(dir_fd, part, "/".join(parts[: index + 1]))
            os.close(dir_fd)
            dir_fd = inner
        name = parts[-1]
        _refuse_symlink(dir_fd, name, path)
        if not registry.covers(path):
            raise DocumentRefused(
                "unsupported-type",
                f"{path!r}: kbkit serves only {', '.join('.' + e for e in registry.extensions)} files",
            )
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            raise _open_error(exc, path) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise DocumentRefused("not-a-file", f"{path!r} is not a regular file")
            if info.st_nlink != 1:
                raise DocumentRefused(
                    "hard-link", f"{path!r} has {info.st_nlink} hard links; kbkit refuses hard links"
                )
            if info.st_size > FILE_SIZE_CAP:
                raise DocumentRefused(
                    "too-large", f"{path!r} is {info.st_size} bytes, over the {FILE_SIZE_CAP} byte cap"
                )
            data = _read_all(fd, info.st_size)
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)
    return RawFile(path=path, data=data, size=len(data), mtime_ns=info.st_mtime_ns)


def load_document(
    kb_root: Path,
    path: str,
    registry: Registry,
    *,
    offset: int = 0,
    text_cap: int | None = TEXT_CAP,
    max_tokens: int | None = None,
) -> Document:
    """Steps 1 to 5: the text of one document, cut at `text_cap` bytes with the cut reported, and
    with `max_tokens`, the section at `offset` within that many tokens (reads.bounded)."""
    raw = read_guarded(kb_root, path, registry)
    return extract(raw, registry, offset=offset, text_cap=text_cap, max_tokens=max_tokens)


def extract(
    raw: RawFile,
    registry: Registry,
    *,
    offset: int = 0,
    text_cap: int | None = TEXT_CAP,
    max_tokens: int | None = None,
) -> Document:
    """Step 5 on bytes that came through `read_guarded`."""
    parser = registry.for_path(raw.path)
    if parser is None:  # read_guarded already refused these; kept for callers holding stale RawFiles
        raise DocumentRefused("unsupported-type", f"{raw.path!r} has no active parser")
    parsed = parser.extract(raw.data)
    full = parsed.body
    encoded = full.encode("utf-8")
    if offset < 0 or offset > len(full):
        raise DocumentRefused("invalid-offset", f"offset {offset} is outside the text (0 to {len(full)})")
    end, section, stop = len(full), "", None
    if max_tokens is not None:
        read = reads.bounded(full, Layout(len(full), parsed.outline), offset, max_tokens)
        end, section, stop = read.end, read.section, read.stop
    text = full[offset:end] if offset or end < len(full) else full
    truncated = end < len(full)
    if text_cap is not None:
        text, cut = cut_text(text, text_cap)
        truncated = truncated or cut
    next_offset = offset + len(text) if truncated else None
    return Document(
        path=raw.path,
        media_type=parser.media_type,
        text=text,
        truncated=truncated,
        size=raw.size,
        text_size=len(encoded),
        title=parsed.title,
        headings=tuple(parsed.headings),
        description=parsed.description,
        tags=parsed.tags,
        offset=offset,
        next_offset=next_offset,
        outline=parsed.outline,
        section=section,
        stop=stop,
    )


def _enter(dir_fd: int, part: str, shown: str) -> int:
    """Open the folder `part` under `dir_fd` without following a symlink (the caller closes `dir_fd`)."""
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            _refuse_symlink(dir_fd, part, shown)
            raise DocumentRefused("not-found", f"{shown!r} is not a folder") from None
        raise _open_error(exc, shown) from None


def _refuse_symlink(dir_fd: int, name: str, shown: str) -> None:
    try:
        info = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        raise DocumentRefused("not-found", f"{shown!r} does not exist under the kb folder") from None
    except OSError as exc:
        raise _open_error(exc, shown) from None
    if stat.S_ISLNK(info.st_mode):
        raise DocumentRefused("symlink", f"{shown!r} is a symbolic link; kbkit does not follow links")


def _open_error(exc: OSError, shown: str) -> DocumentRefused:
    if exc.errno == errno.ENOENT:
        return DocumentRefused("not-found", f"{shown!r} does not exist under the kb folder")
    if exc.errno == errno.ELOOP:
        return DocumentRefused("symlink", f"{shown!r} is a symbolic link; kbkit does not follow links")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return DocumentRefused("permission", f"{shown!r} is not readable by this user")
    return DocumentRefused("unreadable", f"{shown!r} cannot be opened ({exc.strerror})")


def _read_all(fd: int, size_hint: int) -> bytes:
    chunks = []
    remaining = FILE_SIZE_CAP + 1
    while remaining > 0:
        chunk = os.read(fd, min(max(size_hint, 65536), remaining))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    data = b"".join(chunks)
    if len(data) > FILE_SIZE_CAP:
        raise DocumentRefused(
            "too-large", f"the file grew past the {FILE_SIZE_CAP} byte cap while being read"
        )
    return data


@dataclass(frozen=True)
class IndexedDocument:
    path: str
    title: str
    ext: str
    size: int
    mtime_ns: int
    sha256: str


_SERVABLE_COLUMNS = "path, title, ext, size, mtime_ns, sha256 FROM documents"


def servable_documents(
    conn: sqlite3.Connection,
    registry: Registry,
    *,
    folder: str = "",
    after: str | None = None,
    limit: int | None = None,
) -> list[IndexedDocument]:
    """The one query behind resources/list, kb://topic and every resources/read.

    Indexed documents whose extension the active registry covers (narrowing `[parsers] enabled`
    hides rows without a reindex), optionally under `folder`, in path order after `after`.
    """
    extensions = registry.extensions
    sql = f"SELECT {_SERVABLE_COLUMNS} WHERE ext IN ({','.join('?' * len(extensions))})"
    params: list[object] = list(extensions)
    if folder:
        sql += " AND substr(path, 1, ?) = ?"
        params += [len(folder) + 1, folder + "/"]
    if after is not None:
        sql += " AND path > ?"
        params.append(after)
    sql += " ORDER BY path"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [IndexedDocument(*row) for row in conn.execute(sql, params)]


def servable_document(conn: sqlite3.Connection, registry: Registry, path: str) -> IndexedDocument | None:
    """The row for `path` if (and only if) `servable_documents` would list it."""
    row = conn.execute(f"SELECT {_SERVABLE_COLUMNS} WHERE path = ?", (path,)).fetchone()
    if row is None or row[2] not in registry.extensions:
        return None
    return IndexedDocument(*row)
