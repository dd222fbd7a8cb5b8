"""What `kbkit trust` records once a member reviewed everything their project asks of the machine."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kbkit.config import load_settings
from kbkit.config import trust as rule
from kbkit.skills.trust import lock_part


def trust_project(root: Path, environ: Mapping[str, str] | None = None) -> None:
    """Trust every part of the project at `root`, in the state folder `environ` names (HOME or
    XDG_STATE_HOME; default: this process's)."""
    settings = load_settings(root, as_written=True)
    parts = rule.config_parts(settings)
    lock = lock_part(root)
    rule.allow(root, [*parts, *([lock] if lock is not None else [])], environ)
    rule.trust_auth(settings, environ)
