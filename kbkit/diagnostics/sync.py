"""The agents' config files: fresh, ignored by git, and running a kbkit that still exists."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbkit.diagnostics.base import Context, Finding, ok
from kbkit.errors import KbkitError
from kbkit.fsutil import read_text_file

if TYPE_CHECKING:
    from kbkit.catalog.clients import Client
    from kbkit.config import Settings


def check_sync(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    from kbkit.sync.planner import sync

    try:
        report = sync(ctx.settings, mode="check")
    except KbkitError as exc:
        return [Finding("sync", "fail", str(exc), "fix the file it names, then run kbkit sync")]
    steps = [Finding("sync", "ok", f"step in the agent: {step}") for step in report.caveats]
    if report.problems:  # the skills' own problems are the skills check's
        return [
            Finding("sync", "warn", problem, "run kbkit sync (kbkit sync --force for hand edits)")
            for problem in report.problems
        ] + steps
    from kbkit.sync.gitignore import NOT_A_WORK_TREE, in_git_work_tree

    grants = sum(1 for outcome in report.outcomes if outcome.what)
    servers = sum(1 for outcome in report.outcomes if outcome.server and not outcome.what)
    configs = len(report.outcomes) - grants - servers
    counted = [f"{configs} client config{'s' * (configs != 1)}"]
    counted += [f"{servers} team server entr{'ies' if servers != 1 else 'y'}"] if servers else []
    counted += [f"{grants} tool pre-approval{'s' * (grants != 1)}"] if grants else []
    fresh = ", ".join(counted[:-1]) + " and " + counted[-1] if len(counted) > 1 else counted[0]
    if not in_git_work_tree(ctx.settings.root):  # nothing to ask git: say so, never "ignored"
        return ok("sync", f"{fresh} fresh; {NOT_A_WORK_TREE}") + steps
    return ok("sync", f"{fresh} fresh and ignored by git") + steps


def _entries(settings: Settings) -> list[tuple[Client, Any]]:
    """Each selected client's `kb` entry as its file holds it now (unreadable files are skipped:
    the sync check reports them)."""
    from kbkit.catalog.clients import CLIENTS
    from kbkit.sync.merge import ConfigText

    found = []
    for name in settings.sync_clients:
        client = CLIENTS[name]
        try:
            text = read_text_file(settings.root / client.path)
            if text is None:
                continue
            entry = ConfigText(client.format, text, client.path).get((*client.root_key, settings.server_name))
        except KbkitError:
            continue
        found.append((client, entry))
    return found


def check_client_commands(ctx: Context) -> list[Finding]:
    """The kbkit command each client config runs still exists: a moved or deleted virtual
    environment is the most common break after a clone."""
    if ctx.settings is None:
        return []
    findings = []
    for client, entry in _entries(ctx.settings):
        command = entry.get("command") if isinstance(entry, dict) else None
        if isinstance(command, list):
            command = command[0] if command else None
        if isinstance(command, str) and not (Path(command).is_file() and os.access(command, os.X_OK)):
            findings.append(
                Finding(
                    "client-commands",
                    "fail",
                    f"{client.path} runs {command}, which no longer exists",
                    "reinstall kbkit in this checkout, then run kbkit sync",
                )
            )
    return findings or ok("client-commands", "every configured kbkit command exists")


def check_client_entries(ctx: Context) -> list[Finding]:
    """Each entry, and the project's agent files, against what the agents' own CLIs refuse or
    ignore (kbkit/catalog/accepts.py): a file can parse and still be skipped by its agent."""
    if ctx.settings is None:
        return []
    from kbkit.catalog.accepts import ignored_files, refusals

    findings = []
    for client, entry in _entries(ctx.settings):
        for rule in refusals(client.name, entry) if isinstance(entry, dict) else ():
            findings.append(
                Finding("client-entries", "fail", f"{client.path}: {rule.agent} {rule.what}", rule.fix)
            )
    for ignored in ignored_files(list(ctx.settings.sync_clients)):
        if (ctx.settings.root / ignored.path).exists():
            what = f"{ignored.path}: {ignored.agent} {ignored.what}"
            findings.append(Finding("client-entries", "warn", what, ignored.fix))
    unique = list({finding.finding: finding for finding in findings}.values())  # .mcp.json: two clients
    return unique or ok("client-entries", "every entry has a shape its agent accepts")
