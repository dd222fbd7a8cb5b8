"""What waits for the member's `kbkit trust`, shown as a review (what changed, part by part) and as
the doctor's and the boot lines' findings; and the member's own files kept private.

Every part comes from the one rule (kbkit/config/trust.py; the lock's sources from
kbkit/skills/trust.py); this module only gathers them for people.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from kbkit.config import ENV_FILE, LOCAL_CONFIG_FILE, Settings
from kbkit.config import trust as rule
from kbkit.diagnostics.base import Context, Finding, ok
from kbkit.errors import ConfigError
from kbkit.skills import trust as skills_trust

CHECK = "trust"
AUTH_KEY = "server.http"


@dataclass(frozen=True)
class Review:
    """One part that waits: how people know it, and what changed since it was trusted."""

    key: str
    heading: str
    lines: tuple[str, ...]
    part: rule.Part | None = None
    """None for the auth settings (kept as their own record: kbkit/config/trust.py)."""


def review(settings: Settings) -> list[Review]:
    """Every part of `settings` (read as written) that waits for this member's trust."""
    records = rule.recorded(settings.root)
    found = []
    parts = list(rule.config_parts(settings))
    lock = skills_trust.lock_part(settings.root)
    if lock is not None:
        parts.append(lock)
    for part in parts:
        record = records.get(part.key)
        pending = rule.judge(part, record)
        if pending is None:
            continue
        state = "is new" if pending.new else "changed since you trusted it"
        heading = f"{part.title} ({part.source}) {state}:"
        found.append(Review(part.key, heading, tuple(rule.describe(part, record)), part))
    auth = rule.auth_trust(settings)
    if auth.widened:
        heading = f"[server.http] ({', '.join(sorted(settings.tracked_files))}) widens who may call:"
        found.append(Review(AUTH_KEY, heading, tuple(f"  + {phrase}" for phrase in auth.widened)))
    return found


def allow(settings: Settings, reviews: Iterable[Review], keys: Iterable[str] = ()) -> list[Review]:
    """Record the reviewed parts (those named in `keys`, or all) as trusted; the ones recorded.
    A key that names no waiting part is refused with the list of those that wait."""
    reviews = list(reviews)
    wanted = list(keys)
    known = {item.key for item in reviews}
    unknown = [key for key in wanted if key not in known]
    if unknown:
        waiting = ", ".join(sorted(known)) or "nothing"
        raise ConfigError(f"{', '.join(unknown)} does not wait for trust here; waiting: {waiting}")
    chosen = [item for item in reviews if not wanted or item.key in wanted]
    rule.allow(settings.root, [item.part for item in chosen if item.part is not None])
    if any(item.key == AUTH_KEY for item in chosen):
        rule.trust_auth(settings)
    return chosen


def check_trust(ctx: Context) -> list[Finding]:
    """Each part that waits, a kbkit.local.toml that git tracks, and `.env.local` open to others."""
    settings = ctx.settings
    if settings is None:
        return []
    waiting = [*settings.pending, *filter(None, [skills_trust.waiting(settings.root)[0]])]
    findings = [Finding(CHECK, "warn", f"{item.what()}; {item.meanwhile}", item.review) for item in waiting]
    if LOCAL_CONFIG_FILE in settings.tracked_files:
        findings.append(
            Finding(
                CHECK,
                "warn",
                f"git tracks {LOCAL_CONFIG_FILE}: it is team input (anyone who can commit changes it), so "
                "what it sets waits for your trust like kbkit.toml",
                f"if it is yours: `git rm --cached {LOCAL_CONFIG_FILE}` and commit (it stays on disk)",
            )
        )
    findings += _private(settings)
    return findings or ok(CHECK, "everything the repository asks of this machine is trusted, or your own")


def _private(settings: Settings) -> list[Finding]:
    path = settings.root / ENV_FILE
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return []
    if stat.S_IMODE(mode) & 0o077:
        return [
            Finding(
                CHECK,
                "warn",
                f"{ENV_FILE} holds secrets and is readable by other users (mode {stat.S_IMODE(mode):o})",
                f"chmod 600 {path}",
            )
        ]
    return []
