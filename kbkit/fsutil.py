"""The two file rules every part shares: read a small config or text file safely, write one atomically.

Reading: kbkit.toml, kbkit.local.toml, .env.local, .kbignore, .gitignore, skills-lock.json and
every client config `kbkit sync` merges into go through `read_text_file`, so a folder, a FIFO, a
device, a dangling symlink or a file in another encoding is one clear error naming the file and
the fix, never a silent skip, a hang or a traceback.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from kbkit.errors import EnvironmentProblem, UnreadableFile

MAX_TEXT_FILE_BYTES = 4 * 1024 * 1024
"""Config files are small; anything larger is not what kbkit expects at that path."""

_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def read_text_file(path: Path, *, fix: str | None = None, limit: int = MAX_TEXT_FILE_BYTES) -> str | None:
    """The UTF-8 text of the regular file at `path` (symlinks followed), or None when nothing is there.

    Anything else at that path is refused with an error that names it and says what to do; `fix`
    adds the caller's own advice (e.g. "then rerun kbkit sync"). A UTF-8 byte order mark is kept
    (client files keep theirs byte for byte); callers that parse strip it. A FIFO is opened
    without blocking and refused, so a reader never waits on it.
    """
    shown = str(path)
    then = f"; {fix}" if fix else ""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if os.path.islink(path):
            target = os.readlink(path)
            raise UnreadableFile(
                shown,
                f"is a symbolic link to {target}, which does not exist",
                fix=f"point the link at an existing file or remove it{then}",
            ) from None
        return None
    except IsADirectoryError:  # some systems refuse to open a folder at all
        raise _not_a_file(shown, "a folder", then) from None
    except OSError as exc:
        raise _open_failed(shown, exc, then) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_a_file(shown, _kind(info.st_mode), then)
        if info.st_size > limit:
            raise UnreadableFile(
                shown,
                f"is {info.st_size:,} bytes; kbkit reads files of at most {limit:,} bytes here",
                fix=f"check that this is the file you meant{then}",
            )
        try:
            data = _read_all(fd, limit + 1)
        except OSError as exc:  # e.g. EISDIR on some systems, EIO
            raise _open_failed(shown, exc, then) from None
    finally:
        os.close(fd)
    return decode_utf8(data, shown, then)


def decode_utf8(data: bytes, shown: str, then: str = "") -> str:
    """`data` as UTF-8, or an error that says which encoding it looks like and how to convert it."""
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), None)
    if encoding is None and data.count(b"\x00") * 4 >= len(data) > 0:
        encoding = "UTF-16"  # no byte order mark, but every other byte is NUL (valid UTF-8, not text)
    if encoding is None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            problem = f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}: Latin-1?)"
        else:
            if "\x00" not in text:
                return text
            raise UnreadableFile(
                shown, "holds NUL bytes: it is not a text file", fix=f"save it as text{then}"
            )
    else:
        problem = f"is {encoding} text, not UTF-8"
    raise UnreadableFile(
        shown, problem, fix=f"save it as UTF-8, e.g. with `iconv -f {encoding or 'LATIN1'} -t UTF-8`{then}"
    )


def _read_all(fd: int, most: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < most:
        chunk = os.read(fd, min(1 << 20, most - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _not_a_file(shown: str, kind: str, then: str) -> UnreadableFile:
    return UnreadableFile(
        shown, f"is {kind}, not a file", fix=f"move it away and put a regular text file there{then}"
    )


def _open_failed(shown: str, exc: OSError, then: str) -> UnreadableFile | EnvironmentProblem:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return EnvironmentProblem(
            f"{shown} cannot be read (permission denied)",
            fix=f"make it readable by the user running kbkit{then}",
        )
    if exc.errno == errno.ELOOP:
        return UnreadableFile(shown, "is a symbolic link loop", fix=f"point the link at a real file{then}")
    if exc.errno == errno.ENOTDIR:
        return UnreadableFile(
            shown, "cannot exist: a folder on its path is a file", fix=f"check the folders on that path{then}"
        )
    if exc.errno == errno.ENXIO:  # a socket, or a FIFO on some systems
        return _not_a_file(shown, "a socket or a pipe", then)
    if exc.errno == errno.EISDIR:
        return _not_a_file(shown, "a folder", then)
    return EnvironmentProblem(f"{shown} cannot be read ({exc.strerror or exc})", fix=f"check the file{then}")


def private_folder(path: Path) -> Path:
    """Make `path` (and missing parents) as a folder only its owner may enter: `.kbkit/` holds the
    index of every document, the tokens file and what sync wrote."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def atomic_write_text(path: Path, text: str, *, mode: int = 0o644, through_link: bool = False) -> bool:
    """Write `text` to `path` atomically, keeping an existing file's mode (`mode` for a new one).

    Returns False (and touches nothing) when the file already holds exactly this text, so a
    second run leaves bytes and mtimes alone. `through_link`: when `path` is a symbolic link, the
    file it points at is replaced and the link kept (a member's `.env.local` kept elsewhere).
    """
    data = text.encode("utf-8")
    if through_link and path.is_symlink():
        path = path.resolve()
    new_mode = mode
    try:
        info = path.stat()
    except FileNotFoundError:
        mode = new_mode
    else:
        if not stat.S_ISREG(info.st_mode):  # reading a FIFO would block; a folder cannot be replaced
            raise _not_a_file(str(path), _kind(info.st_mode), "")
        if info.st_size == len(data) and path.read_bytes() == data:
            return False
        mode = stat.S_IMODE(info.st_mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
