"""Adopting a repository that commits a client file (`.mcp.json`, `.zed/settings.json`, ...).

kbkit keeps every file it writes out of git: they hold absolute paths of one machine. A file git
tracks cannot be hidden by `.gitignore`, so `kbkit sync` stops and says exactly what `kbkit sync
--adopt` would do; only with the flag (or a yes at the terminal) does it take the file out of
the index, `git rm --cached`, keeping the file and everything else in it (docs/adr/0019).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from kbkit.errors import AdoptionNeeded, SyncRefused
from kbkit.sync.gitignore import not_ignored


def adoption_plan(paths: list[str]) -> str:
    named = ", ".join(paths)
    return (
        f"git tracks {named}, and kbkit keeps the agent configs it writes out of git (they hold this "
        f"machine's absolute paths). `kbkit sync --adopt` will: (1) run `git rm --cached -- "
        f"{' '.join(paths)}`, so git stops tracking {named}; nothing is deleted from disk; (2) add "
        f"{named} to the kbkit block of .gitignore; (3) add the kb entry and keep every other server "
        f"and setting there as it is. Nothing is committed: commit the removal and .gitignore "
        f"yourself. After they pull, git removes the committed copy from teammates' checkouts: each "
        f"runs kbkit sync, and puts back any other server they need in their own copy"
    )


def take_out_of_git(
    root: Path, exposed: list[str], *, adopt: bool, confirm: Callable[[str], bool] | None = None
) -> list[str]:
    """The outputs git does not ignore: refused when a rule un-ignores them, a plan when git
    tracks them, or (with `adopt`, or a yes from `confirm`, which is shown the plan) untracked
    with `git rm --cached`. Returns what was untracked."""
    if not exposed:
        return []
    by_rule = not_ignored(root, exposed, tracked_too=True)
    if by_rule:
        raise SyncRefused(
            f"git does not ignore {', '.join(by_rule)}: a '!' rule in .gitignore (or in "
            ".git/info/exclude) un-ignores it; outputs stay out of git: drop the rule, then rerun kbkit sync"
        )
    if not (adopt or (confirm is not None and confirm(adoption_plan(exposed)))):
        raise AdoptionNeeded(adoption_plan(exposed), exposed)
    result = subprocess.run(
        ["git", "-C", str(root), "rm", "--cached", "--quiet", "--", *exposed],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["git rm failed"])[-1]
        raise SyncRefused(f"git rm --cached {' '.join(exposed)} failed ({reason}); nothing was written")
    return exposed
