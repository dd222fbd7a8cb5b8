"""The team's skills: every locked skill installed and unchanged."""

from __future__ import annotations

from kbkit.diagnostics.base import Context, Finding, ok
from kbkit.errors import KbkitError


def check_skills(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    import os

    from kbkit.skills.install import check
    from kbkit.skills.lock import LOCK_FILE

    if not os.path.lexists(ctx.settings.root / LOCK_FILE):  # nothing locked: nothing was verified
        return ok("skills", f"no {LOCK_FILE}: no team skills to check (kbkit skills add SOURCE starts one)")
    try:
        report = check(ctx.settings)
    except KbkitError as exc:
        return [Finding("skills", "fail", str(exc), "restore skills-lock.json from git")]
    findings = [
        Finding("skills", "fail", p, "run kbkit skills install (or kbkit skills update NAME)")
        for p in report.problems
    ]
    findings += [Finding("skills", "warn", w) for w in report.warnings]
    return findings or ok("skills", "every locked skill installed and verified")
