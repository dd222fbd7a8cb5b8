"""What kbkit says about itself on stderr at every start: what was indexed, what is on, what is off
and why. Never a secret's value: only variable names.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kbkit import __version__
from kbkit.config import Settings
from kbkit.diagnostics.base import kb_folder
from kbkit.kb.fields import describe_cap
from kbkit.kb.indexer import ScanReport
from kbkit.kb.store import Peek

if TYPE_CHECKING:
    from kbkit.server.memory import MemoryProxy

PREFIX = "[kbkit]"


def describe_scan(report: ScanReport) -> str:
    line = f"index: {report.documents} documents ({report.changes()}) in {report.seconds:.2f} s"
    parts = [line, report.skipped_summary()]
    if report.partial:
        parts.append(f"{report.partial} indexed in part ({describe_cap()}; --skipped lists them)")
    return "; ".join(part for part in parts if part)


def describe_excluded(report: ScanReport) -> str:
    """What the ignore rules kept out of the index, counted (they bound indexing, not reading)."""
    folders, files = report.excluded["folders"], report.excluded["files"]
    themes = report.excluded["theme folders"]
    theme_part = (
        f"; {themes} site theme folder{'s' * (themes != 1)} (mkdocs.yml's custom_dir, Hugo's layouts/: "
        "templates, "
        "not pages) not indexed either"
        if themes
        else ""
    )
    unlisted = report.excluded["unlisted chapters"]
    if unlisted:
        theme_part += (
            f"; {unlisted} Markdown file{'s' * (unlisted != 1)} the book's SUMMARY.md does not list "
            "(mdBook builds no page of them) not indexed either"
        )
    if not folders and not files:
        return f"excluded by .kbignore and [kb] exclude_dirs: nothing{theme_part}"
    counted = [f"{folders} folder{'s' * (folders != 1)}"] if folders else []
    counted += [f"{files} file{'s' * (files != 1)}"] if files else []
    return (
        f"excluded by .kbignore and [kb] exclude_dirs: {' and '.join(counted)} "
        f"(not searched; get_document still reads them){theme_part}"
    )


def describe_held(peek: Peek) -> str:
    """What the index holds as a server starts, before it is brought up to date."""
    if peek.documents is not None:
        return f"{peek.documents:,} document{'' if peek.documents == 1 else 's'} already indexed"
    if peek.problem == "new":
        return "none indexed yet (a new index)"
    return f"documents not counted ({peek.problem})"


def boot_lines(
    settings: Settings,
    *,
    transport: str,
    held: Peek,
    tools: Iterable[str],
    http: Iterable[str] = (),
    watching: bool = False,
    memory: str = "",
    search: str = "",
) -> list[str]:
    """What `kbkit serve` says before it answers: `held`, what the index holds already (counted
    without opening it). The index is opened and brought up to date in the background, which says
    what it found (a repair, then `indexing finished`)."""
    lines = [
        f"kbkit {__version__} (Python {platform.python_version()}), transport: {transport}",
        f"root: {settings.root}, kb folder: {kb_folder(settings)}",
    ]
    lines += list(http)
    lines += [
        f"index: {describe_held(held)}; "
        "brought up to date in the background (a line says when it has finished)"
        + ("; watching for changes" if watching else "; not watching (--no-watch or [kb] watch = false)"),
        f"parsers: {', '.join(settings.parsers)}",
        *([search] if search else []),
        f"tools: {', '.join(tools) or 'none ([server] tools is empty)'}",
        memory or memory_line(settings, None, over_http=False),
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
        from kbkit.server.memory import not_configured

        what, fix, _ = not_configured(settings.memory, settings.root)
        return f"memory: off ({what}: {fix})"
    line = proxy.status.line()
    if over_http and proxy.enabled:
        line += "; WARNING: attached over HTTP, every caller shares one memory bank"
    return line
