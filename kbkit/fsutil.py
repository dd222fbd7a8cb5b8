"""Safe file writes: a temporary file beside the target, then one rename."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> bool:
    """Write `text` to `path` atomically, keeping an existing file's mode.

    Returns False (and touches nothing) when the file already holds exactly this text, so a
    second run leaves bytes and mtimes alone.
    """
    data = text.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return False
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
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
